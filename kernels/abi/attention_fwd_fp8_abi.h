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

#endif
