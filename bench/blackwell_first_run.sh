#!/usr/bin/env bash
# The first thing to run on a Blackwell GPU (B200 / GB200, compute
# capability 10.0), from the repository root. Nothing of the sm_100a GEMM,
# attention forward or attention backward has run on hardware before this
# script: it checks correctness first, then measures.
#
#   1. builds ./build-b200 with -Darchs=sm100a (unless B=<dir> names a build)
#   2. tests/sass_sm100.sh, tests/sass_sm100_attention.sh and
#      tests/sass_sm100_attention_bwd.sh: the instruction mix of every sm_100a
#      GEMM, attention forward and attention backward entry
#   3a. the attention backward first (the newest kernel): test_attention_bwd_gpu
#      with MGPU_LOG=1 under a time limit (on 10.0 every backward call, head
#      dims 64, 96, 128, 192 and 256, selects mgpu_attention_bwd_sm100_*; 192
#      and 256 run the split-head-dim CTAs and the one-stage MMA schedule, so
#      their cases are their first test; a SKIP row there means a build
#      without that head dim), then compute-sanitizer
#      memcheck, racecheck, synccheck on its quick cases, then
#      bench/attention_bench.py --passes bwd when PyTorch is there (against
#      cuDNN and flash SDPA; the deterministic mode's cost is a column)
#   3b. the attention forward, on its own (a hang here must not hide the GEMM
#      results):
#      test_attention_gpu with MGPU_LOG=1 under a time limit. On 10.0 every
#      attention forward call selects an sm_100a variant
#      (mgpu_attention_fwd_sm100_*, the only ones for that device); the log
#      shows which ran, counted against docs/variants.md. Then
#      compute-sanitizer memcheck, racecheck, synccheck on it (quick cases).
#   3c. the forward's serving paths: test_attention_decode_gpu with MGPU_LOG=1
#      under a time limit. On 10.0 its paged caches (pages of 16 ... 256 rows,
#      shuffled, NaN past each sequence), seqused_k lengths (0, 1,
#      page_size + 1, ...) and mgpu_kv_cache_append run the sm_100a forward
#      (its paged TMA warp and the V-row zeroing have never run) and
#      mgpu_kv_cache_append_sm100; its forced GQA packing and key splits are
#      the sm_90a planner's and do nothing on 10.0 (one unsplit, unpacked
#      call each). Then compute-sanitizer memcheck, racecheck, synccheck on
#      its quick cases.
#   4. every GPU test. test_gemm_gpu runs the planner's own picks and, on
#      compute capability 10.0, forces every sm_100a GEMM variant through
#      MGPU_FORCE_VARIANT (both dtypes, all four layouts, lone CTAs and CTA
#      pairs) over edge shapes, beta, direct stores, batches and broadcasts;
#      test_gemm_fp8_gpu (every e4m3 / e5m2 pair and output dtype, K = 16384
#      against an fp32 reference: the check of the fp32 TMEM accumulation of
#      decision 013, and every kind::f8f6f4 variant forced) and
#      test_gemm_epilogue_gpu (bias modes and dtypes, ReLU / GELU, scales,
#      batches, every sm_100a 16-bit variant forced) against cuBLAS
#   5. the GEMM, fp8 and epilogue tests with MGPU_LOG=1, keeping the variant
#      each call ran, then compute-sanitizer on the fp8 and epilogue tests
#   6. compute-sanitizer memcheck, racecheck, synccheck on test_gemm_gpu
#      (quick shapes, forced variants included)
#   7. bench/attention_bench.py --passes fwd when PyTorch is there (against
#      cuDNN and flash SDPA)
#   8. mgpu-bench against cuBLAS (bf16 and f16, all four layouts), with
#      MGPU_LOG=1 so every timed call names its variant
# Logs go to $OUT (default ./b200-logs); a short table is printed last.
# Exit status: 0 when every step passed.
set -u
OUT=${OUT:-b200-logs}
B=${B:-build-b200}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$PATH:/usr/local/cuda/bin
summary=()
status=0

nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if ! grep -q ' 10\.0' "$OUT/gpu.txt"; then
    echo "not a compute capability 10.0 device: the sm_100a kernels cannot run here" | tee -a "$OUT/gpu.txt"
    exit 2
fi

run() { # name, command...: log to $OUT/name.log, one summary line
    local name=$1; shift
    local t0=$(date +%s)
    "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1
    summary+=("$(printf '%-44s rc=%-4s %5ss  %s' "$name" "$rc" "$(( $(date +%s) - t0 ))" \
        "$(tail -n 1 "$OUT/$name.log" | cut -c1-80)")")
}

if [ ! -f "$B/build.ninja" ]; then
    run build sh -c "meson setup '$B' -Darchs=sm100a && ninja -C '$B'"
else
    run build ninja -C "$B"
fi

run sass_sm100 tests/sass_sm100.sh "$B/gemm_sm100_ws.cubin"
run sass_sm100_attention tests/sass_sm100_attention.sh "$B/attention_fwd_sm100.cubin"
run sass_sm100_attention_bwd tests/sass_sm100_attention_bwd.sh "$B/attention_bwd_sm100.cubin"

# The attention backward first (see above): its barrier protocol has never
# run, so every run has a time limit.
run attention_bwd_gpu_sm100 env MGPU_LOG=1 timeout 900 "$B/tests/test_attention_bwd_gpu"
summary+=("$(printf '%-44s %s' "sm_100a attention backward entries that ran" \
    "$(grep -oE 'mgpu_attention_bwd_sm100_[a-z0-9_]+' "$OUT/attention_bwd_gpu_sm100.log" | sort -u | wc -l) of $(grep -cE '^\| `mgpu_attention_bwd_sm100_' docs/variants.md)")")
summary+=("$(printf '%-44s %s' "  of them split head dim (d192, d256)" \
    "$(grep -oE 'mgpu_attention_bwd_sm100_[a-z0-9]+_d(192|256)' "$OUT/attention_bwd_gpu_sm100.log" | sort -u | wc -l) of $(grep -cE '^\| `mgpu_attention_bwd_sm100_[a-z0-9]+_d(192|256)`' docs/variants.md)")")
for tool in memcheck racecheck synccheck; do
    run "attention_bwd_sanitizer_${tool}" env MGPU_TEST_QUICK=1 timeout 900 compute-sanitizer --tool $tool \
        --error-exitcode 9 "$B/tests/test_attention_bwd_gpu"
done
if python3 -c 'import torch' 2>/dev/null && [ -f bench/attention_bench.py ]; then
    run attention_bwd_bench env MGPU_LOG=1 timeout 1200 python3 bench/attention_bench.py --lib "$B/libmgpukernels.so" \
        --passes bwd --json "$OUT/attention_bwd_bench.json"
fi

# The attention forward first (see above). A hang is the likeliest failure of
# a barrier protocol that has never run: each run has a time limit.
run attention_gpu_sm100 env MGPU_LOG=1 timeout 600 "$B/tests/test_attention_gpu"
summary+=("$(printf '%-44s %s' "sm_100a attention entries that ran" \
    "$(grep -oE 'mgpu_attention_fwd_sm100_[a-z0-9_]+' "$OUT/attention_gpu_sm100.log" | sort -u | wc -l) of $(grep -cE '^\| `mgpu_attention_fwd_sm100_' docs/variants.md)")")
for tool in memcheck racecheck synccheck; do
    run "attention_sanitizer_${tool}" env MGPU_TEST_QUICK=1 timeout 900 compute-sanitizer --tool $tool \
        --error-exitcode 9 "$B/tests/test_attention_gpu"
done

# The forward's serving paths (paged K/V, seqused_k, KV-cache append), with a
# time limit as above.
run attention_decode_gpu_sm100 env MGPU_LOG=1 timeout 600 "$B/tests/test_attention_decode_gpu"
summary+=("$(printf '%-44s %s' "  paged / seqused_k: sm_100a entries that ran" \
    "$(grep -oE 'mgpu_attention_fwd_sm100_[a-z0-9_]+' "$OUT/attention_decode_gpu_sm100.log" | sort -u | wc -l) (append: $(grep -c 'mgpu_kv_cache_append_sm100' "$OUT/attention_decode_gpu_sm100.log") calls)")")
for tool in memcheck racecheck synccheck; do
    run "attention_decode_sanitizer_${tool}" env MGPU_TEST_QUICK=1 timeout 900 compute-sanitizer --tool $tool \
        --error-exitcode 9 "$B/tests/test_attention_decode_gpu"
done

for t in gemm_gpu gemm_epilogue_gpu gemm_fp8_gpu gather_gpu attention_gpu attention_decode_gpu graph_gpu threads_gpu log_gpu context_gpu; do
    [ -x "$B/tests/test_$t" ] && run "$t" "$B/tests/test_$t"
done

run gemm_gpu_logged env MGPU_LOG=1 "$B/tests/test_gemm_gpu"
run gemm_fp8_gpu_logged env MGPU_LOG=1 timeout 900 "$B/tests/test_gemm_fp8_gpu"
run gemm_epilogue_gpu_logged env MGPU_LOG=1 timeout 900 "$B/tests/test_gemm_epilogue_gpu"
summary+=("$(printf '%-44s %s' "sm_100a GEMM entries that ran" \
    "$(cat "$OUT"/gemm_gpu_logged.log "$OUT"/gemm_fp8_gpu_logged.log "$OUT"/gemm_epilogue_gpu_logged.log |
        grep -oE 'mgpu_gemm_sm100_ws_[a-z0-9_]+' | sort -u | wc -l) of $(grep -cE '^\| `mgpu_gemm_sm100_ws_' docs/variants.md)")")
summary+=("$(printf '%-44s %s' "sm_100a fp8 (kind::f8f6f4) entries that ran" \
    "$(grep -oE 'mgpu_gemm_sm100_ws_e[45]m[0-9a-z]+_[a-z0-9_]+' "$OUT/gemm_fp8_gpu_logged.log" | sort -u | wc -l) of $(grep -cE '^\| `mgpu_gemm_sm100_ws_e[45]m' docs/variants.md)")")
for t in gemm_fp8_gpu gemm_epilogue_gpu; do
    run "sanitizer_memcheck_$t" env MGPU_TEST_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 9 \
        "$B/tests/test_$t"
done

for tool in memcheck racecheck synccheck; do
    run "sanitizer_${tool}" env MGPU_TEST_QUICK=1 compute-sanitizer --tool $tool --error-exitcode 9 \
        "$B/tests/test_gemm_gpu"
done
summary+=("$(printf '%-44s %s' "sanitizer reports naming mgpu_ kernels" \
    "$(cat "$OUT"/sanitizer_*.log 2>/dev/null | grep -cE '(Race|Error|Invalid).*mgpu_')")")

if python3 -c 'import torch' 2>/dev/null && [ -f bench/attention_bench.py ]; then
    # forward (the backward ran in step 3a)
    run attention_bench env MGPU_LOG=1 python3 bench/attention_bench.py --lib "$B/libmgpukernels.so" --passes fwd \
        --json "$OUT/attention_bench.json"
fi

for dt in bf16 f16; do
    for layout in TN NN NT TT; do
        run "bench_${dt}_${layout}" env MGPU_LOG=1 "$B/bench/mgpu-bench" --dtype $dt --layout $layout \
            --json "$OUT/bench_${dt}_${layout}.json"
    done
done

echo
echo "== $(head -n 2 "$OUT/gpu.txt" | tail -n 1)   $(git rev-parse --short HEAD 2>/dev/null)   $(date -u +%F)"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
echo
for f in "$OUT"/bench_*.log; do
    [ -f "$f" ] && { echo "-- $(basename "$f" .log)"; grep -vE '^mgpu: ' "$f" | tail -n 25; }
done
grep -hE "FAILED|failed:|ERROR SUMMARY: [1-9]" "$OUT"/*.log | head -20
exit $status
