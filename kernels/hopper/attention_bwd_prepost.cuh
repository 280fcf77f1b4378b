/*
 * The two small passes around the attention backward's main kernel
 * (kernels/abi/attention_bwd_abi.h gives the scratch layout and the
 * arguments, struct mgpu_attention_bwd_args, which all three kernels take):
 *
 *   preprocess   one CTA per query tile (m-block fastest, then head, then
 *                sequence; 1-D grid): for each row, D = rowsum(dO * O) in
 *                fp32 and LSE * log2(e) into the padded scratch rows (0 and
 *                +infinity past the sequence's end, up to the tile's end).
 *                All CTAs together also zero the flat scratch region from
 *                dq_accum to the end (dq_accum, dq_semaphore and, for GQA,
 *                dk_accum, dv_accum, dkv_semaphore lie there back to back).
 *   postprocess  one CTA per query tile: dQ = softmax_scale * dq_accum,
 *                rounded to T, stored in the caller's strides; for GQA
 *                (group_size > 1) then one CTA per key tile of each KV head:
 *                dK = dk_accum, dV = dv_accum (the main kernel added the
 *                group's query heads into them), rounded to T.
 *
 * Both move 16-byte vectors: 8 elements of T, or 4 fp32. Head dims are
 * multiples of 8 and the runtime has checked 16-byte aligned bases and
 * strides. In the preprocess, 8 lanes share a row (a warp does 4 rows at
 * once) and reduce with shuffles; every lane of a warp runs the same number
 * of row iterations (block_m is a multiple of 32), so the shuffles are
 * always full-warp.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>
#include <stdint.h>
#include <type_traits>

#include "abi/attention_bwd_abi.h"

namespace mgpu {
namespace attn_bwd {

constexpr int kThreads = 256; /* the generated units check it against gen/variants.c */
constexpr int kVec = 8;                      /* 16-bit elements per 16-byte vector */
constexpr int kLanesPerRow = 8;              /* preprocess: lanes sharing one row's sum */
constexpr int kRowsAtOnce = kThreads / kLanesPerRow;
constexpr float kLog2e = 1.4426950408889634f;

static_assert(kThreads % 32 == 0 && 32 % kLanesPerRow == 0, "rows must not straddle warps");

/* Where a sequence's rows are: its first row in the caller's packed tensors,
 * its length, and the batch index of the caller's strides. */
struct SeqRows {
    int64_t first, len, batch_index;
};

__device__ __forceinline__ SeqRows seq_rows(uint64_t cu_seqlens, int b, int seqlen)
{
    SeqRows s;
    if (cu_seqlens) {
        const int32_t *cu = reinterpret_cast<const int32_t *>(cu_seqlens);
        s.first = cu[b];
        s.len = cu[b + 1] - s.first;
        s.batch_index = 0;
    } else {
        s.first = 0;
        s.len = seqlen;
        s.batch_index = b;
    }
    return s;
}

__device__ __forceinline__ struct mgpu_attention_bwd_tile tile_of(const mgpu_attention_bwd_args &a)
{
    struct mgpu_attention_bwd_tile t;
    mgpu_attention_bwd_tile(a.head_dim, &t);
    return t;
}

__device__ __forceinline__ int cdiv(int a, int b)
{
    return (a + b - 1) / b;
}

template <typename T>
__device__ __forceinline__ float2 to_float2(uint32_t packed)
{
    if constexpr (std::is_same_v<T, __half>)
        return __half22float2(*reinterpret_cast<const __half2 *>(&packed));
    else
        return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&packed));
}

template <typename T>
__device__ __forceinline__ uint32_t from_float2(float a, float b)
{
    if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(a, b);
        return *reinterpret_cast<const uint32_t *>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
        return *reinterpret_cast<const uint32_t *>(&h);
    }
}

/* <x, y> of 8 elements of T each, in fp32. */
template <typename T>
__device__ __forceinline__ float dot8(uint4 x, uint4 y)
{
    const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 a = to_float2<T>(xs[i]), b = to_float2<T>(ys[i]);
        acc = fmaf(a.x, b.x, acc);
        acc = fmaf(a.y, b.y, acc);
    }
    return acc;
}

/* 8 fp32 values, times `scale`, rounded to T. */
template <typename T>
__device__ __forceinline__ uint4 pack8(float4 lo, float4 hi, float scale)
{
    uint4 r;
    r.x = from_float2<T>(lo.x * scale, lo.y * scale);
    r.y = from_float2<T>(lo.z * scale, lo.w * scale);
    r.z = from_float2<T>(hi.x * scale, hi.y * scale);
    r.w = from_float2<T>(hi.z * scale, hi.w * scale);
    return r;
}

/* Zeroes bytes [begin, end) of the scratch (16-byte multiples), spread
 * over every CTA of the grid. */
__device__ __forceinline__ void zero_region(uint64_t begin, uint64_t end)
{
    uint4 *p = reinterpret_cast<uint4 *>(begin);
    const int64_t n = (int64_t)(end - begin) / 16;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x; i < n; i += (int64_t)gridDim.x * kThreads)
        p[i] = zero;
}

/* End of the scratch arrays the preprocess zeroes, rounded up to 16 bytes
 * (inside the 256-byte padding of the layout): the last semaphore array,
 * dkv_semaphore for GQA, else dq_semaphore. */
__device__ __forceinline__ uint64_t scratch_zero_end(const mgpu_attention_bwd_args &a, const struct mgpu_attention_bwd_tile &t)
{
    const int varlen = a.cu_seqlens_q != 0;
    uint64_t end;
    if (a.group_size > 1)
        end = a.dkv_semaphore + (uint64_t)a.heads_kv * (varlen ? 1 : a.batch) * (a.k_rows_padded / t.block_n) * 4;
    else
        end = a.dq_semaphore + (uint64_t)a.heads_q * (varlen ? 1 : a.batch) * (a.q_rows_padded / t.block_m) * 4;
    return (end + 15) / 16 * 16;
}

template <typename T>
__device__ void preprocess(const mgpu_attention_bwd_args &a)
{
    const struct mgpu_attention_bwd_tile t = tile_of(a);
    zero_region(a.dq_accum, scratch_zero_end(a, t));

    const int m_blocks = cdiv(a.seqlen_q, t.block_m);
    const int mb = blockIdx.x % m_blocks, h = (blockIdx.x / m_blocks) % a.heads_q, b = blockIdx.x / (m_blocks * a.heads_q);
    const SeqRows s = seq_rows(a.cu_seqlens_q, b, a.seqlen_q);
    const int64_t tile_first = (int64_t)mb * t.block_m;
    if (tile_first >= s.len) /* a varlen sequence shorter than the longest: no such tile */
        return;
    const int vecs = a.head_dim / kVec;
    const int lane = threadIdx.x % kLanesPerRow;
    const int64_t row0 = mgpu_attention_bwd_row0(b, h, a.heads_q, t.block_m, a.q_rows_padded,
                                                 reinterpret_cast<const int32_t *>(a.cu_seqlens_q)) +
                         tile_first;
    const T *o = reinterpret_cast<const T *>(a.o);
    const T *dout = reinterpret_cast<const T *>(a.dout);
    float *dpsum = reinterpret_cast<float *>(a.dpsum);
    float *lse_log2 = reinterpret_cast<float *>(a.lse_log2);
    const float *lse = reinterpret_cast<const float *>(a.lse);

    for (int r = threadIdx.x / kLanesPerRow; r < t.block_m; r += kRowsAtOnce) {
        const int64_t i = tile_first + r;
        const int live = i < s.len;
        float acc = 0.0f;
        if (live) {
            const int64_t row = s.first + i;
            const uint4 *orow = reinterpret_cast<const uint4 *>(o + s.batch_index * a.o_batch_stride +
                                                                row * a.o_seq_stride + h * a.o_head_stride);
            const uint4 *drow = reinterpret_cast<const uint4 *>(dout + s.batch_index * a.do_batch_stride +
                                                                row * a.do_seq_stride + h * a.do_head_stride);
            for (int c = lane; c < vecs; c += kLanesPerRow)
                acc += dot8<T>(__ldg(orow + c), __ldg(drow + c));
        }
#pragma unroll
        for (int off = kLanesPerRow / 2; off > 0; off /= 2)
            acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if (lane == 0) {
            dpsum[row0 + r] = acc; /* 0 past the end */
            lse_log2[row0 + r] =
                live ? __ldg(lse + b * a.lse_batch_stride + h * a.lse_head_stride + s.first + i) * kLog2e
                     : CUDART_INF_F;
        }
    }
}

/* dQ of one query tile. */
template <typename T>
__device__ void convert_dq(const mgpu_attention_bwd_args &a, const struct mgpu_attention_bwd_tile &t, int m_blocks,
                           int item)
{
    const int mb = item % m_blocks, h = (item / m_blocks) % a.heads_q, b = item / (m_blocks * a.heads_q);
    const SeqRows s = seq_rows(a.cu_seqlens_q, b, a.seqlen_q);
    const int64_t tile_first = (int64_t)mb * t.block_m;
    const int64_t rows = min((int64_t)t.block_m, s.len - tile_first);
    if (rows <= 0)
        return;
    const int vecs = a.head_dim / kVec;
    const int64_t row0 = mgpu_attention_bwd_row0(b, h, a.heads_q, t.block_m, a.q_rows_padded,
                                                 reinterpret_cast<const int32_t *>(a.cu_seqlens_q)) +
                         tile_first;
    const float *tile = reinterpret_cast<const float *>(a.dq_accum) + row0 * a.head_dim;
    T *dq_tile = reinterpret_cast<T *>(a.dq) + s.batch_index * a.dq_batch_stride +
                 (s.first + tile_first) * a.dq_seq_stride + h * a.dq_head_stride;
    if (t.dq_buffers > 0) {
        /* Fragment order (mgpu_attention_bwd_dq_offset): the 8 columns 8 c ..
         * 8 c + 7 of rows r and r + 8 (r % 16 < 8) are 4 float4s, 64
         * contiguous bytes, each (row r: 2 columns, row r + 8: the same 2).
         * One thread takes both rows, so that it reads whole sectors (one row
         * a thread read 8 of every 16 bytes, and the tile crossed L2 twice). */
        const int64_t row_pairs = (rows + 15) / 16 * 8;
        for (int64_t e = threadIdx.x; e < row_pairs * vecs; e += kThreads) {
            const int pr = (int)(e / vecs);
            const int c = (int)(e % vecs);
            const int r = 16 * (pr / 8) + pr % 8;
            if (r >= rows)
                continue;
            const float4 *src =
                reinterpret_cast<const float4 *>(tile + mgpu_attention_bwd_dq_offset(&t, a.head_dim, r, c * kVec));
            const float4 x0 = src[0], x1 = src[1], x2 = src[2], x3 = src[3];
            *reinterpret_cast<uint4 *>(dq_tile + r * a.dq_seq_stride + c * kVec) =
                pack8<T>(make_float4(x0.x, x0.y, x1.x, x1.y), make_float4(x2.x, x2.y, x3.x, x3.y), a.softmax_scale);
            if (r + 8 < rows)
                *reinterpret_cast<uint4 *>(dq_tile + (r + 8) * a.dq_seq_stride + c * kVec) = pack8<T>(
                    make_float4(x0.z, x0.w, x1.z, x1.w), make_float4(x2.z, x2.w, x3.z, x3.w), a.softmax_scale);
        }
        return;
    }
    /* Row-major: the 8 columns are 8 consecutive floats, 32-byte aligned. */
    for (int64_t e = threadIdx.x; e < rows * vecs; e += kThreads) {
        const int r = (int)(e / vecs);
        const int c = (int)(e % vecs);
        const float4 *src =
            reinterpret_cast<const float4 *>(tile + mgpu_attention_bwd_dq_offset(&t, a.head_dim, r, c * kVec));
        *reinterpret_cast<uint4 *>(dq_tile + r * a.dq_seq_stride + c * kVec) =
            pack8<T>(src[0], src[1], a.softmax_scale);
    }
}

/* dK and dV of one key tile of one KV head (GQA): the fp32 sums the main
 * kernel left, rounded to T. */
template <typename T>
__device__ void convert_dkv(const mgpu_attention_bwd_args &a, const struct mgpu_attention_bwd_tile &t, int item)
{
    const int nb = item % a.n_blocks, hk = (item / a.n_blocks) % a.heads_kv, b = item / (a.n_blocks * a.heads_kv);
    const SeqRows s = seq_rows(a.cu_seqlens_k, b, a.seqlen_k);
    const int64_t tile_first = (int64_t)nb * t.block_n;
    const int64_t rows = min((int64_t)t.block_n, s.len - tile_first);
    if (rows <= 0)
        return;
    const int vecs = a.head_dim / kVec;
    const float4 *dk_accum = reinterpret_cast<const float4 *>(a.dk_accum);
    const float4 *dv_accum = reinterpret_cast<const float4 *>(a.dv_accum);
    T *dk = reinterpret_cast<T *>(a.dk);
    T *dv = reinterpret_cast<T *>(a.dv);
    const int64_t row0 = mgpu_attention_bwd_row0(b, hk, a.heads_kv, t.block_n, a.k_rows_padded,
                                                 reinterpret_cast<const int32_t *>(a.cu_seqlens_k)) +
                         tile_first;
    for (int64_t e = threadIdx.x; e < rows * vecs; e += kThreads) {
        const int64_t r = e / vecs;
        const int c = (int)(e % vecs);
        const int64_t at = (row0 + r) * (a.head_dim / 4) + 2 * c;
        const int64_t row = s.first + tile_first + r;
        *reinterpret_cast<uint4 *>(dk + s.batch_index * a.dk_batch_stride + row * a.dk_seq_stride +
                                   hk * a.dk_head_stride + c * kVec) = pack8<T>(dk_accum[at], dk_accum[at + 1], 1.0f);
        *reinterpret_cast<uint4 *>(dv + s.batch_index * a.dv_batch_stride + row * a.dv_seq_stride +
                                   hk * a.dv_head_stride + c * kVec) = pack8<T>(dv_accum[at], dv_accum[at + 1], 1.0f);
    }
}

/* Work items of the postprocess: query tiles, then (GQA) key tiles. */
__host__ __device__ __forceinline__ int64_t postprocess_q_items(const mgpu_attention_bwd_args &a, int block_m)
{
    return (int64_t)((a.seqlen_q + block_m - 1) / block_m) * a.heads_q * a.batch;
}

template <typename T>
__device__ void postprocess(const mgpu_attention_bwd_args &a)
{
    const struct mgpu_attention_bwd_tile t = tile_of(a);
    const int m_blocks = cdiv(a.seqlen_q, t.block_m);
    const int q_items = (int)postprocess_q_items(a, t.block_m);
    const int item = blockIdx.x;
    if (item < q_items)
        convert_dq<T>(a, t, m_blocks, item);
    else
        convert_dkv<T>(a, t, item - q_items);
}

} // namespace attn_bwd
} // namespace mgpu
