import os
import signal
import threading

import boto3
import botocore.config

import fencegate

LOCK = os.environ.get("LOCK", "orders")
BUCKET = os.environ.get("BUCKET", "data")
LEASE_MS = int(os.environ.get("LEASE_MS", "15000"))

# The JSON API is signed with botocore's credentials (environment, shared
# files, instance role), or sent plain if there are none.
gw = fencegate.Gateway(os.environ.get("FENCEGATE_URL", "http://127.0.0.1:9000"))
s3 = boto3.client("s3", endpoint_url=gw.url, region_name="us-east-1",
                  aws_access_key_id=os.environ.get("S3_ACCESS_KEY"),
                  aws_secret_access_key=os.environ.get("S3_SECRET_KEY"),
                  config=botocore.config.Config(s3={"addressing_style": "path"}))

stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())

while not stop.is_set():
    try:
        # Blocks until granted (or LockHeld after wait_ms); the body never
        # runs without the lease, and leaving it releases the lease.
        with gw.lease(LOCK, lease_ms=LEASE_MS, wait_ms=2000) as lease:
            lease.on_lost(lambda l: print(f"lease lost: {l.reason}", flush=True))
            lease.attach(s3)  # every write now carries the lock and the token
            n = 0
            while not stop.is_set() and not lease.lost.is_set():
                n += 1
                s3.put_object(Bucket=BUCKET, Key=f"{LOCK}/progress", Body=b"%d" % n)
                print(f"wrote {n} with token {lease.token}", flush=True)
                stop.wait(0.2)
    except fencegate.LockHeld as e:
        print(f"held by {e.holder}; trying again", flush=True)
    except fencegate.WriteOutcomeUnknown as e:
        # lost before a retry: the earlier attempt may have landed (this
        # worker's write is idempotent): start over
        print(f"lease lost ({e.reason}) mid-write: outcome unknown", flush=True)
    except fencegate.LeaseLost:
        pass  # a pause or a partition outlived the lease: nothing was sent; start over
    except fencegate.FencingError as e:
        # The gateway refused a write already on the wire (a newer holder
        # wrote first): it did not land; start over with a new lease.
        print(f"refused: {e.response['Error']['Code']}", flush=True)
print("stopped", flush=True)
