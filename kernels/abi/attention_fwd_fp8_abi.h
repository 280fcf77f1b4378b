/*
 * The fp8 attention forward's contract with the runtime and the generator
 * (hopper/attention_fwd_fp8_sm90.cuh): Q, K and V in e4m3, O in fp16 / bf16,
 * the same kernel parameter (struct mgpu_attention_fwd_params of
 * abi/attention_abi.h) with the descale fields set.
 *
 * Tensor maps: as the 16-bit forward's (rank 4, {head_dim, rows, heads,
 * nbatch}, 128-byte swizzle) over 1-byte elements (CU_TENSOR_MAP_DATA_TYPE_UINT8),
 * one box of {128, rows, 1, 1}: a whole head-dim-128 row is one 128-byte
 * swizzle row. No GQA packing, no key splits, no paged K/V, no seqused_k
 * (the runtime refuses those calls); varlen, masks, soft-cap and LSE as the
 * 16-bit forward.
 *
 * Descale factors: score(i, j) = softmax_scale * q_descale * k_descale *
 * <Q8[i], K8[j]> and O = v_descale * sum_j P(i, j) V8[j], each factor read
 * at [b * descale_batch_stride + h_kv * descale_head_stride] of its array
 * (h_kv: the query head's KV head), 1 where the array is 0.
 *
 * Shared memory: Q tiles (2 buffers; each also stages the 16-bit O tile, so
 * it holds block_m rows of 2 x 128 bytes), and `stages` buffers of K, of V as
 * loaded and of V transposed (block_n x 128 bytes each).
 *
 * V^T from the workspace (the ATTENTION_FWD_FP8_VT_SM90 kind, with the
 * ATTENTION_FWD_FP8_TRANSPOSE_V_SM90 pre-pass before it): the pre-pass writes
 * V transposed, one 128 x 128-byte block per (key block n, KV head, sequence),
 * row d of the block holding dim d of the block's 128 keys in the kernel's
 * permuted order (K index 4q + e of each group of 16 holds key
 * 2q + (e & 1) + 8 (e >> 1)), keys past the sequence as zeros. Block n of
 * sequence b, KV head h, starts at row 128 (base(b) + n) of head h's rows:
 *   fixed length: base(b) = 0, the rows of batch b (map batch coordinate b);
 *                 rows per head = 128 ceil(seqlen_k / 128)
 *   varlen:       base(b) = floor(cu_seqlens_k[b] / 128) + b, one batch;
 *                 rows per head = 128 (floor(total_k / 128) + batch)
 * (base(b) + blocks(b) <= base(b + 1): sequences never share a block).
 * The main kernel's V map is over that buffer: rank 4 {128, rows per head,
 * heads_kv, nbatch} of bytes, strides {128, 128 rows, 128 rows heads_kv},
 * box {128, 128, 1, 1}, 128-byte swizzle; the kernel loads block n at row
 * 128 (base(b) + n), so the producer's V^T tile is what the transposing
 * warps would have written, and there are no transposing warps and no raw
 * V ring: shared memory holds 2 Q buffers and `stages` (4) K and V^T
 * buffers.
 *
 * The pre-pass (struct mgpu_attention_fwd_fp8_vt_args by value): block
 * {MGPU_ATTENTION_FWD_FP8_VT_THREADS, 1, 1}, no shared memory; grid
 * {ceil(seqlen_k / 128), heads_kv, batch} for fixed length, CTA (n, h, b)
 * writing block n of sequence b, KV head h; varlen {floor(total_k / 128) +
 * batch, heads_kv, 1}, CTA (x, h, 0) writing the block at slot x (the
 * sequence b with base(b) <= x < base(b + 1), block x - base(b), if the
 * sequence has it).
 */
#ifndef MGPU_KERNELS_ABI_ATTENTION_FWD_FP8_ABI_H
#define MGPU_KERNELS_ABI_ATTENTION_FWD_FP8_ABI_H

#include "attention_abi.h"

#define MGPU_ATTENTION_FWD_FP8_HEAD_DIM 128
#define MGPU_ATTENTION_FWD_FP8_BLOCK_N 128
#define MGPU_ATTENTION_FWD_FP8_STAGES 3
#define MGPU_ATTENTION_FWD_FP8_Q_STAGES 2
/* Bytes of one head-dim row of Q, K or V (one TMA box row, one swizzle row). */
#define MGPU_ATTENTION_FWD_FP8_ROW_BYTES 128
/* Bytes of one 16-bit O row staged in a Q buffer. */
#define MGPU_ATTENTION_FWD_FP8_O_ROW_BYTES 256

MGPU_ABI_FN int mgpu_attention_fwd_fp8_smem_bytes(int block_m, int block_n, int stages, int q_stages)
{
    return q_stages * block_m * MGPU_ATTENTION_FWD_FP8_O_ROW_BYTES +
           3 * stages * block_n * MGPU_ATTENTION_FWD_FP8_ROW_BYTES + MGPU_ATTENTION_FWD_SMEM_OVERHEAD;
}

/* V^T from the workspace: K and V^T rings only. */
#define MGPU_ATTENTION_FWD_FP8_VT_STAGES 4
#define MGPU_ATTENTION_FWD_FP8_VT_THREADS 256

MGPU_ABI_FN int mgpu_attention_fwd_fp8_vt_smem_bytes(int block_m, int block_n, int stages, int q_stages)
{
    return q_stages * block_m * MGPU_ATTENTION_FWD_FP8_O_ROW_BYTES +
           2 * stages * block_n * MGPU_ATTENTION_FWD_FP8_ROW_BYTES + MGPU_ATTENTION_FWD_SMEM_OVERHEAD;
}

/* The pre-pass's parameter. Strides in bytes (one per e4m3 element). */
struct mgpu_attention_fwd_fp8_vt_args {
    uint64_t v;                                     /* V, [batch][seq][heads_kv][128] through the strides */
    int64_t v_batch_stride, v_seq_stride, v_head_stride; /* batch stride ignored when varlen */
    uint64_t vt;                                    /* the workspace (256-byte aligned) */
    int64_t vt_head_stride, vt_batch_stride;        /* 128 x rows per head; x heads_kv (fixed length) */
    uint64_t cu_seqlens_k;                          /* int32[batch + 1], or 0 */
    int32_t seqlen_k;                               /* fixed length: keys; varlen: unused */
    int32_t batch;                                  /* sequences */
};

#endif
