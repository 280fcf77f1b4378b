/*
 * Hopper (sm_90a) flash-attention backward: the main kernel's shell.
 *
 * Schedule (FlashAttention-3 style). One CTA per (key block n, query head h,
 * sequence b), in the ABI's grid order (kernels/abi/attention_bwd_abi.h: the
 * key blocks of a group of pairs (b, h), key block by key block).
 * 384 threads = 3 warpgroups:
 *
 *   warpgroup 0 (setmaxnreg down to kProducerRegisters):
 *     thread 0, producer: loads K[n] and V[n] once (kv_full), then for
 *     every query block m the mask leaves for this key block, in decreasing
 *     m (key_blocks_down: increasing), into stage s = i % kStages (i counts
 *     the blocks): Q[m] (waits
 *     q_empty[s], arms q_full[s]) and dO[m] (do_empty[s] / do_full[s]). TMA
 *     tiles (128-byte swizzle) for Q, K, V, dO.
 *     thread 32, dQ writer (head dims <= 128): one bulk reduction of
 *     each query block's dQ tile from a shared buffer into dq_accum; in
 *     deterministic mode it waits for the block's turn. Head dims 192, 256:
 *     the tensor reductions of the dQ boxes the consumers staged in stage s
 *     (dq_full[s]; deterministic: after the block's turn), then it releases
 *     q_empty[s] / do_empty[s] (their one arrival) once they have read them.
 *   warpgroups 1 and 2, consumers (setmaxnreg up to kConsumerRegisters), per
 *     query block (attention_bwd_mainloop.cuh has the instruction order):
 *       S^T = K Q^T, dP^T = dO-side V dO^T     (wgmma, both operands in smem;
 *                                               head dims 64, 128: dpsum - V dO^T,
 *                                               the accumulator starting as dpsum)
 *       P^T = exp2(S^T scale_log2 - lse_log2)  (soft-cap, mask: P = 0)
 *       dV += P^T dO                           (wgmma)
 *       dS^T = P^T (dP^T - dpsum) [1 - tanh^2] -> 16-bit, into shared memory
 *       dK += dS^T Q                           (wgmma)
 *       dQ(m) = dS K                           (wgmma, both consumers' dS)
 *       S^T of the next block                  (issued before dQ(m) leaves)
 *     then each warp arrives on q_empty[s] and do_empty[s] (8 arrivals), and
 *     dQ(m) goes to the writer's shared buffer (head dims <= 128) or (192,
 *     256) is staged in the consumer's own column blocks of stage s's Q and
 *     dO tiles (free once its dK, dV are complete) as one dense 16-row box
 *     (or two) per warp of the dq_accum tensor map (tmap_dq); each warp
 *     arrives on dq_full[s] (instead of q_empty / do_empty) and the dQ
 *     writer adds the boxes into the fp32 dq_accum with one tensor bulk
 *     reduction each (deterministic: in the block's turn, so the consumers
 *     never wait for a turn inside the loop) and releases the stage.
 *     The kBlockM lse_log2 and dpsum values of each block: head dims 192,
 *     256 copy them with warp 0 of each consumer (cp.async) during the block
 *     before into one of two row buffers, complete before that block's
 *     bar(ds) (named barriers order them); head dims <= 128 per warp (the
 *     deferred-dQ loop).
 *     Two layouts of the work between the consumers (AttnBwdTile):
 *       kSplitDim = 0 (head dims <= 128, kBlockN = 128): consumer c owns keys
 *         [64c, 64c + 64): S^T, dP^T are 64 x kBlockM per consumer, P^T and
 *         dS^T stay in registers as the A operand of dV, dK (head_dim / 2 fp32
 *         accumulators each); only dS^T goes to shared memory, for dQ.
 *       kSplitDim = 1 (head dims 192, 256, kBlockN = 64): consumer c computes
 *         the query columns [32c, 32c + 32) of S^T, dP^T for all 64 keys,
 *         writes P^T and dS^T to shared memory, and owns a column range of
 *         dV, dK and dQ (dK, dV then fit in registers).
 *     dQ's columns are split between the consumers in both layouts. With
 *     kSplitDim a named barrier over the 256 consumer threads publishes each
 *     dS^T (two buffers, so one barrier per query block suffices); without,
 *     each consumer computes a block's dQ one block later and waits only for
 *     the other's announcement that its half of that dS^T is written
 *     (attn_bwd_consumer_deferred, decision 073).
 *   Epilogue: dK (times softmax_scale) and dV straight from registers: 16-bit
 *   stores clipped to seqlen_k when group_size == 1, else fp32 adds into
 *   dk_accum / dv_accum (deterministic: query-head order behind dkv_semaphore).
 *
 * Query blocks that the causal / sliding-window mask removes entirely are never
 * loaded (loop bounds); blocks that straddle a mask edge, the end of the keys or
 * of the queries are masked in registers.
 *
 * A generated unit instantiates one variant:
 *   extern "C" __global__ void __launch_bounds__(384, 1)
 *   mgpu_attention_bwd_sm90_bf16_d128(const __grid_constant__ mgpu_attention_bwd_params p)
 *   { mgpu::sm90::attention_bwd<mgpu::sm90::AttnBwdConfig<__nv_bfloat16, 128>>(p); }
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>
#include <type_traits>

#include "abi/attention_bwd_abi.h"
#include "common/async_copy.cuh"
#include "common/barrier.cuh"
#include "common/numeric.cuh"
#include "common/shared_memory.cuh"
#include "common/thread_index.cuh"
#include "hopper/attention_bwd_tile_size.cuh"
#include "hopper/attention_bwd_timeline.cuh"
#include "hopper/attention_fwd_mask.cuh"    /* AttnMask */
#include "hopper/attention_fwd_softmax.cuh" /* fast_exp2, fast_tanh */
#include "hopper/warpgroup.cuh"
#include "hopper/wgmma.cuh"

namespace mgpu {
namespace sm90 {

template <typename Element, int kHeadDim_>
struct AttnBwdConfig {
    using T = Element;
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16");
    static constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
    static constexpr int kElementBytes = 2;

    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kBlockM = AttnBwdTile<kHeadDim>::kBlockM;
    static constexpr int kBlockN = AttnBwdTile<kHeadDim>::kBlockN;
    static constexpr int kStages = AttnBwdTile<kHeadDim>::kStages;
    static constexpr int kKVBoxRows = kBlockN; /* rows of one K / V tensor-map box (the producer) */
    static constexpr bool kSplitDim = AttnBwdTile<kHeadDim>::kSplitDim;

    static constexpr int kSwizzleBytes = 128;
    static constexpr int kSwizzleElems = kSwizzleBytes / kElementBytes;
    static constexpr int kAtomBytes = 1024; /* 8 swizzled rows */
    static constexpr int kDimBlocks = (kHeadDim + kSwizzleElems - 1) / kSwizzleElems;
    static constexpr int kWgmmaK = 16;
    static_assert(kHeadDim % kWgmmaK == 0, "wgmma K is 16");
    static_assert(kBlockM == kSwizzleElems, "one dS^T row (kBlockM 16-bit values) is one swizzle row");

    static constexpr int kWarpgroupThreads = 128;
    static constexpr int kConsumerWarpgroups = 2;
    static constexpr int kConsumerThreads = kConsumerWarpgroups * kWarpgroupThreads;
    static constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);
    static constexpr int kConsumerWarps = kConsumerThreads / 32;
    static_assert(kThreads == MGPU_ATTENTION_BWD_THREADS, "ABI thread count");

    /* S^T / dP^T tile of one consumer: kSM (keys, the wgmma M) x kSN (queries). */
    static constexpr int kSM = 64;
    static constexpr int kSN = kSplitDim ? kBlockM / kConsumerWarpgroups : kBlockM;
    static_assert(kSplitDim ? kBlockN == kSM : kBlockN == kSM * kConsumerWarpgroups, "key ownership");

    /* Columns of dQ (and with kSplitDim of dK, dV) per consumer: consumer 0
     * takes the first kCols0, consumer 1 the rest. A range never crosses a
     * 64-column block except at its start (so one MN-major descriptor with
     * the block stride covers it). */
    static constexpr int kCols0 = kHeadDim <= 64 ? kHeadDim / 2 : (kHeadDim / 2 + 63) / 64 * 64;
    static constexpr int kCols1 = kHeadDim - kCols0;
    /* dK / dV accumulator columns per consumer (the larger range when split). */
    static constexpr int kKVCols = kSplitDim ? kCols0 : kHeadDim;

    /* Registers: 128 * 24 + 256 * 240 = 64512 <= 65536. */
    static constexpr int kProducerRegisters = 24;
    static constexpr int kConsumerRegisters = 240;

    static constexpr int kQBlockBytes = kBlockM * kSwizzleBytes;  /* one 64-column block of Q / dO */
    static constexpr int kKVBlockBytes = kBlockN * kSwizzleBytes; /* of K / V */
    static constexpr int kQTileBytes = kDimBlocks * kQBlockBytes;
    static constexpr int kKVTileBytes = kDimBlocks * kKVBlockBytes;
    static constexpr int kDsBytes = kBlockN * kBlockM * kElementBytes; /* [key][query], 128-byte rows */

    /* How dQ reaches dq_accum (fragment order, see the epilogue). kDqWriter:
     * the consumers store each query block's dQ into one of kDqBuffers shared
     * buffers and one thread of warpgroup 0 adds the whole kBlockM x head_dim
     * tile with a single bulk reduction, taking the deterministic turn itself
     * while the consumers go on. Otherwise (head dims 192, 256) the consumers
     * add row-major tiles with bulk reductions from the stage's Q / dO tiles
     * (attn_bwd_reduce_dq_split) and take the turn themselves. The writer needs
     * kDqBuffers * kBlockM * head_dim * 4 bytes of shared memory, which head
     * dims <= 128 have (mgpu_attention_bwd_smem_bytes counts them). */
    static constexpr bool kDqWriter = AttnBwdTile<kHeadDim>::kDqBuffers > 0;
    static constexpr int kDqBuffers = kDqWriter ? AttnBwdTile<kHeadDim>::kDqBuffers : 1;
    static constexpr int kDqTileBytes = kBlockM * kHeadDim * 4;
    static constexpr bool kKVFrags = AttnBwdTile<kHeadDim>::kKVFrags;
    /* Registers of one consumer's K (or V) A fragments with kKVFrags (a
     * placeholder register without). */
    static constexpr int kKVFragRegs = kKVFrags ? kHeadDim / 4 : 1;
    static constexpr bool kDeferDq = AttnBwdTile<kHeadDim>::kDeferDq;
    static constexpr bool kRowsInRegs = AttnBwdTile<kHeadDim>::kRowsInRegs;
    static constexpr bool kDqPublishLate = AttnBwdTile<kHeadDim>::kDqPublishLate;
    /* Row buffers (lse_log2, dpsum): two per CTA, or with kDeferDq two per
     * consumer warp (unless the rows are read from global memory). */
    static constexpr int kRowBuffers = kDeferDq && !kRowsInRegs ? 2 * kConsumerWarps : 2;
    static constexpr int kPolyExp2Every = AttnBwdTile<kHeadDim>::kPolyExp2Every;

    struct alignas(kAtomBytes) SharedStorage {
        uint8_t k[kKVTileBytes];
        uint8_t v[kKVTileBytes];
        uint8_t q[kStages][kQTileBytes];
        uint8_t dout[kStages][kQTileBytes];
        uint8_t ds[2][kDsBytes];
        uint8_t p[kSplitDim ? 2 : 1][kSplitDim ? kDsBytes : 16];
        alignas(128) float dq[kDqBuffers][kDqWriter ? kBlockM * kHeadDim : 4];
        /* row buffers of query blocks i % 2 (attn_bwd_rows_issue; kDeferDq: 2 warp + i % 2,
         * attn_bwd_rows_issue_warp) */
        alignas(16) float lse[kRowBuffers][kBlockM];
        alignas(16) float dpsum[kRowBuffers][kBlockM];
        uint64_t kv_full;
        /* the consumers' dQ of a block is in dq[b] (8 warp arrivals); kSplitDim: staged in stage s for
         * attn_bwd_dq_split_writer (one per stage) */
        uint64_t dq_full[kDqWriter ? kDqBuffers : kStages];
        uint64_t dq_empty[kDqBuffers]; /* the writer has read dq[b] out (1 arrival) */
        uint64_t q_full[kStages];
        uint64_t q_empty[kStages];
        uint64_t do_full[kStages];
        uint64_t do_empty[kStages];
    };
    /* Every wgmma / TMA operand starts on a 1024-byte swizzle atom (the
     * 128-byte swizzle is a function of the shared-memory address). */
    static_assert(offsetof(SharedStorage, v) % kAtomBytes == 0 && offsetof(SharedStorage, q) % kAtomBytes == 0 &&
                      offsetof(SharedStorage, dout) % kAtomBytes == 0 &&
                      offsetof(SharedStorage, ds) % kAtomBytes == 0 && offsetof(SharedStorage, p) % kAtomBytes == 0 &&
                      kKVTileBytes % kAtomBytes == 0 && kQTileBytes % kAtomBytes == 0 && kDsBytes % kAtomBytes == 0,
                  "swizzled operands on 1024-byte atoms");
    static constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage)) + kAtomBytes;
    static_assert(kSmemBytes <= MGPU_ATTENTION_BWD_SMEM_LIMIT, "fits a Hopper CTA");
};

/* Named barrier ids (0 is __syncthreads). */
enum AttnBwdBarrier : int {
    kBwdBarrierDs = 1,      /* both consumers' dS^T (and P^T) of a block are in shared memory */
    kBwdBarrierOrdered = 2, /* deterministic adds: the turn was taken / the adds are done */
    kBwdBarrierStagger = 3, /* kDeferDq: consumer 0 has issued its first dV (consumer 1 starts behind it) */
    kBwdBarrierAnnounce = 4, /* kDeferDq: 4 + 2 c + i % 2, consumer c's dS^T(i) is in ds[i % 2] and its
                              * dQ(i - 1) has read ds[(i - 1) % 2] (ids 4..7) */
};

/* One CTA's work: one key block of one query head of one sequence. */
struct AttnBwdWork {
    int n_block;
    int head_q, head_kv;
    int batch;
    int tma_batch;   /* batch coordinate of the tensor maps (0 when varlen) */
    int q_offset;    /* first row of the sequence in the packed Q / dO rows */
    int k_offset;    /* first row of the sequence in the packed K / V / dK / dV rows */
    int seqlen_q, seqlen_k;
    int m_block_begin; /* query blocks [begin, end) see some key of this block */
    int m_block_end;
    int m_first;       /* the loops' first query block and step: m_block_end - 1 and -1, or */
    int m_step;        /* (key_blocks_down, attn_bwd_work) m_block_begin and +1 */
    int64_t q_row0;  /* first row of (sequence, query head) in the query-side scratch */
    int64_t k_row0;  /* first row of (sequence, kv head) in the key-side scratch */
    AttnMask mask;
};

/* The work of key block n_block (Cfg::kBlockN keys) of query head head_q of
 * sequence batch. kScratchBlockN: the ABI's block_n, whose multiples the
 * key-side scratch rows of a varlen sequence start at (the sm_100a kernel's
 * CTAs of head dims 192 / 256 cover two ABI key blocks of 64). */
template <class Cfg, int kScratchBlockN = Cfg::kBlockN>
__device__ __forceinline__ AttnBwdWork attn_bwd_work_at(const mgpu_attention_bwd_args &a, int n_block, int head_q,
                                                        int batch)
{
    AttnBwdWork w;
    w.n_block = n_block;
    w.head_q = head_q;
    w.batch = batch;
    w.head_kv = w.head_q / a.group_size;
    if (a.cu_seqlens_q != 0) {
        const int32_t *cu_q = reinterpret_cast<const int32_t *>(a.cu_seqlens_q);
        const int32_t *cu_k = reinterpret_cast<const int32_t *>(a.cu_seqlens_k);
        w.q_offset = cu_q[w.batch];
        w.seqlen_q = cu_q[w.batch + 1] - w.q_offset;
        w.k_offset = cu_k[w.batch];
        w.seqlen_k = cu_k[w.batch + 1] - w.k_offset;
        w.tma_batch = 0;
        w.q_row0 = static_cast<int64_t>(w.head_q) * a.q_rows_padded +
                   (static_cast<int64_t>(w.q_offset) + static_cast<int64_t>(w.batch) * Cfg::kBlockM) /
                       Cfg::kBlockM * Cfg::kBlockM;
        w.k_row0 = static_cast<int64_t>(w.head_kv) * a.k_rows_padded +
                   (static_cast<int64_t>(w.k_offset) + static_cast<int64_t>(w.batch) * kScratchBlockN) /
                       kScratchBlockN * kScratchBlockN;
    } else {
        w.q_offset = 0;
        w.k_offset = 0;
        w.seqlen_q = a.seqlen_q;
        w.seqlen_k = a.seqlen_k;
        w.tma_batch = w.batch;
        w.q_row0 = (static_cast<int64_t>(w.batch) * a.heads_q + w.head_q) * a.q_rows_padded;
        w.k_row0 = (static_cast<int64_t>(w.batch) * a.heads_kv + w.head_kv) * a.k_rows_padded;
    }
    w.mask = AttnMask::make(w.seqlen_q, w.seqlen_k, a.window_left, a.window_right, a.causal);

    /* Rows i that see some key j of [k0, k1): j in [i + diag - left, i + diag + right]. */
    const int k0 = w.n_block * Cfg::kBlockN;
    const int k1 = min(k0 + Cfg::kBlockN, w.seqlen_k);
    int row_lo = w.mask.window_right >= 0 ? k0 - w.mask.diag - w.mask.window_right : 0;
    int row_hi = w.mask.window_left >= 0 ? k1 - 1 - w.mask.diag + w.mask.window_left : w.seqlen_q - 1;
    row_lo = max(row_lo, 0);
    row_hi = min(row_hi, w.seqlen_q - 1);
    if (k0 >= k1 || row_lo > row_hi) {
        w.m_block_begin = w.m_block_end = 0;
    } else {
        w.m_block_begin = row_lo / Cfg::kBlockM;
        w.m_block_end = row_hi / Cfg::kBlockM + 1;
    }
    w.m_first = w.m_block_end - 1;
    w.m_step = -1;
    return w;
}

/* The work of CTA `tile` of the ABI's grid: (sequence, query head) pairs in
 * groups of pair_group, each group key block by key block (pair_group = 1:
 * key blocks fastest; key_blocks_down: key blocks in decreasing order, each
 * walking its query blocks in increasing order). */
template <class Cfg>
__device__ __forceinline__ AttnBwdWork attn_bwd_work(const mgpu_attention_bwd_args &a, int tile)
{
    int n_block, pair;
    mgpu_attention_bwd_sm90_cta(tile, a.n_blocks, a.batch * a.heads_q, a.pair_group, a.key_blocks_down, &n_block,
                                &pair);
    int batch, head_q;
    mgpu_attention_bwd_sm90_pair(pair, a.batch, a.heads_kv, a.group_size, a.pairs_by_slot, &batch, &head_q);
    AttnBwdWork w = attn_bwd_work_at<Cfg>(a, n_block, head_q, batch);
    if (a.key_blocks_down) {
        w.m_first = w.m_block_begin;
        w.m_step = 1;
    }
    return w;
}

/* The first key block that query block m sees (the deterministic dQ turn is
 * n_block minus this, the key blocks adding in increasing order). Same
 * interval algebra as above, from the rows' side. */
template <class Cfg>
__device__ __forceinline__ int attn_bwd_first_n_block(const AttnBwdWork &w, int m_block)
{
    return max(0, w.mask.key_begin(m_block * Cfg::kBlockM)) / Cfg::kBlockN;
}

/* The last key block that query block m sees (its last row sees the most
 * keys): with key_blocks_down the deterministic dQ turn is this minus
 * n_block, the key blocks adding in decreasing order. Query block m of a key
 * block's range has a row that sees a key, so the last row's key_end is at
 * least 1. */
template <class Cfg>
__device__ __forceinline__ int attn_bwd_last_n_block(const AttnBwdWork &w, int m_block)
{
    const int row_last = min((m_block + 1) * Cfg::kBlockM, w.seqlen_q) - 1;
    return (w.mask.key_end(row_last) - 1) / Cfg::kBlockN;
}

/* The sm_90a kernel's deterministic dQ turn of query block m (ABI,
 * Deterministic mode). */
template <class Cfg>
__device__ __forceinline__ int attn_bwd_dq_turn(const mgpu_attention_bwd_args &a, const AttnBwdWork &w, int m_block)
{
    return a.key_blocks_down ? attn_bwd_last_n_block<Cfg>(w, m_block) - w.n_block
                             : w.n_block - attn_bwd_first_n_block<Cfg>(w, m_block);
}

} // namespace sm90
} // namespace mgpu

#include "hopper/attention_bwd_epilogue.cuh"
#include "hopper/attention_bwd_mainloop.cuh"

namespace mgpu {
namespace sm90 {

template <class Cfg>
__device__ __forceinline__ void attention_bwd(const mgpu_attention_bwd_params &p)
{
    using Smem = typename Cfg::SharedStorage;
    extern __shared__ uint8_t attn_bwd_smem_raw[];
    const uintptr_t base = reinterpret_cast<uintptr_t>(attn_bwd_smem_raw);
    Smem &smem = *reinterpret_cast<Smem *>((base + Cfg::kAtomBytes - 1) & ~uintptr_t(Cfg::kAtomBytes - 1));

    const AttnBwdWork w = attn_bwd_work<Cfg>(p.args, static_cast<int>(blockIdx.x));
    /* Key blocks past this sequence's end (varlen): nothing to compute or write. */
    if (w.n_block * Cfg::kBlockN >= w.seqlen_k)
        return;

    if (threadIdx.x == 0) {
        MGPU_ATTN_BWD_TIMELINE_BEGIN(p.args, w.n_block, w.batch * p.args.heads_q + w.head_q,
                                     w.m_block_end - w.m_block_begin);
        tma_prefetch_map(&p.tmap_q);
        tma_prefetch_map(&p.tmap_k);
        tma_prefetch_map(&p.tmap_v);
        tma_prefetch_map(&p.tmap_do);
        if constexpr (Cfg::kSplitDim)
            tma_prefetch_map(&p.tmap_dq);
        mbar_init(&smem.kv_full, 1);
        if constexpr (Cfg::kDqWriter) {
            for (int b = 0; b < Cfg::kDqBuffers; ++b) {
                mbar_init(&smem.dq_full[b], Cfg::kConsumerWarps);
                mbar_init(&smem.dq_empty[b], 1);
            }
        }
        /* kSplitDim: the split dims' dQ writer alone releases the stages */
        constexpr uint32_t stage_arrivals = Cfg::kSplitDim ? 1 : Cfg::kConsumerWarps;
        for (int s = 0; s < Cfg::kStages; ++s) {
            mbar_init(&smem.q_full[s], 1);
            mbar_init(&smem.do_full[s], 1);
            mbar_init(&smem.q_empty[s], stage_arrivals);
            mbar_init(&smem.do_empty[s], stage_arrivals);
            if constexpr (Cfg::kSplitDim)
                mbar_init(&smem.dq_full[s], Cfg::kConsumerWarps);
        }
        mbar_fence_init();
    }
    __syncthreads();

    const int warpgroup = static_cast<int>(threadIdx.x) / Cfg::kWarpgroupThreads;
    if (warpgroup == 0) {
        setmaxnreg_dec<Cfg::kProducerRegisters>();
        if (threadIdx.x == 0) {
            attn_bwd_producer<Cfg>(p, smem, w);
        } else if constexpr (Cfg::kDqWriter) {
            if (threadIdx.x == 32)
                attn_bwd_dq_writer<Cfg>(p.args, smem, w);
        } else {
            if (threadIdx.x == 32)
                attn_bwd_dq_split_writer<Cfg>(p.args, &p.tmap_dq, smem, w);
        }
    } else {
        setmaxnreg_inc<Cfg::kConsumerRegisters>();
        attn_bwd_consumer<Cfg>(p.args, smem, w, warpgroup - 1);
    }
}

} // namespace sm90
} // namespace mgpu
