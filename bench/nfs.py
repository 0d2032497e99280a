#!/usr/bin/env python3
"""iolab's nfs backend against fio's nfs ioengine, on the same NFS-Ganesha export.

One NFS-Ganesha (scripts/nfs.sh, NFSv3 on 127.0.0.1) serves both tools; each reads and
writes a file of its own of --size in the export, laid out in full before the first run
(fio's with a 1 MiB write job; iolab's by its own untimed layout). Each case runs fio
(`--ioengine=nfs --nfs_url=...`) and iolab (`--backend nfs --nfs-url ...`) back to back on
the same work, alternating which goes first, ROUNDS times (bench/engine_pair.py). Both
reach the server through libnfs with one connection per job. fio's engine always uses
libnfs's asynchronous calls; iolab's uses the synchronous ones at QD 1 and the
asynchronous ones deeper. Nothing here is a test: read the ratios.

Usage: FIO=path bench/nfs.py [--size 256M] [--runtime 5] [--rounds 3] [CASE ...]
Cases: as bench/nbd.py's (randread4k-qd1 ... seqwrite1m-qd16).
Needs: nfs-ganesha(-vfs), rpcbind, libnfs; a fio built with libnfs (Debian's is not:
`./configure --enable-libnfs && make` in a checkout of fio outside the repository, then
FIO=that/fio); a release build of iolab (IOLAB=path picks another).
"""

import json
import os
import tempfile

from engine_pair import IOLAB_BLOCK, arguments, compare, env_of, sh

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
FIO = os.environ.get("FIO") or "fio"
NFS_SH = os.path.join(ROOT, "scripts", "nfs.sh")


def fio(url, size, rw, bs, qd, runtime):
    """fio's nfs engine on its file fio.data; returns IOPS."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh([FIO, "--name=nfs", "--ioengine=nfs", f"--nfs_url={url}", "--filename=fio.data",
            f"--rw={rw}", f"--bs={bs}", f"--iodepth={qd}", f"--size={size}", "--time_based",
            f"--runtime={runtime}", "--output-format=json", f"--output={f.name}"])
        job = json.load(open(f.name))["jobs"][0]
    side = job["read"] if rw.endswith("read") else job["write"]
    return side["iops"]


def iolab(url, size, rw, bs, qd, runtime):
    """iolab's nfs backend; returns IOPS."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh([IOLAB, "run", "--backend", "nfs", "--nfs-url", url, "--rw", rw,
            "--block-size", IOLAB_BLOCK[bs], "--queue-depth", str(qd),
            "--size", size.replace("G", "GiB").replace("M", "MiB"), "--runtime", f"{runtime}s",
            "--no-store", "--quiet", "--json", f.name])
        run = json.load(open(f.name))
    op = [o for o in run["phases"][-1]["ops"] if o["op"] in ("read", "write")][0]
    return op["iops"]


def main():
    a = arguments(__doc__, "256M")
    if not os.path.exists(IOLAB):
        sh(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=ROOT)
    state = tempfile.mkdtemp(prefix="iolab-nfs-bench-", dir="/var/tmp")
    nfs_state = os.path.join(state, "nfs")
    url = env_of(sh([NFS_SH, "up", "--state", nfs_state, "--ports", "auto"]).stdout)["NFS_URL"]
    try:
        sh([FIO, "--name=fill", "--ioengine=nfs", f"--nfs_url={url}", "--filename=fio.data",
            "--rw=write", "--bs=1m", "--iodepth=8", f"--size={a.size}", "--output=/dev/null"])
        print(f"# export {url} ({a.size} per tool, NFSv3, NFS-Ganesha VFS), {a.runtime} s per run, "
              f"{a.rounds} rounds, order alternating; fio {FIO}, iolab {IOLAB}")
        compare(a, lambda rw, bs, qd: fio(url, a.size, rw, bs, qd, a.runtime),
                lambda rw, bs, qd: iolab(url, a.size, rw, bs, qd, a.runtime))
    finally:
        sh([NFS_SH, "down", "--state", nfs_state])
        os.rmdir(state)


if __name__ == "__main__":
    main()
