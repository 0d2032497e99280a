#!/usr/bin/env python3
"""pfind against `iolab find --walk pfind` on the tree IO500's find phase meets, side by side.

Builds, on a fresh file system per run (ext4 on a loop device backed by a tmpfs file, or
a tmpfs: BENCH-NOTES' method), the tree io500 leaves before its find phase, for NP ranks:
mdtest-easy/test-dir.0-0/mdtest_tree.<r>.0/file.mdtest.<r>.<i> (EASY empty files per rank),
mdtest-hard/test-dir.0-0/mdtest_tree.0/file.mdtest.<r>.<i> (HARD 3901-byte files per
rank), ior-easy/ior_file_easy.%08d and ior-hard/file, and a timestamp file older than the
mdtest files. Then runs, alternating which goes first, REPEAT times each:

    mpirun -np NP pfind DIR -newer TS -size 3901c -name *01* -C -q 10000 -D rates
    mpirun -np NP iolab find --walk pfind --dir DIR --newer TS --newer-by ctime-seconds \\
                             --size 3901c --name *01*

with the page cache emptied before each (--drop-caches, root) or left as the build left
it, and prints the median rate of each (entries that are not directories over the
slowest rank's time, io500's find figure), the files matched (which must agree) and
the ratio iolab / pfind.

Usage: bench/pfind.py [--np 2] [--repeat 5] [--fs ext4|tmpfs] [--easy 100000]
                      [--hard 30000] [--drop-caches]
Needs root (mount, losetup), mpirun, pfind on PATH (built outside this repository as
../shared/BENCH-NOTES.md says) and an MPI build of iolab (IOLAB= to choose one).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from io500 import ROOT, FreshFs, sh  # noqa: E402

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
RATE = re.compile(r"\[DONE\] rate: ([0-9.]+) kiops time: ([0-9.]+)s found: (\d+) \(scanned (\d+)")


def build_tree(top, np, easy, hard):
    """The tree io500 leaves for find (names and sizes as its phases leave them)."""
    stamp = os.path.join(top, "timestamp")
    open(stamp, "w").close()
    past = time.time() - 10
    os.utime(stamp, (past, past))
    data = os.path.join(top, "data")
    payload = b"x" * 3901
    for r in range(np):
        d = os.path.join(data, "mdtest-easy", "test-dir.0-0", f"mdtest_tree.{r}.0")
        os.makedirs(d)
        for i in range(easy):
            open(os.path.join(d, f"file.mdtest.{(r + np - 1) % np}.{i}"), "w").close()
    d = os.path.join(data, "mdtest-hard", "test-dir.0-0", "mdtest_tree.0")
    os.makedirs(d)
    for r in range(np):
        for i in range(hard):
            with open(os.path.join(d, f"file.mdtest.{r}.{i}"), "wb") as f:
                f.write(payload)
    os.makedirs(os.path.join(data, "ior-easy"))
    for r in range(np):
        with open(os.path.join(data, "ior-easy", f"ior_file_easy.{r:08d}"), "wb") as f:
            f.truncate(1 << 20)
    os.makedirs(os.path.join(data, "ior-hard"))
    with open(os.path.join(data, "ior-hard", "file"), "wb") as f:
        f.truncate(47008 * np)
    return data, stamp


def drop():
    sh("bash", "-c", "sync && echo 3 > /proc/sys/vm/drop_caches")


def run_pfind(pfind, np, data, stamp, _work):
    out = subprocess.run(MPIRUN + ["-np", str(np), pfind, data, "-newer", stamp, "-size", "3901c",
                                   "-name", "*01*", "-C", "-q", "10000", "-D", "rates"],
                         capture_output=True, text=True, check=False)
    m = RATE.search(out.stdout)
    if not m:
        sys.stderr.write(out.stdout[-2000:] + out.stderr[-2000:])
        return None
    return float(m.group(1)), int(m.group(3)), int(m.group(4))


def run_iolab(iolab, np, data, stamp, work):
    js = os.path.join(work, "find.json")
    out = subprocess.run(MPIRUN + ["-np", str(np), iolab, "find", "--walk", "pfind", "--dir", data,
                                   "--newer", stamp, "--newer-by", "ctime-seconds", "--size",
                                   "3901c", "--name", "*01*", "--no-store", "-Q", "--json", js],
                         capture_output=True, text=True, check=False)
    try:
        with open(js) as f:
            p = json.load(f)["phases"][0]
    except OSError:
        sys.stderr.write(out.stderr[-2000:])
        return None
    scan = next(o for o in p["ops"] if o["op"] == "scan")
    return scan["iops"] / 1000, int(p["extra"]["matched"]), scan["ops"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--fs", choices=["ext4", "tmpfs"], default="ext4")
    p.add_argument("--easy", type=int, default=100000, help="empty mdtest-easy files per rank")
    p.add_argument("--hard", type=int, default=30000, help="3901-byte mdtest-hard files per rank")
    p.add_argument("--size-mib", type=int, default=2048)
    p.add_argument("--drop-caches", action="store_true")
    a = p.parse_args()
    pfind = os.environ.get("PFIND") or shutil.which("pfind")
    if not pfind:
        sys.exit("pfind.py: no pfind on PATH (BENCH-NOTES says how to build it)")
    iolab = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
    base = tempfile.mkdtemp(prefix="iolab-pfind-bench-")
    backing = os.path.join(base, "backing")
    os.makedirs(backing)
    sh("mount", "-t", "tmpfs", "-o", f"size={a.size_mib + 256}m", "tmpfs", backing)
    tools = [("pfind", run_pfind, pfind), ("iolab", run_iolab, iolab)]
    results = {"pfind": [], "iolab": []}
    try:
        for n in range(a.repeat):
            for name, fn, exe in (tools if n % 2 == 0 else tools[::-1]):
                with FreshFs(base, a.fs, a.size_mib) as mnt:
                    data, stamp = build_tree(mnt, a.np, a.easy, a.hard)
                    if a.drop_caches:
                        drop()
                    got = fn(exe, a.np, data, stamp, base)
                print(f"run {n + 1} {name}: {got}", file=sys.stderr)
                if got:
                    results[name].append(got)
    finally:
        subprocess.run(["umount", backing], check=False)
        shutil.rmtree(base, ignore_errors=True)
    print(f"pfind vs iolab find --walk pfind: {a.np} ranks, {a.fs} made fresh per run, "
          f"{a.easy} easy + {a.hard} hard files per rank, drop-caches "
          f"{'on' if a.drop_caches else 'off'}, medians of {a.repeat} interleaved runs")
    med = {k: statistics.median([r[0] for r in v]) for k, v in results.items() if v}
    for k, v in results.items():
        if v:
            print(f"{k:<6} {med[k]:>10.1f} kIOPS  matched {sorted({r[1] for r in v})}  "
                  f"scanned {sorted({r[2] for r in v})}")
    if len(med) == 2:
        print(f"iolab/pfind {med['iolab'] / med['pfind']:.2f}")


if __name__ == "__main__":
    main()
