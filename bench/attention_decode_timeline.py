"""Timeline of the split (decode) attention forward: per-CTA %globaltimer / clock64 stamps.

Needs a library whose attention forward was compiled with -DMGPU_ATTN_FWD_TIMELINE
(kernels/hopper/attention_fwd_timeline.cuh: e.g. define it at the top of that header, rebuild,
keep the library aside, undo). The stamps go to the handle's workspace + 32 MiB; this script gives
the handle a 64 MiB workspace of its own (mgpu_set_workspace) and prints, per decode row, each
event's time from the first CTA's entry (min / median / max over the CTAs, ns) and from its own
CTA's entry (clock64 cycles), for one uncaptured call and for the last call of a CUDA-graph replay
(20 calls, the way attention_bench.py times decode). Calls without key splits stamp nothing.

    python3 bench/attention_decode_timeline.py --lib path/to/libmgpukernels.so
"""
import argparse
import ctypes
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_bench as ab  # noqa: E402

EVENTS = ["entry", "bars", "gdep", "q_iss", "kv_iss", "q_full", "S_done", "smax", "loop_done", "part_st",
          "counted", "merged"]  # attn_fwd_timeline_event
STAMPS = 32 << 20  # byte offset of the stamps in the workspace
ROWS = [(1, 1024, 64, 8, 128), (8, 1024, 64, 8, 128), (1, 1024, 32, 32, 128), (1, 8192, 64, 8, 64),
        (1, 8192, 64, 8, 128)]


def show(buf, tag, max_ctas=4096):
    st = buf[STAMPS // 4:].view(torch.int64)[: 32 * max_ctas].cpu().view(max_ctas, 32)
    ctas = [r for r in st.tolist() if r[0] != 0]
    t0 = min(r[0] for r in ctas)
    print("  %s: %d CTAs (ns from the first CTA's entry; clk: cycles from the CTA's own entry)" % (tag, len(ctas)))
    for e, name in enumerate(EVENTS):
        g = [r[e] - t0 for r in ctas if r[e] != 0]
        c = [r[16 + e] - r[16] for r in ctas if r[e] != 0]
        if g:
            print("    %-9s n=%4d  ns min %7d med %7d max %7d | clk med %7d max %7d" % (
                name, len(g), min(g), statistics.median(g), max(g), statistics.median(c), max(c)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    args = ap.parse_args()
    mk = ab.import_mgpukernels(args.lib)
    h = mk.Handle()
    size = 64 << 20
    buf = torch.zeros(size // 4, device="cuda", dtype=torch.int32)
    h._lib.check(h._lib.mgpu_set_workspace(h.ptr, ctypes.c_void_p(buf.data_ptr()), ctypes.c_size_t(size)),
                 "mgpu_set_workspace")
    for (b, sk, hq, hkv, d) in ROWS:
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, sk, hkv, d, device="cuda", dtype=torch.bfloat16)
        o = torch.empty_like(q)
        lse = torch.empty((b, hq, 1), device="cuda", dtype=torch.float32)
        call = mk.attention_fwd(q, k, v, o, lse, handle=h, prepare=True)
        print("B=%d Sk=%d Hq=%d Hkv=%d D=%d" % (b, sk, hq, hkv, d))
        buf[STAMPS // 4:].zero_()
        torch.cuda.synchronize()
        call()
        torch.cuda.synchronize()
        show(buf, "one call")
        buf[STAMPS // 4:].zero_()
        torch.cuda.synchronize()
        ms = ab.graph_ms(call, h)
        torch.cuda.synchronize()
        show(buf, "last call of the graph replays (%.2f us a call; stamps of events that not every call "
             "reaches, e.g. merged, may be earlier calls')" % (ms * 1e3))
        del q, k, v, o, lse, call


if __name__ == "__main__":
    main()
