#!/usr/bin/env python3
"""perf_owner.py: CPU samples by the library that asked for them.

Reads `perf script` output of a profile recorded with call graphs
(proxy_bench_dav.sh: BENCH_PERF=SECS BENCH_PERF_CG=dwarf,16384) and charges
each sample to the first library on its stack, from the leaf up, that is not
the kernel, libc or the vDSO: a send() libcurl makes, with the kernel's TCP
work under it and the malloc it calls, is libcurl's.  Prints each owner's
share and, given the CPU microseconds per request, its microseconds per
request.

usage: perf script -i FILE | perf_owner.py [US_PER_REQUEST]
"""
import re
import sys

PLUMBING = ("[kernel.kallsyms]", "libc.so", "ld-linux", "[vdso]", "libpthread", "[unknown]", "inlined")
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$")


def owner(frames):
    for sym, dso in frames:
        base = dso.rsplit("/", 1)[-1]
        if not any(base.startswith(p) for p in PLUMBING):
            return base
    return frames[-1][1].rsplit("/", 1)[-1] if frames else "?"


def main():
    us = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    counts, frames, total = {}, [], 0
    for line in sys.stdin:
        m = FRAME.match(line)
        if m:
            frames.append((m.group(1), m.group(2)))
            continue
        if not line.strip() and frames:
            o = owner(frames)
            counts[o] = counts.get(o, 0) + 1
            total += 1
            frames = []
    if frames:
        o = owner(frames)
        counts[o] = counts.get(o, 0) + 1
        total += 1
    print(f"{total} samples")
    for o, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        share = 100.0 * n / total
        extra = f"  {us * n / total:6.1f} us/request" if us else ""
        print(f"{o:32s} {share:5.1f} %{extra}")


if __name__ == "__main__":
    main()
