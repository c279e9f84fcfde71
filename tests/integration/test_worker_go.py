"""The Go worker library (clients/go) against the real gateway and RGW, each
test with principals (SigV4 on the JSON API) and without (the two long
ones, steady writing and three electors, with principals only).  Workers are
separate processes: the binary `make go-client` builds from
tests/go/worker against the library (FENCEGATE_GOWORKER), speaking the same
JSON-lines events as the Python library's worker (py_worker.py), so the
scenarios are the Python ones, run as they are:

* a worker SIGSTOPped past its lease with a write half sent; a second worker
  takes the lock and writes; on waking the first reports the loss (with its
  reason) before its next write is sent, the half-sent write is refused at
  the gateway and nothing of it is at RGW, which holds the second's bytes;
* a lease kept through 6 lease durations of steady writing;
* three processes running Elect: one leader at a time by the gateway's
  grants and the workers' own reports; a kill -9 of the leader and a new one
  within lease + 1 s; OnStopped only after OnStarted; gw.Watch sees both;
* the JSON API blackholed by a relay: lost at the local deadline
  (unreachable), and the next write is not sent;
* tokens on PutObject, CopyObject, DeleteObject, DeleteObjects and a 64 MiB
  multipart upload (the SDK's upload manager); each fencing refusal returned
  as its typed error once, with the SDK's retries on, counted at the gateway.
* the README's Go worker (clients/go/examples/worker, built by make
  go-client) against both.
"""

import json
import os
import re
from pathlib import Path

import pytest

from test_worker_python import (  # noqa: F401  (the shared scenarios, collected here too)
    LEASE_MS,
    Setup,
    test_lease_kept_through_steady_writing,
    test_sigstop_past_the_lease,
    test_three_electors_one_leader_and_kill9,
    test_tokens_on_every_write_and_typed_refusals_once,
    run_readme_worker,
    test_revoked_lease_lost_at_the_next_renewal,
    test_unreachable_lost_at_the_local_deadline,
    worker_setup,
)

REPO = Path(__file__).resolve().parents[2]


def go_binary(name):
    worker = os.environ.get("FENCEGATE_GOWORKER")
    d = Path(worker).parent if worker else REPO / "build" / "go"
    p = d / name
    if not p.exists():
        pytest.fail(f"{p} missing: run `make go-client` (Debian's golang-go and "
                    "golang-github-aws-aws-sdk-go-v2-dev; make deps installs them)")
    return str(p)


class GoSetup(Setup):
    """Setup whose workers are the Go test worker."""

    def argv(self, mode, cfg):
        return [go_binary("fencegate-test-worker"), mode, json.dumps(cfg)]


@pytest.fixture(params=["plain", "principals"])
def setup(request, gateway, rgw, bucket, tmp_path):
    s = worker_setup(GoSetup, request, gateway, rgw, bucket, tmp_path)
    yield s
    s.stop_all()


EXAMPLE = REPO / "clients" / "go" / "examples" / "worker" / "main.go"


def test_readme_example_is_examples_worker():
    text = (REPO / "README.md").read_text()
    m = re.search(r"### Go\n.*?```go\n(.*?)```", text, re.S)
    assert m, "README: no ```go block under ### Go"
    assert m.group(1) == EXAMPLE.read_text()


@pytest.mark.slow  # timing-bound (short leases): not under sanitizers
def test_readme_worker_runs(setup):
    """The README's worker (built from clients/go/examples/worker, which is
    the README's text): acquires, writes, survives a pause (SIGSTOP past its
    lease), stops on SIGTERM."""
    run_readme_worker(setup, [go_binary("example-worker")])
