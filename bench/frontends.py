#!/usr/bin/env python3
"""`iolab ior` and `iolab mdtest` against the real IOR and mdtest on the same command
lines, interleaved, read from each tool's own text output by one parser (the point of
the front-ends: scripts written for IOR and mdtest read iolab's output unchanged).

Usage: bench/frontends.py [--fs dir|ext4|tmpfs] [--dir DIR] [--np N] [--repeat N]
                          [--drop-caches] [--loop-dio] [--keep-memory] [--cases REGEX]
--fs dir runs in a temporary directory under --dir (default /dev/shm); ext4 and tmpfs
make a fresh file system for every single run (ext4 on a loop device backed by a tmpfs
file: BENCH-NOTES' method, repeatable within 3 %; needs root). --drop-caches writes back
and empties the page cache before every run (root). The tools alternate, and which goes
first alternates too. --loop-dio and --keep-memory as in bench/io500.py (the loop device
writes through; the VM's free page reporting off for the runs).
Needs: ior and mdtest on PATH (IOR's repository, built outside this one), mpirun, and an
MPI build of iolab (cargo build --release --locked -p iolab --features mpi).
Prints, per case and figure, the medians and the ratio iolab / reference.
"""

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from io500 import FreshFs, KeepMemory, TempDir, sh  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")

IOR_CASES = {
    "ior file-per-process 1m write+read": "-a POSIX -b 16m -t 1m -s 4 -F -w -r -e -i 1",
    "ior shared strided 47008": "-a POSIX -b 47008 -t 47008 -s 2000 -w -r -e -i 1",
    # IO500's ior-hard and ior-easy lines, each a write (stonewall 3 s, wear-out) then, as
    # a call of its own on the same file system, its read as IO500 runs it (-R), as far as
    # the status file of the write says (the page cache emptied before each call with
    # --drop-caches, as IO500's drop-caches does).
    "ior io500-hard 47008 -D 3": [
        "--dataPacketType=timestamp -C -Q 1 -g -G=1837313601 -k -e "
        "-t 47008 -b 47008 -s 20000 -w -D 3 -a POSIX -O stoneWallingWearOut=1 "
        "-O stoneWallingStatusFile={work}/hard.stonewall",
        "--dataPacketType=timestamp -C -Q 1 -g -G=1837313601 -k -e "
        "-t 47008 -b 47008 -s 20000 -r -R -a POSIX "
        "-O stoneWallingStatusFile={work}/hard.stonewall",
    ],
    "ior io500-easy 2m -D 3": [
        "--dataPacketType=timestamp -g -G 1837302913 -k -e -C -Q 1 "
        "-t 2m -b 1024m -F -w -D 3 -a POSIX -O stoneWallingWearOut=1 "
        "-O stoneWallingStatusFile={work}/easy.stonewall",
        "--dataPacketType=timestamp -g -G 1837302913 -k -e -C -Q 1 "
        "-t 2m -b 1024m -F -r -R -a POSIX -O stoneWallingStatusFile={work}/easy.stonewall",
    ],
}
MDTEST_CASES = {
    "mdtest -u -F 20000 files": "-n 20000 -u -F -i 1",
    "mdtest shared -F 3901 B": "-n 10000 -F -w 3901 -e 3901 -i 1",
    # IO500's mdtest-hard and mdtest-easy lines, each phase a call of its own as IO500
    # runs them (create with -Y and a 3 s stonewall, then stat, read with -X, delete),
    # with -n scaled down.
    "mdtest io500-hard (four calls)": [
        "--dataPacketType=timestamp -n 20000 -t -w 3901 -e 3901 -P -G=-1571475901 -N 1 -F "
        "-x {work}/mdtest-hard.stonewall " + phase + " -a POSIX"
        for phase in ("-C -Y -W 3", "-T", "-E -X", "-r")
    ],
    "mdtest io500-easy (three calls)": [
        "--dataPacketType=timestamp -n 20000 -u -L -F -P -G -1571486589 -N 1 "
        "-x {work}/mdtest-easy.stonewall " + phase + " -a POSIX"
        for phase in ("-C -Y -W 3", "-T", "-r")
    ],
}


def mpirun(np, cmd):
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(np), *cmd]


def ior_summary(text):
    """Mean(MiB) per operation from "Summary of all tests:"."""
    out = {}
    start = text.index("Summary of all tests:")
    for line in text[start:].splitlines()[2:]:
        f = line.split()
        if len(f) > 3 and f[0] in ("write", "read"):
            out[f[0] + " MiB/s"] = float(f[3])
    return out


def mdtest_summary(text):
    """Mean ops/s per file phase from the SUMMARY rate table."""
    out = {}
    start = text.index("SUMMARY rate")
    for line in text[start:].splitlines()[3:]:
        if not line.strip() or line.startswith("SUMMARY"):
            break  # the rate table ends (-P prints a time table after it)
        name = line[:24].strip()
        mean = float(line[24:].split()[2]) if name.startswith("File") else 0.0
        if mean > 0:  # a phase a call did not run shows 0
            out[name + " ops/s"] = mean
    return out


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def drop_caches():
    sh("bash", "-c", "sync && echo 3 > /proc/sys/vm/drop_caches")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fs", choices=["dir", "ext4", "tmpfs"], default="dir")
    p.add_argument("--dir", default="/dev/shm")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--drop-caches", action="store_true")
    p.add_argument("--cases", default=".", help="only the cases whose name matches")
    p.add_argument("--size-mib", type=int, default=6144)
    p.add_argument("--loop-dio", action="store_true", help="the loop device without its own page cache")
    p.add_argument("--keep-memory", action="store_true", help="free page reporting off during the runs")
    a = p.parse_args()
    cases = {k: v for k, v in {**IOR_CASES, **MDTEST_CASES}.items() if re.search(a.cases, k)}
    for tool in ("ior", "mdtest"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not on PATH")
    results = {}
    base = tempfile.mkdtemp(prefix="iolab-frontends-bench-")
    if a.fs != "dir":
        os.makedirs(os.path.join(base, "backing"))
        sh("mount", "-t", "tmpfs", "-o", f"size={a.size_mib + 256}m", "tmpfs",
           os.path.join(base, "backing"))
    memory = KeepMemory() if a.keep_memory else contextlib.nullcontext()
    try:
        with memory:
            for n in range(a.repeat):
                for case, line in cases.items():
                    tool = "ior" if case.startswith("ior") else "mdtest"
                    parse = ior_summary if tool == "ior" else mdtest_summary
                    order = ("reference", "iolab") if n % 2 == 0 else ("iolab", "reference")
                    for who in order:
                        fresh = TempDir(a.dir) if a.fs == "dir" else FreshFs(base, a.fs, a.size_mib, a.loop_dio)
                        with fresh as d:
                            where = ["-o", os.path.join(d, "f")] if tool == "ior" else ["-d", os.path.join(d, "md")]
                            cmd = [tool] if who == "reference" else [IOLAB, tool, "--no-store"]
                            for step in (line if isinstance(line, list) else [line]):
                                if a.drop_caches:
                                    drop_caches()
                                args = step.format(work=base).split()
                                text = run(mpirun(a.np, cmd + args + where))
                                for k, v in parse(text).items():
                                    results.setdefault((case, k, who), []).append(v)
                    print(f"run {n + 1} {case}: " + ", ".join(
                        f"{w} {k} {results[(c, k, w)][-1]:.0f}" for (c, k, w) in sorted(results) if c == case),
                        file=sys.stderr)
    finally:
        if a.fs != "dir":
            subprocess.run(["umount", os.path.join(base, "backing")], check=False)
        shutil.rmtree(base, ignore_errors=True)
    print(f"{a.np} ranks, {a.fs}{' made fresh per run' if a.fs != 'dir' else ''}, "
          f"drop-caches {'on' if a.drop_caches else 'off'}, "
          f"{'loop dio, ' if a.loop_dio else ''}{'free page reporting off, ' if a.keep_memory else ''}medians of {a.repeat} interleaved runs")
    print(f"{'case':38} {'figure':22} {'reference':>12} {'iolab':>12} {'ratio':>7}")
    for case in cases:
        keys = sorted({k for (c, k, _) in results if c == case})
        for k in keys:
            ref = statistics.median(results[(case, k, "reference")])
            us = statistics.median(results[(case, k, "iolab")])
            print(f"{case:38} {k:22} {ref:12.1f} {us:12.1f} {us / ref if ref else float('nan'):7.3f}")


if __name__ == "__main__":
    main()
