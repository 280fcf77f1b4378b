#!/usr/bin/env bash
# Build-time check of the sm_100a GEMM cubin, no GPU needed: for every
# persistent GEMM entry (mgpu_gemm_sm100_ws_*) count, in the SASS that
# cuobjdump disassembles, the instructions the kernel was written for, and
# fail when one is missing or when local memory is used:
#   UTCHMMA       tcgen05.mma kind::f16 (fp16 / bf16 entries), a multiple of 4
#                 (4 K = 16 steps per k-tile); none in fp8 entries
#   UTCQMMA       tcgen05.mma kind::f8f6f4 (fp8 entries: e4m3 / e5m2 in the name),
#                 a multiple of 4 (4 K = 32 steps per k-tile); none in 16-bit entries
#                 (the MMA of either kind: .2CTA forms only, in CTA-pair entries
#                 (_c2), none in lone ones (_c1))
#   UTMALDG       TMA loads, exactly one per box of a k-tile: 1 per K-major operand
#                 tile, one per 64-row chunk of an M/N-major one (A: 256 rows per
#                 lone CTA, 128 per CTA of a pair; B: 128 rows); .2CTA forms
#                 in pair entries (their bytes complete on the leader's barrier)
#   UTCBAR        tcgen05.commit (.2CTA.MULTICAST in pair entries)
#   UTMASTG       TMA stores of the epilogue
#   LDTM          tcgen05.ld of the epilogue
#   MUFU.EX2      the fused GELU of the epilogue (exp2 of the tanh form)
#   LDL / STL     none (no spills), and cuobjdump -res-usage LOCAL:0
# Prints one line of counts per entry.
#
#   tests/sass_sm100.sh build/gemm_sm100_ws.cubin
#
# Exit 77 (skipped) when the cubin was not built (no sm100a in -Darchs) or no
# cuobjdump is found ($CUOBJDUMP, PATH, the CUDA toolkit's bin).
set -uo pipefail

source "$(dirname "$0")/sass_common.sh"
cubin="${1:-}"
sass_load "$cubin" "sm100a GEMM" sm100a
sass_entries entries 'mgpu_gemm_sm100_ws_[a-z0-9_]+'

fmt='%-52s %8s %9s %8s %9s %8s %9s %8s %5s %4s %4s %4s %6s\n'
printf "$fmt" entry UTC*MMA .2CTA UTMALDG .2CTA UTCBAR .MULTICAST UTMASTG LDTM EX2 LDL STL LOCAL
for e in $entries; do
    sass_body "$e"
    if [[ "$e" =~ _e4m3|_e5m2 ]]; then mma_op=UTCQMMA; other_op=UTCHMMA; else mma_op=UTCHMMA; other_op=UTCQMMA; fi
    mma=$(count "[[:space:]]$mma_op")
    mma2=$(count "[[:space:]]$mma_op\.2CTA")
    other=$(count "[[:space:]]$other_op")
    ex2=$(count '[[:space:]]MUFU\.EX2')
    ldg=$(count '[[:space:]]UTMALDG')
    ldg2=$(count '[[:space:]]UTMALDG[.A-Z0-9]*\.2CTA')
    bar=$(count '[[:space:]]UTCBAR')
    bar2=$(count '[[:space:]]UTCBAR\.2CTA\.MULTICAST')
    stg=$(count '[[:space:]]UTMASTG')
    ldtm=$(count '[[:space:]]LDTM')
    printf "$fmt" "$e" "$mma" "$mma2" "$ldg" "$ldg2" "$bar" "$bar2" "$stg" "$ldtm" "$ex2" "$ldl" "$stl" "${local_bytes:-?}"
    bad=()
    (( mma >= 4 && mma % 4 == 0 )) || bad+=("$mma_op count $mma")
    (( other == 0 )) || bad+=("$other $other_op (the other MMA kind)")
    (( ex2 >= 1 )) || bad+=("no MUFU.EX2: the fused GELU is missing")
    if [[ "$e" == *_c2 ]]; then
        (( mma2 == mma )) || bad+=("pair entry with non-2CTA MMAs ($mma2 of $mma)")
        (( ldg2 >= 1 && ldg2 == ldg )) || bad+=("pair entry: TMA loads not all .2CTA ($ldg2 of $ldg)")
        (( bar2 >= 2 )) || bad+=("pair entry: commits not multicast ($bar2)")
    else
        (( mma2 == 0 )) || bad+=("lone entry with 2CTA MMAs")
        (( ldg2 == 0 )) || bad+=("lone entry with 2CTA TMA loads")
    fi
    # layout letters as cuBLAS's: first t -> A K-major, second n -> B K-major
    layout=$(sed -E 's/^mgpu_gemm_sm100_ws_[a-z0-9]+_([nt]{2})_.*/\1/' <<<"$e")
    a_rows=$([[ "$e" == *_c2 ]] && echo 128 || echo 256)
    a_boxes=$([[ "${layout:0:1}" == t ]] && echo 1 || echo $(( a_rows / 64 )))
    b_boxes=$([[ "${layout:1:1}" == n ]] && echo 1 || echo 2)
    want_ldg=$(( a_boxes + b_boxes ))
    (( ldg == want_ldg )) || bad+=("UTMALDG $ldg, want $want_ldg for layout $layout")
    (( bar >= 2 )) || bad+=("fewer than 2 UTCBAR (stage and accumulator commits)")
    (( stg >= 1 )) || bad+=("no UTMASTG")
    (( ldtm >= 1 )) || bad+=("no LDTM")
    sass_verdict "$e"
done
exit $fail
