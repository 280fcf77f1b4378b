/*
 * Hopper attention forward: the producer's TMA loop and the consumers' main loop.
 *
 * Producer (one warp, lane 0 issuing), per tile: Q on q_full (after q_empty); then for i = 0, 1, ... over the key
 * blocks n = end-1-i (last block first, so the masked diagonal comes early),
 * stage s = g % kStages (g counts key blocks over all tiles of the CTA):
 * wait k_empty[s], load K[n] on k_full[s]; wait v_empty[s], load V[n] on
 * v_full[s]. Empty barriers start "free": the first round waits for the
 * parity of the phase before the first.
 *
 * Consumer warpgroup c (64 rows), key blocks i = 0 .. count-1, with the GEMMs of
 * each step issued during its ping-pong turn (bar.sync turn[c] ... bar.arrive
 * turn[1-c]; with three consumer warpgroups turn[(c+1) % 3]):
 *
 *   i = 0:   turn{ S = Q K[0]^T }             wait; free K[0]; softmax(S) -> P
 *   i >= 1:  turn{ S = Q K[i]^T ; O += P V[i-1] }
 *            wait for S only (1 group pending); free K[i]; softmax(S) -> scale
 *            wait for O += P V; free V[i-1]; O *= scale; P <- S (16-bit)
 *   last:    turn{ O += P V[count-1] }        tail(); wait; free V[count-1]
 *
 * So the softmax of block i runs while the tensor cores still compute P V of
 * block i-1 (intra-warpgroup overlap), and while the other warpgroup's GEMMs
 * run (ping-pong). P stays in registers as the A operand of the second wgmma.
 */
#pragma once

#include <stdint.h>
#include <type_traits>

#include "abi/attention_abi.h"
#include "common/async_copy.cuh"
#include "common/barrier.cuh"
#include "common/numeric.cuh"
#include "common/shared_memory.cuh"
#include "common/thread_index.cuh"
#include "hopper/attention_fwd_mask.cuh"
#include "hopper/attention_fwd_softmax.cuh"
#include "hopper/attention_fwd_tile_scheduler.cuh"
#include "hopper/attention_fwd_timeline.cuh"
#include "hopper/wgmma.cuh"

namespace mgpu {
namespace sm90 {

/* Loads one tile (kDimBlocks boxes of 64 head-dim columns) of rows starting at `row`. */
template <class Cfg, int kBlockBytes>
__device__ __forceinline__ void load_tile(uint8_t *dst, const CUtensorMap *map, uint64_t *bar, int row, int head,
                                          int tma_batch)
{
#pragma unroll
    for (int d = 0; d < Cfg::kDimBlocks; ++d)
        tma_load_4d(dst + d * kBlockBytes, map, bar, d * Cfg::kSwizzleElems, row, head, tma_batch);
}

/* Q of a GQA-packed tile: one rank-5 box {64, group, queries, 1, 1} per 64
 * head-dim columns (abi/attention_abi.h, "GQA packing"). */
template <class Cfg>
__device__ __forceinline__ void load_q_packed(uint8_t *dst, const CUtensorMap *map, uint64_t *bar, int row, int head_kv,
                                              int tma_batch)
{
#pragma unroll
    for (int d = 0; d < Cfg::kDimBlocks; ++d) {
        const int32_t coords[5] = {d * Cfg::kSwizzleElems, 0, row, head_kv, tma_batch};
        ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, dst + d * Cfg::kQBlockBytes, map, coords, bar);
    }
}

/* One TMA box of a key block of a paged cache: its page and its first row
 * within that page. */
struct PagedBox {
    int page, within;
};

/* Box b of key block n (when the block has one: b < kBlockN / page_box_rows,
 * at most 8 as page_box_rows = gcd(page_size, kBlockN) >= 16; each box lies
 * inside one page): `page` is the sequence's page index (its entry in the
 * sequence's row of the block table), -1 where the block has no box b. */
template <class Cfg>
__device__ __forceinline__ PagedBox paged_box_place(const mgpu_attention_fwd_args &a, int n, int b)
{
    PagedBox x{-1, 0};
    if (b * a.page_box_rows < Cfg::kBlockN) {
        const int row = n * Cfg::kBlockN + b * a.page_box_rows;
        x.page = udiv(row, a.page_size);
        x.within = row - x.page * a.page_size;
    }
    return x;
}

/* The cache page of the sequence's page index `page` (-1: none, 0). Entries
 * past the sequence's last page (last_entry) are not read: rows of the last
 * block past the sequence (masked) come from the last page again.
 * first_entry: the sequence's row of the table. */
__device__ __forceinline__ int paged_table_page(const mgpu_attention_fwd_args &a, int first_entry, int last_entry,
                                                int page)
{
    return page < 0 ? 0 : __ldg(&reinterpret_cast<const int32_t *>(a.block_table)[min(first_entry + page, last_entry)]);
}

/* The loads of one key block of a paged cache by a whole warp: lane b holds
 * box b's page; within0 is box 0's first row in its page (box b's follows by
 * box_rows, modulo page_size, as box_rows divides page_size). Four boxes at
 * a time: their pages gathered first (independent shuffles), then the
 * leader issues their loads back to back. */
template <class Cfg>
__device__ __forceinline__ void issue_kv_boxes(uint8_t *dst, const CUtensorMap *map, uint64_t *bar, int box_rows,
                                               int page_size, int head_kv, int page, int within0, bool leader)
{
    constexpr int kGroup = 4;
    int within = within0;
    for (int b0 = 0; b0 * box_rows < Cfg::kBlockN; b0 += kGroup) {
        int pages[kGroup];
#pragma unroll
        for (int g = 0; g < kGroup; ++g)
            pages[g] = __shfl_sync(0xffffffffu, page, b0 + g);
        if (leader) {
#pragma unroll
            for (int g = 0; g < kGroup; ++g) {
                const int b = b0 + g;
                if (b * box_rows < Cfg::kBlockN) {
#pragma unroll
                    for (int d = 0; d < Cfg::kDimBlocks; ++d)
                        tma_load_4d(dst + b * box_rows * Cfg::kSwizzleBytes + d * Cfg::kKVBlockBytes, map, bar,
                                    d * Cfg::kSwizzleElems, within, head_kv, pages[g]);
                    within += box_rows;
                    if (within >= page_size)
                        within -= page_size;
                }
            }
        }
    }
}

/* The K and V loads of one tile of a paged cache by a whole warp, from its
 * last key block down to its first; returns the key-block count over all
 * tiles. Lane b looks up box b, one block ahead: the table entries of block
 * n - 1 are read while block n waits for its stages, so that the next
 * block's K loads, which follow V[n]'s at once (K[n - 1]'s stage is free by
 * then), do not wait for a table read first. A lane's place moves down by
 * kBlockN rows a block (whole pages and rows, with a borrow): one division
 * per tile, none per block. */
template <class Cfg>
__device__ __forceinline__ int produce_kv_paged(const mgpu_attention_fwd_params &p, typename Cfg::SharedStorage &smem,
                                                const AttnFwdWork &w, int kv_iter, bool leader)
{
    const mgpu_attention_fwd_args &a = p.args;
    const int count = w.n_block_end - w.n_block_begin;
    const int n_last = w.n_block_end - 1, head_kv = w.head_kv, box_rows = a.page_box_rows;
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int first_entry = w.batch * a.block_table_stride; /* < 2^31: the runtime checks */
    const int last_entry = first_entry + udiv(max(0, w.seqlen_k - 1), a.page_size);
    /* kBlockN = step_pages * page_size + step_rows */
    const int step_pages = udiv(Cfg::kBlockN, a.page_size);
    const int step_rows = Cfg::kBlockN - step_pages * a.page_size;
    const bool has_box = lane * box_rows < Cfg::kBlockN;
    PagedBox at = paged_box_place<Cfg>(a, n_last, lane); /* this lane's box of the block looked up next */
    int page = 0;                                        /* its cache page */
    if (count > 0)
        page = paged_table_page(a, first_entry, last_entry, at.page);
    for (int i = 0; i < count; ++i, ++kv_iter) {
        const int stage = kv_iter % Cfg::kStages;
        const uint32_t phase = (kv_iter / Cfg::kStages) & 1;
        const int within = __shfl_sync(0xffffffffu, at.within, 0); /* box 0's */
        if (has_box) {
            at.page -= step_pages;
            at.within -= step_rows;
            if (at.within < 0) {
                at.within += a.page_size;
                at.page -= 1;
            }
        }
        int next_page = 0;
        if (i + 1 < count)
            next_page = paged_table_page(a, first_entry, last_entry, at.page);
        mbar_wait(&smem.k_empty[stage], phase ^ 1);
        if (leader)
            mbar_arrive_expect_tx(&smem.k_full[stage], Cfg::kKVTileBytes);
        issue_kv_boxes<Cfg>(smem.k[stage], &p.tmap_k, &smem.k_full[stage], box_rows, a.page_size, head_kv, page, within,
                            leader);
        mbar_wait(&smem.v_empty[stage], phase ^ 1);
        if (leader)
            mbar_arrive_expect_tx(&smem.v_full[stage], Cfg::kKVTileBytes);
        issue_kv_boxes<Cfg>(smem.v[stage], &p.tmap_v, &smem.v_full[stage], box_rows, a.page_size, head_kv, page, within,
                            leader);
        page = next_page;
    }
    return kv_iter;
}

/* One K or V tile of a key block of a paged cache gathered by the producer
 * warpgroup's 128 threads (paged_gather): thread t copies the 16-byte chunk
 * t % 8 of rows t / 8 + 16 g (g < kBlockN / 16) in every 64-column block, to
 * where the 128-byte swizzle of the TMA boxes puts it (chunk c of tile row r
 * at chunk c ^ (r % 8) of the row, rows 128 bytes apart, tiles 1024-byte
 * aligned). A 16-row group lies in one page (page_size is a multiple of 16):
 * `rows` (shared memory, 16-byte aligned) holds the global address of group
 * g's first row at 8 g, so that two groups cost a thread one shared load,
 * two adds and their copies. Rows from `valid` on
 * (past the sequence) and columns past the head dim are zero-filled.
 * row_stride in elements. The copies' completion arrives on bar (128
 * arrivals a phase). */
template <class Cfg>
__device__ __forceinline__ void gather_kv_tile(uint8_t *tile, uint64_t *bar, uint32_t rows, int64_t row_stride,
                                               int valid)
{
    constexpr int kChunks = Cfg::kSwizzleBytes / 16;
    constexpr int kRowStep = Cfg::kGatherRowStep;
    static_assert(Cfg::kBlockN % kRowStep == 0 && Cfg::kGatherGroups <= 16, "two lanes a 16-row group");
    static_assert(Cfg::kGatherGroups % 2 == 0, "row groups in pairs");
    /* The thread index read here (volatile: not hoisted), so that what
     * derives from it is not held in registers across the producer's loops
     * (24 registers). */
    const int thread = static_cast<int>(opaque_tid_x() % Cfg::kWarpgroupThreads);
    const int chunk = thread % kChunks, row = thread / kChunks;
    uint32_t dst = smem_u32(tile) + row * Cfg::kSwizzleBytes + ((chunk ^ (row % 8)) * 16);
    const uint64_t offset = static_cast<uint64_t>(row * row_stride) * Cfg::kElementBytes + chunk * 16;
    valid -= row;
#pragma unroll 1
    for (int g = 0; g < Cfg::kGatherGroups; g += 2) {
        const ulonglong2 pair = ld_shared_u64x2(rows + 8 * g);
        const uint64_t at[2] = {pair.x + offset, pair.y + offset};
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const uint32_t bytes = (g + i) * kRowStep < valid ? 16u : 0u;
#pragma unroll
            for (int d = 0; d < Cfg::kDimBlocks; ++d) {
                const bool in_dim = d * Cfg::kSwizzleElems + chunk * 8 < Cfg::kHeadDim;
                cp_async_16(dst + i * kRowStep * Cfg::kSwizzleBytes + d * Cfg::kKVBlockBytes,
                            at[i] + d * Cfg::kSwizzleBytes, in_dim ? bytes : 0u);
            }
        }
        dst += 2 * kRowStep * Cfg::kSwizzleBytes;
    }
    cp_async_arrive_noinc(bar);
}

/* The K and V loads of one tile of a paged cache by the producer warpgroup
 * (paged_gather, all 128 threads), from its last key block down to its
 * first; returns the key-block count over all tiles. Each warp works out a
 * block's row addresses once: lane l < 2 kGatherGroups those of 16-row group
 * l % kGatherGroups of K (l < kGatherGroups) or V, from the page it looked up
 * one block ahead (as produce_kv_paged; the four warps read the same
 * entries). */
template <class Cfg>
__device__ __forceinline__ int produce_kv_gather(const mgpu_attention_fwd_params &p, typename Cfg::SharedStorage &smem,
                                                 const AttnFwdWork &w, int kv_iter)
{
    constexpr int kGroups = Cfg::kGatherGroups;
    const mgpu_attention_fwd_args &a = p.args;
    const int lane = static_cast<int>(threadIdx.x % 32);
    /* The tile's constants go to the warp's slot of shared memory and are
     * read back where used (volatile loads, not hoisted), not held in
     * registers through the key loop: the producer has 24 registers. */
    const uint32_t slot = smem_u32(smem.gather_state[threadIdx.x / 32 % 4]);
    enum { kFirstEntry, kLastEntry, kSeqlenK, kHeadKv, kEnd };
    auto state = [&](int i) { return ld_shared_s32(slot + 4 * i); };
    if (lane == 0) {
        const int first_entry = w.batch * a.block_table_stride; /* < 2^31: the runtime checks */
        st_shared_u32(slot + 4 * kFirstEntry, first_entry);
        st_shared_u32(slot + 4 * kLastEntry, first_entry + udiv(max(0, w.seqlen_k - 1), a.page_size));
        st_shared_u32(slot + 4 * kSeqlenK, w.seqlen_k);
        st_shared_u32(slot + 4 * kHeadKv, w.head_kv);
        st_shared_u32(slot + 4 * kEnd, kv_iter + w.n_block_end - w.n_block_begin);
    }
    __syncwarp();
    const int group = lane % kGroups;
    const bool v_lane = lane >= kGroups;
    /* The page of this lane's 16-row group of key block n (lanes past the
     * block's groups look up entries nobody reads). */
    auto group_page = [&](int n) {
        return paged_table_page(a, state(kFirstEntry), state(kLastEntry),
                                udiv(n * Cfg::kBlockN + group * Cfg::kGatherRowStep, a.page_size));
    };
    int n = w.n_block_end - 1;
    int page = 0;
    if (kv_iter < state(kEnd))
        page = group_page(n);
    const uint32_t rows = slot + 8 * 4; /* K's group g at 8 g, V's at 8 (kGroups + g) */
    for (; kv_iter < state(kEnd); ++kv_iter, --n) {
        __syncwarp(); /* every lane's reads of the previous block's rows are done */
        if (lane < 2 * kGroups) {
            const int row = n * Cfg::kBlockN + group * Cfg::kGatherRowStep;
            const int within = row - udiv(row, a.page_size) * a.page_size;
            const uint64_t head = static_cast<uint64_t>(state(kHeadKv));
            const uint64_t base = v_lane ? a.paged_v + head * a.v_head_stride * Cfg::kElementBytes
                                         : a.paged_k + head * a.k_head_stride * Cfg::kElementBytes;
            const int64_t page_stride = v_lane ? a.v_batch_stride : a.k_batch_stride;
            const int64_t row_stride = v_lane ? a.v_seq_stride : a.k_seq_stride;
            st_shared_u64(rows + 8 * lane,
                          base + static_cast<uint64_t>(page * page_stride + within * row_stride) * Cfg::kElementBytes);
        }
        __syncwarp();
        const int stage = kv_iter % Cfg::kStages;
        const uint32_t phase = (kv_iter / Cfg::kStages) & 1;
        int next_page = 0;
        if (kv_iter + 1 < state(kEnd))
            next_page = group_page(n - 1);
        const int row0 = n * Cfg::kBlockN;
        mbar_wait(&smem.k_empty[stage], phase ^ 1);
        gather_kv_tile<Cfg>(smem.k[stage], &smem.k_full[stage], rows, a.k_seq_stride, state(kSeqlenK) - row0);
        /* Stage and phase again from kv_iter (opaque here): not held
         * through the K copies. */
        asm volatile("" : "+r"(kv_iter));
        mbar_wait(&smem.v_empty[kv_iter % Cfg::kStages], ((kv_iter / Cfg::kStages) & 1) ^ 1);
        gather_kv_tile<Cfg>(smem.v[kv_iter % Cfg::kStages], &smem.v_full[kv_iter % Cfg::kStages], rows + 8 * kGroups,
                            a.v_seq_stride, state(kSeqlenK) - row0);
        page = next_page;
    }
    __syncwarp(); /* the slot's next write follows every lane's last read */
    return kv_iter;
}

/* The row coordinate of key block n's V tile: K's, unless the configuration
 * says where its V tiles lie (Cfg::v_tile_row: the fp8 kernel's V^T in the
 * workspace). */
template <class Cfg, class = void>
struct VTileRow {
    static __device__ __forceinline__ int of(const mgpu_attention_fwd_args &, const AttnFwdWork &w, int n)
    {
        return w.k_offset + n * Cfg::kBlockN;
    }
};

template <class Cfg>
struct VTileRow<Cfg, std::void_t<decltype(&Cfg::v_tile_row)>> {
    static __device__ __forceinline__ int of(const mgpu_attention_fwd_args &a, const AttnFwdWork &w, int n)
    {
        return Cfg::v_tile_row(a, w, n);
    }
};

/* The K and V loads of one tile of a contiguous cache by one thread (the
 * leader), from its last key block down to its first; returns the key-block
 * count over all tiles. */
template <class Cfg>
__device__ __forceinline__ int produce_kv(const mgpu_attention_fwd_params &p, typename Cfg::SharedStorage &smem,
                                          const AttnFwdWork &w, int kv_iter, bool leader)
{
    const int count = w.n_block_end - w.n_block_begin;
    const int n_last = w.n_block_end - 1, head_kv = w.head_kv;
    for (int i = 0; i < count; ++i, ++kv_iter) {
        const int n = n_last - i;
        const int stage = kv_iter % Cfg::kStages;
        const uint32_t phase = (kv_iter / Cfg::kStages) & 1;
        mbar_wait(&smem.k_empty[stage], phase ^ 1);
        if (leader) {
            mbar_arrive_expect_tx(&smem.k_full[stage], Cfg::kKVTileBytes);
            load_tile<Cfg, Cfg::kKVBlockBytes>(smem.k[stage], &p.tmap_k, &smem.k_full[stage],
                                               w.k_offset + n * Cfg::kBlockN, head_kv, w.tma_batch);
        }
        mbar_wait(&smem.v_empty[stage], phase ^ 1);
        if (leader) {
            mbar_arrive_expect_tx(&smem.v_full[stage], Cfg::kKVTileBytes);
            load_tile<Cfg, Cfg::kKVBlockBytes>(smem.v[stage], &p.tmap_v, &smem.v_full[stage],
                                               VTileRow<Cfg>::of(p.args, w, n), head_kv, w.tma_batch);
        }
    }
    return kv_iter;
}

/* Called by a whole warp (the kernel's choice: its loop state is then
 * warp-uniform, which the compiler keeps in uniform registers, and the
 * producer fits kProducerRegisters) or by one thread; the first active lane
 * issues the loads and arrivals. kWarp: the caller is a whole warp, whose
 * lanes then look up a paged block's boxes (produce_kv_paged); one thread
 * loads contiguous caches only. */
template <class Cfg, bool kInference = true, bool kWarp = false>
__device__ __forceinline__ void attn_fwd_producer(const mgpu_attention_fwd_params &p,
                                                  typename Cfg::SharedStorage &smem,
                                                  const AttnFwdScheduler<Cfg, kInference> &scheduler)
{
    const unsigned lanes = __activemask();
    const int first_lane = __ffs(lanes) - 1;
    const bool leader = static_cast<int>(threadIdx.x % 32) == first_lane;
    auto next = [&](int t) {
        if (!p.args.tile_counter)
            return scheduler.next(t);
        int n = 0;
        if (leader)
            n = scheduler.next(t);
        return __shfl_sync(lanes, n, first_lane);
    };
    int kv_iter = 0; /* key blocks loaded so far, over all tiles: stage and phase */
    int q_iter = 0;  /* tiles loaded so far: q_empty / q_full phase */
    int t = scheduler.first();
    if (!scheduler.valid(t))
        t = next(t); /* a dynamic scheduler counts every CTA out */
    for (; scheduler.valid(t); t = next(t)) {
        const AttnFwdWork w = attn_fwd_work<Cfg, kInference>(p.args, scheduler.decode(t));
        if (!attn_fwd_tile_active(w))
            continue;
        /* A Q buffer is free once all consumers have stored from it the O of
         * the tile it last held (kQStages tiles ago). The tile index goes
         * beside it; q_full's arrival publishes both. */
        const int q_stage = q_iter % Cfg::kQStages;
        mbar_wait(&smem.q_empty[q_stage], ((q_iter / Cfg::kQStages) & 1) ^ 1);
        if (leader) {
            st_shared_u32(smem_u32(&smem.q_tile[q_stage]), static_cast<uint32_t>(t));
            if (kInference && p.args.pack_gqa) {
                mbar_arrive_expect_tx(&smem.q_full[q_stage], Cfg::kDimBlocks * w.tile_rows * Cfg::kSwizzleBytes);
                load_q_packed<Cfg>(smem.q[q_stage], &p.tmap_q, &smem.q_full[q_stage], w.q_offset + w.q_row0,
                                   w.head_kv, w.tma_batch);
            } else {
                mbar_arrive_expect_tx(&smem.q_full[q_stage], Cfg::kQTileBytes);
                load_tile<Cfg, Cfg::kQBlockBytes>(smem.q[q_stage], &p.tmap_q, &smem.q_full[q_stage],
                                                  w.q_offset + w.q_row0, w.head_q, w.tma_batch);
            }
        }
        MGPU_ATTN_FWD_STAMP(p.args, kTlQIssued, leader && q_iter == 0);
        ++q_iter;
        if constexpr (kWarp) {
            kv_iter = kInference && p.args.block_table ? produce_kv_paged<Cfg>(p, smem, w, kv_iter, leader)
                                                       : produce_kv<Cfg>(p, smem, w, kv_iter, leader);
        } else {
            /* One thread (the fp8 kernel): contiguous caches only, the
             * runtime refuses paged ones there. */
            kv_iter = produce_kv<Cfg>(p, smem, w, kv_iter, leader);
        }
        MGPU_ATTN_FWD_STAMP(p.args, kTlKvIssued, leader && q_iter == 1);
    }
    /* No more tiles: the next Q buffer carries -1 (no data, a plain arrival). */
    const int q_stage = q_iter % Cfg::kQStages;
    mbar_wait(&smem.q_empty[q_stage], ((q_iter / Cfg::kQStages) & 1) ^ 1);
    if (leader) {
        st_shared_u32(smem_u32(&smem.q_tile[q_stage]), static_cast<uint32_t>(-1));
        mbar_arrive(&smem.q_full[q_stage]);
    }
}

/* The producer of paged_gather calls, the whole producer warpgroup. Such
 * calls run one CTA per tile (abi/attention_abi.h; a second tile traps):
 * the first thread loads Q and publishes the tile as attn_fwd_producer
 * does, all 128 threads gather its K and V (produce_kv_gather), then the
 * next Q buffer carries -1. No tile loop: its state would not fit the
 * producer's 24 registers beside the gather's. */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_producer_gather(const mgpu_attention_fwd_params &p,
                                                         typename Cfg::SharedStorage &smem,
                                                         const AttnFwdScheduler<Cfg, true> &scheduler)
{
    const bool leader = threadIdx.x == 0;
    int q_iter = 0; /* tiles loaded: the Q buffer of the closing -1 */
    const int t = scheduler.first();
    if (scheduler.valid(scheduler.next(t)))
        __trap(); /* more than one tile: not a paged_gather launch */
    if (scheduler.valid(t)) {
        const AttnFwdWork w = attn_fwd_work<Cfg, true>(p.args, scheduler.decode(t));
        if (attn_fwd_tile_active(w)) {
            /* The first use of Q buffer 0: free. */
            if (leader) {
                st_shared_u32(smem_u32(&smem.q_tile[0]), static_cast<uint32_t>(t));
                if (p.args.pack_gqa) {
                    mbar_arrive_expect_tx(&smem.q_full[0], Cfg::kDimBlocks * w.tile_rows * Cfg::kSwizzleBytes);
                    load_q_packed<Cfg>(smem.q[0], &p.tmap_q, &smem.q_full[0], w.q_offset + w.q_row0, w.head_kv,
                                       w.tma_batch);
                } else {
                    mbar_arrive_expect_tx(&smem.q_full[0], Cfg::kQTileBytes);
                    load_tile<Cfg, Cfg::kQBlockBytes>(smem.q[0], &p.tmap_q, &smem.q_full[0], w.q_offset + w.q_row0,
                                                      w.head_q, w.tma_batch);
                }
            }
            produce_kv_gather<Cfg>(p, smem, w, 0);
            q_iter = 1;
        }
    }
    /* No more tiles: the next Q buffer carries -1 (no data, a plain arrival). */
    const int q_stage = q_iter % Cfg::kQStages;
    mbar_wait(&smem.q_empty[q_stage], ((q_iter / Cfg::kQStages) & 1) ^ 1);
    if (leader) {
        st_shared_u32(smem_u32(&smem.q_tile[q_stage]), static_cast<uint32_t>(-1));
        mbar_arrive(&smem.q_full[q_stage]);
    }
    cp_async_wait_all(); /* no copy outlives its thread */
}

/* A reader of the producer's tiles (consumer or transposer warp): the tile
 * published with Q buffer q_stage, the warp's q_iter-th (-1: no more tiles),
 * once q_full says it is there. Lane 0 reads it for its warp: the thread that
 * later arrives on q_empty is then the one whose read the producer's next
 * write of this slot must follow. */
template <class Cfg>
__device__ __forceinline__ int attn_fwd_next_tile(typename Cfg::SharedStorage &smem, int q_stage, int q_iter)
{
    mbar_wait(&smem.q_full[q_stage], (q_iter / Cfg::kQStages) & 1);
    int t = 0;
    if (threadIdx.x % 32 == 0)
        t = *static_cast<volatile int *>(&smem.q_tile[q_stage]);
    return __shfl_sync(0xffffffffu, t, 0);
}

/* S = Q K^T for the warpgroup's 64 rows: both operands K-major in shared memory. */
template <class Cfg>
__device__ __forceinline__ void issue_qk(float (&s)[Cfg::kBlockN / 2], uint32_t q_rows, uint32_t k_tile)
{
    /* Each step's descriptors: the tiles' low words plus a constant. */
    const uint32_t q_lo = wgmma_desc_lo(q_rows, 16), k_lo = wgmma_desc_lo(k_tile, 16);
    wgmma_fence_operands(s);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Cfg::kQkSteps; ++kk) {
        constexpr int kStepsPerBlock = Cfg::kSwizzleElems / Cfg::kWgmmaK;
        constexpr uint32_t kStepBytes = Cfg::kWgmmaK * Cfg::kElementBytes;
        const uint32_t block = kk / kStepsPerBlock, within = (kk % kStepsPerBlock) * kStepBytes;
        const uint64_t da = wgmma_desc_join(q_lo + ((block * Cfg::kQBlockBytes + within) >> 4), kSwizzleAtomBytes);
        const uint64_t db = wgmma_desc_join(k_lo + ((block * Cfg::kKVBlockBytes + within) >> 4), kSwizzleAtomBytes);
        wgmma_ss<typename Cfg::T, false, false>(s, da, db, kk > 0);
    }
    wgmma_commit_group();
    wgmma_fence_operands(s);
}

/* O += P V: P from registers, V read MN-major (rows are keys, dim contiguous). */
template <class Cfg>
__device__ __forceinline__ void issue_pv(float (&o)[Cfg::kHeadDim / 2], uint32_t (&pr)[Cfg::kBlockN / 4],
                                         uint32_t v_tile, bool accumulate)
{
    constexpr uint32_t kStepBytes = Cfg::kWgmmaK * Cfg::kSwizzleBytes; /* 16 key rows */
    const uint32_t v_lo = wgmma_desc_lo(v_tile, Cfg::kKVBlockBytes);
    wgmma_fence_operands(o);
    wgmma_fence_operands(pr);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Cfg::kPvSteps; ++kk) {
        const uint64_t db = wgmma_desc_join(v_lo + ((kk * kStepBytes) >> 4), kSwizzleAtomBytes);
        const uint32_t a[4] = {pr[4 * kk + 0], pr[4 * kk + 1], pr[4 * kk + 2], pr[4 * kk + 3]};
        wgmma_rs<typename Cfg::T, true>(o, a, db, (accumulate || kk > 0) ? 1 : 0);
    }
    wgmma_commit_group();
    wgmma_fence_operands(o);
    wgmma_fence_operands(pr);
}

/* Probabilities (fp32 accumulator layout) -> A fragments of O += P V. */
template <class Cfg>
__device__ __forceinline__ void convert_p(uint32_t (&pr)[Cfg::kBlockN / 4], const float (&s)[Cfg::kBlockN / 2])
{
#pragma unroll
    for (int i = 0; i < Cfg::kBlockN / 4; ++i)
        pr[i] = pack2<typename Cfg::T>(s[2 * i], s[2 * i + 1]);
}

/* Zeroes rows [first, kBlockN) of a K/V tile (every 64-column block; the
 * 128-byte swizzle permutes 16-byte chunks within a row, so a row stays
 * whole), 128 threads of a warpgroup. */
template <class Cfg>
__device__ __noinline__ void zero_rows(uint8_t *tile, int first, int thread)
{
    constexpr int kChunks = Cfg::kSwizzleBytes / 16;
    const int rows = Cfg::kBlockN - first;
    for (int idx = thread; idx < rows * kChunks * Cfg::kDimBlocks; idx += Cfg::kWarpgroupThreads) {
        const int chunk = idx % kChunks, rest = idx / kChunks;
        const int row = first + rest % rows, block = rest / rows;
        *reinterpret_cast<uint4 *>(tile + block * Cfg::kKVBlockBytes + row * Cfg::kSwizzleBytes + chunk * 16) =
            make_uint4(0u, 0u, 0u, 0u);
    }
}

/* Stage and phase of global key-block iteration g (>= 0: unsigned
 * arithmetic, without the signed forms' rounding fix-ups). */
template <class Cfg>
__device__ __forceinline__ int stage_of(int g)
{
    return static_cast<int>(static_cast<uint32_t>(g) % Cfg::kStages);
}

template <class Cfg>
__device__ __forceinline__ uint32_t phase_of(int g)
{
    return (static_cast<uint32_t>(g) / Cfg::kStages) & 1;
}

/* The turns of the consumer warpgroups pass round in order 0, 1, .., W - 1,
 * 0, ...: warpgroup c waits on turn barrier c and hands the turn on by
 * arriving on that of the next one. A barrier's phase thus completes with
 * two warpgroups, the one waiting and the one before it (256 threads). */
template <class Cfg>
__device__ __forceinline__ int attn_fwd_next_consumer(int consumer)
{
    if constexpr (Cfg::kConsumerWarpgroups == 3)
        return consumer == 2 ? 0 : consumer + 1;
    else
        return 1 - consumer;
}

template <class Cfg>
__host__ __device__ constexpr int attn_fwd_turn_threads()
{
    return Cfg::kConsumerWarpgroups == 3 ? 2 * Cfg::kWarpgroupThreads
                                         : Cfg::kConsumerWarpgroups * Cfg::kWarpgroupThreads;
}

/* The schedule of one tile's key loop, shared by the 16-bit and the fp8
 * consumers: count >= 1 key blocks, the first at global iteration kv_iter,
 * the last key block first (block i is key block n_block_end - 1 - i).
 * Block 0: S only; block i >= 1: S of block i and O += P V of block i - 1 in
 * one turn of the two consumers; then P V of the last block. The kernel's
 * pieces: issue_qk(g) and issue_pv(g, accumulate) issue the GEMMs on the K /
 * V operand of global iteration g, whose stages' barriers are k_full /
 * k_empty and v_full / v_empty; scores_to_probs(n) takes S of key block n to
 * the softmax's P; rescale() applies the softmax's correction to O;
 * convert() packs P as the next P V's A operand; tail() runs while the last
 * P V is in flight (work of the tile's end that does not read O or P). */
struct AttnFwdNoTail {
    __device__ __forceinline__ void operator()() const {}
};

template <class Cfg, class IssueQk, class IssuePv, class ToProbs, class Rescale, class Convert,
          class Tail = AttnFwdNoTail>
__device__ __forceinline__ void attn_fwd_key_loop(typename Cfg::SharedStorage &smem, uint64_t *v_full,
                                                  uint64_t *v_empty, int consumer, int kv_iter, int count,
                                                  int n_block_end, float (&s)[Cfg::kBlockN / 2],
                                                  float (&o)[Cfg::kHeadDim / 2], const IssueQk &issue_qk_at,
                                                  const IssuePv &issue_pv_at, const ToProbs &scores_to_probs,
                                                  const Rescale &rescale, const Convert &convert,
                                                  bool fence_loads = false, const Tail &tail = Tail())
{
    constexpr int kTurnThreads = attn_fwd_turn_threads<Cfg>();
    const int lane = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads % 32;
    const int my_turn = Cfg::kBarrierTurnFirst + consumer;
    const int other_turn = Cfg::kBarrierTurnFirst + attn_fwd_next_consumer<Cfg>(consumer);
    /* The ping-pong turns; one consumer warpgroup takes none. */
    auto take_turn = [&] {
        if constexpr (Cfg::kConsumerWarpgroups > 1)
            named_barrier_sync(my_turn, kTurnThreads);
    };
    auto pass_turn = [&] {
        if constexpr (Cfg::kConsumerWarpgroups > 1)
            named_barrier_arrive(other_turn, kTurnThreads);
    };
    auto release = [&](uint64_t *bar) {
        if (lane == 0)
            mbar_arrive(bar);
    };
    /* fence_loads: the stages were written by cp.async (generic proxy, paged
     * gather); each thread orders them before its wgmma reads once it has
     * seen them complete. */
    auto wait_full = [&](uint64_t *bar, uint32_t phase) {
        mbar_wait(bar, phase);
        if (fence_loads)
            fence_smem_to_async();
    };
    /* Block 0: scores only. */
    {
        const int g = kv_iter;
        wait_full(&smem.k_full[stage_of<Cfg>(g)], phase_of<Cfg>(g));
        take_turn();
        issue_qk_at(g);
        pass_turn();
        wgmma_wait_group<0>();
        wgmma_fence_operands(s);
        release(&smem.k_empty[stage_of<Cfg>(g)]);
        scores_to_probs(n_block_end - 1);
        convert();
    }
    for (int i = 1; i < count; ++i) {
        const int gk = kv_iter + i, gv = gk - 1;
        wait_full(&smem.k_full[stage_of<Cfg>(gk)], phase_of<Cfg>(gk));
        take_turn();
        issue_qk_at(gk);
        wait_full(&v_full[stage_of<Cfg>(gv)], phase_of<Cfg>(gv));
        issue_pv_at(gv, i > 1);
        pass_turn();
        wgmma_wait_group<1>();
        wgmma_fence_operands(s);
        release(&smem.k_empty[stage_of<Cfg>(gk)]);
        scores_to_probs(n_block_end - 1 - i);
        wgmma_wait_group<0>();
        wgmma_fence_operands(o);
        release(&v_empty[stage_of<Cfg>(gv)]);
        rescale();
        convert();
    }
    /* Last block: O += P V only. */
    {
        const int gv = kv_iter + count - 1;
        wait_full(&v_full[stage_of<Cfg>(gv)], phase_of<Cfg>(gv));
        take_turn();
        issue_pv_at(gv, count > 1);
        pass_turn();
        tail();
        wgmma_wait_group<0>();
        wgmma_fence_operands(o);
        release(&v_empty[stage_of<Cfg>(gv)]);
    }
}

/* attn_fwd_key_loop for a consumer whose rows of the tile are all padding
 * (decode: one query row per sequence leaves the second warpgroup's 64 rows
 * empty): the same waits, turns and releases, no GEMM and no softmax. Each
 * stage is released only once it is full, as the working consumer does, so
 * the empty barriers' phases see both consumers' arrivals in order; the
 * turns keep the two consumers within one block of each other. */
template <class Cfg>
__device__ __forceinline__ void attn_fwd_key_loop_idle(typename Cfg::SharedStorage &smem, int consumer, int kv_iter,
                                                       int count)
{
    /* the other consumer is 1 - consumer: two consumers (an inference-code
     * path, which the wide entry's three do not compile) */
    static_assert(Cfg::kConsumerWarpgroups <= 2, "idle turns for at most two consumer warpgroups");
    constexpr int kTurnThreads = Cfg::kConsumerWarpgroups * Cfg::kWarpgroupThreads;
    const int lane = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads % 32;
    const int my_turn = Cfg::kBarrierTurnFirst + consumer;
    const int other_turn = Cfg::kBarrierTurnFirst + (1 - consumer);
    for (int i = 0; i <= count; ++i) {
        const int gk = kv_iter + i, gv = gk - 1;
        if (i < count)
            mbar_wait(&smem.k_full[stage_of<Cfg>(gk)], phase_of<Cfg>(gk));
        if (i > 0)
            mbar_wait(&smem.v_full[stage_of<Cfg>(gv)], phase_of<Cfg>(gv));
        named_barrier_sync(my_turn, kTurnThreads);
        named_barrier_arrive(other_turn, kTurnThreads);
        __syncwarp();
        if (lane == 0) {
            if (i < count)
                mbar_arrive(&smem.k_empty[stage_of<Cfg>(gk)]);
            if (i > 0)
                mbar_arrive(&smem.v_empty[stage_of<Cfg>(gv)]);
        }
    }
}

/* The key loop of one tile (count >= 1 blocks, the first at global iteration kv_iter). */
template <class Cfg, bool kInference, class Tail = AttnFwdNoTail>
__device__ __forceinline__ void attn_fwd_consumer_tile(const mgpu_attention_fwd_args &a,
                                                       typename Cfg::SharedStorage &smem, const AttnFwdWork &w,
                                                       int consumer, int kv_iter, int q_stage, float (&o)[Cfg::kHeadDim / 2],
                                                       OnlineSoftmax<Cfg::kBlockN, Cfg::kLazyRescale, Cfg::kPolyExp2Every> &softmax,
                                                       const Tail &tail = Tail())
{
    const int thread = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    const int count = w.n_block_end - w.n_block_begin;
    /* Tile rows of this warpgroup start at row_base; their queries (the mask's
     * rows) are q_row0 + tile row / row_div. */
    const int row_base = consumer * Cfg::kRowsPerConsumer;
    /* (One consumer warpgroup: its rows start at the tile's first, which
     * holds a query in every active tile.) */
    if constexpr (kInference && Cfg::kConsumerWarpgroups > 1) {
        if (row_base >= w.tile_rows || w.q_row0 + row_base / w.row_div >= w.seqlen_q) {
            attn_fwd_key_loop_idle<Cfg>(smem, consumer, kv_iter, count);
            tail();
            return;
        }
    }

    float s[Cfg::kBlockN / 2];
    uint32_t pr[Cfg::kBlockN / 4];
    float correction[2];

    /* Parameters are read where used (constant bank operands, no registers).
     * Soft-cap: s <- (softcap / softmax_scale) tanh(s softmax_scale / softcap),
     * so that the common s * scale_log2 makes it softcap * log2(e) * tanh(.). */
    /* Blocks that need masking: some row of this warpgroup loses a key. */
    const int row_lo = w.q_row0 + row_base / w.row_div;
    const int row_hi = w.q_row0 + (row_base + Cfg::kRowsPerConsumer - 1) / w.row_div;
    auto needs_mask = [&](int n) {
        const int k0 = n * Cfg::kBlockN, k1 = k0 + Cfg::kBlockN;
        return k1 > w.mask.key_end(row_lo) || k0 < w.mask.key_begin(row_hi);
    };
    auto scores_to_probs = [&](int n) {
        MGPU_ATTN_FWD_STAMP(a, kTlKFull, threadIdx.x == Cfg::kWarpgroupThreads && n == w.n_block_end - 1);
        if (a.softcap > 0.f)
            apply_softcap(s, __fdividef(a.softmax_scale, a.softcap), __fdividef(a.softcap, a.softmax_scale));
        if (needs_mask(n))
            apply_mask<Cfg::kBlockN>(s, w.mask, w.q_row0, row_base, w.row_div, n * Cfg::kBlockN, thread);
        softmax.update(s, a.scale_log2, correction);
        MGPU_ATTN_FWD_STAMP(a, kTlScores, threadIdx.x == Cfg::kWarpgroupThreads && n == w.n_block_end - 1);
    };

    const uint32_t q_rows = smem_u32(smem.q[q_stage]) + consumer * Cfg::kRowsPerConsumer * Cfg::kSwizzleBytes;
    auto k_tile = [&](int g) { return smem_u32(smem.k[stage_of<Cfg>(g)]); };
    auto v_tile = [&](int g) { return smem_u32(smem.v[stage_of<Cfg>(g)]); };

    /* Keys from a cache (seqused_k, paged or not): the rows of the first
     * block (the last keys) past the sequence hold whatever the cache holds
     * there. Their P is 0, but 0 * NaN is NaN, so V's rows are zeroed first
     * (while S and P are not live yet). Both consumers write the same zeros
     * (a consumer of padding rows only, attn_fwd_key_loop_idle, writes none);
     * each fences and syncs its own warpgroup before its P V reads them.
     * The paged gather writes those zeros itself (cp.async with no source
     * bytes), so its rows are not written twice. */
    if (kInference && a.seqused_k != 0 && !(Cfg::kPagedGather && a.paged_gather)) {
        const int valid = w.seqlen_k - (w.n_block_end - 1) * Cfg::kBlockN;
        if (valid < Cfg::kBlockN) {
            const int g = kv_iter;
            mbar_wait(&smem.v_full[stage_of<Cfg>(g)], phase_of<Cfg>(g));
            zero_rows<Cfg>(smem.v[stage_of<Cfg>(g)], valid, thread);
            fence_smem_to_async();
            named_barrier_sync(Cfg::kBarrierEpilogueFirst + consumer, Cfg::kWarpgroupThreads);
        }
    }
    attn_fwd_key_loop<Cfg>(
        smem, smem.v_full, smem.v_empty, consumer, kv_iter, count, w.n_block_end, s, o,
        [&](int g) { issue_qk<Cfg>(s, q_rows, k_tile(g)); },
        [&](int g, bool accumulate) { issue_pv<Cfg>(o, pr, v_tile(g), accumulate); }, scores_to_probs,
        [&] {
            if constexpr (Cfg::kLazyRescale) {
                /* Warp-uniform: most blocks leave every row's maximum in place. */
                if (__any_sync(0xffffffffu, correction[0] != 1.f || correction[1] != 1.f))
                    scale_rows(o, correction);
            } else {
                scale_rows(o, correction);
            }
        },
        [&] { convert_p<Cfg>(pr, s); }, Cfg::kPagedGather && kInference && a.paged_gather, tail);
}

} // namespace sm90
} // namespace mgpu
