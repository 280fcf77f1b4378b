/*
 * The validation mgpu_attention_fwd and mgpu_attention_bwd share (see
 * attention_common.h). Each message names the field or tensor at fault.
 */
#include "attention_common.h"

#include "attention_abi.h"

#include <math.h>
#include <string.h>

/* TMA global strides are below 2^40 bytes; 16-bit elements. */
#define ELEMENT_BYTES 2
#define MAX_STRIDE_ELEMS (((int64_t)1 << 40) / ELEMENT_BYTES)
/* TMA base addresses and strides, and 16-byte vector stores. */
#define TMA_ALIGN_BYTES 16
#define TMA_ALIGN_ELEMS (TMA_ALIGN_BYTES / ELEMENT_BYTES)
#define CU_SEQLENS_ALIGN_BYTES 4
/* One TMA box is one 128-byte swizzle row of the head dim. */
#define TMA_BOX_DIM_ELEMS 64

/* The head dims of the kernels, and the same list as text (", 64, 96, ..."),
 * both from abi/attention_abi.h (the variant table's source; the backward
 * table of abi/attention_bwd_abi.h covers the same dims). */
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

/* Field values that make no sense whatever the build. */
static mgpu_status check_values(const struct mgpu_attention_fields *d)
{
    if (d->dtype != MGPU_DTYPE_F16 && d->dtype != MGPU_DTYPE_BF16)
        return mgpu_fail(MGPU_STATUS_UNSUPPORTED_DTYPE, "attention dtype is %d; it must be MGPU_DTYPE_F16 or "
                         "MGPU_DTYPE_BF16", d->dtype);
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

static mgpu_status check_sizes(const struct mgpu_attention_fields *d, int varlen)
{
    const int64_t sizes[] = {d->batch, d->seqlen_q, d->seqlen_k, d->heads_q, d->heads_kv, d->head_dim,
                             varlen ? d->total_q : 0, varlen ? d->total_k : 0};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i] < 0 || sizes[i] > MGPU_ATTENTION_MAX_SIZE)
            return mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                             "batch %lld, seqlen_q %lld, seqlen_k %lld, heads_q %lld, heads_kv %lld, head_dim %lld%s "
                             "must each lie in [0, 2^31 - 1]",
                             (long long)d->batch, (long long)d->seqlen_q, (long long)d->seqlen_k,
                             (long long)d->heads_q, (long long)d->heads_kv, (long long)d->head_dim,
                             varlen ? ", total_q, total_k" : "");
    }
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_attention_check_fields(const struct mgpu_attention_fields *f, struct mgpu_attention_problem *out)
{
    mgpu_status s = check_values(f);
    const int varlen = f->cu_seqlens_q != NULL;
    if (s == MGPU_STATUS_SUCCESS)
        s = check_sizes(f, varlen);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    struct mgpu_attention_problem p;
    memset(&p, 0, sizeof p);
    p.batch = f->batch;
    p.seqlen_q = f->seqlen_q;
    p.seqlen_k = f->seqlen_k;
    p.heads_q = f->heads_q;
    p.heads_kv = f->heads_kv;
    p.head_dim = f->head_dim;
    p.dtype = f->dtype;
    p.softcap = f->softcap;
    p.causal = f->causal;
    p.window_left = f->window_left;
    p.window_right = f->window_right;
    p.varlen = varlen;
    p.total_q = varlen ? f->total_q : f->seqlen_q;
    p.total_k = varlen ? f->total_k : f->seqlen_k;
    p.cu_seqlens_q = (uintptr_t)f->cu_seqlens_q;
    p.cu_seqlens_k = (uintptr_t)f->cu_seqlens_k;
    *out = p;
    return MGPU_STATUS_SUCCESS;
}

int mgpu_attention_product_exceeds(int64_t a, int64_t b, int64_t c, int64_t limit)
{
    int64_t product;
    return !mgpu_mul3_ok(a, b, c, &product) || product > limit;
}

int mgpu_attention_problem_empty(const struct mgpu_attention_problem *p)
{
    return p->batch == 0 || p->seqlen_q == 0 || p->total_q == 0 || p->heads_q == 0;
}

mgpu_status mgpu_attention_check_heads(const struct mgpu_attention_problem *p)
{
    if (p->head_dim == 0 || p->heads_kv == 0 || p->seqlen_k == 0 || p->total_k == 0)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                         "head_dim (%lld), heads_kv (%lld), seqlen_k (%lld)%s must be >= 1 when there are queries",
                         (long long)p->head_dim, (long long)p->heads_kv, (long long)p->seqlen_k,
                         p->varlen ? " and total_k" : "");
    if (p->heads_q % p->heads_kv)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "heads_q (%lld) must be a multiple of heads_kv (%lld)",
                         (long long)p->heads_q, (long long)p->heads_kv);
    return MGPU_STATUS_SUCCESS;
}

float mgpu_attention_scale(float given, int64_t head_dim)
{
    return given > 0.0f ? given : 1.0f / sqrtf((float)head_dim);
}

mgpu_status mgpu_attention_resolve_strides(const struct mgpu_attention_problem *p,
                                           const struct mgpu_attention_tensor *t, int count)
{
    for (int i = 0; i < count; i++) {
        const int64_t heads = t[i].query_side ? p->heads_q : p->heads_kv;
        *t[i].used = *t[i].given;
        if (strides_zero(t[i].given) &&
            !dense_strides(t[i].query_side ? p->seqlen_q : p->seqlen_k, heads, p->head_dim, t[i].used))
            return mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                             "the dense strides of %s (seq * heads * head_dim elements per sequence) overflow "
                             "int64; give explicit strides below 2^39 elements",
                             t[i].name);
        mgpu_status s = check_strides(t[i].name, t[i].used, p->varlen, p->batch,
                                      t[i].query_side ? p->total_q : p->total_k, heads);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
    }
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_attention_check_kernel_rules(const struct mgpu_attention_problem *p,
                                              const struct mgpu_attention_tensor *t, int count)
{
    if (!head_dim_supported(p->head_dim))
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "head_dim %lld has no attention kernel; supported: %s",
                         (long long)p->head_dim, supported_head_dims_text + 2);
    for (int i = 0; i < count; i++) {
        mgpu_status s = check_tma_rules(t[i].name, t[i].base, t[i].used, p->varlen);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
    }
    return MGPU_STATUS_SUCCESS;
}

void mgpu_attention_map_shape(struct mgpu_tensor_map_desc *m, uintptr_t base, const struct mgpu_attention_problem *p,
                              int64_t rows, int64_t heads, const mgpu_attention_strides *s, int box_rows)
{
    memset(m, 0, sizeof *m);
    m->type = p->dtype == MGPU_DTYPE_BF16 ? MGPU_MAP_BF16 : MGPU_MAP_F16;
    m->rank = 4;
    m->swizzle_128b = 1;
    /* A missed line comes into L2 as 128 bytes, one box row: with 256 the
     * second 64-column box of a row finds its half promoted by the first,
     * and the L2 took 25 % more read requests for the same DRAM bytes (H200,
     * decode 8 x 32768 keys GQA 64/8 d128: DRAM 83 % of peak against 93 %,
     * 268 against 238 us; the 30 decode rows 1.003 -> 1.051x cuDNN, the
     * prefill forward unchanged; decision 068). The backward keeps 256
     * (attention_bwd_plan.c). */
    m->l2_promote = 128;
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

void mgpu_attention_lse_strides(const struct mgpu_attention_problem *p, int64_t *batch_stride,
                                int64_t *head_stride)
{
    *batch_stride = p->varlen ? 0 : p->heads_q * p->seqlen_q;
    *head_stride = p->varlen ? p->total_q : p->seqlen_q;
}
