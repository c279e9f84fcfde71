"""make lint's circle check catches what it is for: two files of a room that
call each other (directly or through a third) fail it, a one-way room passes,
and a listed circle that is gone must come off the list.  Scratch objects
compiled here; no gateway, no RGW."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "tests" / "check_circles.py"


def _room(tmp_path, files):
    """Compile {name: C source} into tmp_path/obj/room/name.o; the object paths."""
    room = tmp_path / "obj" / "room"
    room.mkdir(parents=True)
    objs = []
    for name, src in files.items():
        c = tmp_path / f"{name}.c"
        c.write_text(src)
        o = room / f"{name}.o"
        subprocess.run(["cc", "-c", "-o", str(o), str(c)], check=True, timeout=60)
        objs.append(str(o))
    return objs


def _check(tmp_path, objs, lists=False):
    flags = [] if lists else ["--no-lists"]
    return subprocess.run([sys.executable, str(CHECK), *flags, str(tmp_path / "obj"), *objs],
                          capture_output=True, text=True, timeout=60)


def test_one_way_room_passes(tmp_path):
    objs = _room(tmp_path, {"top": "int low(void);\nint top(void) { return low(); }\n",
                            "low": "int low(void) { return 1; }\n"})
    r = _check(tmp_path, objs)
    assert r.returncode == 0, r.stdout
    assert "check_circles: 1 rooms, 0 circles, 0 failing" in r.stdout, r.stdout


def test_planted_circle_fails(tmp_path):
    objs = _room(tmp_path, {"a": "int b(void);\nint a(void) { return b(); }\n",
                            "b": "int c(void);\nint b(void) { return c(); }\n",
                            "c": "int a(void);\nint c(void) { return a(); }\n",
                            "d": "int a(void);\nint d(void) { return a(); }\n"})
    r = _check(tmp_path, objs)
    assert r.returncode == 1
    assert "circle (NEW, not allowed): room/a.c room/b.c room/c.c\n" in r.stdout, r.stdout


def test_listed_circle_gone_fails(tmp_path):
    objs = _room(tmp_path, {"a": "int a(void) { return 0; }\n"})
    r = _check(tmp_path, objs, lists=True)
    assert r.returncode == 1
    assert "listed circle gone, take it off the list: gateway/upstream/curl.c" in r.stdout, r.stdout
