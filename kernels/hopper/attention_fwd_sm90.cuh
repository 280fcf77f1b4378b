/*
 * Hopper (sm_90a) flash-attention forward: the kernel shell.
 *
 * Schedule (FlashAttention-3 style). Each CTA walks work tiles (one query
 * block of kBlockM rows, 128 or the wide entry's 192, of one head of one
 * sequence) given by attention_fwd_tile_scheduler.cuh (persistent grid for
 * unmasked fixed-length calls where Q is double-buffered, one tile per CTA
 * otherwise, see there why); 384 threads = 3 warpgroups (the wide entry:
 * 512 = 4, see below):
 *
 *   warpgroup 0, producer (setmaxnreg down to kProducerRegisters): its first
 *     warp walks the tiles (lane 0 issues the TMA loads and arrivals), per tile: Q into buffer tile % kQStages (waits
 *     q_empty, arms q_full of that buffer), then for
 *     each key block n, from the
 *     last allowed block down to the first, K[n] into stage s (waits k_empty[s],
 *     arms k_full[s]) and V[n] into stage s (v_empty[s] / v_full[s]);
 *     kStages = 2 stages of each, round-robin.
 *   warpgroups 1 and 2 (1 to 3 in the wide entry), consumers (setmaxnreg
 *     up to kConsumerRegisters): each
 *     owns 64 query rows and runs, per key block, S = Q K^T (wgmma, both from
 *     shared memory), mask, online softmax in registers (exp2, scale
 *     pre-multiplied by log2 e), P converted to 16 bits in registers, and
 *     O += P V (wgmma with A = P from registers). Within a warpgroup the
 *     softmax of block n overlaps the issue of P(n+1) V(n+1) and Q K(n-1)^T
 *     (see attention_fwd_mainloop.cuh). Between the two warpgroups, two named
 *     barriers pass a "turn" back and forth so that one warpgroup issues its
 *     GEMMs while the other does its softmax (ping-pong).
 *   The wide entry (AttnFwdWideConfig, head dim 64, prefill calls only):
 *     192 query rows, three consumer warpgroups (512 threads), whose turn
 *     passes round 0 -> 1 -> 2 -> 0 on three named barriers.
 *   Each consumer warp's lane 0 arrives on k_empty / v_empty once its wgmma
 *   reading that stage has completed (kConsumerWarps arrivals per phase: 8,
 *   12 in the wide entry).
 *   Epilogue: each consumer normalises its O rows, stages them (16-bit) in its
 *   own rows of Q's shared memory, and stores them with 16-byte vector stores
 *   clipped to seqlen_q; LSE (natural log) goes straight from registers. Each
 *   consumer warp then arrives on that buffer's q_empty (8 arrivals, 12 in
 *   the wide entry), which
 *   lets the producer load a later tile's Q into it; with two Q buffers the
 *   next tile's Q and its first K/V blocks are already loading during this
 *   tile's last blocks and epilogue.
 *   Stage and phase counters run on across tiles.
 *
 * Two copies of the producer and consumer code: calls that use none of the
 * inference features (GQA packing, key splits, seqused_k, paged K/V; see
 * attn_fwd_inference) run one in which those are compiled out, so that a
 * prefill call carries none of their addressing; the branch is uniform over
 * the CTA, taken once.
 *
 * Key blocks that the causal / sliding-window mask removes entirely are never
 * loaded (loop bounds); blocks that straddle a mask edge or the end of the keys
 * are masked in registers. Tile order puts the heavy causal tiles of each
 * head first. Contract with the runtime: abi/attention_abi.h.
 *
 * Files by role: this shell (configuration, shared memory, barriers, the
 * producer / consumer branches and the consumers' tile loop);
 * attention_fwd_mainloop.cuh (producer loads, the consumers' key loop);
 * attention_fwd_softmax.cuh, attention_fwd_mask.cuh; attention_fwd_epilogue.cuh;
 * attention_fwd_tile_scheduler.cuh (tile order, a tile's work);
 * attention_fwd_tile_size.cuh (tile sizes per head dim).
 *
 * A generated unit instantiates one variant:
 *   extern "C" __global__ void __launch_bounds__(384, 1)
 *   mgpu_attention_fwd_sm90_bf16_d128(const __grid_constant__ mgpu_attention_fwd_params p)
 *   { mgpu::sm90::attention_fwd<mgpu::sm90::AttnFwdConfig<__nv_bfloat16, 128>>(p); }
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "abi/attention_abi.h"
#include "common/async_copy.cuh"
#include "common/barrier.cuh"
#include "common/grid_dependency.cuh"
#include "hopper/attention_fwd_epilogue.cuh"
#include "hopper/attention_fwd_mainloop.cuh"
#include "hopper/attention_fwd_softmax.cuh"
#include "hopper/attention_fwd_tile_scheduler.cuh"
#include "hopper/attention_fwd_tile_size.cuh"
#include "hopper/attention_fwd_timeline.cuh"
#include "hopper/warpgroup.cuh"
#include "hopper/wgmma.cuh"

namespace mgpu {
namespace sm90 {

template <typename Element, int kHeadDim_, int kBlockN_ = AttnFwdTile<kHeadDim_>::kBlockN,
          bool kLazyRescale_ = AttnFwdTile<kHeadDim_>::kLazyRescale,
          int kPolyExp2Every_ = AttnFwdTile<kHeadDim_>::kPolyExp2Every, int kConsumerWarpgroups_ = 2>
struct AttnFwdConfig {
    using T = Element;
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16");
    static constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
    static constexpr int kElementBytes = 2;

    static constexpr int kHeadDim = kHeadDim_;
    /* 64 query rows per consumer warpgroup: the forward's 128 with two, the
     * decode entry's 64-row variant with one (attention_fwd_decode_sm90.cuh),
     * the wide entry's 192 with three (AttnFwdWideConfig below). */
    static constexpr int kConsumerWarpgroups = kConsumerWarpgroups_;
    static constexpr int kBlockM = kConsumerWarpgroups == 2 ? AttnFwdTile<kHeadDim>::kBlockM : 64 * kConsumerWarpgroups;
    static constexpr int kBlockN = kBlockN_;
    static constexpr bool kLazyRescale = kLazyRescale_;
    static constexpr int kPolyExp2Every = kPolyExp2Every_;
    static constexpr int kStages = AttnFwdTile<kHeadDim>::kStages;

    /* One TMA box / swizzle row is 128 bytes = 64 elements of the head dim. */
    static constexpr int kSwizzleBytes = 128;
    static constexpr int kSwizzleElems = kSwizzleBytes / kElementBytes;
    static constexpr int kDimBlocks = (kHeadDim + kSwizzleElems - 1) / kSwizzleElems;
    static constexpr int kWgmmaK = 16;
    static constexpr int kQkSteps = kHeadDim / kWgmmaK; /* k-steps of S = Q K^T */
    static constexpr int kPvSteps = kBlockN / kWgmmaK;  /* k-steps of O += P V */
    static_assert(kHeadDim % kWgmmaK == 0 && kBlockN % kWgmmaK == 0, "wgmma K is 16");

    static constexpr int kWarpgroupThreads = 128;
    static_assert(kConsumerWarpgroups >= 1 && kConsumerWarpgroups <= 3, "one to three consumer warpgroups");
    /* Three consumer warpgroups (the wide entry): prefill calls only, the
     * inference copy of the code is not compiled in (the runtime gives the
     * entry no call with an inference feature: abi/attention_abi.h). */
    static constexpr bool kPrefillOnly = kConsumerWarpgroups == 3;
    static constexpr int kThreads = kWarpgroupThreads * (1 + kConsumerWarpgroups);
    static constexpr int kConsumerWarps = kConsumerWarpgroups * kWarpgroupThreads / 32;
    static constexpr int kRowsPerConsumer = kBlockM / kConsumerWarpgroups;
    static_assert(kRowsPerConsumer == 64, "one wgmma M per consumer warpgroup");

    /* Column block of a tile: rows x 128 bytes, 128-byte swizzled. */
    static constexpr int kQBlockBytes = kBlockM * kSwizzleBytes;
    static constexpr int kKVBlockBytes = kBlockN * kSwizzleBytes;
    static constexpr int kQTileBytes = kDimBlocks * kQBlockBytes;
    static constexpr int kKVTileBytes = kDimBlocks * kKVBlockBytes;
    static_assert(kKVBlockBytes % kSwizzleAtomBytes == 0, "tiles keep 1024-byte alignment");

    /* Q is double-buffered where a second tile fits (head dims up to 128), so
     * that a persistent CTA finds the next tile's Q loaded while it stores the
     * previous O (the formula: abi/attention_abi.h). */
    static constexpr int kSmemLimit = MGPU_ATTENTION_FWD_SMEM_LIMIT;
    static constexpr int kQStages = mgpu_attention_fwd_q_stages(kBlockM, kBlockN, kHeadDim, kStages);

    /* The paged gather (kPagedGather): rows one 128-thread pass copies (each
     * thread 16 bytes of every 64-column block), and such row groups a key
     * block. */
    static constexpr int kGatherRowStep = kWarpgroupThreads * 16 / kSwizzleBytes;
    static constexpr int kGatherGroups = kBlockN / kGatherRowStep;

    struct alignas(kSwizzleAtomBytes) SharedStorage {
        uint8_t q[kQStages][kQTileBytes]; /* Q tiles; O staging in the epilogue */
        uint8_t k[kStages][kKVTileBytes];
        uint8_t v[kStages][kKVTileBytes];
        int q_tile[kQStages]; /* the tile whose Q the buffer holds; -1: no more tiles */
        uint64_t q_full[kQStages];
        uint64_t q_empty[kQStages];
        uint64_t k_full[kStages];
        uint64_t k_empty[kStages];
        uint64_t v_full[kStages];
        uint64_t v_empty[kStages];
        /* paged_gather: each producer warp's tile constants (ints, the first
         * four words), then each 16-row group's K and V row addresses */
        alignas(16) uint64_t gather_state[4][4 + 2 * kGatherGroups];
    };
    /* + slack to align the dynamic shared memory base to a swizzle atom. */
    static constexpr int kSmemBytes = static_cast<int>(sizeof(SharedStorage)) + kSwizzleAtomBytes;
    static_assert(kSmemBytes <= kSmemLimit, "fits a Hopper CTA");

    /* CTAs per SM the launch bounds ask for: two where one consumer
     * warpgroup's CTA (256 threads) leaves room for a second in the 228 KiB
     * of an SM (1 KiB of it reserved per CTA), i.e. head dim 64; else one. */
    static constexpr int kMinBlocks =
        kConsumerWarpgroups == 1 && 2 * (kSmemBytes + 1024) <= 228 * 1024 ? 2 : 1;
    /* Registers: 128 * 24 + 256 * 240 = 64512 = 384 * 168, the launch's
     * allocation. The producer warp only computes coordinates (its loop state
     * warp-uniform, mostly in uniform registers); the consumers hold O, S and
     * P (tile_size table). One consumer warpgroup: 128 * 24 + 128 * 232 =
     * 32768 = 256 * 128, what two CTAs of 256 threads may each take. No entry
     * spills (tests/sass_sm90.sh). */
    static constexpr int kProducerRegisters = 24;
    /* Three consumer warpgroups (512 threads, 128 registers each at launch):
     * 128 * 24 + 384 * 160 = 64512. */
    static constexpr int kConsumerRegisters = kConsumerWarpgroups == 2 ? 240 : kConsumerWarpgroups == 3 ? 160 : 232;

    /* Named barrier ids (0 is __syncthreads); with three consumer
     * warpgroups, three of each kind. */
    static constexpr int kBarrierSlots = kConsumerWarpgroups == 3 ? 3 : 2;
    /* ids 1, 2 (wide: 1-3): "consumer c may issue its GEMMs" */
    static constexpr int kBarrierTurnFirst = 1;
    /* ids 3, 4 (wide: 4-6): one per consumer */
    static constexpr int kBarrierEpilogueFirst = kBarrierTurnFirst + kBarrierSlots;
    /* id 5 (wide: 7, unused): the consumers, a split's merge */
    static constexpr int kBarrierMerge = kBarrierEpilogueFirst + kBarrierSlots;
    /* The producer warpgroup's cp.async gather of paged K/V (paged_gather)
     * is compiled into head dims 64 and 128 only: at the others its loop
     * does not fit the producer's registers, and their key blocks (80 and
     * 112 rows at 256 and 192) move more bytes per TMA box (decision 020);
     * the runtime sets paged_gather for these head dims only. */
    static constexpr bool kPagedGather = (kHeadDim == 64 || kHeadDim == 128) && !kPrefillOnly;
};

/* The wide entry: 192 query rows per work tile, three consumer warpgroups of
 * 64 rows (512 threads), the forward's key block, stages and softmax for the
 * head dim; prefill calls only. Each K / V block loaded serves 192 query
 * rows instead of 128, and each consumer warpgroup has two others' GEMMs to
 * hide its softmax behind (docs/decisions/063-attention-forward-d64-wide-tile.md). */
template <typename Element, int kHeadDim>
using AttnFwdWideConfig = AttnFwdConfig<Element, kHeadDim, AttnFwdTile<kHeadDim>::kBlockN,
                                        AttnFwdTile<kHeadDim>::kLazyRescale, AttnFwdTile<kHeadDim>::kPolyExp2Every, 3>;

/* Consumer warpgroup `consumer`: every tile the producer publishes, main loop
 * then epilogue. */
template <class Cfg, bool kInference>
__device__ __forceinline__ void attn_fwd_consumer(const mgpu_attention_fwd_args &a,
                                                  typename Cfg::SharedStorage &smem,
                                                  const AttnFwdScheduler<Cfg, kInference> &scheduler, int consumer)
{
    constexpr int kTurnThreads = attn_fwd_turn_threads<Cfg>();
    /* The turn goes round 0, 1, (2,) 0, ... over the whole kernel (every
     * consumer takes the same number of turns per tile); consumer 0 goes
     * first, handed the turn by the last. */
    if constexpr (Cfg::kConsumerWarpgroups > 1) {
        if (consumer == Cfg::kConsumerWarpgroups - 1)
            named_barrier_arrive(Cfg::kBarrierTurnFirst + 0, kTurnThreads);
    }

    int kv_iter = 0, q_iter = 0;
    for (;;) {
        /* The producer's next tile, published with its Q (-1: done). */
        const int q_stage = q_iter % Cfg::kQStages;
        const int t = attn_fwd_next_tile<Cfg>(smem, q_stage, q_iter);
        if (t < 0)
            break;
        const AttnFwdWork w = attn_fwd_work<Cfg, kInference>(a, scheduler.decode(t));
        const int count = w.n_block_end - w.n_block_begin;
        float o[Cfg::kHeadDim / 2];
        OnlineSoftmax<Cfg::kBlockN, Cfg::kLazyRescale, Cfg::kPolyExp2Every> softmax;
        softmax.init();
        float o_scale[2], lse[2];

        MGPU_ATTN_FWD_STAMP(a, kTlQFull, threadIdx.x == Cfg::kWarpgroupThreads);
        /* Head dims with two Q buffers (64, 96, 128: the persistent grid's),
         * prefill copy only: at 256 the finalize beside the last P V's
         * registers spilled. */
        if constexpr (kInference || Cfg::kQStages < 2) {
#pragma unroll
            for (int i = 0; i < Cfg::kHeadDim / 2; ++i)
                o[i] = 0.f;
            if (count > 0)
                attn_fwd_consumer_tile<Cfg, kInference>(a, smem, w, consumer, kv_iter, q_stage, o, softmax);
            softmax.finalize(o_scale, lse);
        } else {
            /* The key loop's first P V overwrites O (no zeroing ahead of a
             * tile's first turn), and the row sums are completed while the
             * last P V is in flight. */
            if (count > 0) {
                attn_fwd_consumer_tile<Cfg, kInference>(a, smem, w, consumer, kv_iter, q_stage, o, softmax,
                                                        [&] { softmax.finalize(o_scale, lse); });
            } else {
#pragma unroll
                for (int i = 0; i < Cfg::kHeadDim / 2; ++i)
                    o[i] = 0.f;
                softmax.finalize(o_scale, lse);
            }
        }
        MGPU_ATTN_FWD_STAMP(a, kTlKeyLoopDone, threadIdx.x == Cfg::kWarpgroupThreads);

        scale_rows(o, o_scale);
        /* Re-derive the tile for the epilogue rather than keep its fields live
         * (in registers) through the main loop. */
        int tile = t;
        asm volatile("" : "+r"(tile));
        const AttnFwdWork we = attn_fwd_work<Cfg, kInference>(a, scheduler.decode(tile));
        /* Split partials and their merge: inference code only (not compiled
         * into the wide entry, whose three consumers could not merge). */
        if constexpr (kInference) {
            if (a.num_splits > 1) {
                attn_fwd_epilogue_partial<Cfg>(a, smem, we, consumer, q_stage, o, lse);
                MGPU_ATTN_FWD_STAMP(a, kTlPartialDone, threadIdx.x == Cfg::kWarpgroupThreads);
                if (a.split_counters != 0)
                    attn_fwd_merge_splits<Cfg>(a, smem, we, udiv(tile, a.num_splits));
            } else {
                attn_fwd_epilogue<Cfg, false>(a, smem, we, consumer, q_stage, o, lse);
            }
        } else {
            attn_fwd_epilogue<Cfg, true>(a, smem, we, consumer, q_stage, o, lse);
        }
        kv_iter += count;
        ++q_iter;
    }
}

/* Thread 0: the barriers of the CTA's rings, `q_stages` Q buffers (the
 * epilogues arrive on q_empty) and the K / V stages, whose full barriers
 * take one arrival and its bytes, or with the paged gather the producer
 * warpgroup's 128 arrivals. The forward kernel and the decode entry share
 * it. */
template <class Cfg, int q_stages, class Smem>
__device__ __forceinline__ void attn_fwd_init_barriers(Smem &smem, bool gather)
{
    for (int s = 0; s < q_stages; ++s) {
        mbar_init(&smem.q_full[s], 1);
        mbar_init(&smem.q_empty[s], Cfg::kConsumerWarps);
    }
    for (int s = 0; s < Cfg::kStages; ++s) {
        mbar_init(&smem.k_full[s], gather ? Cfg::kWarpgroupThreads : 1);
        mbar_init(&smem.v_full[s], gather ? Cfg::kWarpgroupThreads : 1);
        mbar_init(&smem.k_empty[s], Cfg::kConsumerWarps);
        mbar_init(&smem.v_empty[s], Cfg::kConsumerWarps);
    }
    mbar_fence_init();
}

template <class Cfg>
__device__ __forceinline__ void attention_fwd(const mgpu_attention_fwd_params &p)
{
    using Smem = typename Cfg::SharedStorage;
    extern __shared__ uint8_t attn_smem_raw[];
    const uintptr_t base = reinterpret_cast<uintptr_t>(attn_smem_raw);
    Smem &smem = *reinterpret_cast<Smem *>((base + kSwizzleAtomBytes - 1) & ~uintptr_t(kSwizzleAtomBytes - 1));

    /* Paged K/V gathered by the producer warpgroup's cp.async copies: 128
     * arrivals complete a K / V stage instead of one arrival and its bytes
     * (one tile per CTA: abi/attention_abi.h). */
    MGPU_ATTN_FWD_STAMP(p.args, kTlEntry, threadIdx.x == 0);
    const bool gather = Cfg::kPagedGather && attn_fwd_inference(p.args) && p.args.block_table && p.args.paged_gather &&
                        !p.args.tile_counter;
    if (threadIdx.x == 0) {
        tma_prefetch_map(&p.tmap_q);
        tma_prefetch_map(&p.tmap_k);
        tma_prefetch_map(&p.tmap_v);
        attn_fwd_init_barriers<Cfg, Cfg::kQStages>(smem, gather);
    }
    __syncthreads();
    MGPU_ATTN_FWD_STAMP(p.args, kTlBarriersSet, threadIdx.x == 0);
    /* The stream's next grid (a split call's combine, or the next call's
     * main kernel, launched for programmatic dependent launch) may be
     * scheduled once every CTA is here; it waits for this grid's completion
     * before it reads anything. Likewise this grid, where the runtime
     * launched it so (inference calls): nothing above touched global memory
     * (the tensor maps are kernel parameters), and every access below comes
     * after the previous grid's completion. Without the launch attribute the
     * wait returns at once. */
    griddep_launch_dependents();
    griddep_wait();
    MGPU_ATTN_FWD_STAMP(p.args, kTlGridDepDone, threadIdx.x == 0);

    /* Calls without the inference features (prefill) run code in which
     * those features are compiled out (uniform over the CTA). */
    const bool inference = attn_fwd_inference(p.args);
    /* Broadcast from lane 0: the compiler then treats the warpgroup index
     * (and the consumers' shared-memory addresses derived from it) as
     * warp-uniform, kept in uniform registers rather than the consumers'. */
    const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / Cfg::kWarpgroupThreads, 0);
    if constexpr (Cfg::kPrefillOnly) {
        if (inference)
            __trap(); /* not a call for this entry */
        if (warpgroup == 0) {
            setmaxnreg_dec<Cfg::kProducerRegisters>();
            if (threadIdx.x < 32)
                attn_fwd_producer<Cfg, false, true>(p, smem, AttnFwdScheduler<Cfg, false>(p.args));
        } else {
            setmaxnreg_inc<Cfg::kConsumerRegisters>();
            attn_fwd_consumer<Cfg, false>(p.args, smem, AttnFwdScheduler<Cfg, false>(p.args), warpgroup - 1);
        }
    } else if (warpgroup == 0) {
        setmaxnreg_dec<Cfg::kProducerRegisters>();
        if (gather) { /* false at compile time where !kPagedGather */
            if constexpr (Cfg::kPagedGather)
                attn_fwd_producer_gather<Cfg>(p, smem, AttnFwdScheduler<Cfg, true>(p.args));
        } else if (threadIdx.x < 32) {
            if (inference)
                attn_fwd_producer<Cfg, true, true>(p, smem, AttnFwdScheduler<Cfg, true>(p.args));
            else
                attn_fwd_producer<Cfg, false, true>(p, smem, AttnFwdScheduler<Cfg, false>(p.args));
        }
    } else {
        setmaxnreg_inc<Cfg::kConsumerRegisters>();
        if (inference)
            attn_fwd_consumer<Cfg, true>(p.args, smem, AttnFwdScheduler<Cfg, true>(p.args), warpgroup - 1);
        else
            attn_fwd_consumer<Cfg, false>(p.args, smem, AttnFwdScheduler<Cfg, false>(p.args), warpgroup - 1);
    }
}

} // namespace sm90
} // namespace mgpu
