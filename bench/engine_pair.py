"""The comparison loop bench/nbd.py and bench/nfs.py share: iolab's backend against fio's
ioengine for the same network storage, case by case.

Each case (direction, block size, queue depth) runs fio and iolab back to back on the
same export for the same time, alternating which goes first, ROUNDS times, and prints
each tool's median IOPS and the iolab/fio ratio of every round as a Markdown table.
--pin SERVER:CLIENT fixes where the server and the tools run. Nothing here is a test:
read the ratios.
"""

import argparse
import os
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
    if os.environ.get("BENCH_TRACE"):
        print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def arguments(doc, size):
    """The common options: --size (default `size`), --runtime, --rounds, cases."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default=size, help=f"the data's size, e.g. {size}")
    ap.add_argument("--runtime", type=int, default=5, help="seconds per run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pin", metavar="SERVER:CLIENT",
                    help="pin the server's threads to CPU SERVER and both tools to CPU CLIENT "
                         "(e.g. 0:1): at QD 1 a round trip costs a wake-up, and one on the "
                         "server's own CPU is several times cheaper here than one across CPUs, "
                         "so unpinned QD 1 ratios follow where the scheduler put each tool")
    ap.add_argument("cases", nargs="*", default=list(CASES))
    a = ap.parse_args()
    a.server_cpu, a.client_cpu = None, None
    if a.pin:
        try:
            a.server_cpu, a.client_cpu = (int(c) for c in a.pin.split(":"))
        except ValueError:
            sys.exit(f"--pin takes SERVER:CLIENT CPU numbers such as 0:1, not {a.pin!r}")
    unknown = [c for c in a.cases if c not in CASES]
    if unknown:
        sys.exit(f"unknown case(s) {unknown}; cases: {' '.join(CASES)}")
    return a


def client(a, cmd):
    """`cmd` pinned to the client CPU of --pin, if given."""
    return cmd if a.client_cpu is None else ["taskset", "-c", str(a.client_cpu)] + cmd


def pin_server(a, pid):
    """Every thread of the server `pid` on the server CPU of --pin, if given."""
    if a.server_cpu is not None:
        sh(["taskset", "-a", "-p", "-c", str(a.server_cpu), str(pid)])


def compare(a, fio, iolab):
    """Runs every case of `a` with `fio(rw, bs, qd)` and `iolab(rw, bs, qd)` (each
    returns IOPS) and prints a Markdown table to paste."""
    print("| case | fio IOPS | iolab IOPS | iolab / fio per round (median) |")
    print("|---|---|---|---|")
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
        print(f"| {name} | {statistics.median(got['fio']):,.0f} | {statistics.median(got['iolab']):,.0f} | "
              f"{' '.join(f'{x:.3f}' for x in ratios)} ({statistics.median(ratios):.3f}) |", flush=True)


def env_of(text):
    """KEY=value lines (values in single or double quotes or none) as a dict."""
    pairs = (l.split("=", 1) for l in text.splitlines() if "=" in l and not l.startswith("#"))
    return {k: v.strip("'\"") for k, v in pairs}
