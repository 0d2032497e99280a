"""The comparison loop bench/nbd.py and bench/nfs.py share: iolab's backend against fio's
ioengine for the same network storage, case by case.

Each case (direction, block size, queue depth) runs fio and iolab back to back on the
same export for the same time, alternating which goes first, ROUNDS times, and prints
each tool's median IOPS and the iolab/fio ratio of every round. Nothing here is a test:
read the ratios.
"""

import argparse
import statistics
import subprocess
import sys

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

# fio's sizes as iolab takes them.
IOLAB_BLOCK = {"4k": "4KiB", "1m": "1MiB"}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def arguments(doc, size):
    """The common options: --size (default `size`), --runtime, --rounds, cases."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default=size, help=f"the data's size, e.g. {size}")
    ap.add_argument("--runtime", type=int, default=5, help="seconds per run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("cases", nargs="*", default=list(CASES))
    a = ap.parse_args()
    unknown = [c for c in a.cases if c not in CASES]
    if unknown:
        sys.exit(f"unknown case(s) {unknown}; cases: {' '.join(CASES)}")
    return a


def compare(a, fio, iolab):
    """Runs every case of `a` with `fio(rw, bs, qd)` and `iolab(rw, bs, qd)` (each
    returns IOPS) and prints the table."""
    print(f"{'case':18} {'fio IOPS':>10} {'iolab IOPS':>11}  iolab/fio per round (median)")
    for name in a.cases:
        rw, bs, qd = CASES[name]
        got = {"fio": [], "iolab": []}
        for r in range(a.rounds):
            order = [("fio", fio), ("iolab", iolab)]
            if r % 2:
                order.reverse()
            for tool, f in order:
                got[tool].append(f(rw, bs, qd))
        ratios = [i / f for i, f in zip(got["iolab"], got["fio"])]
        print(f"{name:18} {statistics.median(got['fio']):10.0f} {statistics.median(got['iolab']):11.0f}  "
              f"{' '.join(f'{x:.3f}' for x in ratios)} ({statistics.median(ratios):.3f})", flush=True)


def env_of(text):
    """KEY=value lines (values in single or double quotes or none) as a dict."""
    pairs = (l.split("=", 1) for l in text.splitlines() if "=" in l and not l.startswith("#"))
    return {k: v.strip("'\"") for k, v in pairs}
