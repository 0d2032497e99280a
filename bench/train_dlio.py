#!/usr/bin/env python3
"""MLPerf Storage v3.0's DLIO (mlcommons/DLIO_local_changes at cbe2001, the revision v3.0
pins) against `iolab train` / `iolab checkpoint`, on v3.0's workloads at small scale.

Modes (one per call):

  storage     AU and samples/s, storage-bound: the dataset behind an iolab-faultfs
              mount that stalls every open by --stall (bench/dlio.py's storage target),
              --workload unet3d|retinanet|dlrm|flux (b200 configs, fewer and smaller
              files), the tools alternated --rounds times; prints iolab/DLIO (target
              within +-10 %).
  loader      The loader's own cost: computation_time 0, the dataset on tmpfs;
              samples/s of each and iolab/DLIO (target >= 5).
  crossover   --workload unet3d (npz), retinanet (jpeg), dlrm or flux (parquet) at v3.0's
              b200 configs, resnet50 (TFRecord, DLIO's resnet50_h100): DLIO generates
              and iolab trains on DLIO's files, iolab generates and DLIO trains on
              iolab's; both must read every step (steps of every epoch against files x
              samples per file / batch, iolab's epochs without errors).
  checkpoint  v3.0 DLIO writes one checkpoint of llama3 --models at a small shape (same
              parallelism and ZeRO stage, few layers and a small hidden size) with --np
              ranks (8b: 8; the others as their tp x pp with dp 1): its files and bytes
              against `iolab checkpoint --plan` and against ckpt-plan's driver.
  ckpt-plan   Not run by DLIO: llama3 8b/70b/405b/1t at v3.0's real shapes, on the closed
              submissions' process counts (8, 64, 512, 1,024) and on tp x pp: every
              rank's files and bytes as DLIO's own checkpointing object computes them
              (bench/dlio3_ckpt_sizes.py in DLIO's venv, rank by rank, nothing written)
              against `iolab checkpoint --plan`.
  parquet-trace  Not timed: both tools' readers under `strace -f` on the same dlrm
              files iolab wrote (one rank, one reader thread): per file the (offset,
              length) of every read; the sets must match (DLIO reads at the position
              after a seek; iolab preads).

v3.0's workload files are written by this script into a config dir beside DLIO's own
(values from docs/research/mlperf-storage-v3.md section 1, the ones iolab's presets
carry); both tools run as `mpirun --bind-to none` (OpenMPI would bind each rank to a core),
DLIO with `--config-dir` after the overrides.
DLIO comes from a venv outside the repository (BENCH-NOTES.md "MLPerf Storage v3.0's
DLIO"): --venv (default /work/peers/dlio3-venv/V). IOLAB= the iolab binary (default
target/release/iolab, built with --features mpi), FAULTFS= iolab-faultfs.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlio as base  # noqa: E402  (bench/dlio.py: timing, faultfs mount, tables)

# dlrm's 200 columns by dtype size, as dlrm_b200.yaml lists them (iolab's DLRM_DTYPES).
DLRM_DTYPES = ("22884241214484124442888824422484842281112424818884411444142482814214242424482"
               "14811442121414424884212282482248488122118412211121141248228248824118484881118"
               "8441424242828241821811112218882811248184844882")
DTYPE = {"2": "float16", "4": "float32", "8": "float64", "1": "int8"}
FLUX_COLUMNS = [("t5_encodings", 524328), ("clip_encodings", 409), ("mean", 8232),
                ("logvar", 8232), ("timestamp", 7)]

# v3.0's b200 training configs: (format, files, samples/file, record bytes, batch,
# read_threads, computation_time, AU).
TRAIN = {
    "unet3d": ("npz", 7200, 1, 146600628, 7, 4, 0.162, 0.90),
    "retinanet": ("jpeg", 1170301, 1, 322957, 24, 8, 0.04755, 0.85),
    "dlrm": ("parquet", 1024, 4718592, 761, 16384, 4, 0.000375, 0.70),
    "flux": ("parquet", 4296, 288, 2164832, 48, 8, 1.35, 0.90),
}

# v3.0's checkpoint models: (tp, pp, zero, ranks of the small run).
LLAMA = {"8b": (1, 1, 3, 8), "70b": (8, 1, 3, 8), "405b": (8, 32, 1, 256),
         "1t": (8, 64, 1, 512)}
SMALL_SHAPE = {"num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 1024,
               "vocab_size": 1000, "num_attention_heads": 8, "num_kv_heads": 2}
# v3.0's llama3 shapes (mlcommons/storage configs/dlio/workload/llama3_*.yaml at v3.0:
# docs/research/mlperf-storage-v3.md 1.3) and their closed submissions' process counts.
FULL_SHAPE = {
    "8b": ({"num_layers": 32, "hidden_size": 4096, "ffn_hidden_size": 14336,
            "vocab_size": 128256, "num_attention_heads": 32, "num_kv_heads": 8}, 8),
    "70b": ({"num_layers": 80, "hidden_size": 8192, "ffn_hidden_size": 28672,
             "vocab_size": 128256, "num_attention_heads": 128, "num_kv_heads": 8}, 64),
    "405b": ({"num_layers": 126, "hidden_size": 16384, "ffn_hidden_size": 53248,
              "vocab_size": 128256, "num_attention_heads": 128, "num_kv_heads": 8}, 512),
    "1t": ({"num_layers": 128, "hidden_size": 25872, "ffn_hidden_size": 98304,
            "vocab_size": 128256, "num_attention_heads": 192, "num_kv_heads": 32}, 1024),
}


def train_yaml(name):
    fmt, files, per_file, length, batch, threads, compute, au = TRAIN[name]
    lines = [f"model:\n  name: {name}_b200\n  type: cnn\n", "framework: pytorch\n",
             "workflow:\n  generate_data: False\n  train: True\n  checkpoint: False\n",
             "dataset:\n  data_folder: data/x\n", f"  format: {fmt}\n",
             f"  num_files_train: {files}\n  num_samples_per_file: {per_file}\n",
             f"  record_length_bytes: {length}\n"]
    if name == "unet3d":
        lines.append("  record_length_bytes_stdev: 68341808\n"
                     "  record_length_bytes_resize: 2097152\n")
    if name == "dlrm":
        lines.append("  parquet:\n    row_group_size: 6144\n    columns:\n")
        lines += [f"      - name: feature_{i:03}\n        dtype: {DTYPE[d]}\n"
                  for i, d in enumerate(DLRM_DTYPES)]
    if name == "flux":
        lines.append("  parquet:\n    columns:\n")
        lines += [f"      - name: {c}\n        dtype: float32\n        size: {s}\n"
                  for c, s in FLUX_COLUMNS]
    lines += [f"reader:\n  data_loader: pytorch\n  batch_size: {batch}\n",
              f"  read_threads: {threads}\n  file_shuffle: seed\n  sample_shuffle: seed\n",
              f"train:\n  epochs: 1\n  computation_time: {compute}\n",
              f"metric:\n  au: {au}\n"]
    return "".join(lines)


def llama_yaml(size, s=SMALL_SHAPE):
    tp, pp, zero, _ = LLAMA[size]
    return (f"model:\n  name: llama3_{size}\n  type: transformer\n"
            f"  num_layers: {s['num_layers']}\n  model_datatype: fp16\n"
            f"  optimizer_datatype: fp32\n  parallelism:\n    pipeline: {pp}\n"
            f"    tensor: {tp}\n    zero_stage: {zero}\n  transformer:\n"
            f"    vocab_size: {s['vocab_size']}\n    hidden_size: {s['hidden_size']}\n"
            f"    ffn_hidden_size: {s['ffn_hidden_size']}\n"
            f"    num_attention_heads: {s['num_attention_heads']}\n"
            f"    num_kv_heads: {s['num_kv_heads']}\n"
            "framework: pytorch\nworkflow:\n  generate_data: False\n  train: False\n"
            "  checkpoint: True\ncheckpoint:\n  checkpoint_folder: ck\n"
            "  time_between_checkpoints: 0\n  num_checkpoints_write: 1\n"
            "  num_checkpoints_read: 0\n  fsync: True\n")


def write_configs(scratch, args):
    """DLIO's own config dir with v3.0's workloads added: its path."""
    dst = os.path.join(scratch, "configs")
    shutil.copytree(args.dlio_configs, dst)
    for name in TRAIN:
        with open(os.path.join(dst, "workload", f"{name}_b200.yaml"), "w") as f:
            f.write(train_yaml(name))
    for size in LLAMA:
        with open(os.path.join(dst, "workload", f"llama3_{size}.yaml"), "w") as f:
            f.write(llama_yaml(size))
    return dst


# Both tools' ranks are launched unbound: OpenMPI binds each rank to one core by default
# (at 2 ranks or fewer), which left iolab's reader threads one core where DLIO had two.
MPIRUN = base.MPIRUN + ["--bind-to", "none"]


def iolab_train(args, data, flags, scratch, stored=None):
    """`iolab train run`'s figures, with its AU over the asked compute (`au_nominal`; a
    build before it had only that one, as `au_percent`) and its measured compute per
    step from the stored epochs."""
    keep = stored or os.path.join(scratch, "iolab-run.json")
    res = base.iolab_train(args, data, flags, scratch, keep, mpirun=MPIRUN)
    with open(keep) as f:
        figs = [p["figures"] for p in json.load(f)["phases"]
                if p["name"].startswith("train-epoch")]
    res["au_nominal"] = sum(f.get("au_nominal_percent", f["au_percent"]) for f in figs) / len(figs)
    res["compute_ms"] = sum(f.get("compute_measured_mean", f["compute_mean"])
                            for f in figs) / len(figs) / 1e6
    return res


def dlio_run(args, workload, overrides, cwd, np_=None, wrap=None):
    """v3.0 DLIO under mpirun; returns (wall, cpu, stdout)."""
    cmd = MPIRUN + ["-np", str(np_ or args.np)] + (wrap or []) + [
        os.path.join(args.venv, "bin/dlio_benchmark"), f"workload={workload}"] + overrides + [
        f"--config-dir={args.config_dir}"]
    return base.timed(cmd, cwd=cwd)


def small(args, name, compute=None):
    """The bench's small dataset of a v3.0 workload: (DLIO overrides, iolab flags)."""
    fmt, _, per_file, length, batch, threads, _, _ = TRAIN[name]
    files = args.files
    per_file = args.samples_per_file or {"dlrm": 20000, "flux": 4}.get(name, per_file)
    batch = args.batch or {"dlrm": 1024, "flux": 4}.get(name, batch)
    dlio = [f"++workload.dataset.num_files_train={files}",
            f"++workload.dataset.num_samples_per_file={per_file}",
            f"++workload.reader.batch_size={batch}",
            f"++workload.train.epochs={args.epochs}"]
    iolab = ["--preset", name, "--accelerator", "b200", "--files", str(files),
             "--samples-per-file", str(per_file), "--batch-size", str(batch),
             "--epochs", str(args.epochs)]
    if name == "unet3d":
        length = args.record_length or 1048576
        dlio += [f"++workload.dataset.record_length_bytes={length}",
                 "++workload.dataset.record_length_bytes_stdev=0"]
        iolab += ["--record-length", str(length), "--record-length-stdev", "0"]
    if args.read_threads:
        dlio.append(f"++workload.reader.read_threads={args.read_threads}")
        iolab += ["--read-threads", str(args.read_threads)]
    if args.row_group_size:
        dlio.append(f"++workload.dataset.parquet.row_group_size={args.row_group_size}")
        iolab += ["--row-group-size", str(args.row_group_size)]
    if compute is not None:
        dlio.append(f"++workload.train.computation_time={compute}")
        iolab += ["--computation-time", f"{compute}"]
    return dlio, iolab


def dlio_train(args, name, data, overrides, scratch):
    out = tempfile.mkdtemp(dir=scratch, prefix="dlio-out-")
    wall, cpu, _ = dlio_run(args, f"{name}_b200",
                            [f"++workload.dataset.data_folder={data}",
                             f"++workload.output.folder={out}"] + overrides, out)
    with open(os.path.join(out, "summary.json")) as f:
        m = json.load(f)["metric"]
    with open(os.path.join(out, "0_output.json")) as f:
        steps = dlio_steps(json.load(f))
    shutil.rmtree(out, ignore_errors=True)
    au = m["train_au_mean_percentage"]
    return {"au": au, "sps": m["train_throughput_mean_samples_per_second"],
            "epochs": len(m["train_au_percentage"]), "wall": wall, "cpu": cpu,
            **overshoot_out(au, steps, asked_compute(args, name, overrides))}


def dlio_steps(output):
    """Rank 0's per-step compute and proc times in AU's window (DLIO's
    `metric_exclude_start_steps: 1`: every step but the first), over its epochs and
    blocks, from its `0_output.json` (statscounter's `output`, written at the run's end):
    (window compute, window count, first steps' proc)."""
    compute, count = 0.0, 0
    for epoch, o in output.items():
        if not isinstance(o, dict) or "compute" not in o:
            continue
        for block, c in o["compute"].items():
            if block.startswith("block"):
                compute += sum(c[1:])
                count += max(len(c) - 1, 0)
    return compute, count


def asked_compute(args, name, overrides):
    """The computation_time the run asked for (an override, else the config's)."""
    for o in overrides:
        if "train.computation_time=" in o:
            return float(o.split("=")[1])
    return TRAIN[name][6]


def overshoot_out(au, steps, asked):
    """DLIO's AU with its sleep overshoot taken out: the asked compute of its window's
    steps over the window's time (its measured compute over its AU), and its measured
    compute per step. One epoch and block (this bench's storage runs) or their sums."""
    compute, count = steps
    if not count or au <= 0 or compute <= 0:
        return {"au_nominal": 0.0, "compute_ms": 0.0}
    window = compute / (au / 100)
    return {"au_nominal": asked * count / window * 100, "compute_ms": compute / count * 1e3}


def datagen(data, flags):
    subprocess.run([base.iolab_bin(), "train", "datagen", "--data-dir", data, "--no-store",
                    "--quiet"] + flags, check=True)


def mode_storage(args, scratch):
    dlio, iolab = small(args, args.workload)
    backing = tempfile.mkdtemp(dir=args.data_root or scratch, prefix="iolab-bench-backing-")
    try:
        datagen(os.path.join(backing, "d"), iolab)
        fs = base.FaultMount(backing, os.path.join(scratch, "mnt"),
                             [f"open:stall={args.stall}"])
        try:
            data = os.path.join(fs.mount, "d")
            rows = base.alternate(
                args, fs.timing(lambda: dlio_train(args, args.workload, data, dlio, scratch)),
                fs.timing(lambda: iolab_train(args, data, iolab, scratch)))
        finally:
            fs.close()
    finally:
        shutil.rmtree(backing, ignore_errors=True)
    print(f"\nstorage-bound: {args.workload}_b200 at v3.0, {args.np} ranks, {args.files} "
          f"files, every open stalled {args.stall} (target: iolab/DLIO within 0.90-1.10)")
    base.table(rows, "au", "AU %")
    base.table(rows, "au_nominal", "AU % (asked compute)")
    base.table(rows, "compute_ms", "compute/step ms")
    base.table(rows, "sps", "samples/s")


def mode_loader(args, scratch):
    dlio, iolab = small(args, args.workload, compute=0)
    data = os.path.join(args.data_root or "/dev/shm", "iolab-bench-train-dlio-loader")
    try:
        datagen(data, iolab)
        rows = base.alternate(args, lambda: dlio_train(args, args.workload, data, dlio, scratch),
                              lambda: iolab_train(args, data, iolab, scratch))
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(f"\nloader cost: {args.workload}_b200 at v3.0, computation_time 0, {args.np} "
          f"ranks, {args.files} files in tmpfs (target: iolab/DLIO samples/s >= 5)")
    base.table(rows, "sps", "samples/s")


def crossover_setup(args):
    """(DLIO's workload name, its overrides, iolab's flags, expected steps per epoch):
    v3.0's b200 configs for unet3d (npz), retinanet (jpeg), dlrm and flux (parquet);
    resnet50_h100 for TFRecord (v3.0 keeps resnet50 as whatif, on DLIO's own config)."""
    if args.workload == "resnet50":
        name, dlio, iolab = base.loader_of(args, compute=0.01)
        per_file, batch = args.samples_per_file or 100, base.BATCH["resnet50"]
    else:
        name = f"{args.workload}_b200"
        dlio, iolab = small(args, args.workload, compute=0.01)
        per_file = int(next(f for f in dlio if "num_samples_per_file" in f).split("=")[1])
        batch = int(next(f for f in dlio if "batch_size" in f).split("=")[1])
        if TRAIN[args.workload][0] == "parquet":
            # An iterable dataset: reader thread w reads files w, w + threads, ... and
            # drops its own last partial batch.
            threads = TRAIN[args.workload][5]
            return name, dlio, iolab, sum(
                len(range(w, args.files, threads)) * per_file // batch for w in range(threads))
    return name, dlio, iolab, args.files * per_file // batch


def dlio_steps_per_epoch(stdout):
    return [int(m) for m in re.findall(r"Ending epoch \d+ - (\d+) steps completed", stdout)]


def dataset_bytes(data):
    """The bytes of a dataset's files under train/ (files and their total)."""
    sizes = [os.path.getsize(os.path.join(r, f)) for r, _, fs in
             os.walk(os.path.join(data, "train")) for f in fs]
    return f"{len(sizes)} files, {sum(sizes)} bytes"


def mode_crossover(args, scratch):
    """DLIO generates, iolab trains on DLIO's files; iolab generates, DLIO trains on
    iolab's: the steps of every epoch against files x samples per file / batch."""
    name, dlio, iolab, steps = crossover_setup(args)
    bin_dir = os.path.join(scratch, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    with open(os.path.join(bin_dir, "tfrecord2idx"), "w") as f:
        f.write(base.TFRECORD2IDX)
    os.chmod(os.path.join(bin_dir, "tfrecord2idx"), 0o755)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    d1 = os.path.join(scratch, "by-dlio")
    out = tempfile.mkdtemp(dir=scratch, prefix="dlio-gen-")
    dlio_run(args, name, [f"++workload.dataset.data_folder={d1}",
                          f"++workload.output.folder={out}",
                          "++workload.workflow.generate_data=True",
                          "++workload.workflow.train=False",
                          "++workload.workflow.checkpoint=False"] + dlio, out)
    stored = os.path.join(scratch, "iolab.json")
    iolab_train(args, d1, iolab, scratch, stored=stored)
    with open(stored) as f:
        phases = [p for p in json.load(f)["phases"] if p["name"].startswith("train-epoch")]
    on_dlio = [(p["figures"]["steps"], p["figures"]["samples"], p["error_count"],
                sum(o["bytes"] for o in p["ops"] if o["op"] == "read")) for p in phases]
    size = dataset_bytes(d1)
    print(f"iolab on v3.0 DLIO's {name} files ({size}): per epoch (steps, samples, "
          f"errors, bytes read) {on_dlio}; expected {steps} steps")
    d2 = os.path.join(scratch, "by-iolab")
    datagen(d2, iolab)
    out = tempfile.mkdtemp(dir=scratch, prefix="dlio-out-")
    dlio_run(args, name, [f"++workload.dataset.data_folder={d2}",
                          f"++workload.output.folder={out}",
                          "++workload.workflow.generate_data=False",
                          "++workload.workflow.train=True",
                          "++workload.workflow.checkpoint=False"] + dlio, out)
    with open(os.path.join(out, "dlio.log")) as f:
        on_iolab = dlio_steps_per_epoch(f.read())
    size = dataset_bytes(d2)
    print(f"v3.0 DLIO on iolab's {name} files ({size}): steps per epoch {on_iolab}; "
          f"expected {steps}")
    ok = (len(on_dlio) == args.epochs and all(s == steps and e == 0 for s, _, e, _ in on_dlio)
          and on_iolab == [steps] * args.epochs)
    print(f"crossover {name}: {'every epoch, every step, both ways' if ok else 'FAILED'}")
    if not ok:
        raise SystemExit(1)


def iolab_plan(size, ranks, shape):
    """`iolab checkpoint --plan` of llama3 `size` in `shape` on `ranks` ranks, at the
    model's parallelism: {rank: {file: bytes}}."""
    tp, pp, zero, _ = LLAMA[size]
    out = subprocess.run(
        [base.iolab_bin(), "checkpoint", "--model", f"llama3-{size}", "--plan",
         "--ranks", str(ranks), "--tp", str(tp), "--pp", str(pp), "--zero", str(zero),
         "--num-layers", str(shape["num_layers"]), "--hidden-size", str(shape["hidden_size"]),
         "--ffn-hidden-size", str(shape["ffn_hidden_size"]),
         "--vocab-size", str(shape["vocab_size"]),
         "--attention-heads", str(shape["num_attention_heads"]),
         "--kv-heads", str(shape["num_kv_heads"])],
        capture_output=True, text=True, check=True).stdout
    plan, rank = {}, None
    for line in out.splitlines():
        head = re.match(r"^\s*rank\s+(\d+):", line)
        if head:
            rank = int(head.group(1))
            plan[rank] = {}
            continue
        p = line.split()
        if rank is not None and len(p) == 3 and p[0].endswith(".pt") and p[2] == "bytes":
            plan[rank][p[0]] = int(p[1])
    return plan


def dlio_plan(args, scratch, size, ranks, shape):
    """v3.0 DLIO's own per-rank files and bytes (bench/dlio3_ckpt_sizes.py, run in its
    venv: DLIO's checkpointing object for each rank, nothing written)."""
    path = os.path.join(scratch, f"llama3_{size}-{ranks}.yaml")
    with open(path, "w") as f:
        f.write(llama_yaml(size, shape))
    out = subprocess.run([os.path.join(args.venv, "bin/python"),
                          os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                       "dlio3_ckpt_sizes.py"), path, "--world", str(ranks)],
                         capture_output=True, text=True, check=True, cwd=scratch).stdout
    return {int(r): files for r, files in json.loads(out).items()}


def flat(plan):
    return {f: n for files in plan.values() for f, n in files.items()}


def differences(a, b, names):
    for k in sorted(set(a) | set(b))[:20]:
        if a.get(k) != b.get(k):
            print(f"    {k!s:<56} {names[0]} {a.get(k)!s:>14} {names[1]} {b.get(k)!s:>14}")


def mode_checkpoint(args, scratch):
    """DLIO writes a checkpoint at the small shape; its files against iolab's plan and
    against DLIO's plan as bench/dlio3_ckpt_sizes.py computes it (which ckpt-plan uses
    where DLIO cannot run: 256-1,024 ranks)."""
    ok = True
    for size, (tp, pp, zero, ranks) in LLAMA.items():
        if args.models and size not in args.models.split(","):
            continue
        ck = os.path.join(scratch, f"ck-{size}")
        out = os.path.join(scratch, f"ck-out-{size}")
        os.makedirs(out, exist_ok=True)
        dlio_run(args, f"llama3_{size}", [f"++workload.checkpoint.checkpoint_folder={ck}",
                                          f"++workload.output.folder={out}"], out, np_=ranks)
        step = os.path.join(ck, sorted(os.listdir(ck))[0])
        dlio_files = {}
        for r, _, fs in os.walk(step):
            for f in fs:
                dlio_files[os.path.relpath(os.path.join(r, f), step)] = os.path.getsize(
                    os.path.join(r, f))
        iolab_files = flat(iolab_plan(size, ranks, SMALL_SHAPE))
        driver = flat(dlio_plan(args, scratch, size, ranks, SMALL_SHAPE))
        same = dlio_files == iolab_files == driver
        ok &= same
        print(f"llama3_{size} (tp {tp}, pp {pp}, ZeRO {zero}, {ranks} ranks, shape "
              f"{SMALL_SHAPE}): DLIO wrote {len(dlio_files)} files "
              f"{sum(dlio_files.values())} bytes, iolab's plan {len(iolab_files)} files "
              f"{sum(iolab_files.values())} bytes, DLIO's plan (driver) {len(driver)} files "
              f"{sum(driver.values())} bytes: "
              f"{'the same names and bytes' if same else 'DIFFERENT'}")
        if not same:
            differences(dlio_files, iolab_files, ("DLIO", "iolab"))
            differences(dlio_files, driver, ("DLIO", "driver"))
        shutil.rmtree(ck, ignore_errors=True)
    if not ok:
        raise SystemExit(1)


def mode_ckpt_plan(args, scratch):
    """v3.0's llama3 models at their real shape and parallelism: every rank's files and
    bytes in DLIO's own computation against `iolab checkpoint --plan`, on the closed
    submission's process count and (405b, 1t) on tp x pp ranks (dp 1)."""
    ok = True
    for size, (shape, closed) in FULL_SHAPE.items():
        if args.models and size not in args.models.split(","):
            continue
        tp, pp, zero, _ = LLAMA[size]
        for ranks in sorted({closed, tp * pp}):
            d, i = dlio_plan(args, scratch, size, ranks, shape), iolab_plan(size, ranks, shape)
            same = d == i
            ok &= same
            per_rank = sorted({sum(f.values()) for f in d.values()})
            print(f"llama3_{size} (tp {tp}, pp {pp}, dp {ranks // (tp * pp)}, ZeRO {zero}, "
                  f"{ranks} ranks): DLIO {sum(len(f) for f in d.values())} files "
                  f"{sum(sum(f.values()) for f in d.values())} bytes, iolab "
                  f"{sum(len(f) for f in i.values())} files "
                  f"{sum(sum(f.values()) for f in i.values())} bytes; bytes per rank "
                  f"{per_rank[0]}-{per_rank[-1]}: "
                  f"{'every rank the same names and bytes' if same else 'DIFFERENT'}",
                  flush=True)
            if not same:
                for r in sorted(set(d) | set(i)):
                    if d.get(r) != i.get(r):
                        print(f"  rank {r}:")
                        differences(d.get(r, {}), i.get(r, {}), ("DLIO", "iolab"))
                        break
    if not ok:
        raise SystemExit(1)


def traced_reads(trace_dir, ext):
    """Per file name, the (offset, length) of each logical read in the traces under
    trace_dir (`strace -f -y`): a pread64 by its offset; reads on one descriptor that
    continue where the last one ended (Python's buffered read of a row group: one large
    read and a piece) joined, at the position the last lseek set."""
    reads = {}
    pos = {}
    last = {}
    for name in os.listdir(trace_dir):
        pending = {}
        with open(os.path.join(trace_dir, name)) as f:
            for line in f:
                # A call another thread interrupted: "<unfinished ...>", later
                # "<... read resumed>": joined into one line.
                line = line.rstrip("\n")
                cut = re.match(r"^(\d+)\s+(.*) <unfinished \.\.\.>$", line)
                if cut:
                    pending[cut.group(1)] = cut.group(2)
                    continue
                back = re.match(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$", line)
                if back and back.group(1) in pending:
                    line = f"{back.group(1)} {pending.pop(back.group(1))}{back.group(2)}"
                m = re.match(r"^(?:\[pid\s+)?(\d+)\]?\s*(\w+)\((\d+)<([^>]*)>,\s*(.*)\)"
                             r"\s*=\s*(-?\d+)", line)
                if not m or not m.group(4).endswith(ext) or int(m.group(6)) < 0:
                    continue
                call, rest, ret = m.group(2), m.group(5), int(m.group(6))
                key = (name, m.group(1), m.group(3))
                got = reads.setdefault(os.path.basename(m.group(4)), [])
                if call == "lseek":
                    pos[key] = ret
                    last.pop(key, None)
                elif call == "pread64" and ret > 0:
                    got.append((int(rest.rsplit(",", 1)[1]), ret))
                elif call == "read" and ret > 0:
                    off = pos.get(key, 0)
                    if key in last and got and got[last[key]][0] + got[last[key]][1] == off:
                        i = last[key]
                        got[i] = (got[i][0], got[i][1] + ret)
                    else:
                        last[key] = len(got)
                        got.append((off, ret))
                    pos[key] = off + ret
    return {k: sorted(v) for k, v in reads.items()}


def same_ranges(dlio, iolab):
    """The same reads: the same starts, DLIO's at most 8 KiB longer (Python's buffered
    read rounds a large read up to its 8 KiB buffer)."""
    return len(dlio) == len(iolab) and all(
        a[0] == b[0] and b[1] <= a[1] < b[1] + 8192 for a, b in zip(dlio, iolab))


def mode_parquet_trace(args, scratch):
    dlio, iolab = small(args, "dlrm", compute=0.001)
    data = os.path.join(scratch, "dlrm")
    datagen(data, iolab)
    threads = ["++workload.reader.read_threads=1"]
    t1 = os.path.join(scratch, "trace-dlio")
    os.makedirs(t1)
    out = tempfile.mkdtemp(dir=scratch, prefix="dlio-out-")
    dlio_run(args, "dlrm_b200", [f"++workload.dataset.data_folder={data}",
                                 f"++workload.output.folder={out}"] + dlio + threads, out,
             np_=1, wrap=["strace", "-f", "-y", "-e", "trace=read,pread64,lseek",
                          "-o", os.path.join(t1, "t")])
    t2 = os.path.join(scratch, "trace-iolab")
    os.makedirs(t2)
    base.timed(["strace", "-f", "-y", "-e", "trace=read,pread64,lseek", "-o",
                os.path.join(t2, "t"), base.iolab_bin(), "train", "run", "--data-dir", data,
                "--no-store", "--quiet", "--read-threads", "1"] + iolab)
    a, b = traced_reads(t1, ".parquet"), traced_reads(t2, ".parquet")
    same = True
    for fname in sorted(set(a) | set(b)):
        ra, rb = a.get(fname, []), b.get(fname, [])
        ok = same_ranges(ra, rb)
        same &= ok
        print(f"  {fname}: DLIO {len(ra)} reads {sum(n for _, n in ra)} bytes, iolab "
              f"{len(rb)} reads {sum(n for _, n in rb)} bytes: "
              f"{'the same starts and lengths' if ok else 'DIFFERENT'}")
        print(f"    DLIO  {ra[:8]}\n    iolab {rb[:8]}")
    print(f"parquet byte ranges, dlrm_b200 ({args.files} files x "
          f"{args.samples_per_file or 20000} rows, iolab's files): "
          f"{'the same' if same else 'DIFFERENT'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["storage", "loader", "crossover", "checkpoint",
                                     "ckpt-plan", "parquet-trace"])
    ap.add_argument("--workload", default="dlrm",
                    choices=["unet3d", "retinanet", "dlrm", "flux", "resnet50"])
    ap.add_argument("--np", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--round-offset", type=int, default=0)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--samples-per-file", type=int, default=None)
    ap.add_argument("--record-length", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--row-group-size", type=int, default=None,
                    help="parquet: rows a row group (both tools)")
    ap.add_argument("--read-threads", type=int, default=None,
                    help="reader threads per rank (both tools; the config's otherwise)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--stall", default="50ms")
    ap.add_argument("--models", default=None, help="checkpoint: e.g. 8b,70b")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--venv", default="/work/peers/dlio3-venv/V")
    ap.add_argument("--dlio-configs", default="/work/peers/dlio3/dlio_benchmark/configs")
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="iolab-bench-train-dlio-")
    try:
        args.config_dir = write_configs(scratch, args)
        {"storage": mode_storage, "loader": mode_loader, "crossover": mode_crossover,
         "checkpoint": mode_checkpoint, "ckpt-plan": mode_ckpt_plan,
         "parquet-trace": mode_parquet_trace}[args.mode](args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
