#!/usr/bin/env python3
"""`iolab fio` against fio on the same command lines: the reference studies' fio jobs at
a small scale (S3's randrw 90/70 with io_uring QD8 and 8 jobs, direct; S5's psync QD1
direct sequential write at 128k and random write at 4k), each run by fio and by
`iolab fio` alternately, REPEAT times, each in a fresh directory under DIR, both with
--output-format=json (the same parser reads both). Prints medians and iolab/fio ratios
of IOPS and mean latency, and the median of each round's own iolab/fio ("paired": the
two runs of a round are back to back, so a drift between rounds cancels out). A mixed
job with reads and writes of their own sizes (bs=4k,64k) runs too, and jobs with sizes
drawn per I/O (bssplit, bsrange), skewed offsets (zipf, zoned), a rate limit and a
think time, and fio's semantics of issue #31: a backwards read (rw=read:-8k), a ramp,
fio's log files at 100 ms, a buffered time-based read whose cache fio drops at every
pass, a flow pair (flow=8 and flow=1), strided zones, a dedupe working set and
iometer's bssplit from 512 bytes (direct). Several report entries (the flow pair)
count together.

--fs ext4 runs each job on an ext4 made fresh for it on a loop device backed by a tmpfs
file (BENCH-NOTES' method: no history from earlier runs, no disk noise; direct I/O then
goes through the loop device to memory, so the tools' own costs show); --fs dir (the
default) in a fresh directory under --dir.

--baseline BIN runs a second iolab build too, in turn with the other two (the order
rotates), and prints its IOPS and its ratio to fio: a change to iolab measured against
the build before it and fio in the same rounds.

Usage: bench/fio_jobs.py [--fs dir|ext4] [--dir DIR] [--repeat N] [--runtime S] [--cases RE]
                         [--baseline BIN]
Needs: fio on PATH (Debian's package), a release build of iolab (built if missing); root
for --fs ext4.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from io500 import FreshFs, TempDir, sh  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# IOLAB=path picks another build (a private CARGO_TARGET_DIR, or a build to compare with).
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")


def jobs(rt):
    s3 = ["--ioengine=io_uring", "--rw=randrw", "--bs=4k", "--direct=1", "--thread", "--iodepth=8",
          "--numjobs=8", "--time_based", f"--runtime={rt}", "--size=64m", "--group_reporting"]
    yield "S3 randrw 90/10 4k QD8 x8 direct", ["--name=s3-90", "--rwmixread=90", *s3]
    yield "S3 randrw 70/30 4k QD8 x8 direct", ["--name=s3-70", "--rwmixread=70", *s3]
    s5 = ["--ioengine=psync", "--iodepth=1", "--direct=1", "--numjobs=1", "--time_based", f"--runtime={rt}",
          "--size=256m"]
    yield "S5 seq write 128k psync direct", ["--name=s5-seq", "--rw=write", "--bs=128k", *s5]
    yield "S5 rand write 4k psync direct", ["--name=s5-rand", "--rw=randwrite", "--bs=4k", *s5]
    yield "randrw 70/30 bs=4k,64k psync direct", ["--name=mixed-bs", "--rw=randrw", "--rwmixread=70",
                                                  "--bs=4k,64k", *s5]
    # Sizes drawn per I/O, skewed offsets and pacing (issue #31).
    yield "bssplit randread 4k/10:64k/50:32k/40", ["--name=bssplit", "--rw=randread",
                                                  "--bssplit=4k/10:64k/50:32k/40", *s5]
    yield "bsrange randwrite 4k-64k", ["--name=bsrange", "--rw=randwrite", "--bsrange=4k-64k", *s5]
    # Its control: both tools write one fixed buffer (iolab then has no 1 MiB write
    # window of random data per slot, fio no scrambled buffer).
    yield "bsrange randwrite 4k-64k, zero_buffers", ["--name=bsrange", "--rw=randwrite", "--bsrange=4k-64k",
                                                     "--zero_buffers", *s5]
    yield "zipf:1.2 randread 4k", ["--name=zipf", "--rw=randread", "--bs=4k",
                                  "--random_distribution=zipf:1.2", *s5]
    yield "zoned:60/10:40/90 randwrite 4k", ["--name=zoned", "--rw=randwrite", "--bs=4k",
                                            "--random_distribution=zoned:60/10:40/90", *s5]
    # numjobs after s5: fio takes an option's last value, and s5 sets one job.
    yield "rate_iops=1000 x2 randread 4k", ["--name=paced", "--rw=randread", "--bs=4k", "--rate_iops=1000",
                                           *s5, "--numjobs=2", "--group_reporting"]
    yield "thinktime=200us/4 randread 4k", ["--name=think", "--rw=randread", "--bs=4k", "--thinktime=200",
                                           "--thinktime_blocks=4", *s5]
    # fio's semantics and files (issue #31, fio-files).
    yield "rw=read:-8k backwards 4k direct", ["--name=backwards", "--rw=read:-8k", "--bs=4k", *s5]
    yield "ramp_time=1 seq read 128k direct", ["--name=ramp", "--rw=read", "--bs=128k", "--ramp_time=1", *s5]
    logs = os.path.join(tempfile.gettempdir(), "iolab-fio-jobs-log")
    yield "randread 4k direct, bw/lat/iops logs at 100 ms", ["--name=logs", "--rw=randread", "--bs=4k",
                                                            f"--write_bw_log={logs}", f"--write_lat_log={logs}",
                                                            f"--write_iops_log={logs}", "--log_avg_msec=100", *s5]
    # Buffered and time based over a file smaller than memory: fio drops its cached pages
    # at every pass (invalidate=1) and advises FADV_RANDOM (fadvise_hint=1).
    buffered = [a for a in s5 if a not in ("--direct=1", "--size=256m")] + ["--size=32m"]
    yield "buffered randread 4k 32m, cache dropped each pass", ["--name=passes", "--rw=randread", "--bs=4k",
                                                               *buffered]
    # fio's examples that run since (fio-files): flow, strided zones, a dedupe working
    # set, 512-byte direct I/O.
    yield "pair randread + read 4k direct, no flow", ["--name=fast", "--rw=randread", "--bs=4k", *s5,
                                                      "--name=slow", "--rw=read", "--bs=4k", *s5]
    # Its control: fio's jobs as threads of one process (--thread), as iolab runs them.
    yield "pair, no flow, fio --thread", ["--name=fast", "--rw=randread", "--bs=4k", "--thread", *s5,
                                          "--name=slow", "--rw=read", "--bs=4k", "--thread", *s5]
    yield "flow 8:1 randread + read 4k direct", ["--name=fast", "--rw=randread", "--bs=4k", "--flow=8", *s5,
                                                "--name=slow", "--rw=read", "--bs=4k", "--flow=1", *s5]
    yield "flow 8:1 pair, fio --thread", ["--name=fast", "--rw=randread", "--bs=4k", "--flow=8", "--thread", *s5,
                                          "--name=slow", "--rw=read", "--bs=4k", "--flow=1", "--thread", *s5]
    yield "zonemode=strided read 64k, 1m zones, 3m skip", ["--name=zones", "--rw=read", "--bs=64k",
                                                           "--zonemode=strided", "--zonesize=1m",
                                                           "--zoneskip=3m", *s5]
    yield "dedupe working set 50/50 write 4k direct", ["--name=ws", "--rw=write", "--bs=4k",
                                                      "--dedupe_percentage=50", "--dedupe_mode=working_set",
                                                      "--dedupe_working_set_percentage=50", *s5]
    yield "iometer bssplit 512..64k randrw direct", ["--name=iometer", "--rw=randrw", "--rwmixread=80",
                                                    "--bssplit=512/10:1k/5:2k/5:4k/60:8k/2:16k/4:32k/4:64k/10",
                                                    *s5]


def figures(cmd):
    """IOPS of all the report's entries together (several jobs: a flow pair) and their
    mean latency in µs."""
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    iops, ios, lat_sum = 0.0, 0, 0.0
    for job in json.loads(out)["jobs"]:
        for d in ("read", "write"):
            iops += job[d]["iops"]
            ios += job[d]["total_ios"]
            lat_sum += job[d]["lat_ns"]["mean"] * job[d]["total_ios"]
    return iops, lat_sum / max(ios, 1) / 1000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=5)
    ap.add_argument("--fs", choices=["dir", "ext4"], default="dir")
    ap.add_argument("--size-mib", type=int, default=3072, help="--fs ext4: the file system's size")
    ap.add_argument("--cases", default=".", help="only the jobs whose name matches")
    ap.add_argument("--baseline", help="another iolab build, run in turn with the other two")
    a = ap.parse_args()
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--locked"], cwd=ROOT, check=True)
    print(f"{'job':36} {'fio IOPS':>10} {'iolab IOPS':>11} {'ratio':>6} {'fio lat us':>10} {'iolab lat us':>12}"
          f" {'fio max/min':>8} {'iolab max/min':>8} {'paired':>6}"
          + (f" {'base IOPS':>10} {'base/fio':>8}" if a.baseline else ""))
    base = tempfile.mkdtemp(prefix="iolab-fio-jobs-")
    if a.fs == "ext4":
        os.makedirs(os.path.join(base, "backing"))
        sh("mount", "-t", "tmpfs", "-o", f"size={a.size_mib + 256}m", "tmpfs", os.path.join(base, "backing"))
    try:
        for name, args in jobs(a.runtime):
            if re.search(a.cases, name):
                compare(a, base, name, args)
    finally:
        if a.fs == "ext4":
            subprocess.run(["umount", os.path.join(base, "backing")], check=False)
        shutil.rmtree(base, ignore_errors=True)


def compare(a, base, name, args):
    """REPEAT interleaved runs of one job by each tool; prints the medians."""
    runs = {"fio": [], "iolab": [], "base": []}
    tools = ["fio", "iolab"] + (["base"] if a.baseline else [])
    binary = {"fio": ["fio"], "iolab": [IOLAB, "fio", "--no-store"],
              "base": [a.baseline, "fio", "--no-store"] if a.baseline else None}
    for r in range(a.repeat):
        # Which tool goes first rotates from round to round.
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for tool in order:
            # Each run in a fresh directory or file system: fio leaves its files behind,
            # and a write into blocks an earlier run allocated is not the same work.
            fresh = FreshFs(base, "ext4", a.size_mib) if a.fs == "ext4" else TempDir(a.dir)
            with fresh as d:
                cmd = binary[tool] + ["--output-format=json", f"--directory={d}", *args]
                runs[tool].append(figures(cmd))
    f, i = runs["fio"], runs["iolab"]
    fi, ii = statistics.median(x[0] for x in f), statistics.median(x[0] for x in i)
    fl, il = statistics.median(x[1] for x in f), statistics.median(x[1] for x in i)
    spread = [max(x[0] for x in t) / max(min(x[0] for x in t), 1e-9) for t in (f, i)]
    # The median of each round's iolab/fio: the two runs of a round are back to back, so
    # a drift of the machine between rounds cancels out of it.
    paired = statistics.median(y[0] / max(x[0], 1e-9) for x, y in zip(f, i))
    line = (f"{name:36} {fi:10,.0f} {ii:11,.0f} {ii / fi:6.3f} {fl:10.1f} {il:12.1f}"
            f" {spread[0]:8.2f} {spread[1]:8.2f} {paired:6.3f}")
    if a.baseline:
        bi = statistics.median(x[0] for x in runs["base"])
        line += f" {bi:10,.0f} {bi / fi:8.3f}"
    print(line)


if __name__ == "__main__":
    main()
