/*
 * Blackwell attention backward: the MMA warp (one thread). The TMA warp runs
 * the Hopper producer's loop unchanged (sm90::attn_bwd_producer: K, V once on
 * kv_full, in boxes of Cfg::kKVBoxRows rows; per query block i, stage s =
 * i % kStages, Q + lse_log2 on q_full[s] and dO + dpsum on do_full[s] after
 * q_empty[s] / do_empty[s]); here those empty barriers are completed by
 * tcgen05.commit instead of warp arrivals.
 *
 * Every CTA computes S^T and dP^T over the full head dim; dV, dK (N = the
 * slice's width, idesc kIdescKV / kIdescKVLast) read the slice's columns of
 * dO / Q (its first 64-column block: y_off) and dQ^T the slice's columns of
 * K (k_cols). Head dims <= 128: one slice, the whole head dim.
 *
 * Two stages (head dims 64..128), software-pipelined by one block: S^T and
 * dP^T of block i + 1 are issued while the compute warps still work on block
 * i. Before the loop: wait kv_full; S^T(0) = K Q(0)^T -> s_full; dP^T(0) =
 * V dO(0)^T -> dp_full. Per query block i (stage s = i % 2, parity i & 1
 * unless said otherwise):
 *   wait p_full;  dV += P^T dO  (A = P^T from tensor memory) -> commit dv_done;
 *   wait dv_done (S^T(i+1) overwrites the columns P^T(i) is read from, and the
 *     ISA orders only tcgen05.mma pairs on the same accumulator);
 *   i + 1 < count: wait q_full[s'] (s' = (i + 1) % 2), S^T(i+1) = K Q^T -> s_full;
 *   wait ds_full; dK += dS^T Q  (A = dS^T from tensor memory) -> commit dk_done;
 *   wait dk_done (dP^T(i+1) overwrites dS^T(i));
 *   i + 1 < count: wait do_full[s'], dP^T(i+1) = V dO^T -> dp_full;
 *   i >= 1: wait dq_empty(i-1) (the dQ warpgroup has read dQ^T(i-1));
 *   dQ^T = K^T dS^T (both from shared memory, ds[i % 2]) -> commit dq_full;
 *   commit q_empty[s], do_empty[s] (Q, dO, lse, dpsum of stage s consumed).
 * After the last block: commit kv_done. While the compute warps turn dP^T(i)
 * into dS^T(i) the tensor cores run S^T(i+1); while they turn S^T(i+1) into
 * P^T(i+1), dK(i), dP^T(i+1) and dQ^T(i).
 *
 * One stage (head dims 192, 256: the shared memory holds one Q and one dO
 * tile), no overlap across blocks: Q(i+1) and dO(i+1) can only land after
 * every reader of Q(i), dO(i), lse(i), dpsum(i) is done, and those readers
 * include dK(i). Before the loop as above; per query block i (parity i & 1
 * for every barrier, the stage's included):
 *   wait p_full;  dV += P^T dO -> commit dv_done;
 *   wait ds_full; dK += dS^T Q -> commit dk_done;
 *   commit q_empty[0], do_empty[0]: every MMA reading Q(i) (S^T(i), dK(i))
 *     or dO(i) (dP^T(i), dV(i)) was issued before these commits, which
 *     complete only after them; the compute warps read lse(i) before p_full
 *     and dpsum(i) before ds_full, both waited for above;
 *   i >= 1: wait dq_empty(i-1);
 *   dQ^T = K^T dS^T (ds[i % 2]) -> commit dq_full;
 *   wait dv_done, dk_done (S^T(i+1) overwrites P^T(i), dP^T(i+1) dS^T(i);
 *     already implied by q_full(i+1), which completes only after q_empty(i),
 *     a commit issued after dV(i) and dK(i): kept so that each overwrite has
 *     its own wait);
 *   i + 1 < count: wait q_full[0] (parity (i + 1) & 1), S^T(i+1) -> s_full;
 *     wait do_full[0], dP^T(i+1) -> dp_full.
 * After the last block: commit kv_done.
 *
 * Why no barrier runs two phases ahead of its waiter (both stage counts):
 *   s_full(i+1) is committed after the MMA thread waited p_full(i), which the
 *     compute warps arrive on after consuming s_full(i); dp_full(i+1) likewise
 *     after ds_full(i), which follows dp_full(i).
 *   p_full(i+1), ds_full(i+1) need s_full(i+1) / dp_full(i+1), committed after
 *     the MMA thread waited p_full(i) / ds_full(i).
 *   dv_done(i+1), dk_done(i+1) are committed after p_full(i+1) / ds_full(i+1),
 *     hence after s_full(i+1) / dp_full(i+1), which the MMA thread commits
 *     only after its own wait of dv_done(i) / dk_done(i).
 *   dq_full(i+1) is committed after the MMA thread waited dq_empty(i), which
 *     the dQ warps arrive on after consuming dq_full(i); dq_empty(i+1) needs
 *     dq_full(i+1).
 *   The two dS^T buffers: the compute warps write ds[(i+1) % 2] after
 *     dp_full(i+1), a commit that completes only when every earlier MMA of
 *     this thread has, dQ^T(i-1) (the last reader of that buffer) included
 *     (with one stage dQ^T(i) too).
 *   Stages (two): Q(i+1) is waited for in block i; the TMA warp loads it
 *     once q_empty of block i - 1 (same stage) was committed, at the end of
 *     block i - 1, so the waits never form a cycle.
 *   Stage (one): q_full(i+1) / do_full(i+1) are waited for at the end of
 *     block i, after q_empty(i) / do_empty(i) were committed in block i; the
 *     TMA warp waits q_empty(i) (parity i & 1) before loading block i + 1,
 *     so q_full(i+1) cannot complete before q_empty(i), and q_empty(i+1) is
 *     committed only after the MMA thread waited ds_full(i+1), which needs
 *     q_full(i+1) (the compute warps wait it for the lse row).
 * tests/test_attention_bwd_sm100_protocol.c runs both schedules as a model
 * (parity waits, MMAs and loads completing at random, a tag per buffer) over
 * many interleavings and catches a deliberately broken wait.
 */
#pragma once

#include <cuda/ptx>
#include <stdint.h>

#include "blackwell/tcgen05.cuh"
#include "common/async_copy.cuh"

namespace mgpu {
namespace sm100 {

/* D (128 lanes x 64 columns) = A B^T with A = the 128 rows of a K / V tile
 * and B = the 64 rows of a Q / dO tile, both K-major: kHeadDim / 16 MMAs of
 * K = 16 (32 bytes along the swizzled row, one 64-column block per 4 steps). */
template <class Cfg>
__device__ __forceinline__ void bwd_issue_xt(uint32_t d_tmem, uint32_t a_tile, uint32_t b_tile)
{
    namespace ptx = cuda::ptx;
    constexpr int kStepsPerBlock = Cfg::kSwizzleElems / Cfg::kMmaK;
#pragma unroll
    for (int kk = 0; kk < Cfg::kHeadDim / Cfg::kMmaK; ++kk) {
        const uint32_t within = (kk % kStepsPerBlock) * Cfg::kMmaStepBytesK;
        const uint32_t off_a = (kk / kStepsPerBlock) * Cfg::kKVBlockBytes + within;
        const uint32_t off_b = (kk / kStepsPerBlock) * Cfg::kQBlockBytes + within;
        ptx::tcgen05_mma(ptx::kind_f16, ptx::cta_group_1, d_tmem, make_smem_desc_kmajor_sw128(a_tile + off_a),
                         make_smem_desc_kmajor_sw128(b_tile + off_b), Cfg::kIdescST, kk > 0);
    }
}

/* acc (128 lanes x the slice's columns) += X^T Y with X^T (keys x 64
 * queries, 16-bit pairs, 8 columns per K = 16 step) in tensor memory and Y =
 * the slice's columns of Q or dO (y_cols: its first 64-column block),
 * MN-major (16 query rows = 2048 bytes per step, LBO = one 64-column block);
 * idesc: N = the slice's width. */
template <class Cfg>
__device__ __forceinline__ void bwd_issue_kv(uint32_t acc_tmem, uint32_t xt_tmem, uint32_t y_cols, uint32_t idesc,
                                             bool accumulate)
{
    namespace ptx = cuda::ptx;
    constexpr uint32_t kColsPerStep = Cfg::kMmaK / 2;
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockM / Cfg::kMmaK; ++kk)
        ptx::tcgen05_mma_tmem_a(ptx::kind_f16, ptx::cta_group_1, acc_tmem, xt_tmem + kk * kColsPerStep,
                                make_smem_desc_mnmajor_sw128(y_cols + kk * Cfg::kMmaStepBytesMN, Cfg::kQBlockBytes),
                                idesc, accumulate || kk > 0);
}

/* dQ^T (128 head-dim lanes x 64 query columns) = K^T dS^T: A = the K tile
 * from the slice's first 64-column block (k_cols), MN-major (LBO = one
 * 64-column block of K), B = the dS^T buffer MN-major; 16 keys = 2048 bytes
 * per step of both. */
template <class Cfg>
__device__ __forceinline__ void bwd_issue_dqt(uint32_t dq_tmem, uint32_t k_cols, uint32_t ds_buf)
{
    namespace ptx = cuda::ptx;
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockN / Cfg::kMmaK; ++kk)
        ptx::tcgen05_mma(ptx::kind_f16, ptx::cta_group_1, dq_tmem,
                         make_smem_desc_mnmajor_sw128(k_cols + kk * Cfg::kMmaStepBytesMN, Cfg::kKVBlockBytes),
                         make_smem_desc_mnmajor_sw128(ds_buf + kk * Cfg::kMmaStepBytesMN, Cfg::kDsBytes),
                         Cfg::kIdescDQT, kk > 0);
}

template <class Cfg>
__device__ __forceinline__ void attn_bwd_sm100_mma(typename Cfg::SharedStorage &smem, uint32_t tmem,
                                                   const sm90::AttnBwdWork &w, const BwdSlice &slice)
{
    namespace ptx = cuda::ptx;
    const int count = w.m_block_end - w.m_block_begin;
    if (count <= 0)
        return; /* nothing loaded; the compute warps write zeros */
    const uint32_t k_tile = smem_u32(smem.k), v_tile = smem_u32(smem.v);
    auto q_tile = [&](int i) { return smem_u32(smem.q[i % Cfg::kStages]); };
    auto do_tile = [&](int i) { return smem_u32(smem.dout[i % Cfg::kStages]); };
    auto stage_parity = [](int i) { return static_cast<uint32_t>((i / Cfg::kStages) & 1); };
    /* The slice: its first 64-column block of Q / dO (B of dK, dV) and of K
     * (A of dQ^T), and N of dK, dV (uniform over the CTA). */
    const int slice_block = slice.col0 / Cfg::kSwizzleElems;
    const uint32_t y_off = static_cast<uint32_t>(slice_block * Cfg::kQBlockBytes);
    const uint32_t k_cols = k_tile + static_cast<uint32_t>(slice_block * Cfg::kKVBlockBytes);
    const uint32_t idesc_kv = slice.cols == Cfg::kSliceCols ? Cfg::kIdescKV : Cfg::kIdescKVLast;

    mbar_wait(&smem.kv_full, 0);
    mbar_wait(&smem.q_full[0], 0);
    ptx::tcgen05_fence_after_thread_sync();
    bwd_issue_xt<Cfg>(tmem + Cfg::kColS, k_tile, q_tile(0));
    ptx::tcgen05_commit(ptx::cta_group_1, &smem.s_full);
    mbar_wait(&smem.do_full[0], 0);
    ptx::tcgen05_fence_after_thread_sync();
    bwd_issue_xt<Cfg>(tmem + Cfg::kColDP, v_tile, do_tile(0));
    ptx::tcgen05_commit(ptx::cta_group_1, &smem.dp_full);

    for (int i = 0; i < count; ++i) {
        const int s = i % Cfg::kStages;
        const uint32_t phase = i & 1;
        const bool next = i + 1 < count;

        mbar_wait(&smem.p_full, phase);
        ptx::tcgen05_fence_after_thread_sync();
        bwd_issue_kv<Cfg>(tmem + Cfg::kColDV, tmem + Cfg::kColS, do_tile(i) + y_off, idesc_kv, i > 0);
        ptx::tcgen05_commit(ptx::cta_group_1, &smem.dv_done);
        if constexpr (Cfg::kStages == 2) {
            mbar_wait(&smem.dv_done, phase);
            if (next) {
                mbar_wait(&smem.q_full[(i + 1) % Cfg::kStages], stage_parity(i + 1));
                ptx::tcgen05_fence_after_thread_sync();
                bwd_issue_xt<Cfg>(tmem + Cfg::kColS, k_tile, q_tile(i + 1));
                ptx::tcgen05_commit(ptx::cta_group_1, &smem.s_full);
            }
        }

        mbar_wait(&smem.ds_full, phase);
        ptx::tcgen05_fence_after_thread_sync();
        bwd_issue_kv<Cfg>(tmem + Cfg::kColDK, tmem + Cfg::kColDP, q_tile(i) + y_off, idesc_kv, i > 0);
        ptx::tcgen05_commit(ptx::cta_group_1, &smem.dk_done);
        if constexpr (Cfg::kStages == 1) {
            /* Q(i), dO(i) read by every MMA that reads them (S^T, dK; dP^T,
             * dV: issued above), lse_log2 / dpsum rows by the compute warps
             * (before p_full / ds_full): the TMA warp may load block i + 1. */
            ptx::tcgen05_commit(ptx::cta_group_1, &smem.q_empty[0]);
            ptx::tcgen05_commit(ptx::cta_group_1, &smem.do_empty[0]);
        } else {
            mbar_wait(&smem.dk_done, phase);
            if (next) {
                mbar_wait(&smem.do_full[(i + 1) % Cfg::kStages], stage_parity(i + 1));
                ptx::tcgen05_fence_after_thread_sync();
                bwd_issue_xt<Cfg>(tmem + Cfg::kColDP, v_tile, do_tile(i + 1));
                ptx::tcgen05_commit(ptx::cta_group_1, &smem.dp_full);
            }
        }

        if (i > 0) {
            mbar_wait(&smem.dq_empty, phase ^ 1);
            ptx::tcgen05_fence_after_thread_sync();
        }
        bwd_issue_dqt<Cfg>(tmem + Cfg::kColDQ, k_cols, smem_u32(smem.ds[i % 2]));
        ptx::tcgen05_commit(ptx::cta_group_1, &smem.dq_full);
        if constexpr (Cfg::kStages == 2) {
            ptx::tcgen05_commit(ptx::cta_group_1, &smem.q_empty[s]);
            ptx::tcgen05_commit(ptx::cta_group_1, &smem.do_empty[s]);
        } else {
            (void)s;
            /* S^T(i+1) overwrites P^T(i) (read by dV(i)), dP^T(i+1) dS^T(i)
             * (read by dK(i)). */
            mbar_wait(&smem.dv_done, phase);
            mbar_wait(&smem.dk_done, phase);
            if (next) {
                mbar_wait(&smem.q_full[0], stage_parity(i + 1));
                ptx::tcgen05_fence_after_thread_sync();
                bwd_issue_xt<Cfg>(tmem + Cfg::kColS, k_tile, q_tile(i + 1));
                ptx::tcgen05_commit(ptx::cta_group_1, &smem.s_full);
                mbar_wait(&smem.do_full[0], stage_parity(i + 1));
                ptx::tcgen05_fence_after_thread_sync();
                bwd_issue_xt<Cfg>(tmem + Cfg::kColDP, v_tile, do_tile(i + 1));
                ptx::tcgen05_commit(ptx::cta_group_1, &smem.dp_full);
            }
        }
    }
    ptx::tcgen05_commit(ptx::cta_group_1, &smem.kv_done);
}

} // namespace sm100
} // namespace mgpu
