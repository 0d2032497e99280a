#!/usr/bin/env python3
"""Two builds of iolab on the same `iolab run` workload, interleaved: the hot loop's cost of
a change, measured against the build before it. Each case runs REPEAT times per build,
alternating which build goes first; prints median IOPS and new/old.

Usage: bench/ab.py OLD_IOLAB NEW_IOLAB [--repeat N] [--runtime S] [--dir DIR] [case ...]
Cases: null (null backend, 4 KiB random read, 1 thread), null-randrw and null-rw (the
same, random 70/30 and sequential 50/50 mixes), hot1 (4 KiB random read, psync,
hot page cache, 1 thread, on a tmpfs in /dev/shm), fio-null and fio-hot1 (the same through
`iolab fio` with fio's options), fio-write1 and fio-refill1 (4 KiB random buffered writes
on the tmpfs through `iolab fio`, fio's default data and refill_buffers).
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile


def cases(rt, d):
    run = ["run", "--no-store", "--quiet", "--rw", "randread", "--block-size", "4KiB", "--runtime", f"{rt}s"]
    yield "null", [*run, "--backend", "null", "--size", "1GiB"], "run"
    yield "hot1", [*run, "--size", "256MiB", "--cache", "hot", "--dir", d], "run"
    mixed = [a if a != "randread" else "randrw" for a in run]
    yield "null-randrw", [*mixed, "--rwmix-read", "70", "--backend", "null", "--size", "1GiB"], "run"
    yield "null-rw", [*[a if a != "randrw" else "rw" for a in mixed], "--backend", "null", "--size", "1GiB"], "run"
    fio = ["fio", "--no-store", "--output-format=json", "--name=j", "--rw=randread", "--bs=4k", "--time_based",
           f"--runtime={rt}"]
    yield "fio-null", [*fio, "--ioengine=null", "--size=1g", f"--directory={d}"], "fio"
    yield "fio-hot1", [*fio, "--size=256m", "--invalidate=0", f"--directory={d}"], "fio"
    # Buffered 4 KiB random writes on a tmpfs: the cost of what a write carries (fio's
    # default data, stamped per 512 bytes, or iolab's own with refill_buffers).
    write = [a if a != "--rw=randread" else "--rw=randwrite" for a in fio]
    yield "fio-write1", [*write, "--size=256m", f"--directory={d}"], "fio"
    yield "fio-refill1", [*write, "--size=256m", "--refill_buffers", f"--directory={d}"], "fio"


def iops(binary, args, kind):
    if kind == "fio":
        out = subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout
        job = json.loads(out)["jobs"][0]
        return job["read"]["iops"] + job["write"]["iops"]
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, *args, "--json", f.name], check=True, capture_output=True)
        run = json.load(open(f.name))
    phase = run["phases"][0]
    return sum(o["iops"] for o in phase["ops"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=4)
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("case", nargs="*")
    a = ap.parse_intermixed_args()
    print(f"{'case':10} {'old IOPS':>12} {'new IOPS':>12} {'new/old':>8}")
    for name, args, kind in cases(a.runtime, a.dir):
        if a.case and name not in a.case:
            continue
        got = {"old": [], "new": []}
        for r in range(a.repeat):
            for which in (["old", "new"] if r % 2 == 0 else ["new", "old"]):
                got[which].append(iops(getattr(a, which), args, kind))
        o, n = statistics.median(got["old"]), statistics.median(got["new"])
        print(f"{name:10} {o:12,.0f} {n:12,.0f} {n / o:8.3f}")


if __name__ == "__main__":
    main()
