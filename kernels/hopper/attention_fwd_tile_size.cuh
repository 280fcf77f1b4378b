/*
 * Tile sizes of the Hopper attention forward, per head dim (FA3's tile_size.h
 * idea: one small table, the reasons beside it).
 *
 * A CTA owns kBlockM = 128 query rows (64 per consumer warpgroup, the wgmma M;
 * the wide entry of head dim 64: 192 rows on three consumer warpgroups)
 * and walks the keys kBlockN at a time. Each consumer thread holds
 *   O accumulator   head_dim / 2 fp32 registers,
 *   S accumulator   kBlockN / 2 fp32 registers,
 *   P (16-bit)      kBlockN / 4 registers,
 * inside a budget of kConsumerRegisters = 240 (the wide entry: 160), so
 * kBlockN shrinks as head_dim grows. Shared memory holds Q (kBlockM x
 * head_dim) plus kStages stages of K
 * and V (kBlockN x head_dim each), inside the 227 KiB a CTA may use; head dims
 * that are not multiples of 64 are padded in shared memory to whole 128-byte
 * swizzle rows (TMA fills the padding with zeros).
 *
 *   head_dim  kBlockN  stages  O+S+P regs  smem (KiB)
 *        64      128       2     32+64+32        80
 *        96      128       2     48+64+32       160
 *       128      128       2     64+64+32       160
 *       192      112       2     96+56+28       216
 *       256       80       2    128+40+20       224
 *
 * head_dim 256 at kBlockN = 80 fits without spills since the consumers'
 * shared-memory descriptors live in uniform registers (attention_fwd_sm90.cuh,
 * the warpgroup index); it measured 722 TFLOP/s on H100 (B=4, S=4096, H=8,
 * non-causal, then with ~40 bytes of spills) against 679 at kBlockN = 64
 * (wgmma.cuh has the m64n64k16 shape for that choice). tests/sass_sm90.sh
 * checks every entry for local memory.
 *
 * The numbers themselves (head dims, kBlockN, kBlockM, stages) live in
 * abi/attention_abi.h, which the generator and the runtime read too.
 */
#pragma once

#include "abi/attention_abi.h"

namespace mgpu {
namespace sm90 {

#define MGPU_ATTN_FWD_IS_HEAD_DIM(head_dim, d) || (head_dim) == (d)

template <int kHeadDim>
struct AttnFwdTile {
    static_assert(false MGPU_ATTENTION_FWD_HEAD_DIMS(MGPU_ATTN_FWD_IS_HEAD_DIM, kHeadDim),
                  "attention forward head dims: MGPU_ATTENTION_FWD_HEAD_DIMS in abi/attention_abi.h");
    static constexpr int kBlockM = MGPU_ATTENTION_FWD_BLOCK_M;
    static constexpr int kBlockN = MGPU_ATTENTION_FWD_BLOCK_N(kHeadDim);
    static constexpr int kStages = MGPU_ATTENTION_FWD_STAGES;
    /* Softmax variants (attention_fwd_softmax.cuh), chosen per head dim by
     * measurement (H200, bf16, B=4 S=4096, kernel alone, this table's tiles):
     *   lazy O rescale: d256 695 -> 755 TFLOP/s (the 128-register O rescale is
     *     3.2 FMULs per score at kBlockN 80; d192, 1.7 per score, takes it
     *     too, not timed); d128 644 -> 645 (no gain);
     *     d64 430 -> 410 (the vote and branch cost more than 32 FMULs).
     *   every 4th column group's exp2 on the FMA pipe: d64 430 -> 439 (MUFU
     *     bound: 64 ex2 per thread per block against 64 x 128 x 64 x 2 GEMMs);
     *     every 8th: 427. Head dims >= 128 are GEMM bound; not used there. */
    static constexpr bool kLazyRescale = kHeadDim >= 192;
    static constexpr int kPolyExp2Every = kHeadDim == 64 ? 4 : 0;
};

#undef MGPU_ATTN_FWD_IS_HEAD_DIM

} // namespace sm90
} // namespace mgpu
