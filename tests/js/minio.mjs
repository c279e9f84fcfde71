// MinIO's JavaScript client through the gateway.  It has no per-request
// headers, so the fencing token goes as metadata (x-amz-meta-fencing-token),
// which it sends on PutObject and on CreateMultipartUpload only.
import * as Minio from "minio";

import { MiB, env, rand, refused, runSteps, sha256, streamToBuffer } from "./common.mjs";

const u = new URL(env.endpoint);

function client(sk = env.sk) {
  return new Minio.Client({
    endPoint: u.hostname,
    port: Number(u.port),
    useSSL: false,
    accessKey: env.ak,
    secretKey: sk,
    region: "us-east-1",
    pathStyle: true,
    partSize: 16 * MiB,
  });
}

const c = client();
const B = env.bucket;
const P = `js/minio-${env.run}/`;
const small = rand(1000);
const big = rand(64 * MiB + 17);
const meta = (tok) => ({ "fencing-token": String(tok), "fencing-lock": env.lock });

await runSteps([
  ["put_small", async () => {
    await c.putObject(B, P + "small", small, small.length);
    return { sha256: sha256(small) };
  }],
  ["put_multipart", async () => {
    await c.putObject(B, P + "big", big, big.length);
    return { sha256: sha256(big), size: big.length };
  }],
  ["get_range", async () => {
    const got = await streamToBuffer(await c.getPartialObject(B, P + "big", 1000, 1000));
    if (!got.equals(big.subarray(1000, 2000))) throw new Error("range body differs");
    return { len: got.length };
  }],
  ["list_v2_continuation", async () => {
    for (let i = 0; i < 5; i++) {
      await c.putObject(B, `${P}list/${i}`, Buffer.from("x"));
    }
    const keys = [];
    let token = "";
    let pages = 0;
    do {
      const r = await c.listObjectsV2Query(B, P + "list/", token, "", 2, "");
      r.objects.forEach((o) => o.name && keys.push(o.name));
      token = r.isTruncated ? r.nextContinuationToken : "";
      pages++;
    } while (token);
    return { keys, pages };
  }],
  ["copy", async () => {
    await c.copyObject(
      new Minio.CopySourceOptions({ Bucket: B, Object: P + "small" }),
      new Minio.CopyDestinationOptions({ Bucket: B, Object: P + "copy" }),
    );
    return { sha256: sha256(await streamToBuffer(await c.getObject(B, P + "copy"))) };
  }],
  ["delete_objects", async () => {
    await c.removeObjects(B, [0, 1, 2, 3, 4].map((i) => `${P}list/${i}`));
    const left = [];
    for await (const o of c.listObjectsV2(B, P + "list/", true)) left.push(o.name);
    return { left };
  }],
  ["presigned_get_put", async () => {
    const body = rand(2048);
    const put = await c.presignedPutObject(B, P + "presigned", 300);
    let r = await fetch(put, { method: "PUT", body });
    if (r.status !== 200) throw new Error(`presigned PUT ${r.status} ${await r.text()}`);
    r = await fetch(await c.presignedGetObject(B, P + "presigned", 300));
    const got = Buffer.from(await r.arrayBuffer());
    if (r.status !== 200 || !got.equals(body)) throw new Error(`presigned GET ${r.status}`);
    return { sha256: sha256(body) };
  }],
  ["fenced_put_metadata", async () => {
    await c.putObject(B, `orders/minio-${env.run}/small`, small, small.length, meta(env.token));
    return {};
  }],
  ["fenced_multipart_metadata", async () => {
    const data = rand(20 * MiB);
    await c.putObject(B, `orders/minio-${env.run}/mp`, data, data.length, meta(env.token));
    return { sha256: sha256(data) };
  }],
  ["stale_token", async () => refused(() => c.putObject(B, `orders/minio-${env.run}/stale`,
    Buffer.from("zombie"), 6, meta(env.stale)))],
  ["wrong_secret", async () => refused(() => client("not-the-secret").putObject(B, P + "bad",
    Buffer.from("x")))],
]);
