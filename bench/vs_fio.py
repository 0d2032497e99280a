#!/usr/bin/env python3
"""iolab against fio on the same workloads, side by side in one run.

Each case runs fio and iolab back to back, alternating which goes first, REPEAT times,
and prints the median of each tool and the iolab/fio ratio. Figures are IOPS (or MiB/s
for 1 MiB cases), mean latency, and CPU time per I/O. Nothing here is a test: timings
on a shared 2-vCPU VM are noisy, so read the ratios, not the absolute numbers.

With IOR on PATH (it is not a Debian package: build https://github.com/hpc/ior outside
this repository), the sequential cases also run `ior -a POSIX --posix.odirect` with one
process on the same file size, interleaved with the other two, and print iolab/IOR.

Usage: bench/vs_fio.py [--dir DIR] [--tmpfs DIR] [--repeat N] [--runtime S] [CASE ...]
Cases: hot1 hot2 uring32 seqwrite seqread null  (default: all)
Needs: fio on PATH (Debian's package), a release build of iolab (built if missing).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# IOLAB=path picks another build (a private CARGO_TARGET_DIR, or a build to compare with).
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def fio(args, workdir):
    """Runs fio with JSON output; returns (iops, MiB/s, mean latency us, cpu us per I/O)."""
    out = sh(["fio", "--output-format=json", "--group_reporting", f"--directory={workdir}", *args])
    job = json.loads(out.stdout)["jobs"][0]
    side = job["read"] if job["read"]["io_bytes"] > 0 else job["write"]
    ios = side["total_ios"]
    secs = job["job_runtime"] / 1000.0
    # fio's usr_cpu/sys_cpu are percentages of the job's runtime per job; with
    # group_reporting they are summed over jobs.
    cpu_secs = (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * secs
    return side["iops"], side["bw_bytes"] / 2**20, side["lat_ns"]["mean"] / 1000.0, cpu_secs * 1e6 / max(ios, 1)


def iolab(args, workdir):
    """Runs iolab with --json; returns the same four figures."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh([IOLAB, "run", "--dir", workdir, "--no-store", "--quiet", "--json", f.name, *args])
        run = json.load(open(f.name))
    phase = run["phases"][0]
    op = [o for o in phase["ops"] if o["op"] in ("read", "write")][0]
    cpu = phase["cpu"]
    cpu_secs = (cpu["user"] + cpu["system"]) / 1e9
    return op["iops"], op["bandwidth"] / 2**20, op["latency"]["mean"] / 1000.0, cpu_secs * 1e6 / max(op["ops"], 1)


def ior(mode, workdir):
    """Runs IOR (one process, POSIX, O_DIRECT, 1 MiB transfers, one 2 GiB file) for "w" or
    "r"; returns (None, MiB/s, None, None) from its "Max Write/Read" line. The file stays for
    the read case."""
    path = os.path.join(workdir, "ior.dat")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = sh(["ior", "-a", "POSIX", "--posix.odirect", "-t", "1m", "-b", "2g", f"-{mode}", "-k", "-o", path],
             env=env).stdout
    key = "write" if mode == "w" else "read"
    line = [x for x in out.splitlines() if x.split()[:1] == [key]][-1]
    return None, float(line.split()[1]), None, None


def cases(a):
    rt = str(a.runtime)
    hot = dict(fio=["--name=hot", "--ioengine=psync", "--rw=randread", "--bs=4k", "--size=1g", "--invalidate=0",
                    "--time_based", f"--runtime={rt}"],
               iolab=["--rw", "randread", "--block-size", "4KiB", "--size", "1GiB", "--cache", "hot",
                      "--runtime", f"{rt}s"])
    yield "hot1", "4 KiB random read, psync, hot page cache, 1 thread", a.tmpfs, \
        hot["fio"] + ["--numjobs=1"], hot["iolab"] + ["--threads", "1"], "iops"
    yield "hot2", "4 KiB random read, psync, hot page cache, 2 threads", a.tmpfs, \
        hot["fio"] + ["--numjobs=2"], hot["iolab"] + ["--threads", "2"], "iops"
    yield "uring32", "4 KiB random read, io_uring, O_DIRECT, QD32", a.dir, \
        ["--name=u", "--ioengine=io_uring", "--direct=1", "--iodepth=32", "--rw=randread", "--bs=4k", "--size=1g",
         "--time_based", f"--runtime={rt}"], \
        ["--rw", "randread", "--block-size", "4KiB", "--size", "1GiB", "--backend", "uring", "--queue-depth", "32",
         "--direct", "--runtime", f"{rt}s"], "iops"
    yield "seqwrite", "1 MiB sequential write, O_DIRECT, psync, 2 GiB", a.dir, \
        ["--name=w", "--ioengine=psync", "--direct=1", "--rw=write", "--bs=1m", "--size=2g", "--fallocate=none"], \
        ["--rw", "write", "--block-size", "1MiB", "--size", "2GiB", "--direct"], "mibs"
    yield "seqread", "1 MiB sequential read, O_DIRECT, psync, 2 GiB", a.dir, \
        ["--name=r", "--ioengine=psync", "--direct=1", "--rw=read", "--bs=1m", "--size=2g"], \
        ["--rw", "read", "--block-size", "1MiB", "--size", "2GiB", "--direct"], "mibs"
    yield "null", "null backend, 4 KiB random read, 1 thread (the tool's own ceiling)", a.dir, \
        ["--name=n", "--ioengine=null", "--rw=randread", "--bs=4k", "--size=64g", "--time_based", f"--runtime={rt}"], \
        ["--backend", "null", "--rw", "randread", "--block-size", "4KiB", "--size", "64GiB", "--runtime", f"{rt}s"], "iops"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", default="/var/tmp/iolab-bench", help="directory on the disk under test")
    p.add_argument("--tmpfs", default=None, help="directory for page-cache cases (default: a tmpfs we mount, else --dir)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--runtime", type=int, default=10, help="seconds per time-based run")
    p.add_argument("case", nargs="*")
    a = p.parse_args()
    if not shutil.which("fio"):
        sys.exit("fio is not on PATH: apt-get install fio")
    if not os.path.exists(IOLAB):
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=ROOT, check=True)
    os.makedirs(a.dir, exist_ok=True)
    mounted = None
    if a.tmpfs is None:
        mnt = tempfile.mkdtemp(prefix="iolab-tmpfs-")
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6g", "tmpfs", mnt]).returncode == 0:
            a.tmpfs = mounted = mnt
        else:
            a.tmpfs = a.dir
    fio_dir = os.path.join(a.dir, "fio")
    print(f"fio: {sh(['fio', '--version']).stdout.strip()}; iolab: {sh([IOLAB, '--version']).stdout.strip()}")
    print(f"disk dir: {a.dir}; page-cache dir: {a.tmpfs}; {a.repeat} repetitions, alternating order\n")
    print(f"{'case':<9} {'figure':<7} {'fio':>12} {'iolab':>12} {'ratio':>7}   {'lat fio/iolab us':>18}   {'cpu us/IO fio/iolab':>20}")
    try:
        for name, title, where, fargs, iargs, figure in cases(a):
            if a.case and name not in a.case:
                continue
            fdir = os.path.join(where, "fio")
            os.makedirs(fdir, exist_ok=True)
            results = {"fio": [], "iolab": []}
            use_ior = name in ("seqwrite", "seqread") and shutil.which("ior")
            if use_ior:
                results["ior"] = []
                if name == "seqread" and not os.path.exists(os.path.join(fdir, "ior.dat")):
                    ior("w", fdir)
            for rep in range(a.repeat):
                order = [("fio", lambda: fio(fargs, fdir)), ("iolab", lambda: iolab(iargs, where))]
                if use_ior:
                    order.append(("ior", lambda: ior("w" if name == "seqwrite" else "r", fdir)))
                if rep % 2:
                    order.reverse()
                for tool, fn in order:
                    results[tool].append(fn())
            med = {t: [statistics.median(x[i] for x in r) if r[0][i] is not None else float("nan") for i in range(4)]
                   for t, r in results.items()}
            idx = 0 if figure == "iops" else 1
            ratio = med["iolab"][idx] / med["fio"][idx] if med["fio"][idx] else float("nan")
            unit = "IOPS" if figure == "iops" else "MiB/s"
            print(f"{name:<9} {unit:<7} {med['fio'][idx]:>12.0f} {med['iolab'][idx]:>12.0f} {ratio:>7.3f}   "
                  f"{med['fio'][2]:>8.1f}/{med['iolab'][2]:<8.1f}   {med['fio'][3]:>9.2f}/{med['iolab'][3]:<9.2f}  # {title}")
            if "ior" in med:
                r = med["iolab"][1] / med["ior"][1]
                print(f"{'':<9} {'vs IOR':<7} {med['ior'][1]:>12.0f} {med['iolab'][1]:>12.0f} {r:>7.3f}   "
                      f"{'':>18}   {'':>20}  # ior -a POSIX --posix.odirect -t 1m -b 2g, 1 process")
            shutil.rmtree(fdir, ignore_errors=True)
    finally:
        shutil.rmtree(fio_dir, ignore_errors=True)
        if mounted:
            subprocess.run(["umount", mounted])
            os.rmdir(mounted)


if __name__ == "__main__":
    main()
