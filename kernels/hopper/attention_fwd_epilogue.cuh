/*
 * Hopper attention forward: the epilogue of one consumer warpgroup.
 *
 * O arrives normalised, in the wgmma accumulator layout (fp32). Each thread
 * converts its pairs to 16 bits and writes them into the warpgroup's own 64
 * rows of Q's shared memory (Q is dead: this warpgroup's last Q K^T has
 * completed, and the other warpgroup reads only its own rows), using the same
 * 128-byte swizzle as TMA so the 4-byte writes of a warp hit distinct banks.
 * After a named barrier over the warpgroup, the 128 threads copy the rows out
 * with 16-byte vector stores, skipping rows past seqlen_q (this handles the
 * ragged last tile and varlen without a TMA store map per sequence).
 * LSE is written from registers by the first thread of each quad. Finally each
 * warp arrives on q_empty: its reads of the staged O are done, and the producer
 * may load the next tile's Q over it.
 *
 * Prefill (no inference feature) at head dims 64 and 128, where 128 threads
 * cover whole rows per pass (AttnFwdPlainRows): O is staged with stmatrix,
 * each thread then reads all its 16-byte chunks (one per pass, addresses a
 * constant apart), releases the buffer (fence, q_empty) and only then issues
 * its global stores, so neither the release nor the loads wait behind the
 * stores, and no chunk needs its own index arithmetic
 * (docs/decisions/049-attention-forward-short-sequences.md).
 *
 * Split calls write fp32 partials instead (attn_fwd_epilogue_partial); where
 * the runtime gives split counters, the last split of a work tile then merges
 * the tile's splits in this kernel (attn_fwd_merge_splits), with the combine
 * kernel's arithmetic (hopper/attention_fwd_combine.cuh, merge_row).
 */
#pragma once

#include <stdint.h>

#include "abi/attention_abi.h"
#include "common/async_copy.cuh"
#include "common/barrier.cuh"
#include "common/numeric.cuh"
#include "common/shared_memory.cuh"
#include "hopper/attention_fwd_combine.cuh"
#include "hopper/attention_fwd_tile_scheduler.cuh"
#include "hopper/attention_fwd_timeline.cuh"

namespace mgpu {
namespace sm90 {

/* Byte offset of (row, col) in a tile of 64-column, 128-byte-swizzled blocks. */
template <class Cfg, int kBlockBytes>
__device__ __forceinline__ uint32_t swizzled_offset(int row, int col)
{
    constexpr int kChunkElems = 8; /* 16 bytes */
    constexpr int kAtomRows = 8;
    const int block = col / Cfg::kSwizzleElems, within = col % Cfg::kSwizzleElems;
    const int chunk = (within / kChunkElems) ^ (row % kAtomRows);
    return block * kBlockBytes + row * Cfg::kSwizzleBytes + chunk * 16 + (within % kChunkElems) * Cfg::kElementBytes;
}

/* The plain-rows store of attn_fwd_epilogue: tile row r is query q_row0 + r
 * of head head_q (no GQA packing), and 128 threads cover whole rows at a
 * time. Thread t copies chunk t % kChunks of rows t / kChunks + kRows p
 * (p < kPasses): every pass the same swizzled chunk (kRows is a multiple of
 * the swizzle's 8 rows), so each address is the first plus a constant. */
template <class Cfg>
struct AttnFwdPlainRows {
    static constexpr int kChunks = Cfg::kHeadDim / 8; /* 16-byte chunks per row */
    static constexpr bool kFits =
        Cfg::kHeadDim <= 128 && Cfg::kWarpgroupThreads % kChunks == 0 && (Cfg::kWarpgroupThreads / kChunks) % 8 == 0;
    static constexpr int kRows = kFits ? Cfg::kWarpgroupThreads / kChunks : 1; /* rows per pass */
    static constexpr int kPasses = Cfg::kRowsPerConsumer / kRows;
};

/* kPlainRows: the caller knows that the call uses none of the inference
 * features (one query head per tile row, unsplit); where the head dim lets
 * 128 threads cover whole rows (AttnFwdPlainRows::kFits: 64, 128) O is
 * staged with stmatrix and copied out with every shared-memory read issued
 * before the buffer is released and the first global store, so neither the
 * release nor the reads wait for the stores. */
template <class Cfg, bool kPlainRows = false>
__device__ __forceinline__ void attn_fwd_epilogue(const mgpu_attention_fwd_args &a,
                                                  typename Cfg::SharedStorage &smem, const AttnFwdWork &w,
                                                  int consumer, int q_stage, const float (&o)[Cfg::kHeadDim / 2],
                                                  const float (&lse)[2])
{
    if constexpr (kPlainRows && AttnFwdPlainRows<Cfg>::kFits) {
        using Plain = AttnFwdPlainRows<Cfg>;
        int thread = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
        uint32_t staging = smem_u32(smem.q[q_stage]);
        asm volatile("" : "+r"(thread), "+r"(staging));
        const int warp = thread / 32, lane = thread % 32;
        /* Stage: one stmatrix.x4 per 16 columns; matrix m of lane 8 m + r is
         * rows 8 (m % 2) + r of the warp's 16, columns 8 (2 q + m / 2) + [0, 8):
         * one 16-byte chunk of the swizzled row. */
        {
            const int mat = lane / 8, r = lane % 8;
            const int row = consumer * Cfg::kRowsPerConsumer + 16 * warp + 8 * (mat % 2) + r;
#pragma unroll
            for (int q = 0; q < Cfg::kHeadDim / 16; ++q) {
                uint32_t v[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int j = 2 * q + i / 2, h = i % 2;
                    v[i] = pack2<typename Cfg::T>(o[4 * j + 2 * h], o[4 * j + 2 * h + 1]);
                }
                stmatrix_x4(staging + swizzled_offset<Cfg, Cfg::kQBlockBytes>(row, 8 * (2 * q + mat / 2)), v[0], v[1],
                            v[2], v[3]);
            }
        }
        named_barrier_sync(Cfg::kBarrierEpilogueFirst + consumer, Cfg::kWarpgroupThreads);

        const int chunk = thread % Plain::kChunks;
        const int row0 = consumer * Cfg::kRowsPerConsumer + thread / Plain::kChunks; /* tile row of pass 0 */
        const uint32_t from = staging + swizzled_offset<Cfg, Cfg::kQBlockBytes>(row0, 8 * chunk);
        uint4 v[Plain::kPasses];
#pragma unroll
        for (int p = 0; p < Plain::kPasses; ++p)
            v[p] = ld_shared_u128(from + p * Plain::kRows * Cfg::kSwizzleBytes);
        /* Generic-proxy writes and reads of the buffer before the next TMA write. */
        fence_smem_to_async();
        __syncwarp();
        if (lane == 0)
            mbar_arrive(&smem.q_empty[q_stage]);

        const int64_t batch_term = a.cu_seqlens_q != 0 ? 0 : static_cast<int64_t>(w.batch) * a.o_batch_stride;
        const int query0 = w.q_row0 + row0;
        uint8_t *to = reinterpret_cast<uint8_t *>(a.o) +
                      (batch_term + static_cast<int64_t>(w.q_offset + query0) * a.o_seq_stride +
                       static_cast<int64_t>(w.head_q) * a.o_head_stride + chunk * 8) *
                          Cfg::kElementBytes;
        const int64_t pass_bytes = static_cast<int64_t>(Plain::kRows) * a.o_seq_stride * Cfg::kElementBytes;
#pragma unroll
        for (int p = 0; p < Plain::kPasses; ++p)
            if (query0 + p * Plain::kRows < w.seqlen_q)
                *reinterpret_cast<uint4 *>(to + p * pass_bytes) = v[p];

        if (a.lse != 0 && lane % 4 == 0) {
            float *lse_out = reinterpret_cast<float *>(a.lse) + static_cast<int64_t>(w.batch) * a.lse_batch_stride +
                             static_cast<int64_t>(w.head_q) * a.lse_head_stride + w.q_offset;
            const int tile_row0 = consumer * Cfg::kRowsPerConsumer + warp * 16 + lane / 4;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int query = w.q_row0 + tile_row0 + 8 * h;
                if (query < w.seqlen_q)
                    lse_out[query] = lse[h];
            }
        }
        return;
    }

    constexpr int kRowsPerWarp = 16;
    constexpr int kChunkElems = 8;
    constexpr int kChunksPerRow = Cfg::kHeadDim / kChunkElems;
    /* Opaque per call: keeps the compiler from hoisting the per-thread staging
     * addresses out of the persistent tile loop, where they would pin registers
     * that the main loop needs. */
    int thread = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    uint32_t staging = smem_u32(smem.q[q_stage]);
    asm volatile("" : "+r"(thread), "+r"(staging));
    const int warp = thread / 32, lane = thread % 32;
    const int tile_row0 = consumer * Cfg::kRowsPerConsumer + warp * kRowsPerWarp + lane / 4;
#pragma unroll
    for (int j = 0; j < Cfg::kHeadDim / 8; ++j) {
        const int col = 8 * j + 2 * (lane % 4);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = tile_row0 + 8 * h;
            const uint32_t packed = pack2<typename Cfg::T>(o[4 * j + 2 * h], o[4 * j + 2 * h + 1]);
            st_shared_u32(staging + swizzled_offset<Cfg, Cfg::kQBlockBytes>(row, col), packed);
        }
    }
    named_barrier_sync(Cfg::kBarrierEpilogueFirst + consumer, Cfg::kWarpgroupThreads);

    /* Tile rows of this warpgroup that hold queries (packed tiles may end in
     * padding rows); each row's query and head (abi/attention_abi.h). */
    const int rows = max(0, min(Cfg::kRowsPerConsumer, w.tile_rows - consumer * Cfg::kRowsPerConsumer));
    const int64_t batch_term = a.cu_seqlens_q != 0 ? 0 : static_cast<int64_t>(w.batch) * a.o_batch_stride;
    uint8_t *o_base = reinterpret_cast<uint8_t *>(a.o) +
                      (batch_term + static_cast<int64_t>(w.q_offset) * a.o_seq_stride +
                       static_cast<int64_t>(w.head_q) * a.o_head_stride) *
                          Cfg::kElementBytes;
    for (int idx = thread; idx < rows * kChunksPerRow; idx += Cfg::kWarpgroupThreads) {
        const int r = idx / kChunksPerRow, chunk = idx % kChunksPerRow;
        const int tile_row = consumer * Cfg::kRowsPerConsumer + r;
        const int query = w.q_row0 + tile_row / w.row_div, head = tile_row % w.row_div;
        if (query >= w.seqlen_q)
            continue;
        const uint4 v = ld_shared_u128(staging + swizzled_offset<Cfg, Cfg::kQBlockBytes>(tile_row, chunk * kChunkElems));
        *reinterpret_cast<uint4 *>(o_base + (static_cast<int64_t>(query) * a.o_seq_stride +
                                             static_cast<int64_t>(head) * a.o_head_stride + chunk * kChunkElems) *
                                                Cfg::kElementBytes) = v;
    }
    /* Generic-proxy writes and reads of the buffer before the next TMA write. */
    fence_smem_to_async();
    __syncwarp();
    if (lane == 0)
        mbar_arrive(&smem.q_empty[q_stage]);

    if (a.lse != 0 && lane % 4 == 0) {
        float *lse_out = reinterpret_cast<float *>(a.lse) + static_cast<int64_t>(w.batch) * a.lse_batch_stride +
                         static_cast<int64_t>(w.head_q) * a.lse_head_stride + w.q_offset;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int tile_row = tile_row0 + 8 * h;
            const int query = w.q_row0 + tile_row / w.row_div;
            if (tile_row < w.tile_rows && query < w.seqlen_q)
                lse_out[static_cast<int64_t>(tile_row % w.row_div) * a.lse_head_stride + query] = lse[h];
        }
    }
}

/* The epilogue of one split (num_splits > 1): normalised O in fp32 and the
 * LSE (-infinity for rows without keys) straight from registers into the
 * partial buffers (abi/attention_abi.h, "Split keys"); the Q buffer is
 * released as in attn_fwd_epilogue. */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_epilogue_partial(const mgpu_attention_fwd_args &a,
                                                          typename Cfg::SharedStorage &smem, const AttnFwdWork &w,
                                                          int consumer, int q_stage,
                                                          const float (&o)[Cfg::kHeadDim / 2], const float (&lse)[2])
{
    constexpr int kRowsPerWarp = 16;
    int thread = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    asm volatile("" : "+r"(thread));
    const int warp = thread / 32, lane = thread % 32;
    __syncwarp();
    if (lane == 0)
        mbar_arrive(&smem.q_empty[q_stage]);
    const int tile_row0 = consumer * Cfg::kRowsPerConsumer + warp * kRowsPerWarp + lane / 4;
    const int64_t first = static_cast<int64_t>(w.split) * a.partial_rows +
                          static_cast<int64_t>(w.batch) * a.lse_batch_stride +
                          static_cast<int64_t>(w.head_q) * a.lse_head_stride + w.q_offset;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int tile_row = tile_row0 + 8 * h;
        const int query = w.q_row0 + tile_row / w.row_div;
        if (tile_row >= w.tile_rows || query >= w.seqlen_q)
            continue;
        const int64_t row = first + static_cast<int64_t>(tile_row % w.row_div) * a.lse_head_stride + query;
        float *o_row = reinterpret_cast<float *>(a.o_partial) + row * Cfg::kHeadDim + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < Cfg::kHeadDim / 8; ++j)
            *reinterpret_cast<float2 *>(o_row + 8 * j) = make_float2(o[4 * j + 2 * h], o[4 * j + 2 * h + 1]);
        if (lane % 4 == 0)
            reinterpret_cast<float *>(a.lse_partial)[row] = lse[h] == INFINITY ? -INFINITY : lse[h];
    }
}

/* After attn_fwd_epilogue_partial of every consumer warpgroup (all their
 * threads call this: 256 (two consumer warpgroups; the wide entry's three
 * never merge), or 128 in the decode entry's 64-row variant, whose
 * merge then runs 4 warps instead of the combine kernel's 8; the runtime
 * merges in the kernel only where a row's warps fit them), where
 * a.split_counters != 0: counts this split of work
 * tile `work_tile` in and, in the last of the tile's splits to arrive, merges
 * the tile's rows from every split's partials into O and LSE, as the combine
 * kernel does (merge_row: the same sums in the same order, so the same bits
 * whichever split arrives last). Arrival: the partial stores, a barrier of
 * the consumers, then one thread's atomic with release and acquire semantics
 * at GPU scope; the last arriver resets the counter to 0 (every other split
 * of the tile has counted itself in) and its loads bypass L1. The merge's
 * shared memory is the first K stage: one tile per CTA (the runtime's split
 * launches), so no load of K or V is pending or to come. Inlined: out of line
 * (__noinline__, the arguments read through a generic pointer) the merged
 * calls measured about 0.8 us slower (H100, decision 027). */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_merge_splits(const mgpu_attention_fwd_args &a,
                                                      typename Cfg::SharedStorage &smem, const AttnFwdWork &w,
                                                      int work_tile)
{
    constexpr int kThreads = Cfg::kConsumerWarpgroups * Cfg::kWarpgroupThreads;
    /* (The wide entry's three consumer warpgroups compile no merge: prefill
     * calls only.) */
    static_assert(kThreads == attn_fwd_combine::kThreads || kThreads == attn_fwd_combine::kThreads / 2,
                  "the consumers merge as one combine CTA or half of one");
    static_assert(sizeof(attn_fwd_combine::MergeSmem) <= Cfg::kKVTileBytes, "the merge fits a K stage");
    constexpr int kPasses = Cfg::kHeadDim > attn_fwd_combine::kColsPerPass ? 2 : 1;
    const int thread = static_cast<int>(threadIdx.x) - Cfg::kWarpgroupThreads;
    const auto sync = [] { named_barrier_sync(Cfg::kBarrierMerge, kThreads); };

    sync(); /* every consumer thread's partial stores are done */
    bool last = false;
    if (thread == 0) {
        int *counter = reinterpret_cast<int *>(a.split_counters) + work_tile;
        int before;
        asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(before) : "l"(counter) : "memory");
        last = before == a.num_splits - 1;
        if (last)
            asm volatile("st.relaxed.gpu.global.s32 [%0], %1;\n" ::"l"(counter), "r"(0) : "memory");
    }
    const bool merge = named_barrier_sync_or(Cfg::kBarrierMerge, kThreads, last);
    MGPU_ATTN_FWD_STAMP(a, kTlCounted, thread == 0);
    if (!merge)
        return;

    /* The tile's rows that hold queries: a prefix (rows are query-major). */
    const int rows = min(w.tile_rows, (w.seqlen_q - w.q_row0) * w.row_div);
    const int warps_per_row = mgpu_attention_fwd_merge_warps(a.num_splits, a.merge_splits_per_warp);
    /* At least 1: the planner merges in the kernel only where a row's merge
     * warps fit this entry's warps (src/attention/attention_plan.c). */
    const int rows_per_pass = kThreads / 32 / warps_per_row;
    const int warp = thread / 32, lane = thread % 32;
    const int64_t first = static_cast<int64_t>(w.batch) * a.lse_batch_stride +
                          static_cast<int64_t>(w.head_q) * a.lse_head_stride + w.q_offset + w.q_row0;
    auto &sm = *reinterpret_cast<attn_fwd_combine::MergeSmem *>(smem.k[0]);
    for (int r0 = 0; r0 < rows; r0 += rows_per_pass) {
        const int r = r0 + warp / warps_per_row;
        const bool live = r < rows;
        const int rr = live ? r : 0;
        const int64_t row = first + static_cast<int64_t>(rr % w.row_div) * a.lse_head_stride + rr / w.row_div;
        attn_fwd_combine::merge_row<typename Cfg::T, kPasses>(a, row, live, warp, lane, sm, sync,
                                                              attn_fwd_combine::GlobalPartials<true>(a, row, live));
        /* Before the next pass writes them again: the row's first warps have
         * read the others' sums, every lane its warp's weights. */
        if (r0 + rows_per_pass < rows) {
            if (warps_per_row > 1)
                sync();
            else
                __syncwarp();
        }
    }
    MGPU_ATTN_FWD_STAMP(a, kTlMerged, thread == 0);
}

} // namespace sm90
} // namespace mgpu
