#!/usr/bin/env bash
# Build-time check of the sm_90a attention backward cubin, no GPU needed: for
# every main-kernel entry mgpu_attention_bwd_sm90_<dtype>_d<head_dim>, count in
# the SASS that cuobjdump disassembles the instructions the kernel was written
# for, and fail when a count is off or local memory is used. With the tiles of
# kernels/hopper/attention_bwd_tile_size.cuh (dim_blocks = ceil(head_dim / 64)):
#   HGMMA, A from registers   dV += P^T dO and dK += dS^T Q (kBlockM / 16 = 4
#                             each): 8 for head dims 96 and 128, 0 for 192
#                             and 256 (P^T, dS^T from shared memory there);
#                             head dim 64 (K, V as register fragments) also
#                             S^T of the first block, dP^T and the next
#                             block's S^T (head_dim / 16 each): 3 head_dim /
#                             16 + 8
#   HGMMA, both in smem       head dims <= 128 (the deferred-dQ loop): dQ in
#                             the loop and after it (kBlockN / 16 = 8 each),
#                             at 96 and 128 also S^T of the first block, dP^T
#                             and the next block's S^T (head_dim / 16 each):
#                             16 at 64, 3 head_dim / 16 + 16 at 96 and 128.
#                             192, 256: the same three S^T / dP^T issues
#                             (head_dim / 16 each), dV, dK and dQ (4 each):
#                             3 head_dim / 16 + 12 per copy of the consumer
#                             loop (two copies at 192, one at 256)
#   UTMALDG                   exactly 4 dim_blocks: the K, V, Q and dO boxes
#   UBLKRED                   the dQ writer's bulk reduction: 1 for head dims
#                             <= 128, 0 for 192 and 256
#   UTMAREDG                  192 and 256: the split dQ writer's tensor
#                             reductions of a block's dQ boxes of tmap_dq
#                             (16 rows x 128 columns at 256, x 64 at 192;
#                             both modes): 8 at 256 (one box per consumer
#                             warp), 12 at 192 (2 + 1); 0 for head dims <= 128
#   LDL / STL                 none, and cuobjdump -res-usage LOCAL:0
# Prints one line of counts per entry.
#
#   tests/sass_sm90_attention_bwd.sh build/attention_bwd_sm90.cubin
#
# Exit 77 (skipped) when the cubin was not built (no sm90a in -Darchs) or no
# cuobjdump is found ($CUOBJDUMP, PATH, the CUDA toolkit's bin).
set -uo pipefail

source "$(dirname "$0")/sass_common.sh"
cubin="${1:-}"
sass_load "$cubin" "sm90a attention backward" sm90a
sass_entries entries 'mgpu_attention_bwd_sm90_[a-z0-9]+_d[0-9]+' 10 'fp16 / bf16 x head dims 64 96 128 192 256'

fmt='%-36s %6s %6s %7s %7s %8s %4s %4s %6s\n'
printf "$fmt" entry MMA.RS MMA.SS UTMALDG UBLKRED UTMAREDG LDL STL LOCAL
for e in $entries; do
    sass_body "$e"
    rs=$(count '[[:space:]]HGMMA[.A-Z0-9x]*[[:space:]]+R[0-9]+,[[:space:]]*R[0-9]+,[[:space:]]*gdesc\[')
    ss=$(count '[[:space:]]HGMMA[.A-Z0-9x]*[[:space:]]+R[0-9]+,[[:space:]]*gdesc\[')
    ldg=$(count '[[:space:]]UTMALDG')
    bulk=$(count '[[:space:]]UBLKRED')
    tred=$(count '[[:space:]]UTMAREDG')
    printf "$fmt" "$e" "$rs" "$ss" "$ldg" "$bulk" "$tred" "$ldl" "$stl" "${local_bytes:-?}"
    d=$(sed -E 's/.*_d([0-9]+)$/\1/' <<<"$e")
    dim_blocks=$(( (d + 63) / 64 ))
    if (( d == 64 )); then
        want_rs=$(( 3 * d / 16 + 8 )); want_ss=16; want_bulk=1; want_tred=0
    elif (( d <= 128 )); then
        want_rs=8; want_ss=$(( 3 * d / 16 + 16 )); want_bulk=1; want_tred=0
    else
        copies=1; (( d == 192 )) && copies=2 # consumers own 128 / 64 columns: two loop instantiations
        want_rs=0; want_ss=$(( copies * (3 * d / 16 + 12) )); want_bulk=0
        want_tred=8; (( d == 192 )) && want_tred=12
    fi
    bad=()
    (( rs == want_rs )) || bad+=("HGMMA with A in registers $rs, want $want_rs")
    (( ss == want_ss )) || bad+=("HGMMA with shared-memory operands $ss, want $want_ss")
    (( ldg == 4 * dim_blocks )) || bad+=("UTMALDG $ldg, want $(( 4 * dim_blocks ))")
    (( bulk == want_bulk )) || bad+=("UBLKRED $bulk, want $want_bulk")
    (( tred == want_tred )) || bad+=("UTMAREDG $tred, want $want_tred")
    sass_verdict "$e"
done
exit $fail
