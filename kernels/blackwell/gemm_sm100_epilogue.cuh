/*
 * Epilogue warpgroup of the persistent Blackwell GEMM
 * (gemm_sm100_persistent.cuh): tensor memory -> registers -> 128-byte
 * swizzled shared memory -> TMA store, with the epilogue of every GEMM
 * kernel (common/numeric.cuh):
 *
 *   D = scale_d * act(alpha * scale_a * scale_b * acc + beta * C + bias),
 *
 * computed in registers between tcgen05.ld and the staging store (without
 * bias or activation: alpha' * acc + beta' * C, scale_d folded into both).
 * The bias is per row or per column, fp32 or D's type, with a batch stride.
 *
 * TMEM lane i of the accumulator is column n0 + i of D, TMEM column r is row
 * m0 + r (the MMA computes D^T). tcgen05.ld lets warp w of a warpgroup read
 * lanes 32 (w % 4) .. 32 (w % 4) + 31 only, so each of the four epilogue
 * warps owns 32 columns of D and works alone: per chunk of 128 bytes of rows
 * (64 16-bit or 32 fp32 rows) each lane loads its column's values
 * (tcgen05.ld 32x32b, 32 columns of TMEM per instruction), applies the
 * epilogue, converts, and writes its 128-byte row of the chunk into a 4 KB staging
 * buffer in the TMA 128-byte swizzle (lane l's 16-byte granule g lands at
 * granule g ^ (l % 8): the eight lanes of a store phase hit eight different
 * bank groups). A fence into the async proxy, then lane 0 stores the box
 * {128 bytes of rows, 32 columns} with a TMA tile store. Two buffers per
 * warp alternate; before one is rewritten, the store that read it must have
 * finished reading (cp.async.bulk.wait_group.read 1).
 *
 * Split-K (args.splits > 1): the warp first copies its partial from TMEM to
 * the workspace and counts itself in (split_k below); only the tile's last
 * unit goes on, reading the summed slices instead of TMEM.
 *
 * The accumulator slot is released (one arrival per warp on the leader's
 * acc_empty) as soon as the warp's last tcgen05.ld of the tile has completed,
 * before its last stores: the MMA warp refills the slot while these drain.
 *
 * C that TMA cannot address (pointer not 16-byte aligned, m, ldc or stride_c
 * not a multiple of 16 bytes) is written with direct stores from registers,
 * clipped at m and n (each lane writes its column's contiguous rows). C is
 * read only when beta != 0.
 */
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "abi/gemm_abi.h"
#include "blackwell/cta_pair.cuh"
#include "blackwell/tcgen05.cuh"
#include "common/async_copy.cuh"
#include "common/cluster.cuh"
#include "common/numeric.cuh"
#include "common/tile_scheduler.cuh"

namespace mgpu {
namespace sm100 {

constexpr int kEpiWarps = 4;       /* one warpgroup */
constexpr int kEpiCols = 32;       /* D columns per warp: its 32 TMEM lanes */
constexpr int kEpiRowBytes = 128;  /* bytes of D rows per TMA store box: one swizzle row */
constexpr int kEpiBoxBytes = kEpiCols * kEpiRowBytes;
constexpr int kEpiBufs = 2;        /* per warp */
constexpr int kEpiBytes = kEpiWarps * kEpiBufs * kEpiBoxBytes;
constexpr int kSwizzleGranule = 16;
constexpr int kSwizzleRows = 8;

namespace epi {

template <class OutT>
__device__ __forceinline__ float load_c(const OutT *p)
{
    return load_float(p);
}

template <class OutT>
__device__ __forceinline__ void store_d(OutT *p, float v)
{
    if constexpr (std::is_same_v<OutT, __half>)
        *p = __float2half_rn(v);
    else if constexpr (std::is_same_v<OutT, __nv_bfloat16>)
        *p = __float2bfloat16_rn(v);
    else
        *p = v;
}

/* 16 bytes of D from 16 / sizeof(OutT) consecutive values. */
template <class OutT>
__device__ __forceinline__ uint4 pack_granule(const float *v)
{
    uint4 g;
    uint32_t *w = reinterpret_cast<uint32_t *>(&g);
    if constexpr (std::is_same_v<OutT, float>) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
            w[i] = __float_as_uint(v[i]);
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if constexpr (std::is_same_v<OutT, __half>) {
                __half2 h = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
                w[i] = *reinterpret_cast<uint32_t *>(&h);
            } else {
                __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
                w[i] = *reinterpret_cast<uint32_t *>(&h);
            }
        }
    }
    return g;
}

/* The fused part of the epilogue on one lane's chunk of its column (v[i] is
 * row row0 + i): + bias, activation, output scale; the same order and
 * formulas as every other GEMM kernel (common/numeric.cuh). A row bias is
 * read at the same address by all 32 lanes (one broadcast load per row),
 * only for rows inside D. Every condition is uniform over the warp. */
template <int kRows, class OutT>
__device__ __forceinline__ void apply_fused(float (&v)[kRows], const GemmEpilogue &ep, bool row_bias, float col_b,
                                            int row0, int m)
{
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
        const float rb = row_bias && row0 + i < m ? ep.bias_at<OutT>(row0 + i) : 0.0f;
        v[i] += rb + col_b;
    }
    if (ep.activation == MGPU_ABI_ACT_RELU) {
#pragma unroll
        for (int i = 0; i < kRows; ++i)
            v[i] = fmaxf(v[i], 0.0f);
    } else if (ep.activation == MGPU_ABI_ACT_GELU) {
#pragma unroll
        for (int i = 0; i < kRows; ++i)
            v[i] = gelu_tanh(v[i]);
    }
#pragma unroll
    for (int i = 0; i < kRows; ++i)
        v[i] *= ep.scale_d;
}

} // namespace epi

/* Split-K of the sm_100a kernel (args.splits > 1; the Hopper kernel's
 * protocol, hopper/gemm_sm90_split_k.cuh, per epilogue warp instead of per
 * consumer warpgroup). Each unit's epilogue warp parks its fp32 partial
 * (kBM rows x 32 columns) in the workspace slot [tile][split][warp], row r of
 * lane l at float r * 32 + l (each row a coalesced 128-byte line), counts
 * itself in split_counters[tile][warp] (0 between launches: the last arriver
 * resets it), and only the tile's last unit to arrive sums the slots in split
 * order 0..S-1 (the same bits whichever unit finishes last) and runs the
 * epilogue. */
namespace split_k {

/* This warp's slot for unit t's split, its tile id and the floats between
 * two splits' slots. */
__device__ __forceinline__ float *slot(const mgpu_gemm_args &args, const GemmTileScheduler &sched, const GemmTile &t,
                                       int warp, int lane, int tile_m, int64_t &tile_id, int64_t &split_step)
{
    const int64_t slot_floats = static_cast<int64_t>(tile_m) * kEpiCols;
    const int64_t tiles_n = static_cast<int64_t>(sched.cols) * sched.cluster_n;
    tile_id = (static_cast<int64_t>(t.batch) * sched.rows * sched.cluster_m + t.m_tile) * tiles_n + t.n_tile;
    split_step = kEpiWarps * slot_floats;
    return reinterpret_cast<float *>(args.workspace) + tile_id * args.splits * split_step + t.split * split_step +
           warp * slot_floats + lane;
}

/* After the warp's partial is stored: true in every lane when this unit is
 * the tile's last to arrive. The stores are fenced before the count; the
 * last arriver fences again before it reads the others' partials. */
__device__ __forceinline__ bool arrive(const mgpu_gemm_args &args, int64_t tile_id, int warp, int lane)
{
    __threadfence();
    __syncwarp();
    int last = 0;
    if (lane == 0) {
        int *counter = reinterpret_cast<int *>(args.split_counters) + tile_id * kEpiWarps + warp;
        last = atomicAdd(counter, 1) == args.splits - 1;
        if (last)
            *counter = 0; /* for the next launch: every other unit of this tile has arrived */
    }
    last = __shfl_sync(0xffffffffu, last, 0);
    if (last)
        __threadfence();
    return last != 0;
}

/* Rows row0 .. row0 + kRows - 1 of this lane's column, summed over the
 * splits in order (`slots` is split 0's slot of this warp and lane). */
template <int kRows>
__device__ __forceinline__ void sum(float (&v)[kRows], const float *slots, int64_t split_step, int splits, int row0)
{
#pragma unroll
    for (int i = 0; i < kRows; ++i)
        v[i] = __ldcg(slots + (row0 + i) * kEpiCols);
    for (int s = 1; s < splits; ++s) {
        const float *p = slots + s * split_step;
#pragma unroll
        for (int i = 0; i < kRows; ++i)
            v[i] += __ldcg(p + (row0 + i) * kEpiCols);
    }
}

} // namespace split_k

/* One epilogue warp over every unit of this CTA, for one output type. */
template <class Cfg, class OutT>
__device__ __forceinline__ void epilogue_warp(uint32_t tmem_base, uint64_t *acc_full, uint64_t *acc_empty,
                                              const CUtensorMap *tma_c, uint8_t *epi_bufs,
                                              const GemmTileScheduler &sched, const mgpu_gemm_args &args,
                                              uint32_t rank)
{
    constexpr int kChunkRows = kEpiRowBytes / static_cast<int>(sizeof(OutT)); /* 64 (16-bit) or 32 (fp32) */
    constexpr int kChunks = Cfg::kBM / kChunkRows;
    constexpr int kLoads = kChunkRows / 32; /* tcgen05.ld 32x32b.x32 per chunk */
    constexpr int kPerGranule = kSwizzleGranule / static_cast<int>(sizeof(OutT));
    static_assert(Cfg::kBM % kChunkRows == 0, "tile rows must be whole TMA store boxes");
    const int quarter = (threadIdx.x / 32) % 4; /* the TMEM lanes this warp may read */
    const int lane = threadIdx.x % 32;
    uint8_t *const bufs = epi_bufs + quarter * kEpiBufs * kEpiBoxBytes;
    const bool direct = !args.c_tma;
    const bool split = args.splits > 1;
    /* alpha carries the operand scales; unfused, scale_d is folded into
     * alpha and beta (common/numeric.cuh) */
    const GemmEpilogue ep_launch(args);
    const bool read_c = ep_launch.beta != 0.0f;
    const bool row_bias = ep_launch.bias && !ep_launch.bias_per_column;
    const bool col_bias = ep_launch.bias && ep_launch.bias_per_column;
    int buf = 0, local = 0;
    for (int64_t u = sched.first(); u < sched.total; u += sched.stride(), ++local) {
        const GemmTile t = sched.tile(u);
        const int slot = local & 1;
        const uint32_t use = static_cast<uint32_t>(local >> 1) & 1u;
        const int row0 = t.m_tile * Cfg::kBM;
        const int col0 = t.n_tile * Cfg::kBN + kEpiCols * quarter; /* this warp's first column */
        const int col = col0 + lane;
        OutT *const c = reinterpret_cast<OutT *>(args.c) + static_cast<int64_t>(t.batch) * args.stride_c +
                        static_cast<int64_t>(col) * args.ldc;
        GemmEpilogue ep = ep_launch;
        ep.select_batch(t.batch);
        /* a column bias is one value per lane (its column) for the whole tile */
        const float col_b = col_bias && col < args.n ? ep.bias_at<OutT>(col) : 0.0f;
        mbar_wait(&acc_full[slot], use);
        ptx::tcgen05_fence_after_thread_sync();
        const uint32_t tmem = tmem_addr(tmem_base + slot * Cfg::kAccCols, 32 * quarter, 0);
        /* chunk ch of this warp's accumulator, rows ch * kChunkRows + i of its
         * lane's column; after the last chunk the slot goes back to the MMA warp */
        auto load_chunk = [&](int ch, float (&v)[kChunkRows]) {
#pragma unroll
            for (int l = 0; l < kLoads; ++l) {
                uint32_t r[32];
                ptx::tcgen05_ld_32x32b(r, tmem + ch * kChunkRows + 32 * l);
                ptx::tcgen05_wait_ld();
#pragma unroll
                for (int i = 0; i < 32; ++i)
                    v[32 * l + i] = __uint_as_float(r[i]);
            }
            if (ch == kChunks - 1) {
                /* every TMEM read of this slot by this warp is complete: hand it back */
                ptx::tcgen05_fence_before_thread_sync();
                __syncwarp();
                if (lane == 0) {
                    if constexpr (Cfg::kCtas == 1)
                        mbar_arrive(&acc_empty[slot]);
                    else
                        mbar_arrive_cluster(&acc_empty[slot], rank & ~1u);
                }
            }
        };
        /* split-K: park this unit's partial, count it in; only the tile's last
         * unit goes on, with the partials summed in split order */
        const float *slots = nullptr;
        int64_t split_step = 0;
        if (split) {
            int64_t tile_id;
            float *mine = split_k::slot(args, sched, t, quarter, lane, Cfg::kBM, tile_id, split_step);
            slots = mine - t.split * split_step;
#pragma unroll 1
            for (int ch = 0; ch < kChunks; ++ch) {
                float v[kChunkRows];
                load_chunk(ch, v);
#pragma unroll
                for (int i = 0; i < kChunkRows; ++i)
                    __stcg(mine + (ch * kChunkRows + i) * kEpiCols, v[i]);
            }
            if (!split_k::arrive(args, tile_id, quarter, lane))
                continue;
        }
#pragma unroll 1
        for (int ch = 0; ch < kChunks; ++ch) {
            float v[kChunkRows];
            if (split)
                split_k::sum<kChunkRows>(v, slots, split_step, args.splits, ch * kChunkRows);
            else
                load_chunk(ch, v);
            const int chunk_row0 = row0 + ch * kChunkRows;
            if (chunk_row0 >= args.m || col0 >= args.n)
                continue; /* uniform over the warp: nothing of this box lies inside D */
            const bool col_ok = col < args.n;
#pragma unroll
            for (int i = 0; i < kChunkRows; ++i) {
                v[i] *= ep.alpha;
                if (read_c && col_ok && chunk_row0 + i < args.m)
                    v[i] = fmaf(ep.beta, epi::load_c(c + chunk_row0 + i), v[i]);
            }
            if (ep.fused)
                epi::apply_fused<kChunkRows, OutT>(v, ep, row_bias, col_b, chunk_row0, args.m);
            if (direct) {
                if (col_ok) {
#pragma unroll
                    for (int i = 0; i < kChunkRows; ++i)
                        if (chunk_row0 + i < args.m)
                            epi::store_d(c + chunk_row0 + i, v[i]);
                }
                continue;
            }
            uint8_t *s = bufs + buf * kEpiBoxBytes;
            if (lane == 0)
                tma_store_wait_read<kEpiBufs - 1>(); /* the store that read s is done with it */
            __syncwarp();
#pragma unroll
            for (int g = 0; g < kEpiRowBytes / kSwizzleGranule; ++g)
                *reinterpret_cast<uint4 *>(s + lane * kEpiRowBytes + ((g ^ (lane % kSwizzleRows)) * kSwizzleGranule)) =
                    epi::pack_granule<OutT>(v + g * kPerGranule);
            fence_smem_to_async();
            __syncwarp();
            if (lane == 0) {
                tma_store_3d(tma_c, s, chunk_row0, col0, t.batch);
                tma_store_commit();
            }
            buf ^= 1;
        }
    }
    if (lane == 0)
        tma_store_drain();
    __syncwarp();
}

/* The epilogue warpgroup: the body for C's dtype. */
template <class Cfg>
__device__ __forceinline__ void epilogue(uint32_t tmem_base, uint64_t *acc_full, uint64_t *acc_empty,
                                         const CUtensorMap *tma_c, uint8_t *epi_bufs, const GemmTileScheduler &sched,
                                         const mgpu_gemm_args &args, uint32_t rank)
{
    switch (args.c_dtype) {
    case MGPU_ABI_F16:
        epilogue_warp<Cfg, __half>(tmem_base, acc_full, acc_empty, tma_c, epi_bufs, sched, args, rank);
        break;
    case MGPU_ABI_BF16:
        epilogue_warp<Cfg, __nv_bfloat16>(tmem_base, acc_full, acc_empty, tma_c, epi_bufs, sched, args, rank);
        break;
    default:
        epilogue_warp<Cfg, float>(tmem_base, acc_full, acc_empty, tma_c, epi_bufs, sched, args, rank);
        break;
    }
}

} // namespace sm100
} // namespace mgpu
