/*
 * Epilogue of the persistent Hopper GEMM (gemm_sm90_persistent.cuh): turns a
 * consumer warpgroup's fp32 accumulators into
 * D = scale_d * act(alpha * acc + beta * C + bias) (common/numeric.cuh; alpha
 * includes the operand scales).
 *
 * The persistent kernel computes D^T tiles (wgmma rows are D's columns), so
 * each thread's accumulator pairs are two consecutive rows of one column of
 * the column-major D: contiguous in memory. The epilogue (alpha, beta * C
 * and, when fused, bias, activation, output scale) is applied in registers
 * one chunk at a time just before the chunk is staged (apply_chunk), so only
 * that chunk's C and bias values are live beside the accumulators (no
 * register spills). Without C (beta == 0) and without a fused part, a
 * uniform branch per tile skips apply_chunk and only scales by alpha: its
 * predicated C loads and bias / activation selects cost the plain GEMM
 * instructions on the path where the tensor cores wait for the next tile.
 * store_tile writes the chunks out:
 *
 *   TMA stores: the warpgroup's 64 columns x tile_m rows leave in chunks
 *     of 64 columns x 128 bytes of rows (one TMA box, 8 KB). A chunk is written
 *     into shared memory in the TMA 128-byte swizzle (16-bit D: stmatrix, one
 *     instruction per two accumulator fragments; fp32 D: 8-byte stores, the
 *     8 rows of a warp's lanes in 8 different 16-byte granules: no bank
 *     conflicts; stage_chunk), fenced
 *     into the async proxy, and stored by one thread with a TMA tile store.
 *     Two buffers alternate, so writing chunk i overlaps the store of chunk
 *     i - 1; before reusing a buffer its store's reads must be complete
 *     (cp.async.bulk.wait_group.read 1). The stores of a tile's last chunks
 *     run while the warpgroup starts the next tile's main loop.
 *   direct stores, for a C that TMA cannot address (pointer not 16-byte
 *     aligned, m, ldc or stride_c not a multiple of 16 bytes): the chunk is
 *     written into shared memory the same way, then the warpgroup copies it
 *     out with element stores, clipped at m and n. One code path for both
 *     keeps the unrolled epilogue instantiated once per output type.
 *
 * beta != 0 reads C with ordinary loads before the tile is written; C is
 * never read when beta == 0 (a NaN-filled C stays harmless). The bias is
 * read with ordinary (cached) loads, only for elements inside D: a per-row
 * bias once per tile, all its loads in flight together (TileRowBias).
 */
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "abi/gemm_abi.h"
#include "common/async_copy.cuh"
#include "common/barrier.cuh"
#include "common/numeric.cuh"
#include "common/shared_memory.cuh"

namespace mgpu {
namespace sm90 {

/* One TMA store box of D: 64 columns (wgmma rows) x 128 bytes of rows. */
constexpr int kEpiCols = 64;
constexpr int kEpiRowBytes = 128;
constexpr int kEpiBufBytes = kEpiCols * kEpiRowBytes;
constexpr int kEpiBufs = 2; /* per consumer warpgroup (mgpu_gemm_sm90_epi_bufs: 1 for 192-column tiles) */
constexpr int kSwizzleGranule = 16; /* bytes: the unit the 128-byte swizzle permutes */
constexpr int kSwizzleRows = 8;     /* rows of one 1024-byte swizzle atom */

namespace epi {

template <class OutT>
__device__ __forceinline__ float load_c(const OutT *p)
{
    return load_float(p);
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

/* Two consecutive elements of a D column packed as one 32-bit word (16-bit D). */
template <class OutT>
__device__ __forceinline__ uint32_t pack_pair(float v0, float v1)
{
    static_assert(sizeof(OutT) == 2, "16-bit D");
    uint32_t w;
    if constexpr (std::is_same_v<OutT, __half>) {
        const __half2 h = __floats2half2_rn(v0, v1);
        w = *reinterpret_cast<const uint32_t *>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(v0, v1);
        w = *reinterpret_cast<const uint32_t *>(&h);
    }
    return w;
}

} // namespace epi

/* Accumulator fragment (hopper/wgmma.cuh) of an m64 x kBM wgmma: acc[i] is
 * D column col0 + 16*w + l/4 + 8*((i/2)%2) and D row row0 + 8*(i/4) + 2*(l%4) + i%2,
 * where col0 is the warpgroup's first column and row0 the tile's first row. */

/* A per-row bias (one value per D row: the wgmma N side) of a whole tile,
 * read once at the start of the epilogue: lane l of each warp loads rows
 * row0 + 64 p + 2 l and + 1 (coalesced, all loads in flight together), and
 * a fragment's two rows are fetched from the lane that holds them with a
 * shuffle. Rows at or past m read as 0. kPairs registers pairs per thread
 * instead of kBM / 4 bias values (or a load latency per chunk). */
template <int kBM>
struct TileRowBias {
    static constexpr int kPairs = (kBM + 63) / 64;
    float v[kPairs][2];

    template <class OutT>
    __device__ __forceinline__ void load(const GemmEpilogue &ep, int row0, int m)
    {
        const int l = threadIdx.x % 32;
#pragma unroll
        for (int p = 0; p < kPairs; ++p)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int row = row0 + 64 * p + 2 * l + e;
                v[p][e] = row < m ? ep.template bias_at<OutT>(row) : 0.0f;
            }
    }

    /* The bias of rows tile_row + 2 (l % 4) + e, e = 0, 1, for a tile_row
     * (a multiple of 8, known at compile time after unrolling). */
    __device__ __forceinline__ void get(int tile_row, float (&out)[2]) const
    {
        const int l = threadIdx.x % 32;
        const int p = tile_row / 64;
        const int src = (tile_row % 64) / 2 + l % 4;
#pragma unroll
        for (int e = 0; e < 2; ++e)
            out[e] = __shfl_sync(0xffffffffu, v[p][e], src);
    }
};

/* apply_chunk's first step: alpha * acc + bias (+ beta * C where read_c;
 * a per-row bias where row_bias). Inlined: a call with a literal false
 * condition (apply_chunk's kSplit) is a copy without that condition's
 * instructions (the C loads, their addresses and bounds; the per-row
 * bias's shuffles), which a call with run-time conditions issues
 * predicated off. */
template <int kBM, int kFrags, class OutT, bool kTileBias>
__device__ __forceinline__ void bias_alpha_chunk(float (&acc)[kBM / 2], int j0, const mgpu_gemm_args &args,
                                                 const GemmEpilogue &ep, const OutT *c, int chunk_row0,
                                                 int tile_row0, int col0, const float (&col_b)[2],
                                                 const TileRowBias<kBM> &rb, bool read_c, bool row_bias)
{
    const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
#pragma unroll
    for (int f = 0; f < kFrags; ++f) {
        const int j = j0 + f;
        const int row = chunk_row0 + 8 * f + 2 * (l % 4);
        float row_b[2] = {-0.0f, -0.0f};
        if (row_bias) {
            if constexpr (kTileBias) {
                rb.get(tile_row0 + 8 * f, row_b);
            } else {
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (row + e < args.m)
                        row_b[e] = ep.bias_at<OutT>(row + e);
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = col0 + 16 * w + l / 4 + 8 * h;
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                float &v = acc[4 * j + 2 * h + e];
                v = fmaf(v, ep.alpha, row_b[e] + col_b[h]);
                if (read_c && col < args.n && row + e < args.m)
                    v = fmaf(ep.beta, epi::load_c(c + static_cast<int64_t>(col) * args.ldc + row + e), v);
            }
        }
    }
}

/* The epilogue of one chunk of the tile (kFrags groups of 8 rows starting at
 * fragment j0, rows chunk_row0 .., tile_row0 .. within the tile), in
 * registers: acc = scale_d * act(alpha * acc + beta * C + bias). Applied
 * chunk by chunk, just before the chunk is staged, so that the C values of
 * one chunk only are live beside the accumulators; a per-row bias comes
 * from the tile's TileRowBias (kTileBias) or is loaded here (ping-pong,
 * whose epilogue runs under the other warpgroup's main loop and has no
 * registers to spare for the tile's bias). Every condition on `ep` is
 * uniform. The bias term of an element is row_b + col_b, the one not
 * given being -0 (and both -0 without a bias: alpha * acc + (-0) is
 * alpha * acc in every case, -0 included), so alpha and the bias are an
 * add and a multiply-add per element (separate per-row and per-column
 * instantiations, which would save the add, spill in the 192 x 192 rows),
 * and GELU for 16-bit outputs takes the output scale into its last
 * multiply-add (gelu_tanh_fast_scaled): the elementwise work runs while the
 * tensor cores wait for the tile. kSplit: the first step (bias_alpha_chunk)
 * in one copy without C for each per-row bias choice, and one reading C
 * (more code: the rows with registers to spare for it, store_tile). */
template <int kBM, int kFrags, class OutT, bool kTileBias, bool kSplit>
__device__ __forceinline__ void apply_chunk(float (&acc)[kBM / 2], int j0, const mgpu_gemm_args &args,
                                            const GemmEpilogue &ep, const OutT *c, int chunk_row0, int tile_row0,
                                            int col0, const float (&col_b)[2], const TileRowBias<kBM> &rb)
{
    const bool read_c = ep.beta != 0.0f;
    const bool row_bias = ep.bias && !ep.bias_per_column;
    if constexpr (kSplit) {
        if (read_c) /* as without kSplit */
            bias_alpha_chunk<kBM, kFrags, OutT, kTileBias>(acc, j0, args, ep, c, chunk_row0, tile_row0, col0, col_b,
                                                           rb, true, row_bias);
        else if (row_bias)
            bias_alpha_chunk<kBM, kFrags, OutT, kTileBias>(acc, j0, args, ep, c, chunk_row0, tile_row0, col0, col_b,
                                                           rb, false, true);
        else
            bias_alpha_chunk<kBM, kFrags, OutT, kTileBias>(acc, j0, args, ep, c, chunk_row0, tile_row0, col0, col_b,
                                                           rb, false, false);
    } else {
        bias_alpha_chunk<kBM, kFrags, OutT, kTileBias>(acc, j0, args, ep, c, chunk_row0, tile_row0, col0, col_b, rb,
                                                       read_c, row_bias);
    }
    if (!ep.fused)
        return;
    if (sizeof(OutT) == 2 && ep.activation == MGPU_ABI_ACT_GELU) {
        const float half_scale = 0.5f * ep.scale_d;
#pragma unroll
        for (int i = 4 * j0; i < 4 * (j0 + kFrags); ++i)
            acc[i] = gelu_tanh_fast_scaled(acc[i], half_scale);
        return;
    }
    if (ep.activation == MGPU_ABI_ACT_RELU) {
#pragma unroll
        for (int i = 4 * j0; i < 4 * (j0 + kFrags); ++i)
            acc[i] = fmaxf(acc[i], 0.0f);
    } else if (ep.activation == MGPU_ABI_ACT_GELU) {
#pragma unroll
        for (int i = 4 * j0; i < 4 * (j0 + kFrags); ++i)
            acc[i] = gelu_tanh(acc[i]);
    }
#pragma unroll
    for (int i = 4 * j0; i < 4 * (j0 + kFrags); ++i)
        acc[i] *= ep.scale_d;
}

/* Stages one chunk of the tile (kFrags groups of 8 rows from fragment j0)
 * into the 128-byte-swizzled buffer at shared address s. 16-bit D: one
 * stmatrix.x4 per two fragments, each 8 x 8 matrix being one (fragment, half)
 * of the accumulator layout: matrix row = D column 16 w + 8 h + r, its 16
 * bytes = D rows 8 f .. 8 f + 7, i.e. swizzle granule f ^ r of that column's
 * 128-byte row (the place store_pair gives each pair). fp32 D: two elements
 * per 8-byte store. */
template <int kBM, int kFrags, class OutT>
__device__ __forceinline__ void stage_chunk(const float (&acc)[kBM / 2], int j0, uint8_t *s)
{
    const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
    if constexpr (sizeof(OutT) == 2) {
        static_assert(kFrags % 2 == 0, "stmatrix.x4 takes two fragments");
        const int mat = l / 8, r = l % 8; /* the matrix whose row r this lane addresses */
        const uint32_t base = smem_u32(s) + (16 * w + 8 * (mat % 2) + r) * kEpiRowBytes;
#pragma unroll
        for (int q = 0; q < kFrags / 2; ++q) {
            const int f = 2 * q + mat / 2;
            uint32_t v[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int j = j0 + 2 * q + i / 2, h = i % 2;
                v[i] = epi::pack_pair<OutT>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
            }
            stmatrix_x4(base + ((f ^ r) * kSwizzleGranule), v[0], v[1], v[2], v[3]);
        }
    } else {
#pragma unroll
        for (int f = 0; f < kFrags; ++f) {
            const int j = j0 + f;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int col = 16 * w + l / 4 + 8 * h; /* within the warpgroup's 64 */
                const int r = 8 * f + 2 * (l % 4);      /* within the chunk */
                const int byte = r * static_cast<int>(sizeof(OutT));
                const int granule = (byte / kSwizzleGranule) ^ (col % kSwizzleRows);
                epi::store_pair<OutT>(s + col * kEpiRowBytes + granule * kSwizzleGranule + byte % kSwizzleGranule,
                                      acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
            }
        }
    }
}

/* The epilogue of kFrags fragments from j0 (rows row0 + 8 j0 ..), in
 * registers: apply_chunk, or alpha alone (`general` false: no C, nothing
 * fused). For tiles that are not whole TMA boxes (store_tile). */
template <int kBM, int kFrags, class OutT, bool kTileBias, bool kSplit>
__device__ __forceinline__ void finish_frags(float (&acc)[kBM / 2], int j0, bool general, const mgpu_gemm_args &args,
                                             const GemmEpilogue &ep, const OutT *c, int row0, int col0,
                                             const float (&col_b)[2], const TileRowBias<kBM> &rb)
{
    if (general) {
        apply_chunk<kBM, kFrags, OutT, kTileBias, kSplit>(acc, j0, args, ep, c, row0 + 8 * j0, 8 * j0, col0, col_b,
                                                          rb);
    } else {
#pragma unroll
        for (int i = 4 * j0; i < 4 * (j0 + kFrags); ++i)
            acc[i] *= ep.alpha;
    }
}

/* Writes a consumer warpgroup's tile of D (`out` is its batch index in the C
 * tensor map or in C; `ep` has its bias pointed at the tile's batch). The
 * accumulators are overwritten. kTileBias: a per-row bias is read once for
 * the tile (TileRowBias) rather than per chunk. kBufs (1 or 2) buffers of
 * kEpiBufBytes at `bufs` take the chunks in turn; with one, each chunk waits
 * for the previous chunk's store to have read it. */
template <int kBM, class OutT, bool kTileBias = true, int kBufs = kEpiBufs, bool kSplit = false>
__device__ __forceinline__ void store_tile(float (&acc)[kBM / 2], const mgpu_gemm_args &args, const GemmEpilogue &ep,
                                           const CUtensorMap *tma_c, uint8_t *bufs, int &buf, int row0, int col0,
                                           int out, int barrier_id)
{
    constexpr int kElemBytes = sizeof(OutT);
    constexpr int kChunkRows = kEpiRowBytes / kElemBytes; /* D rows per chunk */
    /* A tile_m that is not a whole number of boxes (224 rows of 16-bit D:
     * 3.5 boxes) ends with a box that overlaps the one before it
     * (kLastRow0 = tile_m - one box): the overlap's fragments, already
     * finished by the previous chunk, are staged again and their bytes
     * stored a second time unchanged; the epilogue applies to the new
     * fragments only, so C (which may be D itself) is read once per
     * element, before any store of it. */
    constexpr int kChunks = (kBM + kChunkRows - 1) / kChunkRows;
    constexpr int kFragsPerChunk = kChunkRows / 8; /* i/4 groups of 8 rows */
    constexpr int kLastRow0 = kBM - kChunkRows;     /* first row of the last box within the tile */
    constexpr int kChunkElems = kEpiCols * kChunkRows;
    constexpr int kThreads = 128;
    static_assert(kBM % 8 == 0 && kBM >= kChunkRows, "tile rows: whole fragments, at least one TMA box");
    static_assert(kBufs == 1 || kBufs == 2, "one or two epilogue buffers");
    const int t = threadIdx.x % kThreads, w = t / 32, l = t % 32;
    const bool leader = t == 0;
    const bool direct = !args.c_tma;
    OutT *c = reinterpret_cast<OutT *>(args.c) + static_cast<int64_t>(out) * args.stride_c;
    if (col0 >= args.n)
        return; /* uniform over the warpgroup: nothing of this tile is ours */
    /* Uniform: whether C is read or anything is fused (apply_chunk), or
     * the chunk is only scaled by alpha. */
    const bool general = ep.fused || ep.beta != 0.0f;
    const bool row_bias = ep.bias && !ep.bias_per_column;
    TileRowBias<kBM> rb{};
    if (kTileBias && row_bias)
        rb.template load<OutT>(ep, row0, args.m);
    float col_b[2] = {-0.0f, -0.0f}; /* alpha * acc + (-0): exactly alpha * acc */
    if (ep.bias && ep.bias_per_column) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = col0 + 16 * w + l / 4 + 8 * h;
            if (col < args.n)
                col_b[h] = ep.bias_at<OutT>(col);
        }
    }

#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
        /* the chunk's box: rows chunk_row0 .. of D (the last one from kLastRow0 where the tile is not
         * whole boxes) */
        const int chunk_row0 =
            row0 + (kBM % kChunkRows == 0 || ch * kChunkRows < kLastRow0 ? ch * kChunkRows : kLastRow0);
        if ((kBM % kChunkRows == 0 ? chunk_row0 : row0 + ch * kChunkRows) >= args.m)
            break; /* uniform: the rest of the tile lies below m */
        if constexpr (kBM % kChunkRows == 0) {
            if (general) {
                apply_chunk<kBM, kFragsPerChunk, OutT, kTileBias, kSplit>(acc, ch * kFragsPerChunk, args, ep, c,
                                                                          chunk_row0, ch * kChunkRows, col0, col_b, rb);
            } else { /* alpha * acc: no C, nothing fused */
#pragma unroll
                for (int i = 4 * ch * kFragsPerChunk; i < 4 * (ch + 1) * kFragsPerChunk; ++i)
                    acc[i] *= ep.alpha;
            }
        } else if (ch < kChunks - 1) {
            finish_frags<kBM, kFragsPerChunk, OutT, kTileBias, kSplit>(acc, ch * kFragsPerChunk, general, args, ep,
                                                                       c, row0, col0, col_b, rb);
        } else { /* the last box: only the fragments past the one before it */
            finish_frags<kBM, (kBM % kChunkRows) / 8, OutT, kTileBias, kSplit>(acc, ch * kFragsPerChunk, general,
                                                                               args, ep, c, row0, col0, col_b, rb);
        }
        uint8_t *s = bufs + buf * kEpiBufBytes;
        if (leader && !direct)
            tma_store_wait_read<kBufs - 1>(); /* this buffer's last store has read it */
        named_barrier_sync(barrier_id, 128);
        stage_chunk<kBM, kFragsPerChunk, OutT>(acc, (kBM % kChunkRows == 0 ? ch * kChunkRows : chunk_row0 - row0) / 8,
                                               s);
        if (!direct) {
            fence_smem_to_async();
            named_barrier_sync(barrier_id, 128);
            if (leader) {
                tma_store_3d(tma_c, s, chunk_row0, col0, out);
                tma_store_commit();
            }
        } else {
            /* C that TMA cannot address: the warpgroup copies the chunk out
             * with element stores, consecutive threads on consecutive rows of
             * a column. The buffer is rewritten kBufs chunks later, after the
             * barrier at the top of the next chunk has been passed by all. */
            named_barrier_sync(barrier_id, 128);
#pragma unroll 4
            for (int e = t; e < kChunkElems; e += kThreads) {
                const int col = e / kChunkRows, r = e % kChunkRows;
                const int row = chunk_row0 + r;
                const int byte = r * kElemBytes;
                const int granule = (byte / kSwizzleGranule) ^ (col % kSwizzleRows);
                const OutT v = *reinterpret_cast<const OutT *>(s + col * kEpiRowBytes + granule * kSwizzleGranule +
                                                              byte % kSwizzleGranule);
                if (row < args.m && col0 + col < args.n)
                    c[static_cast<int64_t>(col0 + col) * args.ldc + row] = v;
            }
        }
        if constexpr (kBufs == 2)
            buf ^= 1;
    }
}

} // namespace sm90
} // namespace mgpu
