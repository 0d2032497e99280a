#!/usr/bin/env python3
"""Not timed: why a storage-bound run differs. v3.0 DLIO and `iolab train run` once each
on the storage mode's target (bench/train_dlio.py storage: an iolab-faultfs mount that
stalls every open by --stall and serves two requests at a time), each under
`strace -f -tt -T -y`: per tool the parquet/npz/jpeg opens, the threads that open, the
most opens in flight at once, the read calls and sizes, the bytes read, and each
tool's AU and samples/s (both over AU's window: the first step left out) with the
first step's share of the epoch.

  python3 bench/train_dlio_trace.py --workload dlrm --files 16 --stall 1s

IOLAB= and FAULTFS= as for bench/train_dlio.py; the venv and configs too. Both tools are
launched unbound, as bench/train_dlio.py launches them. --keep DIR keeps the traces
(dlio.st, iolab.st) and DLIO's per-step times (0_output.json).
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlio as base  # noqa: E402
import train_dlio as t  # noqa: E402

STRACE = ["strace", "-f", "-tt", "-T", "-y", "-e", "trace=openat,pread64,read,lseek,close"]
EXT = {"dlrm": ".parquet", "flux": ".parquet", "unet3d": ".npz", "retinanet": ".jpeg"}


def calls(path):
    """(pid, start, end, call text) of every call in an strace -f -tt -T log, an
    interrupted call's two lines joined."""
    pending = {}
    for line in open(path):
        m = re.match(r"(\d+)\s+(\d+):(\d+):([\d.]+)\s+(.*)", line.rstrip("\n"))
        if not m:
            continue
        pid, h, mi, s, rest = m.groups()
        ts = int(h) * 3600 + int(mi) * 60 + float(s)
        cut = re.match(r"(.*) <unfinished \.\.\.>$", rest)
        if cut:
            pending[pid] = cut.group(1)
            continue
        back = re.match(r"<\.\.\. \w+ resumed>(.*)", rest)
        if back and pid in pending:
            rest = pending.pop(pid) + back.group(1)
        took = re.search(r"<([\d.]+)>$", rest)
        yield pid, ts - (float(took.group(1)) if took else 0), ts, rest


def summary(path, ext):
    opens, threads, sizes, moved, edges = 0, set(), collections.Counter(), 0, []
    for pid, t0, t1, c in calls(path):
        if c.startswith("openat(") and ext in c and "= -1" not in c:
            opens += 1
            threads.add(pid)
            edges += [(t0, 1), (t1, -1)]
        r = re.match(r"(pread64|read)\(\d+<[^>]*%s>, .*\)\s*=\s*(\d+)" % re.escape(ext), c)
        if r:
            sizes[(r.group(1), int(r.group(2)))] += 1
            moved += int(r.group(2))
    now = most = 0
    for _, step in sorted(edges):
        now += step
        most = max(most, now)
    common = ", ".join(f"{k[0]} {k[1]} x{n}" for k, n in sizes.most_common(5))
    return (f"{opens} opens by {len(threads)} threads, at most {most} in flight; "
            f"{moved} bytes read; reads: {common}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="dlrm", choices=sorted(EXT))
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--stall", default="1s")
    ap.add_argument("--samples-per-file", type=int, default=None)
    ap.add_argument("--record-length", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--row-group-size", type=int, default=None)
    ap.add_argument("--read-threads", type=int, default=None)
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--keep", default=None,
                    help="a directory to copy both traces and DLIO's 0_output.json to")
    ap.add_argument("--venv", default="/work/peers/dlio3-venv/V")
    ap.add_argument("--dlio-configs", default="/work/peers/dlio3/dlio_benchmark/configs")
    args = ap.parse_args()
    args.np, args.epochs = 1, 1
    scratch = tempfile.mkdtemp(prefix="iolab-bench-train-trace-")
    backing = tempfile.mkdtemp(dir=args.data_root or scratch, prefix="iolab-bench-backing-")
    try:
        args.config_dir = t.write_configs(scratch, args)
        dlio, iolab = t.small(args, args.workload)
        t.datagen(os.path.join(backing, "d"), iolab)
        fs = base.FaultMount(backing, os.path.join(scratch, "mnt"), [f"open:stall={args.stall}"])
        try:
            data = os.path.join(fs.mount, "d")
            d_trace, i_trace = os.path.join(scratch, "dlio.st"), os.path.join(scratch, "iolab.st")
            out = tempfile.mkdtemp(dir=scratch, prefix="dlio-out-")
            t.dlio_run(args, f"{args.workload}_b200",
                       [f"++workload.dataset.data_folder={data}",
                        f"++workload.output.folder={out}"] + dlio, out,
                       wrap=STRACE + ["-o", d_trace])
            with open(os.path.join(out, "summary.json")) as f:
                dm = json.load(f)["metric"]
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                shutil.copy(os.path.join(out, "0_output.json"), args.keep)
            summ = os.path.join(scratch, "iolab-summary.json")
            base.timed(t.MPIRUN + ["-np", "1"] + STRACE + ["-o", i_trace, base.iolab_bin(),
                       "train", "run", "--data-dir", data, "--summary-json", summ,
                       "--no-store", "--quiet"] + iolab)
            with open(summ) as f:
                im = json.load(f)["metric"]
        finally:
            fs.close()
        if args.keep:
            shutil.copy(d_trace, args.keep)
            shutil.copy(i_trace, args.keep)
        for name, m, trace in (("DLIO", dm, d_trace), ("iolab", im, i_trace)):
            print(f"{name}: AU {m['train_au_mean_percentage']:.2f} %, "
                  f"{m['train_throughput_mean_samples_per_second']:.1f} samples/s; "
                  f"{summary(trace, EXT[args.workload])}")
    finally:
        shutil.rmtree(backing, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
