#!/usr/bin/env python3
"""iolab find against GNU find on IO500's find, side by side.

Builds, in each directory given, the shape IO500's find meets in mdtest-hard: one
directory of FILES files named like mdtest's (file.mdtest.<rank>.<i>), a third of them
3901 bytes, the rest empty, and a timestamp file older than all of them. Then runs, back
to back and alternating which goes first, REPEAT times:

    find TREE -newer TS -size 3901c -name '*01*'          (GNU find, one thread)
    iolab find --dir TREE --newer TS --size 3901c --name '*01*' --threads T

and prints the median wall time of each (process start included for both), the files
matched (which must agree) and the ratio GNU time / iolab time (above 1: iolab faster).

Usage: bench/find.py [--dir DIR ...] [--files N] [--threads 1 2] [--repeat N]
Needs: a release build of iolab (IOLAB= to choose one; built if missing), find on PATH.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
IOLAB = os.environ.get("IOLAB", os.path.join(TARGET, "release", "iolab"))


def build_tree(base, files):
    tree = os.path.join(base, "tree")
    hard = os.path.join(tree, "mdtest-hard")
    os.makedirs(hard)
    ts = os.path.join(base, "timestamp")
    open(ts, "w").close()
    past = time.time() - 3600
    os.utime(ts, (past, past))
    payload = b"x" * 3901
    expect = 0
    for i in range(files):
        name = "file.mdtest.%d.%d" % (i % 4, i)
        big = i % 3 == 0
        with open(os.path.join(hard, name), "wb") as f:
            if big:
                f.write(payload)
        if big and "01" in name:
            expect += 1
    return tree, ts, expect


def timed(cmd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0, out


def gnu(tree, ts):
    t, out = timed(["find", tree, "-newer", ts, "-size", "3901c", "-name", "*01*"])
    return t, len(out.stdout.splitlines())


def iolab(tree, ts, threads):
    cmd = [IOLAB, "find", "--dir", tree, "--newer", ts, "--size", "3901c",
           "--name", "*01*", "--threads", str(threads), "--no-store"]
    t, out = timed(cmd)
    matched = None
    for line in out.stderr.splitlines() + out.stdout.splitlines():
        line = line.strip()
        if line.startswith("matched:"):
            matched = int(line.split()[1])
    return t, matched


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", action="append", help="where to build the tree (repeatable); "
                    "default: /var/tmp (disk) and /dev/shm (tmpfs)")
    ap.add_argument("--files", type=int, default=200_000)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if not os.access(IOLAB, os.X_OK):
        print("building iolab (release) ...", file=sys.stderr)
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=ROOT, check=True)
    if shutil.which("find") is None:
        sys.exit("find.py: GNU find is not on PATH")
    dirs = args.dir or ["/var/tmp", "/dev/shm"]
    print("| where | files | iolab threads | GNU find s | iolab find s | matched | GNU/iolab |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for d in dirs:
        base = tempfile.mkdtemp(prefix="iolab-find-bench-", dir=d)
        try:
            tree, ts, expect = build_tree(base, args.files)
            gnu(tree, ts)  # warm the dentry and inode caches for both tools
            for threads in args.threads:
                g, i = [], []
                for r in range(args.repeat):
                    order = [0, 1] if r % 2 == 0 else [1, 0]
                    for which in order:
                        if which == 0:
                            t, n = gnu(tree, ts)
                            g.append(t)
                        else:
                            t, n = iolab(tree, ts, threads)
                            i.append(t)
                        if n != expect:
                            sys.exit("find.py: %s matched %s files, expected %d"
                                     % ("GNU find" if which == 0 else "iolab", n, expect))
                gm, im = statistics.median(g), statistics.median(i)
                fs = subprocess.run(["findmnt", "-no", "FSTYPE", "-T", d],
                                    capture_output=True, text=True).stdout.strip()
                print("| %s (%s) | %d | %d | %.3f | %.3f | %d | %.2f |"
                      % (d, fs, args.files, threads, gm, im, expect, gm / im), flush=True)
        finally:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
