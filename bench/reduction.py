#!/usr/bin/env python3
"""What the written data holds, fio against `iolab fio` on the same job lines: each job
is written once by fio and once by `iolab fio` into files under DIR, and both files are
measured with tools neither contains: zstd (level 3) record by record (128 KiB, as a
compressing file system stores it) for the compress ratio, SHA-256 of each 4 KiB unit
for the dedupe ratio. Prints both tools' figures, the ratio iolab/fio, and the ratio
asked (fio's percentage as a ratio). Not a timing: run it anywhere.

Usage: bench/reduction.py [--dir DIR] [--size 16m] [--iolab BIN]
Needs: fio and zstd on PATH (Debian's packages), an iolab build (target/release/iolab or
target/debug/iolab by default).
"""

import argparse
import hashlib
import os
import subprocess
import tempfile

JOBS = [
    ("compress 50%", ["--bs=128k", "--buffer_compress_percentage=50"], 2.0, 1.0),
    ("compress 75%, chunk 4k", ["--bs=128k", "--buffer_compress_percentage=75",
                                "--buffer_compress_chunk=4k"], 4.0, 1.0),
    ("dedupe 50%", ["--bs=4k", "--dedupe_percentage=50"], 1.0, 2.0),
    ("compress 50% + dedupe 50%", ["--bs=4k", "--buffer_compress_percentage=50",
                                   "--dedupe_percentage=50"], 2.0, 2.0),
    ("default buffers", ["--bs=128k"], 1.0, 1.0),
]


def zstd_ratio(data, record=128 << 10):
    stored = 0
    for i in range(0, len(data), record):
        out = subprocess.run(["zstd", "-3", "-q", "-c", "--no-check"],
                             input=data[i:i + record], capture_output=True, check=True)
        stored += len(out.stdout)
    return len(data) / stored


def dedupe_ratio(data, unit=4096):
    units = [hashlib.sha256(data[i:i + unit]).digest() for i in range(0, len(data), unit)]
    return len(units) / len(set(units))


def written(cmd, path):
    subprocess.run(cmd + [f"--filename={path}"], check=True, capture_output=True)
    with open(path, "rb") as f:
        data = f.read()
    os.remove(path)
    return data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=None)
    ap.add_argument("--size", default="16m")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    default_bin = next((p for p in (os.path.join(root, "target/release/iolab"),
                                    os.path.join(root, "target/debug/iolab"))
                        if os.path.exists(p)), "iolab")
    ap.add_argument("--iolab", default=default_bin)
    a = ap.parse_args()
    base = a.dir or tempfile.mkdtemp(prefix="iolab-reduction-")
    common = ["--name=j", f"--size={a.size}", "--rw=write"]
    print(f"{'job':28} {'asked':>11} {'fio zstd':>9} {'iolab zstd':>10} {'ratio':>6}"
          f" {'fio dedupe':>10} {'iolab dedupe':>12} {'ratio':>6}")
    for name, opts, compress, dedupe in JOBS:
        f = written(["fio"] + common + opts, os.path.join(base, "by-fio"))
        i = written([a.iolab, "fio", "--no-store", "--keep"] + common + opts,
                    os.path.join(base, "by-iolab"))
        fz, iz, fd, idd = zstd_ratio(f), zstd_ratio(i), dedupe_ratio(f), dedupe_ratio(i)
        print(f"{name:28} {compress:>5.2f}/{dedupe:<5.2f} {fz:>9.3f} {iz:>10.3f} {iz / fz:>6.3f}"
              f" {fd:>10.3f} {idd:>12.3f} {idd / fd:>6.3f}")


if __name__ == "__main__":
    main()
