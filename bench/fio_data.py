#!/usr/bin/env python3
"""What fio and `iolab fio` write for the same write job, as a compressing or
deduplicating target sees it: each job is written by fio and by `iolab fio` into a new
file under DIR, then each file is compressed with the zstd command line (level 3) record
by record (ZFS's 128 KiB records, --record) and its 512-byte and 4 KiB units hashed
(SHA-256). Prints, per job, each tool's zstd ratio (bytes over compressed bytes), their
iolab/fio ratio, and units over distinct units at 512 B and 4 KiB. fio's defaults
(buffers filled once, stamped per 512 bytes before every write), scramble_buffers=0,
refill_buffers=1, a deep io_uring queue (one buffer per I/O in flight) and a mixed job.

Usage: bench/fio_data.py [--dir DIR] [--size-mib N] [--record BYTES] [--cases RE]
Needs: fio and zstd on PATH, a release build of iolab (IOLAB=path for another).
"""

import argparse
import hashlib
import os
import re
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")

JOBS = [
    ("write 4k", ["--rw=write", "--bs=4k"]),
    ("randwrite 4k", ["--rw=randwrite", "--bs=4k"]),
    ("write 128k", ["--rw=write", "--bs=128k"]),
    ("randwrite 4k-64k (bsrange)", ["--rw=randwrite", "--bsrange=4k-64k"]),
    ("randwrite 4k io_uring QD16 direct", ["--rw=randwrite", "--bs=4k", "--ioengine=io_uring",
                                           "--iodepth=16", "--direct=1"]),
    ("randrw 50/50 4k", ["--rw=randrw", "--bs=4k"]),
    ("write 4k scramble_buffers=0", ["--rw=write", "--bs=4k", "--scramble_buffers=0"]),
    ("randwrite 4k refill_buffers=1", ["--rw=randwrite", "--bs=4k", "--refill_buffers=1"]),
]


def zstd_ratio(data, record):
    stored = 0
    for at in range(0, len(data), record):
        out = subprocess.run(["zstd", "-3", "-q", "-c", "--no-check"], input=data[at:at + record],
                             capture_output=True, check=True).stdout
        stored += len(out)
    return len(data) / stored


def repeats(data, unit):
    units = [hashlib.sha256(data[at:at + unit]).digest() for at in range(0, len(data), unit)]
    return len(units) / len(set(units))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--size-mib", type=int, default=16)
    ap.add_argument("--record", type=int, default=128 << 10)
    ap.add_argument("--cases", default=".")
    a = ap.parse_args()
    print(f"{'job':36} {'zstd fio':>8} {'zstd iolab':>10} {'ratio':>6} {'512B fio/iolab':>15}"
          f" {'4KiB fio/iolab':>15}")
    with tempfile.TemporaryDirectory(dir=a.dir, prefix="iolab-fio-data-") as d:
        for name, opts in JOBS:
            if not re.search(a.cases, name):
                continue
            common = ["--name=j", f"--size={a.size_mib}m", *opts]
            files = {t: os.path.join(d, t) for t in ("fio", "iolab")}
            subprocess.run(["fio", *common, f"--filename={files['fio']}"], check=True,
                           capture_output=True)
            subprocess.run([IOLAB, "fio", "--no-store", "--keep", *common,
                            f"--filename={files['iolab']}"], check=True, capture_output=True)
            data = {t: open(f, "rb").read() for t, f in files.items()}
            for f in files.values():
                os.remove(f)
            z = {t: zstd_ratio(b, a.record) for t, b in data.items()}
            u = {(t, n): repeats(b, n) for t, b in data.items() for n in (512, 4096)}
            print(f"{name:36} {z['fio']:8.3f} {z['iolab']:10.3f} {z['iolab'] / z['fio']:6.3f}"
                  f" {u['fio', 512]:7.2f}/{u['iolab', 512]:<7.2f} {u['fio', 4096]:7.2f}/{u['iolab', 4096]:<7.2f}")


if __name__ == "__main__":
    main()
