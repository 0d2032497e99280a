#!/usr/bin/env python3
"""fio's steady-state stop (`ss`, `ss_dur`, `ss_ramp`) against `iolab fio` on the same
job lines, interleaved: for each case and repetition, fio 3.33 then `iolab fio` run the
job with --output-format=json; prints each tool's verdict (`steadystate.attained`), its
job_runtime (when the job stopped) and window mean IOPS, and iolab/fio for the runtime
and the mean. A case is steady when both attain, and the stop should agree within one
sample (1 s) plus a tick.

Usage: bench/steady.py [--dir DIR] [--repeat 3] [--iolab BIN]
Needs: fio on PATH, an iolab build (target/release/iolab or target/debug/iolab).
"""

import argparse
import json
import os
import subprocess
import tempfile

CASES = [
    ("paced 1000 IOPS, iops:10%, ss_dur=5",
     ["--rw=randread", "--bs=4k", "--rate_iops=1000", "--ss=iops:10%", "--ss_dur=5"]),
    ("paced 1000 IOPS, iops_slope:1%, ss_dur=5, ss_ramp=2",
     ["--rw=randread", "--bs=4k", "--rate_iops=1000", "--ss=iops_slope:1%", "--ss_dur=5",
      "--ss_ramp=2"]),
    ("buffered randread from the page cache, iops:20%, ss_dur=5",
     ["--rw=randread", "--bs=4k", "--ss=iops:20%", "--ss_dur=5"]),
    ("never: iops:0%, runtime 6",
     ["--rw=randread", "--bs=4k", "--rate_iops=1000", "--ss=iops:0%", "--ss_dur=3",
      "--runtime=6"]),
]


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    job = json.loads(out.stdout)["jobs"][0]
    ss = job["steadystate"]
    return ss["attained"], job["job_runtime"], ss["data"]["iops_mean"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    default = "target/release/iolab" if os.path.exists("target/release/iolab") \
        else "target/debug/iolab"
    ap.add_argument("--iolab", default=default)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=a.dir) as d:
        for name, opts in CASES:
            common = ["--name=ss", "--size=16m", "--time_based", "--output-format=json",
                      f"--filename={d}/ss.dat"]
            if not any(o.startswith("--runtime") for o in opts):
                common.append("--runtime=30")
            print(f"== {name}")
            for r in range(a.repeat):
                f = run(["fio"] + common + opts)
                i = run([a.iolab, "fio", "--no-store"] + common + opts)
                print(f"  {r}: fio attained={f[0]} runtime={f[1]} ms mean={f[2]}"
                      f" | iolab attained={i[0]} runtime={i[1]} ms mean={i[2]}"
                      f" | runtime iolab/fio {i[1] / max(f[1], 1):.3f}"
                      f" mean iolab/fio {i[2] / max(f[2], 1):.3f}")


if __name__ == "__main__":
    main()
