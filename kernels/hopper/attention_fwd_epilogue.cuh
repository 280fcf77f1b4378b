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
 */
#pragma once

#include <stdint.h>

#include "abi/attention_abi.h"
#include "common/async_copy.cuh"
#include "common/barrier.cuh"
#include "common/numeric.cuh"
#include "common/shared_memory.cuh"
#include "hopper/attention_fwd_tile_scheduler.cuh"

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

template <class Cfg>
__device__ __forceinline__ void attn_fwd_epilogue(const mgpu_attention_fwd_args &a,
                                                  typename Cfg::SharedStorage &smem, const AttnFwdWork &w,
                                                  int consumer, int q_stage, const float (&o)[Cfg::kHeadDim / 2],
                                                  const float (&lse)[2])
{
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

    const int first_row = w.m_block * Cfg::kBlockM + consumer * Cfg::kRowsPerConsumer;
    const int rows = min(Cfg::kRowsPerConsumer, w.seqlen_q - first_row);
    const int64_t batch_term = a.cu_seqlens_q != 0 ? 0 : static_cast<int64_t>(w.batch) * a.o_batch_stride;
    uint8_t *o_base = reinterpret_cast<uint8_t *>(a.o) +
                      (batch_term + static_cast<int64_t>(w.q_offset + first_row) * a.o_seq_stride +
                       static_cast<int64_t>(w.head_q) * a.o_head_stride) *
                          Cfg::kElementBytes;
    for (int idx = thread; idx < rows * kChunksPerRow; idx += Cfg::kWarpgroupThreads) {
        const int r = idx / kChunksPerRow, chunk = idx % kChunksPerRow;
        const int tile_row = consumer * Cfg::kRowsPerConsumer + r;
        const uint4 v = ld_shared_u128(staging + swizzled_offset<Cfg, Cfg::kQBlockBytes>(tile_row, chunk * kChunkElems));
        *reinterpret_cast<uint4 *>(o_base + (static_cast<int64_t>(r) * a.o_seq_stride + chunk * kChunkElems) *
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
            const int row = w.m_block * Cfg::kBlockM + tile_row0 + 8 * h;
            if (row < w.seqlen_q)
                lse_out[row] = lse[h];
        }
    }
}

} // namespace sm90
} // namespace mgpu
