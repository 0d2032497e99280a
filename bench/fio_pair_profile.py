#!/usr/bin/env python3
"""Where the CPU goes when fio and `iolab fio` run bench/fio_jobs.py's pair of 4k direct
psync reads (a random and a sequential job at once, 2 cores, a loop-ext4 on tmpfs):
each tool's run in a fresh file system, its files laid out by a first short run (not
measured), then the measured run under `perf stat -a` (system-wide CPU, context
switches, migrations) or `perf record -a` (CPU samples by command: the tool's workers,
its other threads, the loop device's kernel worker, idle). Tools alternate, REPEAT
rounds. Prints per run: IOPS of each job and together, then the perf figures, so the
cost per I/O of the tool and of the kernel can be compared.

Usage: bench/fio_pair_profile.py [--repeat N] [--runs N] [--runtime S] [--tools fio,fio-thread,iolab]
                                 [--record | --wakeups | --migrations] [--extra ARGS]
Needs: root, fio and perf on PATH, a release build of iolab (IOLAB=path for another).
"""

import argparse
import collections
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from io500 import FreshFs, sh  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.environ.get("IOLAB") or os.path.join(ROOT, "target", "release", "iolab")


def pair(rt, extra):
    s5 = ["--ioengine=psync", "--iodepth=1", "--direct=1", "--numjobs=1", "--time_based",
          f"--runtime={rt}", "--size=256m", *extra]
    return ["--name=fast", "--rw=randread", "--bs=4k", *s5, "--name=slow", "--rw=read", "--bs=4k", *s5]


def command(tool, d, args):
    """fio (its jobs as processes, its default), fio-thread (fio's --thread: the jobs as
    threads of one process, as iolab runs them) or iolab; each tool in its own directory."""
    head = {"fio": ["fio"], "fio-thread": ["fio", "--thread"],
            "iolab": [IOLAB, "fio", "--no-store", "--keep"]}[tool]
    sub = os.path.join(d, "fio" if tool.startswith("fio") else "iolab")
    os.makedirs(sub, exist_ok=True)
    return head + ["--output-format=json", f"--directory={sub}", *args]


def iops(out):
    jobs = json.loads(out)["jobs"]
    return [j["read"]["iops"] for j in jobs]


def busy_steal():
    """The machine's busy CPU seconds so far and those the hypervisor took (/proc/stat)."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(f[:7]) - f[3] - f[4]) / hz, f[7] / hz


def perf_stat(cmd):
    """IOPS by job; the tool's own CPU (user, system: its rusage, children included) and
    context switches; the machine's busy CPU; system-wide context switches and
    migrations (perf stat -a)."""
    tmp = tempfile.NamedTemporaryFile(prefix="perf-stat-", delete=False).name
    before, (busy0, steal0) = resource.getrusage(resource.RUSAGE_CHILDREN), busy_steal()
    out = subprocess.run(["perf", "stat", "-a", "-x,", "-o", tmp, "-e",
                          "context-switches,cpu-migrations", "--", *cmd],
                         check=True, capture_output=True, text=True).stdout
    after, (busy1, steal1) = resource.getrusage(resource.RUSAGE_CHILDREN), busy_steal()
    stats = {
        "user": after.ru_utime - before.ru_utime,
        "sys": after.ru_stime - before.ru_stime,
        "tool_cs": (after.ru_nvcsw - before.ru_nvcsw) + (after.ru_nivcsw - before.ru_nivcsw),
        "busy": busy1 - busy0,
        "steal": steal1 - steal0,
    }
    for line in open(tmp):
        f = line.strip().split(",")
        if len(f) > 2 and f[0] and f[0][0].isdigit():
            stats[f[2]] = float(f[0])
    os.remove(tmp)
    return iops(out), stats


def perf_record(cmd):
    """IOPS by job and the share of CPU samples by command (thread name)."""
    data = tempfile.NamedTemporaryFile(prefix="perf-", suffix=".data", delete=False).name
    out = subprocess.run(["perf", "record", "-a", "-F", "997", "-q", "-o", data, "--", *cmd],
                         check=True, capture_output=True, text=True).stdout
    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "comm", "-q"],
                         check=True, capture_output=True, text=True).stdout
    os.remove(data)
    shares = collections.Counter()
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(.+)$", line)
        if m:
            # The loop device's kernel workers and others like them by kind, not number.
            name = re.sub(r"[/:]\d+.*$|-\d+$", "", m.group(2).strip())
            shares[name] += float(m.group(1))
    return iops(out), shares


def measure(a, tool, cmd):
    """One measured run, printed; returns its IOPS (both jobs together)."""
    if a.migrations:
        ios, moved = perf_migrations(cmd)
        top = ", ".join(f"{k} {v}" for k, v in moved.most_common(4))
        print(f"{tool:10} IOPS {sum(ios):8.0f} ({' + '.join(f'{x:.0f}' for x in ios)})  migrations: {top}",
              flush=True)
        return sum(ios)
    if a.wakeups:
        ios, c = perf_wakeups(cmd)
        n = max(sum(ios) * a.runtime, 1)
        parts = []
        for who in ("tool", "kworker", "ksoftirqd", "other"):
            total = c[who, False] + c[who, True]
            parts.append(f"{who} {total / n:4.2f}/IO ({100 * c[who, True] / max(total, 1):3.0f}% remote)")
        print(f"{tool:10} IOPS {sum(ios):8.0f} ({' + '.join(f'{x:.0f}' for x in ios)})  wakeups: "
              + ", ".join(parts) + f"; the two busiest threads on CPU 0: {c['placement']}", flush=True)
        return sum(ios)
    if a.record:
        ios, shares = perf_record(cmd)
        top = ", ".join(f"{k} {v:.1f}%" for k, v in shares.most_common(8))
        print(f"{tool:10} IOPS {sum(ios):8.0f} ({' + '.join(f'{x:.0f}' for x in ios)}): {top}", flush=True)
        return sum(ios)
    ios, st = perf_stat(cmd)
    n = max(sum(ios) * a.runtime, 1)

    def us(s):
        return s * 1e6 / n

    print(f"{tool:10} IOPS {sum(ios):8.0f} ({' + '.join(f'{x:.0f}' for x in ios)})"
          f"  us/IO: tool user {us(st['user']):5.2f} sys {us(st['sys']):5.2f}"
          f" machine busy {us(st['busy']):5.2f} steal {us(st['steal']):5.2f}"
          f"  cs/IO tool {st['tool_cs'] / n:4.2f} all {st.get('context-switches', 0) / n:4.2f}"
          f"  migrations {st.get('cpu-migrations', 0):6.0f}", flush=True)
    return sum(ios)


def perf_wakeups(cmd):
    """IOPS by job and the wakeups during the run (perf's sched_wakeup, system-wide) by
    whom they wake (the tool's threads, kernel workers such as the loop device's,
    others) and whether the woken task is placed on another CPU than the waker's: such
    a wakeup sends that CPU an interrupt, and on this VM (haltpoll without guest
    polling) an idle vCPU is halted, so the wakeup waits for the hypervisor."""
    data = tempfile.NamedTemporaryFile(prefix="perf-", suffix=".data", delete=False).name
    out = subprocess.run(["perf", "record", "-a", "-q", "-e", "sched:sched_wakeup", "-o", data,
                          "--", *cmd], check=True, capture_output=True, text=True).stdout
    text = subprocess.run(["perf", "script", "-i", data, "-F", "cpu,trace"], check=True,
                          capture_output=True, text=True).stdout
    os.remove(data)
    counts = collections.Counter()
    # Where the tool's threads are woken: by thread, how often on CPU 0.
    placed = collections.defaultdict(collections.Counter)
    for line in text.splitlines():
        m = re.match(r"\s*\[(\d+)\]\s+comm=(.+?) pid=(\d+) prio=\d+ target_cpu=(\d+)", line)
        if not m:
            continue
        comm = m.group(2)
        who = ("tool" if comm.startswith(("fio", "iolab")) else
               "kworker" if comm.startswith("kworker") else
               "ksoftirqd" if comm.startswith("ksoftirqd") else "other")
        counts[who, int(m.group(1)) != int(m.group(4))] += 1
        if who == "tool":
            placed[m.group(3)][int(m.group(4))] += 1
    busiest = sorted(placed.values(), key=lambda c: -sum(c.values()))[:2]
    counts["placement"] = " ".join(f"{100 * c[0] / sum(c.values()):3.0f}%" for c in busiest)
    return iops(out), counts


def summary(tools, seen):
    """Each tool's median IOPS and spread (max/min), and the median of each turn's own
    ratio to the first tool (the runs of a turn are back to back on one file system)."""
    first = tools[0]
    for tool in tools:
        x = seen[tool]
        line = f"{tool:10} median IOPS {statistics.median(x):8.0f}  max/min {max(x) / max(min(x), 1):4.2f}"
        if tool != first:
            ratios = [y / max(f, 1) for f, y in zip(seen[first], x)]
            line += (f"  {tool}/{first}: of medians {statistics.median(x) / statistics.median(seen[first]):5.3f},"
                     f" paired median {statistics.median(ratios):5.3f} (quartiles"
                     f" {statistics.quantiles(ratios, n=4)[0]:5.3f}-{statistics.quantiles(ratios, n=4)[2]:5.3f},"
                     f" n={len(ratios)})")
        print(line, flush=True)


def perf_migrations(cmd):
    """IOPS by job and the tasks the scheduler moved to another CPU during the run
    (perf's sched_migrate_task, system-wide), by command (numbers left out)."""
    data = tempfile.NamedTemporaryFile(prefix="perf-", suffix=".data", delete=False).name
    out = subprocess.run(["perf", "record", "-a", "-q", "-e", "sched:sched_migrate_task", "-o", data,
                          "--", *cmd], check=True, capture_output=True, text=True).stdout
    text = subprocess.run(["perf", "script", "-i", data, "-F", "trace"], check=True,
                          capture_output=True, text=True).stdout
    os.remove(data)
    moved = collections.Counter()
    for line in text.splitlines():
        m = re.search(r"comm=(.+?) pid=\d+", line)
        if m:
            moved[re.sub(r"[:/]?\d+$", "", m.group(1))] += 1
    return iops(out), moved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="rounds, each on a fresh file system")
    ap.add_argument("--runs", type=int, default=2, help="measured runs of each tool a round")
    ap.add_argument("--runtime", type=int, default=4)
    ap.add_argument("--tools", default="fio,iolab", help="of fio, fio-thread, iolab")
    ap.add_argument("--record", action="store_true", help="perf record by command instead of perf stat")
    ap.add_argument("--wakeups", action="store_true", help="count wakeups, local and remote")
    ap.add_argument("--migrations", action="store_true", help="count migrations by command")
    ap.add_argument("--extra", default="", help="more fio options for both jobs, space separated")
    ap.add_argument("--size-mib", type=int, default=1536)
    a = ap.parse_args()
    args = pair(a.runtime, a.extra.split())
    base = tempfile.mkdtemp(prefix="iolab-fio-pair-")
    os.makedirs(os.path.join(base, "backing"))
    sh("mount", "-t", "tmpfs", "-o", f"size={a.size_mib + 256}m", "tmpfs", os.path.join(base, "backing"))
    try:
        tools = a.tools.split(",")
        seen = {tool: [] for tool in tools}
        for r in range(a.repeat):
            # One fresh file system a round; the tools take turns on it, the order
            # rotating, RUNS times each (reads leave it as it was).
            with FreshFs(base, "ext4", a.size_mib) as d:
                for tool in tools:
                    # Lay the files out first, unmeasured (fio reuses its files, iolab its
                    # kept ones; fio and fio-thread share theirs).
                    subprocess.run(command(tool, d, pair(1, a.extra.split())), check=True,
                                   capture_output=True)
                order = tools[r % len(tools):] + tools[:r % len(tools)]
                for _ in range(a.runs):
                    turn = {tool: measure(a, tool, command(tool, d, args)) for tool in order}
                    for tool in tools:
                        seen[tool].append(turn[tool])
        summary(tools, seen)
    finally:
        subprocess.run(["umount", os.path.join(base, "backing")], check=False)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
