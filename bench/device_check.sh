#!/usr/bin/env bash
# On a GPU machine, from the repository root, with a build in ./build made
# elsewhere (or here): runs the GPU tests, the tests under compute-sanitizer,
# SASS greps of the embedded kernels, and the GEMM benchmark. Logs go to
# $OUT (default ./device-logs); a short table is printed last.
set -u
OUT=${OUT:-device-logs}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=${B:-build}
summary=()
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"

run() { # name, command...
    local name=$1; shift
    local t0=$(date +%s)
    "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    summary+=("$(printf '%-28s rc=%-4s %4ss  %s' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$(tail -n 1 "$OUT/$name.log" | cut -c1-90)")")
}

if [ "${SKIP_TESTS:-0}" != 1 ]; then
    for t in $B/tests/test_*_gpu $B/tests/test_api; do
        [ -x "$t" ] && run "$(basename "$t" | sed 's/^test_//')" "$t"
    done
    for e in $B/examples/example_*; do
        [ -x "$e" ] && run "$(basename "$e")" "$e"
    done
    if [ -d python/tests ]; then
        run python_tests env MGPU_LIBRARY=$B/libmgpukernels.so PYTHONPATH=python python3 -m pytest -q python/tests
    fi
fi
if [ "${SKIP_SANITIZER:-0}" != 1 ]; then
    for tool in memcheck racecheck synccheck; do
        run "sanitizer_$tool" env MGPU_TEST_QUICK=1 compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/test_gemm_gpu
        for t in gemm_fp8 gemm_epilogue; do
            run "sanitizer_${tool}_$t" env MGPU_TEST_QUICK=1 compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/test_${t}_gpu
        done
    done
    run sanitizer_memcheck_gather env MGPU_TEST_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/test_gather_gpu
    for tool in memcheck racecheck; do
        run "sanitizer_${tool}_attention" env MGPU_TEST_QUICK=1 compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/test_attention_gpu
        [ -x $B/tests/test_attention_bwd_gpu ] &&
            run "sanitizer_${tool}_attention_bwd" env MGPU_TEST_QUICK=1 compute-sanitizer --tool $tool --error-exitcode 9 $B/tests/test_attention_bwd_gpu
    done
    [ -x $B/tests/test_graph_gpu ] && run sanitizer_memcheck_graph compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/test_graph_gpu
    # cuBLAS's own split-K kernels report races of their own; count only ours.
    summary+=("$(printf '%-28s %s' "hazards in mgpu_ kernels" "$(grep -cE '(Race|Error).*mgpu_' "$OUT"/sanitizer_*.log | paste -sd' ')")")
fi
for cubin in $B/*.cubin; do
    g=$(basename "$cubin" .cubin)
    cuobjdump -sass "$cubin" > "$OUT/sass_$g.txt" 2>&1
    summary+=("$(printf '%-28s HGMMA=%s QGMMA=%s UTCMMA=%s UTMALDG=%s HMMA=%s LDL/STL=%s' "sass $g" \
        "$(grep -c HGMMA "$OUT/sass_$g.txt")" "$(grep -c QGMMA "$OUT/sass_$g.txt")" \
        "$(grep -cE 'UTC[A-Z]*MMA' "$OUT/sass_$g.txt")" \
        "$(grep -c UTMALDG "$OUT/sass_$g.txt")" "$(grep -cE '\bHMMA' "$OUT/sass_$g.txt")" \
        "$(grep -cE '\b(LDL|STL)\b' "$OUT/sass_$g.txt")")")
done
[ "${SKIP_BENCH:-0}" = 1 ] || run bench $B/bench/mgpu-bench ${BENCH_ARGS:-} --json "$OUT/bench.json"
[ "${SKIP_BENCH:-0}" = 1 ] || run bench_lt $B/bench/mgpu-bench --fp8 --epilogue --json "$OUT/bench_lt.json"
[ "${SKIP_BENCH:-0}" = 1 ] || run bench_small $B/bench/mgpu-bench --small --overhead --json "$OUT/bench_small.json"
[ "${SKIP_BENCH:-0}" = 1 ] || run bench_models $B/bench/mgpu-bench --models --dtype bf16 --reps 20 --json "$OUT/bench_models.json"
[ "${SKIP_BENCH:-0}" = 1 ] || run gather_bench python3 bench/gather_bench.py --lib $B/libmgpukernels.so --json "$OUT/gather_bench.json"
[ "${SKIP_BENCH:-0}" = 1 ] || run attention_bench python3 bench/attention_bench.py --lib $B/libmgpukernels.so --json "$OUT/attention_bench.json"
echo
[ -f "$OUT/bench.log" ] && cat "$OUT/bench.log"
[ -f "$OUT/bench_lt.log" ] && cat "$OUT/bench_lt.log"
grep -hE "FAILED|failed:|ERROR SUMMARY" "$OUT"/*.log | head -20
printf '%s\n' "${summary[@]}"
