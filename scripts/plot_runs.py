#!/usr/bin/env python3
"""plot_runs.py - one SVG chart of several runs' elo.csv files against wall
time (the `minutes` column the evaluator writes), for docs/results.md.

    scripts/plot_runs.py OUT.svg COLUMN LABEL=RUN_DIR/elo.csv [...] \
        [--title T] [--ylabel Y] [--ymin A --ymax B] [--hline V=LABEL]...

COLUMN is an elo.csv column (acc_q, acc_beam, acc_v, elo); a series given
as LABEL=RUN_DIR/elo.csv:COLUMN plots that column instead. A LABEL ends at
the last "=". Uses only the standard library; rsvg-convert makes a PNG of
it if wanted.
"""
import csv
import html
import math
import sys

COLOURS = ["#1f5fa8", "#b0413e", "#2e8b3a", "#7b3fa6", "#e07b12", "#6e6e6e",
           "#17a2b8", "#8c564b"]


def nice_step(span, target=6):
    raw = span / max(target, 1)
    p = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * p >= raw:
            return m * p
    return 10 * p


def main(argv):
    args, opts, hlines = [], {}, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--title", "--ylabel", "--ymin", "--ymax"):
            opts[a[2:]] = argv[i + 1]
            i += 2
        elif a == "--hline":
            v, _, lab = argv[i + 1].partition("=")
            hlines.append((float(v), lab))
            i += 2
        else:
            args.append(a)
            i += 1
    if len(args) < 3:
        sys.stderr.write(__doc__)
        return 2
    out, col = args[0], args[1]
    series = []
    for spec in args[2:]:
        label, _, path = spec.rpartition("=")
        path, _, own = path.partition(":")
        pts = []
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                x, y = row.get("minutes", ""), row.get(own or col, "")
                if x and y:
                    pts.append((float(x), float(y)))
        pts.sort()
        series.append((label, pts))
    xs = [x for _, p in series for x, _ in p] or [0, 1]
    ys = [y for _, p in series for _, y in p] or [0, 1]
    x0, x1 = 0.0, max(xs) if max(xs) > 0 else 1.0
    y0 = float(opts.get("ymin", min(ys + [v for v, _ in hlines])))
    y1 = float(opts.get("ymax", max(ys + [v for v, _ in hlines])))
    if y1 <= y0:
        y1 = y0 + 1
    W, H, L, R, T, B = 820, 480, 70, 230, 40, 50
    pw, ph = W - L - R, H - T - B

    def px(x):
        return L + (x - x0) / (x1 - x0) * pw

    def py(y):
        return T + ph - (y - y0) / (y1 - y0) * ph

    o = ['<?xml version="1.0" encoding="UTF-8"?>',
         f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>']
    if "title" in opts:
        o.append(f'<text x="{L + pw / 2}" y="22" text-anchor="middle" '
                 f'font-size="15" font-weight="bold">{html.escape(opts["title"])}</text>')
    step = nice_step(x1 - x0)
    t = 0.0
    while t <= x1 + 1e-9:
        o.append(f'<line x1="{px(t):.1f}" y1="{T}" x2="{px(t):.1f}" y2="{T + ph}" stroke="#eee"/>')
        o.append(f'<text x="{px(t):.1f}" y="{T + ph + 16}" text-anchor="middle">{t:g}</text>')
        t += step
    step = nice_step(y1 - y0)
    t = math.ceil(y0 / step) * step
    while t <= y1 + 1e-9:
        o.append(f'<line x1="{L}" y1="{py(t):.1f}" x2="{L + pw}" y2="{py(t):.1f}" stroke="#eee"/>')
        o.append(f'<text x="{L - 6}" y="{py(t) + 4:.1f}" text-anchor="end">{t:.4g}</text>')
        t += step
    o.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    o.append(f'<text x="{L + pw / 2}" y="{H - 10}" text-anchor="middle">wall time (minutes)</text>')
    o.append(f'<text transform="translate(18,{T + ph / 2}) rotate(-90)" text-anchor="middle">'
             f'{html.escape(opts.get("ylabel", col))}</text>')
    for v, lab in hlines:
        o.append(f'<line x1="{L}" y1="{py(v):.1f}" x2="{L + pw}" y2="{py(v):.1f}" '
                 f'stroke="#999" stroke-dasharray="6,4"/>')
        o.append(f'<text x="{L + pw - 4}" y="{py(v) - 4:.1f}" text-anchor="end" '
                 f'fill="#666">{html.escape(lab)}</text>')
    for k, (label, pts) in enumerate(series):
        c = COLOURS[k % len(COLOURS)]
        if pts:
            d = " ".join(f'{"M" if j == 0 else "L"}{px(x):.1f},{py(y):.1f}'
                         for j, (x, y) in enumerate(pts))
            o.append(f'<path d="{d}" fill="none" stroke="{c}" stroke-width="2"/>')
            for x, y in pts:
                o.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{c}"/>')
        ly = T + 14 + 20 * k
        o.append(f'<line x1="{L + pw + 14}" y1="{ly - 4}" x2="{L + pw + 38}" y2="{ly - 4}" '
                 f'stroke="{c}" stroke-width="2"/>')
        o.append(f'<text x="{L + pw + 44}" y="{ly}">{html.escape(label)}</text>')
    o.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(o) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
