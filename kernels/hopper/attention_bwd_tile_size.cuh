/*
 * Tile sizes of the Hopper attention backward, per head dim (the table of
 * kernels/abi/attention_bwd_abi.h, which the runtime and the preprocess use;
 * the generated units check that both agree).
 *
 * A CTA owns kBlockN keys and walks query blocks of kBlockM = 64 rows. Per
 * consumer thread (240 registers):
 *   split_dim = 0, kBlockN = 128 (each consumer 64 keys x all head-dim columns):
 *     dK + dV  2 x head_dim / 2,  S^T + dP^T  2 x 32,  dQ  <= 32,
 *     16-bit P^T, dS^T  2 x 16            -> head dim 128: 64+64+32+32+32+32
 *   split_dim = 1, kBlockN = 64 (each consumer all 64 keys x 128 head-dim columns):
 *     dK + dV  2 x 64,  S^T + dP^T  2 x 16,  dQ 64 (with the next block's S^T,
 *     16, in flight while dQ is staged in shared memory and leaves)
 * Shared memory: K, V (kBlockN rows), kStages of Q and dO (kBlockM rows), two
 * dS^T (and with split_dim two P^T) buffers; head dims padded to 64-column
 * (128-byte) swizzle blocks; head dim 256 uses the full 227 KiB.
 */
#pragma once

namespace mgpu {
namespace sm90 {

template <int kHeadDim>
struct AttnBwdTile {
    static_assert(kHeadDim == 64 || kHeadDim == 96 || kHeadDim == 128 || kHeadDim == 192 || kHeadDim == 256,
                  "attention backward head dims: 64, 96, 128, 192, 256");
    static constexpr int kBlockM = 64;
    static constexpr int kBlockN = kHeadDim <= 128 ? 128 : 64;
    static constexpr int kStages = 2;
    static constexpr bool kSplitDim = kHeadDim > 128;
    /* Shared dQ buffers of the dQ writer (0: the consumers add dQ, staged in
     * the stage's Q / dO tiles). */
    static constexpr int kDqBuffers = kHeadDim <= 128 ? 2 : 0;
    /* Head dim 64: each consumer holds its 64 rows of K and V as 16-bit A
     * fragments (2 x 16 registers, loaded once per CTA), so that S^T = K Q^T
     * and dP^T = V dO^T read only Q / dO from shared memory (register-A
     * wgmma): half of those products' shared-memory reads. Head dims >= 96
     * have no registers to spare (2 x 24 or more). */
    static constexpr bool kKVFrags = kHeadDim == 64;
    static_assert(!kKVFrags || !kSplitDim, "K / V fragments: the consumer owns whole key rows");
    /* Head dims <= 128: dQ of each query block issued one block later, so
     * that the consumers need not meet at every block and run apart (the
     * deferred-dQ loop of attention_bwd_mainloop.cuh; decision
     * 073-attention-bwd-deferred-dq). Each warp then reads its own lse_log2 /
     * dpsum rows: head dims 64 and 96 from per-warp shared buffers (8 KiB
     * instead of 1), head dim 128 (whose shared memory is full) in registers
     * (kRowsInRegs): each lane loads two values of each row a block ahead,
     * shuffled to the lanes that use them. That loop also loads the rows
     * before dP^T is issued and starts dP^T's accumulator as the block's
     * dpsum values, subtracting the product (dpsum - dP^T), so that dS^T
     * needs no row loads after the wait for dP^T (decision
     * 050-attention-bwd-early-loads). The split head dims keep one barrier
     * between the consumers per block and read the rows where they are used
     * (there the accumulator's initial values serialize the wgmma). */
    static constexpr bool kDeferDq = kHeadDim <= 128;
    static constexpr bool kRowsInRegs = kHeadDim == 128;
    /* Head dim 64: the deferred loop hands each block's staged dQ tile to the
     * writer (async-proxy fence, arrival) after the next block's dP^T is
     * issued, when its stores have completed, rather than right after
     * storing it (the fence then waited for them: the largest stall of the
     * head-dim-64 loop). 3 % faster at head dim 64; at 128, whose 32 KiB
     * tiles the writer takes longer to add, 6-11 % slower (H200). */
    static constexpr bool kDqPublishLate = kHeadDim == 64;
    static_assert(!kKVFrags || kDeferDq, "K / V fragments: the deferred-dQ loop");
    /* > 0: every kPolyExp2Every-th group of 8 query columns takes its P^T
     * exponentials from the FMA pipe (poly_exp2) instead of the MUFU unit.
     * Every 4th at head dims 64 and 128 measured no faster than 0
     * (decision 050). */
    static constexpr int kPolyExp2Every = 0;
    /* Columns of one box of the dq_accum tensor map (kSplitDim: each
     * consumer warp adds its 16 dQ rows as kCols / kDqBoxCols boxes;
     * the ABI's dq_box_cols): 128 at head dim 256 (both consumers' ranges),
     * 64 at 192 (128 and 64 columns). */
    static constexpr int kDqBoxCols = kHeadDim == 256 ? 128 : kHeadDim == 192 ? 64 : 0;
};

} // namespace sm90
} // namespace mgpu
