"""make lint-refs catches what it is for: a planted stale DESIGN.md citation
and a header comment naming a function nothing defines, in a scratch git
tree; and the repository itself is clean."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINT = REPO / "tests" / "lint_refs.py"


def _lint(root):
    return subprocess.run([sys.executable, str(LINT), "--root", str(root)],
                          capture_output=True, text=True, timeout=60)


def _tree(tmp_path, header):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "DESIGN.md").write_text("# Design\n## Write windows\n## Guarantees\n")
    (tmp_path / "README.md").write_text("# fencegate\n## Checksums: how\n")
    (tmp_path / "x.h").write_text(header)
    (tmp_path / "x.c").write_text("int gw_x_run(void) { return 0; }\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)


def test_clean_tree_passes(tmp_path):
    _tree(tmp_path, '/* gw_x_run, gw_x_*: see DESIGN "Write windows" and\n'
                    ' * README "Checksums" (DESIGN.md\n * "Guarantees"). */\n')
    r = _lint(tmp_path)
    assert r.returncode == 0, r.stdout
    assert "5 passed, 0 failed" in r.stdout, r.stdout


def test_planted_stale_section_fails(tmp_path):
    _tree(tmp_path, '/* gw_x_run: see DESIGN.md\n * "Epoch lock file". */\n')
    r = _lint(tmp_path)
    assert r.returncode == 1
    assert 'x.h:1: cites DESIGN.md "Epoch lock file", which has no such heading' in r.stdout


def test_planted_stale_identifier_fails(tmp_path):
    _tree(tmp_path, "/* gw_x_run; see gw_x_gone and elect_selftest (x.c, elect_seq.c). */\n")
    r = _lint(tmp_path)
    assert r.returncode == 1
    assert "comment names gw_x_gone, which nothing defines" in r.stdout
    assert "comment names elect_selftest, which nothing defines" in r.stdout
    assert "elect_seq" not in r.stdout  # a file's name, not an identifier


def test_repository_is_clean():
    r = _lint(REPO)
    assert r.returncode == 0, r.stdout
