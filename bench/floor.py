#!/usr/bin/env python3
"""iolab and its peer against the floor: a bare loop of the same system calls with no
measurement (bench/floor/, C), on the same target, interleaved.

For every case the floor, iolab and the peer (fio, mdtest) run REPEAT times each, the
order rotating every round, on the same target: one 1 GiB tmpfs file for psync (every
tool reads or writes that very file: iolab through --device, fio through --filename); for
io_uring one 1 GiB file of a fresh ext4 in RAM (a loop device over an image in --dir),
read buffered from the page cache: there io_uring completes a read inline, where on tmpfs
it hands every read to a kernel worker thread (iou-wrk) and the rates of one binary swing
by half between runs (uring32-tmpfs shows it); a tmpfs directory for metadata (each tool
makes, stats and removes its own tree there); nothing for null. Prints per tool the median rate, its share of the floor's
median rate (and the range of the per-round shares), and the CPU time per operation:
user + system time of the whole process (os.wait4, so io_uring's kernel workers and every
helper thread count), over the operations the tool reports. Nothing here is a test:
read the shares, not the absolute figures, and take timings only under
/work/tools/quiet.

Usage: bench/floor.py [--repeat N] [--runtime S] [--dir DIR] [--files N] [--np N]
                      [--baseline OLD_IOLAB] [CASE ...]
Cases: psync-read1 psync-read2 psync-write1 psync-write2 (4 KiB random, 1 or 2 threads;
the writes also run the floor writing iolab's default data, floor-data, and iolab writing
zeros, iolab-zeros),
uring1 uring32 uring128 (4 KiB random reads, page-cache hot, each I/O submitted as queued:
fio's and iolab's default), uring32-batch uring128-batch (the whole queue in one
submission), uring32-tmpfs (O_DIRECT on tmpfs, the issue's first measurement), meta
(create, stat, remove with mdtest's calls and paths), null. Default: all.
The goal share (issue #36) is each tool's share of the case's goal floor: for writes that is
floor-data, the bare loop writing the very bytes iolab writes (made per write as iolab's
data_gen.rs makes them: a 64 KiB base XOR a unique key per 512 bytes), since the issue asks what *measuring* costs, and writing data that no
target can shrink is iolab's work, not its measuring; the `fixed` column beside it is the
share of the fixed-buffer floor (one 4 KiB buffer, in L1), and iolab-zeros against that
column isolates the recording (iolab's loop writing one fixed buffer too). Reads, io_uring,
metadata and null have one floor: both columns would be the same, `fixed` stays empty.
Root is needed for the ext4 (mount); --keep leaves the data files and the ext4 for the next
call (each call otherwise makes them anew: keep the timed calls short).
Needs: a release build of iolab (IOLAB=path, else target/release/iolab), fio on PATH,
mdtest on PATH or MDTEST=path for meta (BENCH-NOTES.md says how to build it), cc and make
(the floors are built into FLOOR_BIN, default /tmp/iolab-floor-bin).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
FLOOR_SRC = os.path.join(ROOT, "bench", "floor")
FLOOR_BIN = os.environ.get("FLOOR_BIN") or "/tmp/iolab-floor-bin"
FILE_SIZE = 1 << 30
# iolab works in DIR/iolab-work/meta: the floor and mdtest get as deep a directory, so
# every tool's whole paths have as many components for the kernel to walk.
IOLAB_WORK = ("iolab-work", "meta")
MDTEST_ROWS = {"File creation": "create", "File stat": "stat", "File removal": "remove"}


def build_floors():
    os.makedirs(FLOOR_BIN, exist_ok=True)
    subprocess.run(["make", "-s", "-C", FLOOR_SRC, f"OUT={FLOOR_BIN}"], check=True)


def run(argv, env=None):
    """Runs argv; returns (stdout, CPU seconds of the whole process: user + system, with
    every thread and every child it waited for)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode()
        if p.returncode != 0:
            sys.exit(f"floor.py: {' '.join(argv)} failed ({p.returncode}):\n"
                     f"{stdout[-2000:]}{err.read().decode()[-2000:]}")
    return stdout, ru.ru_utime + ru.ru_stime


def make_data(path):
    """Random data, written once and then read or overwritten by every tool."""
    if os.path.exists(path) and os.path.getsize(path) == FILE_SIZE:
        return
    with open(path, "wb") as f:
        for _ in range(FILE_SIZE >> 20):
            f.write(os.urandom(1 << 20))


def mount_ext4(base, mnt):
    """A fresh ext4 on a loop device over an image in `base` (tmpfs): io_uring completes a
    read of a cached page of it inline, where on tmpfs it hands every read to a kernel
    worker thread. Left mounted with --keep, and reused."""
    if os.path.ismount(mnt):
        return
    img = os.path.join(base, "ext4.img")
    with open(img, "wb") as f:
        f.truncate(FILE_SIZE + (512 << 20))
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True)
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(["mount", "-o", "loop", img, mnt], check=True)


def unmount_ext4(base, mnt):
    if os.path.ismount(mnt):
        # A program's io_uring lets go of its files a moment after it exits.
        for _ in range(100):
            if subprocess.run(["umount", mnt], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
    img = os.path.join(base, "ext4.img")
    if os.path.exists(img):
        os.remove(img)


def floor_tool(binary, *args):
    def go(_ctx):
        out, cpu = run([os.path.join(FLOOR_BIN, binary), *args])
        got = {}
        for line in out.splitlines():
            r = json.loads(line)
            op = r["floor"].split("-")[-1] if r["floor"].startswith("meta") else "io"
            got[op] = (r["ops"], r["ops"] / r["secs"])
        return got, cpu
    return go


def iolab_tool(binary, *args, prefix=()):
    """`iolab ARGS` (under `PREFIX`: mpirun); meta's phases are told apart by their op."""
    def go(ctx):
        j = os.path.join(ctx["work"], "iolab.json")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        out, cpu = run([*prefix, binary, *args, "--no-store", "-Q", "--json", j], env)
        with open(j) as f:
            doc = json.load(f)
        got = {}
        for phase in doc["phases"]:
            for o in phase["ops"]:
                if o["ops"] == 0:
                    continue
                op = phase["params"].get("op", "io") if args[0] == "meta" else "io"
                ops, rate = got.get(op, (0, 0.0))
                got[op] = (ops + o["ops"], rate + o["iops"])
        return got, cpu
    return go


def fio_tool(*args):
    def go(ctx):
        out, cpu = run(["fio", "--output-format=json", "--group_reporting", "--name=floor",
                        f"--directory={ctx['work']}", *args])
        job = json.loads(out[out.index("{"):])["jobs"][0]
        side = job["read"] if job["read"]["total_ios"] > 0 else job["write"]
        return {"io": (side["total_ios"], side["iops"])}, cpu
    return go


def mdtest_tool(np, files):
    def go(ctx):
        d = os.path.join(ctx["tree"], "mdtest", *IOLAB_WORK)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        cmd = [ctx["mdtest"], "-n", str(files), "-u", "-F", "-C", "-T", "-r", "-a", "POSIX", "-d", d]
        if np > 1:
            cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np), *cmd]
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        out, cpu = run(cmd, env)
        got = {}
        in_rates = False
        for line in out.splitlines():
            if line.startswith("SUMMARY rate"):
                in_rates = True
            elif line.startswith("SUMMARY time"):
                in_rates = False
            for row, op in MDTEST_ROWS.items():
                if in_rates and line.strip().startswith(row):
                    got[op] = (files * np, float(line.split()[2]))
        shutil.rmtree(d, ignore_errors=True)
        return got, cpu
    return go


def uring_tools(a, iolab, path, q, batch, direct):
    rt = str(a.runtime)
    return [("floor", floor_tool("uring", "-f", path, "-q", str(q), "-B", str(batch), "-s", rt, *(["-d"] if direct else []))),
            *iolab(IOLAB, "run", "--device", path, "--backend", "uring", "-q", str(q), "--submit-batch", str(batch),
                   *(["--direct"] if direct else []), "--rw", "randread", "-b", "4KiB", "--runtime", f"{rt}s",
                   "--cache", "keep"),
            ("fio", fio_tool("--ioengine=io_uring", "--registerfiles", "--fixedbufs", f"--direct={int(direct)}",
                             f"--iodepth={q}", f"--iodepth_batch_submit={batch}", "--iodepth_batch_complete_min=1",
                             "--rw=randread", "--bs=4k", f"--filename={path}", f"--size={FILE_SIZE}",
                             "--invalidate=0", "--time_based", f"--runtime={rt}"))]


def cases(a, data, hot, tree):
    rt = str(a.runtime)
    iolab = lambda b, *x: [(n, iolab_tool(b, *x)) for n, b in (("iolab", b), ("baseline", a.baseline)) if b]
    for rw in ("read", "write"):
        for t in (1, 2):
            fio_rw = ["--rw=rand" + rw, "--bs=4k", f"--filename={data}", f"--size={FILE_SIZE}",
                      f"--numjobs={t}", "--invalidate=0", "--fallocate=none", "--time_based",
                      f"--runtime={rt}"]
            yield (f"psync-{rw}{t}", f"4 KiB random {rw}s, psync, tmpfs, {t} thread{'s' * (t > 1)}",
                   [("floor", floor_tool("psync", "-f", data, "-t", str(t), "-s", rt, *(["-w"] if rw == "write" else []))),
                    # The floor again, writing iolab's default data (made per write as iolab's).
                    *([("floor-data", floor_tool("psync", "-f", data, "-t", str(t), "-s", rt, "-w", "-D"))]
                      if rw == "write" else []),
                    *iolab(IOLAB, "run", "--device", data, "--allow-destroy", "--backend", "psync",
                           "--rw", "rand" + rw, "-b", "4KiB", "-t", str(t), "--runtime", f"{rt}s",
                           "--cache", "keep"),
                    # iolab writing one fixed buffer too: against the fixed-buffer floor,
                    # what recording alone costs.
                    *([("iolab-zeros", iolab_tool(IOLAB, "run", "--device", data, "--allow-destroy",
                                                  "--backend", "psync", "--rw", "randwrite", "-b", "4KiB",
                                                  "-t", str(t), "--runtime", f"{rt}s", "--cache", "keep",
                                                  "--pattern", "zeros"))]
                      if rw == "write" else []),
                    ("fio", fio_tool("--ioengine=psync", *fio_rw))])
    for q in (1, 32, 128):
        for batch in ((1, q) if q > 1 else (1,)):
            name = f"uring{q}" + ("-batch" if batch > 1 else "")
            how = "each I/O submitted as queued" if batch == 1 else "the whole queue per submission"
            yield (name, f"4 KiB random reads, io_uring QD {q}, page-cache hot ext4 in RAM, {how}",
                   uring_tools(a, iolab, hot, q, batch, direct=False))
    yield ("uring32-tmpfs", "4 KiB random reads, io_uring QD 32, O_DIRECT, tmpfs (each read goes through an "
                            "io_uring kernel worker: noisy)", uring_tools(a, iolab, data, 32, 1, direct=True))
    mpi = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(a.np)] if a.np > 1 else []
    yield ("meta", f"create, stat, remove {a.files} empty files per process, {a.np} process(es), "
                   "whole paths (mdtest -u -F -C -T -r), tmpfs",
           [("floor", floor_tool("meta", "-d", os.path.join(tree, "floor", *IOLAB_WORK), "-n", str(a.files),
                                 "-p", str(a.np))),
            *[(n, iolab_tool(b, "meta", "--dir", os.path.join(tree, "iolab"), "-n", str(a.files),
                             "--ops", "create,stat,remove", prefix=mpi))
              for n, b in (("iolab", IOLAB), ("baseline", a.baseline)) if b],
            ("mdtest", mdtest_tool(a.np, a.files))])
    yield ("null", "null backend, 4 KiB random reads, 1 thread (floor: the null backend's loop bare)",
           [("floor", floor_tool("null", "-s", rt)),
            *iolab(IOLAB, "run", "--backend", "null", "--rw", "randread", "-b", "4KiB", "--size", "1GiB",
                   "--runtime", f"{rt}s"),
            ("fio", fio_tool("--ioengine=null", "--rw=randread", "--bs=4k", "--size=1g", "--time_based",
                             f"--runtime={rt}"))])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=4, help="seconds per time-based run")
    ap.add_argument("--dir", default="/dev/shm/iolab-floor", help="a directory on tmpfs")
    ap.add_argument("--files", type=int, default=200000, help="files per process (meta)")
    ap.add_argument("--np", type=int, default=1, help="processes (meta): MPI ranks for mdtest and iolab")
    ap.add_argument("--baseline", help="a second iolab build, run in the same rounds")
    ap.add_argument("--keep", action="store_true", help="keep the data file for the next call")
    ap.add_argument("case", nargs="*")
    a = ap.parse_intermixed_args()
    if not os.path.exists(IOLAB):
        sys.exit(f"floor.py: no iolab at {IOLAB} (cargo build --release --locked -p iolab, or IOLAB=path)")
    build_floors()
    os.makedirs(a.dir, exist_ok=True)
    data = os.path.join(a.dir, "data")
    tree = os.path.join(a.dir, "tree")
    work = tempfile.mkdtemp(prefix="work-", dir=a.dir)
    ctx = {"work": work, "tree": tree, "mdtest": os.environ.get("MDTEST") or shutil.which("mdtest")}
    hot_dir = os.path.join(a.dir, "ext4")
    hot = os.path.join(hot_dir, "data")
    chosen = [c for c in cases(a, data, hot, tree) if not a.case or c[0] in a.case]
    if not chosen:
        sys.exit(f"floor.py: no such case: {' '.join(a.case)}")
    if any(c[0] == "meta" for c in chosen) and not ctx["mdtest"]:
        sys.exit("floor.py: no mdtest on PATH (MDTEST=path; BENCH-NOTES.md says how to build it)")
    if any(c[0].startswith("psync") or c[0].endswith("tmpfs") for c in chosen):
        make_data(data)
    if any(c[0].startswith("uring") and not c[0].endswith("tmpfs") for c in chosen):
        mount_ext4(a.dir, hot_dir)
        make_data(hot)
        # In the page cache before the first run, as every run leaves it: read twice, so
        # its pages are on the active list already (the first tool would otherwise pay
        # for moving them there: folio_mark_accessed's LRU work, some 3 % of a profile).
        for _ in range(2):
            with open(hot, "rb") as f:
                while f.read(1 << 20):
                    pass
    os.makedirs(os.path.join(tree, "iolab"), exist_ok=True)
    os.makedirs(os.path.join(tree, "floor", IOLAB_WORK[0]), exist_ok=True)
    results = {}
    try:
        for r in range(a.repeat):
            for name, _, tools in chosen:
                k = r % len(tools)
                for tool, go in tools[k:] + tools[:k]:
                    got, cpu = go(ctx)
                    results.setdefault(name, {}).setdefault(tool, []).append((got, cpu))
                    rates = ", ".join(f"{op} {rate:,.0f}/s" for op, (_, rate) in got.items())
                    ops = sum(n for n, _ in got.values())
                    print(f"round {r + 1} {name} {tool}: {rates}, {cpu * 1e6 / max(ops, 1):.2f} µs CPU per op",
                          file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(tree, ignore_errors=True)
        if not a.keep:
            if os.path.exists(data):
                os.remove(data)
            unmount_ext4(a.dir, hot_dir)
    report(chosen, results, a)


def report(chosen, results, a):
    print(f"floor.py: {a.repeat} rounds, {a.runtime} s per time-based run; share = median rate / the goal "
          "floor's median rate (in brackets: the lowest and highest per-round share); fixed = the same against "
          "the fixed-buffer floor (writes); CPU = process user+sys per operation")
    print(f"{'case':<16}{'op':<8}{'tool':<12}{'rate/s':>14}{'share':>8}{'(rounds)':>15}"
          f"{'fixed':>8}{'(rounds)':>15}{'CPU µs/op':>11}")
    for name, what, tools in chosen:
        runs = results[name]
        # Writes: the goal floor writes iolab's bytes (floor-data); else the one floor.
        goal = "floor-data" if "floor-data" in runs else "floor"
        print(f"# {name}: {what} (goal floor: {goal})")
        ops = list(runs["floor"][0][0].keys())
        for op in ops:
            def shares(tool, against):
                base = [g[op][1] for g, _ in runs[against]]
                rates = [g[op][1] for g, _ in runs[tool] if op in g]
                per_round = [x / f for x, f in zip(rates, base)]
                med = statistics.median(rates) / statistics.median(base)
                spread = f"({min(per_round):.3f}-{max(per_round):.3f})" if tool != against else ""
                return f"{med:>8.3f}{spread:>15}"
            for tool, _ in tools:
                rates = [g[op][1] for g, _ in runs[tool] if op in g]
                if not rates:
                    continue
                # CPU per operation over all the run's operations (meta: its three phases).
                cpu = statistics.median(c * 1e6 / max(sum(n for n, _ in g.values()), 1) for g, c in runs[tool])
                fixed = shares(tool, "floor") if goal != "floor" else f"{'':>23}"
                print(f"{name:<16}{op:<8}{tool:<12}{statistics.median(rates):>14,.0f}{shares(tool, goal)}"
                      f"{fixed}{cpu:>11.3f}")


if __name__ == "__main__":
    main()
