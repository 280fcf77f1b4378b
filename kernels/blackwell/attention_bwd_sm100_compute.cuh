/*
 * Blackwell attention backward: the compute warpgroup and the dQ warpgroup
 * (the schedule: attention_bwd_sm100.cuh).
 *
 * Compute warpgroup, one key per thread. Thread t owns key n * 128 + t, which
 * is TMEM lane t of S^T, dP^T, dV, dK (an M = 128 cta_group::1 MMA writes row
 * i to lane i); tcgen05.ld / st 32x32b let warp w of the warpgroup reach
 * exactly lanes 32 w .. 32 w + 31. Per query block i (block m, stage s):
 *   wait q_full[s] (lse rows), s_full; tcgen05.ld the 64 scores of its row;
 *   soft-cap; P^T = exp2(S^T scale_log2 - lse_log2), 0 where masked (the
 *   Hopper kernel's tests, the same AttnMask); P^T as 16-bit pairs over the
 *   first 32 columns of S^T (tcgen05.st), one arrival per warp on p_full;
 *   keeps P^T times the soft-cap derivative (64 registers);
 *   wait do_full[s] (dpsum rows), dp_full; tcgen05.ld the 64 dP^T values;
 *   dS^T = P^T (dP^T - dpsum) [1 - tanh^2] as 16-bit pairs over the first 32
 *   columns of dP^T (the A operand of dK += dS^T Q) and as the thread's
 *   128-byte row of ds[i % 2] (128-byte swizzle: 16-byte chunk c at c ^ (t % 8),
 *   the B operand of dQ^T = K^T dS^T); fence.proxy.async, one arrival per
 *   warp on ds_full.
 *   After the last block: wait kv_done; dV and dK rows (the CTA's head-dim
 *   slice: columns col0 .. col0 + cols - 1) out of tensor memory, 32 columns
 *   at a time: 16-bit stores (dK times softmax_scale) clipped to seqlen_k
 *   when group_size == 1, else fp32 vector reductions into dk_accum /
 *   dv_accum (deterministic: the query-head turn of dkv_semaphore, shared by
 *   the slices). A key block without query blocks writes zeros (and still
 *   takes its turn).
 *
 * dQ warpgroup, one head-dim column per thread (dQ^T lane t: column col0 +
 * t): per query block, wait dq_full, tcgen05.ld its 64 values (warps whose
 * 32 columns are past the slice skip the load), arrive on dq_empty (the MMA
 * may write dQ^T again), then add them into dq_accum tile m at row q, column
 * col0 + t (element mgpu_attention_bwd_dq_offset(tile, head_dim, q, col0 + t)
 * of the tile: the Hopper dQ writer's fragment order for head dims <= 128,
 * row-major for 192 / 256, which the shared postprocess reads): one
 * red.global.add.f32 per value. Deterministic: thread 0 of the warpgroup
 * waits for the key-block turn of dq_semaphore (the Hopper kernel's turn;
 * counted per slice for 192 / 256), the warpgroup adds, and thread 0 hands
 * the turn on (release).
 */
#pragma once

#include <cuda/ptx>
#include <math.h>
#include <stdint.h>

#include "abi/attention_bwd_abi.h"
#include "blackwell/tcgen05.cuh"
#include "blackwell/tmem_warp.cuh" /* kTmemLdCols, warp_arrive_after_tmem */
#include "common/async_copy.cuh"
#include "common/barrier.cuh"
#include "common/numeric.cuh"
#include "hopper/attention_fwd_mask.cuh"
#include "hopper/attention_fwd_softmax.cuh" /* fast_exp2, fast_tanh */

namespace mgpu {
namespace sm100 {

__device__ __forceinline__ void red_add_f32(float *addr, float v)
{
    asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;\n" ::"l"(addr), "f"(v) : "memory");
}

__device__ __forceinline__ void red_add_v4_f32(float *addr, float a, float b, float c, float d)
{
    asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(addr), "f"(a), "f"(b), "f"(c),
                 "f"(d)
                 : "memory");
}

/* Deterministic turns inside one warpgroup: thread 0 waits until *sem equals
 * turn, the warpgroup leaves together; after the adds it meets again and
 * thread 0 hands the turn on (a release at GPU scope after the barrier covers
 * the other threads' adds). */
__device__ __forceinline__ void wg_ordered_acquire(const int *sem, int turn, int t, int barrier)
{
    if (t == 0) {
        while (sm90::ld_acquire_s32(sem) != turn) {
        }
    }
    named_barrier_sync(barrier, 128);
}

__device__ __forceinline__ void wg_ordered_release(int *sem, int turn, int t, int barrier)
{
    named_barrier_sync(barrier, 128);
    if (t == 0) {
        asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
        sm90::st_release_s32(sem, turn + 1);
    }
}

/* The same turns shared by kSlices CTAs (the head-dim slices of one key block
 * or query head, which add disjoint columns): *sem counts the finished
 * (turn, slice) adds; turn k may start once all kSlices * k adds of the turns
 * before it are done (>=: the slices of one turn in any order), and each CTA
 * adds 1 after its adds. kSlices == 1: the two functions above. */
template <int kSlices>
__device__ __forceinline__ void wg_turn_acquire(const int *sem, int turn, int t, int barrier)
{
    if constexpr (kSlices == 1) {
        wg_ordered_acquire(sem, turn, t, barrier);
    } else {
        if (t == 0) {
            while (sm90::ld_acquire_s32(sem) < kSlices * turn) {
            }
        }
        named_barrier_sync(barrier, 128);
    }
}

template <int kSlices>
__device__ __forceinline__ void wg_turn_release(int *sem, int turn, int t, int barrier)
{
    if constexpr (kSlices == 1) {
        wg_ordered_release(sem, turn, t, barrier);
    } else {
        named_barrier_sync(barrier, 128);
        if (t == 0) {
            asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
            asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(sem) : "memory");
        }
    }
}

/* 64 fp32 columns of this warp's lanes, from column `col`. */
__device__ __forceinline__ void tmem_load64(uint32_t addr, float (&v)[64])
{
    namespace ptx = cuda::ptx;
    uint32_t r0[kTmemLdCols], r1[kTmemLdCols];
    ptx::tcgen05_ld_32x32b(r0, addr);
    ptx::tcgen05_ld_32x32b(r1, addr + kTmemLdCols);
    ptx::tcgen05_wait_ld();
#pragma unroll
    for (int j = 0; j < kTmemLdCols; ++j) {
        v[j] = __uint_as_float(r0[j]);
        v[kTmemLdCols + j] = __uint_as_float(r1[j]);
    }
}

/* Four consecutive fp32 of a shared row (a broadcast: every thread reads the same). */
__device__ __forceinline__ float4 ld_shared_f32x4(const float *p)
{
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(smem_u32(p))
                 : "memory");
    return v;
}

__device__ __forceinline__ void st_shared_v4(uint32_t addr, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

/* dK or dV of this thread's key out of tensor memory (zeros when the block
 * saw no query), `cols` (the slice's width) columns, 32 at a time.
 * group_size == 1: 16-bit pairs times `scale` into `row16` (0 for a key past
 * seqlen_k); else fp32 adds into `row32` (both: the slice's first column). */
template <class Cfg>
__device__ __forceinline__ void bwd_drain_row(uint32_t addr, int cols, bool loaded, float scale,
                                              typename Cfg::T *row16, float *row32)
{
    namespace ptx = cuda::ptx;
#pragma unroll 1
    for (int c = 0; c < cols / kTmemLdCols; ++c) {
        uint32_t r[kTmemLdCols];
        if (loaded) { /* uniform: the whole warp loads (.sync.aligned) */
            ptx::tcgen05_ld_32x32b(r, addr + c * kTmemLdCols);
            ptx::tcgen05_wait_ld();
        } else {
#pragma unroll
            for (int j = 0; j < kTmemLdCols; ++j)
                r[j] = 0u;
        }
        if (row16 != nullptr) {
            uint32_t *dst = reinterpret_cast<uint32_t *>(row16 + c * kTmemLdCols);
#pragma unroll
            for (int j = 0; j < kTmemLdCols / 2; ++j) /* pairs: the ABI's 4-byte rule for dK / dV */
                dst[j] = pack2<typename Cfg::T>(__uint_as_float(r[2 * j]) * scale, __uint_as_float(r[2 * j + 1]) * scale);
        } else if (row32 != nullptr) {
            float *dst = row32 + c * kTmemLdCols;
#pragma unroll
            for (int j = 0; j < kTmemLdCols / 4; ++j)
                red_add_v4_f32(dst + 4 * j, __uint_as_float(r[4 * j]) * scale, __uint_as_float(r[4 * j + 1]) * scale,
                               __uint_as_float(r[4 * j + 2]) * scale, __uint_as_float(r[4 * j + 3]) * scale);
        }
    }
}

template <class Cfg>
__device__ __forceinline__ void attn_bwd_sm100_compute(const mgpu_attention_bwd_args &a,
                                                       typename Cfg::SharedStorage &smem, uint32_t tmem,
                                                       const sm90::AttnBwdWork &w, const BwdSlice &slice)
{
    namespace ptx = cuda::ptx;
    using T = typename Cfg::T;
    constexpr int kM = Cfg::kBlockM;
    const int t = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    const int lane = t % 32;
    const uint32_t lanes = tmem_addr(tmem, 32 * (t / 32), 0);
    const int key_first = w.n_block * Cfg::kBlockN;
    const int key = key_first + t;
    const float pre = a.softcap > 0.f ? a.softmax_scale / a.softcap : 0.f;
    const float post = a.softcap > 0.f ? a.softcap / a.softmax_scale : 0.f;
    /* This thread's row of the dS^T buffers and its swizzle. */
    const uint32_t ds_row = static_cast<uint32_t>(t) * Cfg::kSwizzleBytes;
    const uint32_t ds_xor = static_cast<uint32_t>(t % 8);

    int i = 0;
    for (int m = w.m_block_end - 1; m >= w.m_block_begin; --m, ++i) {
        const int s = i % Cfg::kStages;
        const uint32_t parity = (i / Cfg::kStages) & 1;
        const int row_first = m * kM;
        const bool masked = row_first + kM > w.seqlen_q || key_first + Cfg::kBlockN > w.mask.key_end(row_first) ||
                            key_first < w.mask.key_begin(row_first + kM - 1);

        /* ---- P^T ---- */
        mbar_wait(&smem.q_full[s], parity);
        mbar_wait(&smem.s_full, i & 1);
        ptx::tcgen05_fence_after_thread_sync();
        float pg[kM]; /* S^T, then P^T times the soft-cap derivative */
        tmem_load64(lanes + Cfg::kColS, pg);
        uint32_t packed[kM / 2];
#pragma unroll
        for (int q4 = 0; q4 < kM / 4; ++q4) {
            const float4 lse4 = ld_shared_f32x4(&smem.lse[s][4 * q4]);
            const float lse[4] = {lse4.x, lse4.y, lse4.z, lse4.w};
            float pv[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int q = 4 * q4 + e;
                float x = pg[q];
                float grad = 1.f;
                if (a.softcap > 0.f) {
                    const float th = sm90::fast_tanh(x * pre);
                    x = post * th;
                    grad = 1.f - th * th;
                }
                float pe = sm90::fast_exp2(fmaf(x, a.scale_log2, -lse[e]));
                if (masked) {
                    const int row = row_first + q;
                    if (row >= w.seqlen_q || key < w.mask.key_begin(row) || key >= w.mask.key_end(row))
                        pe = 0.f;
                }
                pv[e] = pe;
                pg[q] = pe * grad;
            }
            packed[2 * q4] = pack2<T>(pv[0], pv[1]);
            packed[2 * q4 + 1] = pack2<T>(pv[2], pv[3]);
        }
        ptx::tcgen05_st_32x32b(lanes + Cfg::kColS, packed);
        warp_arrive_after_tmem(&smem.p_full, lane);

        /* ---- dS^T ---- */
        mbar_wait(&smem.do_full[s], parity);
        mbar_wait(&smem.dp_full, i & 1);
        ptx::tcgen05_fence_after_thread_sync();
        float dp[kM];
        tmem_load64(lanes + Cfg::kColDP, dp);
#pragma unroll
        for (int q4 = 0; q4 < kM / 4; ++q4) {
            const float4 d4 = ld_shared_f32x4(&smem.dpsum[s][4 * q4]);
            packed[2 * q4] = pack2<T>(pg[4 * q4] * (dp[4 * q4] - d4.x), pg[4 * q4 + 1] * (dp[4 * q4 + 1] - d4.y));
            packed[2 * q4 + 1] =
                pack2<T>(pg[4 * q4 + 2] * (dp[4 * q4 + 2] - d4.z), pg[4 * q4 + 3] * (dp[4 * q4 + 3] - d4.w));
        }
        ptx::tcgen05_st_32x32b(lanes + Cfg::kColDP, packed);
        const uint32_t ds_buf = smem_u32(smem.ds[i % 2]) + ds_row;
#pragma unroll
        for (int c = 0; c < kM / 8; ++c) /* 16-byte chunk c: queries 8c .. 8c + 7 */
            st_shared_v4(ds_buf + ((static_cast<uint32_t>(c) ^ ds_xor) * 16), packed[4 * c], packed[4 * c + 1],
                         packed[4 * c + 2], packed[4 * c + 3]);
        fence_smem_to_async(); /* the MMA reads ds through the async proxy */
        warp_arrive_after_tmem(&smem.ds_full, lane);
    }

    /* ---- dK, dV ---- */
    const bool loaded = i > 0;
    if (loaded) {
        mbar_wait(&smem.kv_done, 0);
        ptx::tcgen05_fence_after_thread_sync();
    }
    const bool valid = key < w.seqlen_k;
    if (a.group_size == 1) {
        const int64_t row = static_cast<int64_t>(w.k_offset) + key;
        const int64_t bk = a.cu_seqlens_q != 0 ? 0 : static_cast<int64_t>(w.batch) * a.dk_batch_stride;
        const int64_t bv = a.cu_seqlens_q != 0 ? 0 : static_cast<int64_t>(w.batch) * a.dv_batch_stride;
        T *dk = reinterpret_cast<T *>(a.dk) + bk + row * a.dk_seq_stride +
                static_cast<int64_t>(w.head_kv) * a.dk_head_stride + slice.col0;
        T *dv = reinterpret_cast<T *>(a.dv) + bv + row * a.dv_seq_stride +
                static_cast<int64_t>(w.head_kv) * a.dv_head_stride + slice.col0;
        bwd_drain_row<Cfg>(lanes + Cfg::kColDV, slice.cols, loaded, 1.f, valid ? dv : nullptr, nullptr);
        bwd_drain_row<Cfg>(lanes + Cfg::kColDK, slice.cols, loaded, a.softmax_scale, valid ? dk : nullptr, nullptr);
        return;
    }
    const int64_t elem = (w.k_row0 + key) * Cfg::kHeadDim + slice.col0;
    float *dk32 = reinterpret_cast<float *>(a.dk_accum) + elem;
    float *dv32 = reinterpret_cast<float *>(a.dv_accum) + elem;
    /* The semaphore of the ABI's key block (the first of the CTA's two for
     * head dims 192 / 256, which always holds a key of the sequence). */
    int *sem = reinterpret_cast<int *>(a.dkv_semaphore) + w.k_row0 / Cfg::kAbiBlockN +
               w.n_block * (Cfg::kBlockN / Cfg::kAbiBlockN);
    const int turn = w.head_q - w.head_kv * a.group_size;
    if (a.deterministic)
        wg_turn_acquire<Cfg::kSlices>(sem, turn, t, kBwd100BarrierDkv);
    bwd_drain_row<Cfg>(lanes + Cfg::kColDV, slice.cols, loaded, 1.f, nullptr, valid ? dv32 : nullptr);
    bwd_drain_row<Cfg>(lanes + Cfg::kColDK, slice.cols, loaded, a.softmax_scale, nullptr, valid ? dk32 : nullptr);
    if (a.deterministic)
        wg_turn_release<Cfg::kSlices>(sem, turn, t, kBwd100BarrierDkv);
}

template <class Cfg>
__device__ __forceinline__ void attn_bwd_sm100_dq(const mgpu_attention_bwd_args &a, typename Cfg::SharedStorage &smem,
                                                  uint32_t tmem, const sm90::AttnBwdWork &w, const BwdSlice &slice)
{
    namespace ptx = cuda::ptx;
    constexpr int kM = Cfg::kBlockM;
    const int t = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    const int warp = t / 32, lane = t % 32;
    const uint32_t lanes = tmem_addr(tmem, 32 * warp, Cfg::kColDQ);
    /* dq_accum tiles in the ABI's order (mgpu_attention_bwd_dq_offset), which
     * the shared postprocess reads: constants for a compile-time head dim */
    struct mgpu_attention_bwd_tile tile = {0, 0, 0, 0, 0, 0};
    mgpu_attention_bwd_tile(Cfg::kHeadDim, &tile);
    const bool has_column = warp < slice.cols / 32; /* uniform per warp */
    const int column = slice.col0 + t;               /* lane t of dQ^T: this head-dim column */

    int i = 0;
    for (int m = w.m_block_end - 1; m >= w.m_block_begin; --m, ++i) {
        mbar_wait(&smem.dq_full, i & 1);
        ptx::tcgen05_fence_after_thread_sync();
        float v[kM];
        if (has_column)
            tmem_load64(lanes, v);
        ptx::tcgen05_fence_before_thread_sync();
        __syncwarp();
        if (lane == 0)
            mbar_arrive(&smem.dq_empty);

        float *dq_tile = reinterpret_cast<float *>(a.dq_accum) + (w.q_row0 + static_cast<int64_t>(m) * kM) * Cfg::kHeadDim;
        int *sem = reinterpret_cast<int *>(a.dq_semaphore) + w.q_row0 / kM + m;
        const int turn = w.n_block - sm90::attn_bwd_first_n_block<Cfg>(w, m);
        if (a.deterministic)
            wg_turn_acquire<Cfg::kSlices>(sem, turn, t, kBwd100BarrierDq);
        if (has_column) {
#pragma unroll
            for (int q = 0; q < kM; ++q)
                red_add_f32(dq_tile + mgpu_attention_bwd_dq_offset(&tile, Cfg::kHeadDim, q, column), v[q]);
        }
        if (a.deterministic)
            wg_turn_release<Cfg::kSlices>(sem, turn, t, kBwd100BarrierDq);
    }
}

} // namespace sm100
} // namespace mgpu
