#!/usr/bin/env python3
"""make lint-refs: comments and docs that point at nothing.

Two checks, in the spirit of curl's test 1139 (docs and code kept in step):

1. Every citation of a DESIGN.md section -- `DESIGN "Write windows"`,
   `DESIGN.md "Layout"`, `(docs/DESIGN.md, "Guarantees")`, also across a
   comment's line break -- names a heading that docs/DESIGN.md has; the same
   for README.md citations (`README "Checksums"`) and docs/PERFORMANCE.md and
   docs/TESTING.md ones.
2. Every `gw_*`, `elect_*` and `store_*` identifier a header's comments name
   is defined or declared somewhere in the C sources (outside comments). A
   name ending in `_*` (`gw_req_*`) is a prefix: something must start with it.

Prints one line per stale reference and `N passed, N failed` (checks made,
stale ones); exits 1 when any is stale.  `--root DIR` lints another tree
(the test plants a stale reference in a copy).
"""

import argparse
import re
import subprocess
import sys
from pathlib import Path

CITE = re.compile(
    r"\b(?:docs/)?(DESIGN|README|PERFORMANCE|TESTING)(?:\.md)?(?:'s)?[,:]?"  # the document
    r"(?:\s|\*|#|//)+"                                  # spaces, a line break's comment leader
    r"(?:section\s+)?\"([^\"\n]+)\"")                  # "Section"
# a name, not a file's (elect_seq.c, store_int.h) nor a placeholder (gw_<room>)
IDENT = re.compile(r"\b((?:gw|elect|store)_[a-z0-9_]*[a-z0-9](?:_\*)?)(?![.][ch]\b|[.]py\b|<|[a-z0-9_])")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
SOURCES = ("*.c", "*.h")
SELF = ("lint_refs.py", "test_lint_refs.py")  # they quote citations as examples
CITERS = ("*.c", "*.h", "*.py", "*.sh", "*.md", "*.mjs", "*.js", "*.go", "Makefile", ".ci/run")


def tracked(root, patterns):
    out = subprocess.run(["git", "ls-files", "--", *patterns], cwd=root, capture_output=True,
                         text=True, check=True).stdout.split()
    return [root / p for p in out if (root / p).is_file()]


def headings(path):
    return {re.sub(r"^#+\s*", "", line).strip()
            for line in path.read_text().splitlines() if line.startswith("#")}


def cited(sect, heads):
    """sect names a heading: all of it, or its first words before a colon or comma."""
    return any(h == sect or (h.startswith(sect) and h[len(sect)] in ":,") for h in heads)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def check_citations(root, problems):
    heads = {d: headings(root / "docs" / f"{d}.md") if (root / "docs" / f"{d}.md").exists()
             else set() for d in ("DESIGN", "PERFORMANCE", "TESTING")}
    heads["README"] = headings(root / "README.md")
    n = 0
    for f in tracked(root, CITERS):
        if f.name in SELF:
            continue
        text = f.read_text(errors="replace")
        for m in CITE.finditer(text):
            doc, sect = m.group(1), m.group(2).strip()
            if (doc == "README" and f.name == "README.md") or "$(" in sect:
                continue
            n += 1
            if not cited(sect, heads[doc]):
                problems.append(f"{f.relative_to(root)}:{line_of(text, m.start())}: cites "
                                f"{doc}.md \"{sect}\", which has no such heading")
    return n


def check_identifiers(root, problems):
    code_words = set()
    sources = tracked(root, SOURCES)
    for f in sources:
        code = STRING.sub('""', COMMENT.sub(" ", f.read_text(errors="replace")))
        code_words.update(WORD.findall(code))
    prefixes = sorted(code_words)
    n = 0
    for f in sources:
        if f.suffix != ".h":
            continue
        text = f.read_text(errors="replace")
        for c in COMMENT.finditer(text):
            for m in IDENT.finditer(c.group(0)):
                name = m.group(1)
                n += 1
                if name.endswith("_*"):
                    p = name[:-1]
                    ok = any(w.startswith(p) for w in prefixes)
                else:
                    ok = name in code_words
                if not ok:
                    problems.append(f"{f.relative_to(root)}:{line_of(text, c.start() + m.start())}"
                                    f": comment names {name}, which nothing defines")
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    root = Path(ap.parse_args().root)
    problems = []
    n = check_citations(root, problems) + check_identifiers(root, problems)
    for p in problems:
        print(p)
    print(f"lint-refs: {n - len(problems)} passed, {len(problems)} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
