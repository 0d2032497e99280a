#!/usr/bin/env python3
"""iolab's nfs backend against fio's nfs ioengine, on the same NFS-Ganesha export.

One NFS-Ganesha (scripts/nfs.sh, NFSv3 on 127.0.0.1) serves both tools, each on files of
its own in the export. Reads: each tool reads one file of --size laid out once, untimed,
before the first case (fio's by a 1 MiB write job; iolab's by its own layout, kept with
--keep in the export's directory `iolab-read` and reused by every later read, as fio
reuses its file). Writes: each tool writes a file of --size that is empty when the run
starts (iolab makes its write phase's file anew; fio's `fio.write` is truncated to 0 in
the exported directory before each run: fio's nfs engine cannot create a file), so
neither overwrites where the other fills holes. iolab writes fio's default data
(`--pattern fio`). Each case runs fio (`--ioengine=nfs --nfs_url=...`) and iolab
(`--backend nfs --nfs-url ...`) back to back on the same work, alternating which goes
first, ROUNDS times (bench/engine_pair.py), and prints a Markdown table. Both reach the
server through libnfs with one connection per job. fio's engine always uses libnfs's
asynchronous calls; iolab's uses the synchronous ones at QD 1 (which libnfs makes of the
same asynchronous call and a poll loop: strace -f -c counts the same 1 sendto, 2 poll and
2 recvfrom per 4 KiB write for both) and the asynchronous ones deeper. Nothing here is a
test: read the ratios.

Usage: FIO=path bench/nfs.py [--size 256M] [--runtime 5] [--rounds 3] [--pin S:C] [CASE ...]
Cases: as bench/nbd.py's (randread4k-qd1 ... seqwrite1m-qd16).
Needs: nfs-ganesha(-vfs), rpcbind, libnfs; a fio built with libnfs (Debian's is not:
`./configure --enable-libnfs && make` in a checkout of fio outside the repository, then
FIO=that/fio); a release build of iolab (IOLAB=path picks another).
"""

import argparse
import json
import os
import tempfile

from engine_pair import IOLAB_BLOCK, arguments, client, compare, env_of, pin_server, sh

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
FIO = os.environ.get("FIO") or "fio"
NFS_SH = os.path.join(ROOT, "scripts", "nfs.sh")


def fio(a, url, export, rw, bs, qd):
    """fio's nfs engine on its file fio.data (reads) or a new fio.write; returns IOPS."""
    name = "fio.data" if rw.endswith("read") else "fio.write"
    if name == "fio.write":
        # Empty, as iolab's write phase makes its file (fio's nfs engine cannot create one:
        # NFS3ERR_NOENT); made in the exported directory itself.
        open(os.path.join(export, name), "w").close()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh(client(a, [FIO, "--name=nfs", "--ioengine=nfs", f"--nfs_url={url}", f"--filename={name}",
                      f"--rw={rw}", f"--bs={bs}", f"--iodepth={qd}", f"--size={a.size}",
                      "--time_based", f"--runtime={a.runtime}", "--output-format=json",
                      f"--output={f.name}"]))
        # fio's nfs engine prints its complaints into the same output: the JSON is after them.
        text = open(f.name).read()
        job = json.loads(text[text.index("{"):])["jobs"][0]
    side = job["read"] if rw.endswith("read") else job["write"]
    return side["iops"]


def iolab(a, url, rw, bs, qd):
    """iolab's nfs backend, on the kept file of iolab-read/ or a new one in iolab-write/;
    returns IOPS."""
    sub = "iolab-read" if rw.endswith("read") else "iolab-write"
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh(client(a, [IOLAB, "run", "--backend", "nfs", "--nfs-url", url, "--dir", sub, "--keep",
                      "--rw", rw, "--block-size", IOLAB_BLOCK[bs], "--queue-depth", str(qd),
                      "--size", a.size.replace("G", "GiB").replace("M", "MiB"),
                      "--runtime", f"{a.runtime}s", "--pattern", "fio", "--no-store", "--quiet",
                      "--json", f.name]))
        run = json.load(open(f.name))
    op = [o for o in run["phases"][-1]["ops"] if o["op"] in ("read", "write")][0]
    return op["iops"]


def main():
    a = arguments(__doc__, "256M")
    if not os.path.exists(IOLAB):
        sh(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=ROOT)
    state = tempfile.mkdtemp(prefix="iolab-nfs-bench-", dir="/var/tmp")
    nfs_state = os.path.join(state, "nfs")
    env = env_of(sh([NFS_SH, "up", "--state", nfs_state, "--ports", "auto"]).stdout)
    url, export = env["NFS_URL"], env["NFS_EXPORT"]
    try:
        pin_server(a, open(os.path.join(nfs_state, "run", "ganesha.pid")).read().strip())
        for sub in ("iolab-read", "iolab-write"):
            os.mkdir(os.path.join(export, sub))
        # Laid out once, untimed: fio's file by a write job, iolab's by its layout (kept).
        # (At --iodepth=8 fio's nfs engine lost writes of its fill here: EFAULT, a short
        # file, and then "Got NFS EOF" lines in its JSON output. One at a time, checked.)
        sh([FIO, "--name=fill", "--ioengine=nfs", f"--nfs_url={url}", "--filename=fio.data",
            "--rw=write", "--bs=1m", "--iodepth=1", f"--size={a.size}", "--output=/dev/null"])
        want = int(a.size.rstrip("MG")) << (20 if a.size.endswith("M") else 30)
        got = os.path.getsize(os.path.join(export, "fio.data"))
        if got != want:
            raise SystemExit(f"fio's fill left fio.data at {got} bytes, not {want}")
        a_short = argparse.Namespace(**{**vars(a), "runtime": 1})
        iolab(a_short, url, "read", "1m", 1)
        print(f"# export {url} ({a.size} per tool, NFSv3, NFS-Ganesha VFS), {a.runtime} s per run, "
              f"{a.rounds} rounds, order alternating, pinned {a.pin or 'no'}; fio {FIO}, iolab {IOLAB}")
        compare(a, lambda rw, bs, qd: fio(a, url, export, rw, bs, qd),
                lambda rw, bs, qd: iolab(a, url, rw, bs, qd))
    finally:
        sh([NFS_SH, "down", "--state", nfs_state])
        os.rmdir(state)


if __name__ == "__main__":
    main()
