#!/usr/bin/python3
"""make check-deploy: deploy/'s Prometheus rules and Grafana dashboard.

- `promtool check rules deploy/prometheus-alerts.yml`;
- `promtool test rules tests/deploy/alerts_test.yml` (each alert fires on the
  series that should fire it, and not on one that should not);
- every query of deploy/grafana-dashboard.json parses (promtool checks it as a
  recording rule, Grafana's variables replaced);
- every metric the rules and the dashboard name is a family the gateway
  exports (gateway/base/metrics_render.c), so a renamed metric cannot leave
  a silent panel or an alert that never fires."""
import json
import pathlib
import re
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
PROMTOOL = "/usr/bin/promtool"
RULES = REPO / "deploy" / "prometheus-alerts.yml"
DASH = REPO / "deploy" / "grafana-dashboard.json"
TEST = REPO / "tests" / "deploy" / "alerts_test.yml"
NAME = re.compile(r"\b((?:fencegate|process)_[a-z_]+)")


def run(args):
    r = subprocess.run(args, capture_output=True, text=True, cwd=REPO)
    sys.stdout.write(r.stdout + r.stderr)
    if r.returncode != 0:
        sys.exit(f"check-deploy: {' '.join(map(str, args))} failed")


def exported():
    src = (REPO / "gateway" / "base" / "metrics_render.c").read_text()
    fams = set(re.findall(r'"((?:fencegate|process)_[a-z_]+)"', src))
    # histograms expose _bucket, _sum and _count
    hist = set(re.findall(r'histo\(&?o, "((?:fencegate|process)_[a-z_]+)"', src))
    hist |= set(re.findall(r'\{"(fencegate_[a-z_]+_seconds)",', src))
    for h in hist:
        fams |= {h + "_bucket", h + "_sum", h + "_count"}
    return fams


def main():
    run([PROMTOOL, "check", "rules", str(RULES)])
    run([PROMTOOL, "test", "rules", str(TEST)])
    dash = json.loads(DASH.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    if not exprs:
        sys.exit("check-deploy: the dashboard has no queries")
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        f.write("groups:\n  - name: dashboard\n    rules:\n")
        for i, e in enumerate(exprs):
            e = e.replace("$__rate_interval", "5m").replace("$instance", ".*")
            f.write(f"      - record: dashboard:q{i}\n        expr: {json.dumps(e)}\n")
    run([PROMTOOL, "check", "rules", f.name])
    pathlib.Path(f.name).unlink()
    fams = exported()
    named = set(NAME.findall(RULES.read_text())) | set(NAME.findall(" ".join(exprs)))
    missing = sorted(n for n in named if n not in fams)
    if missing:
        sys.exit(f"check-deploy: not exported by the gateway: {missing}")
    print(f"check-deploy: {len(exprs)} dashboard queries and the rules name "
          f"{len(named)} metrics, all exported")


if __name__ == "__main__":
    main()
