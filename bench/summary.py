#!/usr/bin/env python3
"""BENCHMARKS.md's summary: the table at its top and the chart of every ratio, both drawn
from bench/summary.json (one entry per comparison; `was` keeps the long row the table had
before, command included). Python's standard library only.

    bench/summary.py            rewrite the table in BENCHMARKS.md and bench/summary.svg
    bench/summary.py --print table|svg   print one of them (the test compares them with
                                          the files: crates/cli/tests/cli/benchmarks_doc.rs)

An entry: `what` (short), `ratio_text` (the table's cell), `ratio` (the headline figure,
iolab over the peer, or null when only a range was recorded), `low`/`high` (the range of
the ratios behind it, or null), `spread` (the larger of the tools' own highest-over-lowest
run in that set, or null), `date`, `section` (the anchor of its section below).
"""
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "summary.json")
SVG = os.path.join(HERE, "summary.svg")
DOC = os.path.join(HERE, "..", "BENCHMARKS.md")
BEGIN = "<!-- summary.py: table begins -->"
END = "<!-- summary.py: table ends -->"

# The chart's horizontal axis: ratios on a log scale.
LO, HI = 0.4, 16.0
TICKS = [0.5, 0.8, 1.0, 1.25, 2.0, 4.0, 8.0, 16.0]
LABEL_W, PLOT_W, ROW_H, TOP, BOTTOM = 290, 440, 14, 34, 34


def load():
    with open(DATA, encoding="utf-8") as f:
        return json.load(f)


def slug(label):
    """A short reference key from a link label: "IO500 on real storage" -> "io500-real"."""
    words = [w for w in re.split(r"[^a-z0-9]+", label.lower()) if w]
    words = [w for w in words if w not in ("iolab", "on", "the", "and", "of", "at", "storage")]
    return "-".join(words)[:14].strip("-") or "section"


def link_keys(entries):
    """One short reference key per section anchor, from the old row's link label."""
    keys, used = {}, set()
    for e in entries:
        if e["section"] in keys:
            continue
        base = slug(e["was"]["link"])
        key, n = base, 2
        while key in used:
            key, n = f"{base}-{n}", n + 1
        keys[e["section"]] = key
        used.add(key)
    return keys


def table(entries):
    keys = link_keys(entries)
    lines = [
        "| comparison (section) | iolab / peer | spread | date |",
        "|---|---|---|---|",
    ]
    for e in entries:
        spread = f"{e['spread']:.3g}" if e["spread"] else ""
        lines.append(
            f"| [{e['what']}][{keys[e['section']]}] | {e['ratio_text']} | {spread} | {e['date']} |"
        )
    lines.append("")
    for anchor, key in keys.items():
        lines.append(f"[{key}]: #{anchor}")
    return "\n".join(lines) + "\n"


def x_of(v):
    v = min(max(v, LO), HI)
    return LABEL_W + PLOT_W * (math.log(v) - math.log(LO)) / (math.log(HI) - math.log(LO))


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(entries):
    width = LABEL_W + PLOT_W + 20
    height = TOP + ROW_H * len(entries) + BOTTOM
    bottom = TOP + ROW_H * len(entries)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="8" y="14" font-weight="bold">iolab / peer (log scale): '
        "dot the ratio, bar the range of ratios, whisker the tools' spread</text>",
    ]
    for t in TICKS:
        x = x_of(t)
        colour = "#888" if t == 1.0 else "#ddd"
        out.append(
            f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{bottom}" stroke="{colour}"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">{t:g}</text>'
        )
    for i, e in enumerate(entries):
        y = TOP + ROW_H * i + ROW_H / 2
        if i % 2 == 0:
            out.append(
                f'<rect x="0" y="{y - ROW_H / 2:.1f}" width="{width}" height="{ROW_H}" fill="#f6f6f6"/>'
            )
        out.append(
            f'<text x="{LABEL_W - 8}" y="{y + 4:.1f}" text-anchor="end">{esc(e["what"])}</text>'
        )
        centre = e["ratio"]
        if centre and e["spread"]:
            a, b = x_of(centre / e["spread"]), x_of(centre * e["spread"])
            out.append(
                f'<line x1="{a:.1f}" y1="{y:.1f}" x2="{b:.1f}" y2="{y:.1f}" stroke="#999"/>'
            )
            for x in (a, b):
                out.append(
                    f'<line x1="{x:.1f}" y1="{y - 3:.1f}" x2="{x:.1f}" y2="{y + 3:.1f}" stroke="#999"/>'
                )
        if e["low"] is not None and e["high"] is not None:
            a, b = x_of(e["low"]), x_of(e["high"])
            out.append(
                f'<rect x="{a:.1f}" y="{y - 3:.1f}" width="{max(b - a, 1.0):.1f}" height="6" '
                'fill="#4a7ab5" fill-opacity="0.6"/>'
            )
        if centre:
            out.append(
                f'<circle cx="{x_of(centre):.1f}" cy="{y:.1f}" r="3.2" fill="#1b3f6e"/>'
            )
    out.append(
        f'<text x="8" y="{bottom + 30}">'
        "above 1: iolab measured more (drawn from bench/summary.json by bench/summary.py)</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    entries = load()
    if len(argv) == 2 and argv[0] == "--print" and argv[1] in ("table", "svg"):
        sys.stdout.write(table(entries) if argv[1] == "table" else svg(entries))
        return 0
    if argv:
        sys.stderr.write("usage: bench/summary.py [--print table|svg]\n")
        return 2
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    head, rest = doc.split(BEGIN + "\n", 1)
    _, tail = rest.split(END, 1)
    with open(DOC, "w", encoding="utf-8") as f:
        f.write(head + BEGIN + "\n" + table(entries) + END + tail)
    with open(SVG, "w", encoding="utf-8") as f:
        f.write(svg(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
