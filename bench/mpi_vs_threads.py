#!/usr/bin/env python3
"""MPI adds no overhead inside a phase: N ranks x 1 thread against 1 rank x N threads
(N = --workers, 4 by default; on a 2-core machine --workers 2 avoids oversubscription).

Runs the same work both ways, alternating, REPEAT times, and prints the medians and the
ratio ranks/threads for each case (should be within 5 %). Data cases on the page cache
and the null backend (CPU-bound and steady, so a difference is the tool's); a metadata
case when `iolab meta` is available.

Usage: bench/mpi_vs_threads.py [--dir DIR] [--repeat N] [--runtime S] [--workers N]
Needs: an MPI build (cargo build --release --locked --features mpi) and mpirun.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.path.join(ROOT, "target", "release", "iolab")


def run(args, ranks):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [IOLAB, *args, "--no-store", "--quiet", "--json", f.name]
        if ranks > 1:
            cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(ranks), *cmd]
        subprocess.run(cmd, check=True, capture_output=True)
        j = json.load(open(f.name))
    figures = {}
    for p in j["phases"]:
        for o in p["ops"]:
            if o["op"] == "fsync":
                continue
            value = o["bandwidth"] / 2**20 if o["op"] in ("read", "write") and p["kind"] == "data" and o["bytes"] / max(o["ops"], 1) >= 65536 else o["iops"]
            figures[f'{p["name"]} {o["op"]}'] = value
    return figures


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", default="/dev/shm")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--runtime", type=int, default=5)
    p.add_argument("--workers", type=int, default=4)
    a = p.parse_args()
    rt = f"{a.runtime}s"
    cases = {
        "null randread 4KiB": ["run", "--backend", "null", "--rw", "randread", "--size", "1GiB", "--runtime", rt],
        "page-cache randread 4KiB": ["run", "--dir", a.dir, "--rw", "randread", "--size", "256MiB", "--cache", "hot", "--runtime", rt],
        "page-cache write 1MiB": ["run", "--dir", a.dir, "--rw", "write", "--block-size", "1MiB", "--size", "256MiB", "--runtime", rt],
    }
    help_text = subprocess.run([IOLAB, "meta", "--help"], capture_output=True, text=True).stdout
    if "--files-per-dir" in help_text:
        cases["metadata create/stat/remove"] = ["meta", "--dir", a.dir, "--files-per-dir", "200000", "--dirs-per-thread", "1", "--ops", "create,stat,remove"]
    n = a.workers
    print(f"{'case':<30} {'figure':<22} {f'1 rank x {n}':>12} {f'{n} ranks x 1':>12} {'ratio':>7}")
    for name, args in cases.items():
        results = {"threads": [], "ranks": []}
        for rep in range(a.repeat):
            order = [("threads", lambda: run(args + ["--threads", str(n)], 1)), ("ranks", lambda: run(args + ["--threads", "1"], n))]
            if rep % 2:
                order.reverse()
            for kind, fn in order:
                results[kind].append(fn())
        for fig in results["threads"][0]:
            t = statistics.median(r[fig] for r in results["threads"])
            r = statistics.median(x[fig] for x in results["ranks"])
            print(f"{name:<30} {fig:<22} {t:>12.0f} {r:>12.0f} {r / t:>7.3f}")


if __name__ == "__main__":
    main()
