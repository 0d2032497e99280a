#!/usr/bin/env python3
"""What --serve costs: the hot page-cache psync case (4 KiB random reads, 1 thread, on
tmpfs) run with and without --serve, alternating, with a client polling /api/status and
/metrics once a second while the served run lasts. Prints the median IOPS of each and the
ratio served/plain. Timings on a shared 2-vCPU VM are noisy: read the ratio.

Usage: bench/serve.py [--dir DIR] [--repeat N] [--runtime S]
Needs: a release build of iolab (built if missing).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.path.join(ROOT, "target", "release", "iolab")


def run(workdir, runtime, serve):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [IOLAB, "run", "--dir", workdir, "--no-store", "--quiet", "--json", f.name, "--rw", "randread",
               "--block-size", "4KiB", "--size", "1GiB", "--cache", "hot", "--runtime", f"{runtime}s"]
        if serve:
            cmd.append("--serve")
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
        op = json.load(open(f.name))["phases"][0]["ops"][0]
        return op["iops"], polls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runtime", type=int, default=10)
    a = ap.parse_args()
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=ROOT, check=True)
    plain, served, polled = [], [], []
    for i in range(a.repeat):
        order = [False, True] if i % 2 == 0 else [True, False]
        for serve in order:
            iops, polls = run(a.dir, a.runtime, serve)
            (served if serve else plain).append(iops)
            if serve:
                polled.append(polls)
    p, s = statistics.median(plain), statistics.median(served)
    print(f"hot page cache, psync, 1 thread, {a.runtime} s x {a.repeat}")
    print(f"  plain   {p:12,.0f} IOPS (median of {plain and len(plain)})")
    print(f"  --serve {s:12,.0f} IOPS, polled {statistics.median(polled):.0f} times per run")
    print(f"  served/plain {s / p:.3f}")


if __name__ == "__main__":
    main()
