/*
 * The fp8 forward's part of mgpu_attention_fwd (include/mgpukernels.h,
 * "fp8"; kernels/abi/attention_fwd_fp8_abi.h): its descriptor fields, what
 * its kernel cannot do, and its plan (descale arguments, tensor maps over
 * one-byte elements; with V^T from the workspace, that buffer's size, the
 * pre-pass's arguments and the V map over it).
 */
#include "attention_plan.h"

#include <stdint.h>
#include <string.h>

#include "attention_fwd_fp8_abi.h"

#define DESCALE_ALIGN_BYTES 4
/* Q, K, V strides in bytes (one per element): TMA wants multiples of 16. */
#define FP8_STRIDE_MULTIPLE 16

mgpu_status mgpu_attention_fwd_check_fp8_fields(const mgpu_attention_fwd_desc *d, struct mgpu_attention_problem *p)
{
    if (d->qkv_fp8 != 0 && d->qkv_fp8 != 1)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "qkv_fp8 is %d; it must be 0 (Q, K, V hold dtype) or 1 (e4m3)",
                         d->qkv_fp8);
    const uintptr_t arrays[3] = {(uintptr_t)d->q_descale, (uintptr_t)d->k_descale, (uintptr_t)d->v_descale};
    if (!d->qkv_fp8) {
        if (arrays[0] || arrays[1] || arrays[2] || d->descale_batch_stride || d->descale_head_stride)
            return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "q_descale, k_descale, v_descale and their strides are for "
                             "fp8 inputs (qkv_fp8 = 1); they must be NULL / 0 otherwise");
        return MGPU_STATUS_SUCCESS;
    }
    for (int i = 0; i < 3; i++)
        if (arrays[i] % DESCALE_ALIGN_BYTES)
            return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "q_descale, k_descale and v_descale must be 4-byte aligned "
                             "fp32 arrays (or NULL)");
    const int64_t bs = d->descale_batch_stride, hs = d->descale_head_stride;
    if (bs < 0 || hs < 0)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "descale_batch_stride (%lld) and descale_head_stride (%lld) "
                         "must be >= 0", (long long)bs, (long long)hs);
    /* The last factor's index, (batch - 1) * bs + (heads_kv - 1) * hs, in int64. */
    int64_t last_b = 0, last_h = 0;
    if (p->batch > 0 && p->heads_kv > 0 &&
        (!mgpu_mul_ok(p->batch - 1, bs, &last_b) || !mgpu_mul_ok(p->heads_kv - 1, hs, &last_h) ||
         last_b > INT64_MAX / 8 - last_h))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "descale strides {batch %lld, head %lld} overflow the index of "
                         "the last factor", (long long)bs, (long long)hs);
    p->qkv_fp8 = 1;
    p->q_descale = arrays[0];
    p->k_descale = arrays[1];
    p->v_descale = arrays[2];
    p->descale_batch_stride = bs;
    p->descale_head_stride = hs;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_attention_fwd_check_fp8_rules(const struct mgpu_attention_problem *p)
{
    if (!p->qkv_fp8)
        return MGPU_STATUS_SUCCESS;
    if (p->head_dim != MGPU_ATTENTION_FWD_FP8_HEAD_DIM)
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "fp8 attention (qkv_fp8) has a kernel for head_dim %d only, "
                         "not %lld", MGPU_ATTENTION_FWD_FP8_HEAD_DIM, (long long)p->head_dim);
    if (p->block_table || p->seqused_k)
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "fp8 attention (qkv_fp8) does not take a paged K/V cache or "
                         "seqused_k yet");
    const struct {
        const char *name;
        uintptr_t base;
        const mgpu_attention_strides *s;
    } t[3] = {{"q", p->q, &p->q_strides}, {"k", p->k, &p->k_strides}, {"v", p->v, &p->v_strides}};
    for (int i = 0; i < 3; i++) {
        const int64_t batch = p->varlen ? 0 : t[i].s->batch;
        if (batch % FP8_STRIDE_MULTIPLE || t[i].s->seq % FP8_STRIDE_MULTIPLE || t[i].s->head % FP8_STRIDE_MULTIPLE)
            return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "fp8 %s strides {batch %lld, seq %lld, head %lld} must be "
                             "multiples of 16 elements (16 bytes) for TMA", t[i].name, (long long)t[i].s->batch,
                             (long long)t[i].s->seq, (long long)t[i].s->head);
    }
    return MGPU_STATUS_SUCCESS;
}

/* A map the shared planner made for 16-bit elements, over bytes: the byte
 * strides halve, one box spans the whole 128-byte row. */
static void map_over_bytes(struct mgpu_tensor_map_desc *m)
{
    m->type = MGPU_MAP_U8;
    for (int i = 0; i + 1 < m->rank; i++)
        m->byte_strides[i] /= 2;
    m->box[0] = MGPU_ATTENTION_FWD_FP8_ROW_BYTES;
}

void mgpu_attention_fwd_plan_fp8(const struct mgpu_attention_problem *p, struct mgpu_attention_plan *plan)
{
    struct mgpu_attention_fwd_args *a = &plan->args;
    a->q_descale = (uint64_t)p->q_descale;
    a->k_descale = (uint64_t)p->k_descale;
    a->v_descale = (uint64_t)p->v_descale;
    a->descale_batch_stride = p->descale_batch_stride;
    a->descale_head_stride = p->descale_head_stride;
    map_over_bytes(&plan->q_map);
    map_over_bytes(&plan->k_map);
    map_over_bytes(&plan->v_map);
}

/* Rows per KV head of the V^T buffer (abi/attention_fwd_fp8_abi.h, "V^T from
 * the workspace"), or 0 when the call does not fit that layout: rows at or
 * past 2^31 (the kernels' int coordinates), or more KV heads (or, fixed
 * length, sequences) than a grid's y (z) extent. */
static int64_t vt_rows_per_head(const struct mgpu_attention_problem *p)
{
    const int64_t block = MGPU_ATTENTION_FWD_FP8_BLOCK_N;
    const int64_t blocks = p->varlen ? p->total_k / block + p->batch : mgpu_cdiv(p->seqlen_k, block);
    int64_t rows = 0;
    if (p->heads_kv > MGPU_MAX_GRID_YZ || (!p->varlen && p->batch > MGPU_MAX_GRID_YZ) ||
        !mgpu_mul_ok(blocks, block, &rows) || rows >= INT32_MAX)
        return 0;
    return rows;
}

/* Query tiles of one KV head's keys below which the in-kernel transpose
 * stays: the pre-pass moves 2x V's bytes once, the transposing warps work
 * once per query tile. H100, bf16 O, per-tensor descales, V^T against the
 * in-kernel transpose (pre-pass included): B=4 S=4096 H=16 (32 tiles)
 * 646 -> 754 TFLOP/s non-causal, 582 -> 640 causal; B=16 S=1024 H=16 (8
 * tiles) 532 -> 530, 373 -> 356. */
#define VT_MIN_QUERY_TILES 16

int mgpu_attention_fwd_fp8_vt_pays(const struct mgpu_attention_problem *p)
{
    const int64_t group = p->heads_kv > 0 ? p->heads_q / p->heads_kv : 1;
    return mgpu_cdiv(p->seqlen_q, MGPU_ATTENTION_FWD_BLOCK_M) * group >= VT_MIN_QUERY_TILES;
}

size_t mgpu_attention_fwd_fp8_vt_bytes(const struct mgpu_attention_problem *p)
{
    const int64_t rows = vt_rows_per_head(p);
    int64_t bytes = 0;
    if (!p->qkv_fp8 || rows == 0 ||
        !mgpu_mul3_ok(rows * MGPU_ATTENTION_FWD_FP8_ROW_BYTES, p->heads_kv, p->varlen ? 1 : p->batch, &bytes) ||
        (uint64_t)bytes > SIZE_MAX)
        return 0;
    return (size_t)bytes;
}

void mgpu_attention_fwd_plan_fp8_vt(const struct mgpu_attention_problem *p, uint64_t workspace,
                                    struct mgpu_attention_plan *plan, struct mgpu_attention_fwd_fp8_vt_args *vt,
                                    unsigned grid[3])
{
    const int64_t rows = vt_rows_per_head(p), row_bytes = MGPU_ATTENTION_FWD_FP8_ROW_BYTES;
    const int64_t head_stride = rows * row_bytes, batch_stride = head_stride * p->heads_kv;
    memset(vt, 0, sizeof *vt);
    vt->v = (uint64_t)p->v;
    vt->v_batch_stride = p->varlen ? 0 : p->v_strides.batch;
    vt->v_seq_stride = p->v_strides.seq;
    vt->v_head_stride = p->v_strides.head;
    vt->vt = workspace;
    vt->vt_head_stride = head_stride;
    vt->vt_batch_stride = batch_stride;
    vt->cu_seqlens_k = (uint64_t)p->cu_seqlens_k;
    vt->seqlen_k = (int32_t)p->seqlen_k;
    vt->batch = (int32_t)p->batch;
    grid[0] = (unsigned)(rows / MGPU_ATTENTION_FWD_FP8_BLOCK_N);
    grid[1] = (unsigned)p->heads_kv;
    grid[2] = (unsigned)(p->varlen ? 1 : p->batch);

    struct mgpu_tensor_map_desc *m = &plan->v_map;
    memset(m, 0, sizeof *m);
    m->type = MGPU_MAP_U8;
    m->rank = 4;
    m->swizzle_128b = 1;
    m->l2_promote = 256;
    m->base = workspace;
    m->dims[0] = (uint64_t)row_bytes;
    m->dims[1] = (uint64_t)rows;
    m->dims[2] = (uint64_t)p->heads_kv;
    m->dims[3] = (uint64_t)(p->varlen ? 1 : p->batch);
    m->byte_strides[0] = (uint64_t)row_bytes;
    m->byte_strides[1] = (uint64_t)head_stride;
    m->byte_strides[2] = (uint64_t)batch_stride;
    m->box[0] = MGPU_ATTENTION_FWD_FP8_ROW_BYTES;
    m->box[1] = MGPU_ATTENTION_FWD_FP8_BLOCK_N;
    m->box[2] = 1;
    m->box[3] = 1;
}
