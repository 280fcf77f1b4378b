/*
 * Blackwell attention forward: the softmax warpgroups and the correction
 * warpgroup (the schedule: attention_fwd_sm100.cuh).
 *
 * One row per thread. Thread t of a warpgroup (warp t / 32 of it) owns query
 * row t of its 128-row Q tile, which is TMEM lane t of that tile's S and O
 * (an M = 128 cta_group::1 MMA writes row i to lane i); tcgen05.ld / st
 * 32x32b let warp w % 4 of a warpgroup reach exactly lanes 32 (w % 4) ..
 * 32 (w % 4) + 31, so every thread reads and writes its own row only and
 * no shuffle is needed for row maxima or sums.
 *
 * Softmax warpgroup q, per key block j (block n = end-1-j):
 *   wait s_full[q]; tcgen05.ld the row's block_n scores (32 columns per
 *   instruction); soft-cap; mask (AttnMask of the Hopper kernel: the same
 *   rules, one row); new running maximum (kept stale unless it grows by more
 *   than 2^8, hopper/attention_fwd_softmax.cuh's kRescaleSlackLog2: the O
 *   rescale is then skipped); the O correction factor -> scale[q][t], one
 *   arrival per warp on scale_ready[q]; exponentials (ex2, base 2, scale
 *   folded into the FFMA); row sum; P as 16-bit pairs stored over the first
 *   block_n / 2 columns of S (tcgen05.st 32x32b); tcgen05.wait::st, fence,
 *   one arrival per warp on p_full[q].
 *   After the last block: the row's sum and maximum -> final_sum / final_max,
 *   arrival on final_ready[q].
 * Correction warpgroup, first, with keys from a cache (seqused_k, paged or
 * not): the rows of the first key block (the last keys) past the sequence
 * hold whatever the cache holds there; their P is 0, but 0 * NaN is NaN, so
 * it waits v_full of that block, zeroes those rows of V (sm90::zero_rows,
 * as the Hopper consumers do) and fences them for the async proxy before
 * its first arrivals on p_full, which the MMA warp waits for before that
 * block's P V.
 * Then per key block j, per tile q:
 *   wait scale_ready[q]; j >= 1: wait o_done[q] (P V of block j-1 has
 *   landed in O_q), and when any row of the warp has a factor != 1, O_q's row
 *   *= factor in tensor memory (ld, multiply, st, 32 columns at a time);
 *   arrival per warp on p_full[q] (the MMA warp needs both P and the rescaled
 *   O before the next P V).
 *   Finally per tile: wait final_ready[q] and the last o_done[q]; O row / sum
 *   -> 16-bit -> four 16-byte stores per 32 columns, rows past seqlen_q
 *   skipped; LSE (natural log, +inf for a row without keys, O = 0 there).
 */
#pragma once

#include <cuda/ptx>
#include <math.h>
#include <stdint.h>

#include "abi/attention_abi.h"
#include "blackwell/tcgen05.cuh"
#include "blackwell/tmem_warp.cuh" /* kTmemLdCols, warp_arrive_after_tmem */
#include "common/async_copy.cuh"
#include "common/numeric.cuh"
#include "hopper/attention_fwd_mainloop.cuh" /* sm90::zero_rows */
#include "hopper/attention_fwd_mask.cuh"
#include "hopper/attention_fwd_softmax.cuh"
#include "hopper/attention_fwd_tile_scheduler.cuh"

namespace mgpu {
namespace sm100 {

template <class Cfg>
__device__ __forceinline__ void attn_fwd_softmax(const mgpu_attention_fwd_args &a, typename Cfg::SharedStorage &smem,
                                                 uint32_t tmem, const sm90::AttnFwdWork &w, int q)
{
    namespace ptx = cuda::ptx;
    const int t = static_cast<int>(threadIdx.x) % 128;
    const int lane = t % 32;
    const int count = w.n_block_end - w.n_block_begin;
    const int row = w.m_block * Cfg::kBlockM + q * Cfg::kTileRows + t;
    const int lo = w.mask.key_begin(row), hi = w.mask.key_end(row);
    const uint32_t s_tmem = tmem_addr(tmem, 32 * (t / 32), Cfg::s_col(q));
    constexpr int kChunks = Cfg::kBlockN / kTmemLdCols;
    constexpr int kKeepChunks = Cfg::kSoftmaxKeepChunks;
    static_assert(kKeepChunks >= 1 && kKeepChunks <= kChunks, "chunks kept in registers");
    float row_max = -INFINITY, row_sum = 0.f;

    for (int j = 0; j < count; ++j) {
        const int key0 = (w.n_block_end - 1 - j) * Cfg::kBlockN;
        mbar_wait(&smem.s_full[q], j & 1);
        ptx::tcgen05_fence_after_thread_sync();
        /* Scores of 32 keys: tcgen05.ld, soft-cap, mask. */
        const bool masked = key0 < lo || key0 + Cfg::kBlockN > hi;
        auto load_scores = [&](int c, float (&v)[kTmemLdCols]) {
            uint32_t r[kTmemLdCols];
            ptx::tcgen05_ld_32x32b(r, s_tmem + c * kTmemLdCols);
            ptx::tcgen05_wait_ld();
#pragma unroll
            for (int i = 0; i < kTmemLdCols; ++i)
                v[i] = __uint_as_float(r[i]);
            if (a.softcap > 0.f)
                sm90::apply_softcap(v, a.softmax_scale / a.softcap, a.softcap / a.softmax_scale);
            if (masked) {
#pragma unroll
                for (int i = 0; i < kTmemLdCols; ++i) {
                    const int key = key0 + c * kTmemLdCols + i;
                    if (key < lo || key >= hi)
                        v[i] = -INFINITY;
                }
            }
        };
        /* Pass 1: the block maximum. The first kKeepChunks chunks stay in
         * registers; the others are read again in pass 2 (a 128-key row in
         * registers would not leave the 128 registers a thread of a
         * 512-thread CTA may have). */
        float kept[kKeepChunks][kTmemLdCols];
        float block_max = -INFINITY;
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
            float v[kTmemLdCols];
            load_scores(c, v);
#pragma unroll
            for (int i = 0; i < kTmemLdCols; ++i) {
                block_max = fmaxf(block_max, v[i]);
                if (c < kKeepChunks)
                    kept[c < kKeepChunks ? c : 0][i] = v[i];
            }
        }
        float new_max = fmaxf(row_max, block_max * a.scale_log2);
        /* -inf + slack stays -inf: the first allowed key always raises it */
        if (!(new_max > row_max + sm90::kRescaleSlackLog2))
            new_max = row_max;
        const float max_used = new_max == -INFINITY ? 0.f : new_max;
        const float correction = new_max == row_max ? 1.f : sm90::fast_exp2(row_max - max_used);
        row_max = new_max;
        smem.scale[q][t] = correction;
        __syncwarp();
        if (lane == 0)
            mbar_arrive(&smem.scale_ready[q]);

        /* Pass 2: P, 32 keys (16 packed columns) at a time: the pairs of keys
         * 32 c .. 32 c + 31 land in columns 16 c .. 16 c + 15, below the
         * columns 32 c' .. of every chunk c' > c still to be read. */
        float sum = 0.f;
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
            float v[kTmemLdCols];
            if (c < kKeepChunks) {
#pragma unroll
                for (int i = 0; i < kTmemLdCols; ++i)
                    v[i] = kept[c < kKeepChunks ? c : 0][i];
            } else {
                load_scores(c, v);
            }
            uint32_t pk[kTmemLdCols / 2];
#pragma unroll
            for (int i = 0; i < kTmemLdCols / 2; ++i) {
                const float p0 = sm90::fast_exp2(fmaf(v[2 * i], a.scale_log2, -max_used));
                const float p1 = sm90::fast_exp2(fmaf(v[2 * i + 1], a.scale_log2, -max_used));
                sum += p0 + p1;
                pk[i] = pack2<typename Cfg::T>(p0, p1);
            }
            ptx::tcgen05_st_32x32b(s_tmem + c * (kTmemLdCols / 2), pk);
        }
        row_sum = row_sum * correction + sum;
        warp_arrive_after_tmem(&smem.p_full[q], lane);
    }
    smem.final_sum[q][t] = row_sum;
    smem.final_max[q][t] = row_max;
    __syncwarp();
    if (lane == 0)
        mbar_arrive(&smem.final_ready[q]);
}

template <class Cfg>
__device__ __forceinline__ void attn_fwd_correction(const mgpu_attention_fwd_args &a,
                                                    typename Cfg::SharedStorage &smem, uint32_t tmem,
                                                    const sm90::AttnFwdWork &w)
{
    namespace ptx = cuda::ptx;
    constexpr int kChunks = Cfg::kHeadDim / kTmemLdCols;
    static_assert(Cfg::kHeadDim % kTmemLdCols == 0, "O is read 32 columns at a time");
    const int t = static_cast<int>(threadIdx.x) % 128;
    const int lane = t % 32;
    const int count = w.n_block_end - w.n_block_begin;
    const uint32_t lanes = tmem_addr(tmem, 32 * (t / 32), 0);

    if (a.seqused_k != 0 && count > 0) {
        const int valid = w.seqlen_k - (w.n_block_end - 1) * Cfg::kBlockN;
        if (valid < Cfg::kBlockN) { /* uniform over the warpgroup */
            mbar_wait(&smem.v_full[0], 0); /* block 0 is stage 0, phase 0 */
            sm90::zero_rows<Cfg>(smem.v[0], valid, t);
            fence_smem_to_async();
        }
    }
    for (int j = 0; j < count; ++j) {
#pragma unroll 1
        for (int q = 0; q < Cfg::kQTiles; ++q) {
            mbar_wait(&smem.scale_ready[q], j & 1);
            const float factor = smem.scale[q][t];
            if (j > 0) {
                mbar_wait(&smem.o_done[q], (j - 1) & 1);
                ptx::tcgen05_fence_after_thread_sync();
                if (__any_sync(0xffffffffu, factor != 1.f)) {
#pragma unroll 1
                    for (int c = 0; c < kChunks; ++c) {
                        const uint32_t addr = lanes + Cfg::o_col(q) + c * kTmemLdCols;
                        uint32_t r[kTmemLdCols];
                        ptx::tcgen05_ld_32x32b(r, addr);
                        ptx::tcgen05_wait_ld();
#pragma unroll
                        for (int i = 0; i < kTmemLdCols; ++i)
                            r[i] = __float_as_uint(__uint_as_float(r[i]) * factor);
                        ptx::tcgen05_st_32x32b(addr, r);
                    }
                }
            }
            warp_arrive_after_tmem(&smem.p_full[q], lane);
        }
    }

    constexpr float kLn2 = 0.69314718055994530942f;
    const int64_t batch_term = a.cu_seqlens_q != 0 ? 0 : static_cast<int64_t>(w.batch) * a.o_batch_stride;
#pragma unroll 1
    for (int q = 0; q < Cfg::kQTiles; ++q) {
        mbar_wait(&smem.final_ready[q], 0);
        const float sum = smem.final_sum[q][t];
        const float mx = smem.final_max[q][t];
        if (count > 0) {
            mbar_wait(&smem.o_done[q], (count - 1) & 1);
            ptx::tcgen05_fence_after_thread_sync();
        }
        const bool empty = !(sum > 0.f);
        const float inv = empty ? 0.f : 1.f / sum;
        const int row = w.m_block * Cfg::kBlockM + q * Cfg::kTileRows + t;
        const bool valid = row < w.seqlen_q;
        uint4 *o_row = reinterpret_cast<uint4 *>(
            reinterpret_cast<uint8_t *>(a.o) + (batch_term + static_cast<int64_t>(w.q_offset + row) * a.o_seq_stride +
                                                static_cast<int64_t>(w.head_q) * a.o_head_stride) *
                                                   Cfg::kElementBytes);
#pragma unroll 1
        for (int c = 0; c < kChunks; ++c) {
            uint32_t r[kTmemLdCols];
            if (count > 0) { /* uniform: the whole warp loads (.sync.aligned) */
                ptx::tcgen05_ld_32x32b(r, lanes + Cfg::o_col(q) + c * kTmemLdCols);
                ptx::tcgen05_wait_ld();
            } else {
#pragma unroll
                for (int i = 0; i < kTmemLdCols; ++i)
                    r[i] = 0u;
            }
            uint32_t packed[kTmemLdCols / 2];
#pragma unroll
            for (int i = 0; i < kTmemLdCols / 2; ++i)
                packed[i] = pack2<typename Cfg::T>(__uint_as_float(r[2 * i]) * inv, __uint_as_float(r[2 * i + 1]) * inv);
            if (valid) {
#pragma unroll
                for (int v = 0; v < kTmemLdCols * Cfg::kElementBytes / 16; ++v) /* 4 words = 16 bytes */
                    o_row[c * (kTmemLdCols * Cfg::kElementBytes / 16) + v] =
                        make_uint4(packed[4 * v], packed[4 * v + 1], packed[4 * v + 2], packed[4 * v + 3]);
            }
        }
        if (a.lse != 0 && valid) {
            float *lse_out = reinterpret_cast<float *>(a.lse) + static_cast<int64_t>(w.batch) * a.lse_batch_stride +
                             static_cast<int64_t>(w.head_q) * a.lse_head_stride + w.q_offset;
            lse_out[row] = empty ? INFINITY : (mx + __log2f(sum)) * kLn2;
        }
    }
}

} // namespace sm100
} // namespace mgpu
