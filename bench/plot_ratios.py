#!/usr/bin/env python3
"""Plot the benchmarks' speed ratios per operation as an SVG (standard library only).

Reads the JSON files the benchmarks write and draws one bar per shape, grouped
by operation, each bar the ratio peer time / mgpu time (> 1: mgpu faster),
drawn from a line at 1.0x, with the geometric mean of each operation as a
dashed line and in the group's heading. Understood inputs:
  - mgpu-bench --json            GEMM fp16/bf16 rows (peer cuBLAS) and, with
                                 --fp8 / --epilogue, rows with "peer": "cuBLASLt";
  - bench/gather_bench.py --json gather rows (peer torch.index_select);
  - bench/attention_bench.py --json  attention forward rows (peer cuDNN through
                                 SDPA; the flash backend's geometric mean is
                                 printed in the heading).
Rows with "ok": false or without a ratio are not drawn (the heading counts
them). The output depends only on the inputs: no dates, no random numbers.

Run from the repository root, after bench/device_check.sh wrote its JSON:
    python3 bench/plot_ratios.py docs/performance-data -o docs/performance.svg
(a directory stands for its *.json files in name order).
"""
import argparse
import json
import math
import os
import sys
from xml.sax.saxutils import escape

# Operations in drawing order: key, heading, peer named in the heading.
OPERATIONS = [
    ("gemm16", "GEMM fp16 / bf16", "cuBLAS"),
    ("gemm_lt", "GEMM fp8, bias + GELU", "cuBLASLt"),
    ("gather", "Gather", "index_select"),
    ("attention", "Attention forward", "cuDNN"),
    ("attention_bwd", "Attention backward", "cuDNN"),
]

BAR_W = 12          # px per bar
BAR_GAP = 4         # px between bars
GROUP_GAP = 36      # px between operations
MIN_GROUP_W = 150   # px: room for a group's heading
PLOT_H = 300        # px of the ratio axis
LEFT = 56           # px left of the first group (axis labels)
TOP = 96            # px above the plot (title, group headings)
LABEL_H = 215       # px below the plot (rotated shape labels)
AXIS_CLIP = 1.5     # ratios above this are drawn clipped, with their value
FONT = "font-family=\"DejaVu Sans, Arial, sans-serif\""
FASTER, SLOWER, NEUTRAL = "#2e7d5b", "#c2553a", "#333333"


def cube_or_dims(m, n, k):
    return "%d³" % m if m == n == k else "%d×%d×%d" % (m, n, k)


def gemm_bars(doc):
    """(operation key, label, ratio or None) for each row of an mgpu-bench file."""
    out = []
    for r in doc.get("results", []):
        dims = cube_or_dims(r["m"], r["n"], r["k"])
        if r.get("batch", 1) > 1:
            dims = "%d×%s" % (r["batch"], dims)
        lt = r.get("peer") == "cuBLASLt" or r.get("dtype") not in ("bf16", "f16")
        ok = r.get("ok", True) and r.get("ratio")
        out.append(("gemm_lt" if lt else "gemm16", "%s %s" % (dims, r["dtype"]), r["ratio"] if ok else None))
    return out


def gather_bars(doc):
    out = []
    for r in doc.get("results", []):
        n = r["n"]
        count = "2^%d" % (n.bit_length() - 1) if n & (n - 1) == 0 else str(n)
        out.append(("gather", "%d B rows × %s" % (r["row_bytes"], count), r.get("ratio") or None))
    return out


def attention_bars(doc):
    """Bars against cuDNN; the flash ratios ride along for the heading."""
    out = []
    short = {"bfloat16": "bf16", "float16": "f16"}
    for r in doc.get("rows", []):
        label = "%s %d×%d h%d/%d d%d%s" % (short.get(r["dtype"], r["dtype"]), r["B"], r["S"], r["Hq"], r["Hkv"],
                                          r["D"], " causal" if r["causal"] else "")
        out.append(("attention", label, r.get("cudnn_ratio"), r.get("flash_ratio")))
    for r in doc.get("rows", []):
        if r.get("cudnn_bwd_ratio") is not None:
            label = "%s %d×%d h%d/%d d%d%s" % (short.get(r["dtype"], r["dtype"]), r["B"], r["S"], r["Hq"],
                                              r["Hkv"], r["D"], " causal" if r["causal"] else "")
            out.append(("attention_bwd", label, r["cudnn_bwd_ratio"], None))
    return out


def read_inputs(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json"))
        else:
            files.append(p)
    groups = {key: [] for key, _, _ in OPERATIONS}
    flash = []
    devices = []
    for path in files:
        with open(path) as f:
            doc = json.load(f)
        if doc.get("device") and doc["device"] not in devices:
            devices.append(doc["device"])
        if "rows" in doc:
            for key, label, ratio, fl in attention_bars(doc):
                groups[key].append((label, ratio))
                if fl:
                    flash.append(fl)
        elif doc.get("results") and "row_bytes" in doc["results"][0]:
            for key, label, ratio in gather_bars(doc):
                groups[key].append((label, ratio))
        elif doc.get("results"):
            for key, label, ratio in gemm_bars(doc):
                groups[key].append((label, ratio))
        else:
            sys.exit("plot_ratios: %s is not a benchmark JSON file this script knows" % path)
    return groups, flash, devices


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def render(groups, flash, devices, title):
    drawn = [r for rows in groups.values() for _, r in rows if r]
    lo = min([0.9] + [math.floor(r * 10) / 10 for r in drawn])
    hi = max([1.1] + [math.ceil(min(r, AXIS_CLIP) * 10) / 10 for r in drawn])
    lo = max(lo, 0.0)

    def y(v):
        return TOP + PLOT_H * (hi - min(max(v, lo), hi)) / (hi - lo)

    # layout: x extent of each group
    layout, x = [], LEFT + 10
    for key, heading, peer in OPERATIONS:
        rows = groups[key]
        bars_w = max(len(rows), 1) * (BAR_W + BAR_GAP)
        w = max(bars_w, MIN_GROUP_W)
        layout.append((key, heading, peer, rows, x, w, x + (w - bars_w) / 2))
        x += w + GROUP_GAP
    width = int(x - GROUP_GAP + 20)
    height = TOP + PLOT_H + LABEL_H

    s = []
    s.append('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">' %
             (width, height, width, height))
    s.append('<rect width="100%%" height="100%%" fill="#ffffff"/>')
    s.append('<text x="%d" y="22" %s font-size="15" font-weight="bold" fill="%s">%s</text>' %
             (LEFT, FONT, NEUTRAL, escape(title)))
    sub = "ratio = peer time / mgpu time (> 1: mgpu faster); dashed: geometric mean per operation"
    if devices:
        sub = "; ".join(devices) + " — " + sub
    s.append('<text x="%d" y="40" %s font-size="11" fill="#555555">%s</text>' % (LEFT, FONT, escape(sub)))

    # axis: ticks every 0.1, labelled every 0.1 (0.2 when the range is wide)
    step = 1 if hi - lo <= 1.0 + 1e-9 else 2
    t = int(round(lo * 10))
    while t <= int(round(hi * 10)):
        v = t / 10
        yy = y(v)
        s.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4" stroke-width="1"/>' %
                 (LEFT, yy, width - 10, yy))
        if t % step == 0:
            s.append('<text x="%d" y="%.1f" %s font-size="10" text-anchor="end" fill="#555555">%.1f×</text>' %
                     (LEFT - 6, yy + 3.5, FONT, v))
        t += 1
    s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999999" stroke-width="1"/>' %
             (LEFT, TOP, LEFT, TOP + PLOT_H))

    for key, heading, peer, rows, gx, gw, bx in layout:
        ratios = [r for _, r in rows if r]
        gm = geomean(ratios)
        missing = len(rows) - len(ratios)
        s.append('<text x="%.1f" y="%d" %s font-size="12" font-weight="bold" text-anchor="middle" fill="%s">%s</text>'
                 % (gx + gw / 2, TOP - 38, FONT, NEUTRAL, escape(heading)))
        line2 = "vs %s" % peer
        if gm:
            line2 += ": geomean %.3f× (%d)" % (gm, len(ratios))
        s.append('<text x="%.1f" y="%d" %s font-size="11" text-anchor="middle" fill="%s">%s</text>' %
                 (gx + gw / 2, TOP - 22, FONT, NEUTRAL, escape(line2)))
        notes = []
        if key == "attention" and flash:
            notes.append("vs flash: geomean %.3f×" % geomean(flash))
        if missing:
            notes.append("%d not drawn (failed or refused)" % missing)
        if notes:
            s.append('<text x="%.1f" y="%d" %s font-size="10" text-anchor="middle" fill="#555555">%s</text>' %
                     (gx + gw / 2, TOP - 8, FONT, escape("; ".join(notes))))
        if not rows:
            s.append('<text x="%.1f" y="%.1f" %s font-size="11" text-anchor="middle" fill="#777777">'
                     'no data in the inputs</text>' % (gx + gw / 2, y(1.0) - 8, FONT))
        y1 = y(1.0)
        for i, (label, r) in enumerate(rows):
            cx = bx + i * (BAR_W + BAR_GAP) + BAR_GAP / 2
            if r:
                yr = y(r)
                top, h = min(yr, y1), abs(yr - y1)
                s.append('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s: %.3f×</title></rect>'
                         % (cx, top, BAR_W, max(h, 1.0), FASTER if r >= 1.0 else SLOWER, escape(label), r))
                if r > hi:
                    s.append('<text x="%.1f" y="%.1f" %s font-size="8" text-anchor="middle" fill="%s">%.1f</text>'
                             % (cx + BAR_W / 2, TOP - 1, FONT, NEUTRAL, r))
            lx, ly = cx + BAR_W / 2 + 3.5, TOP + PLOT_H + 8
            s.append('<text x="%.1f" y="%.1f" %s font-size="10" text-anchor="end" fill="%s" '
                     'transform="rotate(-90 %.1f %.1f)">%s</text>' % (lx, ly, FONT, NEUTRAL, lx, ly, escape(label)))
        if gm:
            s.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" '
                     'stroke-dasharray="5,3"/>' % (gx, y(gm), gx + gw, y(gm), NEUTRAL))
        s.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.2"/>' %
                 (gx - 4, y1, gx + gw + 4, y1, NEUTRAL))
    s.append("</svg>")
    return "\n".join(s) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", help="benchmark JSON files or directories of them")
    ap.add_argument("-o", "--output", default="docs/performance.svg")
    ap.add_argument("--title", default="libmgpukernels: speed against the library a user would pick instead")
    args = ap.parse_args()
    groups, flash, devices = read_inputs(args.inputs)
    svg = render(groups, flash, devices, args.title)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(svg)
    for key, heading, peer in OPERATIONS:
        ratios = [r for _, r in groups[key] if r]
        gm = geomean(ratios)
        print("%-24s vs %-13s %s" % (heading, peer, "%.3fx over %d" % (gm, len(ratios)) if gm else "no data"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
