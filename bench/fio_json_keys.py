#!/usr/bin/env python3
"""Key by key: the JSON `iolab fio --output-format=json` (and json+) writes against the
JSON real fio writes for the same job, run side by side on the same directory. Prints
every key path fio writes that iolab lacks, every key whose JSON type differs, and the
keys iolab adds; exits 1 when a key is missing or of another type.

Usage: bench/fio_json_keys.py [--dir DIR] [--format json|json+]
Needs: fio on PATH (Debian's), a build of iolab (IOLAB=path, else target/release).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")

# S3's and S5's shapes at a small scale: a mixed group-reported job and a plain write.
JOBS = [
    ["--name=mix", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--size=8m", "--numjobs=2",
     "--thread", "--group_reporting", "--ioengine=psync", "--runtime=2", "--time_based"],
    ["--name=seq", "--rw=write", "--bs=128k", "--size=16m", "--ioengine=psync"],
]

# Values keyed by what they measure, not by a fixed name: percentiles ("99.000000"),
# json+ latency bins (nanoseconds), iodepth/latency distribution buckets.
VARIABLE_PARENTS = ("percentile", "bins")


def paths(v, prefix=""):
    out = {}
    if isinstance(v, dict):
        for k, x in v.items():
            key = "*" if prefix.endswith(VARIABLE_PARENTS) else k
            out.update(paths(x, f"{prefix}.{key}" if prefix else key))
    elif isinstance(v, list):
        for x in v[:1]:
            out.update(paths(x, prefix + "[]"))
        if not v:
            out[prefix + "[]"] = "list"
    else:
        out[prefix] = type(v).__name__.replace("int", "number").replace("float", "number")
    if prefix:
        out.setdefault(prefix, type(v).__name__.replace("int", "number").replace("float", "number"))
    return out


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    text = r.stdout
    return json.loads(text[text.index("{"):])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--format", default="json", choices=["json", "json+"])
    a = ap.parse_args()
    bad = 0
    for job in JOBS:
        with tempfile.TemporaryDirectory(dir=a.dir) as d1, tempfile.TemporaryDirectory(dir=a.dir) as d2:
            opts = job + [f"--output-format={a.format}"]
            ref = paths(run(["fio", f"--directory={d1}"] + opts, d1))
            got = paths(run([IOLAB, "fio", "--no-store", f"--directory={d2}"] + opts, d2))
        missing = sorted(k for k in ref if k not in got)
        typed = sorted(k for k in ref if k in got and got[k] != ref[k])
        extra = sorted(k for k in got if k not in ref)
        print(f"{job[0]} ({a.format}): fio writes {len(ref)} key paths; iolab lacks "
              f"{len(missing)}, differs in type on {len(typed)}, adds {len(extra)}")
        for k in missing:
            print(f"  missing  {k} ({ref[k]})")
        for k in typed:
            print(f"  type     {k}: fio {ref[k]}, iolab {got[k]}")
        for k in extra:
            print(f"  extra    {k}")
        bad += len(missing) + len(typed)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
