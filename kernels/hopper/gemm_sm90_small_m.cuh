/*
 * Small-m GEMM (decode): D = epilogue(op(A) op(B)) for m <= kMaxM (16; the
 * template also takes 64, which measured slower than the 64-row wgmma tile
 * and is not built: docs/decisions/013-gemm-few-tiles-and-decode.md) with both operands K-major (cuBLAS's "TN": A is k x m, B is k x n, each
 * column contiguous in K), 16-bit inputs, fp32 accumulation.
 *
 * With m this small the GEMM is a stream of B: 8192 x 8192 bf16 is 128 MiB
 * read once, and the tensor work per byte of B is m multiply-adds. What
 * matters is that every SM keeps enough of B in flight, so the kernel is
 * built for that rather than for tensor-core throughput:
 *
 *   grid (column blocks of kCols = 128 columns of D, K slices, batch);
 *   256 threads = 8 warps, warp w owns 16 columns of D [n0 + 16w, +16) and
 *   all m rows, over the CTA's K slice, in steps of 32 elements of K:
 *     each lane loads 16 bytes (8 elements of K) of two B columns and of
 *     kMBlocks x 1 A rows straight from global memory into registers
 *     (B with a streaming, L1-bypassing load; A, small and shared by every
 *     warp, through L1), kUnroll steps at a time, then runs
 *     2 x kMBlocks mma.sync m16n8k16 (fp32 accumulate): the MMA's M side is
 *     16 columns of D (from B), its N side 8 rows of D (from A): D^T = B^T A^T.
 *   The 16-byte loads do not follow the MMA's fragment order along K: lane
 *   (g = lane / 4, c = lane % 4) holds physical K elements 8c .. 8c + 7 of its
 *   rows and feeds elements 8c .. 8c + 3 to the first k16 MMA and 8c + 4 ..
 *   8c + 7 to the second, in the fragment slots of K indices {2c, 2c + 1,
 *   2c + 8, 2c + 9}. A and B use the same permutation of K, so the dot
 *   products are those of the GEMM, and no shuffle or shared memory is needed.
 *
 * Split-K: with S = gridDim.y > 1 slices each CTA parks its fp32 partial
 * (kCols x kMaxM rows) in the workspace and counts itself in on the
 * column block's counter (handle-owned, zero between launches); the last CTA
 * of a column block to arrive resets the counter, sums the S partials in
 * slice order 0 .. S - 1 (the same bits whichever CTA is last) and applies
 * the epilogue, four rows of a column per 16-byte load with every slice's
 * loads in flight together. With S == 1 each thread applies the epilogue to
 * its accumulators directly.
 *
 * The same MMAs fed from a shared-memory ring of tensor-map copies are the
 * tensor-map ring form (gemm_sm90_small_m_tma.cuh), which the planner takes
 * where B's columns are 128-byte aligned; both end in small_m::finish.
 *
 * Launched for programmatic dependent launch (src/gemm/gemm.c): each CTA
 * lets the stream's next grid be scheduled and waits for the grids before
 * it (griddepcontrol) before its first global memory access, so that its
 * launch overlaps the previous kernel's tail.
 *
 * Requirements the runtime checks (src/gemm/gemm_plan.c): A and B 16-byte
 * aligned, lda, ldb and the batch strides multiples of 8 elements, k a
 * multiple of 8, m <= kMaxM, batch <= 65535, column blocks x batch <=
 * MGPU_SPLIT_COUNTERS when S > 1. Rows beyond m and columns beyond n read
 * as zero and are not stored.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "abi/gemm_abi.h"
#include "common/barrier.cuh"
#include "common/grid_dependency.cuh"
#include "common/numeric.cuh"

namespace mgpu {
namespace sm90 {

template <class T, int kMBlocks_>
struct SmallMGemmConfig {
    using Element = T;
    static constexpr int kMBlocks = kMBlocks_;  /* 8-row blocks of D (the MMA's n8) */
    static constexpr int kMaxM = 8 * kMBlocks;  /* rows of D one launch covers */
    static constexpr int kWarps = 8;
    static constexpr int kThreads = 32 * kWarps;
    static constexpr int kConsumerThreads = kThreads; /* every thread runs MMAs */
    static constexpr int kWarpCols = 16;        /* the MMA's m16 */
    static constexpr int kCols = kWarps * kWarpCols;
    static constexpr int kStepK = 32;           /* 4 lanes x 8 elements */
    /* K steps whose loads are in flight together: 16 B of two B columns per
     * lane and step, plus kMBlocks A rows. */
    static constexpr int kUnroll = 4;
    /* registers: two CTAs per SM for m <= 16, one for m <= 64 */
    static constexpr int kMinBlocks = kMBlocks <= 2 ? 2 : 1;
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "16-bit inputs");
    static_assert(kMBlocks == 2 || kMBlocks == 8, "m <= 16 or m <= 64");
};

namespace small_m {

__device__ __forceinline__ uint4 load_stream(const void *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ uint4 load_cached(const void *p)
{
    return __ldg(reinterpret_cast<const uint4 *>(p));
}

template <class T>
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1)
{
    if constexpr (std::is_same_v<T, __half>)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* The MMAs of kSteps K steps of 16: per step, two m16n8k16 of each of the
 * kMB 16-row blocks of A (av) against the warp's B fragment (bl, bh), the
 * step's 16 elements of K in the register form's permuted order. Both the
 * register form and the tensor-map ring feed their fragments through this. */
template <class T, int kSteps, int kMB>
__device__ __forceinline__ void mma_steps(float (&acc)[kMB][4], const uint4 (&bl)[kSteps], const uint4 (&bh)[kSteps],
                                          const uint4 (&av)[kSteps][kMB])
{
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
#pragma unroll
        for (int mb = 0; mb < kMB; ++mb) {
            mma16816<T>(acc[mb], bl[u].x, bh[u].x, bl[u].y, bh[u].y, av[u][mb].x, av[u][mb].y);
            mma16816<T>(acc[mb], bl[u].z, bh[u].z, bl[u].w, bh[u].w, av[u][mb].z, av[u][mb].w);
        }
}

/* The barrier of the threads that ran the MMAs (the split-K arrival): the
 * whole CTA where there is no producer warp, else named barrier 1 over the
 * kConsumerThreads threads (the producer warp has left). */
template <class Cfg>
__device__ __forceinline__ void consumers_sync()
{
    if constexpr (Cfg::kConsumerThreads == Cfg::kThreads)
        __syncthreads();
    else
        named_barrier_sync(1, Cfg::kConsumerThreads);
}

/* The end of both forms of the kernel (this one and the tensor-map ring,
 * gemm_sm90_small_m_tma.cuh): each of the Cfg::kConsumerThreads threads that
 * ran the MMAs holds acc[mb][0..1], D rows 8mb + 2c, +1 of column col0, and
 * acc[mb][2..3], the same rows of column col0 + 8. With one K slice they
 * apply the epilogue; with more each CTA parks its partial and the last of a
 * column block sums the slices in order (the file's first comment; S =
 * splits = gridDim.y, this CTA's slice split = blockIdx.y). Threads
 * beyond kConsumerThreads (a producer warp) have left. */
template <class Cfg>
__device__ __forceinline__ void finish(const mgpu_gemm_args &args, const float (&acc)[Cfg::kMBlocks][4],
                                       int64_t batch, int64_t n_block0, int64_t col0, int c, int splits, int split)
{
    constexpr int kMB = Cfg::kMBlocks;
    /* acc[mb][0..1]: D rows 8mb + 2c, +1 of column col0; acc[mb][2..3]: the same rows of column col0 + 8 */
    GemmEpilogue ep(args);
    ep.select_batch(batch);
    const int64_t c_batch = batch * args.stride_c;
    if (splits == 1) {
#pragma unroll
        for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int64_t row = 8 * mb + 2 * c + (e & 1), col = col0 + (e >> 1) * 8;
                if (row < args.m && col < args.n)
                    epilogue_store(args, ep, c_batch + row + col * args.ldc, acc[mb][e], row, col);
            }
        return;
    }

    /* Split-K: partial [batch][split][column of the grid][kMaxM rows], fp32. */
    const int64_t grid_cols = static_cast<int64_t>(gridDim.x) * Cfg::kCols;
    float *slice0 = reinterpret_cast<float *>(args.workspace) + batch * splits * grid_cols * Cfg::kMaxM;
    const int64_t slice_floats = grid_cols * Cfg::kMaxM;
    float *mine = slice0 + split * slice_floats;
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int64_t col = col0 + 8 * h;
            __stcg(reinterpret_cast<float2 *>(mine + col * Cfg::kMaxM + 8 * mb + 2 * c),
                   make_float2(acc[mb][2 * h], acc[mb][2 * h + 1]));
        }
    __shared__ int last;
    consumers_sync<Cfg>();
    if (threadIdx.x == 0) {
        int *counter = reinterpret_cast<int *>(args.split_counters) + batch * gridDim.x + blockIdx.x;
        __threadfence();
        const bool is_last = atomicAdd(counter, 1) == splits - 1;
        if (is_last) {
            *counter = 0; /* for the next launch: every CTA of this column block has arrived */
            __threadfence();
        }
        last = is_last;
    }
    consumers_sync<Cfg>();
    if (!last)
        return;
    /* Sum the slices in order 0 .. S - 1, four rows of a column per 16-byte
     * load: consecutive threads take consecutive row quads, then columns.
     * Every load of a slice is issued before the sums need them (kQuadsPerThread
     * independent chains), and quads wholly beyond m or n are skipped. */
    constexpr int kQuads = Cfg::kMaxM / 4; /* per column */
    constexpr int kQuadsPerThread = Cfg::kCols * kQuads / Cfg::kConsumerThreads;
    static_assert(Cfg::kCols * kQuads % Cfg::kConsumerThreads == 0, "whole quads per thread");
    const int64_t slice_quads = slice_floats / 4;
    const float4 *q_p[kQuadsPerThread];
    bool q_ok[kQuadsPerThread];
    float4 v[kQuadsPerThread];
#pragma unroll
    for (int j = 0; j < kQuadsPerThread; ++j) {
        const int q = threadIdx.x + j * Cfg::kConsumerThreads;
        const int row = 4 * (q % kQuads);
        const int64_t col = n_block0 + q / kQuads;
        q_ok[j] = row < args.m && col < args.n;
        q_p[j] = reinterpret_cast<const float4 *>(slice0 + col * Cfg::kMaxM + row);
        v[j] = q_ok[j] ? __ldcg(q_p[j]) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll 4
    for (int s = 1; s < splits; ++s)
#pragma unroll
        for (int j = 0; j < kQuadsPerThread; ++j)
            if (q_ok[j]) {
                const float4 t = __ldcg(q_p[j] + s * slice_quads);
                v[j].x += t.x;
                v[j].y += t.y;
                v[j].z += t.z;
                v[j].w += t.w;
            }
#pragma unroll
    for (int j = 0; j < kQuadsPerThread; ++j) {
        if (!q_ok[j])
            continue;
        const int q = threadIdx.x + j * Cfg::kConsumerThreads;
        const int64_t row = 4 * (q % kQuads), col = n_block0 + q / kQuads;
        const float r[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
        for (int e = 0; e < 4; ++e)
            if (row + e < args.m)
                epilogue_store(args, ep, c_batch + (row + e) + col * args.ldc, r[e], row + e, col);
    }
}

} // namespace small_m

template <class Cfg>
__device__ __forceinline__ void gemm_small_m(const mgpu_gemm_args &args)
{
    using T = typename Cfg::Element;
    constexpr int kMB = Cfg::kMBlocks;
    constexpr int kU = Cfg::kUnroll;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, c = lane % 4;
    const int64_t batch = blockIdx.z;
    const int64_t n_block0 = static_cast<int64_t>(blockIdx.x) * Cfg::kCols;
    const int64_t col0 = n_block0 + warp * Cfg::kWarpCols + g; /* and col0 + 8 */
    const int splits = gridDim.y, split = blockIdx.y;

    /* this CTA's K slice, in whole 32-element steps (the last one may be partial) */
    const int steps = (args.k + Cfg::kStepK - 1) / Cfg::kStepK;
    const int s0 = static_cast<int>(static_cast<int64_t>(steps) * split / splits);
    const int s1 = static_cast<int>(static_cast<int64_t>(steps) * (split + 1) / splits);

    const T *a = reinterpret_cast<const T *>(args.a) + batch * args.stride_a;
    const T *b = reinterpret_cast<const T *>(args.b) + batch * args.stride_b;
    /* lane's rows: B columns col0, col0 + 8 (K-major: column j at b + j * ldb);
     * A rows 8 * mb + g (K-major: row i at a + i * lda) */
    const bool b_lo = col0 < args.n, b_hi = col0 + 8 < args.n;
    const T *b_lo_p = b + (b_lo ? col0 : 0) * args.ldb + 8 * c;
    const T *b_hi_p = b + (b_hi ? col0 + 8 : 0) * args.ldb + 8 * c;
    bool a_ok[kMB];
    const T *a_p[kMB];
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb) {
        const int row = 8 * mb + g;
        a_ok[mb] = row < args.m;
        a_p[mb] = a + (a_ok[mb] ? row : 0) * args.lda + 8 * c;
    }

    float acc[kMB][4];
#pragma unroll
    for (int mb = 0; mb < kMB; ++mb)
        acc[mb][0] = acc[mb][1] = acc[mb][2] = acc[mb][3] = 0.0f;

    /* Programmatic dependent launch (src/gemm/gemm.c, launch_small_m): the
     * stream's next grid may be scheduled now (its CTAs take only room this
     * grid leaves free, and wait as below), and nothing of this grid touches
     * global memory before the grids it depends on have completed. Without
     * the launch attribute both are no-ops. */
    griddep_launch_dependents();
    griddep_wait();

    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (int s = s0; s < s1; s += kU) {
        uint4 bl[kU], bh[kU], av[kU][kMB];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
            const int64_t kk = static_cast<int64_t>(s + u) * Cfg::kStepK; /* + 8c: this lane's elements */
            const bool in = s + u < s1 && kk + 8 * c < args.k;
            bl[u] = in && b_lo ? small_m::load_stream(b_lo_p + kk) : zero;
            bh[u] = in && b_hi ? small_m::load_stream(b_hi_p + kk) : zero;
#pragma unroll
            for (int mb = 0; mb < kMB; ++mb)
                av[u][mb] = in && a_ok[mb] ? small_m::load_cached(a_p[mb] + kk) : zero;
        }
        small_m::mma_steps<T>(acc, bl, bh, av);
    }

    small_m::finish<Cfg>(args, acc, batch, n_block0, col0, c, splits, split);
}

} // namespace sm90
} // namespace mgpu
