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
events around single calls, warm-up, median of the runs; the calls of one
row (mgpu and its peers, both backward modes) are timed round-robin, one run
of each in turn, as mgpu-bench alternates mgpu and cuBLAS, so that no library
runs on a GPU the others have heated (--sequential: one after another, the
older order). TFLOP/s: forward
4 * B * H * Sq * Sk * D (halved for causal), backward 2.5x that. Ratio =
peer time / mgpu time (> 1: mgpu faster).

Decode (--passes decode,paged): one query row per sequence over 1k ... 128k keys, batch 1 ... 64,
GQA 8:1, MHA and MQA, head dims 64 / 128 / 256, against SDPA cuDNN and flash, with K + V bytes/s
and their share of the device-to-device copy bandwidth measured in the same process; and paged
decode (shuffled pages of 16 ... 256 rows) against contiguous decode of the same shape (mgpu
both: PyTorch's SDPA has no paged-cache backend). Small caches stay in L2 between the timed
calls (both libraries alike). Decode rows are timed twice: single calls between events as
above (host and launch overhead included: a few microseconds for mgpu's prepared call, more
for SDPA), and as GPU time, 20 calls captured in one CUDA graph and its replays timed.

fp8 (--passes fp8): mgpu_attention_fwd with e4m3 Q, K, V (per-tensor descales from each tensor's
amax / 448) and bf16 O, head dim 128, against mgpu's own bf16 forward and SDPA cuDNN (bf16) on the
dequantised inputs, same shapes; the error column is fp8 O against the bf16 forward on the
dequantised inputs. PyTorch's SDPA takes no float8 inputs (each backend is tried with them and
its refusal printed), so there is no fp8 peer in PyTorch.

Run: python3 bench/attention_bench.py [--lib build/libmgpukernels.so] [--json out.json]
     [--passes fwd,bwd | decode,paged | fp8] [--head-dims 128,256] [--dtypes bf16] [--sequential]
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
SEQUENTIAL = False  # --sequential: median_ms_each times its calls one after another
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


def median_ms_each(calls):
    """{name: median ms} of each call in calls (a dict of callables), timed
    round-robin: every call warmed up, then RUNS rounds of one timed run of
    each in turn. Each call thus sees the same clock and power state as the
    others; timed one after another (SEQUENTIAL, --sequential), the last ones
    run on a GPU that the earlier, longer ones have heated, at lower clocks."""
    if SEQUENTIAL:
        return {name: median_ms(fn) for name, fn in calls.items()}
    for fn in calls.values():
        for _ in range(WARMUP):
            fn()
    events = {name: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                     for _ in range(RUNS)] for name in calls}
    for i in range(RUNS):
        for name, fn in calls.items():
            start, end = events[name][i]
            start.record()
            fn()
            end.record()
    torch.cuda.synchronize()
    return {name: statistics.median(s.elapsed_time(e) for s, e in ev) for name, ev in events.items()}


def time_calls(calls, row):
    """median_ms_each(calls); if a call fails during the round-robin (a peer
    refusing at run time, memory), each call is timed alone instead and a
    failing one gets no time and row[name + "_error"]. mgpu's own calls
    (names starting with "mgpu") still raise."""
    try:
        return median_ms_each(calls)
    except RuntimeError:
        times = {}
        for name, fn in calls.items():
            try:
                times[name] = median_ms(fn)
            except RuntimeError as e:
                if name.startswith("mgpu"):
                    raise
                times[name] = None
                row[name + "_error"] = str(e).splitlines()[0][:120]
        return times


GRAPH_CALLS = 20  # calls per captured graph (decode): one replay times them back to back


def capture_graph(fn, handle):
    """GRAPH_CALLS calls of fn captured in one CUDA graph (mgpu's handle queues
    on the capture stream meanwhile); None when the call cannot be captured."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    old = handle.stream
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.stream(side):
            handle.stream = side
            fn()  # any first-call work (workspace, plans) before the capture
            with torch.cuda.graph(g, stream=side):
                for _ in range(GRAPH_CALLS):
                    fn()
    except RuntimeError:
        return None
    finally:
        handle.stream = old
        torch.cuda.current_stream().wait_stream(side)
    return g


def graph_ms(fn, handle):
    """GPU time of one call: the replays of capture_graph's graph timed as
    median_ms does, over GRAPH_CALLS. Host and launch overhead stay out, as in
    a serving engine's captured decode step. None when the call cannot be
    captured."""
    g = capture_graph(fn, handle)
    return median_ms(g.replay) / GRAPH_CALLS if g is not None else None


def graph_ms_each(calls, handle):
    """{name: graph_ms} of each call in calls, the replays timed round-robin
    (median_ms_each); None for a call that cannot be captured."""
    graphs = {name: capture_graph(fn, handle) for name, fn in calls.items()}
    times = median_ms_each({name: g.replay for name, g in graphs.items() if g is not None})
    return {name: times[name] / GRAPH_CALLS if name in times else None for name in calls}


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
    calls = {}
    for name, backend in peers:
        call = sdpa_call(backend, q, k, v, causal)
        try:
            ref = call().transpose(1, 2)
            row[name + "_rel_err"] = rel_err(o, ref)
            calls[name] = call
        except RuntimeError as e:  # backend refused this config
            row[name + "_ms"] = None
            row[name + "_error"] = str(e).splitlines()[0][:120]
    calls["mgpu"] = run_mgpu
    for name, ms in time_calls(calls, row).items():
        row[name + "_ms"] = ms
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
    calls = {}
    for name, backend in peers:
        try:
            call, grads = sdpa_bwd_call(backend, q, k, v, do, causal)
            # NaN (a gradient element never written: the outputs start as NaN) must win the max,
            # which a plain max() of floats would drop unless it came first
            row[name + "_bwd_rel_err"] = max((rel_err(m, g) for m, g in zip(mine, grads)),
                                             key=lambda e: (math.isnan(e), e))
            calls[name + "_bwd"] = call
            del grads
        except RuntimeError as e:
            row[name + "_bwd_ms"] = None
            row[name + "_bwd_error"] = str(e).splitlines()[0][:120]
    calls["mgpu_bwd"], calls["mgpu_bwd_det"] = runs[0], runs[1]
    for name, ms in time_calls(calls, row).items():
        row[name + "_ms"] = ms
    del calls  # the peers' autograd graphs
    row["mgpu_bwd_tflops"] = flops / row["mgpu_bwd_ms"] / 1e9
    row["mgpu_bwd_det_cost"] = row["mgpu_bwd_det_ms"] / row["mgpu_bwd_ms"] - 1.0
    for name, _ in peers:
        ms = row.get(name + "_bwd_ms")
        row[name + "_bwd_tflops"] = flops / ms / 1e9 if ms else None
        row[name + "_bwd_ratio"] = ms / row["mgpu_bwd_ms"] if ms else None


# Decode (one query row per sequence), bf16: (B, Sk, Hq, Hkv, D). GQA 8:1 and MHA over batch and
# keys at head dim 128; head dims 64 and 256; MQA. Rows whose K + V exceed DECODE_MAX_KV_BYTES are
# skipped (memory and time on the bench machine).
DECODE_SHAPES = (
    [(b, sk, 64, 8, 128) for b in (1, 8, 64) for sk in (1024, 8192, 32768, 131072)]
    + [(b, sk, 32, 32, 128) for b in (1, 8, 64) for sk in (1024, 8192, 32768)]
    + [(b, sk, 64, 8, d) for d in (64, 256) for b in (1, 8) for sk in (8192, 32768)]
    + [(b, sk, 32, 32, d) for d in (64, 256) for b in (1, 8) for sk in (8192,)]
    + [(1, 131072, 8, 1, 128)]
)
DECODE_MAX_KV_BYTES = 6 << 30
# Paged decode against contiguous decode of the same shape: (B, Sk, Hq, Hkv, D, page_size).
PAGED_SHAPES = [(8, 32768, 64, 8, 128, 256), (8, 32768, 64, 8, 128, 64), (8, 32768, 64, 8, 128, 16),
                (64, 8192, 64, 8, 128, 256), (1, 131072, 64, 8, 128, 256)]


def copy_bandwidth():
    """Device-to-device copy of 1 GiB: (bytes read + written) / median time, bytes/s."""
    src = torch.empty(1 << 29, device="cuda", dtype=torch.float16).normal_()
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    del src, dst
    torch.cuda.empty_cache()
    return 2.0 * (1 << 30) / (ms * 1e-3)


def decode_inputs(b, sk, hq, hkv, d):
    """Q (one query row per sequence), K and V of a bf16 decode step, and its O and LSE
    filled with NaN (so that a row the call does not write shows)."""
    q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    o = torch.full_like(q, float("nan"))
    lse = torch.full((b, hq, 1), float("nan"), device="cuda", dtype=torch.float32)
    return q, k, v, o, lse


def bench_decode(mk, handle, copy_bw, head_dims=None):
    """Decode rows: mgpu against SDPA cuDNN (and flash); KV bytes/s beside TFLOP/s."""
    rows = []
    peers = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]
    for (b, sk, hq, hkv, d) in DECODE_SHAPES:
        if head_dims and d not in head_dims:
            continue
        kv_bytes = 2 * b * sk * hkv * d * 2
        if kv_bytes > DECODE_MAX_KV_BYTES:
            continue
        q, k, v, o, lse = decode_inputs(b, sk, hq, hkv, d)
        row = {"B": b, "Sk": sk, "Hq": hq, "Hkv": hkv, "D": d, "kv_bytes": kv_bytes}
        bench_fwd(mk, handle, peers, row, q, k, v, o, lse, False, 4.0 * b * hq * sk * d)
        graphed = {"mgpu": mk.attention_fwd(q, k, v, o, lse, handle=handle, prepare=True)}
        graphed.update({name: sdpa_call(backend, q, k, v, False) for name, backend in peers if row.get(name + "_ms")})
        for name, ms in graph_ms_each(graphed, handle).items():
            row[name + "_graph_ms"] = ms
        for name in ["mgpu"] + [n for n, _ in peers]:
            for how in ("", "_graph"):
                ms = row.get(name + how + "_ms")
                row[name + how + "_kv_tbps"] = kv_bytes / (ms * 1e-3) / 1e12 if ms else None
            if name != "mgpu" and row.get(name + "_graph_ms") and row.get("mgpu_graph_ms"):
                row[name + "_graph_ratio"] = row[name + "_graph_ms"] / row["mgpu_graph_ms"]
        row["mgpu_copy_frac"] = row["mgpu_kv_tbps"] * 1e12 / copy_bw
        if row.get("mgpu_graph_kv_tbps"):
            row["mgpu_graph_copy_frac"] = row["mgpu_graph_kv_tbps"] * 1e12 / copy_bw
        rows.append(row)
        del q, k, v, o, lse
        torch.cuda.empty_cache()
    return rows


def write_json(path, results):
    """The rows of every pass run so far, with the device, to path (None: nothing)."""
    if path:
        with open(path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, **results}, f, indent=1)


def paged_case(mk, handle, b, sk, hq, hkv, d, page, shuffled=True):
    """One decode step twice over the same K, V: contiguous, and in a paged cache of
    `page`-row pages (shuffled over the cache, or page i of sequence b at b * pages + i).
    Returns the two prepared calls and their outputs, after one run of each."""
    nb = sk // page
    q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
    perm = torch.randperm(b * nb, device="cuda") if shuffled else torch.arange(b * nb, device="cuda")
    k_cache, v_cache = torch.empty_like(k).view(b * nb, page, hkv, d), torch.empty_like(v).view(b * nb, page, hkv, d)
    k_cache[perm] = k.view(b * nb, page, hkv, d)
    v_cache[perm] = v.view(b * nb, page, hkv, d)
    table = perm.view(b, nb).to(torch.int32)
    used = torch.full((b,), sk, device="cuda", dtype=torch.int32)
    o_c, o_p = torch.full_like(q, float("nan")), torch.full_like(q, float("nan"))
    run_c = mk.attention_fwd(q, k, v, o_c, handle=handle, prepare=True)
    run_p = mk.attention_fwd(q, k_cache, v_cache, o_p, seqused_k=used, block_table=table, max_seqlen_k=sk,
                             handle=handle, prepare=True)
    run_c()
    run_p()
    torch.cuda.synchronize()
    return run_c, run_p, o_c, o_p


def paged_kv_tbps(b, sk, hkv, d, ms):
    """K + V bytes (bf16) read per second, TB/s."""
    return 2 * b * sk * hkv * d * 2 / (ms * 1e-3) / 1e12


def bench_paged(mk, handle):
    """Paged decode (shuffled pages) against contiguous decode of the same shape, both mgpu."""
    rows = []
    for (b, sk, hq, hkv, d, page) in PAGED_SHAPES:
        run_c, run_p, o_c, o_p = paged_case(mk, handle, b, sk, hq, hkv, d, page)
        row = {"B": b, "Sk": sk, "Hq": hq, "Hkv": hkv, "D": d, "page": page, "rel_err": rel_err(o_p, o_c)}
        for name, ms in median_ms_each({"contiguous": run_c, "paged": run_p}).items():
            row[name + "_ms"] = ms
        row["paged_cost"] = row["paged_ms"] / row["contiguous_ms"] - 1.0
        row["paged_kv_tbps"] = paged_kv_tbps(b, sk, hkv, d, row["paged_ms"])
        rows.append(row)
        del run_c, run_p, o_c, o_p
        torch.cuda.empty_cache()
    return rows


# fp8 forward: (B, S, Hq, Hkv, D), head dim 128.
FP8_SHAPES = [(4, 4096, 16, 16, 128), (2, 8192, 16, 16, 128), (1, 16384, 16, 16, 128), (4, 4096, 32, 8, 128),
              (16, 1024, 16, 16, 128)]
FP8_MAX = 448.0  # largest finite e4m3


def quantize_e4m3(x):
    """(e4m3 tensor, its descale as a one-element float32 tensor, the dequantised bf16 tensor)."""
    descale = (x.abs().amax().float() / FP8_MAX).reshape(1)
    q = (x.float() / descale).to(torch.float8_e4m3fn)
    return q, descale, (q.float() * descale).to(torch.bfloat16)


def bench_fp8(mk, handle, alone=False):
    """alone: time the fp8 calls only (the peers' columns stay empty)."""
    rows = []
    for (b, s, hq, hkv, d) in FP8_SHAPES:
        for causal in (False, True):
            q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for h in (hq, hkv, hkv))
            (q8, qd, qb), (k8, kd, kb), (v8, vd, vb) = (quantize_e4m3(t) for t in (q, k, v))
            o8, o16 = torch.full_like(q, float("nan")), torch.full_like(q, float("nan"))
            flops = 4.0 * b * hq * s * s * d / (2 if causal else 1)
            row = {"B": b, "S": s, "Hq": hq, "Hkv": hkv, "D": d, "causal": causal}
            run8 = mk.attention_fwd(q8, k8, v8, o8, causal=causal, q_descale=qd, k_descale=kd, v_descale=vd,
                                    handle=handle, prepare=True)
            run16 = mk.attention_fwd(qb, kb, vb, o16, causal=causal, handle=handle, prepare=True)
            run8()
            run16()
            torch.cuda.synchronize()
            row["rel_err_vs_bf16"] = rel_err(o8, o16)
            row["bf16_ms"], row["cudnn_ms"] = None, None
            calls = {"fp8": run8}
            if not alone:
                calls["bf16"] = run16
                cudnn = sdpa_call(SDPBackend.CUDNN_ATTENTION, qb, kb, vb, causal)
                try:
                    cudnn()
                    calls["cudnn"] = cudnn
                except RuntimeError as e:
                    row["cudnn_error"] = str(e).splitlines()[0][:120]
            for name, ms in median_ms_each(calls).items():
                row[name + "_ms"] = ms
            for name in ("fp8", "bf16", "cudnn"):
                ms = row.get(name + "_ms")
                row[name + "_tflops"] = flops / ms / 1e9 if ms else None
            row["vs_bf16"] = row["bf16_ms"] / row["fp8_ms"] if row["bf16_ms"] else None
            row["vs_cudnn"] = row["cudnn_ms"] / row["fp8_ms"] if row["cudnn_ms"] else None
            rows.append(row)
            del q, k, v, q8, k8, v8, qb, kb, vb, o8, o16, run8, run16
            torch.cuda.empty_cache()
    print("\nfp8 forward (e4m3 Q/K/V, per-tensor descales, bf16 O; vs: time ratio, > 1 fp8 faster; "
          "error: fp8 O vs mgpu bf16 O on the dequantised inputs)")
    print("| B | S | Hq/Hkv | D | causal | fp8 TFLOP/s | mgpu bf16 TFLOP/s | cuDNN bf16 TFLOP/s | vs mgpu bf16 | "
          "vs cuDNN bf16 | rel err |")
    print("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print("| %d | %d | %d/%d | %d | %s | %.1f | %s | %s | %s | %s | %.1e |" % (
            r["B"], r["S"], r["Hq"], r["Hkv"], r["D"], "yes" if r["causal"] else "no", r["fp8_tflops"],
            fmt(r.get("bf16_tflops"), "%.1f"), fmt(r.get("cudnn_tflops"), "%.1f"), fmt(r.get("vs_bf16"), "%.2f"),
            fmt(r.get("vs_cudnn"), "%.2f"), r["rel_err_vs_bf16"]))
    sys.stdout.flush()
    if alone:
        return rows
    # Does any SDPA backend take float8 inputs? (small tensors, after the table)
    q8 = torch.randn(1, 256, 2, 128, device="cuda").to(torch.float8_e4m3fn)
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)):
        try:
            sdpa_call(backend, q8, q8, q8, False)()
            torch.cuda.synchronize()
            verdict = "ran"
        except (RuntimeError, TypeError, NotImplementedError) as e:
            verdict = "refused: " + str(e).splitlines()[0][:100]
        rows[0]["sdpa_fp8_" + name] = verdict
        print("SDPA %s with float8_e4m3fn inputs: %s" % (name, verdict), flush=True)
    return rows


def print_decode(rows, paged, copy_bw):
    print("\ndecode (Sq = 1, bf16; KV TB/s = K + V bytes / time; copy bandwidth %.2f TB/s read + write)" % (
        copy_bw / 1e12))
    print("| B | Sk | Hq/Hkv | D | mgpu us | mgpu KV TB/s | of copy bw | cuDNN us | cuDNN KV TB/s | vs cuDNN | "
          "flash us | vs flash | rel err vs cuDNN |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        us = lambda name: fmt(r[name + "_ms"] * 1e3 if r.get(name + "_ms") else None, "%.1f")
        print("| %d | %d | %d/%d | %d | %s | %.2f | %.0f %% | %s | %s | %s | %s | %s | %s |" % (
            r["B"], r["Sk"], r["Hq"], r["Hkv"], r["D"], us("mgpu"), r["mgpu_kv_tbps"], 100 * r["mgpu_copy_frac"],
            us("cudnn"), fmt(r.get("cudnn_kv_tbps"), "%.2f"), fmt(r.get("cudnn_ratio"), "%.2f"), us("flash"),
            fmt(r.get("flash_ratio"), "%.2f"), fmt(r.get("cudnn_rel_err"), "%.1e")))
    geomeans(rows, [("cudnn", None), ("flash", None)], "_ratio")
    print("\ndecode, GPU time: %d calls per captured CUDA graph, replays timed (no host or launch overhead)" %
          GRAPH_CALLS)
    print("| B | Sk | Hq/Hkv | D | mgpu us | mgpu KV TB/s | of copy bw | cuDNN us | vs cuDNN | flash us | vs flash |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        us = lambda name: fmt(r[name + "_graph_ms"] * 1e3 if r.get(name + "_graph_ms") else None, "%.1f")
        print("| %d | %d | %d/%d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["B"], r["Sk"], r["Hq"], r["Hkv"], r["D"], us("mgpu"), fmt(r.get("mgpu_graph_kv_tbps"), "%.2f"),
            fmt(100 * r["mgpu_graph_copy_frac"] if r.get("mgpu_graph_copy_frac") else None, "%.0f %%"), us("cudnn"),
            fmt(r.get("cudnn_graph_ratio"), "%.2f"), us("flash"), fmt(r.get("flash_graph_ratio"), "%.2f")))
    geomeans(rows, [("cudnn", None), ("flash", None)], "_graph_ratio")
    for r in rows:
        for name in ("cudnn", "flash"):
            if r.get(name + "_error"):
                print("%s refused B=%d Sk=%d H=%d/%d D=%d: %s" % (name, r["B"], r["Sk"], r["Hq"], r["Hkv"], r["D"],
                                                                  r[name + "_error"]))
    if paged:
        print("\npaged decode (shuffled pages) vs contiguous, mgpu both; PyTorch's SDPA has no paged-cache backend")
        print("| B | Sk | Hq/Hkv | D | page | contiguous us | paged us | paged cost | paged KV TB/s | rel err |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in paged:
            print("| %d | %d | %d/%d | %d | %d | %.1f | %.1f | %+.1f %% | %.2f | %.1e |" % (
                r["B"], r["Sk"], r["Hq"], r["Hkv"], r["D"], r["page"], r["contiguous_ms"] * 1e3, r["paged_ms"] * 1e3,
                100 * r["paged_cost"], r["paged_kv_tbps"], r["rel_err"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default="build/libmgpukernels.so")
    ap.add_argument("--json", default=None)
    ap.add_argument("--passes", default="fwd,bwd", help="comma-separated: fwd, bwd, decode, paged, fp8")
    ap.add_argument("--fp8-alone", action="store_true", help="fp8 pass: time the fp8 calls only")
    ap.add_argument("--head-dims", default=None,
                    help="comma-separated head dims: only these rows of the fwd, bwd and decode passes")
    ap.add_argument("--dtypes", default="bf16,f16", help="comma-separated: bf16, f16 (fwd and bwd passes)")
    ap.add_argument("--sequential", action="store_true",
                    help="time each call's runs one after another, not round-robin (every pass)")
    args = ap.parse_args()
    global SEQUENTIAL
    SEQUENTIAL = args.sequential
    head_dims = {int(x) for x in args.head_dims.split(",")} if args.head_dims else None
    dtypes = [{"bf16": torch.bfloat16, "f16": torch.float16}[x] for x in args.dtypes.split(",")]
    passes = set(args.passes.split(","))
    results = {}  # every pass's rows, written once to --json at the end of each pass
    torch.manual_seed(0)
    torch.zeros(1, device="cuda")  # the primary context is now current: the handle binds to it
    mk = import_mgpukernels(args.lib)
    handle = mk.Handle(stream=torch.cuda.current_stream())
    peers = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]
    rows = []
    print("device: %s, torch %s, cuDNN %s" % (torch.cuda.get_device_name(), torch.__version__,
                                              torch.backends.cudnn.version()))
    if "fp8" in passes:
        fp8_rows = bench_fp8(mk, handle, alone=args.fp8_alone)
        bad = [r for r in fp8_rows if not r["rel_err_vs_bf16"] <= 0.05]
        print("fp8 cross-check: %d of %d rows within 5e-2 of the bf16 forward" % (len(fp8_rows) - len(bad),
                                                                                  len(fp8_rows)))
        results["fp8"] = fp8_rows
        write_json(args.json, results)
        if not passes - {"fp8"}:
            handle.close()
            return 1 if bad else 0
    if passes & {"decode", "paged"}:
        copy_bw = copy_bandwidth()
        decode_rows = bench_decode(mk, handle, copy_bw, head_dims) if "decode" in passes else []
        paged_rows = bench_paged(mk, handle) if "paged" in passes else []
        print_decode(decode_rows, paged_rows, copy_bw)
        bad = [r for r in decode_rows if r.get("cudnn_rel_err") is not None and not r["cudnn_rel_err"] <= 1e-2]
        bad += [r for r in paged_rows if not r["rel_err"] <= 1e-3]
        print("decode cross-check: %d of %d rows within tolerance" % (len(decode_rows) + len(paged_rows) - len(bad),
                                                                      len(decode_rows) + len(paged_rows)))
        results.update({"copy_bandwidth": copy_bw, "decode": decode_rows, "paged": paged_rows})
        write_json(args.json, results)
        if not passes & {"fwd", "bwd"}:
            handle.close()
            return 1 if bad else 0
    for dtype in dtypes:
        for (b, s, hq, hkv, d) in SHAPES:
            if head_dims and d not in head_dims:
                continue
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
    results.update({"passes": sorted(passes), "rows": rows})
    write_json(args.json, results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
