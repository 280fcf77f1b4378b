/*
 * Tile scheduler of the Hopper attention forward.
 *
 * A work tile is one 128-row (the wide entry: 192-row) query block of one
 * (batch, head). CTA c starts
 * with tile c; its producer warp takes each further tile either statically
 * (c + gridDim.x, c + 2 gridDim.x, ...) or, when the runtime passes
 * tile_counter, dynamically: gridDim.x + atomicAdd(counter, 1), so a CTA that
 * finishes a light tile early takes the next one (greedy list scheduling).
 * The producer publishes each tile index beside the Q buffer it loads
 * (consumers read it after q_full), and -1 when it has no more; the
 * consumers never compute tile indices themselves.
 *
 * Grid choice (src/attention/attention_plan.c): one tile per CTA where tiles are long
 * (the hardware hands CTAs to SMs as they free up), a persistent grid of
 * min(tiles, SMs) for short key loops with Q double-buffered, which hides
 * each tile's Q load, pipeline fill and O store behind its neighbours
 * (docs/decisions/007-attention-persistent-grid-short-loops.md). Causal
 * tiles differ in length, so their persistent grid takes tiles dynamically
 * (docs/decisions/005-causal-attention-dynamic-tiles.md).
 *
 * Order. Default: query block fastest, then head, then batch; consecutive
 * tiles share a head, so the CTAs running at one moment read the K/V of only
 * a few heads and those stay in L2; with causal masking the query blocks of
 * a head run in reverse (most keys first). With lpt_group = G (causal,
 * dynamic): (batch, head) pairs are taken G at a time, G chosen so that
 * their K/V fit in L2, and inside a group the query blocks run heaviest
 * first across all G heads (longest-processing-time first), so the light
 * tiles of a group fill the tail.
 */
#pragma once

#include "abi/attention_abi.h"
#include "hopper/attention_fwd_mask.cuh"

namespace mgpu {
namespace sm90 {

/* Quotient and remainder of non-negative ints, unsigned: about half the
 * instructions and registers of the signed forms, which matters to the
 * producer warp (kProducerRegisters). */
__device__ __forceinline__ int udiv(int a, int b)
{
    return static_cast<int>(static_cast<unsigned>(a) / static_cast<unsigned>(b));
}
__device__ __forceinline__ int umod(int a, int b)
{
    return static_cast<int>(static_cast<unsigned>(a) % static_cast<unsigned>(b));
}

/* head: the query head, or with GQA packing the KV head. */
struct AttnTileCoord {
    int m_block, head, batch, split;
};

/* Stateless: everything is recomputed from the kernel parameters (constant
 * bank) so that no register stays pinned across the consumers' main loop.
 * kTileQueries = 0: tile sizes come from the arguments (tile_queries,
 * tile_heads, num_splits). kTileQueries > 0: the caller knows that the call
 * uses none of the inference features, so a tile is kTileQueries queries of
 * one query head, unsplit (the runtime then sets tile_queries = kTileQueries,
 * tile_heads = heads_q, num_splits = 1); the divisions by the tile size are
 * then by a constant, and splits fold away (the sm_100a kernel passes its
 * block_m: its runtime sets those fields so). */
template <int kTileQueries = 0>
struct AttnTileScheduler {
    const mgpu_attention_fwd_args &a;

    __device__ __forceinline__ explicit AttnTileScheduler(const mgpu_attention_fwd_args &args) : a(args) {}

    __device__ __forceinline__ int tile_queries() const { return kTileQueries > 0 ? kTileQueries : a.tile_queries; }
    __device__ __forceinline__ int tile_heads() const { return kTileQueries > 0 ? a.heads_q : a.tile_heads; }
    __device__ __forceinline__ int num_splits() const { return kTileQueries > 0 ? 1 : a.num_splits; }
    __device__ __forceinline__ int num_m_blocks() const { return udiv(a.seqlen_q + tile_queries() - 1, tile_queries()); }
    __device__ __forceinline__ int total() const { return num_m_blocks() * tile_heads() * a.batch * num_splits(); }
    __device__ __forceinline__ int first() const { return static_cast<int>(blockIdx.x); }
    __device__ __forceinline__ bool valid(int tile) const { return tile < total(); }

    /* The producer's next tile (see above); once it is past the end, the last
     * CTA to get there leaves both counters at 0 for the next launch. */
    __device__ __forceinline__ int next(int tile) const
    {
        if (!a.tile_counter)
            return tile + static_cast<int>(gridDim.x);
        int *counters = reinterpret_cast<int *>(a.tile_counter);
        const int t = static_cast<int>(gridDim.x) + atomicAdd(&counters[0], 1);
        if (t >= total()) {
            __threadfence(); /* this CTA's last take of counters[0] before its count in counters[1] */
            if (atomicAdd(&counters[1], 1) == static_cast<int>(gridDim.x) - 1) {
                /* every CTA has taken its last (empty) tile: nobody reads counters[0] again */
                __threadfence();
                atomicExch(&counters[0], 0);
                atomicExch(&counters[1], 0);
            }
        }
        return t;
    }

    __device__ __forceinline__ AttnTileCoord decode(int tile) const
    {
        AttnTileCoord c;
        const int m_blocks = num_m_blocks();
        /* Splits of one work tile are neighbours (num_splits 1: split 0). */
        c.split = umod(tile, num_splits());
        tile = udiv(tile, num_splits());
        if (a.lpt_group > 0) {
            const int heads = tile_heads();
            const int pairs = heads * a.batch;
            const int group = udiv(tile, m_blocks * a.lpt_group);
            const int first_pair = group * a.lpt_group;
            const int size = min(a.lpt_group, pairs - first_pair);
            const int r = tile - group * m_blocks * a.lpt_group;
            const int pair = first_pair + umod(r, size);
            c.m_block = m_blocks - 1 - udiv(r, size);
            c.head = umod(pair, heads);
            c.batch = udiv(pair, heads);
            return c;
        }
        const int m = umod(tile, m_blocks);
        const int rest = udiv(tile, m_blocks);
        c.m_block = a.causal ? m_blocks - 1 - m : m;
        c.head = umod(rest, tile_heads());
        c.batch = udiv(rest, tile_heads());
        return c;
    }
};

/* The sm_90a kernel's scheduler with (kInference) or without the inference
 * features. */
template <class Cfg, bool kInference>
using AttnFwdScheduler = AttnTileScheduler<kInference ? 0 : Cfg::kBlockM>;

/* One work tile: one query block of one head (or, packed, one KV head's
 * group of query heads) of one sequence, or one split of its key blocks.
 * Tile row r holds query q_row0 + r / row_div of head head_q + r % row_div. */
struct AttnFwdWork {
    int m_block;       /* query tile index within the sequence */
    int q_row0;        /* first query of the tile */
    int row_div;       /* group_size when packed, else 1 */
    int tile_rows;     /* rows of the tile that hold queries: tile_queries * row_div */
    int head_q, head_kv;
    int batch;
    int split;
    int tma_batch;     /* batch coordinate of the tensor maps (0 when varlen) */
    int q_offset;      /* first row of the sequence in the (packed) Q/O rows */
    int k_offset;      /* first row of the sequence in the (packed) K/V rows */
    int seqlen_q, seqlen_k;
    int n_block_begin; /* key blocks [begin, end) survive the mask */
    int n_block_end;
    AttnMask mask;
};

/* kInference false: the caller knows that the call uses none of the
 * inference features (pack_gqa 0, num_splits 1, seqused_k and block_table 0,
 * see attn_fwd_inference), which then fold away at compile time. */
template <class Cfg, bool kInference = true>
__device__ __forceinline__ AttnFwdWork attn_fwd_work(const mgpu_attention_fwd_args &a, AttnTileCoord tile)
{
    AttnFwdWork w;
    const bool packed = kInference && a.pack_gqa;
    w.m_block = tile.m_block;
    w.q_row0 = tile.m_block * (kInference ? a.tile_queries : Cfg::kBlockM);
    w.row_div = packed ? a.group_size : 1;
    w.tile_rows = (kInference ? a.tile_queries : Cfg::kBlockM) * w.row_div;
    if (packed) {
        w.head_kv = tile.head;
        w.head_q = tile.head * a.group_size;
    } else {
        w.head_q = tile.head;
        w.head_kv = udiv(tile.head, a.group_size);
    }
    w.batch = tile.batch;
    w.split = tile.split;
    if (a.cu_seqlens_q != 0) {
        const int32_t *cu_q = reinterpret_cast<const int32_t *>(a.cu_seqlens_q);
        const int32_t *cu_k = reinterpret_cast<const int32_t *>(a.cu_seqlens_k);
        w.q_offset = cu_q[w.batch];
        w.seqlen_q = cu_q[w.batch + 1] - w.q_offset;
        w.k_offset = cu_k[w.batch];
        w.seqlen_k = cu_k[w.batch + 1] - w.k_offset;
        w.tma_batch = 0;
    } else {
        w.q_offset = 0;
        w.k_offset = 0;
        w.seqlen_q = a.seqlen_q;
        w.seqlen_k = a.seqlen_k;
        w.tma_batch = w.batch;
        if (kInference && a.seqused_k != 0)
            w.seqlen_k = reinterpret_cast<const int32_t *>(a.seqused_k)[w.batch];
    }
    w.mask = AttnMask::make(w.seqlen_q, w.seqlen_k, a.window_left, a.window_right, a.causal);

    /* Keys any row of this tile may see. */
    const int row_first = w.q_row0;
    const int row_last = min(row_first + (kInference ? a.tile_queries : Cfg::kBlockM), w.seqlen_q) - 1;
    const int key_begin = max(0, w.mask.key_begin(row_first));
    const int key_end = w.mask.key_end(row_last);
    w.n_block_begin = udiv(key_begin, Cfg::kBlockN);
    w.n_block_end = key_end <= key_begin ? w.n_block_begin : udiv(key_end + Cfg::kBlockN - 1, Cfg::kBlockN);
    if (kInference && a.num_splits > 1) {
        const int splits = a.num_splits;
        const int per = udiv(w.n_block_end - w.n_block_begin + splits - 1, splits);
        const int begin = min(w.n_block_end, w.n_block_begin + w.split * per);
        w.n_block_end = min(w.n_block_end, begin + per);
        w.n_block_begin = begin;
    }
    return w;
}

/* Whether a call uses any of the inference features (run-time fields of
 * abi/attention_abi.h); the sm_90a kernel runs a variant of its code
 * without them when it does not. */
__device__ __forceinline__ bool attn_fwd_inference(const mgpu_attention_fwd_args &a)
{
    return a.pack_gqa != 0 || a.num_splits > 1 || a.seqused_k != 0 || a.block_table != 0;
}

/* varlen: query blocks past this sequence's end are no work at all. (The
 * second parameter, a query block, is unused: the work carries q_row0.) */
__device__ __forceinline__ bool attn_fwd_tile_active(const AttnFwdWork &w, int = 0)
{
    return w.q_row0 < w.seqlen_q;
}

} // namespace sm90
} // namespace mgpu
