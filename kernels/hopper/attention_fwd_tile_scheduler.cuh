/*
 * Tile scheduler of the Hopper attention forward.
 *
 * A work tile is one 128-row query block of one (batch, head). CTA c starts
 * with tile c; its producer thread takes each further tile either statically
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

/* head: the query head, or with GQA packing the KV head. */
struct AttnTileCoord {
    int m_block, head, batch, split;
};

/* Stateless: everything is recomputed from the kernel parameters (constant
 * bank) so that no register stays pinned across the consumers' main loop.
 * Tile sizes come from the arguments (tile_queries, tile_heads, num_splits);
 * the template parameter is kept for callers that name their query block
 * (the sm_100a kernel, whose runtime sets tile_queries = its block_m). */
template <int kBlockMUnused = 0>
struct AttnTileScheduler {
    const mgpu_attention_fwd_args &a;

    __device__ __forceinline__ explicit AttnTileScheduler(const mgpu_attention_fwd_args &args) : a(args) {}

    __device__ __forceinline__ int num_m_blocks() const { return (a.seqlen_q + a.tile_queries - 1) / a.tile_queries; }
    __device__ __forceinline__ int total() const { return num_m_blocks() * a.tile_heads * a.batch * a.num_splits; }
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
        c.split = tile % a.num_splits;
        tile /= a.num_splits;
        if (a.lpt_group > 0) {
            const int pairs = a.tile_heads * a.batch;
            const int group = tile / (m_blocks * a.lpt_group);
            const int first_pair = group * a.lpt_group;
            const int size = min(a.lpt_group, pairs - first_pair);
            const int r = tile - group * m_blocks * a.lpt_group;
            const int pair = first_pair + r % size;
            c.m_block = m_blocks - 1 - r / size;
            c.head = pair % a.tile_heads;
            c.batch = pair / a.tile_heads;
            return c;
        }
        const int m = tile % m_blocks;
        const int rest = tile / m_blocks;
        c.m_block = a.causal ? m_blocks - 1 - m : m;
        c.head = rest % a.tile_heads;
        c.batch = rest / a.tile_heads;
        return c;
    }
};

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

template <class Cfg>
__device__ __forceinline__ AttnFwdWork attn_fwd_work(const mgpu_attention_fwd_args &a, AttnTileCoord tile)
{
    AttnFwdWork w;
    w.m_block = tile.m_block;
    w.q_row0 = tile.m_block * a.tile_queries;
    w.row_div = a.pack_gqa ? a.group_size : 1;
    w.tile_rows = a.tile_queries * w.row_div;
    if (a.pack_gqa) {
        w.head_kv = tile.head;
        w.head_q = tile.head * a.group_size;
    } else {
        w.head_q = tile.head;
        w.head_kv = tile.head / a.group_size;
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
        if (a.seqused_k != 0)
            w.seqlen_k = reinterpret_cast<const int32_t *>(a.seqused_k)[w.batch];
    }
    w.mask = AttnMask::make(w.seqlen_q, w.seqlen_k, a.window_left, a.window_right, a.causal);

    /* Keys any row of this tile may see. */
    const int row_first = w.q_row0;
    const int row_last = min(row_first + a.tile_queries, w.seqlen_q) - 1;
    const int key_begin = max(0, w.mask.key_begin(row_first));
    const int key_end = w.mask.key_end(row_last);
    w.n_block_begin = key_begin / Cfg::kBlockN;
    w.n_block_end = key_end <= key_begin ? w.n_block_begin : (key_end + Cfg::kBlockN - 1) / Cfg::kBlockN;
    if (a.num_splits > 1) {
        const int per = (w.n_block_end - w.n_block_begin + a.num_splits - 1) / a.num_splits;
        const int begin = min(w.n_block_end, w.n_block_begin + w.split * per);
        w.n_block_end = min(w.n_block_end, begin + per);
        w.n_block_begin = begin;
    }
    return w;
}

/* varlen: query blocks past this sequence's end are no work at all. (The
 * second parameter, a query block, is unused: the work carries q_row0.) */
__device__ __forceinline__ bool attn_fwd_tile_active(const AttnFwdWork &w, int = 0)
{
    return w.q_row0 < w.seqlen_q;
}

} // namespace sm90
} // namespace mgpu
