#!/usr/bin/env python3
"""`iolab train run`'s reader backends on one dataset: psync, io_uring and null.

Generates one dataset (`iolab train datagen`, the --workload's loader with --files files)
under --data-root, then trains on it with computation_time 0 (the loader's own speed) on
each backend in turn, the order rotating each round, --rounds rounds. Prints each run's
samples/s, each backend's median, the ratio io_uring/psync and the null backend's
ceiling (the loader with no storage at all: no file is opened). The same files are read
by every run, so after the first they come from the page cache (tmpfs: always); what is
compared is the reader's path to storage, not the device. With --direct every read
goes to the device (O_DIRECT, DLIO's npz_odirect reader): reads wait, which is what
io_uring's queue depth is for. Nothing here is a test: read the ratios. The dataset is
removed at the end.

Usage: bench/train_backends.py [--workload unet3d|resnet50] [--files 64] [--epochs 2]
       [--rounds 3] [--queue-depth 4] [--data-root /var/tmp] [--direct]
IOLAB= chooses the binary (default target/release/iolab, built if missing).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
BACKENDS = ["psync", "uring", "null"]


def workload_flags(a):
    """The loader's flags: unet3d (PyTorch, npz, 4 reader threads) or resnet50
    (TensorFlow, TFRecord, 8 reader threads), H100's batch, files of a fixed size."""
    flags = ["--preset", a.workload, "--accelerator", "h100", "--files", str(a.files),
             "--record-length-stdev", "0", "--epochs", str(a.epochs)]
    if a.workload == "unet3d":
        flags += ["--record-length", str(a.record_length or 1048576)]
    else:
        flags += ["--samples-per-file", "100", "--record-length", str(a.record_length or 114660)]
    return flags


def train(a, data, backend, scratch):
    """One run on `backend`; returns (samples/s, AU %) from its summary.json."""
    summary = os.path.join(scratch, f"summary-{backend}.json")
    cmd = [IOLAB, "train", "run", "--data-dir", data, "--computation-time", "0",
           "--backend", backend, "--summary-json", summary, "--no-store", "--quiet"]
    if backend == "uring":
        cmd += ["--queue-depth", str(a.queue_depth)]
    if a.direct:
        cmd += ["--direct"]
    subprocess.run(cmd + workload_flags(a), check=True, stdout=subprocess.DEVNULL)
    with open(summary) as f:
        m = json.load(f)["metric"]
    return m["train_throughput_mean_samples_per_second"], m["train_au_mean_percentage"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", choices=["unet3d", "resnet50"], default="unet3d")
    p.add_argument("--files", type=int, default=64)
    p.add_argument("--record-length", type=int, default=0)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--queue-depth", type=int, default=4)
    p.add_argument("--data-root", default="/var/tmp")
    p.add_argument("--direct", action="store_true", help="read with O_DIRECT (not on tmpfs)")
    a = p.parse_args()
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=ROOT,
                       check=True)
    scratch = tempfile.mkdtemp(prefix="iolab-train-backends-", dir=a.data_root)
    data = os.path.join(scratch, "data")
    try:
        subprocess.run([IOLAB, "train", "datagen", "--data-dir", data, "--no-store", "--quiet"]
                       + workload_flags(a), check=True, stdout=subprocess.DEVNULL)
        print(f"# {a.workload}'s loader, {a.files} files under {a.data_root}, computation_time 0, "
              f"{a.epochs} epochs, io_uring queue depth {a.queue_depth}, {a.rounds} rounds, "
              f"{'O_DIRECT, ' if a.direct else ''}"
              f"order rotating; {IOLAB}")
        runs = {b: [] for b in BACKENDS}
        for r in range(a.rounds):
            order = BACKENDS[r % 3:] + BACKENDS[:r % 3]
            for b in order:
                sps, au = train(a, data, b, scratch)
                runs[b].append(sps)
                print(f"round {r + 1} {b:<6} {sps:12.1f} samples/s  (AU {au:.2f} %)")
        med = {b: statistics.median(v) for b, v in runs.items()}
        print()
        for b in BACKENDS:
            print(f"{b:<6} median {med[b]:12.1f} samples/s  "
                  f"(min {min(runs[b]):.1f}, max {max(runs[b]):.1f})")
        ratios = [u / s for u, s in zip(runs["uring"], runs["psync"])]
        print(f"io_uring/psync  {med['uring'] / med['psync']:.3f} "
              f"(by round: {', '.join(f'{x:.3f}' for x in ratios)})")
        print(f"null ceiling    {med['null']:.1f} samples/s "
              f"({med['null'] / med['psync']:.2f} x psync)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
