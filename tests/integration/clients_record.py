"""What the client tests ran, for the README's client table.

record() merges one client's line into $FENCEGATE_BUILD/clients.json (build/
by default); tests/clients_table.py renders the table from it.  Tests call it
at their end, so only what passed is recorded."""
import fcntl
import json
import os
from pathlib import Path


def _path():
    root = os.environ.get("FENCEGATE_BUILD") or str(Path(__file__).resolve().parents[2] / "build")
    return Path(root) / "clients.json"


def record(client, tested, token=None):
    """client: name and version/mode; tested: what ran; token: how the test sent it a
    fencing token (None: this test sent none)."""
    p = _path()
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(p.read_text()) if p.exists() else {}
        entry = data.setdefault(client, {"token": [], "tested": []})
        if token is not None and token not in entry["token"]:
            entry["token"].append(token)
        if tested not in entry["tested"]:
            entry["tested"].append(tested)
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        tmp.replace(p)
