#!/usr/bin/env python3
"""Paged decode against contiguous decode of the same shape, both mgpu, in one process.

The paged pass of attention_bench.py (same timing and import: its median_ms, rel_err and
import_mgpukernels) over more shapes and page sizes: GQA 64/8 at head dims 64, 128 and 256,
MHA 32/32, pages of 16, 64 and 256 rows, shuffled over the cache; some rows also with the
pages in order (page i of sequence b is page b * pages + i), which separates the cost of many
TMA boxes per key block from that of scattered pages. Each side is timed twice, alternating
(contiguous, paged, contiguous, paged); the cost uses the means of the two medians.

Run: python3 bench/attention_paged_bench.py [--lib build/libmgpukernels.so] [--label NAME]
     [--json out.json]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_bench as ab  # noqa: E402

# (B, Sk, Hq, Hkv, D)
SHAPES = [(8, 32768, 64, 8, 128), (64, 8192, 64, 8, 128), (1, 131072, 64, 8, 128), (8, 32768, 64, 8, 64),
          (8, 16384, 64, 8, 256), (8, 8192, 32, 32, 128)]
PAGES = [16, 64, 256]


def row(mk, handle, b, sk, hq, hkv, d, page, order):
    run_c, run_p, o_c, o_p = ab.paged_case(mk, handle, b, sk, hq, hkv, d, page, shuffled=order == "shuffled")
    r = {"B": b, "Sk": sk, "Hq": hq, "Hkv": hkv, "D": d, "page": page, "order": order, "rel_err": ab.rel_err(o_p, o_c)}
    # contiguous, paged, contiguous, paged: the medians of each pair, the cost from their sums
    c1 = ab.median_ms(run_c)
    p1 = ab.median_ms(run_p)
    c2 = ab.median_ms(run_c)
    p2 = ab.median_ms(run_p)
    r.update({"contiguous_ms": (c1 + c2) / 2, "paged_ms": (p1 + p2) / 2, "c_ms": [c1, c2], "p_ms": [p1, p2]})
    r["paged_cost"] = r["paged_ms"] / r["contiguous_ms"] - 1.0
    r["paged_kv_tbps"] = ab.paged_kv_tbps(b, sk, hkv, d, r["paged_ms"])
    del run_c, run_p, o_c, o_p
    torch.cuda.empty_cache()
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="build/libmgpukernels.so")
    ap.add_argument("--label", default="mgpu")
    ap.add_argument("--json", default=None)
    ap.add_argument("--ordered", default="0:16,0:64", help="shape index:page rows also run with pages in order")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.zeros(1, device="cuda")
    mk = ab.import_mgpukernels(args.lib)
    handle = mk.Handle(stream=torch.cuda.current_stream())
    ordered = {tuple(int(x) for x in s.split(":")) for s in args.ordered.split(",") if s}
    rows = []
    for si, (b, sk, hq, hkv, d) in enumerate(SHAPES):
        for page in PAGES:
            orders = ["shuffled"] + (["ordered"] if (si, page) in ordered else [])
            for order in orders:
                r = row(mk, handle, b, sk, hq, hkv, d, page, order)
                r["label"] = args.label
                rows.append(r)
                print("%-8s B=%-3d Sk=%-6d %d/%d d%-3d page %-3d %-8s contiguous %8.1f us  paged %8.1f us  %+6.1f %%  "
                      "(%.1f/%.1f, %.1f/%.1f) rel %.1e" %
                      (args.label, b, sk, hq, hkv, d, page, order, r["contiguous_ms"] * 1e3, r["paged_ms"] * 1e3,
                       100 * r["paged_cost"], r["c_ms"][0] * 1e3, r["c_ms"][1] * 1e3, r["p_ms"][0] * 1e3,
                       r["p_ms"][1] * 1e3, r["rel_err"]), flush=True)
    handle.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "label": args.label,
                       "rows": rows}, f, indent=1)
    bad = [r for r in rows if not r["rel_err"] <= 1e-3]
    print("%s: %d of %d rows within 1e-3 of contiguous" % (args.label, len(rows) - len(bad), len(rows)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
