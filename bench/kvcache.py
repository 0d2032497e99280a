#!/usr/bin/env python3
"""iolab kvcache against kv-cache.py (MLPerf Storage v3.0's KV cache reference).

Three modes, both tools on the same target with the same model, users, tiers and seed:

  trace  each tool once under `strace -f -y`: per cache file, its size, the bytes written
         and read, the write and read system call sizes; checks that every file of both is
         numpy's 128-byte header + tokens x bytes-per-token, that a whole-entry read reads
         the file (kv-cache.py: plus its 4 KiB header probe) and prints both tables.
  time   (default) TRIALS runs of each tool, interleaved (which goes first alternates),
         and prints each tool's median and CV of the scored figures (wall-clock and
         storage tokens/s, storage read/write GiB/s, read/write device p95), its CPU
         per generated token split into CPU per GiB moved x GiB moved per token, and the
         iolab/kv-cache.py ratios; before each trial pair, the kernel's own CPU per GiB
         written, read and removed on the target by a plain loop (--floor-gib), the floor
         a tool making the same system calls cannot go under (medians). Timing: run it on a quiet machine.
  storage  `time` where storage decides (default target faultfs:10ms), then the issue's
         check: tokens/s, bytes read from the storage tier and the storage read and
         write device p95, iolab's median within +-10 % of kv-cache.py's.

--fuse-trace (faultfs targets) keeps the mount's trace of every FUSE read and write and
prints, per tool, how its requests queued at the mount (requests/s, ms per request,
requests in the system, whole-entry operations at the device, the most one thread had in
flight) and its reads' sizes and spans per MiB (bench/fusetrace.py).

iolab runs with `--join-window 2s`: kv-cache.py counts what ends while it joins each of
its worker threads in turn for up to 2 s after --duration, and iolab does the same.

Targets (--target): DIR (default: --dir itself, e.g. the virtio disk); tmpfs (a tmpfs of
--tmpfs-gib mounted under --dir for the run: no device, what varies is the tools);
faultfs:STALL (an iolab-faultfs FUSE mount over such a tmpfs, every FUSE read and write
stalled STALL, files opened FOPEN_DIRECT_IO so no page cache helps either tool: a device
of fixed time per request of at most 1 MiB, served by two FUSE threads).

Usage: bench/kvcache.py [trace|time|storage] [--model tiny-1b] [--users 4]
       [--duration 10] [--cpu-gib 0] [--allocs 0] [--trials 5] [--dir /tmp/kvbench]
       [--target DIR|tmpfs|faultfs:STALL]
Needs: the reference in a venv outside the repository (KVREF=path of kv_cache_benchmark,
KVPY=its python; default /work/peers/kvcache/...), strace for `trace`, a release build
of iolab (IOLAB=path picks another). Setting the reference up (numpy and pyyaml only):
  git -C mlc-storage archive 284ce72 kv_cache_benchmark | tar x -C /work/peers/kvcache
  python3 -m venv /work/peers/kvcache/venv
  /work/peers/kvcache/venv/bin/pip install numpy pyyaml
(russfellows/mlc-storage carries mlcommons/storage's history; 284ce72 is 2026-04-24.)
"""

import argparse
import contextlib
import collections
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusetrace  # noqa: E402  bench/fusetrace.py
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
KVREF = os.environ.get("KVREF", "/work/peers/kvcache/kv_cache_benchmark")
KVPY = os.environ.get("KVPY", "/work/peers/kvcache/venv/bin/python")
BYTES_PER_TOKEN = {"tiny-1b": 24576, "mistral-7b": 131072, "llama2-7b": 524288,
                   "llama3.1-8b": 131072, "llama3.1-70b-instruct": 327680}


def reference_cmd(a, cache_dir, out):
    return [KVPY, "kv-cache.py", "--config", "config.yaml", "--model", a.model,
            "--num-users", str(a.users), "--duration", str(a.duration), "--gpu-mem-gb", "0",
            "--cpu-mem-gb", str(a.cpu_gib), "--max-concurrent-allocs", str(a.allocs),
            "--generation-mode", "none", "--seed", str(a.seed), "--cache-dir", cache_dir,
            "--output", out]


def iolab_cmd(a, cache_dir, out):
    return [IOLAB, "kvcache", "--model", a.model, "--users", str(a.users), "--duration",
            f"{a.duration}s", "--cpu-memory", f"{a.cpu_gib}GiB", "--max-concurrent-allocs",
            str(a.allocs), "--generation-mode", "none", "--seed", str(a.seed), "--dir",
            cache_dir, "--no-store", "--quiet", "--json", out, "--join-window", "2s",
            *a.iolab_arg]


def run(cmd, cwd=None, prefix=()):
    """Runs cmd; returns the CPU seconds its process tree used (user + system, every
    thread and waited-for descendant: RUSAGE_CHILDREN)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(list(prefix) + cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def self_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def floor(where, gib=2, entry=64 << 20, piece=1 << 20):
    """The kernel's own CPU seconds per GiB on `where`, as this process spends it with one
    reused `piece`-byte buffer and nothing else: `gib` GiB of `entry`-byte files written
    (fsynced), read back whole after fadvise DONTNEED (as both tools read an entry),
    then removed. What a tool adding nothing to those system calls would spend:
    {"write", "read", "remove"}."""
    d = os.path.join(where, "floor")
    os.makedirs(d, exist_ok=True)
    buf = bytearray(os.urandom(piece))
    names = [os.path.join(d, f"{i}.npy") for i in range(gib * (1 << 30) // entry)]
    took = {}
    t = self_cpu()
    for n in names:
        fd = os.open(n, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for off in range(0, entry, piece):
            os.pwrite(fd, buf, off)
        os.fsync(fd)
        os.close(fd)
    took["write"], t = self_cpu() - t, self_cpu()
    for n in names:
        fd = os.open(n, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.readv(fd, [buf]):
            pass
        os.close(fd)
    took["read"], t = self_cpu() - t, self_cpu()
    for n in names:
        os.unlink(n)
    took["remove"] = self_cpu() - t
    os.rmdir(d)
    moved = len(names) * entry / (1 << 30)
    return {k: v / moved for k, v in took.items()}


CALL = re.compile(r'^(\d+)\s+(\w+)\((\d+)<([^>]*\.npy)>')
RESUMED = re.compile(r'^(\d+)\s+<\.\.\. (\w+) resumed>')
RETURN = re.compile(r'\)\s+=\s+(-?\d+)')


def calls(strace_out):
    """(call, file, returned) of every system call on a .npy file, threads' unfinished
    calls joined with their resumption."""
    pending = {}
    for line in open(strace_out):
        m = CALL.match(line)
        if m:
            pid, call, path = m.group(1), m.group(2), os.path.basename(m.group(4))
            if line.rstrip().endswith("<unfinished ...>"):
                pending[pid] = (call, path)
                continue
            r = RETURN.search(line)
            if r:
                yield call, path, int(r.group(1))
            continue
        m = RESUMED.match(line)
        if m and m.group(1) in pending:
            call, path = pending.pop(m.group(1))
            r = RETURN.search(line)
            if r:
                yield call, path, int(r.group(1))


def per_file(strace_out):
    """{file: {"written", "read", "writes": Counter, "reads": Counter, "opens_read"}}."""
    files = collections.defaultdict(lambda: {"written": 0, "read": 0, "opens_read": 0,
                                             "writes": collections.Counter(),
                                             "reads": collections.Counter()})
    for call, path, ret in calls(strace_out):
        f = files[path]
        if call == "fadvise64":
            f["opens_read"] += 1
        elif call in ("write", "pwrite64") and ret > 0:
            f["written"] += ret
            f["writes"][ret] += 1
        elif call in ("read", "pread64") and ret > 0:
            f["read"] += ret
            f["reads"][ret] += 1
    return files


def trace(a):
    bpt = BYTES_PER_TOKEN[a.model]
    results = {}
    for tool in ("kv-cache.py", "iolab"):
        d = os.path.join(a.dir, "ref" if tool == "kv-cache.py" else "iolab")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        out = os.path.join(a.dir, f"{tool}.json")
        st = os.path.join(a.dir, f"{tool}.strace")
        prefix = ["strace", "-f", "-y", "-o", st, "-e",
                  "trace=openat,write,pwrite64,read,pread64,fsync,fallocate,fadvise64"]
        if tool == "iolab":
            run(iolab_cmd(a, d, out), prefix=prefix)
        else:
            run(reference_cmd(a, d, out), cwd=KVREF, prefix=prefix)
        results[tool] = per_file(st)
    for tool, files in results.items():
        sizes = [f["written"] for f in files.values() if f["written"]]
        bad = [s for s in sizes if (s - 128) % bpt]
        reads = [f for f in files.values() if f["opens_read"] and f["written"]]
        extra = collections.Counter((f["read"] - f["opens_read"] * f["written"]) // f["opens_read"]
                                    for f in reads)
        wsz = collections.Counter()
        rsz = collections.Counter()
        for f in files.values():
            wsz.update(f["writes"])
            rsz.update(f["reads"])
        print(f"{tool}: {len(sizes)} entries written, {sum(sizes)} bytes; "
              f"{sum(f['opens_read'] for f in files.values())} whole-entry reads, "
              f"{sum(f['read'] for f in files.values())} bytes")
        print(f"  every file 128 + tokens x {bpt} bytes: {'yes' if not bad else bad[:5]}")
        print(f"  tokens per entry: {sorted((s - 128) // bpt for s in sizes)[:12]} ...")
        print(f"  bytes read per whole-entry read beyond the file size: {dict(extra)}")
        print(f"  write sizes (bytes: calls): {dict(wsz.most_common(6))}")
        print(f"  read sizes (bytes: calls): {dict(rsz.most_common(6))}")


def figures_of(tool, out):
    j = json.load(open(out))
    if tool == "iolab":
        f = j["spec"]["kvcache"][0]["figures"]
        secs = f["duration"] / 1e9
        gib = 1024 ** 3
        return {"wall tokens/s": f["tokens_generated"] / secs,
                "storage tokens/s": f["tokens_generated"] / (f["storage_time"] / 1e9)
                if f["storage_time"] else 0.0,
                "read GiB/s": f["storage"]["bytes_read"] / gib / secs,
                "write GiB/s": f["storage"]["bytes_written"] / gib / secs,
                "read device p95 ms": f["storage"]["read_device"]["p95"] / 1e6,
                "write device p95 ms": f["storage"]["write_device"]["p95"] / 1e6,
                "storage read GiB": f["storage"]["bytes_read"] / gib,
                "decode GiB": f["decode_bytes_read"] / gib,
                # iolab's own, beside it (no figure of the reference's to compare).
                "decode steps GiB": f["decode_step_bytes_read"] / gib,
                "written GiB": f["storage"]["bytes_written"] / gib,
                "tokens": f["tokens_generated"]}
    s = j["summary"]
    c = s["cache_stats"]
    return {"wall tokens/s": s["avg_throughput_tokens_per_sec"],
            "storage tokens/s": s["storage_throughput_tokens_per_sec"],
            "read GiB/s": c["tier_storage_read_bandwidth_gbps"],
            "write GiB/s": c["tier_storage_write_bandwidth_gbps"],
            "read device p95 ms": c["storage_read_device_p95_ms"],
            "write device p95 ms": c["storage_write_device_p95_ms"],
            "storage read GiB": c["tier_storage_kv_bytes_read_gb"],
            # Its decode bytes read: every access_cache read is a decode-phase read
            # (its system prompt lookups, the only others, never find an entry), on any
            # tier; total_read_gb adds them up (demotions' reads are not counted).
            "decode GiB": c["total_read_gb"],
            "written GiB": c["tier_storage_kv_bytes_written_gb"],
            "tokens": s["total_tokens"]}


@contextlib.contextmanager
def tmpfs(a):
    """A tmpfs of --tmpfs-gib under --dir, for the run."""
    m = os.path.join(a.dir, "tmpfs")
    os.makedirs(m, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={a.tmpfs_gib}g", "iolab-kvbench", m],
                   check=True)
    try:
        yield m
    finally:
        subprocess.run(["umount", m], check=False)


@contextlib.contextmanager
def target(a):
    """The directory both tools keep their storage tier in, for the whole run."""
    if a.target in (None, "dir"):
        yield a.dir
    elif a.target == "tmpfs":
        with tmpfs(a) as m:
            yield m
    elif a.target.startswith("faultfs:"):
        import dlio  # bench/dlio.py: the iolab-faultfs mount
        stall = a.target.split(":", 1)[1]
        dlio.faultfs_bin = lambda: os.environ.get(
            "FAULTFS", os.path.join(os.path.dirname(IOLAB), "iolab-faultfs"))
        # Backed by a tmpfs: the stall is the device's only time (its fsync is free,
        # not the virtio disk's).
        with tmpfs(a) as backing:
            trace = open(os.path.join(a.dir, "faultfs.trace"), "w") if a.fuse_trace else None
            fs = dlio.FaultMount(backing, os.path.join(a.dir, "mnt"),
                                 [f"read:stall={stall}", f"write:stall={stall}"], trace)
            a.trace_file = trace and trace.name
            try:
                yield fs.mount
            finally:
                fs.close()
                if trace:
                    trace.close()
    elif os.path.isdir(a.target):
        yield a.target
    else:
        raise SystemExit(f"--target {a.target}: not a directory, tmpfs or faultfs:STALL")


def timed(a):
    with target(a) as where:
        got = trials(a, where)
    return compare(a, got)


def trials(a, where):
    got = {"kv-cache.py": [], "iolab": []}
    fault = (a.target or "").startswith("faultfs:")
    floors = []
    for t in range(a.trials):
        if a.floor_gib and not fault:
            floors.append(floor(where, a.floor_gib))
        order = ["kv-cache.py", "iolab"] if t % 2 == 0 else ["iolab", "kv-cache.py"]
        for tool in order:
            d = os.path.join(where, "cache")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            out = os.path.join(a.dir, f"{tool}-{t}.json")
            traced = os.path.getsize(a.trace_file) if getattr(a, "trace_file", None) else 0
            if tool == "iolab":
                cpu = run(iolab_cmd(a, d, out))
            else:
                cpu = run(reference_cmd(a, d, out), cwd=KVREF)
            if getattr(a, "trace_file", None):
                a.fuse.setdefault(tool, []).append(fuse_of(a, traced))
            f = figures_of(tool, out)
            moved = f["storage read GiB"] + f.pop("written GiB")
            tokens = max(f.pop("tokens"), 1)
            # CPU per token = CPU per GiB moved x GiB moved per token (docs/figures.md).
            f["CPU ms per token"] = 1000 * cpu / tokens
            f["CPU s per GiB moved"] = cpu / moved if moved else float("nan")
            f["MiB moved per token"] = 1024 * moved / tokens
            f["written share"] = (moved - f["storage read GiB"]) / moved if moved else 0.0
            got[tool].append(f)
            shutil.rmtree(d, ignore_errors=True)
    # The kernel's floor, measured before each trial pair as the machine drifts: medians.
    a.floor = {k: statistics.median(f[k] for f in floors) for k in floors[0]} if floors else None
    return got


def compare(a, got):
    print(f"target: {a.target or a.dir}; {a.model}, {a.users} users, {a.duration} s trials, "
          f"{a.trials} each, interleaved")
    names = [n for n in got["iolab"][0] if n in got["kv-cache.py"][0]]
    print(f"{'figure':<22} {'kv-cache.py':>12} {'CV':>7} {'iolab':>12} {'CV':>7} "
          f"{'ratio':>7} {'CV ratio':>8}")
    cv_ratios = {}
    for n in names:
        row = []
        for tool in ("kv-cache.py", "iolab"):
            v = [f[n] for f in got[tool]]
            m = statistics.median(v)
            cv = statistics.stdev(v) / statistics.mean(v) if len(v) > 1 and statistics.mean(v) else 0
            row += [m, cv]
        ratio = row[2] / row[0] if row[0] else float("nan")
        cv_ratio = row[3] / row[1] if row[1] else float("nan")
        cv_ratios[n] = cv_ratio
        print(f"{n:<22} {row[0]:>12.3f} {100 * row[1]:>6.1f}% {row[2]:>12.3f} "
              f"{100 * row[3]:>6.1f}% {ratio:>7.3f} {cv_ratio:>8.3f}")
    # The targets: iolab's CV of each scored figure at most a fifth of the
    # reference's, and its CPU seconds per token at most a fifth.
    med = {t: {n: statistics.median(f[n] for f in got[t]) for n in names} for t in got}
    cpu = {t: med[t]["CPU ms per token"] for t in got}
    cpu_ratio = cpu["iolab"] / cpu["kv-cache.py"] if cpu["kv-cache.py"] else float("nan")
    print(f"\nCPU per token: iolab/kv-cache.py = {cpu_ratio:.3f} "
          f"({'meets' if cpu_ratio <= 0.2 else 'misses'} the target <= 0.2)")
    per_gib = [med[t]["CPU s per GiB moved"] for t in ("iolab", "kv-cache.py")]
    per_token = [med[t]["MiB moved per token"] for t in ("iolab", "kv-cache.py")]
    print(f"  = CPU per GiB moved {per_gib[0] / per_gib[1]:.3f} x GiB moved per token "
          f"{per_token[0] / per_token[1]:.3f} (ratios of the medians)")
    if getattr(a, "floor", None):
        fl = a.floor
        w = med["iolab"]["written share"]
        at_floor = w * (fl["write"] + fl["remove"]) + (1 - w) * fl["read"]
        print(f"  kernel floor on this target (1 MiB pieces, one buffer): write {fl['write']:.3f}, "
              f"read {fl['read']:.3f}, remove {fl['remove']:.3f} s/GiB; at iolab's mix "
              f"({100 * w:.1f} % written) {at_floor:.3f} s/GiB: iolab spends "
              f"{med['iolab']['CPU s per GiB moved'] / at_floor:.2f} x, kv-cache.py "
              f"{med['kv-cache.py']['CPU s per GiB moved'] / at_floor:.2f} x")
    scored = [n for n in names if n not in ("CPU ms per token", "CPU s per GiB moved",
                                            "MiB moved per token", "written share",
                                            "storage read GiB")]
    missed = [n for n in scored if not cv_ratios[n] <= 0.2]
    print(f"CV ratio <= 0.2 on {len(scored) - len(missed)} of {len(scored)} scored figures"
          + (f"; missed: {', '.join(missed)}" if missed else ""))
    return got


# Where storage decides, the figures: iolab's median within +-10 % of the
# reference's: tokens/s, decode bytes read (both tools' stored figure: every
# decode-phase read of any tier, docs/figures.md) and the device p95s. iolab's decode
# steps alone are printed beside them.
STORAGE_FIGURES = ("wall tokens/s", "decode GiB", "read device p95 ms",
                   "write device p95 ms")


def fuse_of(a, offset):
    """The FUSE trace's figures of the run whose lines start at `offset`."""
    with open(a.trace_file) as f:
        f.seek(offset)
        lines = f.readlines()
    stall = float(a.target.split(":", 1)[1].removesuffix("ms")) / 1000
    return fusetrace.figures(lines, stall, a.duration)


def fuse_table(a):
    """Medians of each tool's FUSE figures (--fuse-trace) and their ratio."""
    print(f"\nwhat reached the mount (faultfs trace, first {a.duration} s of each run; "
          f"medians of {a.trials}):")
    print(f"{'figure':<36} {'kv-cache.py':>12} {'iolab':>12} {'ratio':>7}")
    for n in a.fuse["iolab"][0]:
        m = [statistics.median(f[n] for f in a.fuse[t]) for t in ("kv-cache.py", "iolab")]
        r = m[1] / m[0] if m[0] else float("nan")
        print(f"{n:<36} {m[0]:>12.4f} {m[1]:>12.4f} {r:>7.3f}")


def storage(a):
    a.target = a.target or "faultfs:10ms"
    got = timed(a)
    print()
    ok = 0
    for n in STORAGE_FIGURES:
        m = {t: statistics.median(f[n] for f in got[t]) for t in got}
        r = m["iolab"] / m["kv-cache.py"] if m["kv-cache.py"] else float("nan")
        inside = abs(r - 1) <= 0.10
        ok += inside
        print(f"{n:<22} kv-cache.py {m['kv-cache.py']:>10.3f}  iolab {m['iolab']:>10.3f}  "
              f"ratio {r:.3f} {'within' if inside else 'OUTSIDE'} +-10 %")
    dec = statistics.median(f["decode steps GiB"] for f in got["iolab"])
    print(f"(iolab's decode_step_bytes_read, the decode steps alone: {dec:.3f} GiB)")
    print(f"within +-10 % on {ok} of {len(STORAGE_FIGURES)}")
    if a.fuse:
        fuse_table(a)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", nargs="?", default="time", choices=["time", "trace", "storage"])
    p.add_argument("--model", default="tiny-1b", choices=sorted(BYTES_PER_TOKEN))
    p.add_argument("--users", type=int, default=4)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--cpu-gib", type=int, default=0)
    p.add_argument("--allocs", type=int, default=0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--dir", default=None)
    p.add_argument("--target", default=None, help="DIR, tmpfs or faultfs:STALL (default: --dir)")
    p.add_argument("--tmpfs-gib", type=int, default=8)
    p.add_argument("--fuse-trace", action="store_true",
                   help="faultfs targets: trace every FUSE read and write (bench/fusetrace.py) "
                        "and print, per tool, how its requests queued and the reads' sizes")
    p.add_argument("--iolab-arg", action="append", default=[],
                   help="one more argument for iolab kvcache (repeatable), e.g. "
                        "--iolab-arg=--direct on a disk: the reference drops each file's "
                        "cached pages before reading it, so both read the device")
    p.add_argument("--floor-gib", type=int, default=2,
                   help="GiB written, read and removed before each trial pair to measure the "
                        "kernel's CPU per GiB on the target (0: skip; never on faultfs)")
    a = p.parse_args()
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=ROOT, check=True)
    a.dir = a.dir or tempfile.mkdtemp(prefix="iolab-kvcache-bench-", dir="/tmp")
    a.fuse = {}
    os.makedirs(a.dir, exist_ok=True)
    {"trace": trace, "time": timed, "storage": storage}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
