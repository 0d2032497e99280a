#!/usr/bin/env python3
"""`iolab s3` against boto3 and the bare client loop (the floor) on the same S3 server.

The same work for all three, one pass each: C workers (threads; one connection each)
PUT N objects of SIZE bytes (each worker its share), GET each once, DELETE each once
(newest first, as `iolab s3` takes them: the server's work depends on the order).
Rates are requests over each pass's time (iolab: its phase time; the floor and boto3:
from the moment every thread is ready to the last one done). CPU per request is the
whole process's user + system time (RUSAGE_CHILDREN around each run) over the requests
it made, so every tool pays for its own setup the same way. The tools alternate, the
first one rotating, REPEAT rounds; prints the median rate per pass and tool, iolab over
the floor and over boto3, and the CPU per request. Uploads are signed with the body's
SHA-256 by all three (warp's, boto3's and iolab's default over plain http); boto3 runs
with `request_checksum_calculation=when_required` (no CRC trailers, which older
S3-compatible servers refuse).

With --rgw-asok PATH (Ceph's RADOS Gateway: its admin socket, client.rgw.a.asok in
scripts/ceph.sh's state/run) it first reads the gateway's own counters (`perf dump`:
put, put_b, get, get_b) before and after one iolab run and prints them beside what
iolab says it did.

Usage:
  bench/s3.py --endpoint URL --bucket B [--objects 2000] [--size 4096] [-c 8]
              [--repeat 5] [--python /work/peers/s3-venv/bin/python]
Needs AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; the bucket must exist. IOLAB= chooses
the iolab binary (default target/release/iolab), FLOOR= the floor (default
target/release/examples/s3_floor); both are built when missing.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSES = ["put", "get", "delete"]

BOTO3 = r'''
import boto3, botocore, json, sys, threading, time
endpoint, bucket, op, n, size, c = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
cfg = botocore.config.Config(request_checksum_calculation="when_required",
                             response_checksum_validation="when_required",
                             s3={"addressing_style": "path"}, max_pool_connections=c,
                             retries={"max_attempts": 10, "mode": "legacy"})
s3 = boto3.session.Session().client("s3", endpoint_url=endpoint, region_name="us-east-1", config=cfg)
body = bytes(bytearray((i * 7919) % 251 for i in range(size)))
ready = threading.Barrier(c + 1)
done = [0.0] * c
moved = [0] * c
def work(w):
    share = n // c + (1 if w < n % c else 0)
    ready.wait()
    for i in (reversed(range(share)) if op == "delete" else range(share)):
        key = f"boto3/w{w}/{i}"
        if op == "put":
            s3.put_object(Bucket=bucket, Key=key, Body=body); moved[w] += size
        elif op == "get":
            moved[w] += len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        else:
            s3.delete_object(Bucket=bucket, Key=key)
    done[w] = time.monotonic()
ts = [threading.Thread(target=work, args=(w,)) for w in range(c)]
[t.start() for t in ts]
ready.wait(); start = time.monotonic()
[t.join() for t in ts]
print(json.dumps({"requests": n, "bytes": sum(moved), "seconds": max(done) - start}))
'''


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        sys.stderr.write(f"{cmd[0]} failed ({out.returncode}):\n{out.stdout[-3000:]}{out.stderr[-3000:]}\n")
        sys.exit(1)
    return out.stdout


def run_iolab(args, iolab):
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "r.json")
        cpu0 = child_cpu()
        run([iolab, "s3", "--endpoint", args.endpoint, "--bucket", args.bucket,
             "--ops", "put,get,delete", "--objects", str(args.objects),
             "--object-size", f"{args.size}B", "-c", str(args.concurrency),
             "--json", js, "--no-store", "-Q"])
        cpu = child_cpu() - cpu0
        rec = json.load(open(js))
    rates, requests = {}, 0
    for p, name in zip(rec["phases"], PASSES):
        o = p["ops"][0]
        rates[name] = o["ops"] / (p["elapsed"] / 1e9)
        requests += o["ops"]
    return rates, cpu / max(requests, 1)


def run_loop(args, cmd_of):
    rates, requests, cpu = {}, 0, 0.0
    for op in PASSES:
        cpu0 = child_cpu()
        r = json.loads(run(cmd_of(op)).strip().splitlines()[-1])
        cpu += child_cpu() - cpu0
        rates[op] = r["requests"] / r["seconds"]
        requests += r["requests"]
    return rates, cpu / max(requests, 1)


def rgw_counters(asok):
    out = subprocess.run(["ceph", "--admin-daemon", asok, "perf", "dump"], capture_output=True,
                         text=True, check=True).stdout
    rgw = json.loads(out)["rgw"]
    return {k: rgw[k] for k in ("req", "put", "put_b", "get", "get_b")}


def check_counters(args, iolab):
    """One iolab run between two readings of the gateway's counters."""
    before = rgw_counters(args.rgw_asok)
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "r.json")
        run([iolab, "s3", "--endpoint", args.endpoint, "--bucket", args.bucket,
             "--ops", "put,get,delete", "--objects", str(args.objects),
             "--object-size", f"{args.size}B", "-c", str(args.concurrency),
             "--json", js, "--no-store", "-Q"])
        rec = json.load(open(js))
    after = rgw_counters(args.rgw_asok)
    d = {k: after[k] - before[k] for k in after}
    put = rec["phases"][0]["ops"][0]
    get = rec["phases"][1]["ops"][0]
    print("the gateway's own counters (perf dump) over one iolab run, against iolab's:")
    print(f"  PUT requests   gateway {d['put']:>10}  iolab {put['ops']:>10} (+1 marker object)")
    print(f"  PUT bytes      gateway {d['put_b']:>10}  iolab {put['bytes']:>10}")
    print(f"  GET requests   gateway {d['get']:>10}  iolab {get['ops']:>10} (+1 bucket check, a LIST)")
    print(f"  GET bytes      gateway {d['get_b']:>10}  iolab {get['bytes']:>10}")
    print(f"  all requests   gateway {d['req']:>10}  (iolab: {3 * args.objects} + marker put/delete + bucket check)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("-c", "--concurrency", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--python", default="/work/peers/s3-venv/bin/python")
    ap.add_argument("--tools", default="iolab,floor,boto3")
    ap.add_argument("--rgw-asok")
    args = ap.parse_args()
    iolab = os.environ.get("IOLAB", os.path.join(ROOT, "target/release/iolab"))
    floor = os.environ.get("FLOOR", os.path.join(ROOT, "target/release/examples/s3_floor"))
    if not os.path.exists(iolab):
        run(["cargo", "build", "--release", "--locked", "-p", "iolab"])
    if not os.path.exists(floor):
        run(["cargo", "build", "--release", "--locked", "-p", "iolab-backend", "--example", "s3_floor"])
    if args.rgw_asok:
        check_counters(args, iolab)
    common = [args.endpoint, args.bucket]
    tools = {
        "iolab": lambda: run_iolab(args, iolab),
        "floor": lambda: run_loop(args, lambda op: [floor, *common, op, str(args.objects),
                                                   str(args.size), str(args.concurrency)]),
        "boto3": lambda: run_loop(args, lambda op: [args.python, "-c", BOTO3, *common, op,
                                                   str(args.objects), str(args.size),
                                                   str(args.concurrency)]),
    }
    names = args.tools.split(",")
    got = {t: {"rates": {p: [] for p in PASSES}, "cpu": []} for t in names}
    for r in range(args.repeat):
        order = names[r % len(names):] + names[:r % len(names)]
        for t in order:
            rates, cpu = tools[t]()
            for p in PASSES:
                got[t]["rates"][p].append(rates[p])
            got[t]["cpu"].append(cpu)
            print(f"round {r + 1} {t}: " + ", ".join(f"{p} {rates[p]:.0f}/s" for p in PASSES)
                  + f", {cpu * 1e6:.0f} us CPU/request", flush=True)
    med = {t: {p: statistics.median(got[t]["rates"][p]) for p in PASSES} for t in names}
    print(f"\n{args.objects} objects of {args.size} B, {args.concurrency} connections, "
          f"{args.repeat} rounds, medians (requests/s):")
    print(f"{'pass':8}" + "".join(f"{t:>12}" for t in names)
          + ("  iolab/floor  iolab/boto3" if "iolab" in names else ""))
    for p in PASSES:
        line = f"{p:8}" + "".join(f"{med[t][p]:12.0f}" for t in names)
        if "iolab" in names and "floor" in names:
            line += f"  {med['iolab'][p] / med['floor'][p]:11.3f}"
        if "iolab" in names and "boto3" in names:
            line += f"  {med['iolab'][p] / med['boto3'][p]:11.2f}"
        print(line)
        if "iolab" in names and "floor" in names:
            ratios = [a / b for a, b in zip(got["iolab"]["rates"][p], got["floor"]["rates"][p])]
            print(f"{'':8}iolab/floor per round: " + " ".join(f"{x:.3f}" for x in ratios))
    print("CPU per request (median, whole process):  " + "  ".join(
        f"{t} {statistics.median(got[t]['cpu']) * 1e6:.0f} us" for t in names))


if __name__ == "__main__":
    main()
