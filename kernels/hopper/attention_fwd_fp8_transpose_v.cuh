/*
 * The fp8 attention forward's V pre-pass (sm_90a; architecture-neutral CUDA):
 * writes V (e4m3, keys x 128 dims per KV head) transposed into the handle's
 * workspace, in the layout abi/attention_fwd_fp8_abi.h describes ("V^T from
 * the workspace"), so that the main kernel (attention_fwd_fp8_sm90.cuh with
 * kVtInWorkspace) TMA-loads V^T tiles as it loads K tiles.
 *
 * CTA (n, h, b): key block n of sequence b, KV head h (varlen: CTA (x, h, 0)
 * of block slot x, see below): 128 keys x 128 dims
 * (16 KiB) in, the same out. Warp w owns the 16 dims of chunk w (8 warps);
 * lane l owns K indices 4l .. 4l + 3 of the permuted order, i.e. keys
 * r_i = 16 (l / 4) + 2 (l % 4) + (i & 1) + 8 (i >> 1), i = 0..3: four
 * 16-byte loads (rows r_i, dims 16w .. 16w + 15; zeros past the sequence),
 * four 4 x 4 byte transposes (PRMT), sixteen 4-byte stores (row 16w + j of
 * the block, bytes 4l .. 4l + 3), each store instruction of a warp one whole
 * 128-byte row.
 */
#pragma once

#include <stdint.h>

#include "abi/attention_fwd_fp8_abi.h"

namespace mgpu {
namespace attn_fp8_vt {

constexpr int kThreads = MGPU_ATTENTION_FWD_FP8_VT_THREADS;
constexpr int kBlockKeys = MGPU_ATTENTION_FWD_FP8_BLOCK_N;
constexpr int kRowBytes = MGPU_ATTENTION_FWD_FP8_ROW_BYTES; /* 128 dims of one key, 128 keys of one dim */
constexpr int kChunkBytes = 16;
static_assert(kThreads / 32 * kChunkBytes == kRowBytes, "one warp per 16 dims");
static_assert(kBlockKeys == 4 * 32, "one lane per 4 keys");

/* Column m of four 4-byte words w[0..3][m] (bytes of four keys) as four
 * words of the transpose: out[k] holds byte k of each key's word, keys in
 * the order 0, 1, 2, 3 (two PRMT levels, 6 instructions). The pre-pass and
 * the fp8 kernel's in-kernel transpose share it. */
__device__ __forceinline__ void transpose_bytes_4x4(const uint32_t (&w)[4][4], int m, uint32_t (&out)[4])
{
    const uint32_t t0 = __byte_perm(w[0][m], w[1][m], 0x5140);
    const uint32_t t1 = __byte_perm(w[0][m], w[1][m], 0x7362);
    const uint32_t t2 = __byte_perm(w[2][m], w[3][m], 0x5140);
    const uint32_t t3 = __byte_perm(w[2][m], w[3][m], 0x7362);
    out[0] = __byte_perm(t0, t2, 0x5410);
    out[1] = __byte_perm(t0, t2, 0x7632);
    out[2] = __byte_perm(t1, t3, 0x5410);
    out[3] = __byte_perm(t1, t3, 0x7632);
}

__device__ __forceinline__ void transpose_v(const mgpu_attention_fwd_fp8_vt_args &a)
{
    const int h = static_cast<int>(blockIdx.y);
    int n = static_cast<int>(blockIdx.x), b = static_cast<int>(blockIdx.z);
    int64_t k_offset = 0, base = 0, batch_slot = b;
    int len = a.seqlen_k;
    if (a.cu_seqlens_k != 0) {
        /* Block slot x: the sequence b with base(b) <= x < base(b + 1)
         * (base(b) = floor(cu[b] / 128) + b rises by at least 1 a sequence),
         * its block n = x - base(b); slots past its blocks stay unwritten
         * (the main kernel reads none of them). */
        const int32_t *cu = reinterpret_cast<const int32_t *>(a.cu_seqlens_k);
        int lo = 0, hi = a.batch - 1;
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (__ldg(cu + mid) / kBlockKeys + mid <= n)
                lo = mid;
            else
                hi = mid - 1;
        }
        b = lo;
        k_offset = __ldg(cu + b);
        len = __ldg(cu + b + 1) - static_cast<int>(k_offset);
        base = k_offset / kBlockKeys + b;
        n -= static_cast<int>(base);
        batch_slot = 0;
    }
    const int key0 = n * kBlockKeys;
    if (key0 >= len)
        return;
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int row0 = 16 * (lane / 4) + 2 * (lane % 4);
    const uint8_t *src = reinterpret_cast<const uint8_t *>(a.v) + batch_slot * a.v_batch_stride +
                         h * a.v_head_stride + (k_offset + key0) * a.v_seq_stride + warp * kChunkBytes;
    uint32_t w[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = row0 + (i & 1) + 8 * (i >> 1);
        uint4 x = make_uint4(0u, 0u, 0u, 0u);
        if (key0 + r < len)
            x = __ldg(reinterpret_cast<const uint4 *>(src + r * a.v_seq_stride));
        w[i][0] = x.x;
        w[i][1] = x.y;
        w[i][2] = x.z;
        w[i][3] = x.w;
    }
    uint8_t *dst = reinterpret_cast<uint8_t *>(a.vt) + batch_slot * a.vt_batch_stride + h * a.vt_head_stride +
                   ((base + n) * kBlockKeys + warp * kChunkBytes) * kRowBytes + 4 * lane;
#pragma unroll
    for (int m = 0; m < 4; ++m) {
        uint32_t out[4];
        transpose_bytes_4x4(w, m, out);
#pragma unroll
        for (int k = 0; k < 4; ++k)
            *reinterpret_cast<uint32_t *>(dst + (4 * m + k) * kRowBytes) = out[k];
    }
}

} // namespace attn_fp8_vt
} // namespace mgpu
