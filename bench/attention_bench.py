#!/usr/bin/env python3
"""Attention forward benchmark: libmgpukernels against PyTorch SDPA (cuDNN and flash).

Loads build/libmgpukernels.so through ctypes beside PyTorch on the GPU machine
and times, in one process on one stream, mgpu_attention_fwd against
torch.nn.functional.scaled_dot_product_attention with the cuDNN backend and
with the flash backend, bf16 and fp16, for the shapes of issue 4, causal and
not. Every tensor is (batch, seq, heads, dim) in memory (the layout mgpu and
FlashAttention read natively; SDPA gets transposed views of the same memory).
Each config is first cross-checked: relative error of mgpu's output against
SDPA's. Timing: CUDA events around single calls, warm-up, median of the runs.
TFLOP/s = 4 * B * H * Sq * Sk * D (halved for causal). Ratio = peer time /
mgpu time (> 1: mgpu faster).

Run: python3 bench/attention_bench.py [--lib build/libmgpukernels.so] [--json out.json]
"""
import argparse
import ctypes
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

WARMUP = 5
RUNS = 30
DTYPE_CODES = {torch.float16: 0, torch.bfloat16: 1}  # mgpu_dtype values
# (B, Sq=Sk, Hq, Hkv, D) of issue 4
SHAPES = [
    (4, 4096, 16, 16, 128),
    (1, 16384, 16, 16, 128),
    (4, 4096, 32, 32, 64),
    (4, 4096, 8, 8, 256),
    (16, 1024, 16, 16, 128),
    (4, 4096, 32, 8, 128),
]


class Strides(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("seq", ctypes.c_int64), ("head", ctypes.c_int64)]


class AttentionFwdDesc(ctypes.Structure):
    """Mirror of mgpu_attention_fwd_desc (include/mgpukernels.h)."""
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("batch", ctypes.c_int64), ("seqlen_q", ctypes.c_int64), ("seqlen_k", ctypes.c_int64),
        ("heads_q", ctypes.c_int64), ("heads_kv", ctypes.c_int64), ("head_dim", ctypes.c_int64),
        ("dtype", ctypes.c_int), ("softmax_scale", ctypes.c_float), ("causal", ctypes.c_int),
        ("window_left", ctypes.c_int), ("window_right", ctypes.c_int), ("softcap", ctypes.c_float),
        ("cu_seqlens_q", ctypes.c_void_p), ("cu_seqlens_k", ctypes.c_void_p),
        ("total_q", ctypes.c_int64), ("total_k", ctypes.c_int64),
        ("q_strides", Strides), ("k_strides", Strides), ("v_strides", Strides), ("o_strides", Strides),
    ]


class Mgpu:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.mgpu_status_string.restype = ctypes.c_char_p
        self.lib.mgpu_last_error_message.restype = ctypes.c_char_p
        self.lib.mgpu_attention_fwd.argtypes = [ctypes.c_void_p, ctypes.POINTER(AttentionFwdDesc)] + [ctypes.c_void_p] * 5
        self.handle = ctypes.c_void_p()
        self.check(self.lib.mgpu_create(ctypes.byref(self.handle)))
        self.check(self.lib.mgpu_set_stream(self.handle, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)))

    def check(self, status):
        if status != 0:
            raise RuntimeError("%s: %s" % (self.lib.mgpu_status_string(status).decode(),
                                           self.lib.mgpu_last_error_message().decode()))

    def attention_fwd(self, q, k, v, o, lse, causal):
        b, s, hq, d = q.shape
        desc = AttentionFwdDesc(struct_size=ctypes.sizeof(AttentionFwdDesc), batch=b, seqlen_q=s, seqlen_k=k.shape[1],
                                heads_q=hq, heads_kv=k.shape[2], head_dim=d, dtype=DTYPE_CODES[q.dtype],
                                softmax_scale=0.0, causal=int(causal), window_left=-1, window_right=-1)
        for name, t in (("q_strides", q), ("k_strides", k), ("v_strides", v), ("o_strides", o)):
            setattr(desc, name, Strides(t.stride(0), t.stride(1), t.stride(2)))
        self.check(self.lib.mgpu_attention_fwd(self.handle, ctypes.byref(desc), q.data_ptr(), k.data_ptr(),
                                               v.data_ptr(), o.data_ptr(), lse.data_ptr()))


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


def rel_err(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm()).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default="build/libmgpukernels.so")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.manual_seed(0)
    mgpu = Mgpu(args.lib)
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
                run_mgpu = lambda: mgpu.attention_fwd(q, k, v, o, lse, causal)
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
                rows.append(row)
                del q, k, v, o, lse
                torch.cuda.empty_cache()
    fmt = lambda x, f: (f % x) if x is not None else "n/a"
    print("| dtype | B | S | Hq/Hkv | D | causal | mgpu TFLOP/s | cuDNN TFLOP/s | flash TFLOP/s | vs cuDNN | vs flash "
          "| rel err vs cuDNN / flash |")
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print("| %s | %d | %d | %d/%d | %d | %s | %.1f | %s | %s | %s | %s | %s / %s |" % (
            r["dtype"], r["B"], r["S"], r["Hq"], r["Hkv"], r["D"], "yes" if r["causal"] else "no", r["mgpu_tflops"],
            fmt(r["cudnn_tflops"], "%.1f"), fmt(r["flash_tflops"], "%.1f"), fmt(r["cudnn_ratio"], "%.3f"),
            fmt(r["flash_ratio"], "%.3f"), fmt(r.get("cudnn_rel_err"), "%.1e"), fmt(r.get("flash_rel_err"), "%.1e")))
    for name, _ in peers:
        ratios = [r[name + "_ratio"] for r in rows if r[name + "_ratio"]]
        if ratios:
            print("geometric mean vs %s: %.3f over %d configs" % (
                name, math.exp(sum(math.log(x) for x in ratios) / len(ratios)), len(ratios)))
    for r in rows:
        for name, _ in peers:
            if r.get(name + "_error"):
                print("%s refused %s B=%d S=%d H=%d/%d D=%d causal=%s: %s" % (
                    name, r["dtype"], r["B"], r["S"], r["Hq"], r["Hkv"], r["D"], r["causal"], r[name + "_error"]))
    bad = [r for r in rows if any((r.get(n + "_rel_err") or 0) > 1e-2 or
                                  (r.get(n + "_rel_err") is not None and math.isnan(r[n + "_rel_err"]))
                                  for n, _ in peers)]
    print("cross-check: %d of %d configs within 1e-2 of SDPA" % (len(rows) - len(bad), len(rows)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
