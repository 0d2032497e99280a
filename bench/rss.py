#!/usr/bin/env python3
"""Memory stays flat: the peak RSS of a long iolab run against a short one.

Runs the same workload for SHORT and LONG seconds and prints both peak RSS figures and
their ratio (should be ~1.0: histograms and per-second timelines do not grow with the
number of I/Os). Default workload: null backend, 4 KiB random reads, 2 threads, paced to
20k IOPS per thread so the long run does not occupy a CPU for ten minutes.

Usage: bench/rss.py [--short 10] [--long 600] [--rate 40000] [--threads 2]
"""

import argparse
import os
import resource
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.path.join(ROOT, "target", "release", "iolab")


def peak_rss_kib(seconds, a):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run([IOLAB, "run", "--backend", "null", "--rw", "randread", "--size", "1GiB",
                    "--threads", str(a.threads), "--rate-iops", str(a.rate), "--runtime", f"{seconds}s",
                    "--no-store", "--quiet"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the maximum over all waited-for children so far.
    return max(after, before) if after > before else after


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--short", type=int, default=10)
    p.add_argument("--long", type=int, default=600)
    p.add_argument("--rate", type=int, default=40000)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=ROOT, check=True)
    short = peak_rss_kib(a.short, a)   # the short run first: children's max only grows
    long = peak_rss_kib(a.long, a)
    print(f"peak RSS: {a.short} s run {short} KiB, {a.long} s run {long} KiB, ratio {long / short:.3f}")


if __name__ == "__main__":
    main()
