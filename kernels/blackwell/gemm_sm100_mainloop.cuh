/*
 * Main loops of the persistent Blackwell GEMM (gemm_sm100_persistent.cuh
 * states the schedule): the TMA warp's loop over the work units and their
 * k-tiles (produce) and the MMA warp's tcgen05.mma loop (issue_mmas).
 *
 * Stage s of the kStages-deep ring is guarded by full[s] (TMA -> MMA: the
 * bytes of both CTAs of a pair have landed; only the leader's barrier is
 * used) and empty[s] (MMA -> TMA: the MMAs that read stage s have completed;
 * tcgen05.commit arrives on it, multicast to both CTAs of a pair). Stage and
 * phase run on across units, so the pipeline never drains between tiles.
 * The accumulator is double-buffered in tensor memory: slot u % 2 of unit u
 * is handed to the epilogue through acc_full[slot] (tcgen05.commit, multicast
 * to both CTAs) and back through acc_empty[slot] (one arrival per epilogue
 * warp of each CTA, on the leader's barrier).
 *
 * The tensor cores compute D^T (as on Hopper): the MMA's A operand is the B
 * tile (kBN = 128 rows of n per CTA: the MMA's M, TMEM lanes), its B operand
 * the A tile (kBM rows of m per pair, kBM / kCtas per CTA: the MMA's N, TMEM
 * columns), so one TMEM lane holds one column of the column-major D and the
 * epilogue reads contiguous rows.
 */
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <stdint.h>
#include <type_traits>

#include "abi/gemm_abi.h"
#include "blackwell/cta_pair.cuh"
#include "blackwell/tcgen05.cuh"
#include "common/async_copy.cuh"
#include "common/tile_scheduler.cuh"

namespace mgpu {
namespace sm100 {
namespace persistent {

/* One thread of the TMA warp of every CTA: this CTA's B tile and its part of
 * the A tile, per k-tile, into the ring. In a pair only the leader announces
 * the bytes (both CTAs' loads complete on the leader's full[s]). */
template <class Cfg>
__device__ __forceinline__ void produce(const CUtensorMap *tma_a, const CUtensorMap *tma_b, uint8_t *a_tiles,
                                        uint8_t *b_tiles, uint64_t *full, uint64_t *empty,
                                        const GemmTileScheduler &sched, const mgpu_gemm_args &args, uint32_t rank)
{
    tma_prefetch_map(tma_a);
    tma_prefetch_map(tma_b);
    const int num_k_tiles = (args.k + Cfg::kBK - 1) / Cfg::kBK;
    int stage = 0;
    uint32_t phase = 0;
    for (int64_t u = sched.first(); u < sched.total; u += sched.stride()) {
        const GemmTile t = sched.tile(u);
        const int n0 = t.n_tile * Cfg::kBN;
        const int a_row0 = t.m_tile * Cfg::kBM + static_cast<int>(rank % Cfg::kCtas) * Cfg::kARows;
        const int a_batch = args.a_broadcast ? 0 : t.batch, b_batch = args.b_broadcast ? 0 : t.batch;
        int k_begin, k_end; /* this unit's K slice (all of K without split-K) */
        sched.k_range(num_k_tiles, t.split, k_begin, k_end);
        for (int kt = k_begin; kt < k_end; ++kt) {
            mbar_wait(&empty[stage], phase ^ 1);
            if (Cfg::kCtas == 1 || rank % 2 == 0)
                mbar_arrive_expect_tx(&full[stage], Cfg::kTxBytes);
            const int k0 = kt * Cfg::kBK;
            uint8_t *a = a_tiles + stage * Cfg::kATileBytes;
            uint8_t *b = b_tiles + stage * Cfg::kBTileBytes;
            /* a lone CTA's loads complete on its own full[s], a pair's on the leader's */
            auto load = [&](void *dst, const CUtensorMap *map, int32_t c0, int32_t c1, int32_t c2) {
                if constexpr (Cfg::kCtas == 1)
                    tma_load_3d(dst, map, &full[stage], c0, c1, c2);
                else
                    tma_load_3d_pair(dst, map, leader_barrier(&full[stage], rank), c0, c1, c2);
            };
            if constexpr (Cfg::kBKMajor) {
                load(b, tma_b, k0, n0, b_batch);
            } else {
#pragma unroll
                for (int i = 0; i < Cfg::kBN / Cfg::kChunk; ++i)
                    load(b + i * Cfg::kChunkBytes, tma_b, n0 + Cfg::kChunk * i, k0, b_batch);
            }
            if constexpr (Cfg::kAKMajor) {
                load(a, tma_a, k0, a_row0, a_batch);
            } else {
#pragma unroll
                for (int i = 0; i < Cfg::kARows / Cfg::kChunk; ++i)
                    load(a + i * Cfg::kChunkBytes, tma_a, a_row0 + Cfg::kChunk * i, k0, a_batch);
            }
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
    }
}

template <bool kKMajor, int kChunkBytes>
__device__ __forceinline__ uint64_t operand_desc(uint32_t tile_addr)
{
    if constexpr (kKMajor)
        return make_smem_desc_kmajor_sw128(tile_addr);
    else
        return make_smem_desc_mnmajor_sw128(tile_addr, kChunkBytes);
}

/* tcgen05.commit of everything issued so far to `bar`: in a pair, multicast
 * to the barrier at the same offset in both CTAs. */
template <class Cfg>
__device__ __forceinline__ void commit_to(uint64_t *bar)
{
    if constexpr (Cfg::kCtas == 1)
        ptx::tcgen05_commit(ptx::cta_group_1, bar);
    else
        ptx::tcgen05_commit_multicast(ptx::cta_group_2, bar, static_cast<uint16_t>(0x3));
}

/* One tcgen05.mma: kind::f16 for 16-bit operands, kind::f8f6f4 for fp8
 * (K = 32; the instruction descriptor carries the e4m3 / e5m2 codes). The
 * fp8 products are summed into the fp32 accumulator in tensor memory across
 * the whole K loop, with no second-level promotion as on Hopper: see
 * docs/decisions/014-sm100-fp8-accumulation.md. */
template <class Cfg>
__device__ __forceinline__ void mma(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc, bool accumulate)
{
    constexpr std::conditional_t<Cfg::kFp8, ptx::kind_f8f6f4_t, ptx::kind_f16_t> kind{};
    if constexpr (Cfg::kCtas == 1)
        ptx::tcgen05_mma(kind, ptx::cta_group_1, d_tmem, a_desc, b_desc, idesc, accumulate);
    else
        ptx::tcgen05_mma(kind, ptx::cta_group_2, d_tmem, a_desc, b_desc, idesc, accumulate);
}

/* One thread of the MMA warp of the leader CTA (every CTA without pairs):
 * for each unit, wait until the epilogue has emptied the unit's accumulator
 * slot, then for each k-tile wait for its stage, issue kKSteps MMAs
 * (M = kMmaM, N = kMmaN, K = 16) and commit the stage back to the TMA warps;
 * after the unit's last k-tile commit the slot to the epilogues. */
template <class Cfg>
__device__ __forceinline__ void issue_mmas(uint8_t *a_tiles, uint8_t *b_tiles, uint64_t *full, uint64_t *empty,
                                           uint64_t *acc_full, uint64_t *acc_empty, uint32_t tmem_base,
                                           const GemmTileScheduler &sched, const mgpu_gemm_args &args)
{
    /* MMA A = the B tile (K-major when B is), MMA B = the A tile. */
    constexpr uint32_t kIdesc = Cfg::kIdesc;
    /* added to the start-address field per MMA: 32 bytes of K (K-major) */
    constexpr uint64_t kAStep = k16_step_bytes<Cfg::kBKMajor>() >> 4;
    constexpr uint64_t kBStep = k16_step_bytes<Cfg::kAKMajor>() >> 4;
    const int num_k_tiles = (args.k + Cfg::kBK - 1) / Cfg::kBK;
    int stage = 0;
    uint32_t phase = 0;
    int local = 0;
    for (int64_t u = sched.first(); u < sched.total; u += sched.stride(), ++local) {
        const int slot = local & 1;
        const uint32_t use = static_cast<uint32_t>(local >> 1) & 1u; /* parity of this slot's use */
        mbar_wait(&acc_empty[slot], use ^ 1); /* the epilogue has read the slot's previous tile */
        ptx::tcgen05_fence_after_thread_sync();
        const uint32_t d_tmem = tmem_base + slot * Cfg::kAccCols;
        int k_begin, k_end;
        sched.k_range(num_k_tiles, sched.tile(u).split, k_begin, k_end);
        for (int kt = k_begin; kt < k_end; ++kt) {
            mbar_wait(&full[stage], phase);
            ptx::tcgen05_fence_after_thread_sync();
            const uint64_t a_desc =
                operand_desc<Cfg::kBKMajor, Cfg::kChunkBytes>(smem_u32(b_tiles + stage * Cfg::kBTileBytes));
            const uint64_t b_desc =
                operand_desc<Cfg::kAKMajor, Cfg::kChunkBytes>(smem_u32(a_tiles + stage * Cfg::kATileBytes));
#pragma unroll
            for (int j = 0; j < Cfg::kKSteps; ++j)
                mma<Cfg>(d_tmem, a_desc + j * kAStep, b_desc + j * kBStep, kIdesc, kt > k_begin || j > 0);
            commit_to<Cfg>(&empty[stage]);
            if (++stage == Cfg::kStages) {
                stage = 0;
                phase ^= 1;
            }
        }
        commit_to<Cfg>(&acc_full[slot]);
    }
}

} // namespace persistent
} // namespace sm100
} // namespace mgpu
