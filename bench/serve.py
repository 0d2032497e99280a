#!/usr/bin/env python3
"""What --serve costs: the hot page-cache psync case (4 KiB random reads, 1 thread, on
tmpfs) run with and without --serve, alternating, with a client polling /api/status and
/metrics once a second while the served run lasts. Prints the median IOPS of each and the
ratio served/plain. Timings on a shared 2-vCPU VM are noisy: read the ratio.

With --targets N the same workload runs as `iolab targets` on N directories under DIR
at once (1 thread each, --size per target): what the per-target live rows cost.

Usage: bench/serve.py [--dir DIR] [--repeat N] [--runtime S] [--targets N]
Needs: a release build of iolab (built if missing; IOLAB=path uses another binary).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")


def run(workdir, runtime, serve, targets=0):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        workload = ["--no-store", "--quiet", "--json", f.name, "--rw", "randread", "--block-size", "4KiB",
                    "--cache", "hot", "--runtime", f"{runtime}s"]
        if targets:
            dirs = [os.path.join(workdir, f"t{i}") for i in range(targets)]
            for d in dirs:
                os.makedirs(d, exist_ok=True)
            cmd = [IOLAB, "targets", "--size", "256MiB", "--keep"] + workload + dirs
        else:
            cmd = [IOLAB, "run", "--dir", workdir, "--size", "1GiB"] + workload
        if serve:
            cmd.insert(2, "--serve")
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        polls = 0
        if serve:
            line = p.stderr.readline()
            addr = re.search(r"http://([^/]+)/", line).group(1)
            stop = threading.Event()

            def poll():
                nonlocal polls
                while not stop.wait(1.0):
                    try:
                        for path in ("/api/status", "/metrics"):
                            urllib.request.urlopen(f"http://{addr}{path}", timeout=2).read()
                        polls += 1
                    except OSError:
                        return

            t = threading.Thread(target=poll)
            t.start()
        p.wait()
        if serve:
            stop.set()
            t.join()
        assert p.returncode == 0, p.stderr.read()
        phases = json.load(open(f.name))["phases"]
        # iolab targets: the sum of the targets' own rates (its phases after the summary).
        iops = sum(p["ops"][0]["iops"] for p in (phases[1:] if targets else phases[:1]))
        return iops, polls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=10)
    ap.add_argument("--targets", type=int, default=0)
    a = ap.parse_args()
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=ROOT, check=True)
    plain, served, polled = [], [], []
    for i in range(a.repeat):
        order = [False, True] if i % 2 == 0 else [True, False]
        for serve in order:
            iops, polls = run(a.dir, a.runtime, serve, a.targets)
            (served if serve else plain).append(iops)
            if serve:
                polled.append(polls)
    for i in range(a.targets):
        # The targets' work directories, kept between runs (--keep) so that each run reads
        # what the first laid out; this script made the t<i> directories.
        shutil.rmtree(os.path.join(a.dir, f"t{i}"), ignore_errors=True)
    p, s = statistics.median(plain), statistics.median(served)
    what = f"iolab targets, {a.targets} targets of 1 thread" if a.targets else "1 thread"
    print(f"hot page cache, psync, {what}, {a.runtime} s x {a.repeat}")
    print(f"  plain   {p:12,.0f} IOPS (median of {plain and len(plain)})")
    print(f"  --serve {s:12,.0f} IOPS, polled {statistics.median(polled):.0f} times per run")
    print(f"  served/plain {s / p:.3f}")
    # Each served run against the plain run next to it: the spread of these pairs says
    # how small a cost this machine can see.
    pairs = sorted(b / a for a, b in zip(plain, served))
    print(f"  pairs: median {statistics.median(pairs):.3f}, "
          f"middle half {pairs[len(pairs) // 4]:.3f}-{pairs[(3 * len(pairs)) // 4]:.3f}, "
          f"all {pairs[0]:.3f}-{pairs[-1]:.3f}")


if __name__ == "__main__":
    main()
