#!/usr/bin/env python3
"""Row gather bandwidth: mgpu_gather against torch.index_select and copy bandwidth.

Calls the library through the Python package mgpukernels (python/; the
repository's copy is used when none is installed) in the same process as
PyTorch, on the same GPU, context and stream, and times for each row size (256 B, 2 KiB,
8 KiB, 14 KiB) and index count (2^16, 2^18, 2^20):
  - mgpu_gather (random int64 indices into a table larger than L2),
  - torch.index_select(table, 0, index, out=...) with the same inputs,
  - a device-to-device copy of a buffer the size of the output (torch clone).
Bytes = rows * row_bytes read + the same written + index bytes; the copy moves
2 * size bytes. CUDA events around single launches, warm-up, median of the
timed runs. Each mgpu result is checked against index_select before timing.

Run from the repository root on a GPU machine with a build in ./build:
    python3 bench/gather_bench.py [--lib build/libmgpukernels.so] [--json out.json]
(--lib sets MGPU_LIBRARY, the library the package loads.)
Prints a Markdown table (TB/s, % of copy bandwidth, ratio to index_select).
"""
import argparse
import json
import os
import statistics
import sys

import torch

ROW_BYTES = [256, 2048, 8192, 14336]
INDEX_COUNTS = [1 << 16, 1 << 18, 1 << 20]
ELEM = torch.bfloat16
ELEM_SIZE = 2
WARMUP = 3
RUNS = 20
TABLE_OVER_L2 = 4        # table bytes >= this many L2 sizes


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
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(WARMUP + RUNS):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        if i >= WARMUP:
            times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default="build/libmgpukernels.so")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "gather_bench.json"))
    args = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    torch.zeros(1, device=dev)  # the primary context is now current: the handle binds to it
    mk = import_mgpukernels(args.lib)
    handle = mk.Handle(stream=torch.cuda.current_stream())
    props = torch.cuda.get_device_properties(dev)
    l2_bytes = props.L2_cache_size

    results = []
    for row_bytes in ROW_BYTES:
        row_elems = row_bytes // ELEM_SIZE
        table_rows = max(-(-TABLE_OVER_L2 * l2_bytes // row_bytes), max(INDEX_COUNTS))
        table = torch.randn(table_rows, row_elems, device=dev, dtype=ELEM)
        for n in INDEX_COUNTS:
            index = torch.randint(0, table_rows, (n,), device=dev, dtype=torch.int64)
            out = torch.empty(n, row_elems, device=dev, dtype=ELEM)
            ref = torch.empty_like(out)
            # Arguments converted once: the timed call is the C call alone.
            run_mgpu = mk.gather(table, index, out, handle=handle, prepare=True)

            def run_torch():
                torch.index_select(table, 0, index, out=ref)

            run_mgpu()
            run_torch()
            handle.check_index_errors()
            if not torch.equal(out.view(torch.int16), ref.view(torch.int16)):
                sys.exit("mgpu_gather differs from index_select (row_bytes=%d n=%d)" % (row_bytes, n))

            t_mgpu = median_ms(run_mgpu)
            t_torch = median_ms(run_torch)
            t_copy = median_ms(lambda: out.clone())
            moved = 2 * n * row_bytes + n * index.element_size()
            copied = 2 * n * row_bytes
            r = {
                "row_bytes": row_bytes, "n": n, "table_rows": table_rows,
                "mgpu_ms": t_mgpu, "torch_ms": t_torch, "copy_ms": t_copy,
                "mgpu_tbs": moved / t_mgpu / 1e9, "torch_tbs": moved / t_torch / 1e9,
                "copy_tbs": copied / t_copy / 1e9,
            }
            r["pct_copy"] = 100.0 * r["mgpu_tbs"] / r["copy_tbs"]
            r["torch_pct_copy"] = 100.0 * r["torch_tbs"] / r["copy_tbs"]
            r["ratio"] = t_torch / t_mgpu
            results.append(r)
            del out, ref, index, run_mgpu  # the prepared call holds the arrays too
        del table
        torch.cuda.empty_cache()
    handle.close()

    print("Device: %s (%d SMs, L2 %d MiB), torch %s; bf16 rows, int64 indices" %
          (props.name, props.multi_processor_count, l2_bytes >> 20, torch.__version__))
    print()
    print("| row bytes | indices | table rows | mgpu TB/s | % of copy | index_select TB/s | % of copy "
          "| copy TB/s | mgpu / index_select |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print("| %d | 2^%d | %d | %.2f | %.1f%% | %.2f | %.1f%% | %.2f | %.2f× |" %
              (r["row_bytes"], r["n"].bit_length() - 1, r["table_rows"], r["mgpu_tbs"], r["pct_copy"],
               r["torch_tbs"], r["torch_pct_copy"], r["copy_tbs"], r["ratio"]))
    with open(args.json, "w") as f:
        json.dump({"device": props.name, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
