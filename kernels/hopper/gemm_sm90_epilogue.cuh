/*
 * Epilogue of the persistent Hopper GEMM (gemm_sm90_persistent.cuh): turns a
 * consumer warpgroup's fp32 accumulators into D = alpha * acc + beta * C.
 *
 * The persistent kernel computes D^T tiles (wgmma rows are D's columns), so
 * each thread's accumulator pairs are two consecutive rows of one column of
 * the column-major D: contiguous in memory. Two ways out:
 *
 *   store_tile_tma: the warpgroup's 64 columns x tile_m rows leave in chunks
 *     of 64 columns x 128 bytes of rows (one TMA box, 8 KB). A chunk is written
 *     into shared memory in the TMA 128-byte swizzle (the 8 rows of a warp's
 *     lanes land in 8 different 16-byte granules: no bank conflicts), fenced
 *     into the async proxy, and stored by one thread with a TMA tile store.
 *     Two buffers alternate, so writing chunk i overlaps the store of chunk
 *     i - 1; before reusing a buffer its store's reads must be complete
 *     (cp.async.bulk.wait_group.read 1). The stores of a tile's last chunks
 *     run while the warpgroup starts the next tile's main loop.
 *   store_tile_direct: straight from registers, element by element, for a C
 *     that TMA cannot address (pointer not 16-byte aligned, ldc or stride_c
 *     not a multiple of 16 bytes).
 *
 * beta != 0 reads C with ordinary loads before the tile is written; C is
 * never read when beta == 0 (a NaN-filled C stays harmless).
 */
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "common/async_copy.cuh"
#include "common/gemm_abi.h"

namespace mgpu {
namespace sm90 {

/* One TMA store box of D: 64 columns (wgmma rows) x 128 bytes of rows. */
constexpr int kEpiCols = 64;
constexpr int kEpiRowBytes = 128;
constexpr int kEpiBufBytes = kEpiCols * kEpiRowBytes;
constexpr int kEpiBufs = 2; /* per consumer warpgroup */
constexpr int kSwizzleGranule = 16; /* bytes: the unit the 128-byte swizzle permutes */
constexpr int kSwizzleRows = 8;     /* rows of one 1024-byte swizzle atom */

namespace epi {

__device__ __forceinline__ void warpgroup_sync(int barrier_id)
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(barrier_id) : "memory");
}

__device__ __forceinline__ void tma_store_3d(const CUtensorMap *map, const void *smem_src, int32_t c0, int32_t c1,
                                             int32_t c2)
{
    const int32_t coords[3] = {c0, c1, c2};
    ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, map, coords, smem_src);
}

template <class OutT>
__device__ __forceinline__ float load_c(const OutT *p)
{
    if constexpr (std::is_same_v<OutT, __half>)
        return __half2float(*p);
    else if constexpr (std::is_same_v<OutT, __nv_bfloat16>)
        return __bfloat162float(*p);
    else
        return *p;
}

template <class OutT>
__device__ __forceinline__ OutT from_float(float v)
{
    if constexpr (std::is_same_v<OutT, __half>)
        return __float2half_rn(v);
    else if constexpr (std::is_same_v<OutT, __nv_bfloat16>)
        return __float2bfloat16_rn(v);
    else
        return v;
}

/* Two consecutive elements of a D column into shared memory. */
template <class OutT>
__device__ __forceinline__ void store_pair(uint8_t *p, float v0, float v1)
{
    if constexpr (std::is_same_v<OutT, __half>)
        *reinterpret_cast<__half2 *>(p) = __floats2half2_rn(v0, v1);
    else if constexpr (std::is_same_v<OutT, __nv_bfloat16>)
        *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(v0, v1);
    else
        *reinterpret_cast<float2 *>(p) = make_float2(v0, v1);
}

} // namespace epi

/* Accumulator fragment (hopper/wgmma.cuh) of an m64 x kBM wgmma: acc[i] is
 * D column col0 + 16*w + l/4 + 8*((i/2)%2) and D row row0 + 8*(i/4) + 2*(l%4) + i%2,
 * where col0 is the warpgroup's first column and row0 the tile's first row.
 * `out` is D's batch index in the C tensor map (or in C). */
template <int kBM, class OutT>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[kBM / 2], const mgpu_gemm_args &args,
                                               const CUtensorMap *tma_c, uint8_t *bufs, int &buf, int row0,
                                               int col0, int out, int barrier_id)
{
    constexpr int kElemBytes = sizeof(OutT);
    constexpr int kChunkRows = kEpiRowBytes / kElemBytes; /* D rows per chunk */
    constexpr int kChunks = kBM / kChunkRows;
    constexpr int kFragsPerChunk = kChunkRows / 8; /* i/4 groups of 8 rows */
    static_assert(kBM % kChunkRows == 0, "tile rows must be whole TMA boxes");
    const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
    const bool leader = t == 0;
    const bool read_c = args.beta != 0.0f;
    const OutT *c = reinterpret_cast<const OutT *>(args.c) + static_cast<int64_t>(out) * args.stride_c;
    if (col0 >= args.n)
        return; /* uniform over the warpgroup: nothing of this tile is ours */

#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
        const int chunk_row0 = row0 + ch * kChunkRows;
        if (chunk_row0 >= args.m)
            break; /* uniform: the rest of the tile lies below m */
        uint8_t *s = bufs + buf * kEpiBufBytes;
        if (leader)
            ptx::cp_async_bulk_wait_group_read(ptx::n32_t<kEpiBufs - 1>{}); /* this buffer's last store has read it */
        epi::warpgroup_sync(barrier_id);
#pragma unroll
        for (int f = 0; f < kFragsPerChunk; ++f) {
            const int j = ch * kFragsPerChunk + f;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int col = 16 * w + l / 4 + 8 * h; /* within the warpgroup's 64 */
                const int r = 8 * f + 2 * (l % 4);      /* within the chunk */
                float v0 = args.alpha * acc[4 * j + 2 * h];
                float v1 = args.alpha * acc[4 * j + 2 * h + 1];
                if (read_c && col0 + col < args.n) {
                    const OutT *p = c + static_cast<int64_t>(col0 + col) * args.ldc + chunk_row0 + r;
                    if (chunk_row0 + r < args.m)
                        v0 += args.beta * epi::load_c(p);
                    if (chunk_row0 + r + 1 < args.m)
                        v1 += args.beta * epi::load_c(p + 1);
                }
                const int byte = r * kElemBytes;
                const int granule = (byte / kSwizzleGranule) ^ (col % kSwizzleRows);
                epi::store_pair<OutT>(s + col * kEpiRowBytes + granule * kSwizzleGranule + byte % kSwizzleGranule,
                                      v0, v1);
            }
        }
        fence_smem_to_async();
        epi::warpgroup_sync(barrier_id);
        if (leader) {
            epi::tma_store_3d(tma_c, s, chunk_row0, col0, out);
            ptx::cp_async_bulk_commit_group();
        }
        buf ^= 1;
    }
}

template <int kBM, class OutT>
__device__ __forceinline__ void store_tile_direct(const float (&acc)[kBM / 2], const mgpu_gemm_args &args, int row0,
                                                  int col0, int out)
{
    const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
    const bool read_c = args.beta != 0.0f;
    OutT *c = reinterpret_cast<OutT *>(args.c) + static_cast<int64_t>(out) * args.stride_c;
#pragma unroll
    for (int i = 0; i < kBM / 2; ++i) {
        const int col = col0 + 16 * w + l / 4 + 8 * ((i / 2) % 2);
        const int row = row0 + 8 * (i / 4) + 2 * (l % 4) + i % 2;
        if (row < args.m && col < args.n) {
            OutT *p = c + static_cast<int64_t>(col) * args.ldc + row;
            float v = args.alpha * acc[i];
            if (read_c)
                v += args.beta * epi::load_c(p);
            *p = epi::from_float<OutT>(v);
        }
    }
}

/* Waits until every TMA store this thread issued has completed. */
__device__ __forceinline__ void store_drain()
{
    ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{});
}

} // namespace sm90
} // namespace mgpu
