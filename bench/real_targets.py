#!/usr/bin/env python3
"""`iolab targets` on a real Ceph or SeaweedFS: one target per OSD or volume server, one
of them throttled.

Ceph (the default): a fresh single-node Ceph from scripts/ceph.sh (--osds N
--pool-per-osd: a data pool and a CephFS directory osd.K per OSD, whose files live on
osd.K alone; the OSD images on a tmpfs); the throttle caps one OSD's loop device for that
OSD's process (a blkio cgroup: cgroup v1 blkio.throttle.* or v2 io.max).

SeaweedFS (--system seaweedfs): a fresh SeaweedFS from scripts/seaweedfs.sh --volumes N
(N volume servers, and a directory vs.K of the weed mount per server whose files are
stored on volume server K alone), its state on a tmpfs and all of it in a network
namespace of its own; the throttle caps volume server K's link both ways (an htb class
on that namespace's loopback for the server's port: the machine's own loopback is not
touched). Its writes are timed with --fsync-at-end by default: weed mount takes writes
into its own buffer (O_DIRECT too) and uploads them at close or fsync, so without it the
phase ends before the data reaches the volume servers. After the run the bytes each
volume server holds per collection are printed (from its /status): vs.K's on server K.

Either way `iolab targets` runs over the directories, its output printed; then
everything is taken down (cgroup, namespace, tmpfs included).

Usage: bench/real_targets.py [--system ceph|seaweedfs] [--osds 3 | --volumes 3]
                             [--throttle K] [--mbps 20] [-- iolab targets args]
Defaults for iolab: --write --read --block-size 1MiB --size 256MiB --direct --verbose
(and --fsync-at-end on SeaweedFS). Needs root. IOLAB= chooses the binary (default
target/release/iolab). SeaweedFS needs `weed` installed already (run
scripts/seaweedfs.sh up once): its namespace has no network to install it from.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CEPH = os.path.join(ROOT, "scripts", "ceph.sh")
SEAWEEDFS = os.path.join(ROOT, "scripts", "seaweedfs.sh")


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


class Throttle:
    """A blkio cgroup holding one process, its reads and writes to one device capped."""

    def __init__(self, pid, device, mbps):
        rdev = os.stat(device).st_rdev
        self.dev = f"{os.major(rdev)}:{os.minor(rdev)}"
        self.pid, self.bps = pid, mbps * 1024 * 1024
        v1 = "/sys/fs/cgroup/blkio"
        self.v2 = not os.path.isdir(v1)
        self.path = os.path.join("/sys/fs/cgroup" if self.v2 else v1, f"iolab-throttle-{os.getpid()}")

    def write(self, name, text):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(text)

    def __enter__(self):
        os.mkdir(self.path)
        if self.v2:
            self.write("io.max", f"{self.dev} rbps={self.bps} wbps={self.bps}")
        else:
            self.write("blkio.throttle.read_bps_device", f"{self.dev} {self.bps}")
            self.write("blkio.throttle.write_bps_device", f"{self.dev} {self.bps}")
        self.write("cgroup.procs", str(self.pid))
        return self

    def __exit__(self, *exc):
        try:
            with open(os.path.join(os.path.dirname(self.path), "cgroup.procs"), "w") as f:
                f.write(str(self.pid))
        except OSError:
            pass  # the OSD is gone already
        os.rmdir(self.path)


class LinkThrottle:
    """An htb class on the loopback of the network namespace of process `pid`, capping
    everything to and from TCP port `port` at `mbps` MiB/s; the rest unlimited."""

    def __init__(self, pid, port, mbps):
        self.ns = ["nsenter", "-t", str(pid), "-n"]
        self.port, self.rate = port, f"{mbps}mibps"

    def tc(self, *args):
        sh(*self.ns, "tc", *args)

    def __enter__(self):
        self.tc("qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "1")
        self.tc("class", "add", "dev", "lo", "parent", "1:", "classid", "1:1", "htb", "rate", "100gbit")
        self.tc("class", "add", "dev", "lo", "parent", "1:", "classid", "1:2", "htb", "rate", self.rate,
                "ceil", self.rate, "burst", "1mb", "cburst", "1mb")
        for way in ("sport", "dport"):
            self.tc("filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                    "match", "ip", way, str(self.port), "0xffff", "flowid", "1:2")
        return self

    def __exit__(self, *exc):
        subprocess.run([*self.ns, "tc", "qdisc", "del", "dev", "lo", "root"], check=False,
                       capture_output=True)


def parse_env(out):
    return {k: v.strip('"') for k, v in (line.split("=", 1) for line in out.splitlines()
                                          if "=" in line and not line.startswith("#"))}


def run_iolab(cmd):
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=False)


def ceph(args, iolab, opts, base):
    images = os.path.join(base, "images")
    os.mkdir(images)
    sh("mount", "-t", "tmpfs", "-o", "size=8g", "tmpfs", images)
    state = os.path.join(base, "ceph")
    try:
        out = sh(CEPH, "up", "--state", state, "--ports", "auto", "--osds", str(args.osds),
                 "--pool-per-osd", "--osd-dir", images, "--osd-size", "2G")
        env = parse_env(out)
        dirs = env["CEPHFS_OSD_DIRS"].split()
        devices = env["CEPH_OSD_DEVICES"].split()
        cmd = [iolab, "targets", *dirs, *opts, "--no-store"]
        if args.throttle is None:
            run_iolab(cmd)
        else:
            with open(os.path.join(state, "run", f"osd.{args.throttle}.pid")) as f:
                pid = int(f.read())
            print(f"osd.{args.throttle} ({devices[args.throttle]}) capped at {args.mbps} MiB/s each way",
                  flush=True)
            with Throttle(pid, devices[args.throttle], args.mbps):
                run_iolab(cmd)
    finally:
        subprocess.run([CEPH, "down", "--state", state], check=False)
        subprocess.run(["umount", images], check=False)
        os.rmdir(images)


def volume_bytes(ns, servers):
    """What each volume server holds, per collection, from its /status."""
    for k, server in enumerate(servers):
        out = subprocess.run([*ns, "curl", "-s", f"http://{server}/status"], capture_output=True,
                             text=True, check=False).stdout
        held = {}
        for v in json.loads(out or "{}").get("Volumes") or []:
            held[v.get("Collection") or "(default)"] = held.get(v.get("Collection") or "(default)", 0) + v["Size"]
        print(f"volume server {k} ({server}): " + ", ".join(
            f"{c} {b / 2**20:.1f} MiB" for c, b in sorted(held.items())), flush=True)


def seaweedfs(args, iolab, opts, base):
    tmp = os.path.join(base, "state")
    os.mkdir(tmp)
    sh("mount", "-t", "tmpfs", "-o", "size=8g", "tmpfs", tmp)
    state = os.path.join(tmp, "seaweedfs")
    ns = None
    try:
        # The cluster in a network namespace of its own: its loopback can be shaped without
        # touching the machine's, and its ports collide with nothing.
        out = sh("unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" up --state "$1" --ports auto '
                 '--volumes "$2"', SEAWEEDFS, state, str(args.volumes))
        with open(os.path.join(state, "server.pid")) as f:
            ns = ["nsenter", "-t", f.read().strip(), "-n"]
        env = parse_env(out)
        dirs = env["SEAWEEDFS_VOLUME_DIRS"].split()
        servers = env["SEAWEEDFS_VOLUME_SERVERS"].split()
        cmd = [iolab, "targets", *dirs, *opts, "--no-store"]
        if args.throttle is None:
            run_iolab(cmd)
        else:
            with open(os.path.join(state, "server.pid")) as f:
                pid = int(f.read())
            port = int(servers[args.throttle].rsplit(":", 1)[1])
            print(f"volume server {args.throttle} ({servers[args.throttle]}) capped at {args.mbps} MiB/s "
                  "each way (htb on its namespace's loopback)", flush=True)
            with LinkThrottle(pid, port, args.mbps):
                run_iolab(cmd)
        volume_bytes(ns, servers)
    finally:
        # Down inside the namespace, so its port checks look where the ports were.
        if subprocess.run([*(ns or []), SEAWEEDFS, "down", "--state", state], check=False).returncode:
            subprocess.run([SEAWEEDFS, "down", "--state", state], check=False)
        subprocess.run(["umount", tmp], check=False)
        os.rmdir(tmp)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--system", choices=["ceph", "seaweedfs"], default="ceph")
    p.add_argument("--osds", type=int, default=3, help="Ceph's OSDs")
    p.add_argument("--volumes", type=int, default=3, help="SeaweedFS's volume servers")
    p.add_argument("--throttle", type=int, help="the OSD or volume server to throttle")
    p.add_argument("--mbps", type=int, default=20, help="its cap, MiB/s each way")
    p.add_argument("rest", nargs="*", help="iolab targets options (after --)")
    args = p.parse_args()
    iolab = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
    opts = args.rest or ["--write", "--read", "--block-size", "1MiB", "--size", "256MiB",
                         "--direct", "--verbose"] + (["--fsync-at-end"] if args.system == "seaweedfs" else [])
    base = tempfile.mkdtemp(prefix="iolab-targets-")
    try:
        (ceph if args.system == "ceph" else seaweedfs)(args, iolab, opts, base)
    finally:
        os.rmdir(base)


if __name__ == "__main__":
    sys.exit(main())
