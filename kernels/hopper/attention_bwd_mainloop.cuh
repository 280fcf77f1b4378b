/*
 * Hopper attention backward: the producer's TMA loop and the consumers' loop
 * over query blocks.
 *
 * Producer (thread 0 of warpgroup 0): K[n], V[n] on kv_full; then per query
 * block m the mask leaves, in the work's order (AttnBwdWork::m_first, m_step;
 * i = 0, 1, ...; stage s = i % kStages, parity (i / kStages) & 1): wait q_empty[s],
 * Q[m] on q_full[s]; wait do_empty[s], dO[m] on do_full[s]. Empty barriers
 * start "free" (the first round waits for the parity before the first phase).
 * The lse_log2 / dpsum rows of block i are staged by the consumers: in row
 * buffer i % 2 (attn_bwd_rows_issue, then cp_async_wait_all) for the split
 * head dims, per warp for the others (attn_bwd_consumer_deferred).
 *
 * The order of the query blocks: from the last to the first, the
 * deterministic dQ adds into a query block going in increasing key-block
 * order; or (key_blocks_down, which the runtime sets for deterministic causal
 * calls of at most 64 query blocks) from the first to the last, the adds in
 * decreasing key-block order (the ABI's grid launches the key blocks of a
 * pair in that order). Under a causal mask every key block of a pair meets
 * the last query block first, so in the first order the key blocks running
 * together meet each query block at the same step, and each turn waits for
 * the one before it (the reduction's completion and the semaphore's round
 * trip: a chain as long as the key blocks started together). In the second,
 * the key block whose turn comes next meets a query block two blocks later in
 * its own loop (kBlockN = 2 kBlockM), and its dQ writer seldom waits. The
 * second order launches the longest CTAs of a pair last, which costs more at
 * the end of the grid the longer they are (decision 074).
 *
 * Consumers, two loops:
 *   head dims <= 128 (kSplitDim = 0, consumer c owns keys [64c, 64c + 64),
 *     P^T and dS^T in registers as the A of dV, dK): the deferred-dQ loop,
 *     attn_bwd_consumer_deferred, whose order is described there;
 *   head dims 192, 256 (kSplitDim = 1, consumer c owns query columns of S^T
 *     and head-dim columns of dK, dV, dQ): attn_bwd_consumer_split, per query
 *     block (groups of wgmma committed in this order):
 *
 *   [S^T = K Q_c^T issued by the block before, complete]
 *   g2 dP^T = V dO_c^T
 *   P^T (mask pass on edge blocks) -> smem p[i % 2]
 *   wait g2; dS^T -> smem ds[i % 2]
 *   rows of block i + 1; fence.proxy.async; bar(ds)
 *   g3 dV_c += P^T dO_c, dK_c += dS^T Q_c (SS)
 *   g4 dQ_c  = dS K_c                     (SS)
 *   g5 S^T of block i + 1 (after the last block: on the idle stage, result
 *     unused); wait g3, g4; dQ_c staged row-major in this consumer's column
 *     blocks of Q[s] and dO[s] as 16-row boxes of tmap_dq; arrive dq_full[s]
 *     (the split dQ writer adds them and releases q_empty[s], do_empty[s]);
 *     wait g5
 *
 * (Q_c: the consumer's query columns; dQ_c, dV_c, dK_c: its head-dim
 * columns.) The bar(ds) of block i also tells each consumer that the other
 * has finished block i - 1's dQ, which read ds[(i + 1) % 2]: two buffers make
 * that one barrier enough.
 *
 * Operand layouts (all 128-byte swizzled, 1024-byte aligned tiles):
 *   K, V, Q, dO  [row][dim] in 64-column blocks (TMA): K-major for S^T / dP^T,
 *                MN-major (transpose) as the B of dV, dK (dO, Q) and dQ (K).
 *   P^T, dS^T    [key][query], one 128-byte row per key (kBlockM = 64):
 *                K-major A of dV, dK (M = keys); MN-major A of dQ (M = queries).
 */
#pragma once

namespace mgpu {
namespace sm90 {

/* ---- the wgmma forms this kernel issues (instructions: hopper/wgmma.cuh) ---- */

template <class Cfg, int kN, bool kTransA, bool kTransB, int kScaleA = 1>
__device__ __forceinline__ void bwd_mma_ss(float (&d)[kN / 2], uint64_t desc_a, uint64_t desc_b, uint32_t accumulate)
{
    wgmma_ss<typename Cfg::T, kTransA, kTransB, kScaleA>(d, desc_a, desc_b, accumulate);
}

/* A from registers, B MN-major. */
template <class Cfg, int kN>
__device__ __forceinline__ void bwd_mma_rs(float (&d)[kN / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                           uint32_t accumulate)
{
    wgmma_rs<typename Cfg::T, true>(d, a, desc_b, accumulate);
}

/* One tile (kDimBlocks boxes of 64 head-dim columns) of rows from `row`. */
template <class Cfg, int kBlockBytes>
__device__ __forceinline__ void bwd_load_tile(uint8_t *dst, const CUtensorMap *map, uint64_t *bar, int row, int head,
                                              int tma_batch)
{
#pragma unroll
    for (int d = 0; d < Cfg::kDimBlocks; ++d)
        tma_load_4d(dst + d * kBlockBytes, map, bar, d * Cfg::kSwizzleElems, row, head, tma_batch);
}

/* The producer (thread 0): TMA tiles only. On sm_90a the lse_log2 / dpsum
 * rows of a query block are staged by the consumers themselves
 * (attn_bwd_rows). kRowsOnStage (the sm_100a kernel, whose compute warps wait
 * on q_full / do_full): each row also rides its stage's barrier, one bulk
 * copy of Cfg::kRowBytes into smem.lse[s] / smem.dpsum[s]. */
template <class Cfg, bool kRowsOnStage = false>
__device__ __forceinline__ void attn_bwd_producer(const mgpu_attention_bwd_params &p,
                                                  typename Cfg::SharedStorage &smem, const AttnBwdWork &w)
{
    if (w.m_block_begin >= w.m_block_end)
        return; /* nothing to load; the consumers write zeros */
    const int k_row = w.k_offset + w.n_block * Cfg::kBlockN;
    mbar_arrive_expect_tx(&smem.kv_full, 2 * Cfg::kKVTileBytes);
    /* Boxes of Cfg::kKVBoxRows rows (the ABI's block_n), kBlockN / kKVBoxRows of
     * them per 64-column block: one on sm_90a, two for the sm_100a kernel's
     * 128-key CTAs of head dims 192 / 256 (rows r.. at byte r * 128 of the block). */
    static_assert(Cfg::kBlockN % Cfg::kKVBoxRows == 0 && Cfg::kKVBoxRows % 8 == 0, "whole swizzle atoms per box");
#pragma unroll
    for (int r = 0; r < Cfg::kBlockN; r += Cfg::kKVBoxRows) {
        bwd_load_tile<Cfg, Cfg::kKVBlockBytes>(smem.k + r * Cfg::kSwizzleBytes, &p.tmap_k, &smem.kv_full, k_row + r,
                                               w.head_kv, w.tma_batch);
        bwd_load_tile<Cfg, Cfg::kKVBlockBytes>(smem.v + r * Cfg::kSwizzleBytes, &p.tmap_v, &smem.kv_full, k_row + r,
                                               w.head_kv, w.tma_batch);
    }
    constexpr int kStageBytes = [] {
        if constexpr (kRowsOnStage)
            return Cfg::kQTileBytes + Cfg::kRowBytes;
        else
            return Cfg::kQTileBytes;
    }();
    const int count = w.m_block_end - w.m_block_begin;
    for (int i = 0, m = w.m_first; i < count; ++i, m += w.m_step) {
        const int s = i % Cfg::kStages;
        const uint32_t parity = (i / Cfg::kStages) & 1;
        const int q_row = w.q_offset + m * Cfg::kBlockM;
        const int64_t row0 = w.q_row0 + static_cast<int64_t>(m) * Cfg::kBlockM;
        MGPU_ATTN_BWD_TIMED(kBwdTlStageEmpty, true, mbar_wait(&smem.q_empty[s], parity ^ 1));
        mbar_arrive_expect_tx(&smem.q_full[s], kStageBytes);
        bwd_load_tile<Cfg, Cfg::kQBlockBytes>(smem.q[s], &p.tmap_q, &smem.q_full[s], q_row, w.head_q, w.tma_batch);
        if constexpr (kRowsOnStage)
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem.lse[s],
                               reinterpret_cast<const float *>(p.args.lse_log2) + row0, Cfg::kRowBytes,
                               &smem.q_full[s]);
        MGPU_ATTN_BWD_TIMED(kBwdTlStageEmpty, true, mbar_wait(&smem.do_empty[s], parity ^ 1));
        mbar_arrive_expect_tx(&smem.do_full[s], kStageBytes);
        bwd_load_tile<Cfg, Cfg::kQBlockBytes>(smem.dout[s], &p.tmap_do, &smem.do_full[s], q_row, w.head_q,
                                              w.tma_batch);
        if constexpr (kRowsOnStage)
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem.dpsum[s],
                               reinterpret_cast<const float *>(p.args.dpsum) + row0, Cfg::kRowBytes,
                               &smem.do_full[s]);
    }
    MGPU_ATTN_BWD_STAMP(kBwdTlProducerDone, true);
}

/*
 * The lse_log2 and dpsum rows (kBlockM fp32 each) of query block m, staged
 * by the consumers in row buffer b = i % 2 (i: the block's position in the
 * loop): warp 0 of consumer 0 copies lse_log2, warp 0 of consumer 1 dpsum,
 * 8 bytes a lane, with cp.async issued while the block before is computed
 * (attn_bwd_rows_issue); each thread waits for its copies
 * (cp.async.wait_all) before that block's bar(ds). Every read of buffer b
 * (P and dS of block i) then follows a bar.sync after the copies complete,
 * and the copies of block i + 2 are issued after the bar(ds) of block i + 1,
 * which every consumer reaches after its reads of block i: named barriers
 * alone order the rows (no mbarrier hand-off of generic-proxy data, no
 * registers held across the block).
 */
template <class Cfg>
__device__ __forceinline__ void attn_bwd_rows_issue(const mgpu_attention_bwd_args &a,
                                                    typename Cfg::SharedStorage &smem, const AttnBwdWork &w, int m,
                                                    int b, int consumer, int thread)
{
    static_assert(Cfg::kBlockM == 64, "two row values per lane");
    if (thread < 32) {
        const float *rows = reinterpret_cast<const float *>(consumer == 0 ? a.lse_log2 : a.dpsum) + w.q_row0 +
                            static_cast<int64_t>(m) * Cfg::kBlockM + 2 * thread;
        const uint32_t dst = smem_u32(consumer == 0 ? &smem.lse[b][2 * thread] : &smem.dpsum[b][2 * thread]);
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(rows) : "memory");
    }
}

/* X^T = A B^T with A = 64 rows (keys) of a K-major [row][dim] tile and B =
 * kSN rows (queries) of another: S^T = K Q^T and dP^T = V dO^T. kSubtract:
 * d -= A B^T instead (d holds its initial values: the deferred loop's
 * dpsum - dP^T).
 * Cfg::kKVFrags: A comes from a_frags (bwd_load_a_frags, negated there for
 * kSubtract), only B from shared memory; else a_frags is unused. */
template <class Cfg, bool kSubtract = false>
__device__ __forceinline__ void issue_xt(float (&d)[Cfg::kSN / 2], const uint32_t (&a_frags)[Cfg::kKVFragRegs],
                                         uint32_t a_rows, uint32_t b_rows)
{
    constexpr int kStepsPerBlock = Cfg::kSwizzleElems / Cfg::kWgmmaK;
    constexpr uint32_t kStepBytes = Cfg::kWgmmaK * Cfg::kElementBytes;
    if constexpr (Cfg::kKVFrags) {
#pragma unroll
        for (int kk = 0; kk < Cfg::kHeadDim / Cfg::kWgmmaK; ++kk) {
            const uint32_t block = kk / kStepsPerBlock, within = (kk % kStepsPerBlock) * kStepBytes;
            const uint64_t db = wgmma_desc(b_rows + block * Cfg::kQBlockBytes + within, 16, Cfg::kAtomBytes);
            const uint32_t a[4] = {a_frags[4 * kk], a_frags[4 * kk + 1], a_frags[4 * kk + 2], a_frags[4 * kk + 3]};
            wgmma_rs<typename Cfg::T, false>(d, a, db, kSubtract || kk > 0);
        }
        return;
    }
    /* a_rows (the consumer's K or V rows) is the same in every query block:
     * without this the compiler hoists the 8 descriptors derived from it out
     * of the consumer loop, 16 registers that head dim 128 cannot afford
     * (they spilled). Opaque here, they are recomputed at each issue. */
    asm volatile("" : "+r"(a_rows));
#pragma unroll
    for (int kk = 0; kk < Cfg::kHeadDim / Cfg::kWgmmaK; ++kk) {
        const uint32_t block = kk / kStepsPerBlock, within = (kk % kStepsPerBlock) * kStepBytes;
        const uint64_t da = wgmma_desc(a_rows + block * Cfg::kKVBlockBytes + within, 16, Cfg::kAtomBytes);
        const uint64_t db = wgmma_desc(b_rows + block * Cfg::kQBlockBytes + within, 16, Cfg::kAtomBytes);
        bwd_mma_ss<Cfg, Cfg::kSN, false, false, kSubtract ? -1 : 1>(d, da, db, kSubtract || kk > 0);
    }
}

/* Cfg::kKVFrags: the 16-bit A fragments of the consumer's 64 rows of a K-major
 * [row][dim] tile (K or V) for every k-step of issue_xt. Register 4 kk + q
 * holds row 16 warp + lane / 4 + 8 (q % 2), dims 16 kk + 8 (q / 2) +
 * 2 (lane % 4) + {0, 1} (the A fragment of hopper/wgmma.cuh); with the
 * 128-byte swizzle, 8-dim chunk c of row r sits at chunk c ^ (r % 8).
 * kNegate flips every sign (for issue_xt's kSubtract). Once per CTA. */
template <class Cfg, bool kNegate = false>
__device__ __forceinline__ void bwd_load_a_frags(uint32_t (&a)[Cfg::kKVFragRegs], uint32_t rows, int warp, int lane)
{
    static_assert(Cfg::kKVFragRegs == Cfg::kHeadDim / 4, "one fragment register per 8 bytes of a row pair");
#pragma unroll
    for (int kk = 0; kk < Cfg::kHeadDim / Cfg::kWgmmaK; ++kk)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int row = 16 * warp + lane / 4 + 8 * (q % 2);
            const int col = kk * Cfg::kWgmmaK + 8 * (q / 2);
            const int block = col / Cfg::kSwizzleElems, chunk = (col % Cfg::kSwizzleElems) / 8;
            const uint32_t addr = rows + block * Cfg::kKVBlockBytes + row * Cfg::kSwizzleBytes +
                                  ((chunk ^ (row % 8)) * 16) + 4 * (lane % 4);
            const uint32_t v = static_cast<uint32_t>(ld_shared_s32(addr));
            a[4 * kk + q] = kNegate ? v ^ 0x80008000u : v; /* the sign bit of both 16-bit halves */
        }
}

/* MN-major descriptor of columns [col, ...) of a [row][dim] tile at k-step kk
 * (16 rows): block stride as the leading byte offset. */
template <class Cfg, int kBlockBytes>
__device__ __forceinline__ uint64_t mn_major_desc(uint32_t tile, int col, int kk)
{
    const uint32_t addr = tile + (col / Cfg::kSwizzleElems) * kBlockBytes + (col % Cfg::kSwizzleElems) * Cfg::kElementBytes +
                          kk * Cfg::kWgmmaK * Cfg::kSwizzleBytes;
    return wgmma_desc(addr, kBlockBytes, Cfg::kAtomBytes);
}

/* dQ_c = dS K_c: A = dS^T buffer read MN-major (M = queries), B = K MN-major. */
template <class Cfg, int kN>
__device__ __forceinline__ void issue_dq(float (&dq)[kN / 2], uint32_t ds, uint32_t k_tile, int col0)
{
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockN / Cfg::kWgmmaK; ++kk) {
        const uint64_t da = wgmma_desc(ds + kk * Cfg::kWgmmaK * Cfg::kSwizzleBytes, Cfg::kDsBytes, Cfg::kAtomBytes);
        const uint64_t db = mn_major_desc<Cfg, Cfg::kKVBlockBytes>(k_tile, col0, kk);
        bwd_mma_ss<Cfg, kN, true, true>(dq, da, db, kk > 0);
    }
}

/* acc_c += X^T Y_c with X^T (64 keys x kBlockM queries) K-major in shared
 * memory and Y = Q or dO MN-major (the split loop: dV += P^T dO, dK += dS^T Q). */
template <class Cfg, int kN>
__device__ __forceinline__ void issue_kv_ss(float (&acc)[kN / 2], uint32_t xt, uint32_t y_tile, int col0)
{
    constexpr uint32_t kStepBytes = Cfg::kWgmmaK * Cfg::kElementBytes;
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockM / Cfg::kWgmmaK; ++kk) {
        const uint64_t da = wgmma_desc(xt + kk * kStepBytes, 16, Cfg::kAtomBytes);
        const uint64_t db = mn_major_desc<Cfg, Cfg::kQBlockBytes>(y_tile, col0, kk);
        bwd_mma_ss<Cfg, kN, false, true>(acc, da, db, 1);
    }
}

/* acc += X^T Y with X^T from registers (16-bit A fragments over the kBlockM
 * queries) and Y = Q or dO MN-major, all head-dim columns (the deferred loop). */
template <class Cfg>
__device__ __forceinline__ void issue_kv_rs(float (&acc)[Cfg::kHeadDim / 2], uint32_t (&xr)[Cfg::kSN / 4],
                                            uint32_t y_tile)
{
#pragma unroll
    for (int kk = 0; kk < Cfg::kBlockM / Cfg::kWgmmaK; ++kk) {
        const uint64_t db = mn_major_desc<Cfg, Cfg::kQBlockBytes>(y_tile, 0, kk);
        const uint32_t a[4] = {xr[4 * kk + 0], xr[4 * kk + 1], xr[4 * kk + 2], xr[4 * kk + 3]};
        bwd_mma_rs<Cfg, Cfg::kHeadDim>(acc, a, db, 1);
    }
}

/*
 * [key][query] buffers (P^T, dS^T): one 128-byte row per key, 16-byte chunks
 * swizzled with the key's row in its 8-row atom. Thread (warp, lane) writes
 * keys key0 + 16 warp + lane / 4 + 8 h and query pairs 8 j + 2 (lane % 4): its
 * chunk index is j ^ (lane / 4), so every offset is this thread's base with an
 * immediate XORed in (kq_offset) and 1024 h added. A warp's 32 stores of one
 * (j, h) hit 32 distinct banks.
 */
__device__ __forceinline__ uint32_t kq_base(int key0, int warp, int lane)
{
    const int row = key0 + 16 * warp + lane / 4;
    return static_cast<uint32_t>(row * 128 + (lane / 4) * 16 + 4 * (lane % 4));
}

/* j: the query chunk (8 queries) within the 64-query row. */
__device__ __forceinline__ uint32_t kq_offset(uint32_t base, int j, int h)
{
    return (base ^ static_cast<uint32_t>(16 * j)) + 1024 * h;
}

/* The thread's kSN / 4 values of a row buffer (lse_log2 or dpsum) from
 * `addr`, the value of its first query column (j = 0, e = 0): pairs j at 32 j
 * bytes. */
template <class Cfg>
__device__ __forceinline__ void bwd_load_row(float2 (&v)[Cfg::kSN / 8], uint32_t addr)
{
#pragma unroll
    for (int j = 0; j < Cfg::kSN / 8; ++j)
        v[j] = ld_shared_f32x2(addr + 32 * j);
}

/* The soft-cap's factors for bwd_probs_chunk: tanh's argument is the score
 * times pre, the capped score tanh times post (both 0 without a soft-cap). */
struct BwdSoftcap {
    float pre, post;
};

__device__ __forceinline__ BwdSoftcap bwd_softcap(const mgpu_attention_bwd_args &a)
{
    return {a.softcap > 0.f ? a.softmax_scale / a.softcap : 0.f, a.softcap > 0.f ? a.softcap / a.softmax_scale : 0.f};
}

/* P^T = exp2(S^T scale_log2 - lse_log2) of the thread's query chunk j
 * (columns 8 j + 2 (lane % 4) + {0, 1}, whose lse_log2 values are lse),
 * unmasked: pr gets it as 16-bit pairs (the A operand of dV), st keeps P^T
 * times the soft-cap derivative for dS. Cfg::kPolyExp2Every > 0: every
 * kPolyExp2Every-th chunk's exponentials on the FMA pipe (poly_exp2), the
 * others on the MUFU unit. */
template <class Cfg, bool kSoftcap>
__device__ __forceinline__ void bwd_probs_chunk(float (&st)[Cfg::kSN / 2], uint32_t (&pr)[Cfg::kSN / 4], int j,
                                                float2 lse, float scale_log2, float pre, float post)
{
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float pv[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            float x = st[4 * j + 2 * h + e];
            float grad = 1.f;
            if constexpr (kSoftcap) {
                const float t = fast_tanh(x * pre);
                x = post * t;
                grad = 1.f - t * t;
            }
            const float arg = fmaf(x, scale_log2, -(e == 0 ? lse.x : lse.y));
            float pe;
            if constexpr (Cfg::kPolyExp2Every > 0)
                pe = j % Cfg::kPolyExp2Every == Cfg::kPolyExp2Every - 1 ? poly_exp2(arg) : fast_exp2(arg);
            else
                pe = fast_exp2(arg);
            pv[e] = pe;
            st[4 * j + 2 * h + e] = kSoftcap ? pe * grad : pe;
        }
        pr[2 * j + h] = pack2<typename Cfg::T>(pv[0], pv[1]);
    }
}

/* P^T of the thread's whole fragment, lse_log2 read from shared memory where
 * it is used: lse_addr is the value of the thread's first query column (j =
 * 0, e = 0). */
template <class Cfg, bool kSoftcap>
__device__ __forceinline__ void bwd_probs(float (&st)[Cfg::kSN / 2], uint32_t (&pr)[Cfg::kSN / 4], uint32_t lse_addr,
                                          float scale_log2, float pre, float post)
{
#pragma unroll
    for (int j = 0; j < Cfg::kSN / 8; ++j)
        bwd_probs_chunk<Cfg, kSoftcap>(st, pr, j, ld_shared_f32x2(lse_addr + 32 * j), scale_log2, pre, post);
}

/* The same with the lse_log2 values already in registers (bwd_load_row). */
template <class Cfg, bool kSoftcap>
__device__ __forceinline__ void bwd_probs_rows(float (&st)[Cfg::kSN / 2], uint32_t (&pr)[Cfg::kSN / 4],
                                               const float2 (&lse_row)[Cfg::kSN / 8], float scale_log2, float pre,
                                               float post)
{
#pragma unroll
    for (int j = 0; j < Cfg::kSN / 8; ++j)
        bwd_probs_chunk<Cfg, kSoftcap>(st, pr, j, lse_row[j], scale_log2, pre, post);
}

/* Zeroes P^T (st and the 16-bit pr) where query row c0 + 8 j + e may not
 * see key my_key + 8 h. The mask's key interval of a row, turned into the
 * row interval [lo, hi) of each of the thread's two keys: every row r keeps
 * a key k iff r < seqlen_q, k < seqlen_k, k >= r + diag - window_left (left
 * window) and k <= r + diag + window_right (right window, causal), i.e.
 * max(0, k - diag - window_right) <= r < min(seqlen_q, k - diag + 1 +
 * window_left) (clamped so that no window size overflows). Taken relative
 * to c0, each score compares them with its constant offset 8 j + e:
 * branch-free, no row index in a register. */
template <class Cfg>
__device__ __forceinline__ void bwd_mask(float (&st)[Cfg::kSN / 2], uint32_t (&pr)[Cfg::kSN / 4],
                                         const AttnBwdWork &w, int my_key, int c0)
{
    const AttnMask &mk = w.mask;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int key = my_key + 8 * h;
        const int t = key - mk.diag; /* rows r with r + diag == key */
        int hi = w.seqlen_q;
        if (mk.window_left >= 0 && mk.window_left < w.seqlen_q - t)
            hi = t + 1 + mk.window_left;
        if (key >= mk.seqlen_k)
            hi = 0;
        const int lo = mk.window_right >= 0 && mk.window_right < t ? t - mk.window_right : 0;
        const int rlo = lo - c0, rhi = hi - c0;
#pragma unroll
        for (int j = 0; j < Cfg::kSN / 8; ++j) {
            uint32_t keep = 0xffffffffu;
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int r = 8 * j + e;
                if (r < rlo || r >= rhi) {
                    st[4 * j + 2 * h + e] = 0.f;
                    keep &= e == 0 ? 0xffff0000u : 0x0000ffffu;
                }
            }
            pr[2 * j + h] &= keep;
        }
    }
}

/* The split head dims' loop (192, 256: kSplitDim), one barrier between the
 * consumers per block (the table at the top of this file). Consumer c holds
 * the dK, dV and dQ columns [col0, col0 + kDqCols). S^T of block i + 1 is
 * issued at the end of block i, once dV and dK of block i are complete, and
 * runs while dQ(i) leaves: 16 S^T registers beside dK, dV and a 64-column
 * dQ, which fit in 240 without local memory since the K descriptors are not
 * hoisted out of the loop (issue_xt). */
template <class Cfg, int kDqCols>
__device__ __forceinline__ void attn_bwd_consumer_split(const mgpu_attention_bwd_args &a,
                                                        typename Cfg::SharedStorage &smem, const AttnBwdWork &w,
                                                        int consumer)
{
    static_assert(Cfg::kSplitDim && !Cfg::kKVFrags, "the split head dims' loop");
    constexpr int kSN = Cfg::kSN;
    constexpr int kKV = kDqCols; /* dK / dV columns held */
    const int thread = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    const int warp = thread / 32, lane = thread % 32;
    const int col0 = consumer == 0 ? 0 : Cfg::kCols0; /* head-dim columns of dQ, dK, dV */
    constexpr int key0 = 0;                           /* S^T rows: all the block's keys */
    const int qcol0 = kSN * consumer;                 /* S^T columns: queries within the block */

    float dk[kKV / 2], dv[kKV / 2];
#pragma unroll
    for (int i = 0; i < kKV / 2; ++i)
        dk[i] = dv[i] = 0.f;

    const BwdSoftcap cap = bwd_softcap(a);
    const float pre = cap.pre, post = cap.post;
    const uint32_t k_tile = smem_u32(smem.k), v_tile = smem_u32(smem.v);
    const uint32_t k_rows = k_tile + key0 * Cfg::kSwizzleBytes, v_rows = v_tile + key0 * Cfg::kSwizzleBytes;
    const int key_first = w.n_block * Cfg::kBlockN; /* first key of the block in the sequence */
    /* This thread's keys (S^T rows) h = 0, 1. */
    const int my_key = key_first + key0 + 16 * warp + lane / 4;
    const uint32_t kq = kq_base(key0, warp, lane);

    if (w.m_block_begin < w.m_block_end) {
        /* The first block's rows, published by one bar(ds) before the loop. */
        attn_bwd_rows_issue<Cfg>(a, smem, w, w.m_first, 0, consumer, thread);
        cp_async_wait_all(); /* this thread's row copies have landed */
        __syncwarp();
        bwd_barrier_sync(kBwdBarrierDs, Cfg::kConsumerThreads);
        mbar_wait(&smem.kv_full, 0);
        const uint32_t no_frags[1] = {0}; /* issue_xt's register A: unused here */
        /* S^T of the first block; every later one is issued at the end of the
         * previous iteration, so that it runs while that block's dQ leaves. */
        float st[kSN / 2];
        mbar_wait(&smem.q_full[0], 0);
        wgmma_fence();
        issue_xt<Cfg>(st, no_frags, k_rows, smem_u32(smem.q[0]) + qcol0 * Cfg::kSwizzleBytes);
        wgmma_commit_group();
        wgmma_wait_group<0>();
        wgmma_fence_operands(st);

        /* Walked to a stop value (not counted with i as the other loops are:
         * that form spilled a register at head dim 256). */
        const int m_stop = w.m_step > 0 ? w.m_block_end : w.m_block_begin - 1;
        int i = 0;
        for (int m = w.m_first; m != m_stop; m += w.m_step, ++i) {
            const int s = i % Cfg::kStages;
            const uint32_t parity = (i / Cfg::kStages) & 1;
            const uint32_t q_tile = smem_u32(smem.q[s]), do_tile = smem_u32(smem.dout[s]);
            const uint32_t ds_buf = smem_u32(smem.ds[i % 2]);
            const int rb = i % 2; /* row buffer of this block */
            const bool has_next = m + w.m_step != m_stop;
            /* The next block's rows: copied now, complete before this block's bar(ds). */
            if (has_next)
                attn_bwd_rows_issue<Cfg>(a, smem, w, m + w.m_step, (i + 1) % 2, consumer, thread);

            /* This block's rows are complete since the bar(ds) of the block
             * before; P^T and dS^T read them where they use them. */
            float dpt[kSN / 2];
            mbar_wait(&smem.do_full[s], parity);
            wgmma_fence();
            issue_xt<Cfg>(dpt, no_frags, v_rows, do_tile + qcol0 * Cfg::kSwizzleBytes);
            wgmma_commit_group();
            wgmma_fence_operands(st);

            /* P^T = exp2(S^T scale_log2 - lse_log2), masked to 0; st keeps P^T
             * times the soft-cap derivative for dS. */
            const int row_first = m * Cfg::kBlockM; /* first query of the block */
            const bool masked = row_first + Cfg::kBlockM > w.seqlen_q ||
                                key_first + Cfg::kBlockN > w.mask.key_end(row_first) ||
                                key_first < w.mask.key_begin(row_first + Cfg::kBlockM - 1);
            uint32_t pr[kSN / 4];
            {
                const uint32_t lse_addr = smem_u32(&smem.lse[rb][qcol0 + 2 * (lane % 4)]);
                if (a.softcap > 0.f)
                    bwd_probs<Cfg, true>(st, pr, lse_addr, a.scale_log2, pre, post);
                else
                    bwd_probs<Cfg, false>(st, pr, lse_addr, a.scale_log2, pre, post);
            }
            if (masked) /* only blocks on a mask edge or the end of the queries */
                bwd_mask<Cfg>(st, pr, w, my_key, row_first + qcol0 + 2 * (lane % 4));
#pragma unroll
            for (int j = 0; j < kSN / 8; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    st_shared_u32(smem_u32(smem.p[i % 2]) + kq_offset(kq, qcol0 / 8 + j, h), pr[2 * j + h]);
            wgmma_fence_operands(dpt);
            wgmma_wait_group<0>();
            wgmma_fence_operands(dpt);

            /* dS^T = P^T (dP^T - dpsum) [soft-cap derivative], 16-bit, into ds. */
            uint32_t dsr[kSN / 4];
#pragma unroll
            for (int j = 0; j < kSN / 8; ++j) {
                const float2 dp_sum = ld_shared_f32x2(smem_u32(&smem.dpsum[rb][qcol0 + 8 * j + 2 * (lane % 4)]));
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float d0 = st[4 * j + 2 * h] * (dpt[4 * j + 2 * h] - dp_sum.x);
                    const float d1 = st[4 * j + 2 * h + 1] * (dpt[4 * j + 2 * h + 1] - dp_sum.y);
                    dsr[2 * j + h] = pack2<typename Cfg::T>(d0, d1);
                    st_shared_u32(ds_buf + kq_offset(kq, qcol0 / 8 + j, h), dsr[2 * j + h]);
                }
            }

            cp_async_wait_all(); /* this thread's row copies have landed */
            fence_smem_to_async();
            __syncwarp(); /* bar.sync with converged warps (the mask pass may branch) */
            bwd_barrier_sync(kBwdBarrierDs, Cfg::kConsumerThreads);
            wgmma_fence();
            float dq[kDqCols / 2];
            /* S^T of block i + 1 into st, its Q stage waited for when it has one. */
            auto issue_next_st = [&] {
                const int s1 = (i + 1) % Cfg::kStages;
                if (has_next)
                    mbar_wait(&smem.q_full[s1], ((i + 1) / Cfg::kStages) & 1);
                __syncwarp();
                wgmma_fence();
                issue_xt<Cfg>(st, no_frags, k_rows, smem_u32(smem.q[s1]) + qcol0 * Cfg::kSwizzleBytes);
                wgmma_commit_group();
                wgmma_fence_operands(st);
            };
            const uint32_t p_buf = smem_u32(smem.p[i % 2]);
            issue_kv_ss<Cfg, kKV>(dv, p_buf, do_tile, col0);
            issue_kv_ss<Cfg, kKV>(dk, ds_buf, q_tile, col0);
            wgmma_commit_group();
            wgmma_fence_operands(dv);
            wgmma_fence_operands(dk);
            issue_dq<Cfg, kDqCols>(dq, ds_buf, k_tile, col0);
            wgmma_commit_group();
            wgmma_fence_operands(dq);
            /* S^T of the next block (on the idle stage after the last
             * block: no divergent wgmma path) runs while dQ leaves. */
            issue_next_st();
            wgmma_wait_group<1>(); /* dV, dK, dQ */
            wgmma_fence_operands(dq);
            wgmma_fence_operands(dk);
            wgmma_fence_operands(dv);
            /* dQ through this consumer's columns of the stage's Q and dO
             * tiles (read by nothing else any more) and bulk reductions. */
            attn_bwd_stage_dq_split<Cfg, kDqCols>(q_tile, do_tile, col0, dq);
            /* the split dQ writer adds the staged boxes and releases the stage */
            __syncwarp();
            if (lane == 0)
                mbar_arrive(&smem.dq_full[s]);
            __syncwarp();
            /* The next S^T is complete before the loop's back edge (an
             * accumulator still in flight across it makes the compiler
             * serialize every wgmma); its P then overlaps dP^T. */
            wgmma_wait_group<0>();
            wgmma_fence_operands(st);
        }
    }

    attn_bwd_store_dkv<Cfg, kKV>(a, w, key0, col0, dk, dv, consumer);
}

/*
 * Cfg::kDeferDq (head dims <= 128 with the dQ writer): the consumers' loop
 * with dQ deferred by one block, so that the two consumers need not meet at
 * each block and may run up to about half a block apart, one's exponentials
 * under the other's products. Block i of consumer c:
 *
 *   [S^T(i) complete]  rows of block i + 1 (this warp's own buffer)
 *   g1 dP^T(i) (dpsum - V dO^T)   [kDqPublishLate: dQ(i - 2), stored in the
 *     block before, to the writer (fence.proxy.async, arrive dq_full)]
 *   P^T(i)   g2 dV += P^T dO
 *   wait g1; bar.sync ann[other][(i - 1) % 2]: the other's dS^T(i - 1) is in
 *     ds[(i - 1) % 2] and its dQ(i - 2) has read ds[i % 2]
 *   dS^T(i) -> registers and ds[i % 2]   g3 dK += dS^T Q   fence.proxy.async
 *   g4 dQ(i - 1) = dS(i - 1) K_c (both consumers' halves)
 *   wait g2, g3: release Q[s], dO[s]; g5 S^T(i + 1)
 *   wait g4: dQ(i - 1) stored in the writer's buffer (and handed to it, unless
 *     kDqPublishLate); bar.arrive ann[c][i % 2]
 *   wait g5
 *
 * and after the last block L: bar.sync ann[other][L % 2], dQ(L). Each
 * announcement covers both hazards of the two dS^T buffers (the other's
 * half of block i - 1 written, its read of block i - 2 done), so the
 * consumers share no other per-block barrier. The lse_log2 / dpsum rows come
 * to each warp itself (head dim 64: its own pair of shared buffers, cp.async
 * by its lanes, cp.async.wait_all and __syncwarp; 128: registers loaded a
 * block ahead and shuffled): no barrier between warps. Consumer 1
 * starts its first P^T once consumer 0 has issued its first dV (bar.sync
 * stagger), half a block behind. The dQ writer sees the blocks in the same
 * order as with kDeferDq = 0.
 */
template <class Cfg>
__device__ __forceinline__ void attn_bwd_rows_issue_warp(const mgpu_attention_bwd_args &a,
                                                         typename Cfg::SharedStorage &smem, const AttnBwdWork &w,
                                                         int m, int b, int gwarp, int lane)
{
    static_assert(Cfg::kBlockM == 64, "two row values per lane");
    const int64_t off = w.q_row0 + static_cast<int64_t>(m) * Cfg::kBlockM + 2 * lane;
    const float *lse = reinterpret_cast<const float *>(a.lse_log2) + off;
    const float *dps = reinterpret_cast<const float *>(a.dpsum) + off;
    const uint32_t buf = 2 * gwarp + b;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_u32(&smem.lse[buf][2 * lane])), "l"(lse)
                 : "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_u32(&smem.dpsum[buf][2 * lane])), "l"(dps)
                 : "memory");
}

/* kRowsInRegs: lane l's values 2 l, 2 l + 1 of query block m's lse_log2 and
 * dpsum rows (read-only here: written by the preprocess pass), loaded a
 * block before they are used. */
template <class Cfg>
__device__ __forceinline__ float4 bwd_rows_lane(const mgpu_attention_bwd_args &a, const AttnBwdWork &w, int m,
                                                int lane)
{
    const int64_t off = w.q_row0 + static_cast<int64_t>(m) * Cfg::kBlockM + 2 * lane;
    float4 v;
    asm volatile("ld.global.nc.v2.f32 {%0, %1}, [%2];\n"
                 : "=f"(v.x), "=f"(v.y)
                 : "l"(reinterpret_cast<const float *>(a.lse_log2) + off));
    asm volatile("ld.global.nc.v2.f32 {%0, %1}, [%2];\n"
                 : "=f"(v.z), "=f"(v.w)
                 : "l"(reinterpret_cast<const float *>(a.dpsum) + off));
    return v;
}

/* The thread's query-column pairs j (columns 8 j + 2 (lane % 4), + 1: lane
 * 4 j + lane % 4's values) of both rows, from the lanes' bwd_rows_lane. */
template <class Cfg>
__device__ __forceinline__ void bwd_rows_shuffle(float2 (&lse)[Cfg::kSN / 8], float2 (&dps)[Cfg::kSN / 8],
                                                 const float4 &v, int lane)
{
#pragma unroll
    for (int j = 0; j < Cfg::kSN / 8; ++j) {
        const int src = 4 * j + lane % 4;
        lse[j] = make_float2(__shfl_sync(0xffffffffu, v.x, src), __shfl_sync(0xffffffffu, v.y, src));
        dps[j] = make_float2(__shfl_sync(0xffffffffu, v.z, src), __shfl_sync(0xffffffffu, v.w, src));
    }
}

template <class Cfg>
__device__ __forceinline__ void attn_bwd_consumer_deferred(const mgpu_attention_bwd_args &a,
                                                           typename Cfg::SharedStorage &smem, const AttnBwdWork &w,
                                                           int consumer)
{
    static_assert(!Cfg::kSplitDim && Cfg::kDqWriter, "the deferred-dQ loop: whole key rows, the dQ writer");
    /* One copy of the loop for both consumers: at head dim 96 consumer 1
     * computes kCols0 dQ columns from kCols0 (inside the K tile) and stores
     * its kCols1, as the per-block loop does. */
    static_assert(Cfg::kCols0 >= Cfg::kCols1 && 2 * Cfg::kCols0 <= Cfg::kDimBlocks * Cfg::kSwizzleElems,
                  "consumer 1's dQ columns inside the K tile");
    constexpr int kSN = Cfg::kSN;
    constexpr int kKV = Cfg::kHeadDim;
    constexpr int kDqCols = Cfg::kCols0;
    /* The thread's index, read afresh where used: values derived from it
     * (row offsets, keys, buffer addresses) are recomputed at each use
     * rather than held across the loop, whose registers the accumulators
     * need (held, they spilled at head dim 128). */
    const auto tid = [] {
        if constexpr (Cfg::kRowsInRegs)
            return static_cast<int>(opaque_tid_x()) % Cfg::kWarpgroupThreads;
        else
            return static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    };
    const int other = 1 - consumer;
    const int col0 = consumer == 0 ? 0 : Cfg::kCols0;
    const int key0 = Cfg::kSM * consumer;        /* this consumer's keys within the block */
    const int key_first = w.n_block * Cfg::kBlockN; /* the block's first key in the sequence */
    const uint32_t k_tile = smem_u32(smem.k), v_tile = smem_u32(smem.v);
    const uint32_t k_rows = k_tile + key0 * Cfg::kSwizzleBytes, v_rows = v_tile + key0 * Cfg::kSwizzleBytes;
    const BwdSoftcap cap = bwd_softcap(a);
    const float pre = cap.pre, post = cap.post;

    float dk[kKV / 2], dv[kKV / 2];
#pragma unroll
    for (int i = 0; i < kKV / 2; ++i)
        dk[i] = dv[i] = 0.f;

    if (w.m_block_begin < w.m_block_end) {
        float4 rows_next = make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (Cfg::kRowsInRegs)
            rows_next = bwd_rows_lane<Cfg>(a, w, w.m_first, tid() % 32);
        else
            attn_bwd_rows_issue_warp<Cfg>(a, smem, w, w.m_first, 0, 4 * consumer + tid() / 32, tid() % 32);
        mbar_wait(&smem.kv_full, 0);
        uint32_t k_frags[Cfg::kKVFragRegs], v_frags[Cfg::kKVFragRegs];
        if constexpr (Cfg::kKVFrags) {
            bwd_load_a_frags<Cfg>(k_frags, k_rows, tid() / 32, tid() % 32);
            bwd_load_a_frags<Cfg, true>(v_frags, v_rows, tid() / 32, tid() % 32);
        } else {
            k_frags[0] = v_frags[0] = 0;
        }
        float st[kSN / 2];
        mbar_wait(&smem.q_full[0], 0);
        wgmma_fence();
        issue_xt<Cfg>(st, k_frags, k_rows, smem_u32(smem.q[0]));
        wgmma_commit_group();
        wgmma_wait_group<0>();
        wgmma_fence_operands(st);
        if (consumer == 1)
            bwd_barrier_sync(kBwdBarrierStagger, Cfg::kConsumerThreads);
        MGPU_ATTN_BWD_STAMP(kBwdTlLoopBegin, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0);

        const int count = w.m_block_end - w.m_block_begin;
        int i = 0;
        for (int m = w.m_first; i < count; ++i, m += w.m_step) {
            const int s = i % Cfg::kStages;
            const uint32_t parity = (i / Cfg::kStages) & 1;
            const uint32_t q_tile = smem_u32(smem.q[s]), do_tile = smem_u32(smem.dout[s]);
            const bool has_next = i + 1 < count;
            float2 lse_row[kSN / 8], dps[kSN / 8];
            const int lane = tid() % 32;
            if constexpr (Cfg::kRowsInRegs) {
                bwd_rows_shuffle<Cfg>(lse_row, dps, rows_next, lane);
                if (has_next)
                    rows_next = bwd_rows_lane<Cfg>(a, w, m + w.m_step, lane);
            } else {
                cp_async_wait_all(); /* this warp's rows of block i */
                __syncwarp();        /* every lane's copies landed; every lane is done with block i - 1's */
                const int gwarp = 4 * consumer + tid() / 32; /* row buffers 2 gwarp + i % 2 */
                const int rb = 2 * gwarp + i % 2;
                if (has_next)
                    attn_bwd_rows_issue_warp<Cfg>(a, smem, w, m + w.m_step, (i + 1) % 2, gwarp, lane);
                bwd_load_row<Cfg>(lse_row, smem_u32(&smem.lse[rb][2 * (lane % 4)]));
                bwd_load_row<Cfg>(dps, smem_u32(&smem.dpsum[rb][2 * (lane % 4)]));
            }
            /* dP^T's accumulator starts as the dpsum values (each query's in
             * both of the thread's keys): it ends as dpsum - dP^T. */
            float dpt[kSN / 2];
#pragma unroll
            for (int j = 0; j < kSN / 8; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    dpt[4 * j + 2 * h] = dps[j].x;
                    dpt[4 * j + 2 * h + 1] = dps[j].y;
                }
            MGPU_ATTN_BWD_TIMED_STEP(kBwdTlDoFull, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                                     mbar_wait(&smem.do_full[s], parity));
            wgmma_fence();
            issue_xt<Cfg, true>(dpt, v_frags, v_rows, do_tile);
            wgmma_commit_group();
            /* kDqPublishLate: dQ(i - 2), stored at the end of the block
             * before, to the writer: its stores have completed by now, so the
             * fence does not wait. */
            if (Cfg::kDqPublishLate && i >= 2)
                attn_bwd_publish_dq<Cfg>(smem, i - 2);
            wgmma_fence_operands(st);

            const int row_first = m * Cfg::kBlockM;
            const bool masked = row_first + Cfg::kBlockM > w.seqlen_q ||
                                key_first + Cfg::kBlockN > w.mask.key_end(row_first) ||
                                key_first < w.mask.key_begin(row_first + Cfg::kBlockM - 1);
            uint32_t pr[kSN / 4];
            if (a.softcap > 0.f)
                bwd_probs_rows<Cfg, true>(st, pr, lse_row, a.scale_log2, pre, post);
            else
                bwd_probs_rows<Cfg, false>(st, pr, lse_row, a.scale_log2, pre, post);
            if (masked) {
                const int t = tid();
                bwd_mask<Cfg>(st, pr, w, key_first + key0 + 16 * (t / 32) + t % 32 / 4, row_first + 2 * (t % 4));
            }

            /* dV += P^T dO */
            wgmma_fence();
            issue_kv_rs<Cfg>(dv, pr, do_tile);
            wgmma_commit_group();
            if (i == 0 && consumer == 0)
                bwd_barrier_arrive(kBwdBarrierStagger, Cfg::kConsumerThreads);
            wgmma_fence_operands(dv);
            wgmma_fence_operands(pr);
            wgmma_fence_operands(dpt);
            MGPU_ATTN_BWD_TIMED_STEP(kBwdTlWaitDpt, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                                     wgmma_wait_group<1>());
            wgmma_fence_operands(dpt);

            /* The other consumer's dS^T(i - 1) is published and its dQ(i - 2)
             * no longer reads ds[i % 2]. */
            __syncwarp();
            if (i > 0)
                MGPU_ATTN_BWD_TIMED(kBwdTlAnnounce0 + consumer, opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                                    bwd_barrier_sync(kBwdBarrierAnnounce + 2 * other + (i - 1) % 2,
                                                     Cfg::kConsumerThreads));

            const uint32_t ds_buf = smem_u32(smem.ds[i % 2]);
            const uint32_t kq = kq_base(key0, tid() / 32, tid() % 32);
            uint32_t dsr[kSN / 4];
#pragma unroll
            for (int j = 0; j < kSN / 8; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float d0 = st[4 * j + 2 * h] * -dpt[4 * j + 2 * h];
                    const float d1 = st[4 * j + 2 * h + 1] * -dpt[4 * j + 2 * h + 1];
                    dsr[2 * j + h] = pack2<typename Cfg::T>(d0, d1);
                    st_shared_u32(ds_buf + kq_offset(kq, j, h), dsr[2 * j + h]);
                }

            /* dK += dS^T Q */
            wgmma_fence();
            issue_kv_rs<Cfg>(dk, dsr, q_tile);
            wgmma_commit_group();
            wgmma_fence_operands(dk);
            wgmma_fence_operands(dsr);
            fence_smem_to_async(); /* dS^T(i) for both consumers' dQ(i) (wgmma reads) */

            /* dQ(i - 1); at block 0 on ds[1], which no one writes before both
             * consumers have announced block 0 (result unused): no divergent
             * wgmma path, so the compiler keeps the groups asynchronous. */
            float dq[kDqCols / 2];
            wgmma_fence();
            issue_dq<Cfg, kDqCols>(dq, smem_u32(smem.ds[(i + 1) % 2]), k_tile, col0);
            wgmma_commit_group();
            wgmma_fence_operands(dq);
            MGPU_ATTN_BWD_TIMED_STEP(kBwdTlWaitDkv, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                                     wgmma_wait_group<1>()); /* dV, dK */
            wgmma_fence_operands(dk);
            wgmma_fence_operands(dv);
            /* Q and dO of this stage are no longer read. */
            __syncwarp();
            if (tid() % 32 == 0) {
                mbar_arrive(&smem.q_empty[s]);
                mbar_arrive(&smem.do_empty[s]);
            }
            __syncwarp();
            /* S^T of block i + 1 (after the last block: on the idle stage,
             * result unused; no divergent wgmma path). */
            {
                const int s1 = (i + 1) % Cfg::kStages;
                if (has_next)
                    MGPU_ATTN_BWD_TIMED_STEP(kBwdTlQFull, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                                             mbar_wait(&smem.q_full[s1], ((i + 1) / Cfg::kStages) & 1));
                __syncwarp();
                wgmma_fence();
                issue_xt<Cfg>(st, k_frags, k_rows, smem_u32(smem.q[s1]));
                wgmma_commit_group();
                wgmma_fence_operands(st);
            }
            MGPU_ATTN_BWD_TIMED_STEP(kBwdTlWaitDq, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                                     wgmma_wait_group<1>()); /* dQ(i - 1) */
            wgmma_fence_operands(dq);
            if (i > 0) {
                MGPU_ATTN_BWD_TIMED_STEP(kBwdTlDqStores, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                                         attn_bwd_store_dq<Cfg, kDqCols>(smem, i - 1, col0,
                                                                         consumer == 0 ? Cfg::kCols0 : Cfg::kCols1,
                                                                         dq));
                if constexpr (!Cfg::kDqPublishLate)
                    attn_bwd_publish_dq<Cfg>(smem, i - 1);
            }
            __syncwarp();
            bwd_barrier_arrive(kBwdBarrierAnnounce + 2 * consumer + i % 2, Cfg::kConsumerThreads);
            MGPU_ATTN_BWD_TIMED_STEP(kBwdTlWaitSt, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                                     wgmma_wait_group<0>());
            wgmma_fence_operands(st);
        }
        /* dQ of the last block, once the other consumer's half is in. */
        const int last = i - 1;
        if (Cfg::kDqPublishLate && last >= 1)
            attn_bwd_publish_dq<Cfg>(smem, last - 1);
        bwd_barrier_sync(kBwdBarrierAnnounce + 2 * other + last % 2, Cfg::kConsumerThreads);
        float dq[kDqCols / 2];
        wgmma_fence();
        issue_dq<Cfg, kDqCols>(dq, smem_u32(smem.ds[last % 2]), k_tile, col0);
        wgmma_commit_group();
        wgmma_wait_group<0>();
        wgmma_fence_operands(dq);
        MGPU_ATTN_BWD_TIMED_STEP(kBwdTlDqStores, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                                 attn_bwd_stage_dq<Cfg, kDqCols>(smem, last, col0,
                                                                 consumer == 0 ? Cfg::kCols0 : Cfg::kCols1, dq));
        MGPU_ATTN_BWD_STAMP(kBwdTlLoopEnd0 + consumer, opaque_tid_x() % Cfg::kWarpgroupThreads == 0);
    }

    attn_bwd_store_dkv<Cfg, kKV>(a, w, key0, 0, dk, dv, consumer);
    MGPU_ATTN_BWD_STAMP(kBwdTlDkvStored, consumer == 0 && opaque_tid_x() % Cfg::kWarpgroupThreads == 0);
}

template <class Cfg>
__device__ __forceinline__ void attn_bwd_consumer(const mgpu_attention_bwd_args &a, typename Cfg::SharedStorage &smem,
                                                  const AttnBwdWork &w, int consumer)
{
    /* One copy of the loop for both consumers (half the code for the
     * instruction cache), except at head dim 192 whose split column ranges
     * (128 and 64) need one each. */
    static_assert(Cfg::kDeferDq != Cfg::kSplitDim, "head dims <= 128 defer dQ, the split ones do not");
    if constexpr (Cfg::kDeferDq) {
        attn_bwd_consumer_deferred<Cfg>(a, smem, w, consumer);
    } else if constexpr (Cfg::kCols0 == Cfg::kCols1) {
        attn_bwd_consumer_split<Cfg, Cfg::kCols0>(a, smem, w, consumer);
    } else {
        if (consumer == 0)
            attn_bwd_consumer_split<Cfg, Cfg::kCols0>(a, smem, w, consumer);
        else
            attn_bwd_consumer_split<Cfg, Cfg::kCols1>(a, smem, w, consumer);
    }
}

} // namespace sm90
} // namespace mgpu
