#!/usr/bin/env python3
"""iolab's nbd backend against fio's nbd ioengine, on the same nbdkit export.

One nbdkit memory export (scripts/nbd.sh) serves both tools. Each case runs fio
(`--ioengine=nbd --uri=...`) and iolab (`--backend nbd --nbd-uri ...`) back to back on the
same work (block size, queue depth, direction, export, runtime), alternating which goes
first, ROUNDS times, and prints each tool's median IOPS and the iolab/fio ratio of every
round. Both reach the export through libnbd with one connection per job; the export is
written in full first, so reads read data. iolab writes fio's default data (`--pattern
fio`: each buffer filled once, stamped per write), as fio does; iolab's own data (every
4 KiB distinct, made per write) costs about 0.1 ms of CPU per MiB here, a tenth of a
1 MiB write's time. Both make the same libnbd and system calls per I/O (strace -f -c:
1 sendto, 1 poll, 4 recvfrom per 4 KiB read at QD 1). Nothing here is a test: read the
ratios. --pin 0:1 (nbdkit on CPU 0, both tools on CPU 1) takes the scheduler's placement
out of the QD 1 figures (BENCHMARKS.md).

Usage: bench/nbd.py [--size 1G] [--runtime 5] [--rounds 3] [--pin S:C] [CASE ...]
Cases: randread4k-qd1 randread4k-qd16 randwrite4k-qd1 randwrite4k-qd16
       seqread1m-qd1 seqread1m-qd16 seqwrite1m-qd1 seqwrite1m-qd16   (default: all)
Needs: nbdkit and libnbd0, fio 3.33 with its nbd engine (Debian's), a release build of
iolab (built if missing; IOLAB=path picks another).
"""

import json
import os
import tempfile

from engine_pair import IOLAB_BLOCK, arguments, client, compare, env_of, pin_server, sh

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
NBD_SH = os.path.join(ROOT, "scripts", "nbd.sh")


def fio(a, uri, size, rw, bs, qd, runtime):
    """fio's nbd engine; returns IOPS."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        # fio prints "connected to NBD server" on stdout: the JSON goes to a file.
        sh(client(a, ["fio", "--name=nbd", "--ioengine=nbd", f"--uri={uri}", f"--rw={rw}",
                      f"--bs={bs}", f"--iodepth={qd}", f"--size={size}", "--time_based",
                      f"--runtime={runtime}", "--output-format=json", f"--output={f.name}"]))
        job = json.load(open(f.name))["jobs"][0]
    side = job["read"] if rw.endswith("read") else job["write"]
    return side["iops"]


def iolab(a, uri, size, rw, bs, qd, runtime):
    """iolab's nbd backend, writing fio's default data; returns IOPS."""
    block = IOLAB_BLOCK[bs]
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        sh(client(a, [IOLAB, "run", "--backend", "nbd", "--nbd-uri", uri, "--rw", rw,
                      "--block-size", block, "--queue-depth", str(qd),
                      "--size", size.replace("G", "GiB").replace("M", "MiB"),
                      "--runtime", f"{runtime}s", "--pattern", "fio", "--allow-destroy",
                      "--no-store", "--quiet", "--json", f.name]))
        run = json.load(open(f.name))
    op = [o for o in run["phases"][-1]["ops"] if o["op"] in ("read", "write")][0]
    return op["iops"]


def main():
    a = arguments(__doc__, "1G")
    if not os.path.exists(IOLAB):
        sh(["cargo", "build", "--release", "--locked", "-p", "iolab"], cwd=ROOT)
    state = tempfile.mkdtemp(prefix="iolab-nbd-bench-", dir="/tmp")
    env = sh([NBD_SH, "up", "--state", os.path.join(state, "nbd"), "--size", a.size]).stdout
    uri = env_of(env)["NBD_URI"]
    try:
        pin_server(a, env_of(env)["NBD_PID"])
        # Written in full once, so that every read reads data (fio's reads of a sparse
        # memory export would find holes).
        sh(["fio", "--name=fill", "--ioengine=nbd", f"--uri={uri}", "--rw=write", "--bs=1m",
            "--iodepth=8", f"--size={a.size}", "--output=/dev/null"])
        print(f"# export {uri} ({a.size}, nbdkit memory), {a.runtime} s per run, {a.rounds} rounds, "
              f"order alternating, pinned {a.pin or 'no'}; iolab {IOLAB}")
        compare(a, lambda rw, bs, qd: fio(a, uri, a.size, rw, bs, qd, a.runtime),
                lambda rw, bs, qd: iolab(a, uri, a.size, rw, bs, qd, a.runtime))
    finally:
        sh([NBD_SH, "down", "--state", os.path.join(state, "nbd")])
        os.rmdir(state)


if __name__ == "__main__":
    main()
