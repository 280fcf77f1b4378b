/*
 * Blackwell attention forward: the TMA warp and the MMA warp (one thread of
 * each). The schedule and the barriers are described in attention_fwd_sm100.cuh.
 *
 * TMA: Q once (q_full), then for i = 0 .. count-1 over the key blocks
 * n = end-1-i (the masked diagonal first, as on Hopper), stage i % kStages:
 * wait k_empty, K[n] on k_full; wait v_empty, V[n] on v_full.
 * Paged K/V (block_table != 0): the same loop run by the whole TMA warp,
 * the Hopper producer's (sm90::produce_kv_paged): a key block is
 * kBlockN / page_box_rows boxes of the rank-4 page maps ({head_dim,
 * page_size, heads_kv, num_pages}, abi/attention_abi.h, "Paged K/V"), lane
 * b looks up box b's page in the block table one key block ahead, and lane
 * 0 issues every box.
 *
 * MMA, for block i and each Q tile q in turn:
 *   i >= 1: wait p_full[q] (P_q(i-1) stored over S_q and O_q rescaled);
 *           O_q += P_q V(i-1) from tensor memory (the [a-tmem] form),
 *           commit -> o_done[q]; then wait o_done[q] itself: the next
 *           S_q = Q_q K(i)^T overwrites the columns P_q(i-1) is read from,
 *           and the ISA orders only tcgen05.mma pairs on the same
 *           accumulator, so this write-after-read is not implied.
 *   S_q = Q_q K(i)^T, commit -> s_full[q].
 * Then commit -> v_empty(i-1) and k_empty(i). After the last block: the last
 * P V of each tile, committed to o_done[q]. While softmax q works on S_q(i),
 * the tensor cores run the other tile's P V and Q K^T (FA4's two-tile
 * ping-pong); with one Q tile (head dim 256) they idle during the softmax.
 */
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <stdint.h>

#include "abi/attention_abi.h"
#include "blackwell/tcgen05.cuh"
#include "common/async_copy.cuh"
#include "hopper/attention_fwd_mainloop.cuh" /* sm90::produce_kv_paged */
#include "hopper/attention_fwd_tile_scheduler.cuh"

namespace mgpu {
namespace sm100 {

template <class Cfg>
__device__ __forceinline__ void attn_load_tile(uint8_t *dst, const CUtensorMap *map, uint64_t *bar, int row, int head,
                                               int tma_batch, int block_bytes)
{
#pragma unroll
    for (int d = 0; d < Cfg::kDimBlocks; ++d)
        tma_load_4d(dst + d * block_bytes, map, bar, d * Cfg::kSwizzleElems, row, head, tma_batch);
}

/* The tensor maps' descriptors into the cache, and Q on q_full (one thread). */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_tma_q(const mgpu_attention_fwd_params &p, typename Cfg::SharedStorage &smem,
                                               const sm90::AttnFwdWork &w)
{
    tma_prefetch_map(&p.tmap_q);
    tma_prefetch_map(&p.tmap_k);
    tma_prefetch_map(&p.tmap_v);
    mbar_arrive_expect_tx(&smem.q_full, Cfg::kQTileBytes);
    attn_load_tile<Cfg>(smem.q, &p.tmap_q, &smem.q_full, w.q_offset + w.m_block * Cfg::kBlockM, w.head_q,
                        w.tma_batch, Cfg::kQBlockBytes);
}

/* Contiguous K/V: one thread. */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_tma(const mgpu_attention_fwd_params &p, typename Cfg::SharedStorage &smem,
                                             const sm90::AttnFwdWork &w)
{
    const int count = w.n_block_end - w.n_block_begin;
    if (count <= 0)
        return;
    attn_fwd_tma_q<Cfg>(p, smem, w);
    for (int i = 0; i < count; ++i) {
        const int n = w.n_block_end - 1 - i;
        const int stage = i % Cfg::kStages;
        const uint32_t phase = (i / Cfg::kStages) & 1;
        const int row = w.k_offset + n * Cfg::kBlockN;
        mbar_wait(&smem.k_empty[stage], phase ^ 1);
        mbar_arrive_expect_tx(&smem.k_full[stage], Cfg::kKVTileBytes);
        attn_load_tile<Cfg>(smem.k[stage], &p.tmap_k, &smem.k_full[stage], row, w.head_kv, w.tma_batch,
                            Cfg::kKVBlockBytes);
        mbar_wait(&smem.v_empty[stage], phase ^ 1);
        mbar_arrive_expect_tx(&smem.v_full[stage], Cfg::kKVTileBytes);
        attn_load_tile<Cfg>(smem.v[stage], &p.tmap_v, &smem.v_full[stage], row, w.head_kv, w.tma_batch,
                            Cfg::kKVBlockBytes);
    }
}

/* Paged K/V: the whole TMA warp runs the Hopper producer's paged loop
 * (sm90::produce_kv_paged: lane b looks up box b of a key block, one block
 * ahead; lane 0 issues the boxes and the arrivals). That loop takes its
 * stage and phase from a key-block count over the CTA's tiles, which here
 * starts at 0 for the CTA's one tile: block i in stage i % kStages, the
 * schedule above; its barriers and buffers are this kernel's of the same
 * names (k / v, k_full / k_empty, v_full / v_empty). */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_tma_paged(const mgpu_attention_fwd_params &p,
                                                   typename Cfg::SharedStorage &smem, const sm90::AttnFwdWork &w)
{
    if (w.n_block_end - w.n_block_begin <= 0)
        return;
    const bool leader = threadIdx.x % 32 == 0;
    if (leader)
        attn_fwd_tma_q<Cfg>(p, smem, w);
    sm90::produce_kv_paged<Cfg>(p, smem, w, 0, leader);
}

/* S_q = Q_q K^T into tile q's S columns: kQkSteps MMAs of K = 16, both
 * operands K-major with 128-byte swizzle (the start address advances 32 bytes
 * per step inside a 64-element dim block, one dim block per 4 steps). */
template <class Cfg>
__device__ __forceinline__ void attn_issue_qk(uint32_t tmem, uint32_t q_tile, uint32_t k_tile, int q)
{
    namespace ptx = cuda::ptx;
    constexpr int kStepsPerBlock = Cfg::kSwizzleElems / Cfg::kMmaK;
    constexpr uint32_t kStepBytes = Cfg::kMmaK * Cfg::kElementBytes;
    const uint32_t q_rows = q_tile + q * Cfg::kQSubTileBytes;
#pragma unroll
    for (int kk = 0; kk < Cfg::kQkSteps; ++kk) {
        const uint32_t off_q = (kk / kStepsPerBlock) * Cfg::kQBlockBytes + (kk % kStepsPerBlock) * kStepBytes;
        const uint32_t off_k = (kk / kStepsPerBlock) * Cfg::kKVBlockBytes + (kk % kStepsPerBlock) * kStepBytes;
        ptx::tcgen05_mma(ptx::kind_f16, ptx::cta_group_1, tmem + Cfg::s_col(q), make_smem_desc_kmajor_sw128(q_rows + off_q),
                         make_smem_desc_kmajor_sw128(k_tile + off_k), Cfg::kIdescQK, kk > 0);
    }
}

/* O_q += P_q V: A = P from tensor memory (16-bit, packed two per column, 8
 * columns per K = 16 step), B = V MN-major (16 key rows = 2048 bytes per step;
 * LBO = one dim block of the tile). */
template <class Cfg>
__device__ __forceinline__ void attn_issue_pv(uint32_t tmem, uint32_t v_tile, int q, bool accumulate)
{
    namespace ptx = cuda::ptx;
    constexpr uint32_t kStepBytes = Cfg::kMmaK * Cfg::kSwizzleBytes;
    constexpr uint32_t kPColsPerStep = Cfg::kMmaK / 2;
#pragma unroll
    for (int kk = 0; kk < Cfg::kPvSteps; ++kk)
        ptx::tcgen05_mma_tmem_a(ptx::kind_f16, ptx::cta_group_1, tmem + Cfg::o_col(q),
                                tmem + Cfg::s_col(q) + kk * kPColsPerStep,
                                make_smem_desc_mnmajor_sw128(v_tile + kk * kStepBytes, Cfg::kKVBlockBytes),
                                Cfg::kIdescPV, accumulate || kk > 0);
}

template <class Cfg>
__device__ __forceinline__ void attn_fwd_mma(typename Cfg::SharedStorage &smem, uint32_t tmem,
                                             const sm90::AttnFwdWork &w)
{
    namespace ptx = cuda::ptx;
    const int count = w.n_block_end - w.n_block_begin;
    if (count <= 0)
        return;
    const uint32_t q_tile = smem_u32(smem.q);
    auto pv = [&](int q, int i) {
        /* P_q(i) is in tensor memory and O_q is rescaled for it */
        mbar_wait(&smem.p_full[q], i & 1);
        if (q == 0)
            mbar_wait(&smem.v_full[i % Cfg::kStages], (i / Cfg::kStages) & 1);
        ptx::tcgen05_fence_after_thread_sync();
        attn_issue_pv<Cfg>(tmem, smem_u32(smem.v[i % Cfg::kStages]), q, i > 0);
        ptx::tcgen05_commit(ptx::cta_group_1, &smem.o_done[q]);
    };

    mbar_wait(&smem.q_full, 0);
    for (int i = 0; i < count; ++i) {
        const int stage = i % Cfg::kStages;
        mbar_wait(&smem.k_full[stage], (i / Cfg::kStages) & 1);
        ptx::tcgen05_fence_after_thread_sync();
#pragma unroll
        for (int q = 0; q < Cfg::kQTiles; ++q) {
            if (i > 0) {
                pv(q, i - 1);
                /* P_q(i-1) fully read before S_q(i) overwrites it */
                mbar_wait(&smem.o_done[q], (i - 1) & 1);
                ptx::tcgen05_fence_after_thread_sync();
            }
            attn_issue_qk<Cfg>(tmem, q_tile, smem_u32(smem.k[stage]), q);
            ptx::tcgen05_commit(ptx::cta_group_1, &smem.s_full[q]);
        }
        if (i > 0)
            ptx::tcgen05_commit(ptx::cta_group_1, &smem.v_empty[(i - 1) % Cfg::kStages]);
        ptx::tcgen05_commit(ptx::cta_group_1, &smem.k_empty[stage]);
    }
#pragma unroll
    for (int q = 0; q < Cfg::kQTiles; ++q)
        pv(q, count - 1);
}

} // namespace sm100
} // namespace mgpu
