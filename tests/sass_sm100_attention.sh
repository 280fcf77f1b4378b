#!/usr/bin/env bash
# Build-time check of the sm_100a attention forward cubin, no GPU needed: for
# every entry mgpu_attention_fwd_sm100_<dtype>_d<head_dim>, count in the SASS
# that cuobjdump disassembles the instructions the kernel was written for, and
# fail when a count is off or local memory is used. With the ABI's Blackwell
# tiles (kernels/abi/attention_abi.h): q_tiles = 2 and block_n = 128 for head
# dims <= 128, q_tiles = 2 and block_n = 64 for 192, q_tiles = 1 and
# block_n = 64 for 256; dim_blocks = ceil(head_dim / 64):
#   UTCHMMA gdesc[...]  tcgen05.mma, both operands in shared memory: S = Q K^T,
#                       exactly q_tiles * head_dim / 16 (one K = 16 step each,
#                       issued once in the key loop)
#   UTCHMMA tmem[...]   tcgen05.mma with A = P from tensor memory (O += P V),
#                       exactly 2 * q_tiles * block_n / 16 (in the loop and
#                       after it)
#   no .2CTA form       one CTA per MMA
#   UTMALDG             exactly 12 * dim_blocks (one per dim block of each
#                       box): the contiguous loop's Q, K and V (3), and the
#                       paged path's Q (1) and K and V (8: the Hopper producer's
#                       paged loop, sm90::produce_kv_paged, issues a key
#                       block's boxes four at a time, unrolled)
#   UTCBAR              tcgen05.commit, at least 5 (S, P V, the stages)
#   LDTM / STTM         tcgen05.ld (S, O) and tcgen05.st (P, O rescale), >= 3 each
#   LDL / STL           none, and cuobjdump -res-usage LOCAL:0
# Prints one line of counts per entry.
#
#   tests/sass_sm100_attention.sh build/attention_fwd_sm100.cubin
#
# Exit 77 (skipped) when the cubin was not built (no sm100a in -Darchs) or no
# cuobjdump is found ($CUOBJDUMP, PATH, the CUDA toolkit's bin).
set -uo pipefail

source "$(dirname "$0")/sass_common.sh"
cubin="${1:-}"
sass_load "$cubin" "sm100a attention" sm100a
sass_entries entries 'mgpu_attention_fwd_sm100_[a-z0-9_]+' 10 'fp16 / bf16 x head dims 64 96 128 192 256'

fmt='%-36s %7s %7s %6s %7s %6s %5s %5s %4s %4s %6s\n'
printf "$fmt" entry MMA.SS MMA.TS .2CTA UTMALDG UTCBAR LDTM STTM LDL STL LOCAL
for e in $entries; do
    sass_body "$e"
    ss=$(count '[[:space:]]UTCHMMA[.A-Z0-9]*[[:space:]]+gdesc\[')
    ts=$(count '[[:space:]]UTCHMMA[.A-Z0-9]*[[:space:]]+tmem\[')
    two=$(count '[[:space:]]UTC[A-Z]*MMA\.2CTA')
    ldg=$(count '[[:space:]]UTMALDG')
    bar=$(count '[[:space:]]UTCBAR')
    ldtm=$(count '[[:space:]]LDTM')
    sttm=$(count '[[:space:]]STTM')
    printf "$fmt" "$e" "$ss" "$ts" "$two" "$ldg" "$bar" "$ldtm" "$sttm" "$ldl" "$stl" "${local_bytes:-?}"
    d=$(sed -E 's/.*_d([0-9]+)$/\1/' <<<"$e")
    if (( d <= 128 )); then q_tiles=2; block_n=128; elif (( d <= 192 )); then q_tiles=2; block_n=64; else q_tiles=1; block_n=64; fi
    dim_blocks=$(( (d + 63) / 64 ))
    bad=()
    (( ss == q_tiles * d / 16 )) || bad+=("S = Q K^T MMAs $ss, want $(( q_tiles * d / 16 ))")
    (( ts == 2 * q_tiles * block_n / 16 )) || bad+=("P V MMAs (A in TMEM) $ts, want $(( 2 * q_tiles * block_n / 16 ))")
    (( two == 0 )) || bad+=("2CTA MMA forms ($two)")
    (( ldg == 12 * dim_blocks )) || bad+=("UTMALDG $ldg, want $(( 12 * dim_blocks ))")
    (( bar >= 5 )) || bad+=("UTCBAR $bar, want >= 5")
    (( ldtm >= 3 )) || bad+=("LDTM $ldtm, want >= 3")
    (( sttm >= 3 )) || bad+=("STTM $sttm, want >= 3")
    sass_verdict "$e"
done
exit $fail
