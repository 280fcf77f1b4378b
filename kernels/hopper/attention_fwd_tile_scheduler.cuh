/*
 * Persistent tile scheduler of the Hopper attention forward.
 *
 * A work tile is one 128-row query block of one (batch, head). The grid is
 * min(tiles, SMs) CTAs; CTA c takes tiles c, c + gridDim.x, c + 2 gridDim.x, ...
 * (static round-robin: producer and consumers walk the same sequence without
 * talking to each other).
 *
 * Linear order: query block fastest, then head, then batch. Consecutive tiles
 * share a head, so the CTAs running at one moment read the K/V of only a few
 * heads and those stay in L2. With causal masking the query blocks of a head
 * run in reverse (most keys first): the heavy tiles of each head start first
 * and the light ones fill the tail of the wave.
 */
#pragma once

namespace mgpu {
namespace sm90 {

struct AttnTileCoord {
    int m_block, head_q, batch;
};

template <int kBlockM>
struct AttnTileScheduler {
    int num_m_blocks;
    int heads_q;
    int num_tiles;
    bool reverse_m;

    __device__ __forceinline__ explicit AttnTileScheduler(const mgpu_attention_fwd_args &a)
    {
        num_m_blocks = (a.seqlen_q + kBlockM - 1) / kBlockM;
        heads_q = a.heads_q;
        num_tiles = num_m_blocks * a.heads_q * a.batch;
        reverse_m = a.causal != 0;
    }

    __device__ __forceinline__ int first() const { return static_cast<int>(blockIdx.x); }
    __device__ __forceinline__ int next(int tile) const { return tile + static_cast<int>(gridDim.x); }
    __device__ __forceinline__ bool valid(int tile) const { return tile < num_tiles; }

    __device__ __forceinline__ AttnTileCoord decode(int tile) const
    {
        AttnTileCoord c;
        const int m = tile % num_m_blocks;
        const int rest = tile / num_m_blocks;
        c.m_block = reverse_m ? num_m_blocks - 1 - m : m;
        c.head_q = rest % heads_q;
        c.batch = rest / heads_q;
        return c;
    }
};

} // namespace sm90
} // namespace mgpu
