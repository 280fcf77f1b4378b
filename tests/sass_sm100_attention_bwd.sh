#!/usr/bin/env bash
# Build-time check of the sm_100a attention backward cubin, no GPU needed: for
# every entry mgpu_attention_bwd_sm100_<dtype>_d<head_dim> (head dims 64, 96,
# 128, 192, 256; block_m = 64 queries and 128 keys per CTA; head dims 192 /
# 256: two head-dim slices of dK, dV, dQ (128 + 64, 128 + 128 columns), one
# per CTA, K / V loaded as two 64-row boxes (the ABI's block_n = 64) and one
# Q / dO stage; dim_blocks = ceil(head_dim / 64)), count in the SASS that
# cuobjdump disassembles the instructions the kernel was written for, and
# fail when a count is off or local memory is used:
#   UTCHMMA gdesc[...]  tcgen05.mma, both operands in shared memory, exactly
#                       4 * head_dim / 16 + 8: S^T = K Q^T and dP^T = V dO^T
#                       (head_dim / 16 K-steps each, issued twice: for block 0
#                       before the loop and for block i + 1 in it; over the
#                       whole head dim in every slice) and dQ^T = K^T dS^T
#                       (128 keys / 16 = 8, in the loop)
#   UTCHMMA tmem[...]   tcgen05.mma with A from tensor memory, exactly
#                       2 * block_m / 16 = 8: dV += P^T dO, dK += dS^T Q
#   no .2CTA form       one CTA per MMA
#   UTMALDG             exactly 4 * dim_blocks (K, V, Q, dO boxes), 6 *
#                       dim_blocks for head dims 192 / 256 (two K and two V
#                       boxes of 64 rows per 64-column block)
#   UBLKCP              >= 2: the lse_log2 and dpsum rows (1-D bulk copies)
#   UTCBAR              tcgen05.commit, >= 10 (s_full, dp_full twice each,
#                       dv_done, dk_done, dq_full, q_empty, do_empty, kv_done)
#   LDTM                tcgen05.ld, >= 8 (S^T, dP^T, dQ^T: 2 each; dV, dK)
#   STTM                tcgen05.st, >= 2 (P^T, dS^T written back)
#   REDG .F32           >= 64 scalar fp32 reductions (dQ into dq_accum, one
#                       per query of a block) and >= 8 of .F32x4 (GQA dK, dV)
#   REDG .S32           head dims 192 / 256: >= 2 integer adds (the two
#                       slices' deterministic turns on dq_semaphore and
#                       dkv_semaphore)
#   LDL / STL           none, and cuobjdump -res-usage LOCAL:0
#   idesc immediates    the instruction descriptors, as hand-computed in
#                       kernels/blackwell/attention_bwd_sm100_descriptors.cuh,
#                       loaded as immediates (UMOV / MOV / IMAD.MOV, or
#                       SEL between the two slice widths of 192): S^T / dP^T
#                       0x08100010 | t, dV / dK 0x08010010 | t | (n / 8) << 17
#                       for n = each slice's width (head_dim up to 128; 128
#                       and 64 for 192; 128 for 256), dQ^T 0x08118010 | t
#                       (t = 0x480 for bf16, 0 for fp16), and 0x40004040,
#                       the upper word of every shared-memory descriptor
#                       (SBO 1024, version 1, 128-byte swizzle)
#   REG                 > 85 registers per thread (-res-usage): 384 threads
#                       then need more than half of the 64 K registers of an
#                       SM, so two CTAs never share one, and the 512-column
#                       tcgen05.alloc never waits for another CTA (which, in
#                       deterministic mode, could be waiting for this one)
# The preprocess and postprocess entries of the cubin (the Hopper ones,
# compiled for sm_100a) must exist, 4 of them, without local memory.
# Prints one line of counts per entry.
#
#   tests/sass_sm100_attention_bwd.sh build/attention_bwd_sm100.cubin
#
# Exit 77 (skipped) when the cubin was not built (no sm100a in -Darchs) or no
# cuobjdump is found ($CUOBJDUMP, PATH, the CUDA toolkit's bin).
set -uo pipefail

source "$(dirname "$0")/sass_common.sh"
cubin="${1:-}"
sass_load "$cubin" "sm100a attention backward" sm100a
sass_entries entries 'mgpu_attention_bwd_sm100_[a-z0-9_]+' 10 'fp16 / bf16 x head dims 64 96 128 192 256'
sass_entries helpers 'mgpu_attention_bwd_(pre|post)_sm100_[a-z0-9_]+' 4 'preprocess / postprocess, fp16 / bf16'

fmt='%-34s %6s %6s %5s %7s %6s %6s %5s %5s %6s %6s %6s %4s %4s %6s %4s\n'
printf "$fmt" entry MMA.SS MMA.TS .2CTA UTMALDG UBLKCP UTCBAR LDTM STTM RED RED.x4 RED.S32 LDL STL LOCAL REG
for e in $entries; do
    sass_body "$e"
    ss=$(count '[[:space:]]UTCHMMA[.A-Z0-9]*[[:space:]]+gdesc\[')
    ts=$(count '[[:space:]]UTCHMMA[.A-Z0-9]*[[:space:]]+tmem\[')
    two=$(count '[[:space:]]UTC[A-Z]*MMA\.2CTA')
    ldg=$(count '[[:space:]]UTMALDG')
    blk=$(count '[[:space:]]UBLKCP')
    bar=$(count '[[:space:]]UTCBAR')
    ldtm=$(count '[[:space:]]LDTM')
    sttm=$(count '[[:space:]]STTM')
    red=$(count '[[:space:]]REDG\.E\.ADD\.F32\.')
    red4=$(count '[[:space:]]REDG\.E\.ADD\.F32x4')
    reds32=$(count '[[:space:]]REDG\.E\.ADD\.(S32\.)?STRONG\.GPU|[[:space:]]REDG\.E\.ADD\.S32')
    imm=$(grep -E '[[:space:]](U?MOV|IMAD\.MOV|U?SEL)' <<<"$body" | grep -oiE '0x[0-9a-f]+' | tr 'A-F' 'a-f' | sort -u)
    regs=$(sass_res_field "$e" REG)
    printf "$fmt" "$e" "$ss" "$ts" "$two" "$ldg" "$blk" "$bar" "$ldtm" "$sttm" "$red" "$red4" "$reds32" "$ldl" "$stl" \
        "${local_bytes:-?}" "${regs:-?}"
    d=$(sed -E 's/.*_d([0-9]+)$/\1/' <<<"$e")
    dim_blocks=$(( (d + 63) / 64 ))
    [[ "$e" == *_bf16_* ]] && tbits=$(( 0x480 )) || tbits=0
    want_st=$(printf '0x%x' $(( 0x08100010 | tbits )))
    (( d > 128 )) && slice_widths="128 $(( d - 128 ))" || slice_widths=$d
    want_kv=()
    for n in $slice_widths; do
        want_kv+=("$(printf '0x%x' $(( 0x08010010 | tbits | ((n / 8) << 17) )))")
    done
    want_dqt=$(printf '0x%x' $(( 0x08118010 | tbits )))
    (( d > 128 )) && want_ldg=$(( 6 * dim_blocks )) || want_ldg=$(( 4 * dim_blocks ))
    bad=()
    for want in "$want_st" "${want_kv[@]}" "$want_dqt" 0x40004040; do
        grep -qx "$want" <<<"$imm" || bad+=("no immediate $want (instruction / shared-memory descriptor)")
    done
    (( d == 64 || d == 96 || d == 128 || d == 192 || d == 256 )) || bad+=("head dim $d has no sm_100a backward")
    (( ss == 4 * d / 16 + 8 )) || bad+=("shared-memory MMAs $ss, want $(( 4 * d / 16 + 8 ))")
    (( ts == 8 )) || bad+=("MMAs with A in TMEM $ts, want 8")
    (( two == 0 )) || bad+=("2CTA MMA forms ($two)")
    (( ldg == want_ldg )) || bad+=("UTMALDG $ldg, want $want_ldg")
    (( d <= 128 || reds32 >= 2 )) || bad+=("integer reductions $reds32 (slice turns), want >= 2")
    (( blk >= 2 )) || bad+=("UBLKCP $blk, want >= 2")
    (( bar >= 10 )) || bad+=("UTCBAR $bar, want >= 10")
    (( ldtm >= 8 )) || bad+=("LDTM $ldtm, want >= 8")
    (( sttm >= 2 )) || bad+=("STTM $sttm, want >= 2")
    (( red >= 64 )) || bad+=("scalar fp32 reductions $red, want >= 64")
    (( red4 >= 8 )) || bad+=("fp32x4 reductions $red4, want >= 8")
    (( ${regs:-0} * 384 > 32768 )) || bad+=("REG ${regs:-unknown}: two CTAs could share an SM (and its 512 TMEM columns)")
    sass_verdict "$e"
done
for e in $helpers; do
    sass_body "$e"
    printf '%-34s %4s %4s %6s\n' "$e" "$ldl" "$stl" "${local_bytes:-?}"
    bad=()
    sass_verdict "$e"
done
exit $fail
