/*
 * What mgpu_attention_fwd and mgpu_attention_bwd validate alike. Their
 * descriptors share their leading fields (sizes, dtype, scale, masks,
 * varlen), so both copy those into struct mgpu_attention_fields and run the
 * same checks, in the order of the public header's status lists: values
 * (INVALID_VALUE, UNSUPPORTED_DTYPE), sizes (INVALID_SIZE), strides
 * (INVALID_LD), then what only this build lacks (NOT_SUPPORTED: head dim,
 * the TMA alignment rules). Pure functions; nothing touches a device.
 */
#ifndef MGPU_SRC_ATTENTION_COMMON_H
#define MGPU_SRC_ATTENTION_COMMON_H

#include <stdint.h>

#include "dispatch.h"

/* One attention call after validation: defaults resolved (dense strides,
 * softmax scale), pointers as addresses. The backward pass keeps its extra
 * tensors beside this (struct mgpu_attention_bwd_problem). */
struct mgpu_attention_problem {
    int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
    int dtype;                  /* mgpu_dtype */
    float softmax_scale, softcap;
    int causal, window_left, window_right;
    int varlen;
    int64_t total_q, total_k;   /* rows of the seq dimension of Q/O and K/V (fixed length: seqlen) */
    uintptr_t q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k;
    mgpu_attention_strides q_strides, k_strides, v_strides, o_strides;
    /* Forward only (zero elsewhere): paged K / V and per-sequence key counts. */
    uintptr_t block_table, seqused_k;
    int64_t page_size, max_blocks_per_seq, num_pages;
    /* Forward only: fp8 inputs (attention_fp8.c). */
    int qkv_fp8;
    uintptr_t q_descale, k_descale, v_descale;
    int64_t descale_batch_stride, descale_head_stride;
};

/* The fields both descriptors share, in their order. */
struct mgpu_attention_fields {
    int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
    int dtype;
    float softmax_scale;
    int causal, window_left, window_right;
    float softcap;
    const int32_t *cu_seqlens_q, *cu_seqlens_k;
    int64_t total_q, total_k;
};

/* The shared fields of a mgpu_attention_fwd_desc or mgpu_attention_bwd_desc. */
#define MGPU_ATTENTION_FIELDS_OF(d)                                                                               \
    ((struct mgpu_attention_fields){(d)->batch, (d)->seqlen_q, (d)->seqlen_k, (d)->heads_q, (d)->heads_kv,       \
                                    (d)->head_dim, (int)(d)->dtype, (d)->softmax_scale, (d)->causal,              \
                                    (d)->window_left, (d)->window_right, (d)->softcap, (d)->cu_seqlens_q,         \
                                    (d)->cu_seqlens_k, (d)->total_q, (d)->total_k})

/* Sizes the kernels keep in int32. */
#define MGPU_ATTENTION_MAX_SIZE INT32_MAX

/* 1 when a * b * c (each >= 0) exceeds `limit` or int64. */
int mgpu_attention_product_exceeds(int64_t a, int64_t b, int64_t c, int64_t limit);

/* Checks the values and sizes of the shared fields and fills *p from them
 * (pointers, strides and softmax_scale zero). SUCCESS, or
 * INVALID_VALUE / UNSUPPORTED_DTYPE / INVALID_SIZE with the message set. */
mgpu_status mgpu_attention_check_fields(const struct mgpu_attention_fields *f, struct mgpu_attention_problem *p);

/* 1 when a valid call has nothing to compute: no sequence, no query head
 * or no query row. */
int mgpu_attention_problem_empty(const struct mgpu_attention_problem *p);

/* For a problem with queries: head_dim, heads_kv, seqlen_k (and total_k)
 * at least 1, heads_q a multiple of heads_kv. INVALID_SIZE otherwise. */
mgpu_status mgpu_attention_check_heads(const struct mgpu_attention_problem *p);

/* softmax_scale of the call: the descriptor's, or 1 / sqrt(head_dim) for 0. */
float mgpu_attention_scale(float given, int64_t head_dim);

/* The LSE layout the forward writes and the backward reads, in elements
 * (kernels/abi/attention_abi.h): [batch][heads_q][seqlen_q], or
 * [heads_q][total_q] for varlen calls. */
void mgpu_attention_lse_strides(const struct mgpu_attention_problem *p, int64_t *batch_stride,
                                int64_t *head_stride);

/* One tensor of the call: its base, the strides the descriptor gave, where
 * the resolved strides go, and whether it has the query side's heads and
 * rows (Q, O, dO, dQ) or the key side's (K, V, dK, dV). */
struct mgpu_attention_tensor {
    const char *name;
    uintptr_t base;
    const mgpu_attention_strides *given;
    mgpu_attention_strides *used;
    int query_side;
};

/* Resolves each tensor's strides (all zero: dense) and checks them: >= 0,
 * below 2^39 elements, zero only along a dimension of extent 1. SUCCESS,
 * INVALID_SIZE (dense strides that overflow int64) or INVALID_LD. */
mgpu_status mgpu_attention_resolve_strides(const struct mgpu_attention_problem *p,
                                           const struct mgpu_attention_tensor *t, int count);

/* What this build's kernels need: a supported head dim, then 16-byte
 * aligned bases and strides that are multiples of 8 elements for every
 * tensor (batch strides of varlen calls excepted). SUCCESS or NOT_SUPPORTED. */
mgpu_status mgpu_attention_check_kernel_rules(const struct mgpu_attention_problem *p,
                                              const struct mgpu_attention_tensor *t, int count);

/* The rank-4 tensor map (plain numbers; the runtime encodes it) of one
 * (batch, seq, head, dim) tensor of `rows` seq rows (total rows for varlen,
 * with one batch entry) and `heads` heads, as the attention ABIs describe
 * it: {head_dim, seq rows, heads, nbatch}, 128-byte swizzle, one box of 64
 * elements of the head dim by box_rows rows. */
void mgpu_attention_map_shape(struct mgpu_tensor_map_desc *m, uintptr_t base, const struct mgpu_attention_problem *p,
                              int64_t rows, int64_t heads, const mgpu_attention_strides *s, int box_rows);

/* The problem's scalar fields that the forward and backward kernel argument
 * structs (mgpu_attention_fwd_args, mgpu_attention_bwd_args) both carry under
 * the same names: sizes, mask, scale and soft-cap. */
#define MGPU_ATTENTION_FILL_SCALAR_ARGS(a, p)                                                               \
    do {                                                                                                   \
        (a)->batch = (int32_t)(p)->batch;                                                                  \
        (a)->seqlen_q = (int32_t)(p)->seqlen_q;                                                            \
        (a)->seqlen_k = (int32_t)(p)->seqlen_k;                                                            \
        (a)->heads_q = (int32_t)(p)->heads_q;                                                              \
        (a)->heads_kv = (int32_t)(p)->heads_kv;                                                            \
        (a)->head_dim = (int32_t)(p)->head_dim;                                                            \
        (a)->group_size = (int32_t)((p)->heads_q / (p)->heads_kv);                                         \
        (a)->causal = (p)->causal;                                                                         \
        (a)->window_left = (p)->window_left;                                                               \
        (a)->window_right = (p)->window_right;                                                             \
        (a)->softmax_scale = (p)->softmax_scale;                                                           \
        (a)->scale_log2 = (p)->softmax_scale * 1.4426950408889634f; /* times log2(e) */                    \
        (a)->softcap = (p)->softcap;                                                                       \
    } while (0)

#endif
