/*
 * Persistent tile scheduler of the Hopper attention forward.
 *
 * A work tile is one 128-row query block of one (batch, head). CTA c takes
 * tiles c, c + gridDim.x, c + 2 gridDim.x, ... (static round-robin: producer
 * and consumers walk the same sequence without talking to each other), so
 * the kernel is correct for any grid size.
 *
 * Measured on H100 (bf16, d128): a persistent grid of min(tiles, SMs) CTAs
 * with this static assignment is no faster non-causal and slower causal
 * (B=1, S=16384: 453 vs 687 TFLOP/s) than one tile per CTA, where the
 * hardware hands tiles to SMs as they free up (greedy, heavy tiles first by
 * this order). So causal, windowed and varlen calls launch grid = tiles; a
 * dynamic scheduler (an atomic tile counter) is what would make the
 * persistent grid pay there. Unmasked fixed-length calls have equal tiles, so
 * the static assignment is balanced; with Q double-buffered (head dims up to
 * 128) they run grid = min(tiles, SMs), which hides the per-tile Q load,
 * pipeline fill and O store behind the neighbouring tiles
 * (docs/performance.md, Attention forward).
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

/* Stateless: everything is recomputed from the kernel parameters (constant
 * bank) so that no register stays pinned across the consumers' main loop. */
template <int kBlockM>
struct AttnTileScheduler {
    const mgpu_attention_fwd_args &a;

    __device__ __forceinline__ explicit AttnTileScheduler(const mgpu_attention_fwd_args &args) : a(args) {}

    __device__ __forceinline__ int num_m_blocks() const { return (a.seqlen_q + kBlockM - 1) / kBlockM; }
    __device__ __forceinline__ int first() const { return static_cast<int>(blockIdx.x); }
    __device__ __forceinline__ int next(int tile) const { return tile + static_cast<int>(gridDim.x); }
    __device__ __forceinline__ bool valid(int tile) const { return tile < num_m_blocks() * a.heads_q * a.batch; }

    __device__ __forceinline__ AttnTileCoord decode(int tile) const
    {
        AttnTileCoord c;
        const int m_blocks = num_m_blocks();
        const int m = tile % m_blocks;
        const int rest = tile / m_blocks;
        c.m_block = a.causal ? m_blocks - 1 - m : m;
        c.head_q = rest % a.heads_q;
        c.batch = rest / a.heads_q;
        return c;
    }
};

} // namespace sm90
} // namespace mgpu
