/*
 * Validation, kernel choice and launch planning for mgpu_attention_bwd (see
 * attention_bwd_plan.h). The checks shared with the forward call come from
 * attention_common.c, in the same order; the backward adds its four
 * gradient-side tensors, `deterministic`, a required LSE, and limits on its
 * grids and workspace. Block sizes and the scratch layout come from
 * kernels/abi/attention_bwd_abi.h, the one place that defines them.
 */
#include "attention_bwd_plan.h"

#include <string.h>

#define LSE_ALIGN_BYTES 4
#define TENSORS 8

mgpu_status mgpu_attention_bwd_validate(const mgpu_attention_bwd_desc *desc, const void *q, const void *k,
                                        const void *v, const void *o, const void *dout, const float *lse, void *dq,
                                        void *dk, void *dv, int need_pointers, struct mgpu_attention_bwd_problem *out)
{
    if (!desc)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    if (desc->struct_size != sizeof(mgpu_attention_bwd_desc))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "desc->struct_size is %zu, expected %zu: start from MGPU_ATTENTION_BWD_DESC_INIT",
                         desc->struct_size, sizeof(mgpu_attention_bwd_desc));
    if (desc->deterministic != 0 && desc->deterministic != 1)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "deterministic is %d; it must be 0 or 1", desc->deterministic);
    struct mgpu_attention_bwd_problem p;
    memset(&p, 0, sizeof p);
    mgpu_status s = mgpu_attention_check_fields(&MGPU_ATTENTION_FIELDS_OF(desc), &p.a);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    p.a.q = (uintptr_t)q;
    p.a.k = (uintptr_t)k;
    p.a.v = (uintptr_t)v;
    p.a.o = (uintptr_t)o;
    p.a.lse = (uintptr_t)lse;
    p.dout = (uintptr_t)dout;
    p.dq = (uintptr_t)dq;
    p.dk = (uintptr_t)dk;
    p.dv = (uintptr_t)dv;
    p.deterministic = desc->deterministic;
    *out = p;
    if (mgpu_attention_problem_empty(&p.a))
        return MGPU_STATUS_SUCCESS;

    s = mgpu_attention_check_heads(&p.a);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (need_pointers && (!q || !k || !v || !o || !dout || !lse || !dq || !dk || !dv))
        return mgpu_fail(MGPU_STATUS_NULL_POINTER,
                         "q, k, v, o, dout, lse, dq, dk and dv must not be NULL (q %p, k %p, v %p, o %p, dout %p, "
                         "lse %p, dq %p, dk %p, dv %p)",
                         q, k, v, o, dout, (const void *)lse, dq, dk, dv);
    if (p.a.lse % LSE_ALIGN_BYTES)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "lse must be 4-byte aligned (an fp32 array)");

    p.a.softmax_scale = mgpu_attention_scale(desc->softmax_scale, p.a.head_dim);
    const struct mgpu_attention_tensor tensors[TENSORS] = {
        {"q", p.a.q, &desc->q_strides, &p.a.q_strides, 1},
        {"k", p.a.k, &desc->k_strides, &p.a.k_strides, 0},
        {"v", p.a.v, &desc->v_strides, &p.a.v_strides, 0},
        {"o", p.a.o, &desc->o_strides, &p.a.o_strides, 1},
        {"dout", p.dout, &desc->do_strides, &p.do_strides, 1},
        {"dq", p.dq, &desc->dq_strides, &p.dq_strides, 1},
        {"dk", p.dk, &desc->dk_strides, &p.dk_strides, 0},
        {"dv", p.dv, &desc->dv_strides, &p.dv_strides, 0},
    };
    s = mgpu_attention_resolve_strides(&p.a, tensors, TENSORS);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_attention_check_kernel_rules(&p.a, tensors, TENSORS);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    *out = p;
    return MGPU_STATUS_SUCCESS;
}

/* One main kernel per architecture, head dims 64..256 on both. The pre- and
 * postprocess kinds have a row per architecture. */
static int is_main_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_BWD_SM90 || k == MGPU_KIND_ATTENTION_BWD_SM100;
}

static int is_pre_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_BWD_PRE;
}

static int is_post_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_BWD_POST;
}

/* The main kernel of the call's dtype and head dim. */
static int main_fits(const struct mgpu_variant *v, const void *ctx)
{
    const struct mgpu_attention_problem *p = ctx;
    return v->dtype == p->dtype && v->attention.head_dim == p->head_dim;
}

/* The preprocess and postprocess take the head dim at run time. */
static int helper_fits(const struct mgpu_variant *v, const void *ctx)
{
    const struct mgpu_attention_problem *p = ctx;
    return v->dtype == p->dtype;
}

static void fill_args(const struct mgpu_attention_bwd_problem *bp, const struct mgpu_attention_bwd_tile *t,
                      struct mgpu_attention_bwd_args *a)
{
    const struct mgpu_attention_problem *p = &bp->a;
    memset(a, 0, sizeof *a);
    MGPU_ATTENTION_FILL_SCALAR_ARGS(a, p);
    a->deterministic = bp->deterministic;
    a->n_blocks = (int32_t)mgpu_cdiv(p->seqlen_k, t->block_n);
    a->o_batch_stride = p->o_strides.batch;
    a->o_seq_stride = p->o_strides.seq;
    a->o_head_stride = p->o_strides.head;
    a->do_batch_stride = bp->do_strides.batch;
    a->do_seq_stride = bp->do_strides.seq;
    a->do_head_stride = bp->do_strides.head;
    a->dq_batch_stride = bp->dq_strides.batch;
    a->dq_seq_stride = bp->dq_strides.seq;
    a->dq_head_stride = bp->dq_strides.head;
    a->dk_batch_stride = bp->dk_strides.batch;
    a->dk_seq_stride = bp->dk_strides.seq;
    a->dk_head_stride = bp->dk_strides.head;
    a->dv_batch_stride = bp->dv_strides.batch;
    a->dv_seq_stride = bp->dv_strides.seq;
    a->dv_head_stride = bp->dv_strides.head;
    a->o = (uint64_t)p->o;
    a->dout = (uint64_t)bp->dout;
    a->lse = (uint64_t)p->lse;
    mgpu_attention_lse_strides(p, &a->lse_batch_stride, &a->lse_head_stride);
    if (p->varlen) {
        a->cu_seqlens_q = (uint64_t)p->cu_seqlens_q;
        a->cu_seqlens_k = (uint64_t)p->cu_seqlens_k;
    }
    a->dq = (uint64_t)bp->dq;
    a->dk = (uint64_t)bp->dk;
    a->dv = (uint64_t)bp->dv;
}

static int64_t min_i64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Query ranges sharing their upper end (causal, or a right window alone). */
static int shared_end(const struct mgpu_attention_problem *p)
{
    return p->window_left < 0 && (p->causal || p->window_right >= 0);
}

/*
 * pairs_by_slot of the sm_90a grid: deterministic GQA calls with a causal
 * mask (or a right window alone). The query heads of one KV head add into its
 * dK / dV accumulators in turn at the end of each CTA; numbered side by side
 * they start and end together and wait for each other, a chain of group_size
 * turns. Slot by slot, with at most batch * heads_kv pairs a group, they start
 * a group apart (decision 074, H200, deterministic time: MQA 2 x 4096 16/1
 * -11 %, GQA 32/8 8 x 2048 -3 %, 2 x 8192 -1.4 %, 4 x 4096 -0.6 %; non-causal
 * GQA 32/8 4 x 4096 +2 %, its accumulators then read back from DRAM rather
 * than L2: not there).
 */
static int pairs_by_slot(const struct mgpu_attention_bwd_problem *bp, int sm100)
{
    return !sm100 && bp->deterministic && bp->a.heads_kv < bp->a.heads_q && shared_end(&bp->a);
}

/* The most (sequence, head) pairs of a deterministic call's launch group. */
#define PAIR_GROUP_MAX 16

/*
 * pair_group of the sm_90a main kernel's grid (kernels/abi/attention_bwd_abi.h,
 * Launch): how many (sequence, query head) pairs share a group whose CTAs go
 * key block by key block. The order of the deterministic adds does not depend
 * on it (key blocks in increasing order per query block), only when CTAs
 * start. With key blocks fastest (1), the CTAs started together are
 * neighbouring key blocks of a few pairs, and so are those started whenever
 * a batch of SMs frees up: each waits at every query block for the key block
 * before it to add and hand the turn on, a chain as long as the key blocks
 * started together. Key block by key block over twice the pairs that a wave
 * of CTAs holds (2 * ceil(SMs / n_blocks)), neighbouring key blocks of a
 * pair start apart and the turns pipeline. At most 16 pairs: more spreads
 * one pair's key blocks over several waves (which likely fetch its Q, dO and
 * dQ tiles into L2 more than once; not measured) and measured worse (H100,
 * B 16, S 1024, 8 key blocks: 34 pairs +6 % against +1 to +3 % at 8 and
 * 16). Non-deterministic calls without a mask keep 1 (every CTA walks as
 * many query blocks; no gain measured at 4, 8, 16 pairs; 16 cost 7 % at B 4,
 * S 4096, head dim 128 and 22 % at 256). Masked non-deterministic calls
 * (causal, a window) take CAUSAL_PAIR_GROUP: their CTAs' lengths differ
 * (causal: key block n of a pair walks n_blocks - n query blocks at block_m
 * = block_n), and with key blocks fastest the last pairs' longest CTAs start
 * last and run alone at the end of the grid (about 3-7 % of the call for
 * the bench's shapes in a list-scheduling model); key block by key block
 * over 4 pairs the longest CTAs of those pairs start first, and 4 pairs keep
 * the tiles that the running CTAs share in L2 close together (16 cost 3 %
 * at head dim 256, causal: decision 023).
 * Deterministic causal GQA calls number their pairs slot by slot (the ABI's
 * pairs_by_slot, see pairs_by_slot above) and take at most batch * heads_kv
 * of them a group.
 * The sm_100a kernel reads no pair_group: 1.
 */
#define CAUSAL_PAIR_GROUP 4
static int32_t choose_pair_group(const struct mgpu_attention_bwd_problem *bp, const struct mgpu_device_caps *caps,
                                 int64_t n_blocks, int sm100)
{
    const int64_t pairs = bp->a.batch * bp->a.heads_q; /* below 2^31: the main grid is checked first */
    int64_t g = 1;
    if (sm100)
        return 1;
    if (bp->force_pair_group > 0)
        g = bp->force_pair_group;
    else if (bp->deterministic) {
        g = min_i64(2 * mgpu_cdiv(caps->sm_count > 0 ? caps->sm_count : 1, n_blocks), PAIR_GROUP_MAX);
        if (pairs_by_slot(bp, sm100))
            g = min_i64(g, bp->a.batch * bp->a.heads_kv);
    }
    else if (bp->a.causal || bp->a.window_left >= 0 || bp->a.window_right >= 0)
        g = CAUSAL_PAIR_GROUP;
    return (int32_t)min_i64(g, pairs);
}

/*
 * key_blocks_down of the sm_90a main kernel (kernels/abi/attention_bwd_abi.h,
 * Launch and Deterministic mode): deterministic calls whose query ranges share
 * their upper end and start later for later key blocks (causal; a right
 * window without a left one), with at most KEYS_DOWN_MAX_M_BLOCKS query
 * blocks. Key blocks in decreasing order, each walking its query blocks up,
 * the dQ turns of a query block no longer start in lock step (decision 074:
 * H200, causal, head dims 64 / 128 / 256 at S 4096, 8 x 2048 and 16 x 1024,
 * the deterministic cost over the default fell from 4-22 % to 2-16 %). It
 * launches each pair's longest CTAs last: at 1 x 16384 (256 query blocks)
 * that cost more than the chain (+18 % against +11 %), at 2 x 8192 as much,
 * as a list-scheduling model of the grid predicts (6 % later ends at S 8192
 * and 16384, 2-3 % at 4096). Non-causal
 * calls meet every query block in lock step either way; a left window
 * already staggers the turns. The sm_100a kernel reads no key_blocks_down: 0.
 */
#define KEYS_DOWN_MAX_M_BLOCKS 64
static int32_t choose_key_blocks_down(const struct mgpu_attention_bwd_problem *bp,
                                      const struct mgpu_attention_bwd_tile *t, int sm100)
{
    if (sm100)
        return 0;
    if (bp->force_keys_down != 0)
        return bp->force_keys_down > 0;
    const struct mgpu_attention_problem *p = &bp->a;
    return bp->deterministic && shared_end(p) && mgpu_cdiv(p->seqlen_q, t->block_m) <= KEYS_DOWN_MAX_M_BLOCKS;
}

/*
 * The tensor map of dq_accum (split_dim: the sm_90a kernel adds dQ through it,
 * kernels/abi/attention_bwd_abi.h): fp32 rows of head_dim, every slot's
 * q_rows_padded rows one after another, boxes of one consumer warp's 16 rows
 * by dq_box_cols columns, no swizzle. Its row coordinate is an int32: -1
 * when the rows reach 2^31 (1.5 TiB of accumulator or more; no device
 * holds that).
 */
static int dq_map_shape(struct mgpu_attention_bwd_plan *plan, const struct mgpu_attention_problem *p)
{
    const struct mgpu_attention_bwd_tile *t = &plan->tile;
    const int64_t slots = p->varlen ? p->heads_q : p->batch * p->heads_q;
    struct mgpu_tensor_map_desc *m = &plan->dq_map;
    if (mgpu_attention_product_exceeds(slots, plan->scratch.q_rows_padded, 1, MGPU_ATTENTION_MAX_SIZE))
        return -1;
    memset(m, 0, sizeof *m);
    m->type = MGPU_MAP_F32;
    m->rank = 2;
    m->dims[0] = (uint64_t)p->head_dim;
    m->dims[1] = (uint64_t)(slots * plan->scratch.q_rows_padded);
    m->byte_strides[0] = (uint64_t)p->head_dim * 4;
    m->box[0] = (uint32_t)t->dq_box_cols;
    m->box[1] = MGPU_ATTENTION_BWD_DQ_BOX_ROWS;
    return 0;
}

int mgpu_attention_bwd_plan(const struct mgpu_attention_bwd_problem *bp, const struct mgpu_device_caps *caps,
                            const char *force, struct mgpu_attention_bwd_plan *plan, mgpu_status *status)
{
    const struct mgpu_attention_problem *p = &bp->a;
    memset(plan, 0, sizeof *plan);
    const struct mgpu_lookup main_q = {
        .what = "attention backward", .of_op = is_main_kind, .caps = caps, .force = force, .fits = main_fits,
        .ctx = p};
    plan->main = mgpu_registry_lookup(&main_q, NULL, status);
    if (plan->main < 0)
        return -1;
    const struct mgpu_lookup pre_q = {.what = "attention backward preprocess", .of_op = is_pre_kind, .caps = caps,
                                      .fits = helper_fits, .ctx = p};
    const struct mgpu_lookup post_q = {.what = "attention backward postprocess", .of_op = is_post_kind,
                                       .caps = caps, .fits = helper_fits, .ctx = p};
    plan->pre = mgpu_registry_lookup(&pre_q, NULL, status);
    plan->post = plan->pre < 0 ? -1 : mgpu_registry_lookup(&post_q, NULL, status);
    if (plan->pre < 0 || plan->post < 0) {
        *status = mgpu_fail(MGPU_STATUS_INTERNAL_ERROR, "the build has an attention backward kernel for compute "
                            "capability %d.%d but not its preprocess / postprocess",
                            caps->cc_major, caps->cc_minor);
        return -1;
    }
    if (mgpu_attention_bwd_tile((int)p->head_dim, &plan->tile) != 0) {
        *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "head_dim %lld has no attention backward tile",
                            (long long)p->head_dim);
        return -1;
    }
    const struct mgpu_attention_bwd_tile *t = &plan->tile;
    const struct mgpu_variant *v = &mgpu_variants[plan->main];
    if (v->attention.block_m != t->block_m || v->attention.block_n != t->block_n) {
        *status = mgpu_fail(MGPU_STATUS_INTERNAL_ERROR, "%s: registry tile %dx%d differs from the ABI's %dx%d",
                            v->name, v->attention.block_m, v->attention.block_n, t->block_m, t->block_n);
        return -1;
    }

    /* Grids (1-D, CTAs < 2^31): each product checked before it is formed;
     * heads_kv <= heads_q, so the key tiles of the postprocess are bounded
     * by the main grid and their sum with the query tiles fits in int64.
     * The sm_100a main kernel of head dims 192 / 256 has round_up(n_blocks,
     * 2) CTAs per query head (two head-dim slices per 128 keys, the ABI's
     * mgpu_attention_bwd_sm100_ctas); every other one n_blocks. */
    const int64_t m_blocks = mgpu_cdiv(p->seqlen_q, t->block_m), n_blocks = mgpu_cdiv(p->seqlen_k, t->block_n);
    const int64_t main_blocks = v->kind == MGPU_KIND_ATTENTION_BWD_SM100
                                    ? mgpu_attention_bwd_sm100_ctas((int)p->head_dim, n_blocks)
                                    : n_blocks;
    const int64_t group = p->heads_q / p->heads_kv;
    if (mgpu_attention_product_exceeds(m_blocks, p->heads_q, p->batch, MGPU_ATTENTION_MAX_SIZE) ||
        mgpu_attention_product_exceeds(main_blocks, p->heads_q, p->batch, MGPU_ATTENTION_MAX_SIZE) ||
        m_blocks * p->heads_q * p->batch + (group > 1 ? n_blocks * p->heads_kv * p->batch : 0) >
            MGPU_ATTENTION_MAX_SIZE) {
        *status = mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                            "attention backward grids must stay below 2^31 CTAs: ceil(seqlen_q / %d) * heads_q * "
                            "batch (+ ceil(seqlen_k / %d) * heads_kv * batch for GQA) and ceil(seqlen_k / %d) * "
                            "heads_q * batch",
                            t->block_m, t->block_n, t->block_n);
        return -1;
    }
    const int64_t pre_ctas = m_blocks * p->heads_q * p->batch;
    const int64_t main_ctas = main_blocks * p->heads_q * p->batch;
    const int64_t post_ctas = pre_ctas + (group > 1 ? n_blocks * p->heads_kv * p->batch : 0);
    plan->pre_grid = (unsigned)pre_ctas;
    plan->main_grid = (unsigned)main_ctas;
    plan->post_grid = (unsigned)post_ctas;

    if (mgpu_attention_bwd_scratch_layout((int)p->head_dim, (int)p->batch, (int)p->heads_q, (int)p->heads_kv,
                                          p->seqlen_q, p->seqlen_k, p->total_q, p->total_k, p->varlen,
                                          &plan->scratch) != 0 ||
        plan->scratch.total > (uint64_t)SIZE_MAX) {
        *status = mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                            "the attention backward scratch for batch %lld, heads_q %lld, seqlen_q %lld, seqlen_k "
                            "%lld, head_dim %lld exceeds 2^62 bytes",
                            (long long)p->batch, (long long)p->heads_q, (long long)p->seqlen_q,
                            (long long)p->seqlen_k, (long long)p->head_dim);
        return -1;
    }
    plan->workspace_bytes = (size_t)plan->scratch.total;

    fill_args(bp, t, &plan->args);
    plan->args.pair_group = choose_pair_group(bp, caps, n_blocks, v->kind == MGPU_KIND_ATTENTION_BWD_SM100);
    plan->args.key_blocks_down = choose_key_blocks_down(bp, t, v->kind == MGPU_KIND_ATTENTION_BWD_SM100);
    plan->args.pairs_by_slot = pairs_by_slot(bp, v->kind == MGPU_KIND_ATTENTION_BWD_SM100);
    mgpu_attention_map_shape(&plan->q_map, p->q, p, p->total_q, p->heads_q, &p->q_strides, t->block_m);
    mgpu_attention_map_shape(&plan->k_map, p->k, p, p->total_k, p->heads_kv, &p->k_strides, t->block_n);
    mgpu_attention_map_shape(&plan->v_map, p->v, p, p->total_k, p->heads_kv, &p->v_strides, t->block_n);
    mgpu_attention_map_shape(&plan->do_map, bp->dout, p, p->total_q, p->heads_q, &bp->do_strides, t->block_m);
    /* The backward's operands promote 256 bytes on a miss, not the
     * forward's 128: head dim 256 measured 1.1-1.5 % slower with 128, head
     * dims 64 and 128 the same (H200, decision 068). */
    plan->q_map.l2_promote = plan->k_map.l2_promote = plan->v_map.l2_promote = plan->do_map.l2_promote = 256;
    if (t->split_dim && dq_map_shape(plan, p) != 0) {
        *status = mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                            "the attention backward dQ accumulator of head_dim %lld needs fewer than 2^31 rows "
                            "(padded query rows of every sequence and query head)",
                            (long long)p->head_dim);
        return -1;
    }
    mgpu_attention_bwd_place_scratch(plan, 0);
    return 0;
}

void mgpu_attention_bwd_place_scratch(struct mgpu_attention_bwd_plan *plan, uint64_t base)
{
    const struct mgpu_attention_bwd_scratch *s = &plan->scratch;
    struct mgpu_attention_bwd_args *a = &plan->args;
    const int gqa = a->group_size > 1;
    a->q_rows_padded = s->q_rows_padded;
    a->k_rows_padded = s->k_rows_padded;
    a->lse_log2 = base + s->lse_log2;
    a->dpsum = base + s->dpsum;
    a->dq_accum = base + s->dq_accum;
    a->dq_semaphore = base + s->dq_semaphore;
    a->dk_accum = gqa ? base + s->dk_accum : 0;
    a->dv_accum = gqa ? base + s->dv_accum : 0;
    a->dkv_semaphore = gqa ? base + s->dkv_semaphore : 0;
    if (plan->dq_map.rank != 0)
        plan->dq_map.base = a->dq_accum;
}
