#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise 'make bench-bperf' results and plot them as SVG.

    bperf-plot.py bench.csv out.svg

bench.csv holds "tool,N,run,usecs_per_op" lines (tool: base or ours).
Prints, per tool and N, the median usecs/op and the overhead against
N = 0 of the same tool, checks the goals, and draws the overhead against
the number of sessions (log scale) in out.svg.  If bpf.csv ("tool,N,ns":
ns of BPF run on sched_switch per context switch) is next to bench.csv,
prints it too.
"""

import csv
import math
import os
import statistics
import sys

TOOLS = {"base": ("upstream 6.12 perf", "#c0392b"),
         "ours": ("this series", "#2471a3")}


def load(path):
    runs = {}
    with open(path) as f:
        for row in csv.reader(f):
            if len(row) != 4 or not row[3]:
                continue
            tool, n, _, usecs = row
            runs.setdefault(tool, {}).setdefault(int(n), []).append(float(usecs))
    med = {t: {n: statistics.median(v) for n, v in d.items()}
           for t, d in runs.items()}
    return med


def overhead(med):
    return {t: {n: u / d[0] for n, u in d.items()} for t, d in med.items()
            if 0 in d}


def table(med, ovh):
    ns = sorted({n for d in med.values() for n in d})
    print(f"{'N':>6} {'upstream us/op':>15} {'ratio':>7} {'ours us/op':>11} {'ratio':>7}")
    for n in ns:
        cells = []
        for t in ("base", "ours"):
            u = med.get(t, {}).get(n)
            r = ovh.get(t, {}).get(n)
            cells.append(f"{u:.2f}" if u is not None else "-")
            cells.append(f"{r:.3f}" if r is not None else "-")
        print(f"{n:>6} {cells[0]:>15} {cells[1]:>7} {cells[2]:>11} {cells[3]:>7}")


def goals(ovh):
    ours, base = ovh.get("ours", {}), ovh.get("base", {})
    if 1 in ours and 38 in ours:
        ok = ours[38] <= 1.3 * ours[1]
        print(f"goal: ours(38) <= 1.3 x ours(1): {ours[38]:.3f} vs "
              f"{1.3 * ours[1]:.3f}: {'met' if ok else 'NOT met'}")
    if 1 in ours and 1 in base:
        ok = ours[1] <= base[1]
        print(f"goal: ours(1) <= upstream(1): {ours[1]:.3f} vs "
              f"{base[1]:.3f}: {'met' if ok else 'NOT met'}")


def svg(ovh, path):
    w, h, left, right, top, bottom = 640, 400, 70, 20, 40, 60
    ns = sorted({n for d in ovh.values() for n in d})
    xmax = math.log10(max(ns) + 1) if ns else 1
    ymax = max([r for d in ovh.values() for r in d.values()] + [1.0]) * 1.1
    ymin = min([r for d in ovh.values() for r in d.values()] + [1.0]) * 0.95

    def x(n):
        return left + (w - left - right) * math.log10(n + 1) / xmax

    def y(r):
        return top + (h - top - bottom) * (ymax - r) / (ymax - ymin)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">'
           'perf bench sched pipe with N idle perf stat --bpf-counters -a sessions</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
           f'<text x="{(w + left) / 2}" y="{h - 15}" text-anchor="middle">'
           'sessions N (log scale)</text>',
           f'<text x="18" y="{(h - bottom + top) / 2}" text-anchor="middle" '
           f'transform="rotate(-90 18 {(h - bottom + top) / 2})">'
           'usecs/op relative to N = 0</text>']
    for n in ns:
        out.append(f'<line x1="{x(n):.1f}" y1="{h - bottom}" x2="{x(n):.1f}" '
                   f'y2="{h - bottom + 5}" stroke="black"/>')
        out.append(f'<text x="{x(n):.1f}" y="{h - bottom + 18}" '
                   f'text-anchor="middle">{n}</text>')
    steps = 5
    for i in range(steps + 1):
        r = ymin + (ymax - ymin) * i / steps
        out.append(f'<line x1="{left - 5}" y1="{y(r):.1f}" x2="{w - right}" '
                   f'y2="{y(r):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y(r) + 4:.1f}" '
                   f'text-anchor="end">{r:.2f}</text>')
    for i, (tool, (label, color)) in enumerate(TOOLS.items()):
        pts = sorted(ovh.get(tool, {}).items())
        if not pts:
            continue
        line = " ".join(f"{x(n):.1f},{y(r):.1f}" for n, r in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="{color}" '
                   'stroke-width="2"/>')
        for n, r in pts:
            out.append(f'<circle cx="{x(n):.1f}" cy="{y(r):.1f}" r="3" fill="{color}"/>')
        ly = top + 10 + 18 * i
        out.append(f'<line x1="{left + 15}" y1="{ly}" x2="{left + 40}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{left + 45}" y="{ly + 4}">{label}</text>')
    out.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def bpf_table(path):
    ns = {}
    with open(path) as f:
        for row in csv.reader(f):
            if len(row) == 3 and row[2] not in ("", "-"):
                ns.setdefault(row[0], {})[int(row[1])] = float(row[2])
    if not ns:
        return
    print()
    print("BPF run on sched_switch, ns per context switch (kernel.bpf_stats_enabled):")
    print(f"{'N':>6} {'upstream':>9} {'ours':>9}")
    for n in sorted({n for d in ns.values() for n in d}):
        cells = [f"{ns[t][n]:.0f}" if n in ns.get(t, {}) else "-"
                 for t in ("base", "ours")]
        print(f"{n:>6} {cells[0]:>9} {cells[1]:>9}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    med = load(sys.argv[1])
    ovh = overhead(med)
    table(med, ovh)
    goals(ovh)
    svg(ovh, sys.argv[2])
    bpf = os.path.join(os.path.dirname(sys.argv[1]), "bpf.csv")
    if os.path.exists(bpf):
        bpf_table(bpf)


if __name__ == "__main__":
    main()
