/*
 * Validation, variant selection and launch planning for mgpu_attention_fwd
 * (see attention_plan.h). Pure functions of the call and the device's
 * capabilities.
 *
 * Checks run in the order of the public header's status list: descriptor
 * shape and values first (INVALID_*), then what only this build lacks
 * (NOT_SUPPORTED: head dim, the TMA alignment rules); the checks the
 * backward pass shares live in attention_common.c. Selection picks the
 * variant of the call's dtype and head dim for the device's exact compute
 * capability (struct mgpu_attention_variant: head dim, query and key
 * blocks, stages).
 */
#include "attention_plan.h"

#include <string.h>

/* 16-bit elements. */
#define ELEMENT_BYTES 2
#define LSE_ALIGN_BYTES 4

mgpu_status mgpu_attention_fwd_validate(const mgpu_attention_fwd_desc *desc, const void *q, const void *k,
                                        const void *v, void *o, float *lse, struct mgpu_attention_problem *out)
{
    if (!desc)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    if (desc->struct_size != sizeof(mgpu_attention_fwd_desc))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "desc->struct_size is %zu, expected %zu: start from MGPU_ATTENTION_FWD_DESC_INIT",
                         desc->struct_size, sizeof(mgpu_attention_fwd_desc));
    struct mgpu_attention_problem p;
    mgpu_status s = mgpu_attention_check_fields(&MGPU_ATTENTION_FIELDS_OF(desc), &p);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    p.q = (uintptr_t)q;
    p.k = (uintptr_t)k;
    p.v = (uintptr_t)v;
    p.o = (uintptr_t)o;
    p.lse = (uintptr_t)lse;
    *out = p;
    if (mgpu_attention_problem_empty(&p))
        return MGPU_STATUS_SUCCESS;

    s = mgpu_attention_check_heads(&p);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (mgpu_attention_product_exceeds(mgpu_cdiv(p.seqlen_q, MGPU_ATTENTION_FWD_BLOCK_M), p.heads_q, p.batch,
                                       MGPU_ATTENTION_MAX_SIZE))
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                         "ceil(seqlen_q / 128) * heads_q * batch must be at most 2^31 - 1 (query tiles)");
    if (!q || !k || !v || !o)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "q, k, v and o must not be NULL (q %p, k %p, v %p, o %p)", q, k,
                         v, o);
    if (p.lse % LSE_ALIGN_BYTES)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "lse must be 4-byte aligned (an fp32 array)");

    p.softmax_scale = mgpu_attention_scale(desc->softmax_scale, p.head_dim);
    const struct mgpu_attention_tensor tensors[4] = {
        {"q", p.q, &desc->q_strides, &p.q_strides, 1},
        {"k", p.k, &desc->k_strides, &p.k_strides, 0},
        {"v", p.v, &desc->v_strides, &p.v_strides, 0},
        {"o", p.o, &desc->o_strides, &p.o_strides, 1},
    };
    s = mgpu_attention_resolve_strides(&p, tensors, 4);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_attention_check_kernel_rules(&p, tensors, 4);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    *out = p;
    return MGPU_STATUS_SUCCESS;
}

static int is_attention_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_FWD_SM90 || k == MGPU_KIND_ATTENTION_FWD_SM100;
}

/* The sm_100a forward runs one work tile per CTA (attention_abi.h, its
 * Blackwell paragraph): no persistent grid, no dynamic tiles. */
static int variant_takes_persistent_grid(const struct mgpu_variant *v)
{
    return v->kind == MGPU_KIND_ATTENTION_FWD_SM90;
}

static int attention_fits(const struct mgpu_variant *v, const void *ctx)
{
    const struct mgpu_attention_problem *p = ctx;
    return v->dtype == p->dtype && v->attention.head_dim == p->head_dim;
}

int mgpu_select_attention_fwd(const struct mgpu_attention_problem *p, const struct mgpu_device_caps *caps,
                              const char *force, mgpu_status *status)
{
    const struct mgpu_lookup q = {.what = "attention forward", .of_op = is_attention_kind, .caps = caps,
                                  .force = force, .fits = attention_fits, .ctx = p};
    return mgpu_registry_lookup(&q, NULL, status);
}

/* Longest key loop (in key blocks) that runs on the persistent grid. Measured
 * on H200, bf16, head dim 128, kernel alone, persistent against one CTA per
 * tile: 8 blocks (B=16, S=1024) 570 vs 521 TFLOP/s, 32 blocks (B=4, S=4096)
 * 656 vs 645, 128 blocks (B=1, S=16384) 616 vs 675: with long loops the CTAs
 * of the static round-robin stay in lockstep on the same K/V blocks, while
 * one-tile CTAs start staggered. */
#define PERSISTENT_MAX_KEY_BLOCKS 32
/* K and V bytes of the (batch, head) pairs whose causal tiles are ordered
 * heaviest first together: well inside the L2 of an H100 (50 MiB) or H200. */
#define LPT_GROUP_KV_BYTES ((int64_t)24 << 20)

void mgpu_attention_make_plan(const struct mgpu_attention_problem *p, const struct mgpu_variant *v,
                              const struct mgpu_device_caps *caps, struct mgpu_attention_plan *out)
{
    memset(out, 0, sizeof *out);
    struct mgpu_attention_fwd_args *a = &out->args;
    MGPU_ATTENTION_FILL_SCALAR_ARGS(a, p);
    a->q_batch_stride = p->q_strides.batch;
    a->q_seq_stride = p->q_strides.seq;
    a->q_head_stride = p->q_strides.head;
    a->k_batch_stride = p->k_strides.batch;
    a->k_seq_stride = p->k_strides.seq;
    a->k_head_stride = p->k_strides.head;
    a->v_batch_stride = p->v_strides.batch;
    a->v_seq_stride = p->v_strides.seq;
    a->v_head_stride = p->v_strides.head;
    a->o_batch_stride = p->o_strides.batch;
    a->o_seq_stride = p->o_strides.seq;
    a->o_head_stride = p->o_strides.head;
    a->o = (uint64_t)p->o;
    a->lse = (uint64_t)p->lse;
    mgpu_attention_lse_strides(p, &a->lse_batch_stride, &a->lse_head_stride);
    if (p->varlen) {
        a->cu_seqlens_q = (uint64_t)p->cu_seqlens_q;
        a->cu_seqlens_k = (uint64_t)p->cu_seqlens_k;
    }
    mgpu_attention_map_shape(&out->q_map, p->q, p, p->total_q, p->heads_q, &p->q_strides, v->attention.block_m);
    mgpu_attention_map_shape(&out->k_map, p->k, p, p->total_k, p->heads_kv, &p->k_strides, v->attention.block_n);
    mgpu_attention_map_shape(&out->v_map, p->v, p, p->total_k, p->heads_kv, &p->v_strides, v->attention.block_n);
    const int64_t tiles = mgpu_cdiv(p->seqlen_q, v->attention.block_m) * p->heads_q * p->batch;
    /* Equal tiles (no mask that skips key blocks, no per-sequence lengths):
     * a persistent CTA loads the next tile's Q and K/V while it finishes the
     * current one, which pays where the per-tile fill and epilogue are a large
     * share, i.e. short key loops. Needs the second Q buffer. */
    const int unwindowed = !p->varlen && p->window_left < 0 && p->window_right < 0;
    const int short_loop = mgpu_cdiv(p->seqlen_k, v->attention.block_n) <= PERSISTENT_MAX_KEY_BLOCKS;
    const int q_stages = mgpu_attention_fwd_q_stages(v->attention.block_m, v->attention.block_n, v->attention.head_dim, v->attention.stages);
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : tiles;
    const int persistent = variant_takes_persistent_grid(v) && unwindowed && short_loop && q_stages == 2 && sms < tiles;
    out->grid = (unsigned)(persistent ? sms : tiles);
    /* Causal tiles differ in length (the last query block sees every key, the
     * first one block): the persistent grid takes them at run time, heaviest
     * first within groups of heads whose K/V stay in L2. */
    out->dynamic = persistent && p->causal;
    if (out->dynamic) {
        /* per (batch, head); seqlen_k < 2^31, head_dim <= 256 here */
        const int64_t kv_bytes = 2 * p->seqlen_k * p->head_dim * ELEMENT_BYTES;
        int64_t group = LPT_GROUP_KV_BYTES / (kv_bytes > 0 ? kv_bytes : 1);
        const int64_t pairs = p->heads_q * p->batch;
        group = group < 1 ? 1 : group > pairs ? pairs : group;
        a->lpt_group = (int32_t)group;
    }
}
