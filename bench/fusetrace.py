"""What reached an iolab-faultfs mount, from its trace (IOLAB_FAULTFS_TRACE=1: one line per
FUSE read or write with its file, offset, length, the time faultfs took it and the calling
thread): per tool run, the FUSE requests each thread made and how they queued.

A chain is one thread's run of requests on one file (one whole-entry read or write: its
pieces, and kv-cache.py's header probes at offset 0 before its payload); a new chain
begins where the thread goes back to offset 0 after more than the probes. With a device
of a fixed STALL per request served by two threads, what a request waits is
`queue = taken - previous taken of its chain - STALL`; by Little's law the requests in
the system are requests/s x time per request (STALL + queue), and a whole-entry span per
MiB is about that time per 1 MiB request.
"""

import re
import statistics

LINE = re.compile(r"^iolab-faultfs: (read|write) (\S+) at (\d+) len (\d+) t ([\d.]+) pid (\d+)")
PROBE = 4096


def parse(lines):
    """(taken, op, file, offset, len, pid) of every traced read and write, by time."""
    out = []
    for line in lines:
        m = LINE.match(line)
        if m:
            out.append((float(m[5]), m[1], m[2], int(m[3]), int(m[4]), int(m[6])))
    out.sort()
    return out


def chains(reqs):
    """Each thread's chains: {"op", "file", "reqs": [(taken, offset, len)]}."""
    done, last = [], {}
    for t, op, f, off, ln, pid in reqs:
        key = (pid, op, f)
        c = last.get(key)
        end = c["reqs"][-1][1] + c["reqs"][-1][2] if c else 0
        if c is None or (off == 0 and end > PROBE) or (off != 0 and off != end):
            c = {"op": op, "file": f, "reqs": []}
            done.append(c)
            last[key] = c
        c["reqs"].append((t, off, ln))
    return done


def quantile(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")


def figures(lines, stall, window):
    """One run's figures over its first `window` seconds (from its first request):
    requests/s, ms per request, requests in the system, whole-entry operations at the
    device on average, the most requests one thread had in flight, the reads' sizes and
    spans per MiB, and the reads cut (fewer bytes than their file)."""
    reqs = parse(lines)
    if not reqs:
        return {}
    cs = chains(reqs)
    t0 = reqs[0][0]
    inside = lambda t: t < t0 + window
    n = sum(1 for r in reqs if inside(r[0]))
    gaps, overlapped, busy = [], 0, 0.0
    for c in cs:
        r = c["reqs"]
        busy += max(0.0, min(r[-1][0] + stall, t0 + window) - r[0][0]) if inside(r[0][0]) else 0
        for x, y in zip(r, r[1:]):
            if inside(y[0]):
                gaps.append(y[0] - x[0])
                overlapped += y[0] - x[0] < stall / 2
    size = {}
    for c in cs:
        if c["op"] == "write":
            size[c["file"]] = max(size.get(c["file"], 0), max(o + ln for _, o, ln in c["reqs"]))
    reads = [c for c in cs if c["op"] == "read"]
    mib = [sum(x[2] for x in c["reqs"]) / 2**20 for c in reads]
    per_mib = [(c["reqs"][-1][0] + stall - c["reqs"][0][0]) / m for c, m in zip(reads, mib) if m >= 1]
    cut = [c for c in reads if c["file"] in size
           and max(o + ln for _, o, ln in c["reqs"]) < size[c["file"]]]
    per_req = statistics.mean(gaps) if gaps else float("nan")
    return {
        "FUSE requests/s": n / window,
        "ms per request": 1000 * per_req,
        "requests in the system": n / window * per_req,
        "entry ops at the device": busy / window,
        "requests in flight per thread, most": 2 if overlapped else 1,
        "whole-entry reads": len(reads),
        "read MiB p50": quantile(mib, 0.5),
        "read MiB p95": quantile(mib, 0.95),
        "read s per MiB p50": quantile(per_mib, 0.5),
        "read s per MiB p95": quantile(per_mib, 0.95),
        "reads cut": len(cut),
        "cut reads' unread GiB": sum(size[c["file"]] - max(o + ln for _, o, ln in c["reqs"])
                                     for c in cut) / 2**30,
    }
