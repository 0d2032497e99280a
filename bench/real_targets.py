#!/usr/bin/env python3
"""`iolab targets` on a real Ceph: one target per OSD, one of them throttled.

Brings up a fresh single-node Ceph with scripts/ceph.sh (--osds N --pool-per-osd: a data
pool and a CephFS directory osd.K per OSD, whose files live on osd.K alone; the OSD
images on a tmpfs), optionally throttles one OSD's loop device for that OSD's process
(a blkio cgroup: cgroup v1 blkio.throttle.* or v2 io.max), runs `iolab targets` over the
directories and prints its output; then takes everything down (cgroup included).

Usage: bench/real_targets.py [--osds 3] [--throttle K] [--mbps 20] [-- iolab targets args]
Defaults for iolab: --write --read --block-size 1MiB --size 256MiB --direct --verbose.
Needs root. IOLAB= chooses the binary (default target/release/iolab).
"""

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CEPH = os.path.join(ROOT, "scripts", "ceph.sh")


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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--osds", type=int, default=3)
    p.add_argument("--throttle", type=int, help="the OSD to throttle")
    p.add_argument("--mbps", type=int, default=20, help="its cap, MiB/s each way")
    p.add_argument("rest", nargs="*", help="iolab targets options (after --)")
    args = p.parse_args()
    iolab = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")
    opts = args.rest or ["--write", "--read", "--block-size", "1MiB", "--size", "256MiB",
                         "--direct", "--verbose"]
    base = tempfile.mkdtemp(prefix="iolab-targets-")
    images = os.path.join(base, "images")
    os.mkdir(images)
    sh("mount", "-t", "tmpfs", "-o", "size=8g", "tmpfs", images)
    state = os.path.join(base, "ceph")
    try:
        out = sh(CEPH, "up", "--state", state, "--ports", "auto", "--osds", str(args.osds),
                 "--pool-per-osd", "--osd-dir", images, "--osd-size", "2G")
        env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and not line.startswith("#"))
        dirs = env["CEPHFS_OSD_DIRS"].strip('"').split()
        devices = env["CEPH_OSD_DEVICES"].strip('"').split()
        cmd = [iolab, "targets", *dirs, *opts, "--no-store"]
        print("$ " + " ".join(cmd), flush=True)
        if args.throttle is None:
            subprocess.run(cmd, check=False)
        else:
            with open(os.path.join(state, "run", f"osd.{args.throttle}.pid")) as f:
                pid = int(f.read())
            print(f"osd.{args.throttle} ({devices[args.throttle]}) capped at {args.mbps} MiB/s each way",
                  flush=True)
            with Throttle(pid, devices[args.throttle], args.mbps):
                subprocess.run(cmd, check=False)
    finally:
        subprocess.run([CEPH, "down", "--state", state], check=False)
        subprocess.run(["umount", images], check=False)
        os.rmdir(images)
        os.rmdir(base)


if __name__ == "__main__":
    sys.exit(main())
