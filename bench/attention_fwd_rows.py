#!/usr/bin/env python3
"""Attention forward rows at head dim 64: mgpu against SDPA cuDNN, in one process.

The library (--lib, loaded by the repository's python/mgpukernels) and PyTorch's SDPA with
the cuDNN backend time each row of ROWS alternately, ROUNDS rounds of (cuDNN, mgpu), the
order reversed every other round: CUDA events around single calls (mgpu's prepared), the
median of RUNS after WARMUP. Each row is first cross-checked (relative error of mgpu's O
against cuDNN's). Prints one line a row (both times per round, their ratio cuDNN / mgpu)
and writes the rows to --json. --once runs each row once untimed (with MGPU_LOG=1: the
plans). Used for the A/B of two builds, one process each, alternated (decision
063-attention-forward-d64-wide-tile).

Run: python3 bench/attention_fwd_rows.py --lib build/libmgpukernels.so --tag new [--json out.json]
     [--rows 0,1] [--once]
"""
import argparse, json, os, statistics, sys
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROWS = [  # dtype, B, S, Hq, Hkv, D, causal
    ("bf16", 4, 4096, 32, 32, 64, False), ("bf16", 4, 4096, 32, 32, 64, True),
    ("bf16", 8, 8192, 32, 32, 64, False), ("bf16", 8, 8192, 32, 32, 64, True),
    ("bf16", 16, 1024, 32, 32, 64, False), ("bf16", 16, 1024, 32, 32, 64, True),
    ("bf16", 4, 4096, 32, 8, 64, False), ("bf16", 4, 4096, 32, 8, 64, True),
    ("f16", 4, 4096, 32, 32, 64, False),
]
WARMUP, RUNS, ROUNDS = 5, 25, 3


def med(fn):
    for _ in range(WARMUP):
        fn()
    s = [torch.cuda.Event(enable_timing=True) for _ in range(RUNS)]
    e = [torch.cuda.Event(enable_timing=True) for _ in range(RUNS)]
    for i in range(RUNS):
        s[i].record(); fn(); e[i].record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in zip(s, e)) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--json", default=None)
    ap.add_argument("--once", action="store_true", help="each row once (with MGPU_LOG=1: the plans)")
    ap.add_argument("--rows", default=None, help="comma-separated row indices")
    a = ap.parse_args()
    os.environ["MGPU_LIBRARY"] = os.path.abspath(a.lib)
    torch.zeros(1, device="cuda")
    sys.path.insert(0, os.path.join(os.getcwd(), "python"))
    import mgpukernels as mk
    h = mk.Handle(stream=torch.cuda.current_stream())
    torch.manual_seed(0)
    out = []
    idx = [int(x) for x in a.rows.split(",")] if a.rows else range(len(ROWS))
    for i in idx:
        dt, b, s, hq, hkv, d, causal = ROWS[i]
        dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dt]
        q = torch.randn(b, s, hq, d, device="cuda", dtype=dtype)
        k = torch.randn(b, s, hkv, d, device="cuda", dtype=dtype)
        v = torch.randn(b, s, hkv, d, device="cuda", dtype=dtype)
        o = torch.full_like(q, float("nan"))
        lse = torch.full((b, hq, s), float("nan"), device="cuda", dtype=torch.float32)
        run = mk.attention_fwd(q, k, v, o, lse, causal=causal, handle=h, prepare=True)
        run(); torch.cuda.synchronize()
        if a.once:
            continue
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        def cud():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=hq != hkv)
        ref = cud().transpose(1, 2)
        err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
        rc, rm = [], []
        for r in range(ROUNDS):
            if r % 2 == 0:
                rc.append(med(cud)); rm.append(med(run))
            else:
                rm.append(med(run)); rc.append(med(cud))
        row = dict(tag=a.tag, row=i, dtype=dt, B=b, S=s, Hq=hq, Hkv=hkv, D=d, causal=causal, rel_err=err,
                   cudnn_us=rc, mgpu_us=rm, ratio=[c / m for c, m in zip(rc, rm)])
        out.append(row)
        print("%-8s %-4s %2dx%-5d %2d/%-2d d%d %-6s cudnn %s mgpu %s ratio %s err %.1e" % (
            a.tag, dt, b, s, hq, hkv, d, "causal" if causal else "", " ".join("%.1f" % x for x in rc),
            " ".join("%.1f" % x for x in rm), " ".join("%.3f" % x for x in row["ratio"]), err), flush=True)
        del q, k, v, o, lse, run, ref
        torch.cuda.empty_cache()
    h.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
