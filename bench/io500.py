#!/usr/bin/env python3
"""IO500's own io500 against `iolab io500` on the same settings, side by side.

Each run gets a freshly made ext4 on a loop device backed by a file in a tmpfs (no history
from earlier deletes, no disk noise: BENCH-NOTES' method, repeatable within 3 % here), or
a fresh tmpfs with --fs tmpfs. io500 and iolab alternate (which goes first alternates too),
REPEAT times each, with NP MPI ranks. Prints every phase's median for each tool and the
iolab/io500 ratio, and the TOTAL score's.

Usage: bench/io500.py [--np 2] [--repeat 3] [--stonewall 3] [--fs ext4|tmpfs]
                      [--on cephfs|seaweedfs] [--append FILE]
                      [--size-mib 6144] [--drop-caches] [--loop-dio]
                      [--ior-easy-block-mib 1024] [--ior-hard-segments 20000] [--keep-memory]
                      [--warmup N] [--files-per-rank N]
--loop-dio makes the loop device write through to its backing file (`losetup
--direct-io=on`) instead of keeping a second page cache of the same data.
--keep-memory turns the VM's free page reporting off for the run (and back on after):
with it on, memory the guest frees (the page cache every drop-caches empties) goes back
to the host a couple of seconds later and is slow to touch again, so a read phase's rate
depends on how long after the drop it ran (BENCHMARKS.md, "Fresh memory").
--on cephfs (or seaweedfs) runs each tool on a fresh single-node cluster instead, made by
scripts/ceph.sh (OSD image in a tmpfs) or scripts/seaweedfs.sh (all its state in a tmpfs),
mounted with ceph-fuse or weed mount, taken down after the run.
--append FILE adds this call's runs to FILE's and prints the medians of all of them, so a
long comparison can run as several short calls (one pair each under /work/tools/quiet).
--warmup N runs N pairs first that are not counted (memory the host took back before
--keep-memory, touched again once).
Needs root (mount, losetup), mpirun, and io500 on PATH (or IO500=/path/to/io500), built
outside this repository as ../shared/BENCH-NOTES.md says; IOLAB= chooses the iolab binary
(default target/release/iolab, built with --features mpi if missing).
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT = re.compile(r"^\[(?:RESULT|      )\]\s+(\S+)\s+([0-9.]+) (GiB/s|kIOPS)(?: : time ([0-9.]+) seconds)?")
SCORE = re.compile(r"TOTAL ([0-9.]+)")


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class FreshFs:
    """A new, empty file system for one run, removed afterwards."""

    def __init__(self, base, kind, size_mib, loop_dio=False):
        self.base, self.kind, self.size, self.loop_dio = base, kind, size_mib, loop_dio
        self.mnt = os.path.join(base, "mnt")
        self.loop = None

    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        if self.kind == "tmpfs":
            sh("mount", "-t", "tmpfs", "-o", f"size={self.size}m", "tmpfs", self.mnt)
            return self.mnt
        img = os.path.join(self.base, "backing", "ext4.img")
        with open(img, "wb") as f:
            f.truncate(self.size * 1024 * 1024)
        # --direct-io=on: the loop device writes through to the backing file without a
        # second page cache of its own (less memory to write back and reclaim).
        dio = ["--direct-io=on"] if self.loop_dio else []
        self.loop = sh("losetup", "-f", "--show", *dio, img).stdout.strip()
        # One inode per 2 KiB: mdtest's empty files run out of inodes long before space.
        sh("mkfs.ext4", "-q", "-F", "-i", "2048", "-E", "lazy_itable_init=0,lazy_journal_init=0",
           self.loop)
        sh("mount", self.loop, self.mnt)
        return self.mnt

    def __exit__(self, *exc):
        # A program's io_uring lets go of its files a moment after it exits (the ring is
        # torn down asynchronously): until then the file system is busy. Wait for it
        # rather than mount the next one on top.
        for _ in range(100):
            if subprocess.run(["umount", self.mnt], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            raise SystemExit(f"{self.mnt} stays busy: cannot unmount it")
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], check=False)
            os.remove(os.path.join(self.base, "backing", "ext4.img"))


# Linux's free page reporting (virtio-balloon) hands free blocks of at least 2^order pages
# back to the host; an order above the largest (10 on x86) reports none.
PAGE_REPORTING_ORDER = "/sys/module/page_reporting/parameters/page_reporting_order"


class KeepMemory:
    """Free page reporting off while the context runs, restored after."""

    def __enter__(self):
        try:
            with open(PAGE_REPORTING_ORDER) as f:
                self.saved = f.read().strip()
            with open(PAGE_REPORTING_ORDER, "w") as f:
                f.write("11")
        except OSError as e:
            raise SystemExit(f"--keep-memory: cannot set {PAGE_REPORTING_ORDER}: {e}")
        return self

    def __exit__(self, *exc):
        with open(PAGE_REPORTING_ORDER, "w") as f:
            f.write(self.saved)


class FreshCluster:
    """A new single-node cluster from scripts/ceph.sh or scripts/seaweedfs.sh for one run,
    its file system mounted (CephFS through ceph-fuse, SeaweedFS through weed mount),
    taken down afterwards. Ceph's OSD images and SeaweedFS's whole state live in `base`'s
    tmpfs, so the disk's noise stays out as it does for the fresh ext4."""

    def __init__(self, base, kind, size_mib):
        self.base, self.kind, self.size = base, kind, size_mib
        system = "ceph" if kind == "cephfs" else "seaweedfs"
        self.script = os.path.join(ROOT, "scripts", f"{system}.sh")
        where = "/var/tmp" if system == "ceph" else os.path.join(base, "backing")
        self.state = tempfile.mkdtemp(prefix=f"iolab-bench-{system}-", dir=where)
        os.rmdir(self.state)

    def __enter__(self):
        extra = []
        if self.kind == "cephfs":
            extra = ["--osd-dir", os.path.join(self.base, "backing"), "--osd-size", f"{self.size}M"]
        out = sh(self.script, "up", "--state", self.state, "--ports", "auto", *extra).stdout
        env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and not line.startswith("#"))
        return env["CEPHFS_MOUNT" if self.kind == "cephfs" else "SEAWEEDFS_MOUNT"]

    def __exit__(self, *exc):
        subprocess.run([self.script, "down", "--state", self.state], check=False)


class TempDir:
    """A fresh directory under `base`, removed afterwards: a context like FreshFs for
    runs in an existing file system."""

    def __init__(self, base):
        self.base = base

    def __enter__(self):
        self.d = tempfile.mkdtemp(dir=self.base)
        return self.d

    def __exit__(self, *exc):
        shutil.rmtree(self.d, ignore_errors=True)


def parse(text):
    figures = {}
    for m in filter(None, map(RESULT.match, text.splitlines())):
        figures[m.group(1)] = float(m.group(2))
        if m.group(4):
            # The phase's time (stored apart: the tables below print the rates).
            figures[f"time:{m.group(1)}"] = float(m.group(4))
    total = SCORE.search(text)
    if total:
        figures["TOTAL"] = float(total.group(1))
    return figures


def run_io500(io500, mnt, work, args, n):
    ini = os.path.join(work, f"io500-{n}.ini")
    with open(ini, "w") as f:
        f.write(
            f"[global]\ndatadir = {mnt}/io500\nresultdir = {work}/io500-results-{n}\n"
            f"drop-caches = {'TRUE' if args.drop_caches else 'FALSE'}\n"
            # IO500's default drop-caches-cmd runs `sudo -n`, which fails silently where
            # there is no sudo (a root shell, containers): then nothing is dropped. The
            # same drop as iolab's --drop-caches (dirty pages written back first), as root.
            f"drop-caches-cmd = bash -c \"sync && echo 3 > /proc/sys/vm/drop_caches\"\n"
            f"[debug]\nstonewall-time = {args.stonewall}\n"
            f"[ior-easy]\nblockSize = {args.ior_easy_block_mib}m\n"
            f"[ior-hard]\nsegmentCount = {args.ior_hard_segments}\n"
            + (f"[mdtest-easy]\nn = {args.files_per_rank}\n[mdtest-hard]\nn = {args.files_per_rank}\n"
               if args.files_per_rank else "")
        )
    out = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.np), io500, ini],
        capture_output=True, text=True, cwd=work, check=False,
    )
    figures = parse(out.stdout)
    if not figures:
        sys.stderr.write(out.stdout[-2000:] + out.stderr[-2000:])
    return figures


def run_iolab(iolab, mnt, work, args, n):
    os.makedirs(f"{mnt}/iolab", exist_ok=True)
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.np), iolab,
           "io500", "--dir", f"{mnt}/iolab", "--stonewall", f"{args.stonewall}s",
           "--result-dir", f"{work}/iolab-results-{n}", "--no-store", "-Q",
           "--ior-easy-block", f"{args.ior_easy_block_mib}MiB",
           "--ior-hard-segments", str(args.ior_hard_segments)]
    if args.files_per_rank:
        cmd += ["--files-per-rank", str(args.files_per_rank)]
    if args.drop_caches:
        cmd.append("--drop-caches")
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=work, check=False)
    # -Q prints nothing: read the result.txt it wrote, in IO500's format.
    try:
        with open(f"{work}/iolab-results-{n}/result.txt") as f:
            return parse(f.read())
    except OSError:
        sys.stderr.write(out.stderr)
        return {}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--stonewall", type=int, default=3)
    p.add_argument("--fs", choices=["ext4", "tmpfs"], default="ext4")
    p.add_argument("--on", choices=["cephfs", "seaweedfs"],
                   help="a fresh single-node cluster per run instead of --fs (scripts/ceph.sh, "
                        "scripts/seaweedfs.sh); --size-mib sizes Ceph's OSD")
    p.add_argument("--size-mib", type=int, default=6144)
    p.add_argument("--drop-caches", action="store_true")
    p.add_argument("--loop-dio", action="store_true", help="the loop device without its own page cache")
    # IO500 lets submitters set both; bounded here so that a fast page cache cannot fill
    # the file system within the stonewall (the same bound for both tools).
    p.add_argument("--ior-easy-block-mib", type=int, default=1024)
    p.add_argument("--ior-hard-segments", type=int, default=20000)
    p.add_argument("--files-per-rank", type=int,
                   help="mdtest -n for both mdtest phases of both tools: with a stonewall longer "
                        "than the creates take, both tools then stat, read, find and delete the "
                        "same files (a fixed-count comparison)")
    p.add_argument("--json", help="write every run's figures here")
    p.add_argument("--append", metavar="FILE",
                   help="add this call's runs to those in FILE (made if missing) and print the "
                        "medians of all: a long comparison in several short calls")
    p.add_argument("--keep-memory", action="store_true",
                   help="free page reporting off during the runs (the VM keeps freed memory)")
    p.add_argument("--warmup", type=int, default=0, help="pairs run first and not counted")
    args = p.parse_args()
    io500 = os.environ.get("IO500") or shutil.which("io500")
    if not io500:
        sys.exit("io500.py: no io500 on PATH (set IO500=...; BENCH-NOTES says how to build it)")
    iolab = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
    if not os.path.exists(iolab):
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "iolab", "--features", "mpi"],
                       cwd=ROOT, check=True)
    base = tempfile.mkdtemp(prefix="iolab-io500-bench-")
    backing = os.path.join(base, "backing")
    os.makedirs(backing)
    sh("mount", "-t", "tmpfs", "-o", f"size={args.size_mib + 256}m", "tmpfs", backing)
    results = {"io500": [], "iolab": []}
    earlier = {}
    if args.append and os.path.exists(args.append):
        with open(args.append) as f:
            earlier = json.load(f)
    # Which tool goes first alternates across calls too.
    offset = len(earlier.get("iolab", []))
    memory = KeepMemory() if args.keep_memory else contextlib.nullcontext()
    try:
        with memory:
            for n in range(-args.warmup, args.repeat):
                order = [("io500", run_io500, io500), ("iolab", run_iolab, iolab)]
                if (n + offset) % 2:
                    order.reverse()
                for name, fn, exe in order:
                    fresh = (FreshCluster(base, args.on, args.size_mib) if args.on
                             else FreshFs(base, args.fs, args.size_mib, args.loop_dio))
                    with fresh as mnt:
                        figs = fn(exe, mnt, base, args, n)
                    what = f"run {n + 1}" if n >= 0 else "warm-up"
                    print(f"{what} {name}: TOTAL {figs.get('TOTAL', 'n/a')}", file=sys.stderr)
                    if n >= 0:
                        results[name].append(figs)
    finally:
        subprocess.run(["umount", backing], check=False)
        shutil.rmtree(base, ignore_errors=True)
    phases = next((list(r) for r in results["io500"] if r), [])
    times = [p for p in phases if p.startswith("time:")]
    phases = [p for p in phases if not p.startswith("time:")]
    for name in results:
        results[name] = earlier.get(name, []) + results[name]
    if args.append:
        with open(args.append, "w") as f:
            json.dump(results, f, indent=1)
    runs = len(results["iolab"])
    where = args.on or args.fs
    print(f"io500 vs iolab io500: {args.np} ranks, {where} made fresh per run, stonewall "
          f"{args.stonewall}s, drop-caches {'on' if args.drop_caches else 'off'}, "
          f"{'free page reporting off, ' if args.keep_memory else ''}"
          f"{f'{args.files_per_rank} files per rank, ' if args.files_per_rank else ''}"
          f"medians of {runs} interleaved runs")
    # The spread of each tool's runs (max/min) says how far apart two medians may be by
    # chance: a ratio inside the spreads is not a difference this machine can resolve.
    print(f"{'phase':<22}{'io500':>12}{'iolab':>12}{'iolab/io500':>13}"
          f"{'io500 max/min':>15}{'iolab max/min':>15}")
    for ph in phases:
        a = [r[ph] for r in results["io500"] if ph in r]
        b = [r[ph] for r in results["iolab"] if ph in r]
        if not a or not b:
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = f"{mb / ma:.2f}" if ma else "-"
        spread = lambda v: f"{max(v) / min(v):.2f}" if min(v) > 0 else "-"
        print(f"{ph:<22}{ma:>12.3f}{mb:>12.3f}{ratio:>13}{spread(a):>15}{spread(b):>15}")
    if times:
        # How long each phase took: a write phase beyond the stonewall shows the tool's
        # wear-out and its sync (mdtest -Y) or fsync (IOR -e), inside the phase's time.
        print(f"{'phase time, s':<22}{'io500':>12}{'iolab':>12}")
        for t in times:
            a = [r[t] for r in results["io500"] if t in r]
            b = [r[t] for r in results["iolab"] if t in r]
            if a and b:
                print(f"{t[5:]:<22}{statistics.median(a):>12.2f}{statistics.median(b):>12.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
