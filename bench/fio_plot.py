#!/usr/bin/env python3
"""fio-plot draws iolab's output as it draws fio's.

Runs the job fio-plot's bench_fio generates (4 KiB random reads, iodepth 8, numjobs 2,
time based, write_bw_log/write_lat_log/write_iops_log with log_avg_msec) under real fio
and under `iolab fio`, each writing its JSON and logs with bench_fio's names into a
directory of its own; then has fio-plot render, from each directory, its bar graph of
the JSON (-l) and its log graph of bandwidth, IOPS and latency (-g). Checks that every
image is made and that iolab's series have fio's shape: the same log files, the same
number of points per series within one, values of the same order (each series' mean
within a factor of --tolerance of fio's). Exit 0 when all holds.

  python3 bench/fio_plot.py --iolab target/release/iolab --fio-plot /path/venv/bin/fio-plot
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

NAME = "randread-iodepth-8-numjobs-2"


def job(out_dir, data_dir, runtime):
    return [
        "--name=FIOJOB",
        "--ioengine=libaio",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=8",
        "--numjobs=2",
        "--time_based",
        f"--runtime={runtime}",
        "--size=16m",
        "--log_avg_msec=500",
        "--direct=1",
        "--invalidate=1",
        f"--directory={data_dir}",
        f"--write_bw_log={out_dir}/{NAME}",
        f"--write_lat_log={out_dir}/{NAME}",
        f"--write_iops_log={out_dir}/{NAME}",
        "--output-format=json",
        f"--output={out_dir}/{NAME}.json",
    ]


def run_tool(tool, iolab, out_dir, data_dir, runtime):
    os.makedirs(out_dir, exist_ok=True)
    os.makedirs(data_dir, exist_ok=True)
    cmd = ["fio"] if tool == "fio" else [iolab, "fio", "--no-store"]
    subprocess.run(cmd + job(out_dir, data_dir, runtime), check=True,
                   stdout=subprocess.DEVNULL)


def series(out_dir):
    """Each log file's values, by name."""
    logs = {}
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".log"):
            with open(os.path.join(out_dir, name)) as f:
                logs[name] = [int(line.split(",")[1]) for line in f if line.strip()]
    return logs


def plot(fio_plot, out_dir):
    images = []
    for kind, extra in [("bar", ["-l", "-n", "2"]),
                        ("log", ["-g", "-d", "8", "-n", "2", "-t", "bw", "iops", "lat"])]:
        png = os.path.join(out_dir, f"{kind}.png")
        subprocess.run([fio_plot, "-i", out_dir, "-T", "fio-plot", "-r", "randread",
                        "-o", png] + extra, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        images.append(png)
    return images


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iolab", required=True)
    ap.add_argument("--fio-plot", required=True)
    ap.add_argument("--runtime", type=int, default=3)
    ap.add_argument("--tolerance", type=float, default=10.0,
                    help="each series' mean within this factor of fio's (page cache vs disk)")
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(dir="/var/tmp") as base:
        got = {}
        for tool in ("fio", "iolab"):
            out = os.path.join(base, tool)
            run_tool(tool, args.iolab, out, os.path.join(base, tool + "-data"), args.runtime)
            json.load(open(os.path.join(out, NAME + ".json")))
            images = plot(args.fio_plot, out)
            for png in images:
                # fio-plot adds its own suffix when -o names a file.
                made = [p for p in os.listdir(out) if p.endswith(".png")]
                if not made or not all(os.path.getsize(os.path.join(out, p)) > 1000 for p in made):
                    failures.append(f"{tool}: fio-plot made no image for {png}")
            got[tool] = series(out)
            print(f"{tool}: {len(made)} images, logs "
                  + ", ".join(f"{k}={len(v)}" for k, v in got[tool].items()))
        fio, ours = got["fio"], got["iolab"]
        if sorted(fio) != sorted(ours):
            failures.append(f"log files differ: fio {sorted(fio)}, iolab {sorted(ours)}")
        for name in sorted(set(fio) & set(ours)):
            a, b = fio[name], ours[name]
            if "_slat." in name:
                # iolab measures no submission latency (its slat log is empty, as
                # fio's for synchronous engines); fio's libaio has one.
                print(f"{name}: {len(b)} points (fio {len(a)}): slat is not measured")
                continue
            if abs(len(a) - len(b)) > 1:
                failures.append(f"{name}: {len(b)} points, fio {len(a)}")
            if a and b:
                ma, mb = sum(a) / len(a), sum(b) / len(b)
                if ma > 0 and mb > 0 and max(ma / mb, mb / ma) > args.tolerance:
                    failures.append(f"{name}: mean {mb:.0f}, fio {ma:.0f}")
    for f in failures:
        print("FAIL", f)
    print("fio-plot drew iolab's output as fio's" if not failures else "fio-plot: failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
