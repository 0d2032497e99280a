#!/usr/bin/env python3
"""iolab's nbd backend against fio's nbd ioengine, on the same nbdkit export.

One nbdkit memory export (scripts/nbd.sh) serves both tools. Each case runs fio
(`--ioengine=nbd --uri=...`) and iolab (`--backend nbd --nbd-uri ...`) back to back on the
same work (block size, queue depth, direction, export, runtime), alternating which goes
first, ROUNDS times, and prints each tool's median IOPS and the iolab/fio ratio of every
round. Both reach the export through libnbd with one connection per job; the export is
written in full first, so reads read data. Nothing here is a test: read the ratios.

Usage: bench/nbd.py [--size 1G] [--runtime 5] [--rounds 3] [CASE ...]
Cases: randread4k-qd1 randread4k-qd16 randwrite4k-qd1 randwrite4k-qd16
       seqread1m-qd1 seqread1m-qd16 seqwrite1m-qd1 seqwrite1m-qd16   (default: all)
Needs: nbdkit and libnbd0, fio 3.33 with its nbd engine (Debian's), a release build of
iolab (built if missing; IOLAB=path picks another).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
NBD_SH = os.path.join(ROOT, "scripts", "nbd.sh")

CASES = {
    f"{name}-qd{qd}": (rw, bs, qd)
    for name, rw, bs in [
        ("randread4k", "randread", "4k"),
        ("randwrite4k", "randwrite", "4k"),
        ("seqread1m", "read", "1m"),
        ("seqwrite1m", "write", "1m"),
    ]
    for qd in (1, 16)
}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def fio(uri, size, rw, bs, qd, runtime):
    """fio's nbd engine; returns IOPS."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        # fio prints "connected to NBD server" on stdout: the JSON goes to a file.
        sh(["fio", "--name=nbd", "--ioengine=nbd", f"--uri={uri}", f"--rw={rw}", f"--bs={bs}",
            f"--iodepth={qd}", f"--size={size}", "--time_based", f"--runtime={runtime}",
            "--output-format=json", f"--output={f.name}"])
        job = json.load(open(f.name))["jobs"][0]
    side = job["read"] if rw.endswith("read") else job["write"]
    return side["iops"]


def iolab(uri, size, rw, bs, qd, runtime):
    """iolab's nbd backend; returns IOPS."""
    block = {"4k": "4KiB", "1m": "1MiB"}[bs]
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh([IOLAB, "run", "--backend", "nbd", "--nbd-uri", uri, "--rw", rw, "--block-size", block,
            "--queue-depth", str(qd), "--size", size.replace("G", "GiB").replace("M", "MiB"),
            "--runtime", f"{runtime}s", "--allow-destroy", "--no-store", "--quiet",
            "--json", f.name])
        run = json.load(open(f.name))
    op = [o for o in run["phases"][-1]["ops"] if o["op"] in ("read", "write")][0]
    return op["iops"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1G", help="the export's size (nbdkit memory), e.g. 1G")
    ap.add_argument("--runtime", type=int, default=5, help="seconds per run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("cases", nargs="*", default=list(CASES))
    a = ap.parse_args()
    unknown = [c for c in a.cases if c not in CASES]
    if unknown:
        sys.exit(f"nbd.py: unknown case(s) {unknown}; cases: {' '.join(CASES)}")
    if not os.path.exists(IOLAB):
        sh(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=ROOT)
    state = tempfile.mkdtemp(prefix="iolab-nbd-bench-", dir="/tmp")
    env = sh([NBD_SH, "up", "--state", os.path.join(state, "nbd"), "--size", a.size]).stdout
    uri = dict(l.split("=", 1) for l in env.splitlines() if "=" in l and not l.startswith("#"))["NBD_URI"]
    try:
        # Written in full once, so that every read reads data (fio's reads of a sparse
        # memory export would find holes).
        sh(["fio", "--name=fill", "--ioengine=nbd", f"--uri={uri}", "--rw=write", "--bs=1m",
            "--iodepth=8", f"--size={a.size}", "--output=/dev/null"])
        print(f"# export {uri} ({a.size}, nbdkit memory), {a.runtime} s per run, {a.rounds} rounds, "
              f"order alternating; iolab {IOLAB}")
        print(f"{'case':18} {'fio IOPS':>10} {'iolab IOPS':>11}  iolab/fio per round (median)")
        for name in a.cases:
            rw, bs, qd = CASES[name]
            got = {"fio": [], "iolab": []}
            for r in range(a.rounds):
                order = [("fio", fio), ("iolab", iolab)]
                if r % 2:
                    order.reverse()
                for tool, f in order:
                    got[tool].append(f(uri, a.size, rw, bs, qd, a.runtime))
            ratios = [i / f for i, f in zip(got["iolab"], got["fio"])]
            print(f"{name:18} {statistics.median(got['fio']):10.0f} {statistics.median(got['iolab']):11.0f}  "
                  f"{' '.join(f'{x:.3f}' for x in ratios)} ({statistics.median(ratios):.3f})", flush=True)
    finally:
        sh([NBD_SH, "down", "--state", os.path.join(state, "nbd")])
        os.rmdir(state)


if __name__ == "__main__":
    main()
