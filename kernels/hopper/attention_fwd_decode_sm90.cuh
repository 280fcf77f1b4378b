/*
 * Hopper (sm_90a) flash-attention forward: the decode entry.
 *
 * The same 16-bit forward (attention_fwd_sm90.cuh: its configuration, shared
 * memory, producer loads, consumer key loop, softmax, epilogues and the merge
 * of key splits) for calls whose queries fit one tile per (sequence, tile
 * head): sq * group rows packed, or sq rows of one head, at most kBlockM
 * (decode, the runtime's rule: abi/attention_abi.h, "Decode entry"). Built
 * for a short CTA: one work tile per CTA, so
 *
 *   - no tile scheduler and no tile loop: the grid is (num_splits,
 *     tile_heads, batch) and a CTA's tile is its blockIdx (split, head,
 *     sequence), with no integer division; the query block is 0;
 *   - one Q buffer, loaded once; no tile index published beside it, no
 *     closing -1 (each role knows its only tile);
 *   - only the inference copy of the code (packing, splits, seqused_k,
 *     paged K/V by TMA or by the producer warpgroup's gather); no prefill
 *     copy in the function;
 *   - the grid-dependency wait late: each role works out its tile from
 *     blockIdx and the parameters before griddepcontrol.wait (launched for
 *     programmatic dependent launch, the CTAs do this while the stream's
 *     previous grid finishes), and the producer issues Q as soon as the wait
 *     returns (fixed-length calls: Q's coordinates need no global read;
 *     seqused_k / cu_seqlens are read after the wait).
 *
 * Roles (384 threads, as the general kernel; the 64-row variant 256, one
 * consumer warpgroup without turns): warpgroup 0 the producer (its
 * first warp: Q, then K / V of the split's key blocks, last block first,
 * into kStages stages; paged_gather calls: all 128 threads gather K / V),
 * warpgroups 1 and 2 the consumers (the key loop of attn_fwd_consumer_tile
 * with the ping-pong turns; a warpgroup whose 64 rows are all padding runs
 * only the waits and releases), then the epilogue: O and LSE, or a split's
 * fp32 partials and, where the runtime gives split counters, the merge of
 * the tile's splits by the last of them (attn_fwd_merge_splits, the combine
 * kernel's arithmetic).
 *
 * A generated unit instantiates one variant:
 *   extern "C" __global__ void __launch_bounds__(384, 1)
 *   mgpu_attention_fwd_decode_sm90_bf16_d128(const __grid_constant__ mgpu_attention_fwd_params p)
 *   { mgpu::sm90::attention_fwd_decode<mgpu::sm90::AttnFwdConfig<__nv_bfloat16, 128>>(p); }
 * and the 64-row one (launch bounds: Config::kThreads, Config::kMinBlocks):
 *   mgpu_attention_fwd_decode64_sm90_bf16_d128_n128, AttnFwdDecode64Config<__nv_bfloat16, 128, 128>
 *   mgpu_attention_fwd_decode64_sm90_bf16_d128_n64, AttnFwdDecode64Config<__nv_bfloat16, 128, 64>.
 */
#pragma once

#include "hopper/attention_fwd_sm90.cuh"

namespace mgpu {
namespace sm90 {

/* The 64-row variant: one consumer warpgroup (256 threads), the forward's
 * key block, stages and softmax for the head dim. A packed GQA decode step
 * (group <= 64 rows), MQA or a short MHA query block fills at most 64 rows:
 * the 128-row tile's second warpgroup would idle through the key loop and
 * its turns. Its Q tile, kBlockM = 64 rows, also halves Q's shared memory,
 * and at head dim 64 two CTAs fit an SM (kMinBlocks). Head dim 128 has a
 * second one with 64-row key blocks (kBlockN = 64, 98 KiB): two CTAs an SM,
 * so that one's set-up and first loads overlap the other's key loop, which
 * pays on short caches over more than a wave of CTAs (the runtime's rule). */
template <typename Element, int kHeadDim, int kBlockN = AttnFwdTile<kHeadDim>::kBlockN>
using AttnFwdDecode64Config = AttnFwdConfig<Element, kHeadDim, kBlockN, AttnFwdTile<kHeadDim>::kLazyRescale,
                                            AttnFwdTile<kHeadDim>::kPolyExp2Every, 1>;

/* This CTA's work tile: (split, tile head, sequence) = blockIdx. */
__device__ __forceinline__ AttnTileCoord attn_fwd_decode_tile()
{
    AttnTileCoord c;
    c.m_block = 0;
    c.split = static_cast<int>(blockIdx.x);
    c.head = static_cast<int>(blockIdx.y);
    c.batch = static_cast<int>(blockIdx.z);
    return c;
}

/* Q of the tile into buffer 0 by the leader: rows from q_row (the
 * sequence's first, query block 0) of tile head `head` (the KV head when
 * packed: the rank-5 map's coordinate; else the query head). */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_decode_load_q(const mgpu_attention_fwd_params &p,
                                                       typename Cfg::SharedStorage &smem, int q_row, int head,
                                                       int tma_batch)
{
    const mgpu_attention_fwd_args &a = p.args;
    if (a.pack_gqa) {
        const uint32_t rows = static_cast<uint32_t>(a.tile_queries * a.group_size);
        mbar_arrive_expect_tx(&smem.q_full[0], Cfg::kDimBlocks * rows * Cfg::kSwizzleBytes);
        load_q_packed<Cfg>(smem.q[0], &p.tmap_q, &smem.q_full[0], q_row, head, tma_batch);
    } else {
        mbar_arrive_expect_tx(&smem.q_full[0], Cfg::kQTileBytes);
        load_tile<Cfg, Cfg::kQBlockBytes>(smem.q[0], &p.tmap_q, &smem.q_full[0], q_row, head, tma_batch);
    }
}

/* The producer: Q, then the K / V of the tile's key blocks. The first warp
 * (lane 0 issuing) or, with gather, the whole warpgroup (K / V by cp.async;
 * thread 0 loads Q). */
template <class Cfg, bool kGather>
__device__ __forceinline__ void attn_fwd_decode_producer(const mgpu_attention_fwd_params &p,
                                                         typename Cfg::SharedStorage &smem)
{
    const mgpu_attention_fwd_args &a = p.args;
    const bool leader = threadIdx.x == 0;
    const AttnTileCoord c = attn_fwd_decode_tile();
    const bool varlen = a.cu_seqlens_q != 0;
    griddep_wait();
    /* Fixed-length: the tile's Q starts at row 0 of sequence c.batch. */
    if (leader && !varlen)
        attn_fwd_decode_load_q<Cfg>(p, smem, 0, c.head, c.batch);
    const AttnFwdWork w = attn_fwd_work<Cfg, true>(a, c);
    if (!attn_fwd_tile_active(w))
        return; /* varlen: a sequence without queries */
    if (leader && varlen)
        attn_fwd_decode_load_q<Cfg>(p, smem, w.q_offset, c.head, 0);
    if constexpr (kGather) {
        produce_kv_gather<Cfg>(p, smem, w, 0);
        cp_async_wait_all(); /* no copy outlives its thread */
    } else {
        if (a.block_table)
            produce_kv_paged<Cfg>(p, smem, w, 0, leader);
        else
            produce_kv<Cfg>(p, smem, w, 0, leader);
    }
}

/* Consumer warpgroup `consumer`: the tile's key loop, then its epilogue. */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_decode_consumer(const mgpu_attention_fwd_args &a,
                                                         typename Cfg::SharedStorage &smem, int consumer)
{
    constexpr int kTurnThreads = Cfg::kConsumerWarpgroups * Cfg::kWarpgroupThreads;
    /* Consumer 0 takes the first turn (attn_fwd_consumer); one consumer
     * warpgroup takes no turns. */
    if constexpr (Cfg::kConsumerWarpgroups > 1) {
        if (consumer == 1)
            named_barrier_arrive(Cfg::kBarrierTurnFirst + 0, kTurnThreads);
    }
    griddep_wait();
    const AttnFwdWork w = attn_fwd_work<Cfg, true>(a, attn_fwd_decode_tile());
    if (!attn_fwd_tile_active(w))
        return;
    const int count = w.n_block_end - w.n_block_begin;
    float o[Cfg::kHeadDim / 2];
#pragma unroll
    for (int i = 0; i < Cfg::kHeadDim / 2; ++i)
        o[i] = 0.f;
    OnlineSoftmax<Cfg::kBlockN, Cfg::kLazyRescale, Cfg::kPolyExp2Every> softmax;
    softmax.init();

    /* Q is in buffer 0 (also where the epilogue stages O). */
    mbar_wait(&smem.q_full[0], 0);
    if (count > 0)
        attn_fwd_consumer_tile<Cfg, true>(a, smem, w, consumer, 0, 0, o, softmax);

    float o_scale[2], lse[2];
    softmax.finalize(o_scale, lse);
    scale_rows(o, o_scale);
    /* The tile again for the epilogue (blockIdx, opaque here) rather than its
     * fields kept live through the key loop. */
    AttnTileCoord tile = attn_fwd_decode_tile();
    asm volatile("" : "+r"(tile.head), "+r"(tile.batch), "+r"(tile.split));
    const AttnFwdWork we = attn_fwd_work<Cfg, true>(a, tile);
    if (a.num_splits > 1) {
        attn_fwd_epilogue_partial<Cfg>(a, smem, we, consumer, 0, o, lse);
        /* The work tile's counter: the tiles are (sequence, tile head). */
        if (a.split_counters != 0)
            attn_fwd_merge_splits<Cfg>(a, smem, we, tile.batch * static_cast<int>(gridDim.y) + tile.head);
    } else {
        attn_fwd_epilogue<Cfg>(a, smem, we, consumer, 0, o, lse);
    }
}

template <class Cfg>
__device__ __forceinline__ void attention_fwd_decode(const mgpu_attention_fwd_params &p)
{
    using Smem = typename Cfg::SharedStorage;
    extern __shared__ uint8_t attn_smem_raw[];
    const uintptr_t base = reinterpret_cast<uintptr_t>(attn_smem_raw);
    Smem &smem = *reinterpret_cast<Smem *>((base + kSwizzleAtomBytes - 1) & ~uintptr_t(kSwizzleAtomBytes - 1));

    /* Paged K/V gathered by the producer warpgroup (as attention_fwd). */
    const bool gather = Cfg::kPagedGather && p.args.block_table && p.args.paged_gather;
    if (threadIdx.x == 0) {
        tma_prefetch_map(&p.tmap_q);
        tma_prefetch_map(&p.tmap_k);
        tma_prefetch_map(&p.tmap_v);
        attn_fwd_init_barriers<Cfg, 1>(smem, gather); /* one Q buffer: one tile per CTA */
    }
    __syncthreads();
    /* The stream's next grid may be scheduled once every CTA is here (see
     * attention_fwd); this grid's own wait comes in each role, after its
     * tile is worked out and before its first global access. */
    griddep_launch_dependents();

    const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / Cfg::kWarpgroupThreads, 0);
    if (warpgroup == 0) {
        setmaxnreg_dec<Cfg::kProducerRegisters>();
        if (gather) { /* false at compile time where !kPagedGather */
            if constexpr (Cfg::kPagedGather)
                attn_fwd_decode_producer<Cfg, true>(p, smem);
        } else if (threadIdx.x < 32) {
            attn_fwd_decode_producer<Cfg, false>(p, smem);
        }
    } else {
        setmaxnreg_inc<Cfg::kConsumerRegisters>();
        attn_fwd_decode_consumer<Cfg>(p.args, smem, warpgroup - 1);
    }
}

} // namespace sm90
} // namespace mgpu
