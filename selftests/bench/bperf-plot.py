#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise 'make bench-bperf' results and plot them as SVG.

    bperf-plot.py bench.csv out.svg

bench.csv holds "mode,tool,N,run,usecs_per_op" lines (mode: cpu, task1
or taskN; tool: base or ours), bpf.csv next to it "mode,tool,N,ns" lines
(ns of the sessions' BPF programs per context switch).  Prints, per mode,
a table of the median usecs/op, the overhead against N = 0 of the same
tool and mode and the BPF ns, checks the goals, and draws one panel a
mode of the overhead against the number of sessions (log scale) in
out.svg.
"""

import csv
import math
import os
import statistics
import sys

TOOLS = {"base": ("upstream 6.12 perf", "#c0392b"),
         "ours": ("this series", "#2471a3")}
MODES = {"cpu": "-a sessions",
         "task1": "-p sessions, all on the threads timed",
         "taskN": "-p sessions, one on the threads timed"}


def load(path):
    """{mode: {tool: {N: median usecs/op}}}"""
    runs = {}
    with open(path) as f:
        for row in csv.reader(f):
            if len(row) != 5 or not row[4]:
                continue
            mode, tool, n, _, usecs = row
            runs.setdefault(mode, {}).setdefault(tool, {}) \
                .setdefault(int(n), []).append(float(usecs))
    return {m: {t: {n: statistics.median(v) for n, v in d.items()}
                for t, d in tools.items()}
            for m, tools in runs.items()}


def load_bpf(path):
    """{mode: {tool: {N: ns}}}"""
    ns = {}
    if not os.path.exists(path):
        return ns
    with open(path) as f:
        for row in csv.reader(f):
            if len(row) == 4 and row[3] not in ("", "-"):
                ns.setdefault(row[0], {}).setdefault(row[1], {})[int(row[2])] = \
                    float(row[3])
    return ns


def overhead(med):
    return {t: {n: u / d[0] for n, u in d.items()} for t, d in med.items()
            if 0 in d}


def table(mode, med, ovh, bpf):
    print(f"\n{mode}: {MODES.get(mode, mode)}")
    print(f"{'N':>6} {'upstream us/op':>15} {'ratio':>7} {'BPF ns':>7}"
          f" {'ours us/op':>11} {'ratio':>7} {'BPF ns':>7}")
    for n in sorted({n for d in med.values() for n in d}):
        cells = []
        for t in ("base", "ours"):
            u = med.get(t, {}).get(n)
            r = ovh.get(t, {}).get(n)
            b = bpf.get(t, {}).get(n)
            cells.append(f"{u:.2f}" if u is not None else "-")
            cells.append(f"{r:.3f}" if r is not None else "-")
            cells.append(f"{b:.0f}" if b is not None else "-")
        print(f"{n:>6} {cells[0]:>15} {cells[1]:>7} {cells[2]:>7}"
              f" {cells[3]:>11} {cells[4]:>7} {cells[5]:>7}")


def goal(text, ok):
    print(f"goal: {text}: {'met' if ok else 'NOT met'}")


def goals(mode, ovh, bpf):
    ours, base = ovh.get("ours", {}), ovh.get("base", {})
    bours, bbase = bpf.get("ours", {}), bpf.get("base", {})
    big = [n for n in ours if n > 0]
    if mode == "cpu" and big:
        worst = max(ours[n] for n in big)
        goal(f"ours(N) <= 1.01 x ours(0) for N = 1..{max(big)}: worst {worst:.3f}",
             worst <= 1.01)
        most = max(bours.get(n, float("inf")) for n in big)
        goal(f"ours: 0 ns of BPF per context switch: most {most:.0f}", most == 0)
    elif mode != "cpu":
        if 1 in bours and 1 in bbase:
            goal(f"ours(1) <= 0.5 x upstream(1), BPF ns: {bours[1]:.0f} vs "
                 f"{0.5 * bbase[1]:.0f}", bours[1] <= 0.5 * bbase[1])
        if 1 in bours and big and max(big) > 1:
            top = max(big)
            goal(f"ours({top}) within 5% of ours(1), BPF ns: {bours.get(top, 0):.0f}"
                 f" vs {bours[1]:.0f}",
                 abs(bours.get(top, 0) - bours[1]) <= 0.05 * bours[1])
    if 1 in ours and 1 in base:
        goal(f"ours(1) <= upstream(1), overhead: {ours[1]:.3f} vs {base[1]:.3f}",
             ours[1] <= base[1])


def panel(ovh, title, ox, oy, w, h):
    left, right, top, bottom = 70, 20, 40, 60
    ns = sorted({n for d in ovh.values() for n in d})
    xmax = math.log10(max(ns) + 1) if ns and max(ns) > 0 else 1
    ymax = max([r for d in ovh.values() for r in d.values()] + [1.0]) * 1.1
    ymin = min([r for d in ovh.values() for r in d.values()] + [1.0]) * 0.95

    def x(n):
        return ox + left + (w - left - right) * math.log10(n + 1) / xmax

    def y(r):
        return oy + top + (h - top - bottom) * (ymax - r) / (ymax - ymin)

    yb = oy + h - bottom
    out = [f'<text x="{ox + w / 2}" y="{oy + 20}" text-anchor="middle" '
           f'font-size="14">{title}</text>',
           f'<line x1="{ox + left}" y1="{yb}" x2="{ox + w - right}" y2="{yb}" '
           'stroke="black"/>',
           f'<line x1="{ox + left}" y1="{oy + top}" x2="{ox + left}" y2="{yb}" '
           'stroke="black"/>',
           f'<text x="{ox + (w + left) / 2}" y="{oy + h - 15}" '
           'text-anchor="middle">sessions N (log scale)</text>',
           f'<text x="{ox + 18}" y="{oy + (h - bottom + top) / 2}" '
           f'text-anchor="middle" transform="rotate(-90 {ox + 18} '
           f'{oy + (h - bottom + top) / 2})">usecs/op relative to N = 0</text>']
    for n in ns:
        out.append(f'<line x1="{x(n):.1f}" y1="{yb}" x2="{x(n):.1f}" '
                   f'y2="{yb + 5}" stroke="black"/>')
        out.append(f'<text x="{x(n):.1f}" y="{yb + 18}" '
                   f'text-anchor="middle">{n}</text>')
    steps = 5
    for i in range(steps + 1):
        r = ymin + (ymax - ymin) * i / steps
        out.append(f'<line x1="{ox + left - 5}" y1="{y(r):.1f}" '
                   f'x2="{ox + w - right}" y2="{y(r):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{ox + left - 8}" y="{y(r) + 4:.1f}" '
                   f'text-anchor="end">{r:.2f}</text>')
    for i, (tool, (label, color)) in enumerate(TOOLS.items()):
        pts = sorted(ovh.get(tool, {}).items())
        if not pts:
            continue
        line = " ".join(f"{x(n):.1f},{y(r):.1f}" for n, r in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="{color}" '
                   'stroke-width="2"/>')
        for n, r in pts:
            out.append(f'<circle cx="{x(n):.1f}" cy="{y(r):.1f}" r="3" '
                       f'fill="{color}"/>')
        ly = oy + top + 10 + 18 * i
        out.append(f'<line x1="{ox + left + 15}" y1="{ly}" x2="{ox + left + 40}" '
                   f'y2="{ly}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{ox + left + 45}" y="{ly + 4}">{label}</text>')
    return out


def svg(ovhs, path):
    w, h = 640, 400
    modes = [m for m in MODES if m in ovhs] + \
        sorted(m for m in ovhs if m not in MODES)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" '
           f'height="{h * max(len(modes), 1)}" font-family="sans-serif" '
           'font-size="12">',
           f'<rect width="{w}" height="{h * max(len(modes), 1)}" fill="white"/>']
    for i, m in enumerate(modes):
        out += panel(ovhs[m], f"pipe round trips with N idle perf stat "
                     f"--bpf-counters {MODES.get(m, m)}", 0, i * h, w, h)
    out.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    meds = load(sys.argv[1])
    bpfs = load_bpf(os.path.join(os.path.dirname(sys.argv[1]), "bpf.csv"))
    ovhs = {m: overhead(med) for m, med in meds.items()}
    for m in [m for m in MODES if m in meds] + \
            sorted(m for m in meds if m not in MODES):
        table(m, meds[m], ovhs[m], bpfs.get(m, {}))
        goals(m, ovhs[m], bpfs.get(m, {}))
    svg(ovhs, sys.argv[2])


if __name__ == "__main__":
    main()
