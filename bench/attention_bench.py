#!/usr/bin/env python3
"""Attention benchmark: libmgpukernels against PyTorch SDPA (cuDNN and flash), forward and backward.

Calls the library through the Python package mgpukernels (python/; the
repository's copy is used when none is installed; --lib sets MGPU_LIBRARY,
the library the package loads) beside PyTorch on the GPU machine and times,
in one process, context and stream, with prepared calls (the timed call is
the C call alone), mgpu_attention_fwd and
mgpu_attention_bwd against torch.nn.functional.scaled_dot_product_attention
with the cuDNN backend and with the flash backend, bf16 and fp16, for the
shapes of issue 4, causal and not. Every tensor is (batch, seq, heads, dim) in
memory (the layout mgpu and FlashAttention read natively; SDPA gets
transposed views of the same memory).

Forward and backward are timed separately. The backward peers are timed with
torch.autograd.grad on a graph built once (the backward kernels only); mgpu's
backward is timed in both modes (deterministic 0 and 1), its workspace
reserved beforehand. Each config is first cross-checked: relative error of
mgpu's O (forward) and dQ, dK, dV (backward) against SDPA's. Timing: CUDA
events around single calls, warm-up, median of the runs. TFLOP/s: forward
4 * B * H * Sq * Sk * D (halved for causal), backward 2.5x that. Ratio =
peer time / mgpu time (> 1: mgpu faster).

Run: python3 bench/attention_bench.py [--lib build/libmgpukernels.so] [--json out.json] [--passes fwd,bwd]
"""
import argparse
import json
import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

WARMUP = 5
RUNS = 30
BWD_FLOP_FACTOR = 2.5  # backward FLOPs per forward FLOP (5 matrix products against 2)
# (B, Sq=Sk, Hq, Hkv, D) of issue 4
SHAPES = [
    (4, 4096, 16, 16, 128),
    (1, 16384, 16, 16, 128),
    (4, 4096, 32, 32, 64),
    (4, 4096, 8, 8, 256),
    (16, 1024, 16, 16, 128),
    (4, 4096, 32, 8, 128),
]


def import_mgpukernels(lib_path):
    """The package mgpukernels, loading lib_path; the repository's python/ when none is installed."""
    os.environ["MGPU_LIBRARY"] = os.path.abspath(lib_path)
    try:
        import mgpukernels
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
        import mgpukernels
    return mgpukernels


def median_ms(fn):
    for _ in range(WARMUP):
        fn()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(RUNS)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(RUNS)]
    for i in range(RUNS):
        start[i].record()
        fn()
        end[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(start, end))


def sdpa_call(backend, q, k, v, causal):
    """SDPA on (B, H, S, D) views; GQA through enable_gqa where the backend takes it."""
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    gqa = q.shape[2] != k.shape[2]

    def call():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=gqa)
    return call


def sdpa_bwd_call(backend, q, k, v, do, causal):
    """The backward of SDPA alone: the forward graph is built once, each call
    runs torch.autograd.grad over it (retain_graph). Returns (call, grads of
    the first call): dq, dk, dv of the (batch, seq, head, dim) leaves."""
    qg, kg, vg = (t.detach().requires_grad_(True) for t in (q, k, v))
    gqa = q.shape[2] != k.shape[2]
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(qg.transpose(1, 2), kg.transpose(1, 2), vg.transpose(1, 2),
                                             is_causal=causal, enable_gqa=gqa)
    dot = do.transpose(1, 2)

    def call():
        with sdpa_kernel(backend):
            return torch.autograd.grad(out, (qg, kg, vg), dot, retain_graph=True)
    return call, call()


def rel_err(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm()).item()


def fmt(x, f):
    return (f % x) if x is not None else "n/a"


def geomeans(rows, peers, suffix):
    for name, _ in peers:
        ratios = [r[name + suffix] for r in rows if r.get(name + suffix)]
        if ratios:
            print("geometric mean vs %s: %.3f over %d configs" % (
                name, math.exp(sum(math.log(x) for x in ratios) / len(ratios)), len(ratios)))


def bench_fwd(mk, handle, peers, row, q, k, v, o, lse, causal, flops):
    run_mgpu = mk.attention_fwd(q, k, v, o, lse, causal=causal, handle=handle, prepare=True)
    run_mgpu()
    torch.cuda.synchronize()
    for name, backend in peers:
        call = sdpa_call(backend, q, k, v, causal)
        try:
            ref = call().transpose(1, 2)
            row[name + "_rel_err"] = rel_err(o, ref)
            row[name + "_ms"] = median_ms(call)
        except RuntimeError as e:  # backend refused this config
            row[name + "_ms"] = None
            row[name + "_error"] = str(e).splitlines()[0][:120]
    row["mgpu_ms"] = median_ms(run_mgpu)
    row["mgpu_tflops"] = flops / row["mgpu_ms"] / 1e9
    for name, _ in peers:
        ms = row.get(name + "_ms")
        row[name + "_tflops"] = flops / ms / 1e9 if ms else None
        row[name + "_ratio"] = ms / row["mgpu_ms"] if ms else None


def bench_bwd(mk, handle, peers, row, q, k, v, o, lse, causal, flops):
    """Backward: needs O and the LSE of mgpu's forward (already in o, lse)."""
    do = torch.randn_like(q)
    dq, dk, dv = (torch.full_like(t, float("nan")) for t in (q, k, v))
    args = (q, k, v, o, do, lse, dq, dk, dv)
    row["mgpu_bwd_workspace_bytes"] = max(
        mk.attention_bwd_workspace_size(*args, causal=causal, deterministic=bool(det), handle=handle)
        for det in (0, 1))
    # Preparing reserves each mode's workspace on the handle (before any timing).
    runs = {det: mk.attention_bwd(*args, causal=causal, deterministic=bool(det), handle=handle, prepare=True)
            for det in (0, 1)}
    runs[0]()
    torch.cuda.synchronize()
    mine = (dq.clone(), dk.clone(), dv.clone())
    for name, backend in peers:
        try:
            call, grads = sdpa_bwd_call(backend, q, k, v, do, causal)
            row[name + "_bwd_rel_err"] = max(rel_err(m, g) for m, g in zip(mine, grads))
            row[name + "_bwd_ms"] = median_ms(call)
            del call, grads
        except RuntimeError as e:
            row[name + "_bwd_ms"] = None
            row[name + "_bwd_error"] = str(e).splitlines()[0][:120]
    row["mgpu_bwd_ms"] = median_ms(runs[0])
    row["mgpu_bwd_det_ms"] = median_ms(runs[1])
    row["mgpu_bwd_tflops"] = flops / row["mgpu_bwd_ms"] / 1e9
    row["mgpu_bwd_det_cost"] = row["mgpu_bwd_det_ms"] / row["mgpu_bwd_ms"] - 1.0
    for name, _ in peers:
        ms = row.get(name + "_bwd_ms")
        row[name + "_bwd_tflops"] = flops / ms / 1e9 if ms else None
        row[name + "_bwd_ratio"] = ms / row["mgpu_bwd_ms"] if ms else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default="build/libmgpukernels.so")
    ap.add_argument("--json", default=None)
    ap.add_argument("--passes", default="fwd,bwd", help="comma-separated: fwd, bwd")
    args = ap.parse_args()
    passes = set(args.passes.split(","))
    torch.manual_seed(0)
    torch.zeros(1, device="cuda")  # the primary context is now current: the handle binds to it
    mk = import_mgpukernels(args.lib)
    handle = mk.Handle(stream=torch.cuda.current_stream())
    peers = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]
    rows = []
    print("device: %s, torch %s, cuDNN %s" % (torch.cuda.get_device_name(), torch.__version__,
                                              torch.backends.cudnn.version()))
    for dtype in (torch.bfloat16, torch.float16):
        for (b, s, hq, hkv, d) in SHAPES:
            for causal in (False, True):
                q = torch.randn(b, s, hq, d, device="cuda", dtype=dtype)
                k = torch.randn(b, s, hkv, d, device="cuda", dtype=dtype)
                v = torch.randn(b, s, hkv, d, device="cuda", dtype=dtype)
                o = torch.full_like(q, float("nan"))
                lse = torch.full((b, hq, s), float("nan"), device="cuda", dtype=torch.float32)
                flops = 4.0 * b * hq * s * s * d / (2 if causal else 1)
                row = {"dtype": str(dtype).split(".")[-1], "B": b, "S": s, "Hq": hq, "Hkv": hkv, "D": d,
                       "causal": causal}
                bench_fwd(mk, handle, peers if "fwd" in passes else [], row, q, k, v, o, lse, causal, flops)
                if "bwd" in passes:
                    try:
                        bench_bwd(mk, handle, peers, row, q, k, v, o, lse, causal, BWD_FLOP_FACTOR * flops)
                    except RuntimeError as e:  # mgpu refused (e.g. a head dim not built yet)
                        row["mgpu_bwd_error"] = str(e).splitlines()[0][:160]
                rows.append(row)
                del q, k, v, o, lse  # the prepared calls held them too: gone with bench_fwd / bench_bwd
                torch.cuda.empty_cache()
    if "fwd" in passes:
        print("\nforward")
        print("| dtype | B | S | Hq/Hkv | D | causal | mgpu TFLOP/s | cuDNN TFLOP/s | flash TFLOP/s | vs cuDNN | "
              "vs flash | rel err vs cuDNN / flash |")
        print("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            print("| %s | %d | %d | %d/%d | %d | %s | %.1f | %s | %s | %s | %s | %s / %s |" % (
                r["dtype"], r["B"], r["S"], r["Hq"], r["Hkv"], r["D"], "yes" if r["causal"] else "no",
                r["mgpu_tflops"], fmt(r.get("cudnn_tflops"), "%.1f"), fmt(r.get("flash_tflops"), "%.1f"),
                fmt(r.get("cudnn_ratio"), "%.3f"), fmt(r.get("flash_ratio"), "%.3f"),
                fmt(r.get("cudnn_rel_err"), "%.1e"), fmt(r.get("flash_rel_err"), "%.1e")))
        geomeans(rows, peers, "_ratio")
    if "bwd" in passes:
        print("\nbackward (FLOPs 2.5x forward; det: deterministic mode's extra time)")
        print("| dtype | B | S | Hq/Hkv | D | causal | mgpu TFLOP/s | det cost | cuDNN TFLOP/s | flash TFLOP/s | "
              "vs cuDNN | vs flash | rel err vs cuDNN / flash |")
        print("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            if r.get("mgpu_bwd_error"):
                print("| %s | %d | %d | %d/%d | %d | %s | %s |" % (
                    r["dtype"], r["B"], r["S"], r["Hq"], r["Hkv"], r["D"], "yes" if r["causal"] else "no",
                    r["mgpu_bwd_error"]))
                continue
            print("| %s | %d | %d | %d/%d | %d | %s | %.1f | %+.1f %% | %s | %s | %s | %s | %s / %s |" % (
                r["dtype"], r["B"], r["S"], r["Hq"], r["Hkv"], r["D"], "yes" if r["causal"] else "no",
                r["mgpu_bwd_tflops"], 100.0 * r["mgpu_bwd_det_cost"], fmt(r.get("cudnn_bwd_tflops"), "%.1f"),
                fmt(r.get("flash_bwd_tflops"), "%.1f"), fmt(r.get("cudnn_bwd_ratio"), "%.3f"),
                fmt(r.get("flash_bwd_ratio"), "%.3f"), fmt(r.get("cudnn_bwd_rel_err"), "%.1e"),
                fmt(r.get("flash_bwd_rel_err"), "%.1e")))
        geomeans(rows, peers, "_bwd_ratio")
    for r in rows:
        for name, _ in peers:
            for p in ("", "_bwd"):
                if r.get(name + p + "_error"):
                    print("%s%s refused %s B=%d S=%d H=%d/%d D=%d causal=%s: %s" % (
                        name, p, r["dtype"], r["B"], r["S"], r["Hq"], r["Hkv"], r["D"], r["causal"],
                        r[name + p + "_error"]))
    # Gradients are sums over long sequences: their 16-bit results differ more than O does.
    limits = {"_rel_err": 1e-2, "_bwd_rel_err": 2e-2}
    bad = [r for r in rows if any(r.get(n + key) is not None and not (r[n + key] <= lim)
                                  for n, _ in peers for key, lim in limits.items())]
    bad += [r for r in rows if "bwd" in passes and r.get("mgpu_bwd_error")]
    print("cross-check: %d of %d configs within 1e-2 (O) / 2e-2 (dQ, dK, dV) of SDPA" % (len(rows) - len(bad),
                                                                                         len(rows)))
    handle.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "passes": sorted(passes),
                       "rows": rows}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
