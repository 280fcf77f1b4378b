/*
 * Validation, variant selection and launch planning for mgpu_attention_fwd
 * (see attention_select.h). Pure functions of the call and the device's
 * capabilities.
 *
 * Checks run in the order of the public header's status list: descriptor
 * shape and values first (INVALID_*), then what only this build lacks
 * (NOT_SUPPORTED: head dim, the TMA alignment rules). Selection picks the
 * variant of the call's dtype and head dim for the device's exact compute
 * capability (struct mgpu_attention_variant: head dim, query and key
 * blocks, stages).
 */
#include "attention_plan.h"

#include <math.h>
#include <string.h>

/* Sizes the kernel keeps in int32. */
#define MAX_SIZE INT32_MAX
/* TMA global strides are below 2^40 bytes; 16-bit elements. */
#define ELEMENT_BYTES 2
#define MAX_STRIDE_ELEMS (((int64_t)1 << 40) / ELEMENT_BYTES)
/* TMA base addresses and strides, and O's vector stores: 16 bytes. */
#define TMA_ALIGN_BYTES 16
#define TMA_ALIGN_ELEMS (TMA_ALIGN_BYTES / ELEMENT_BYTES)
#define LSE_ALIGN_BYTES 4
#define CU_SEQLENS_ALIGN_BYTES 4
/* One TMA box is one 128-byte swizzle row of the head dim. */
#define TMA_BOX_DIM_ELEMS 64
#define LOG2_E 1.4426950408889634f

/* The head dims of the forward variants, and the same list as text
 * (", 64, 96, ..."), both from abi/attention_abi.h (the table's source). */
#define HEAD_DIM_VALUE(unused, d) d,
#define HEAD_DIM_TEXT(unused, d) ", " #d
static const int64_t supported_head_dims[] = {MGPU_ATTENTION_FWD_HEAD_DIMS(HEAD_DIM_VALUE, 0)};
static const char supported_head_dims_text[] = MGPU_ATTENTION_FWD_HEAD_DIMS(HEAD_DIM_TEXT, 0);

static int head_dim_supported(int64_t d)
{
    for (size_t i = 0; i < sizeof supported_head_dims / sizeof supported_head_dims[0]; i++)
        if (supported_head_dims[i] == d)
            return 1;
    return 0;
}

/* The dense layout's strides; 0 when they overflow int64 (the sizes are
 * refused then). */
static int dense_strides(int64_t seq, int64_t heads, int64_t head_dim, mgpu_attention_strides *out)
{
    out->head = head_dim;
    return mgpu_mul_ok(heads, head_dim, &out->seq) && mgpu_mul_ok(seq, out->seq, &out->batch);
}

static int strides_zero(const mgpu_attention_strides *s)
{
    return s->batch == 0 && s->seq == 0 && s->head == 0;
}

/* Strides are >= 0, below the TMA limit, and non-zero along every dimension
 * with more than one entry (a zero stride there would alias rows). */
static mgpu_status check_strides(const char *name, const mgpu_attention_strides *s, int varlen, int64_t nbatch,
                                 int64_t rows, int64_t heads)
{
    const int64_t batch = varlen ? 0 : s->batch;
    if (batch < 0 || s->seq < 0 || s->head < 0)
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "%s strides {batch %lld, seq %lld, head %lld} must be >= 0",
                         name, (long long)s->batch, (long long)s->seq, (long long)s->head);
    if ((!varlen && nbatch > 1 && batch == 0) || (rows > 1 && s->seq == 0) || (heads > 1 && s->head == 0))
        return mgpu_fail(MGPU_STATUS_INVALID_LD,
                         "%s strides {batch %lld, seq %lld, head %lld}: a stride may be 0 only along a dimension of "
                         "extent 1 (all three 0 select the dense layout)",
                         name, (long long)s->batch, (long long)s->seq, (long long)s->head);
    if (batch >= MAX_STRIDE_ELEMS || s->seq >= MAX_STRIDE_ELEMS || s->head >= MAX_STRIDE_ELEMS)
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "%s strides {batch %lld, seq %lld, head %lld} must be < 2^39 elements",
                         name, (long long)s->batch, (long long)s->seq, (long long)s->head);
    return MGPU_STATUS_SUCCESS;
}

static mgpu_status check_tma_rules(const char *name, uintptr_t base, const mgpu_attention_strides *s, int varlen)
{
    if (base % TMA_ALIGN_BYTES)
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED,
                         "%s is not 16-byte aligned; the attention kernels read and write through TMA / 16-byte "
                         "vectors and need 16-byte aligned bases (there is no unaligned path yet)",
                         name);
    const int64_t batch = varlen ? 0 : s->batch;
    if (batch % TMA_ALIGN_ELEMS || s->seq % TMA_ALIGN_ELEMS || s->head % TMA_ALIGN_ELEMS)
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED,
                         "%s strides {batch %lld, seq %lld, head %lld} must be multiples of 8 elements (16 bytes) "
                         "for TMA (there is no unaligned path yet)",
                         name, (long long)s->batch, (long long)s->seq, (long long)s->head);
    return MGPU_STATUS_SUCCESS;
}

/* Descriptor values that make no sense whatever the build. */
static mgpu_status check_values(const mgpu_attention_fwd_desc *d)
{
    if (d->struct_size != sizeof(mgpu_attention_fwd_desc))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "desc->struct_size is %zu, expected %zu: start from MGPU_ATTENTION_FWD_DESC_INIT",
                         d->struct_size, sizeof(mgpu_attention_fwd_desc));
    if (d->dtype != MGPU_DTYPE_F16 && d->dtype != MGPU_DTYPE_BF16)
        return mgpu_fail(MGPU_STATUS_UNSUPPORTED_DTYPE, "attention dtype is %d; it must be MGPU_DTYPE_F16 or "
                         "MGPU_DTYPE_BF16", (int)d->dtype);
    if (d->causal != 0 && d->causal != 1)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "causal is %d; it must be 0 or 1", d->causal);
    if (d->window_left < -1 || d->window_right < -1)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "window_left = %d, window_right = %d; each must be >= 0, or -1 for unbounded",
                         d->window_left, d->window_right);
    if (!isfinite(d->softmax_scale) || d->softmax_scale < 0.0f)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "softmax_scale is %g; it must be > 0 and finite (0: 1/sqrt(head_dim))",
                         (double)d->softmax_scale);
    if (!isfinite(d->softcap) || d->softcap < 0.0f)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "softcap is %g; it must be >= 0 and finite (0: off)",
                         (double)d->softcap);
    if ((d->cu_seqlens_q == NULL) != (d->cu_seqlens_k == NULL))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "cu_seqlens_q and cu_seqlens_k must be given together (varlen) "
                         "or both be NULL");
    if ((uintptr_t)d->cu_seqlens_q % CU_SEQLENS_ALIGN_BYTES || (uintptr_t)d->cu_seqlens_k % CU_SEQLENS_ALIGN_BYTES)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "cu_seqlens_q and cu_seqlens_k must be 4-byte aligned int32 arrays");
    return MGPU_STATUS_SUCCESS;
}

static mgpu_status check_sizes(const mgpu_attention_fwd_desc *d, int varlen)
{
    const int64_t sizes[] = {d->batch, d->seqlen_q, d->seqlen_k, d->heads_q, d->heads_kv, d->head_dim,
                             varlen ? d->total_q : 0, varlen ? d->total_k : 0};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i] < 0 || sizes[i] > MAX_SIZE)
            return mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                             "batch %lld, seqlen_q %lld, seqlen_k %lld, heads_q %lld, heads_kv %lld, head_dim %lld%s "
                             "must each lie in [0, 2^31 - 1]",
                             (long long)d->batch, (long long)d->seqlen_q, (long long)d->seqlen_k,
                             (long long)d->heads_q, (long long)d->heads_kv, (long long)d->head_dim,
                             varlen ? ", total_q, total_k" : "");
    }
    return MGPU_STATUS_SUCCESS;
}

int mgpu_attention_problem_empty(const struct mgpu_attention_problem *p)
{
    return p->batch == 0 || p->seqlen_q == 0 || p->total_q == 0 || p->heads_q == 0;
}

mgpu_status mgpu_attention_fwd_validate(const mgpu_attention_fwd_desc *desc, const void *q, const void *k,
                                        const void *v, void *o, float *lse, struct mgpu_attention_problem *out)
{
    if (!desc)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    mgpu_status s = check_values(desc);
    const int varlen = desc->cu_seqlens_q != NULL;
    if (s == MGPU_STATUS_SUCCESS)
        s = check_sizes(desc, varlen);
    if (s != MGPU_STATUS_SUCCESS)
        return s;

    struct mgpu_attention_problem p;
    memset(&p, 0, sizeof p);
    p.batch = desc->batch;
    p.seqlen_q = desc->seqlen_q;
    p.seqlen_k = desc->seqlen_k;
    p.heads_q = desc->heads_q;
    p.heads_kv = desc->heads_kv;
    p.head_dim = desc->head_dim;
    p.dtype = desc->dtype;
    p.softcap = desc->softcap;
    p.causal = desc->causal;
    p.window_left = desc->window_left;
    p.window_right = desc->window_right;
    p.varlen = varlen;
    p.total_q = varlen ? desc->total_q : desc->seqlen_q;
    p.total_k = varlen ? desc->total_k : desc->seqlen_k;
    p.q = (uintptr_t)q;
    p.k = (uintptr_t)k;
    p.v = (uintptr_t)v;
    p.o = (uintptr_t)o;
    p.lse = (uintptr_t)lse;
    p.cu_seqlens_q = (uintptr_t)desc->cu_seqlens_q;
    p.cu_seqlens_k = (uintptr_t)desc->cu_seqlens_k;
    *out = p;
    if (mgpu_attention_problem_empty(&p))
        return MGPU_STATUS_SUCCESS;

    if (p.head_dim == 0 || p.heads_kv == 0 || p.seqlen_k == 0 || p.total_k == 0)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                         "head_dim (%lld), heads_kv (%lld), seqlen_k (%lld)%s must be >= 1 when there are queries",
                         (long long)p.head_dim, (long long)p.heads_kv, (long long)p.seqlen_k,
                         varlen ? " and total_k" : "");
    if (p.heads_q % p.heads_kv)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "heads_q (%lld) must be a multiple of heads_kv (%lld)",
                         (long long)p.heads_q, (long long)p.heads_kv);
    int64_t query_tiles;
    if (!mgpu_mul3_ok(mgpu_cdiv(p.seqlen_q, MGPU_ATTENTION_FWD_BLOCK_M), p.heads_q, p.batch, &query_tiles) ||
        query_tiles > MAX_SIZE)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                         "ceil(seqlen_q / 128) * heads_q * batch must be at most 2^31 - 1 (query tiles)");
    if (!q || !k || !v || !o)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "q, k, v and o must not be NULL (q %p, k %p, v %p, o %p)", q, k,
                         v, o);
    if (p.lse % LSE_ALIGN_BYTES)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "lse must be 4-byte aligned (an fp32 array)");

    p.softmax_scale = desc->softmax_scale > 0.0f ? desc->softmax_scale : 1.0f / sqrtf((float)p.head_dim);
    const mgpu_attention_strides *given[4] = {&desc->q_strides, &desc->k_strides, &desc->v_strides,
                                              &desc->o_strides};
    mgpu_attention_strides *used[4] = {&p.q_strides, &p.k_strides, &p.v_strides, &p.o_strides};
    const char *names[4] = {"q", "k", "v", "o"};
    const uintptr_t bases[4] = {p.q, p.k, p.v, p.o};
    for (int t = 0; t < 4; t++) {
        const int is_q_side = t == 0 || t == 3;
        const int64_t heads = is_q_side ? p.heads_q : p.heads_kv;
        *used[t] = *given[t];
        if (strides_zero(given[t]) && !dense_strides(is_q_side ? p.seqlen_q : p.seqlen_k, heads, p.head_dim, used[t]))
            return mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                             "the dense strides of %s (seq * heads * head_dim elements per sequence) overflow "
                             "int64; give explicit strides below 2^39 elements",
                             names[t]);
        s = check_strides(names[t], used[t], varlen, p.batch, is_q_side ? p.total_q : p.total_k, heads);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
    }
    if (!head_dim_supported(p.head_dim))
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "head_dim %lld has no attention kernel; supported: %s",
                         (long long)p.head_dim, supported_head_dims_text + 2);
    for (int t = 0; t < 4; t++) {
        s = check_tma_rules(names[t], bases[t], used[t], varlen);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
    }
    *out = p;
    return MGPU_STATUS_SUCCESS;
}

static int is_attention_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_FWD_SM90;
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

static void map_shape(struct mgpu_tensor_map_desc *m, uintptr_t base, const struct mgpu_attention_problem *p,
                      int64_t rows, int64_t heads, const mgpu_attention_strides *s, int box_rows)
{
    memset(m, 0, sizeof *m);
    m->type = p->dtype == MGPU_DTYPE_BF16 ? MGPU_MAP_BF16 : MGPU_MAP_F16;
    m->rank = 4;
    m->swizzle_128b = 1;
    m->l2_promote = 1;
    m->base = base;
    m->dims[0] = (uint64_t)p->head_dim;
    m->dims[1] = (uint64_t)rows;
    m->dims[2] = (uint64_t)heads;
    m->dims[3] = (uint64_t)(p->varlen ? 1 : p->batch);
    /* varlen: the batch dimension has extent 1, so any valid stride serves. */
    const int64_t batch_stride = p->varlen ? s->seq : s->batch;
    m->byte_strides[0] = (uint64_t)s->seq * ELEMENT_BYTES;
    m->byte_strides[1] = (uint64_t)s->head * ELEMENT_BYTES;
    m->byte_strides[2] = (uint64_t)batch_stride * ELEMENT_BYTES;
    m->box[0] = TMA_BOX_DIM_ELEMS;
    m->box[1] = (uint32_t)box_rows;
    m->box[2] = 1;
    m->box[3] = 1;
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
    a->batch = (int32_t)p->batch;
    a->seqlen_q = (int32_t)p->seqlen_q;
    a->seqlen_k = (int32_t)p->seqlen_k;
    a->heads_q = (int32_t)p->heads_q;
    a->heads_kv = (int32_t)p->heads_kv;
    a->head_dim = (int32_t)p->head_dim;
    a->group_size = (int32_t)(p->heads_q / p->heads_kv);
    a->causal = p->causal;
    a->window_left = p->window_left;
    a->window_right = p->window_right;
    a->softmax_scale = p->softmax_scale;
    a->scale_log2 = p->softmax_scale * LOG2_E;
    a->softcap = p->softcap;
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
    if (p->varlen) {
        a->lse_batch_stride = 0;
        a->lse_head_stride = p->total_q;
        a->cu_seqlens_q = (uint64_t)p->cu_seqlens_q;
        a->cu_seqlens_k = (uint64_t)p->cu_seqlens_k;
    } else {
        a->lse_batch_stride = p->heads_q * p->seqlen_q;
        a->lse_head_stride = p->seqlen_q;
    }
    map_shape(&out->q_map, p->q, p, p->total_q, p->heads_q, &p->q_strides, v->attention.block_m);
    map_shape(&out->k_map, p->k, p, p->total_k, p->heads_kv, &p->k_strides, v->attention.block_n);
    map_shape(&out->v_map, p->v, p, p->total_k, p->heads_kv, &p->v_strides, v->attention.block_n);
    const int64_t tiles = mgpu_cdiv(p->seqlen_q, v->attention.block_m) * p->heads_q * p->batch;
    /* Equal tiles (no mask that skips key blocks, no per-sequence lengths):
     * a persistent CTA loads the next tile's Q and K/V while it finishes the
     * current one, which pays where the per-tile fill and epilogue are a large
     * share, i.e. short key loops. Needs the second Q buffer. */
    const int unwindowed = !p->varlen && p->window_left < 0 && p->window_right < 0;
    const int short_loop = mgpu_cdiv(p->seqlen_k, v->attention.block_n) <= PERSISTENT_MAX_KEY_BLOCKS;
    const int q_stages = mgpu_attention_fwd_q_stages(v->attention.block_m, v->attention.block_n, v->attention.head_dim, v->attention.stages);
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : tiles;
    const int persistent = unwindowed && short_loop && q_stages == 2 && sms < tiles;
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
