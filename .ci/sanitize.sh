#!/usr/bin/env bash
# The host code under AddressSanitizer and UndefinedBehaviorSanitizer: src/
# and the CPU tests compiled with both sanitizers against the registry and
# kernel images an existing build generated (no kernel is rebuilt), then run
# with every report fatal. Usage: .ci/sanitize.sh [build dir] (default
# build). Exits non-zero when a test fails or a sanitizer reports anything.
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
cuda=${CUDA_HOME:-/usr/local/cuda}
cc=${CC:-cc}
out=$build/sanitize
if [ ! -f "$build/registry.c" ] || [ ! -f "$build/images.c" ]; then
    echo "sanitize: $build/registry.c or $build/images.c missing (build the project first)"
    exit 1
fi
rm -rf "$out"
mkdir -p "$out/obj" "$out/fakecuda"

san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cflags="-std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror $san"
inc="-I$build -Iinclude -Isrc/runtime -Isrc/gemm -Isrc/attention -Isrc/gather -Ikernels/abi -Ikernels -I$cuda/include -Itests"

fail() {
    echo "sanitize: $*"
    exit 1
}

objs=()
for f in src/*/*.c "$build/registry.c"; do
    o="$out/obj/$(echo "$f" | tr '/' '_').o"
    $cc $cflags -fvisibility=hidden $inc -c "$f" -o "$o" || fail "cannot compile $f"
    objs+=("$o")
done
# the embedded cubins are data: no instrumentation needed
$cc -std=c11 -O0 $inc -c "$build/images.c" -o "$out/obj/images.o" || fail "cannot compile images.c"
objs+=("$out/obj/images.o")
$cc $cflags -shared -fPIC -fvisibility=hidden -I"$cuda/include" tests/fake_cuda.c -o "$out/fakecuda/libcuda.so.1" ||
    fail "cannot build the fake driver"

export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
fake="LD_LIBRARY_PATH=$out/fakecuda"
# name | sources | environment | arguments
tests=(
    "registry|tests/test_registry.c||"
    "select|tests/test_select.c||"
    "validate|tests/test_validate.c||"
    "overflow|tests/test_overflow.c||"
    "attention_select|tests/test_attention_select.c||"
    "attention_bwd_select|tests/test_attention_bwd_select.c||"
    "gather_select|tests/test_gather_select.c||"
    "includes|tests/test_includes.c||."
    "api|tests/test_api.c||"
    "handles|tests/test_handles.c|$fake|"
    "stub_driver|tests/test_stub_driver.c|$fake FAKE_CUDA_MODE=stub|"
    "stub_driver_missing_entry|tests/test_stub_driver.c|$fake FAKE_CUDA_MODE=missing|"
)
passed=0
failed=0
for t in "${tests[@]}"; do
    IFS='|' read -r name src envs args <<<"$t"
    exe="$out/test_$name"
    if ! $cc $cflags $inc "$src" "${objs[@]}" -o "$exe" -ldl -lpthread -lm; then
        echo "sanitize: $name: FAIL (build)"
        failed=$((failed + 1))
        continue
    fi
    log="$out/$name.log"
    # shellcheck disable=SC2086
    if env $envs "$exe" $args >"$log" 2>&1 && ! grep -qE "runtime error:|Sanitizer" "$log"; then
        passed=$((passed + 1))
    else
        echo "sanitize: $name: FAIL"
        tail -n 30 "$log"
        failed=$((failed + 1))
    fi
done
echo "sanitize: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
