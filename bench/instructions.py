#!/usr/bin/env python3
"""Instructions per I/O of iolab's worker, counted by valgrind's callgrind: a figure that
does not depend on what else the machine runs (timings on a shared machine do).

Each build runs the same case twice under `valgrind --tool=callgrind --separate-threads=yes`,
with a small and a large number of I/Os; the worker's thread (the one whose count grows
most) gives (instructions of the large run - of the small one) / (the I/Os between them):
setup and wind-down cancel out. Prints the total and each function's share (function names
need a build with symbols: `CARGO_PROFILE_RELEASE_STRIP=none cargo build --release`; a
stripped build prints addresses). What the worker does per time interval (interval
figures, snapshots) counts too and varies a little from run to run, as valgrind slows the
run down about 50 times: functions of the loop, the RNG and the backend count the same
every run.

Cases: null (`iolab run --backend null`, 4 KiB random reads: the floor bench's null case,
size-based), and three of bench/fio_jobs.py's jobs through `iolab fio` on files under
--dir with number_ios: seq (128k sequential write), dedupe (dedupe working set), iometer
(iometer's bssplit mix).

    bench/instructions.py --case null before=/path/to/old/iolab after=target/release/iolab
"""
import argparse
import os
import re
import shutil
import subprocess
import tempfile

S5 = ["--ioengine=psync", "--iodepth=1", "--direct=1", "--numjobs=1", "--size=64m"]
FIO = {
    "seq": (100, 500, ["--name=s5-seq", "--rw=write", "--bs=128k"]),
    "dedupe": (1000, 5000, ["--name=ws", "--rw=write", "--bs=4k", "--dedupe_percentage=50",
                            "--dedupe_mode=working_set", "--dedupe_working_set_percentage=50"]),
    "iometer": (1000, 5000, ["--name=iometer", "--rw=randrw", "--rwmixread=80",
                             "--bssplit=512/10:1k/5:2k/5:4k/60:8k/2:16k/4:32k/4:64k/10"]),
}


def command(binary, case, ios, workdir):
    if case == "null":
        return [binary, "run", "--no-store", "--backend", "null", "--rw", "randread", "-b", "4KiB",
                "--size", f"{ios * 4}KiB"]
    return [binary, "fio", "--no-store", *FIO[case][2], *S5, f"--number_ios={ios}", f"--directory={workdir}"]


def functions(path):
    """Instructions by function in one thread's callgrind file."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                         check=True, capture_output=True, text=True).stdout
    counts = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*)$", line)
        if m and "PROGRAM TOTALS" not in m.group(2):
            name = re.sub(r"\s*\[.*\]$", "", m.group(2))
            name = name if name.startswith("???:0x") else name.split(":", 1)[-1]
            counts[name] = counts.get(name, 0) + int(m.group(1).replace(",", ""))
    return counts


def threads(binary, case, ios, tmp):
    """Each thread's instructions by function, for one run of `ios` I/Os."""
    workdir = tempfile.mkdtemp(dir=tmp)
    out = os.path.join(tmp, f"cg.{ios}")
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}",
                    *command(binary, case, ios, workdir)], check=True, capture_output=True)
    shutil.rmtree(workdir)
    files = sorted(f for f in os.listdir(tmp) if f.startswith(f"cg.{ios}-"))
    return [functions(os.path.join(tmp, f)) for f in files]


def per_io(binary, case, small, large, base):
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        a, b = threads(binary, case, small, tmp), threads(binary, case, large, tmp)
    grow = [(sum(y.values()) - sum(x.values()), x, y) for x, y in zip(a, b)]
    _, x, y = max(grow, key=lambda g: g[0])
    n = large - small
    return {k: (y.get(k, 0) - x.get(k, 0)) / n for k in set(x) | set(y)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=["null", *FIO], default="null")
    ap.add_argument("--ios", type=int, nargs=2, metavar=("SMALL", "LARGE"),
                    help="the two runs' I/Os (default: null 16384 65536, seq 100 500, else 1000 5000)")
    ap.add_argument("--dir", default="/var/tmp", help="where fio cases' files go (O_DIRECT)")
    ap.add_argument("--min", type=float, default=0.5, help="list functions of at least this many per I/O")
    ap.add_argument("builds", nargs="+", metavar="NAME=BINARY")
    a = ap.parse_args()
    small, large = a.ios or ((16384, 65536) if a.case == "null" else FIO[a.case][:2])
    for build in a.builds:
        name, binary = build.split("=", 1)
        counts = per_io(binary, a.case, small, large, a.dir)
        print(f"{name}: {sum(counts.values()):.1f} instructions per I/O in the worker's thread "
              f"({a.case}, {small} and {large} I/Os)")
        for v, k in sorted(((v, k) for k, v in counts.items() if abs(v) >= a.min), reverse=True):
            print(f"  {v:9.2f}  {k[:110]}")


if __name__ == "__main__":
    main()
