"""Timeline of the attention backward's main kernel (sm_90a): per-CTA %globaltimer stamps and wait cycles.

Needs a library whose attention backward was compiled with -DMGPU_ATTN_BWD_TIMELINE
(kernels/hopper/attention_bwd_timeline.cuh: e.g. define it at the top of that header, rebuild,
keep the library aside, undo). The stamps go to the handle's workspace + 512 MiB; this script gives
the handle a workspace of its own (mgpu_set_workspace). For each row and mode (deterministic 0 / 1)
it prints, over the CTAs of one call: the kernel's span, the SMs' busy share, a CTA's phases (set-up,
loop, end), the waits of each role (SM cycles, mean per CTA) and, by the key block's place in its
pair (fifths of n_blocks), the loop time per query block and the writer's turn waits.

    python3 bench/attention_bwd_timeline.py --lib path/to/libmgpukernels.so [--rows B,S,Hq,Hkv,D,causal ...]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_bench as ab  # noqa: E402

STAMPS = 512 << 20  # byte offset of the stamps in the workspace
WORDS = 32
ROWS = ["4,4096,16,16,128,0", "4,4096,16,16,128,1"]
WAITS = [(8, "writer turn"), (9, "writer dq_full"), (10, "writer complete"), (11, "c0 dq_empty"),
         (12, "c1 dq_empty"), (13, "producer stage"), (14, "c0 announce"), (15, "c1 announce")]
STEPS = [(20, "dO full"), (21, "next Q full"), (22, "dQ buffer + stores"), (23, "wgmma dP^T"), (24, "wgmma dV, dK"),
         (25, "wgmma dQ"), (26, "wgmma next S^T"), (14, "announce")]


def read(buf, ctas):
    st = buf[STAMPS // 8: STAMPS // 8 + WORDS * ctas].cpu().view(ctas, WORDS).tolist()
    return [r for r in st if r[0] != 0]


def report(tag, ctas, ms):
    t0 = min(r[0] for r in ctas)
    end = [max(r[4], r[5]) for r in ctas]
    span = max(end) - t0
    busy = sum(e - r[0] for r, e in zip(ctas, end))
    sms = len({r[16] for r in ctas})
    print("  %s: %d CTAs on %d SMs, call %.3f ms, kernel span %.1f us, SMs busy %.1f %%" % (
        tag, len(ctas), sms, ms, span / 1e3, 100.0 * busy / (sms * span)))
    med = statistics.mean
    print("    per CTA (us, mean): set-up %.2f, loop %.2f, loop end to dK/dV %.2f, to writer done %.2f; blocks %.1f" % (
        med([r[1] - r[0] for r in ctas]) / 1e3, med([r[2] - r[1] for r in ctas]) / 1e3,
        med([r[4] - r[2] for r in ctas]) / 1e3, med([r[5] - r[2] for r in ctas]) / 1e3, med([r[19] for r in ctas])))
    print("    waits (kcycles per CTA, mean): " + ", ".join(
        "%s %.1f" % (name, med([r[w] for r in ctas]) / 1e3) for w, name in WAITS))
    print("    consumer 0, thread 0 (cycles per block, mean over CTAs): " + ", ".join(
        "%s %.0f" % (name, med([r[w] / r[19] for r in ctas if r[19] > 0])) for w, name in STEPS))
    # Gaps between consecutive CTAs of one SM.
    by_sm = {}
    for r, e in zip(ctas, end):
        by_sm.setdefault(r[16], []).append((r[0], e))
    gaps = []
    for v in by_sm.values():
        v.sort()
        gaps += [b[0] - a[1] for a, b in zip(v, v[1:])]
    if gaps:
        print("    gap between CTAs of an SM (us): mean %.2f, median %.2f, max %.2f" % (
            med(gaps) / 1e3, statistics.median(gaps) / 1e3, max(gaps) / 1e3))
    nb = max(r[17] for r in ctas) + 1
    for f in range(5):
        sel = [r for r in ctas if r[17] * 5 // nb == f and r[19] > 0]
        if sel:
            print("    key blocks %2d..%2d: %4d CTAs, loop per block %.3f us, turn wait %.1f kcyc, dq_empty %.1f kcyc, "
                  "start %.0f us" % (
                      min(r[17] for r in sel), max(r[17] for r in sel), len(sel),
                      med([(r[2] - r[1]) / r[19] for r in sel]) / 1e3, med([r[8] for r in sel]) / 1e3,
                      med([r[11] for r in sel]) / 1e3, med([r[0] - t0 for r in sel]) / 1e3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--rows", nargs="*", default=ROWS)
    ap.add_argument("--dump", help="also write every CTA's 32 words here (JSON: row -> mode -> CTAs)")
    args = ap.parse_args()
    dump = {}
    mk = ab.import_mgpukernels(args.lib)
    h = mk.Handle(stream=torch.cuda.current_stream())
    size = 1 << 30
    buf = torch.zeros(size // 8, device="cuda", dtype=torch.int64)
    h._lib.check(h._lib.mgpu_set_workspace(h.ptr, ctypes.c_void_p(buf.data_ptr()), ctypes.c_size_t(size)),
                 "mgpu_set_workspace")
    torch.manual_seed(0)
    for spec in args.rows:
        b, s, hq, hkv, d, causal = (int(x) for x in spec.split(","))
        q = torch.randn(b, s, hq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, s, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        o = torch.empty_like(q)
        lse = torch.empty((b, hq, s), device="cuda", dtype=torch.float32)
        mk.attention_fwd(q, k, v, o, lse, causal=bool(causal), handle=h)
        do = torch.randn_like(q)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        n_ctas = b * hq * ((s + 127) // 128)
        assert STAMPS + 8 * WORDS * n_ctas <= size
        print("%d x %d, %d/%d, d%d, %s" % (b, s, hq, hkv, d, "causal" if causal else "non-causal"), flush=True)
        for det in (0, 1):
            call = mk.attention_bwd(q, k, v, o, do, lse, dq, dk, dv, causal=bool(causal), deterministic=bool(det),
                                    handle=h, prepare=True)
            for _ in range(5):
                call()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            buf[STAMPS // 8: STAMPS // 8 + WORDS * n_ctas].zero_()
            start.record()
            call()
            stop.record()
            torch.cuda.synchronize()
            ctas = read(buf, n_ctas)
            report("deterministic=%d" % det, ctas, start.elapsed_time(stop))
            dump.setdefault(spec, {})[det] = ctas
    if args.dump:
        with open(args.dump, "w") as f:
            json.dump(dump, f)


if __name__ == "__main__":
    main()
