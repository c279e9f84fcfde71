// AWS SDK for JavaScript v3 through the gateway, default settings (CRC32
// request checksums, aws-chunked trailers for streamed bodies, 3 attempts).
import { Readable } from "node:stream";

import {
  CopyObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";

import { MiB, env, rand, refused, runSteps, sha256, streamToBuffer } from "./common.mjs";

function client(sk = env.sk) {
  return new S3Client({
    endpoint: env.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: env.ak, secretAccessKey: sk },
  });
}

// Sends X-Fencing-Token / X-Fencing-Lock on every request of c (before signing).
function withToken(c, token) {
  c.middlewareStack.add(
    (next) => async (args) => {
      args.request.headers["x-fencing-token"] = String(token);
      args.request.headers["x-fencing-lock"] = env.lock;
      return next(args);
    },
    { step: "build", name: "fencingToken" },
  );
  return c;
}

// Counts attempts (runs inside the retry middleware).
function counted(c) {
  const n = { attempts: 0 };
  c.middlewareStack.add(
    (next) => async (args) => {
      n.attempts++;
      return next(args);
    },
    { step: "finalizeRequest", priority: "low", name: "countAttempts" },
  );
  return n;
}

const c = client();
const B = env.bucket;
const P = `js/sdkv3-${env.run}/`;
const small = rand(1000);
const big = rand(64 * MiB + 17);
const streamed = rand(300 * 1024);

await runSteps([
  ["put_small", async () => {
    const n = counted(c);
    await c.send(new PutObjectCommand({ Bucket: B, Key: P + "small", Body: small }));
    return { sha256: sha256(small), attempts: n.attempts };
  }],
  ["put_stream_chunked", async () => {
    // a stream of known length: aws-chunked with a CRC32 trailer
    await c.send(new PutObjectCommand({
      Bucket: B, Key: P + "streamed", Body: Readable.from([streamed]), ContentLength: streamed.length,
    }));
    return { sha256: sha256(streamed) };
  }],
  ["put_multipart", async () => {
    const up = new Upload({
      client: c, params: { Bucket: B, Key: P + "big", Body: big }, partSize: 16 * MiB, queueSize: 2,
    });
    await up.done();
    return { sha256: sha256(big), size: big.length };
  }],
  ["get_range", async () => {
    const r = await c.send(new GetObjectCommand({ Bucket: B, Key: P + "big", Range: "bytes=1000-1999" }));
    const got = await streamToBuffer(r.Body);
    if (!got.equals(big.subarray(1000, 2000))) throw new Error("range body differs");
    return { status: r.$metadata.httpStatusCode, len: got.length };
  }],
  ["list_v2_continuation", async () => {
    for (let i = 0; i < 5; i++) {
      await c.send(new PutObjectCommand({ Bucket: B, Key: `${P}list/${i}`, Body: "x" }));
    }
    const keys = [];
    let token;
    let pages = 0;
    do {
      const r = await c.send(new ListObjectsV2Command({
        Bucket: B, Prefix: P + "list/", MaxKeys: 2, ContinuationToken: token,
      }));
      (r.Contents || []).forEach((o) => keys.push(o.Key));
      token = r.NextContinuationToken;
      pages++;
    } while (token);
    return { keys, pages };
  }],
  ["copy", async () => {
    await c.send(new CopyObjectCommand({ Bucket: B, Key: P + "copy", CopySource: `${B}/${P}small` }));
    const r = await c.send(new GetObjectCommand({ Bucket: B, Key: P + "copy" }));
    return { sha256: sha256(await streamToBuffer(r.Body)) };
  }],
  ["delete_objects", async () => {
    const r = await c.send(new DeleteObjectsCommand({
      Bucket: B, Delete: { Objects: [0, 1, 2, 3, 4].map((i) => ({ Key: `${P}list/${i}` })) },
    }));
    return { deleted: (r.Deleted || []).length, errors: (r.Errors || []).length };
  }],
  ["presigned_get_put", async () => {
    const put = await getSignedUrl(c, new PutObjectCommand({ Bucket: B, Key: P + "presigned" }),
      { expiresIn: 300 });
    const body = rand(2048);
    let r = await fetch(put, { method: "PUT", body });
    if (r.status !== 200) throw new Error(`presigned PUT ${r.status} ${await r.text()}`);
    const get = await getSignedUrl(c, new GetObjectCommand({ Bucket: B, Key: P + "presigned" }),
      { expiresIn: 300 });
    r = await fetch(get);
    const got = Buffer.from(await r.arrayBuffer());
    if (r.status !== 200 || !got.equals(body)) throw new Error(`presigned GET ${r.status}`);
    return { sha256: sha256(body) };
  }],
  ["fenced_put_header", async () => {
    const f = withToken(client(), env.token);
    await f.send(new PutObjectCommand({ Bucket: B, Key: `orders/sdkv3-${env.run}/hdr`, Body: small }));
    return {};
  }],
  ["fenced_multipart_metadata", async () => {
    const data = rand(12 * MiB);
    const up = new Upload({
      client: c,
      params: {
        Bucket: B, Key: `orders/sdkv3-${env.run}/mp`, Body: data,
        Metadata: { "fencing-token": String(env.token), "fencing-lock": env.lock },
      },
      partSize: 5 * MiB,
    });
    await up.done();
    return { sha256: sha256(data) };
  }],
  ["stale_token", async () => {
    const f = withToken(client(), env.stale);
    const n = counted(f);
    const r = await refused(() => f.send(new PutObjectCommand({
      Bucket: B, Key: `orders/sdkv3-${env.run}/stale`, Body: "zombie",
    })));
    return { ...r, attempts: n.attempts };
  }],
  ["wrong_secret", async () => refused(() => client("not-the-secret").send(
    new PutObjectCommand({ Bucket: B, Key: P + "bad", Body: "x" })))],
]);
