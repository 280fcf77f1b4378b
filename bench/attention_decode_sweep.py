#!/usr/bin/env python3
"""Decode plan sweep: one process, many planner settings, SDPA cuDNN beside them.

The library reads its switches (MGPU_FORCE_NUM_SPLITS, MGPU_ATTENTION_DECODE64,
MGPU_FORCE_SPLIT_MERGE, MGPU_ATTENTION_MERGE16, MGPU_ATTENTION_PDL, ...) once per
loaded copy. This driver loads one private copy of a library file per setting
(each copy its own dlopen object, so its own switches and handle), and times
every setting of a row back to back in the same process, with cuDNN timed at the
row's start and end: settings are compared without the spread between processes.

GPU time as bench/attention_bench.py's decode pass: 20 calls captured in a CUDA
graph, replays timed (the lower of two timings). MGPU_LOG is on in every copy;
each measurement's first plan line (entry, grid, splits, merge placement,
programmatic launch) is kept beside its time, and O is checked against cuDNN's.

Run: python3 bench/attention_decode_sweep.py --lib BASE.so [--lib-new NEW.so]
     [--rows all|short] [--json out.json] [--log plans.log] [--budget-s S]
(On the device machine only 8 files come back from $OUT: pack the JSON, the
log and the printed table into one archive.)
Settings are named "P" (the planner), "new" (--lib-new, its planner), or
switches, e.g. "s32 d64=1 m=0": MGPU_FORCE_NUM_SPLITS=32, MGPU_ATTENTION_DECODE64=1,
MGPU_FORCE_SPLIT_MERGE=0 (also "w=" MGPU_ATTENTION_MERGE16, "pdl=" MGPU_ATTENTION_PDL,
"fill=" MGPU_ATTENTION_SPLIT_FILL, "entry=" MGPU_ATTENTION_DECODE_ENTRY); "new fill=0" is
the --lib-new library with that switch.
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

import torch
from torch.nn.attention import SDPBackend

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.join(os.getcwd(), "bench")]
import attention_bench as ab  # noqa: E402

SWITCHES = {"s": "MGPU_FORCE_NUM_SPLITS", "d64": "MGPU_ATTENTION_DECODE64", "m": "MGPU_FORCE_SPLIT_MERGE",
            "w": "MGPU_ATTENTION_MERGE16", "pdl": "MGPU_ATTENTION_PDL", "entry": "MGPU_ATTENTION_DECODE_ENTRY",
            "fill": "MGPU_ATTENTION_SPLIT_FILL"}
SM_COUNT = 132  # H100 / H200: the CTA targets below


def setting_env(name):
    """The environment of a setting name ("P", "new", or "s32 d64=1 ...")."""
    env = {}
    if name in ("P", "new") or name.startswith("new "):
        words = name.split()[1:]
    else:
        words = name.split()
    for w in words:
        if w.startswith("s") and w[1:].isdigit():
            env[SWITCHES["s"]] = w[1:]
        else:
            k, v = w.split("=")
            env[SWITCHES[k]] = v
    return env


class Copies:
    """One loaded library copy and handle per (library, setting)."""

    def __init__(self, mk, capi, base, new, stream):
        self.mk, self.capi, self.base, self.new, self.stream = mk, capi, base, new, stream
        self.dir = tempfile.mkdtemp(prefix="mgpu-sweep-")
        self.loaded = {}

    def get(self, name):
        if name in self.loaded:
            return self.loaded[name]
        src = self.new if name.startswith("new") else self.base
        for var in SWITCHES.values():
            os.environ.pop(var, None)
        os.environ.update(setting_env(name))
        os.environ["MGPU_LOG"] = "1"
        path = os.path.join(self.dir, "%d" % len(self.loaded), "libmgpukernels.so")
        os.makedirs(os.path.dirname(path))
        shutil.copyfile(src, path)
        lib = self.capi.Library(path)
        self.capi._library = lib
        handle = self.mk.Handle(stream=self.stream)
        self.loaded[name] = (lib, handle)
        return self.loaded[name]


def key_blocks(sk, d):
    return -(-sk // (128 if d <= 128 else 112 if d <= 192 else 80))


def settings_for(b, sk, hq, hkv, d, have_new):
    """The settings tried on a row: split counts that give about 64, 128, 192, 256, 384
    and 512 CTAs, on either entry, and the merge placements around them."""
    tiles = b * hkv if hq != hkv else b * hq
    blocks = key_blocks(sk, d)
    names = ["P"] + (["new"] if have_new else [])
    if 2 * b * sk * hkv * d * 2 > (512 << 20):  # long calls: the planner, the new rule, the one switch each
        return names + (["pdl=1"] if hq == hkv else ["s%d d64=1" % max(2, min(blocks, 2 * SM_COUNT // tiles))])
    if have_new and hq != hkv:
        names += ["new fill=0"]
    if hq == hkv:  # MHA: no split, or 2 and 4; programmatic launch; the other entry
        names += ["pdl=1", "d64=0" if d == 128 else "d64=1", "s2", "s2 pdl=1", "s4"]
        if d == 128:
            names += ["d64=0 pdl=1"]
        return names
    splits = sorted({max(2, min(blocks, round(c / tiles))) for c in (64, 128, 256, 512)})
    if d == 64:  # the 64-row entry holds two CTAs an SM at head dim 64: 2 x 132 in one wave
        splits = sorted(set(splits) | {min(blocks, 2 * SM_COUNT // tiles)})
    for s in splits:
        names += ["s%d d64=1" % s, "s%d d64=0" % s]
        if 8 < s <= 16:
            # two merge warps a row (combine kernel) in the 128-row entry; one a row in the 64-row one
            names += ["s%d d64=0 w=0" % s, "s%d d64=1 w=1" % s]
        if 192 <= s * tiles <= 2 * SM_COUNT:
            names += ["s%d d64=1 m=1" % s]  # the 64-row entry merging in the kernel (several passes)
    return list(dict.fromkeys(names))


# The rows below 0.97x cuDNN first, then their neighbours (batch, keys, head dim, MHA).
ROWS_SHORT = [
    (1, 8192, 64, 8, 128), (1, 8192, 64, 8, 64), (1, 32768, 64, 8, 64), (8, 1024, 32, 32, 128),
]
ROWS_ALL = ROWS_SHORT + [
    (1, 4096, 64, 8, 64), (1, 16384, 64, 8, 64), (2, 8192, 64, 8, 64), (4, 8192, 64, 8, 64), (8, 8192, 64, 8, 64),
    (8, 1024, 64, 8, 64), (8, 32768, 64, 8, 64),
    (4, 1024, 32, 32, 128), (16, 1024, 32, 32, 128), (8, 2048, 32, 32, 128), (8, 8192, 32, 32, 128),
    (64, 1024, 32, 32, 128), (1, 8192, 32, 32, 64), (8, 8192, 32, 32, 64), (8, 8192, 32, 32, 256),
    (1, 4096, 64, 8, 128), (1, 16384, 64, 8, 128), (1, 32768, 64, 8, 128), (2, 8192, 64, 8, 128),
    (4, 8192, 64, 8, 128), (8, 1024, 64, 8, 128),
]


PLAN_RE = re.compile(r"attention_fwd .*?: (\S+?)(?: \(forced\))? grid=(\d+).*? splits=(\d+)([^,\n]*)(, programmatic)?")


def plan_of(text):
    m = PLAN_RE.search(text)
    if not m:
        return None
    entry = "64" if "decode64" in m.group(1) else "128" if "decode" in m.group(1) else "fwd"
    merge = m.group(4).strip()
    merge = ("kernel" if "kernel" in merge else "combine-early" if "early" in merge else
             "combine" if "combine" in merge else "-") + (" wide" if "one merge warp" in merge else "")
    return "%s grid=%s s=%s %s%s" % (entry, m.group(2), m.group(3), merge, " pdl" if m.group(5) else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--lib-new", default=None)
    ap.add_argument("--rows", default="all")
    ap.add_argument("--json", default=None)
    ap.add_argument("--log", default="sweep_plans.log")
    ap.add_argument("--budget-s", type=float, default=1e9, help="stop starting rows after this many seconds")
    args = ap.parse_args()
    t0 = time.time()
    # C stderr (the plan lines) to the log; Python's own messages stay on the terminal
    sys.stderr = os.fdopen(os.dup(2), "w", buffering=1)
    logfd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(logfd, 2)
    logr = open(args.log, "r")

    def new_log():
        return logr.read()

    torch.manual_seed(0)
    torch.zeros(1, device="cuda")
    os.environ["MGPU_LIBRARY"] = os.path.abspath(args.lib)
    mk = ab.import_mgpukernels(args.lib)
    import mgpukernels._capi as capi
    stream = torch.cuda.current_stream()
    copies = Copies(mk, capi, os.path.abspath(args.lib), os.path.abspath(args.lib_new) if args.lib_new else None,
                    stream)
    print("device: %s, torch %s, cuDNN %s" % (torch.cuda.get_device_name(), torch.__version__,
                                              torch.backends.cudnn.version()), flush=True)
    rows = ROWS_SHORT if args.rows == "short" else ROWS_ALL
    out = []
    for (b, sk, hq, hkv, d) in rows:
        if time.time() - t0 > args.budget_s:
            print("budget reached: rows from %dx%d %d/%d d%d on not run" % (b, sk, hq, hkv, d), flush=True)
            break
        q, k, v, o, lse = ab.decode_inputs(b, sk, hq, hkv, d)
        cudnn = ab.sdpa_call(SDPBackend.CUDNN_ATTENTION, q, k, v, False)
        try:
            ref = cudnn().transpose(1, 2).clone()
        except RuntimeError as e:
            print("cuDNN refused %d x %d %d/%d d%d: %s" % (b, sk, hq, hkv, d, str(e).splitlines()[0][:100]), flush=True)
            continue
        row = {"B": b, "Sk": sk, "Hq": hq, "Hkv": hkv, "D": d, "kv_bytes": 2 * b * sk * hkv * d * 2,
               "cudnn_us": [], "settings": {}}
        _, h0 = copies.get("P")
        row["cudnn_us"].append(ab.graph_ms(cudnn, h0) * 1e3)
        names = settings_for(b, sk, hq, hkv, d, args.lib_new is not None) + ["P"]
        for i, name in enumerate(names):
            key = name if i < len(names) - 1 else "P_end"
            lib, handle = copies.get(name)
            capi._library = lib
            new_log()
            o.fill_(float("nan"))
            try:
                call = mk.attention_fwd(q, k, v, o, lse, handle=handle, prepare=True)
                call()
                torch.cuda.synchronize()
                err = ab.rel_err(o, ref)
                us = min(ab.graph_ms(call, handle), ab.graph_ms(call, handle)) * 1e3
            except Exception as e:  # a setting the library refuses
                row["settings"][key] = {"error": str(e).splitlines()[0][:160]}
                continue
            row["settings"][key] = {"us": us, "rel_err": err, "plan": plan_of(new_log())}
        row["cudnn_us"].append(ab.graph_ms(cudnn, h0) * 1e3)
        cud = min(row["cudnn_us"])
        ok = {n: s for n, s in row["settings"].items() if "us" in s and s["rel_err"] <= 1e-2}
        best = min(ok, key=lambda n: ok[n]["us"]) if ok else None
        row["best"] = best
        print("\n%d x %d, %d/%d, d%d: %.1f MB of K+V, %.2f us at 3.0 TB/s; cuDNN %s us" % (
            b, sk, hq, hkv, d, row["kv_bytes"] / 1e6, row["kv_bytes"] / 3.0e6,
            " / ".join("%.2f" % x for x in row["cudnn_us"])), flush=True)
        for n, s in row["settings"].items():
            if "us" not in s:
                print("  %-22s %s" % (n, s["error"]), flush=True)
                continue
            print("  %-22s %8.2f us  x cuDNN %.3f  %-40s err %.1e%s" % (
                n, s["us"], cud / s["us"], s["plan"], s["rel_err"], "  <- best" if n == best else ""), flush=True)
        out.append(row)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                           "cudnn": torch.backends.cudnn.version(), "rows": out}, f, indent=1)
        del q, k, v, o, lse, ref
        torch.cuda.empty_cache()
    print("\nsummary (GPU time, us; x cuDNN = cuDNN's lower timing / mgpu)")
    print("| B x Sk, Hq/Hkv, D | cuDNN | P | P_end | new | best | best setting (plan) |")
    for r in out:
        s = r["settings"]
        g = lambda n: "%.2f" % s[n]["us"] if n in s and "us" in s[n] else "-"
        best = r["best"]
        print("| %d x %d, %d/%d, d%d | %.2f | %s | %s | %s | %s | %s (%s) |" % (
            r["B"], r["Sk"], r["Hq"], r["Hkv"], r["D"], min(r["cudnn_us"]), g("P"), g("P_end"), g("new"),
            g(best), best, s[best]["plan"] if best else "-"))
    print("sweep %.0f s, %d library copies" % (time.time() - t0, len(copies.loaded)), flush=True)
    sys.stdout.flush()
    os._exit(0)  # the copies' handles are left to the process's end


if __name__ == "__main__":
    main()
