#!/usr/bin/env python3
"""mdtest against `iolab meta` on the same work, side by side, each run on a fresh file
system.

Both run NP MPI ranks (one worker per rank, as mdtest), FILES files per rank in a private
directory per rank (`mdtest -u -F -n FILES`; iolab's default tree is mdtest's), phases
create, stat, read and remove in one run, with FILE_SIZE-byte files (`-w`/`-e`). iolab
makes mdtest's calls with whole paths (`--paths whole`, its default); `--relative` adds
iolab's directory-relative calls as a third column, to show what the path walk costs.
Every run gets a freshly made ext4 on a loop device backed by a tmpfs file (BENCH-NOTES'
method, repeatable within 3 % here), or a fresh tmpfs with --fs tmpfs. The tools alternate
(which goes first alternates too), REPEAT times each. Prints per phase the median rate of
each tool and iolab/mdtest.

Usage: bench/mdtest.py [--np 2] [--files 30000] [--repeat 5] [--fs ext4|tmpfs]
                       [--file-size 0] [--relative]
Needs root (mount, losetup), mpirun and mdtest on PATH (built outside this repository as
../shared/BENCH-NOTES.md says); IOLAB= chooses the iolab binary (default
target/release/iolab, built with --features mpi if missing).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from io500 import ROOT, FreshFs, sh  # noqa: E402

OPS = ["create", "stat", "read", "remove"]
MDTEST_ROWS = {"File creation": "create", "File stat": "stat", "File read": "read",
               "File removal": "remove"}
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def run_mdtest(mdtest, mnt, args, _work, _n):
    cmd = MPIRUN + ["-np", str(args.np), mdtest, "-n", str(args.files), "-u", "-F",
                    "-w", str(args.file_size), "-e", str(args.file_size),
                    "-C", "-T", "-E", "-r", "-a", "POSIX", "-d", f"{mnt}/mdtest"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    rates = {}
    in_rates = False
    for line in out.stdout.splitlines():
        if line.startswith("SUMMARY rate"):
            in_rates = True
        elif line.startswith("SUMMARY time"):
            in_rates = False
        for row, op in MDTEST_ROWS.items():
            if in_rates and line.strip().startswith(row):
                rates[op] = float(line.split()[2])
    if not rates:
        sys.stderr.write(out.stdout[-2000:] + out.stderr[-2000:])
    return rates


def run_iolab(iolab, mnt, args, work, n, paths="whole"):
    out_json = os.path.join(work, f"iolab-{n}-{paths}.json")
    cmd = MPIRUN + ["-np", str(args.np), iolab, "meta", "--dir", mnt, "-n", str(args.files),
                    "--file-size", str(args.file_size), "--ops", ",".join(OPS),
                    "--paths", paths, "--no-store", "-Q", "--json", out_json]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        with open(out_json) as f:
            doc = json.load(f)
    except OSError:
        sys.stderr.write(out.stderr[-2000:])
        return {}
    return {p["params"]["op"]: p["ops"][0]["iops"] for p in doc["phases"]}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--files", type=int, default=30000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--fs", choices=["ext4", "tmpfs"], default="ext4")
    p.add_argument("--file-size", type=int, default=0)
    p.add_argument("--size-mib", type=int, default=2048)
    p.add_argument("--relative", action="store_true")
    args = p.parse_args()
    mdtest = os.environ.get("MDTEST") or shutil.which("mdtest")
    if not mdtest:
        sys.exit("mdtest.py: no mdtest on PATH (BENCH-NOTES says how to build it)")
    iolab = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
    if not os.path.exists(iolab):
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "iolab", "--features",
                        "mpi"], cwd=ROOT, check=True)
    base = tempfile.mkdtemp(prefix="iolab-mdtest-bench-")
    backing = os.path.join(base, "backing")
    os.makedirs(backing)
    sh("mount", "-t", "tmpfs", "-o", f"size={args.size_mib + 256}m", "tmpfs", backing)
    tools = [("mdtest", run_mdtest, mdtest, {}), ("iolab", run_iolab, iolab, {})]
    if args.relative:
        tools.append(("relative", run_iolab, iolab, {"paths": "relative"}))
    results = {name: [] for name, *_ in tools}
    try:
        for n in range(args.repeat):
            order = tools if n % 2 == 0 else list(reversed(tools))
            for name, fn, exe, extra in order:
                with FreshFs(base, args.fs, args.size_mib) as mnt:
                    rates = fn(exe, mnt, args, base, n, **extra)
                print(f"run {n + 1} {name}: {rates}", file=sys.stderr)
                results[name].append(rates)
    finally:
        subprocess.run(["umount", backing], check=False)
        shutil.rmtree(base, ignore_errors=True)
    print(f"mdtest vs iolab meta: {args.np} ranks, {args.files} files per rank, "
          f"{args.file_size}-byte files, {args.fs} made fresh per run, medians of "
          f"{args.repeat} interleaved runs")
    header = f"{'op':<8}{'mdtest/s':>12}{'iolab/s':>12}{'iolab/mdtest':>14}"
    if args.relative:
        header += f"{'relative/s':>12}{'rel/mdtest':>12}"
    print(header)
    for op in OPS:
        med = {k: statistics.median([r[op] for r in v if op in r] or [0]) for k, v in results.items()}
        line = f"{op:<8}{med['mdtest']:>12,.0f}{med['iolab']:>12,.0f}"
        line += f"{med['iolab'] / med['mdtest']:>14.2f}" if med["mdtest"] else f"{'-':>14}"
        if args.relative:
            rel = med["relative"]
            line += f"{rel:>12,.0f}" + (f"{rel / med['mdtest']:>12.2f}" if med["mdtest"] else "")
        print(line)


if __name__ == "__main__":
    main()
