#!/usr/bin/env python3
"""What the written data holds, fio against `iolab fio` on the same job lines: each job
is written once by fio and once by `iolab fio` into files under DIR, and both files are
measured with tools neither contains: zstd (level 3) record by record (128 KiB, as a
compressing file system stores it) for the compress ratio, SHA-256 of each 4 KiB unit
for the dedupe ratio. Prints both tools' figures, the ratio iolab/fio, and the ratio
asked (fio's percentage as a ratio). Not a timing: run it anywhere.

With --table, instead: issue 47's table of `iolab run`'s own data (--rw write,
--block-size 128KiB, 2 threads, --size per file, --keep): one file compressed whole by
lz4, zstd -1/-3/-19, zstd --long=27 -3, gzip -9 and xz, and per record of 4 KiB (without
the frame each output carries), and the 512-byte and 4 KiB units of both files over the
distinct ones (4 KiB units at their alignment and the most at any other 512-byte one),
for the default data, --compress-ratio 1.5/2/4, --dedupe-ratio 2/4 and both together.

Usage: bench/reduction.py [--dir DIR] [--size 16m] [--iolab BIN] [--table]
Needs: fio and zstd on PATH (Debian's packages; --table: lz4, zstd, gzip, xz), an iolab
build (target/release/iolab or target/debug/iolab by default).
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


COMPRESSORS = [
    ("lz4", ["lz4", "-q", "-c"]),
    ("zstd -1", ["zstd", "-1", "-q", "-c", "--no-check"]),
    ("zstd -3", ["zstd", "-3", "-q", "-c", "--no-check"]),
    ("zstd -19", ["zstd", "-19", "-q", "-c", "--no-check"]),
    ("zstd --long=27 -3", ["zstd", "--long=27", "-3", "-q", "-c", "--no-check"]),
    ("gzip -9", ["gzip", "-9", "-c"]),
    ("xz", ["xz", "-c", "-T1"]),
]
TABLE = [
    ("default", []),
    ("--compress-ratio 1.5", ["--compress-ratio", "1.5"]),
    ("--compress-ratio 2", ["--compress-ratio", "2"]),
    ("--compress-ratio 4", ["--compress-ratio", "4"]),
    ("--dedupe-ratio 2", ["--dedupe-ratio", "2"]),
    ("--dedupe-ratio 4", ["--dedupe-ratio", "4"]),
    ("both 2", ["--compress-ratio", "2", "--dedupe-ratio", "2"]),
]


def stored(cmd, data):
    return len(subprocess.run(cmd, input=data, capture_output=True, check=True).stdout)


def per_record(cmd, data, record=4096, records=64):
    frame = stored(cmd, b"")
    step = max(1, len(data) // record // records)
    picks = [data[i * record:(i + 1) * record] for i in range(0, len(data) // record, step)]
    return sum(map(len, picks)) / sum(stored(cmd, r) - frame for r in picks)


def over_distinct(data, unit, shift=0):
    units = [data[i:i + unit] for i in range(shift, len(data) - unit + 1, unit)]
    return len(units) / len(set(units))


def table(a, base):
    names = [n for n, _ in COMPRESSORS]
    print("whole file / per 4 KiB record; units over distinct")
    print(f"| data written | {' | '.join(names)} | 512 B units | 4 KiB units | 4 KiB shifted |")
    print("|---" * (len(names) + 4) + "|")
    for name, flags in TABLE:
        work = os.path.join(base, "table")
        subprocess.run(["rm", "-rf", work], check=True)
        os.makedirs(work)
        subprocess.run([a.iolab, "run", "--no-store", "-Q", "--dir", work, "--rw", "write",
                        "--block-size", "128KiB", "--size", a.size, "--threads", "2", "--keep"]
                       + flags, check=True, capture_output=True)
        files = [os.path.join(work, "iolab-work", f"data.r0.t{t}") for t in (0, 1)]
        one = open(files[0], "rb").read()
        both = one + open(files[1], "rb").read()
        cells = [f"{len(one) / stored(c, one):.3f} / {per_record(c, one):.3f}" for _, c in COMPRESSORS]
        shifted = max(over_distinct(both, 4096, s) for s in range(512, 4096, 512))
        cells += [f"{over_distinct(both, 512):.3f}", f"{over_distinct(both, 4096):.3f}", f"{shifted:.3f}"]
        print(f"| {name} | {' | '.join(cells)} |", flush=True)
        subprocess.run(["rm", "-rf", work], check=True)


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
    ap.add_argument("--table", action="store_true")
    a = ap.parse_args()
    base = a.dir or tempfile.mkdtemp(prefix="iolab-reduction-")
    if a.table:
        table(a, base)
        return
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
