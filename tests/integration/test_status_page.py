"""GET /_fencegate/, the HTML status page, loaded in a real browser: Debian's
headless Chromium renders it from a gateway with live locks and refusals; the
test reads the rendered DOM (--dump-dom) for the lock names, tokens and
refusal codes it created, and saves a screenshot as build/status-page.png."""

import html.parser
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def chromium(args, timeout=60):
    """Run Chromium once, in a fresh profile; stopped by the timeout if it hangs (by its pid,
    through subprocess, never by name)."""
    profile = tempfile.mkdtemp(prefix="fg-chromium-")
    try:
        p = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                           capture_output=True, text=True, timeout=timeout)
        return p
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class Tables(html.parser.HTMLParser):
    """The text of every cell of every table with an id, by table id."""

    def __init__(self):
        super().__init__()
        self.tables, self.cur, self.row, self.cell = {}, None, None, None
        self.meta_refresh = None
        self.scripts = 0
        self.external = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "id" in a:
            self.cur = a["id"]
            self.tables[self.cur] = []
        elif tag == "tr" and self.cur:
            self.row = []
            self.tables[self.cur].append(self.row)
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []
            self.row.append(self.cell)
        elif tag == "meta" and a.get("http-equiv", "").lower() == "refresh":
            self.meta_refresh = a.get("content")
        elif tag == "script":
            self.scripts += 1
        for k in ("src", "href"):
            if k in a:
                self.external.append(a[k])

    def handle_endtag(self, tag):
        if tag == "table":
            self.cur = None
        elif tag in ("td", "th"):
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def rows(self, table):
        return [["".join(c).strip() for c in r] for r in self.tables.get(table, [])]


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="Debian's chromium not installed")
def test_status_page_in_chromium(gateway, bucket, tmp_path):
    gw = gateway({"election": {"backend": "dir", "path": str(tmp_path / "locks"),
                               "min_lease_ms": 200, "default_lease_ms": 30000},
                  "fences": [{"bucket": bucket, "prefix": "orders/", "lock": "orders",
                              "require_token": True}]})
    deadline = time.monotonic() + 20
    while requests.get(f"{gw.url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)

    def acquire(lock, holder):
        r = requests.post(f"{gw.url}/_fencegate/v1/locks/{lock}/acquire",
                          json={"holder": holder}, timeout=10)
        assert r.status_code == 200, r.text
        return r.json()

    first = acquire("orders", "worker-z")  # a leader that will be a zombie
    r = requests.post(f"{gw.url}/_fencegate/v1/locks/orders/release", timeout=10,
                      json={"token": first["token"], "lease_id": first["lease_id"]})
    assert r.status_code == 200, r.text
    orders = acquire("orders", "worker-a")
    # a lock name and holder that need escaping in HTML
    evil = acquire("evil.lock", "<b>mallory</b> & \"co\"")
    tok = orders["token"]
    assert tok == first["token"] + 1
    # refusals: a stale token and a missing one
    w = requests.put(f"{gw.url}/{bucket}/orders/x", data=b"ok", timeout=10,
                     headers={"X-Fencing-Token": str(tok)})
    assert w.status_code == 200, w.text
    s = requests.put(f"{gw.url}/{bucket}/orders/x", data=b"zombie", timeout=10,
                     headers={"X-Fencing-Token": str(first["token"]), "traceparent": TP})
    assert s.status_code == 409, s.text
    stale_code = s.text.split("<Code>", 1)[1].split("</Code>", 1)[0]
    assert stale_code == "StaleFencingToken"
    m = requests.put(f"{gw.url}/{bucket}/orders/y", data=b"no token", timeout=10)
    assert m.status_code == 428, m.text

    raw = requests.get(f"{gw.url}/_fencegate/", timeout=10)
    assert raw.status_code == 200
    assert raw.headers["content-type"].startswith("text/html")
    assert "<b>mallory</b>" not in raw.text and "&lt;b&gt;mallory&lt;/b&gt;" in raw.text

    dom = chromium(["--dump-dom", f"{gw.url}/_fencegate/"])
    assert dom.returncode == 0, dom.stderr[-2000:]
    t = Tables()
    t.feed(dom.stdout)
    assert t.meta_refresh is not None and int(t.meta_refresh) > 0  # refreshes itself
    assert t.scripts == 0 and t.external == []  # no script, no external asset

    locks = {r[0]: r for r in t.rows("locks")[1:]}
    assert set(locks) >= {"orders", "evil.lock"}, t.rows("locks")
    o = locks["orders"]
    assert o[1] == str(tok) and o[2] == "worker-a" and o[3] == "held"
    assert o[4].endswith(" s") and 0 < float(o[4][:-2]) <= 30  # lease remaining
    assert o[6] == gw.config.get("gateway_id", o[6]) and o[6]  # granting gateway
    e = locks["evil.lock"]
    assert e[1] == str(evil["token"]) and e[2] == "<b>mallory</b> & \"co\""  # shown as text

    fences = {r[0]: r for r in t.rows("fences")[1:]}
    assert fences["orders"][1] == str(tok)

    refusals = t.rows("refusals")[1:]
    codes = [r[1] for r in refusals]
    assert stale_code in codes and "MissingFencingToken" in codes, refusals
    assert any(r[8] == TP.split("-")[1] for r in refusals)  # the stale write's trace id
    assert codes.index("MissingFencingToken") < codes.index(stale_code)  # newest first

    ready = requests.get(f"{gw.url}/readyz", timeout=5).status_code == 200
    assert ("not ready" not in dom.stdout) == ready

    shot = REPO / "build" / "status-page.png"
    shot.parent.mkdir(exist_ok=True)
    if shot.exists():
        shot.unlink()
    p = chromium([f"--screenshot={shot}", "--window-size=1280,900", f"{gw.url}/_fencegate/"])
    assert p.returncode == 0 and shot.exists() and shot.stat().st_size > 10000, p.stderr[-2000:]
