#!/usr/bin/env python3
"""Circles of calls inside a room (make lint).

A room is a source folder (common/, store/, election/, gateway/<room>/).  Two
files of a room make a circle when each calls into the other, directly or
through other files of the room: a strongly connected group of more than one
file in the graph "file A uses a symbol that file B defines", read with nm
from the object files (defined vs undefined globals, per object).  A circle
means a split made by size, not along a seam where one side never calls back.

Usage: check_circles.py [--no-lists] OBJDIR OBJ...   (each OBJ is OBJDIR/<room>/<file>.o)
--no-lists: check as if ALLOWED and TO_BREAK were empty (tests on scratch rooms).
Prints each room's circles and exits 1 if one is neither allowed nor still
to be broken below, or if a listed circle is gone (take it off the list).
"""
import os
import subprocess
import sys

# Circles left on purpose: the files, and why they stay one unit.
ALLOWED = {
    ("gateway/upstream/curl.c", "gateway/upstream/curl_xfer.c"):
        "one engine: the multi handle and its transfers' libcurl callbacks",
    ("gateway/upstream/lean.c", "gateway/upstream/lean_conn.c"):
        "one engine: transfers and the connection that reports back to them",
}

# Circles not broken yet.  This list may only shrink; a new circle fails.
TO_BREAK = {
}


def symbols(obj):
    """(defined, undefined) global symbol names of one object file."""
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRGSVW" and kind.isupper():
            defined.add(name)
    return defined, undefined


def circles(files):
    """Strongly connected groups of more than one file: {file: (defined, undefined)}."""
    owner = {}
    for f, (defined, _) in files.items():
        for s in defined:
            owner[s] = f
    edges = {f: sorted({owner[s] for s in und if s in owner and owner[s] != f})
             for f, (_, und) in files.items()}
    index, low, stack, on, groups = {}, {}, [], set(), []

    def visit(v):  # Tarjan's algorithm; rooms are small, recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(tuple(sorted(group)))

    for f in sorted(files):
        if f not in index:
            visit(f)
    return sorted(groups)


def main():
    args = sys.argv[1:]
    allowed, to_break = ALLOWED, TO_BREAK
    if args[:1] == ["--no-lists"]:
        args = args[1:]
        allowed, to_break = {}, {}
    if len(args) < 2:
        sys.exit(__doc__)
    objdir = args[0]
    rooms = {}
    for obj in args[1:]:
        room = os.path.relpath(os.path.dirname(obj), objdir)
        name = os.path.basename(obj)[:-2] + ".c"
        rooms.setdefault(room, {})[name] = symbols(obj)
    bad = 0
    seen = set()
    for room in sorted(rooms):
        for group in circles(rooms[room]):
            key = tuple(f"{room}/{f}" for f in group)
            seen.add(key)
            if key in allowed:
                print(f"circle (allowed: {allowed[key]}): {' '.join(key)}")
            elif key in to_break:
                print(f"circle (to break: {to_break[key]}): {' '.join(key)}")
            else:
                print(f"circle (NEW, not allowed): {' '.join(key)}")
                bad += 1
    for key in sorted((set(allowed) | set(to_break)) - seen):
        print(f"listed circle gone, take it off the list: {' '.join(key)}")
        bad += 1
    print(f"check_circles: {len(rooms)} rooms, {len(seen)} circles, {bad} failing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
