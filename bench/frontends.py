#!/usr/bin/env python3
"""`iolab ior` and `iolab mdtest` against the real IOR and mdtest on the same command
lines, interleaved, read from each tool's own text output by one parser (the point of
the front-ends: scripts written for IOR and mdtest read iolab's output unchanged).

Usage: bench/frontends.py [--dir DIR] [--np N] [--repeat N]
Needs: ior and mdtest on PATH (IOR's repository, built outside this one), mpirun, and an
MPI build of iolab (cargo build --release --locked -p iolab --features mpi).
Prints, per case and figure, the medians and the ratio iolab / reference.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.path.join(ROOT, "target", "release", "iolab")

IOR_CASES = {
    "ior file-per-process 1m write+read": "-a POSIX -b 16m -t 1m -s 4 -F -w -r -e -i 1",
    "ior shared strided 47008": "-a POSIX -b 47008 -t 47008 -s 2000 -w -r -e -i 1",
}
MDTEST_CASES = {
    "mdtest -u -F 20000 files": "-n 20000 -u -F -i 1",
    "mdtest shared -F 3901 B": "-n 10000 -F -w 3901 -e 3901 -i 1",
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
        name = line[:24].strip()
        if name.startswith("File"):
            out[name + " ops/s"] = float(line[24:].split()[2])
    return out


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", default="/dev/shm")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    for tool in ("ior", "mdtest"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not on PATH")
    results = {}
    for _ in range(a.repeat):
        for case, line in {**IOR_CASES, **MDTEST_CASES}.items():
            tool = "ior" if case.startswith("ior") else "mdtest"
            parse = ior_summary if tool == "ior" else mdtest_summary
            for who in ("reference", "iolab"):
                with tempfile.TemporaryDirectory(dir=a.dir) as d:
                    where = ["-o", os.path.join(d, "f")] if tool == "ior" else ["-d", os.path.join(d, "md")]
                    cmd = [tool] if who == "reference" else [IOLAB, tool, "--no-store"]
                    text = run(mpirun(a.np, cmd + line.split() + where))
                    for k, v in parse(text).items():
                        results.setdefault((case, k, who), []).append(v)
    print(f"{'case':38} {'figure':22} {'reference':>12} {'iolab':>12} {'ratio':>7}")
    for case in {**IOR_CASES, **MDTEST_CASES}:
        keys = sorted({k for (c, k, _) in results if c == case})
        for k in keys:
            ref = statistics.median(results[(case, k, "reference")])
            us = statistics.median(results[(case, k, "iolab")])
            print(f"{case:38} {k:22} {ref:12.1f} {us:12.1f} {us / ref if ref else float('nan'):7.3f}")


if __name__ == "__main__":
    main()
