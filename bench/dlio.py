#!/usr/bin/env python3
"""DLIO (MLPerf Storage's load generator) against `iolab train` / `iolab checkpoint` on
the same configuration and the same files, side by side, under mpirun.

Modes (one per call; each is a few minutes, meant for /work/tools/quiet):

  storage     AU and samples/s on a storage-bound target: an iolab-faultfs FUSE mount
              that stalls every open by --stall and serves two requests at a time (its
              two FUSE threads): "storage" of a fixed number of files per second, the
              same for both tools, and neither tool's page cache helps: faultfs opens
              files with FOPEN_DIRECT_IO). --workload unet3d: unet3d's loader (PyTorch,
              npz, batch 7, 4 reader threads, compute from the preset) with smaller
              files; --workload resnet50: resnet50's (TensorFlow, TFRecord, batch 400,
              8 reader threads) with --samples-per-file samples of --record-length
              bytes per file; --workload cosmoflow: cosmoflow's (TensorFlow, TFRecord,
              one sample of 2.8 MB per file, batch 1, 4 reader threads, file and sample
              shuffle by seed). The tools alternate, --rounds times each.
  ckpt-read   Checkpoint read-back (DLIO's num_checkpoints_read), the ckpt-speed layout:
              --writes checkpoints written, the page cache emptied, read back. DLIO as
              MLPerf's run script runs it (a write run, caches dropped, a read-only
              run), with and without checkpoint_rank_sync; iolab in one run (it drops
              the caches between). Read throughput is each tool's own figure.
  ckpt-trace  Not timed: both tools under strace (each rank), one checkpoint written
              and read back: per rank the bytes read and written on the checkpoint
              files, the calls, the fsyncs, the sizes of the calls.
  train-trace Not timed: both tools' loaders (--workload) under strace on one dataset:
              per rank the files opened, the most open at once, the reading threads,
              the read calls, bytes and sizes (tf.data keeps 3 x read_threads files
              open; a mode named after DLIO's loader must too).
  steps       Where a step's time goes, both tools, on the storage mode's target (use a
              short --stall, e.g. 30ms, for a compute-bound run): per step, the wait for
              the batch, the compute, and the rest until the next step starts (barrier
              and loop), and the first step apart. DLIO's from its own log (every rank's
              "step N processed ... in X s" line and its timestamp), iolab's from the
              stored epochs (--json).
  loader      Loader cost (--workload): computation_time 0, the dataset on tmpfs (in
              memory): samples/s and CPU per sample of each (getrusage of the whole job).
  crossover   --workload: DLIO generates a dataset and iolab trains on it; iolab
              generates one and DLIO trains on it; both must read every step.
  checkpoint  Bytes per rank of DLIO's checkpointing (its mlperf_storage_v2.0 branch)
              against `iolab checkpoint --plan` for the same model and parallelism
              (a small Llama 3 shape, 8 ranks, ZeRO 3).
  ckpt-speed  Checkpoint write throughput of both on the same sizes (a Llama 3 8B
              layout shrunk to --ckpt-layers layers of hidden 1024: about 0.9 GB per
              checkpoint, 8 ranks, ZeRO 3; iolab fsyncs each file unless --no-fsync,
              DLIO's mlperf_storage_v2.0 never does: ckpt-trace) on the disk under
              --data-root (default /var/tmp), --writes checkpoints per run, alternated
              --rounds times: DLIO with checkpoint_rank_sync (its duration ends after
              every rank's write, iolab's definition), iolab, and DLIO as MLPerf runs it
              (rank 0's own write time only). Throughput is each tool's own figure
              (checkpoint bytes over the duration, GiB/s); the wall time and CPU of each
              whole command beside it.

Usage: bench/dlio.py MODE [--np 2] [--rounds 3] [--files 64] [--stall 50ms] ...
DLIO comes from a venv outside the repository (BENCH-NOTES.md: pip install --no-deps
dlio-benchmark==2.0.0, then its dependencies): --venv (default /work/peers/dlio-venv);
the checkpoint mode runs DLIO's mlperf_storage_v2.0 branch from a checkout given by
--dlio-v2 (PYTHONPATH) with MLPerf Storage's workload configs (--mlperf-configs).
IOLAB= chooses the iolab binary (default target/release/iolab, built with --features
mpi), FAULTFS= the iolab-faultfs binary (default beside it).
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def iolab_bin():
    return os.environ.get("IOLAB", os.path.join(ROOT, "target/release/iolab"))


def faultfs_bin():
    return os.environ.get("FAULTFS", os.path.join(os.path.dirname(iolab_bin()), "iolab-faultfs"))


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, cwd=None, env=None):
    """Runs cmd; returns (wall seconds, CPU seconds of it and its children, output)."""
    cpu0, t0 = children_cpu(), time.monotonic()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    if out.returncode != 0:
        sys.stderr.write(" ".join(cmd) + "\n" + out.stdout[-3000:] + out.stderr[-3000:])
        raise SystemExit(f"exit {out.returncode}")
    return wall, cpu, out.stdout


def dlio_cmd(args, workload, data, output, extra):
    return MPIRUN + ["-np", str(args.np), os.path.join(args.venv, "bin/dlio_benchmark"),
                     f"workload={workload}",
                     f"++workload.dataset.data_folder={data}",
                     f"++workload.output.folder={output}",
                     "++workload.workflow.checkpoint=False"] + extra


def dlio_train(args, workload, data, extra, scratch, log=None):
    out = tempfile.mkdtemp(dir=scratch, prefix="dlio-out-")
    wall, cpu, _ = timed(dlio_cmd(args, workload, data, out,
                                  ["++workload.workflow.generate_data=False",
                                   "++workload.workflow.train=True"] + extra), cwd=out)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    if log is not None:
        with open(os.path.join(out, "dlio.log")) as f:
            log.append(f.read())
    shutil.rmtree(out, ignore_errors=True)
    m = s["metric"]
    return {"au": m["train_au_mean_percentage"],
            "sps": m["train_throughput_mean_samples_per_second"],
            "epochs": len(m["train_au_percentage"]), "wall": wall, "cpu": cpu}


def iolab_train(args, data, flags, scratch, stored=None, mpirun=None):
    """`iolab train run` under `mpirun` (MPIRUN unless given: DLIO's own launch line, so
    both tools' ranks get the same CPU binding)."""
    summary = os.path.join(scratch, "iolab-summary.json")
    extra = ["--json", stored] if stored else []
    cmd = (mpirun or MPIRUN) + ["-np", str(args.np), iolab_bin(), "train", "run", "--data-dir", data,
                    "--summary-json", summary, "--no-store", "--quiet"] + extra + flags
    wall, cpu, _ = timed(cmd)
    with open(summary) as f:
        s = json.load(f)
    m = s["metric"]
    return {"au": m["train_au_mean_percentage"],
            "sps": m["train_throughput_mean_samples_per_second"],
            "epochs": len(m["train_au_percentage"]), "wall": wall, "cpu": cpu}


def unet3d(args, compute=None):
    """unet3d_h100's loader with this bench's dataset: (DLIO overrides, iolab flags)."""
    length = args.record_length or 1048576
    dlio = [f"++workload.dataset.num_files_train={args.files}",
            f"++workload.dataset.record_length={length}",
            "++workload.dataset.record_length_stdev=0",
            f"++workload.train.epochs={args.epochs}"]
    iolab = ["--preset", "unet3d", "--accelerator", "h100", "--files", str(args.files),
             "--record-length", str(length), "--record-length-stdev", "0",
             "--epochs", str(args.epochs)]
    if compute is not None:
        dlio.append(f"++workload.train.computation_time={compute}")
        iolab += ["--computation-time", str(compute)]
    return dlio, iolab


TF_WORKLOADS = {
    # --workload: DLIO's workload name, default samples per file and sample bytes.
    "resnet50": ("resnet50_h100", 100, 114660),
    "cosmoflow": ("cosmoflow_h100", 1, 2828486),
}


BATCH = {"unet3d": 7, "resnet50": 400, "cosmoflow": 1}


def describe(args):
    """The bench's dataset in words: files, samples per file, sample bytes."""
    if args.workload == "unet3d":
        return f"{args.files} files of {args.record_length or 1048576} bytes"
    _, per_file, length = TF_WORKLOADS[args.workload]
    return (f"{args.files} files of {args.samples_per_file or per_file} samples of "
            f"{args.record_length or length} bytes")


def loader_of(args, compute=None):
    """The --workload's loader (H100 figures) with this bench's dataset: (DLIO's
    workload name, its overrides, iolab's flags). unet3d: PyTorch, npz; resnet50 and
    cosmoflow: TensorFlow, TFRecord."""
    if args.workload == "unet3d":
        return ("unet3d_h100",) + unet3d(args, compute)
    name, per_file, length = TF_WORKLOADS[args.workload]
    per_file = args.samples_per_file or per_file
    length = args.record_length or length
    dlio = [f"++workload.dataset.num_files_train={args.files}",
            f"++workload.dataset.num_samples_per_file={per_file}",
            f"++workload.dataset.record_length={length}",
            "++workload.dataset.record_length_stdev=0",
            f"++workload.train.epochs={args.epochs}"]
    iolab = ["--preset", args.workload, "--accelerator", "h100", "--files", str(args.files),
             "--samples-per-file", str(per_file),
             "--record-length", str(length), "--record-length-stdev", "0",
             "--epochs", str(args.epochs)]
    if compute is not None:
        dlio.append(f"++workload.train.computation_time={compute}")
        iolab += ["--computation-time", str(compute)]
    return name, dlio, iolab


# DLIO's TFRecord generator runs `tfrecord2idx FILE INDEX` (a script of NVIDIA DALI,
# whose package the venv leaves out) after each file to write DALI's index: a line
# "offset bytes" per record. Only DALI's reader uses it; this is the bench's own writer.
TFRECORD2IDX = """#!/usr/bin/env python3
import struct, sys
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "w") as out:
    offset = 0
    while True:
        head = f.read(12)
        if len(head) < 12:
            break
        (n,) = struct.unpack("<Q", head[:8])
        f.seek(n + 4, 1)
        out.write(f"{offset} {12 + n + 4}\\n")
        offset += 12 + n + 4
"""


def generate_dlio(args, workload, data, extra, scratch):
    out = tempfile.mkdtemp(dir=scratch, prefix="dlio-gen-")
    bin_dir = os.path.join(scratch, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    idx = os.path.join(bin_dir, "tfrecord2idx")
    with open(idx, "w") as f:
        f.write(TFRECORD2IDX)
    os.chmod(idx, 0o755)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    timed(dlio_cmd(args, workload, data, out,
                   ["++workload.workflow.generate_data=True",
                    "++workload.workflow.train=False"] + extra), cwd=out, env=env)
    shutil.rmtree(out, ignore_errors=True)


def table(rows, key, label):
    d = [r[key] for r in rows["dlio"]]
    i = [r[key] for r in rows["iolab"]]
    md, mi = statistics.median(d), statistics.median(i)
    ratio = mi / md if md else float("nan")
    print(f"  {label:<22} DLIO {md:10.3f} ({min(d):.3f}-{max(d):.3f})   "
          f"iolab {mi:10.3f} ({min(i):.3f}-{max(i):.3f})   iolab/DLIO {ratio:.3f}")
    return ratio


def alternate(args, run_dlio, run_iolab):
    rows = {"dlio": [], "iolab": []}
    for r in range(args.round_offset, args.round_offset + args.rounds):
        order = [("dlio", run_dlio), ("iolab", run_iolab)]
        if r % 2:
            order.reverse()
        for name, fn in order:
            res = fn()
            rows[name].append(res)
            server = (f"  faultfs CPU {res['server_cpu']:5.1f}s" if "server_cpu" in res else "")
            print(f"    round {r + 1} {name:<5} AU {res['au']:7.2f}%  samples/s {res['sps']:9.2f}"
                  f"  wall {res['wall']:6.1f}s  CPU {res['cpu']:6.1f}s{server}", flush=True)
    return rows


class FaultMount:
    """An iolab-faultfs mount with the given faults, over a backing directory."""

    def __init__(self, backing, mount, faults, trace=None):
        """trace: a file that receives the mount's trace (IOLAB_FAULTFS_TRACE=1)."""
        os.makedirs(backing, exist_ok=True)
        os.makedirs(mount, exist_ok=True)
        cmd = [faultfs_bin(), backing, mount]
        for f in faults:
            cmd += ["--fault", f]
        env = dict(os.environ, IOLAB_FAULTFS_TRACE="1") if trace else None
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, stderr=trace)
        line = self.p.stdout.readline().strip()
        if line != "ready":
            raise SystemExit("iolab-faultfs did not mount")
        self.mount = mount

    def cpu(self):
        """The mount's CPU seconds so far (user + system, all its threads)."""
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def timing(self, run):
        """`run`'s result with the mount's CPU during it (`server_cpu`): on a 2-core
        machine the mount's data path shares the cores with the tool under test."""
        def wrapped():
            c0 = self.cpu()
            res = run()
            res["server_cpu"] = self.cpu() - c0
            return res
        return wrapped

    def close(self):
        self.p.terminate()
        self.p.wait()
        subprocess.run(["fusermount3", "-u", "-z", self.mount], stderr=subprocess.DEVNULL,
                       check=False)


def mode_storage(args, scratch):
    backing = tempfile.mkdtemp(dir=args.data_root or scratch, prefix="iolab-bench-backing-")
    workload, dlio, iolab = loader_of(args)
    try:
        # The dataset is written by iolab straight into the backing directory (no stall).
        subprocess.run([iolab_bin(), "train", "datagen", "--data-dir",
                        os.path.join(backing, "d"), "--no-store", "--quiet"] + iolab,
                       check=True)
        fs = FaultMount(backing, os.path.join(scratch, "mnt"), [f"open:stall={args.stall}"])
        try:
            data = os.path.join(fs.mount, "d")
            rows = alternate(
                args, fs.timing(lambda: dlio_train(args, workload, data, dlio, scratch)),
                fs.timing(lambda: iolab_train(args, data, iolab, scratch)))
        finally:
            fs.close()
    finally:
        shutil.rmtree(backing, ignore_errors=True)
    print(f"\nstorage-bound: {workload} loader, {args.np} ranks, {describe(args)}, "
          f"every open stalled {args.stall}")
    table(rows, "au", "AU %")
    table(rows, "sps", "samples/s")
    table(rows, "server_cpu", "faultfs CPU s")


def dlio_steps(log, compute):
    """A DLIO run's steps from its log, in seconds: (first step of rank 0's epochs, the
    other steps' mean period, proc and wait for the batch, every rank's)."""
    import datetime
    import re
    ts = lambda t: datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%f").timestamp()
    step = re.compile(r"\] (\S+) Rank (\d+) step (\d+) processed \d+ samples in (\S+) s")
    block = re.compile(r"\] (\S+) Starting block 1")
    starts, ranks = [], {}
    for line in log.splitlines():
        m = block.search(line)
        if m:
            starts.append(ts(m.group(1)))
            continue
        m = step.search(line)
        if m:
            r, n = int(m.group(2)), int(m.group(3))
            ranks.setdefault(r, []).append((n, ts(m.group(1)), float(m.group(4))))
    firsts, periods, procs = [], [], []
    for r, steps in ranks.items():
        # Epochs restart at step 1.
        epochs, cur = [], []
        for s in steps:
            if s[0] == 1 and cur:
                epochs.append(cur)
                cur = []
            cur.append(s)
        epochs.append(cur)
        for e, ep in enumerate(epochs):
            if r == 0 and e < len(starts):
                firsts.append(ep[0][1] - starts[e])
            procs += [p for _, _, p in ep[1:]]
            periods += [b[1] - a[1] for a, b in zip(ep, ep[1:])]
    mean = lambda v: sum(v) / len(v) if v else float("nan")
    return {"first": mean(firsts), "period": mean(periods), "proc": mean(procs),
            "wait": mean(procs) - compute, "rest": mean(periods) - mean(procs)}


def iolab_steps(stored, compute):
    """The same figures from iolab's stored epochs (means over accelerators)."""
    with open(stored) as f:
        run = json.load(f)
    firsts, periods, waits = [], [], []
    for p in run["phases"]:
        x = p["extra"]
        steps = x["steps"] / x["accelerators"]
        firsts.append(x["first_step_mean_s"])
        # AU = compute of steps 2.. over the time after the first step.
        periods.append(compute / (x["au_percent"] / 100.0))
        # The mean wait over all steps, the first's taken out.
        waits.append((x["load_mean_s"] * steps - (x["first_step_mean_s"] - compute))
                     / max(steps - 1, 1))
    mean = lambda v: sum(v) / len(v) if v else float("nan")
    return {"first": mean(firsts), "period": mean(periods), "proc": mean(waits) + compute,
            "wait": mean(waits), "rest": mean(periods) - mean(waits) - compute}


PRESET_COMPUTE = {"unet3d_h100": 0.323, "resnet50_h100": 0.224, "cosmoflow_h100": 0.0035}


def mode_steps(args, scratch):
    backing = tempfile.mkdtemp(dir=args.data_root or scratch, prefix="iolab-bench-backing-")
    workload, dlio, iolab = loader_of(args)
    compute = PRESET_COMPUTE[workload]
    try:
        subprocess.run([iolab_bin(), "train", "datagen", "--data-dir",
                        os.path.join(backing, "d"), "--no-store", "--quiet"] + iolab,
                       check=True)
        fs = FaultMount(backing, os.path.join(scratch, "mnt"), [f"open:stall={args.stall}"])
    except BaseException:
        shutil.rmtree(backing, ignore_errors=True)
        raise
    stored = os.path.join(scratch, "iolab-run.json")
    parts = {"dlio": [], "iolab": []}

    def run_dlio():
        log = []
        res = dlio_train(args, workload, data, dlio, scratch, log)
        parts["dlio"].append(dlio_steps(log[0], compute))
        return res

    def run_iolab():
        res = iolab_train(args, data, iolab, scratch, stored)
        parts["iolab"].append(iolab_steps(stored, compute))
        return res

    try:
        data = os.path.join(fs.mount, "d")
        rows = alternate(args, run_dlio, run_iolab)
    finally:
        fs.close()
        shutil.rmtree(backing, ignore_errors=True)
    print(f"\nsteps: {workload} loader, {args.np} ranks, {describe(args)}, every open "
          f"stalled {args.stall}, compute {compute} s")
    table(rows, "au", "AU %")
    table(rows, "sps", "samples/s")
    print(f"  {'seconds (median of runs)':<26} {'first step':>10} {'period':>8} {'wait':>8} "
          f"{'compute':>8} {'rest':>8}")
    for tool in ("dlio", "iolab"):
        med = lambda k: statistics.median(p[k] for p in parts[tool])
        print(f"  {tool:<26} {med('first'):10.4f} {med('period'):8.4f} {med('wait'):8.4f} "
              f"{compute:8.4f} {med('rest'):8.4f}")


def mode_loader(args, scratch):
    data = os.path.join(args.data_root or "/dev/shm", "iolab-bench-dlio-loader")
    workload, _, iolab = loader_of(args, compute=0)
    subprocess.run([iolab_bin(), "train", "datagen", "--data-dir", data, "--no-store",
                    "--quiet"] + iolab, check=True)
    # CPU per sample without start-up (DLIO's imports of torch and TensorFlow take
    # seconds of CPU): the CPU of a run of --epochs epochs less that of a 1-epoch run,
    # over the samples of the epochs between.
    one = argparse.Namespace(**{**vars(args), "epochs": 1})
    batch = BATCH[args.workload]
    per_file = 1 if args.workload == "unet3d" else (
        args.samples_per_file or TF_WORKLOADS[args.workload][1])
    per_epoch = (args.files * per_file // batch // args.np) * batch * args.np
    extra_samples = per_epoch * (args.epochs - 1)

    def pair(run):
        short, long = run(one), run(args)
        long["cpu_us_per_sample"] = (long["cpu"] - short["cpu"]) * 1e6 / extra_samples
        return long

    try:
        rows = alternate(
            args,
            lambda: pair(lambda a: dlio_train(a, workload, data, loader_of(a, 0)[1], scratch)),
            lambda: pair(lambda a: iolab_train(a, data, loader_of(a, 0)[2], scratch)))
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(f"\nloader cost: {workload}'s loader, computation_time 0, {args.np} ranks, "
          f"{describe(args)} in tmpfs, {args.epochs} epochs ({per_epoch} samples each)")
    table(rows, "sps", "samples/s")
    table(rows, "cpu_us_per_sample", "CPU us per sample")


def mode_crossover(args, scratch):
    """--workload's loader on the other tool's generated files, both ways."""
    workload, dlio, iolab = loader_of(args, compute=0.01)
    ext = ".npz" if args.workload == "unet3d" else ".tfrecord"
    d1 = os.path.join(scratch, "by-dlio")
    generate_dlio(args, workload, d1, dlio, scratch)
    r = iolab_train(args, d1, iolab, scratch)
    print(f"iolab on DLIO's files: {r['epochs']} epochs, AU {r['au']:.2f}%, "
          f"{r['sps']:.2f} samples/s")
    d2 = os.path.join(scratch, "by-iolab")
    subprocess.run([iolab_bin(), "train", "datagen", "--data-dir", d2, "--no-store",
                    "--quiet"] + iolab, check=True)
    r = dlio_train(args, workload, d2, dlio, scratch)
    print(f"DLIO on iolab's files: {r['epochs']} epochs, AU {r['au']:.2f}%, "
          f"{r['sps']:.2f} samples/s")

    def sizes(d):
        return sorted(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d)
                      for f in fs if f.endswith(ext))
    a, b = sizes(d1), sizes(d2)
    print(f"{workload}, {describe(args)}: DLIO wrote {len(a)} {ext} files of {a[0]}-{a[-1]} "
          f"bytes, iolab {len(b)} of {b[0]}-{b[-1]} bytes")


SMALL_LLAMA = {"num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 1024,
               "vocab_size": 1000, "num_attention_heads": 8, "num_kv_heads": 2}


def mode_checkpoint(args, scratch):
    ck = os.path.join(scratch, "ck")
    out = os.path.join(scratch, "ck-out")
    model = [f"++workload.model.num_layers={SMALL_LLAMA['num_layers']}"] + [
        f"++workload.model.transformer.{k}={v}" for k, v in SMALL_LLAMA.items()
        if k != "num_layers"]
    cmd = MPIRUN + ["-np", "8", os.path.join(args.venv, "bin/python"), "-m",
                    "dlio_benchmark.main", f"--config-dir={args.mlperf_configs}",
                    "workload=llama3_8b"] + model + [
        "++workload.checkpoint.num_checkpoints_write=1",
        "++workload.checkpoint.num_checkpoints_read=0",
        "++workload.checkpoint.time_between_checkpoints=0",
        f"++workload.checkpoint.checkpoint_folder={ck}", f"++workload.output.folder={out}"]
    env = dict(os.environ, PYTHONPATH=args.dlio_v2)
    os.makedirs(out, exist_ok=True)
    timed(cmd, cwd=out, env=env)
    step = os.path.join(ck, sorted(os.listdir(ck))[0])
    dlio_files = {f[:-3]: os.path.getsize(os.path.join(step, f)) for f in os.listdir(step)}
    plan = subprocess.run([iolab_bin(), "checkpoint", "--model", "llama3-8b", "--plan",
                           "--num-layers", "4", "--hidden-size", "256",
                           "--ffn-hidden-size", "1024", "--vocab-size", "1000",
                           "--attention-heads", "8", "--kv-heads", "2"],
                          capture_output=True, text=True, check=True).stdout
    iolab_files = {}
    for line in plan.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].endswith(".pt") and parts[2] == "bytes":
            iolab_files[parts[0][:-3]] = int(parts[1])
    print(f"checkpoint: llama3_8b shape {SMALL_LLAMA}, 8 ranks, ZeRO 3")
    print(f"  {'file':<44} {'DLIO bytes':>12} {'iolab payload':>14} {'torch.save adds':>16}")
    for name in sorted(set(dlio_files) | set(iolab_files)):
        d, i = dlio_files.get(name), iolab_files.get(name)
        extra = (d - i) if d is not None and i is not None else None
        print(f"  {name:<44} {d!s:>12} {i!s:>14} {extra!s:>16}")
    same_names = set(dlio_files) == set(iolab_files)
    print(f"  same file names on both sides: {same_names}")


def ckpt_model(args):
    return {"num_layers": args.ckpt_layers, "hidden_size": 1024, "ffn_hidden_size": 3584,
            "vocab_size": 8000, "num_attention_heads": 8, "num_kv_heads": 2}


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def ckpt_dlio_cmd(args, ck, out, writes, reads, rank_sync, wrap=None):
    """DLIO's checkpointing of the shrunk llama3_8b layout: `writes` checkpoints into
    `ck`, then `reads` read back; `wrap` prefixes each rank's command (strace)."""
    shape = ckpt_model(args)
    model = [f"++workload.model.num_layers={shape['num_layers']}"] + [
        f"++workload.model.transformer.{k}={v}" for k, v in shape.items() if k != "num_layers"]
    return MPIRUN + ["-np", "8"] + (wrap or []) + [
        os.path.join(args.venv, "bin/python"), "-m",
        "dlio_benchmark.main", f"--config-dir={args.mlperf_configs}",
        "workload=llama3_8b"] + model + [
        f"++workload.checkpoint.num_checkpoints_write={writes}",
        f"++workload.checkpoint.num_checkpoints_read={reads}",
        "++workload.checkpoint.time_between_checkpoints=0",
        f"++workload.checkpoint.checkpoint_rank_sync={rank_sync}",
        f"++workload.checkpoint.checkpoint_folder={ck}", f"++workload.output.folder={out}"]


def dlio_ckpt_run(args, root, ck, writes, reads, rank_sync):
    """One DLIO invocation; returns its summary's metrics, wall and CPU."""
    out = tempfile.mkdtemp(dir=root, prefix="dlio-ck-out-")
    env = dict(os.environ, PYTHONPATH=args.dlio_v2)
    try:
        wall, cpu, _ = timed(ckpt_dlio_cmd(args, ck, out, writes, reads, rank_sync),
                             cwd=out, env=env)
        with open(os.path.join(out, "summary.json")) as f:
            m = json.load(f)["metric"]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return m, wall, cpu


def dlio_ckpt(args, root, rank_sync):
    ck = tempfile.mkdtemp(dir=root, prefix="dlio-ck-")
    try:
        m, wall, cpu = dlio_ckpt_run(args, root, ck, args.writes, 0, rank_sync)
        written = dir_bytes(ck) / args.writes
    finally:
        shutil.rmtree(ck, ignore_errors=True)
    return {"gibps": m["save_checkpoint_io_mean_GB_per_second"],
            "dur": m["save_checkpoint_duration_mean_seconds"],
            "gib": m["checkpoint_size_GB"], "file_gib": written / 2**30,
            "wall": wall, "cpu": cpu}


def iolab_ckpt_cmd(args, ck, writes, reads, stored, wrap=None):
    shape = ckpt_model(args)
    return MPIRUN + ["-np", "8"] + (wrap or []) + [
        iolab_bin(), "checkpoint", "--model", "llama3-8b",
        "--num-layers", str(shape["num_layers"]),
        "--hidden-size", str(shape["hidden_size"]),
        "--ffn-hidden-size", str(shape["ffn_hidden_size"]),
        "--vocab-size", str(shape["vocab_size"]),
        "--attention-heads", str(shape["num_attention_heads"]),
        "--kv-heads", str(shape["num_kv_heads"]), "--ranks", "8",
        "--writes", str(writes), "--reads", str(reads), "--time-between", "0",
        "--dir", ck, "--json", stored, "--no-store", "--quiet"] + (
            ["--no-fsync"] if getattr(args, "no_fsync", False) else [])


def iolab_ckpt(args, root, reads=0):
    """iolab's checkpoint run; with reads, the read-back phase's figures too (iolab
    empties the page cache between writing and reading, as MLPerf's run does)."""
    ck = tempfile.mkdtemp(dir=root, prefix="iolab-ck-")
    stored = os.path.join(root, "iolab-ck.json")
    try:
        wall, cpu, _ = timed(iolab_ckpt_cmd(args, ck, args.writes, reads, stored))
        with open(stored) as f:
            run = json.load(f)
    finally:
        shutil.rmtree(ck, ignore_errors=True)
    x = run["phases"][0]["extra"]
    res = {"gibps": x["gib_per_sec_mean"], "dur": x["duration_mean_s"],
           "gib": x["checkpoint_gib"], "file_gib": x["checkpoint_gib"],
           "wall": wall, "cpu": cpu}
    if reads:
        r = run["phases"][1]
        assert r["name"] == "checkpoint-read", r["name"]
        res["read_gibps"] = r["extra"]["gib_per_sec_mean"]
        res["read_dur"] = r["extra"]["duration_mean_s"]
    return res


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def alternate_ckpt(args, root, tools, line):
    """Runs the (name, run) tools --rounds times, alternating their order, printing each
    result with `line`; removes `root` at the end; returns each tool's medians."""
    rows = {name: [] for name, _ in tools}
    try:
        for r in range(args.round_offset, args.round_offset + args.rounds):
            order = tools if r % 2 == 0 else list(reversed(tools))
            for name, fn in order:
                res = fn()
                rows[name].append(res)
                print(f"    round {r + 1} {name:<10} {line(res)}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {n: {k: statistics.median(x[k] for x in v) for k in v[0]} for n, v in rows.items()}


def mode_ckpt_speed(args, scratch):
    root = tempfile.mkdtemp(dir=args.data_root or "/var/tmp", prefix="iolab-bench-ckpt-")
    tools = [("dlio-sync", lambda: dlio_ckpt(args, root, True)),
             ("iolab", lambda: iolab_ckpt(args, root)),
             ("dlio-rank0", lambda: dlio_ckpt(args, root, False))]
    med = alternate_ckpt(args, root, tools, lambda res: (
        f"{res['gibps']:7.3f} GiB/s  duration {res['dur']:7.3f}s  checkpoint "
        f"{res['gib']:.3f} GiB (files {res['file_gib']:.3f})  wall {res['wall']:6.1f}s  "
        f"CPU {res['cpu']:6.1f}s"))
    fsync = "iolab without fsync" if args.no_fsync else "iolab fsyncs, DLIO does not"
    print(f"\nckpt-speed: llama3_8b layout, {ckpt_model(args)}, 8 ranks, ZeRO 3, {fsync}, "
          f"{args.writes} writes per run, {args.rounds} rounds")
    for n, m in med.items():
        print(f"  {n:<10} throughput {m['gibps']:7.3f} GiB/s  duration {m['dur']:7.3f}s  "
              f"wall {m['wall']:6.1f}s  CPU {m['cpu']:6.1f}s  (medians)")
    print(f"  iolab / DLIO (rank sync) throughput {med['iolab']['gibps'] / med['dlio-sync']['gibps']:.3f}"
          f"; iolab / DLIO (rank 0, MLPerf's) {med['iolab']['gibps'] / med['dlio-rank0']['gibps']:.3f}")
    print(f"  bytes per checkpoint on disk: DLIO {med['dlio-sync']['file_gib']:.4f} GiB, "
          f"iolab {med['iolab']['file_gib']:.4f} GiB")


def dlio_ckpt_read(args, root, rank_sync):
    """MLPerf's read-back as its run script does it: DLIO writes the checkpoints in one
    run, the page cache is emptied, and a second run (num_checkpoints_write 0) reads
    them; its load figures, the write's beside them."""
    ck = tempfile.mkdtemp(dir=root, prefix="dlio-ck-")
    try:
        w, wall_w, cpu_w = dlio_ckpt_run(args, root, ck, args.writes, 0, True)
        drop_caches()
        r, wall_r, cpu_r = dlio_ckpt_run(args, root, ck, 0, args.writes, rank_sync)
    finally:
        shutil.rmtree(ck, ignore_errors=True)
    return {"gibps": w["save_checkpoint_io_mean_GB_per_second"],
            "dur": w["save_checkpoint_duration_mean_seconds"],
            "read_gibps": r["load_checkpoint_io_mean_GB_per_second"],
            "read_dur": r["load_checkpoint_duration_mean_seconds"],
            "wall": wall_w + wall_r, "cpu": cpu_w + cpu_r}


def mode_ckpt_read(args, scratch):
    root = tempfile.mkdtemp(dir=args.data_root or "/var/tmp", prefix="iolab-bench-ckpt-")
    tools = [("dlio-sync", lambda: dlio_ckpt_read(args, root, True)),
             ("iolab", lambda: iolab_ckpt(args, root, reads=args.writes)),
             ("dlio-rank0", lambda: dlio_ckpt_read(args, root, False))]
    med = alternate_ckpt(args, root, tools, lambda res: (
        f"read {res['read_gibps']:7.3f} GiB/s ({res['read_dur']:6.3f}s)  write "
        f"{res['gibps']:7.3f} GiB/s ({res['dur']:6.3f}s)  wall {res['wall']:6.1f}s  "
        f"CPU {res['cpu']:6.1f}s"))
    print(f"\nckpt-read: llama3_8b layout, {ckpt_model(args)}, 8 ranks, ZeRO 3, "
          f"{args.writes} checkpoints written (fsync) then read back after emptying the "
          f"page cache, {args.rounds} rounds")
    for n, m in med.items():
        print(f"  {n:<10} read {m['read_gibps']:7.3f} GiB/s  duration {m['read_dur']:7.3f}s  "
              f"write {m['gibps']:7.3f} GiB/s  (medians)")
    print(f"  read: iolab / DLIO (rank sync) {med['iolab']['read_gibps'] / med['dlio-sync']['read_gibps']:.3f}"
          f"; iolab / DLIO (rank 0, MLPerf's) {med['iolab']['read_gibps'] / med['dlio-rank0']['read_gibps']:.3f}")


TRACED = ("read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev",
          "pwritev", "pwritev2", "fsync", "fdatasync", "mmap", "openat", "lseek", "close")


def strace_wrap(out_dir, tag):
    """Each rank under strace, one file per thread, fds shown with their paths."""
    return ["sh", "-c", f'exec strace -ff -y -s 0 -qq -e signal=none '
            f'-e trace={",".join(TRACED)} -o {out_dir}/{tag}.r$OMPI_COMM_WORLD_RANK "$@"',
            "strace-rank"]


def trace_counts(out_dir, tag, ck):
    """Per rank: bytes and calls of each kind on the files under `ck`, and the sizes
    asked for by the read and write calls."""
    import re
    call = re.compile(r"^(\w+)\((\d+)<([^>]*)>.*\) = (-?\d+)")
    opened = re.compile(r"^openat\(.*\) = \d+<([^>]*)>")
    mm = re.compile(r"^mmap\(\w+, (\d+), [^,]+, [^,]+, (\d+)<([^>]*)>")
    ranks = {}
    for name in os.listdir(out_dir):
        if not name.startswith(tag + ".r"):
            continue
        rank = int(name[len(tag) + 2:].split(".")[0])
        c = ranks.setdefault(rank, {})
        with open(os.path.join(out_dir, name), errors="replace") as f:
            for line in f:
                m = mm.match(line)
                if m and m.group(3).startswith(ck):
                    c["mmap_bytes"] = c.get("mmap_bytes", 0) + int(m.group(1))
                    continue
                m = opened.match(line)
                if m and m.group(1).startswith(ck):
                    c["openat_calls"] = c.get("openat_calls", 0) + 1
                    continue
                m = call.match(line)
                if not m or not m.group(3).startswith(ck):
                    continue
                kind, ret = m.group(1), int(m.group(4))
                c[kind + "_calls"] = c.get(kind + "_calls", 0) + 1
                if kind in ("read", "pread64", "readv", "preadv", "preadv2") and ret > 0:
                    c["read_bytes"] = c.get("read_bytes", 0) + ret
                    c.setdefault("read_sizes", {}).setdefault(ret, 0)
                    c["read_sizes"][ret] += 1
                if kind in ("write", "pwrite64", "writev", "pwritev", "pwritev2") and ret > 0:
                    c["write_bytes"] = c.get("write_bytes", 0) + ret
                    c.setdefault("write_sizes", {}).setdefault(ret, 0)
                    c["write_sizes"][ret] += 1
    return ranks


def mode_ckpt_trace(args, scratch):
    """Not timed: every rank of both tools under strace writing one checkpoint and reading
    it back; per rank the bytes each reads and writes on the checkpoint files, the calls
    and the fsyncs."""
    root = tempfile.mkdtemp(dir=args.data_root or "/var/tmp", prefix="iolab-bench-ckpt-")
    traces = os.path.join(root, "traces")
    os.makedirs(traces)
    try:
        ck_d = os.path.join(root, "dlio-ck")
        out = os.path.join(root, "dlio-out")
        os.makedirs(out)
        timed(ckpt_dlio_cmd(args, ck_d, out, 1, 1, True, strace_wrap(traces, "dlio")),
              cwd=out, env=dict(os.environ, PYTHONPATH=args.dlio_v2))
        sizes = {os.path.relpath(os.path.join(r, f), ck_d): os.path.getsize(os.path.join(r, f))
                 for r, _, fs in os.walk(ck_d) for f in fs}
        ck_i = os.path.join(root, "iolab-ck")
        os.makedirs(ck_i)
        timed(iolab_ckpt_cmd(args, ck_i, 1, 1, os.path.join(root, "i.json"),
                             strace_wrap(traces, "iolab")))
        d, i = trace_counts(traces, "dlio", ck_d), trace_counts(traces, "iolab", ck_i)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"ckpt-trace: llama3_8b layout, {ckpt_model(args)}, 8 ranks, ZeRO 3, one "
          f"checkpoint written (fsync) and read back, each rank under strace -f")
    print(f"  {'rank':<5} {'tool':<6} {'read bytes':>12} {'read calls':>10} "
          f"{'write bytes':>12} {'write calls':>11} {'fsync':>5} {'opens':>5} {'mmap':>6}"
          f"  {'files on disk':>13}")
    same = True
    for rank in sorted(set(d) | set(i)):
        files = sum(v for k, v in sizes.items()
                    if f"zero_pp_rank_{rank}_" in k)
        for tool, c in (("DLIO", d.get(rank, {})), ("iolab", i.get(rank, {}))):
            reads = sum(c.get(k + "_calls", 0) for k in TRACED[:5])
            writes = sum(c.get(k + "_calls", 0) for k in TRACED[5:10])
            print(f"  {rank:<5} {tool:<6} {c.get('read_bytes', 0):>12} {reads:>10} "
                  f"{c.get('write_bytes', 0):>12} {writes:>11} {c.get('fsync_calls', 0):>5} "
                  f"{c.get('openat_calls', 0):>5} {c.get('mmap_bytes', 0):>6}"
                  f"  {files if tool == 'DLIO' else '':>13}")
        same &= d.get(rank, {}).get("read_bytes", 0) == d.get(rank, {}).get("write_bytes", 0)
    for tool, t in (("DLIO", d), ("iolab", i)):
        rs, ws = {}, {}
        for c in t.values():
            for k, v in c.get("read_sizes", {}).items():
                rs[k] = rs.get(k, 0) + v
            for k, v in c.get("write_sizes", {}).items():
                ws[k] = ws.get(k, 0) + v
        top = lambda h: ", ".join(f"{n} x {b}" for b, n in
                                  sorted(h.items(), key=lambda x: -x[0] * x[1])[:4])
        print(f"  {tool} read sizes (calls x bytes, the largest shares): {top(rs)}")
        print(f"  {tool} write sizes: {top(ws)}")
    print(f"  DLIO reads back exactly the bytes it wrote, every rank: {same}")


def mode_train_trace(args, scratch):
    """Not timed: both tools' loaders (--workload) under strace on the same dataset (no
    stall): per rank the files opened, the most open at once, the threads that read,
    the read calls, their bytes and sizes."""
    workload, dlio, iolab = loader_of(args)
    root = tempfile.mkdtemp(dir=args.data_root or "/var/tmp", prefix="iolab-bench-trace-")
    traces = os.path.join(root, "traces")
    os.makedirs(traces)
    data = os.path.join(root, "d")
    ext = "npz" if args.workload == "unet3d" else "tfrecord"
    wrap = lambda tag: ["sh", "-c", f'exec strace -ff -tt -y -s 0 -qq -e signal=none '
                        f'-e trace=openat,read,pread64,close -o {traces}/{tag}.r'
                        f'$OMPI_COMM_WORLD_RANK "$@"', "strace-rank"]
    try:
        subprocess.run([iolab_bin(), "train", "datagen", "--data-dir", data, "--no-store",
                        "--quiet"] + iolab, check=True)
        out = os.path.join(root, "dlio-out")
        os.makedirs(out)
        cmd = dlio_cmd(args, workload, data, out, ["++workload.workflow.generate_data=False",
                                                   "++workload.workflow.train=True"] + dlio)
        at = cmd.index("-np") + 2
        timed(cmd[:at] + wrap("dlio") + cmd[at:], cwd=out)
        timed(MPIRUN + ["-np", str(args.np)] + wrap("iolab") + [
            iolab_bin(), "train", "run", "--data-dir", data, "--no-store", "--quiet"] + iolab)
        stats = {tag: trace_files(traces, tag, "." + ext) for tag in ("dlio", "iolab")}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"train-trace: {workload} loader, {args.np} ranks, {args.files} files, "
          f"{args.epochs} epoch(s), each rank under strace -f, no stall")
    print(f"  {'rank':<5} {'tool':<6} {'opens':>6} {'most open':>9} {'threads':>7} "
          f"{'read calls':>10} {'read bytes':>12}  read sizes (calls x bytes)")
    for rank in range(args.np):
        for tag in ("dlio", "iolab"):
            c = stats[tag].get(rank, {})
            sizes = sorted(c.get("sizes", {}).items(), key=lambda x: -x[1])[:3]
            print(f"  {rank:<5} {tag:<6} {c.get('opens', 0):>6} {c.get('most', 0):>9} "
                  f"{len(c.get('threads', ())):>7} {c.get('reads', 0):>10} "
                  f"{c.get('bytes', 0):>12}  {', '.join(f'{n} x {b}' for b, n in sizes)}")


def trace_files(out_dir, tag, ext):
    """Per rank, from `strace -ff -tt -y` files: opens of the dataset's files, the most
    open at once (all threads' calls merged by time), the threads that read them, the
    read calls, bytes and sizes."""
    import re
    call = re.compile(r"^(\d+):(\d+):([\d.]+) (\w+)\((.*)\) = (-?\d+)")
    ranks = {}
    for name in os.listdir(out_dir):
        if not name.startswith(tag + ".r"):
            continue
        rank, tid = name[len(tag) + 2:].split(".")
        events = ranks.setdefault(int(rank), [])
        with open(os.path.join(out_dir, name), errors="replace") as f:
            for line in f:
                m = call.match(line)
                if not m or ext not in m.group(5):
                    continue
                t = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
                events.append((t, m.group(4), tid, int(m.group(6))))
    out = {}
    for rank, events in ranks.items():
        events.sort()
        c = {"opens": 0, "most": 0, "threads": set(), "reads": 0, "bytes": 0, "sizes": {}}
        now = 0
        for _, kind, tid, ret in events:
            if kind == "openat" and ret >= 0:
                c["opens"] += 1
                now += 1
                c["most"] = max(c["most"], now)
            elif kind == "close":
                now -= 1
            elif kind in ("read", "pread64"):
                c["threads"].add(tid)
                c["reads"] += 1
                if ret > 0:
                    c["bytes"] += ret
                    c["sizes"][ret] = c["sizes"].get(ret, 0) + 1
        out[rank] = c
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["storage", "steps", "loader", "crossover", "checkpoint",
                                     "ckpt-speed", "ckpt-read", "ckpt-trace", "train-trace"])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--workload", choices=["unet3d", "resnet50", "cosmoflow"],
                    default="unet3d",
                    help="storage, steps, loader, crossover, train-trace: unet3d's loader (npz, "
                         "PyTorch), resnet50's or cosmoflow's (TFRecord, TensorFlow)")
    ap.add_argument("--samples-per-file", type=int, default=None,
                    help="resnet50 and cosmoflow [default: 100 and 1]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--round-offset", type=int, default=0,
                    help="number the rounds from this one, so a long set split into "
                         "several calls (each under quiet) keeps alternating the order")
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--record-length", type=int, default=None,
                    help="[default: unet3d 1 MiB, resnet50 114660, cosmoflow 2828486]")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--writes", type=int, default=2)
    ap.add_argument("--ckpt-layers", type=int, default=4)
    ap.add_argument("--no-fsync", action="store_true",
                    help="ckpt-speed, ckpt-read: iolab without fsync, as DLIO's "
                         "mlperf_storage_v2.0 runs (its checkpoint.fsync never reaches "
                         "checkpoint_fsync: ckpt-trace shows no fsync call)")
    ap.add_argument("--stall", default="50ms")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--venv", default="/work/peers/dlio-venv")
    ap.add_argument("--dlio-v2", default="/work/peers/dlio-v2")
    ap.add_argument("--mlperf-configs", default="/work/peers/mlperf-storage/configs/dlio")
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="iolab-bench-dlio-")
    try:
        {"storage": mode_storage, "steps": mode_steps, "loader": mode_loader,
         "crossover": mode_crossover, "checkpoint": mode_checkpoint,
         "ckpt-speed": mode_ckpt_speed, "ckpt-read": mode_ckpt_read,
         "ckpt-trace": mode_ckpt_trace, "train-trace": mode_train_trace}[args.mode](args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
