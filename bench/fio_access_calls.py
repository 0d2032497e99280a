#!/usr/bin/env python3
"""The system calls of `iolab fio` against fio's on jobs with sizes drawn per I/O and
skewed offsets: each job run once by each tool under `strace -f -c` (the calls and their
counts), and once under `strace -f -e pread64,pwrite64` (each data I/O's length and
offset), in a fresh directory under DIR. Prints, per job, the calls each tool made on
its I/O path, the share of each I/O length, and where the I/Os fell: the share of the
I/Os on the busiest 1 % and 10 % of the 4 KiB blocks (skewed jobs) and on each zone.

Usage: bench/fio_access_calls.py [--dir DIR] [--size MIB]
Needs: fio and strace on PATH, a release build of iolab (built if missing).
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")

JOBS = [
    ("bssplit randread", ["--rw=randread", "--bssplit=4k/10:64k/50:32k/40"]),
    ("bssplit randread, norandommap", ["--rw=randread", "--bssplit=4k/10:64k/50:32k/40", "--norandommap"]),
    ("bsrange randwrite", ["--rw=randwrite", "--bsrange=4k-64k"]),
    ("zipf:1.2 randread", ["--rw=randread", "--bs=4k", "--random_distribution=zipf:1.2"]),
    ("pareto:0.2 randread", ["--rw=randread", "--bs=4k", "--random_distribution=pareto:0.2"]),
    ("normal:5 randread", ["--rw=randread", "--bs=4k", "--random_distribution=normal:5"]),
    ("zoned:60/10:30/20:10/70 randread", ["--rw=randread", "--bs=4k",
                                           "--random_distribution=zoned:60/10:30/20:10/70"]),
]
IO_CALLS = {"pread64", "pwrite64", "read", "write", "lseek", "fsync", "fdatasync", "openat", "close",
            "fallocate", "ftruncate", "fadvise64"}


def command(tool, d, args, size):
    base = ["fio"] if tool == "fio" else [IOLAB, "fio", "--no-store"]
    return base + [f"--name=j", "--thread", "--ioengine=psync", f"--size={size}m",
                   "--output-format=json", f"--directory={d}", *args]


def counts(tool, args, size, work):
    """strace -f -c: calls and their counts."""
    with tempfile.TemporaryDirectory(dir=work) as d:
        out = os.path.join(work, "c.txt")
        subprocess.run(["strace", "-f", "-c", "-o", out, *command(tool, d, args, size)],
                       check=True, capture_output=True)
    calls = {}
    for line in open(out):
        f = line.split()
        if len(f) >= 5 and f[-1] in IO_CALLS and f[3].isdigit():
            calls[f[-1]] = int(f[3])
    return calls


def data_ios(tool, args, size, work):
    """(length, offset) of every read (write) of a read (write) job on its files, per
    traced thread (strace -ff: no call split across threads); the lay-out before a read
    job (fio's write(), iolab's pwrite64) is not the job's."""
    call = "pwrite64" if "write" in " ".join(args) else "pread64"
    with tempfile.TemporaryDirectory(dir=work) as d, tempfile.TemporaryDirectory(dir=work) as t:
        subprocess.run(["strace", "-f", "-ff", "-qq", "-s", "0", "-e", f"trace=openat,close,{call}",
                        "-o", os.path.join(t, "t"), *command(tool, d, args, size)],
                       check=True, capture_output=True)
        ios = []
        for name in os.listdir(t):
            fds = set()
            for line in open(os.path.join(t, name)):
                m = re.match(r"(\w+)\((.*)\)\s+=\s+(-?\d+)", line)
                if not m:
                    continue
                c, rest, res = m.groups()
                if c == "openat" and f'"{d}/' in rest:
                    fds.add(res)
                elif c == "close":
                    fds.discard(rest.strip())
                elif c == call:
                    a = [x.strip() for x in rest.split(",")]
                    if a[0] in fds:
                        ios.append((c, int(a[2]), int(a[3])))
    return ios


def hot(ios, blocks, fraction):
    hits = collections.Counter(off // 4096 for _, _, off in ios)
    top = sorted(hits.values(), reverse=True)[:int(blocks * fraction)]
    return sum(top) / len(ios)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--size", type=int, default=64, help="MiB per job")
    a = ap.parse_args()
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="iolab-calls-", dir=a.dir)
    blocks = a.size * 256
    for name, args in JOBS:
        print(f"== {name}, {a.size} MiB, psync")
        c = {t: counts(t, args, a.size, work) for t in ("fio", "iolab")}
        calls = sorted(set(c["fio"]) | set(c["iolab"]))
        print("   calls:  " + ", ".join(f"{k} {c['fio'].get(k, 0)}/{c['iolab'].get(k, 0)}" for k in calls)
              + "  (fio/iolab)")
        ios = {t: data_ios(t, args, a.size, work) for t in ("fio", "iolab")}
        for t in ("fio", "iolab"):
            v = ios[t]
            total = sum(l for _, l, _ in v)
            aligned = all(off % 4096 == 0 for _, _, off in v)
            lens = collections.Counter(l for _, l, _ in v)
            main_lens = ", ".join(f"{l // 1024}k {n / len(v):.3f}" for l, n in sorted(lens.items())
                                  if n / len(v) >= 0.01)
            other = sum(n for n in lens.values() if n / len(v) < 0.01) / len(v)
            line = (f"   {t:6} {len(v):6} I/Os, {total / 1048576:.1f} MiB, aligned {aligned}; "
                    f"lengths: {main_lens}" + (f", others {other:.3f}" if other else ""))
            if "random_distribution" in " ".join(args) and "zoned" not in " ".join(args):
                line += f"; busiest 1% {hot(v, blocks, 0.01):.3f}, 10% {hot(v, blocks, 0.10):.3f}"
            if "zoned" in " ".join(args):
                size = a.size << 20
                zones = [(0, 0.1), (0.1, 0.3), (0.3, 1.0)]
                shares = [sum(1 for _, _, off in v if lo * size <= off < hi * size) / len(v)
                          for lo, hi in zones]
                line += "; zones " + " ".join(f"{s:.3f}" for s in shares)
            print(line)
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    sys.exit(main())
