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

#include "attention_fwd_fp8_abi.h"

#include <math.h>
#include <string.h>

/* 16-bit elements. */
#define ELEMENT_BYTES 2
#define LSE_ALIGN_BYTES 4

#define INDEX_ALIGN_BYTES 4
#define PAGE_ROWS_MULTIPLE 16

/* seqused_k and the paged cache (include/mgpukernels.h, "Paged K/V"). */
static mgpu_status check_inference_fields(const mgpu_attention_fwd_desc *d, struct mgpu_attention_problem *p)
{
    p->seqused_k = (uintptr_t)d->seqused_k;
    p->block_table = (uintptr_t)d->block_table;
    if (p->seqused_k % INDEX_ALIGN_BYTES || p->block_table % INDEX_ALIGN_BYTES)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "seqused_k and block_table must be 4-byte aligned int32 arrays");
    if (p->seqused_k && p->varlen)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "seqused_k is for fixed-length calls (cu_seqlens NULL)");
    if (!p->block_table)
        return MGPU_STATUS_SUCCESS;
    if (p->varlen)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "a paged K/V cache (block_table) takes fixed-length queries: "
                         "cu_seqlens_q and cu_seqlens_k must be NULL");
    if (!p->seqused_k)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "a paged K/V cache (block_table) needs seqused_k, the length "
                         "of each sequence");
    if (d->page_size < PAGE_ROWS_MULTIPLE || d->page_size % PAGE_ROWS_MULTIPLE || d->page_size > MGPU_ATTENTION_MAX_SIZE)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "page_size is %lld; it must be a positive multiple of 16 rows",
                         (long long)d->page_size);
    if (d->num_pages < 1 || d->num_pages > MGPU_ATTENTION_MAX_SIZE || d->max_blocks_per_seq < 1 ||
        d->max_blocks_per_seq > MGPU_ATTENTION_MAX_SIZE)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "num_pages (%lld) and max_blocks_per_seq (%lld) must lie in "
                         "[1, 2^31 - 1] with a block_table", (long long)d->num_pages, (long long)d->max_blocks_per_seq);
    if (mgpu_attention_product_exceeds(d->max_blocks_per_seq, d->page_size, 1, MGPU_ATTENTION_MAX_SIZE) ||
        p->seqlen_k > d->max_blocks_per_seq * d->page_size)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "seqlen_k (%lld) must be at most max_blocks_per_seq * page_size "
                         "(%lld * %lld), below 2^31", (long long)p->seqlen_k, (long long)d->max_blocks_per_seq,
                         (long long)d->page_size);
    /* the kernel indexes the table with int32 (abi/attention_abi.h, "Paged K/V") */
    if (mgpu_attention_product_exceeds(p->batch, d->max_blocks_per_seq, 1, MGPU_ATTENTION_MAX_SIZE))
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "batch * max_blocks_per_seq (%lld * %lld) must be at most "
                         "2^31 - 1 (block table entries)", (long long)p->batch, (long long)d->max_blocks_per_seq);
    p->page_size = d->page_size;
    p->num_pages = d->num_pages;
    p->max_blocks_per_seq = d->max_blocks_per_seq;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_attention_fwd_validate(const mgpu_attention_fwd_desc *desc, const void *q, const void *k,
                                        const void *v, void *o, float *lse, struct mgpu_attention_problem *out)
{
    if (!desc)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    if (desc->struct_size != sizeof(mgpu_attention_fwd_desc) && desc->struct_size != MGPU_ATTENTION_FWD_DESC_SIZE_V1 &&
        desc->struct_size != MGPU_ATTENTION_FWD_DESC_SIZE_V2)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "desc->struct_size is %zu, expected %zu: start from MGPU_ATTENTION_FWD_DESC_INIT",
                         desc->struct_size, sizeof(mgpu_attention_fwd_desc));
    /* A descriptor of the first layout: the inference fields read as zero. */
    mgpu_attention_fwd_desc full;
    memset(&full, 0, sizeof full);
    memcpy(&full, desc, desc->struct_size);
    desc = &full;
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

    s = check_inference_fields(desc, &p);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_attention_fwd_check_fp8_fields(desc, &p);
    if (s != MGPU_STATUS_SUCCESS)
        return s;

    p.softmax_scale = mgpu_attention_scale(desc->softmax_scale, p.head_dim);
    const struct mgpu_attention_tensor tensors[4] = {
        {"q", p.q, &desc->q_strides, &p.q_strides, 1},
        {"k", p.k, &desc->k_strides, &p.k_strides, 0},
        {"v", p.v, &desc->v_strides, &p.v_strides, 0},
        {"o", p.o, &desc->o_strides, &p.o_strides, 1},
    };
    if (p.block_table) {
        /* K and V are caches of num_pages pages of page_size rows: the
         * shared checks see them as a batch of num_pages sequences. */
        struct mgpu_attention_problem pages = p;
        pages.seqlen_k = pages.total_k = p.page_size;
        pages.batch = p.num_pages;
        s = mgpu_attention_resolve_strides(&p, tensors, 1);
        if (s == MGPU_STATUS_SUCCESS)
            s = mgpu_attention_resolve_strides(&pages, tensors + 1, 2);
        if (s == MGPU_STATUS_SUCCESS)
            s = mgpu_attention_resolve_strides(&p, tensors + 3, 1);
    } else {
        s = mgpu_attention_resolve_strides(&p, tensors, 4);
    }
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_attention_check_kernel_rules(&p, tensors, 4);
    if (s == MGPU_STATUS_SUCCESS)
        s = mgpu_attention_fwd_check_fp8_rules(&p);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    *out = p;
    return MGPU_STATUS_SUCCESS;
}

static int is_attention_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_FWD_SM90 || k == MGPU_KIND_ATTENTION_FWD_SM100 ||
           k == MGPU_KIND_ATTENTION_FWD_FP8_SM90;
}

/* The sm_100a forward runs one work tile per CTA (attention_abi.h, its
 * Blackwell paragraph): no persistent grid, no dynamic tiles. */
static int variant_takes_persistent_grid(const struct mgpu_variant *v)
{
    return v->kind == MGPU_KIND_ATTENTION_FWD_SM90 || v->kind == MGPU_KIND_ATTENTION_FWD_FP8_SM90;
}

/* Per-sequence key counts and paged caches are read by the sm_90a and the
 * sm_100a 16-bit kernels (not by the fp8 one). */
static int attention_fits(const struct mgpu_variant *v, const void *ctx)
{
    const struct mgpu_attention_problem *p = ctx;
    if ((p->seqused_k || p->block_table) && v->kind != MGPU_KIND_ATTENTION_FWD_SM90 &&
        v->kind != MGPU_KIND_ATTENTION_FWD_SM100)
        return 0;
    if (p->qkv_fp8 != (v->kind == MGPU_KIND_ATTENTION_FWD_FP8_SM90))
        return 0; /* fp8 inputs: the fp8 kind, whose dtype is O's */
    return v->dtype == p->dtype && v->attention.head_dim == p->head_dim;
}

int mgpu_select_attention_fwd(const struct mgpu_attention_problem *p, const struct mgpu_device_caps *caps,
                              const char *force, mgpu_status *status)
{
    const struct mgpu_lookup q = {.what = "attention forward", .of_op = is_attention_kind, .caps = caps,
                                  .force = force, .fits = attention_fits, .ctx = p};
    return mgpu_registry_lookup(&q, NULL, status);
}

static int is_decode_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_FWD_DECODE_SM90;
}

/* The decode entry with the forward variant's dtype and tiles. */
static int decode_fits(const struct mgpu_variant *v, const void *ctx)
{
    const struct mgpu_variant *fwd = ctx;
    return v->dtype == fwd->dtype && v->attention.head_dim == fwd->attention.head_dim &&
           v->attention.block_m == fwd->attention.block_m && v->attention.block_n == fwd->attention.block_n &&
           v->attention.stages == fwd->attention.stages && v->threads == fwd->threads &&
           v->smem_bytes == fwd->smem_bytes;
}

/* The first entry of kind `is_kind` on the device that `fits` (given ctx)
 * for sm_90a 16-bit forward variant `fwd`, or -1: not the registry lookup,
 * since a build without such entries is no error. */
static int select_sm90_entry(const struct mgpu_variant *fwd, const struct mgpu_device_caps *caps,
                             int (*is_kind)(enum mgpu_kernel_kind),
                             int (*fits)(const struct mgpu_variant *, const void *), const void *ctx)
{
    if (fwd->kind != MGPU_KIND_ATTENTION_FWD_SM90)
        return -1;
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (is_kind(v->kind) && mgpu_variant_on_device(v, caps) && fits(v, ctx))
            return i;
    }
    return -1;
}

int mgpu_select_attention_fwd_decode(const struct mgpu_variant *fwd, const struct mgpu_device_caps *caps)
{
    return select_sm90_entry(fwd, caps, is_decode_kind, decode_fits, fwd);
}

static int is_decode64_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_FWD_DECODE64_SM90;
}

/* A 64-row decode entry with the forward variant's dtype, head dim and
 * stages, and its key block or the short one. */
static int decode64_fits(const struct mgpu_variant *v, const void *ctx)
{
    const struct mgpu_variant *fwd = ctx;
    return v->dtype == fwd->dtype && v->attention.head_dim == fwd->attention.head_dim &&
           v->attention.block_m == MGPU_ATTENTION_FWD_DECODE64_BLOCK_M &&
           (v->attention.block_n == fwd->attention.block_n ||
            v->attention.block_n == MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N) &&
           v->attention.stages == fwd->attention.stages;
}

struct decode64_want {
    const struct mgpu_variant *fwd;
    int block_n;
};

static int decode64_fits_block(const struct mgpu_variant *v, const void *ctx)
{
    const struct decode64_want *want = ctx;
    return decode64_fits(v, want->fwd) && v->attention.block_n == want->block_n;
}

int mgpu_select_attention_fwd_decode64(const struct mgpu_variant *fwd, const struct mgpu_device_caps *caps,
                                       int block_n)
{
    const struct decode64_want want = {fwd, block_n};
    return select_sm90_entry(fwd, caps, is_decode64_kind, decode64_fits_block, &want);
}

static int is_wide_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_FWD_WIDE_SM90;
}

/* The wide entry with the forward variant's dtype, head dim, key block and
 * stages. */
static int wide_fits(const struct mgpu_variant *v, const void *ctx)
{
    const struct mgpu_variant *fwd = ctx;
    return v->dtype == fwd->dtype && v->attention.head_dim == fwd->attention.head_dim &&
           v->attention.block_n == fwd->attention.block_n && v->attention.stages == fwd->attention.stages &&
           v->attention.block_m == MGPU_ATTENTION_FWD_WIDE_BLOCK_M;
}

int mgpu_select_attention_fwd_wide(const struct mgpu_variant *fwd, const struct mgpu_device_caps *caps)
{
    return select_sm90_entry(fwd, caps, is_wide_kind, wide_fits, fwd);
}

/* The variant that `force` (MGPU_FORCE_VARIANT, may be NULL) names, or NULL. */
static const struct mgpu_variant *forced_variant(const char *force)
{
    for (int i = 0; force && i < mgpu_variant_count; i++)
        if (strcmp(force, mgpu_variants[i].name) == 0)
            return &mgpu_variants[i];
    return NULL;
}

int mgpu_attention_fwd_wide_forced(const char *force, const struct mgpu_variant *fwd)
{
    const struct mgpu_variant *v = forced_variant(force);
    if (!v || !is_wide_kind(v->kind))
        return 0;
    return fwd->kind == MGPU_KIND_ATTENTION_FWD_SM90 && wide_fits(v, fwd) ? 1 : -1;
}

int mgpu_attention_fwd_decode_forced(const char *force, const struct mgpu_variant *fwd, int *block_n)
{
    const struct mgpu_variant *v = forced_variant(force);
    if (v && is_decode64_kind(v->kind)) {
        if (!decode64_fits(v, fwd))
            return -1;
        if (block_n)
            *block_n = v->attention.block_n;
        return 64;
    }
    if (v && is_decode_kind(v->kind))
        return decode_fits(v, fwd) ? 128 : -1;
    return 0;
}

static int is_combine_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_FWD_COMBINE_SM90;
}

static int is_append_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_KV_CACHE_APPEND;
}

static int dtype_fits(const struct mgpu_variant *v, const void *ctx)
{
    return v->dtype == *(const int *)ctx;
}

static int any_fits(const struct mgpu_variant *v, const void *ctx)
{
    (void)v;
    (void)ctx;
    return 1;
}

int mgpu_select_attention_fwd_combine(int dtype, const struct mgpu_device_caps *caps, mgpu_status *status)
{
    const struct mgpu_lookup q = {.what = "attention forward combine", .of_op = is_combine_kind, .caps = caps,
                                  .fits = dtype_fits, .ctx = &dtype};
    return mgpu_registry_lookup(&q, NULL, status);
}

static int is_fp8_vt_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_FWD_FP8_VT_SM90;
}

static int is_fp8_transpose_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_ATTENTION_FWD_FP8_TRANSPOSE_V_SM90;
}

int mgpu_select_attention_fwd_fp8_vt(int dtype, const struct mgpu_device_caps *caps, const char *force,
                                     int *transpose, mgpu_status *status)
{
    const struct mgpu_lookup q = {.what = "fp8 attention forward (V^T from the workspace)", .of_op = is_fp8_vt_kind,
                                  .caps = caps, .force = force, .fits = dtype_fits, .ctx = &dtype};
    const struct mgpu_lookup t = {.what = "fp8 attention V pre-pass", .of_op = is_fp8_transpose_kind, .caps = caps,
                                  .fits = any_fits, .ctx = NULL};
    const int main_variant = mgpu_registry_lookup(&q, NULL, status);
    if (main_variant < 0)
        return -1;
    *transpose = mgpu_registry_lookup(&t, NULL, status);
    return *transpose < 0 ? -1 : main_variant;
}

int mgpu_select_kv_cache_append(const struct mgpu_device_caps *caps, mgpu_status *status)
{
    const struct mgpu_lookup q = {.what = "KV-cache append", .of_op = is_append_kind, .caps = caps,
                                  .fits = any_fits, .ctx = NULL};
    return mgpu_registry_lookup(&q, NULL, status);
}

/* Longest key loop (in key blocks) that runs on the persistent grid. Measured
 * on H200, bf16, head dim 128, kernel alone, persistent against one CTA per
 * tile: 8 blocks (B=16, S=1024) 570 vs 521 TFLOP/s, 32 blocks (B=4, S=4096)
 * 656 vs 645, 128 blocks (B=1, S=16384) 616 vs 675: with long loops the CTAs
 * of the static round-robin stay in lockstep on the same K/V blocks, while
 * one-tile CTAs start staggered. */
#define PERSISTENT_MAX_KEY_BLOCKS 32
/* Paged calls whose TMA boxes (gcd(page size, block_n) rows) would hold
 * fewer rows than this gather K / V with the producer warpgroup's cp.async
 * copies (args.paged_gather) rather than one TMA box per page and 64
 * columns (decision 020). H200, decode 8 x 32768 keys GQA 64/8 d128 against
 * contiguous (238 us), with 128-byte L2 promotion: pages of 32 rows by TMA
 * +3.6 / +4.1 %, gathered +15.5 / +15.9 %; of 16 rows by TMA +53 / +57 %,
 * gathered +15.2 / +15.6 % (decision 068). */
#define PAGED_GATHER_BELOW_BOX_ROWS 32
/* K and V bytes of the (batch, head) pairs whose causal tiles are ordered
 * heaviest first together: well inside the L2 of an H100 (50 MiB) or H200. */
#define LPT_GROUP_KV_BYTES ((int64_t)24 << 20)

/* Tiles that fill the GPU well enough without splitting the keys. */
#define SPLIT_MIN_FILL 0.8
/* A split count is good when its last wave is this full relative to the best. */
#define SPLIT_WAVE_SLACK 0.85
/* The split fill (choose_splits) only where a split then walks at most
 * this many key blocks: a CTA that streams more is bound by the bytes, not
 * by its chain (H100, GPU time, GQA 64/8, batch 1, d64: 32768 keys, 16
 * splits of 16 blocks 29.3 us, the wave rule's 15 of 18 29.35; decision
 * 058-attention-decode-split-counts). */
#define SPLIT_FILL_MAX_KEY_BLOCKS 8
/* Devices with more DRAM bandwidth than this (GB/s, by the driver's memory
 * clock and bus width: an H100 SXM has 3352, an H200 4915) split long
 * decode caches of few-row tiles over every SM, and fill the wave whatever
 * the blocks a split walks (choose_splits). Measured on the H200 only:
 * parts between (H100 NVL, GH200 with HBM3, about 4000) keep the H100's
 * rules. */
#define FAST_DRAM_GBPS 4500
/* Most passes of 8 warps in which the last split of a work tile merges the
 * tile's rows in the main kernel; past them the combine kernel, whose CTAs
 * merge rows in parallel, does it. H100, GPU time, 15 splits of 8 GQA rows
 * (two passes): 1 x 8192 keys d128 16.4 us merged in the kernel against
 * 16.0 with the early combine, d64 14.1 against 12.7 (decision 027). */
#define SPLIT_MERGE_MAX_PASSES 1
/* Inference calls launch the main kernel for programmatic dependent launch
 * except where its grid takes nearly every SM (at least 7/8) and each CTA
 * walks at least this many key blocks: there the early set-up is worth
 * under 1 % of the call and the launch measured slower (H100, GPU time:
 * 8 x 32768 keys, GQA 64/8, d64, 128 CTAs of 128 key blocks 177.9 -> 184.9
 * us; d256 +0.7 %; decision 028). */
#define PROGRAMMATIC_MAX_KEY_BLOCKS_FULL_GRID 128
/* The partial buffers' start and the LSE part after O: whole 256-byte lines. */
#define PARTIAL_ALIGN 256

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

/* Rows of the call, indexed as the LSE: the partial buffers' rows. */
static int64_t partial_rows(const struct mgpu_attention_problem *p)
{
    return p->varlen ? p->heads_q * p->total_q : p->batch * p->heads_q * p->seqlen_q;
}

int64_t mgpu_attention_fwd_merge_passes(int64_t tile_rows, int num_splits)
{
    const int64_t rows_per_pass = MGPU_ATTENTION_FWD_COMBINE_WARPS / mgpu_attention_fwd_combine_warps(num_splits);
    return mgpu_cdiv(tile_rows, rows_per_pass);
}

/* The same for a merge of `warps` warps (the 64-row decode entry's 4) and
 * up to `splits_per_warp` splits a warp (args.merge_splits_per_warp); a
 * row's warps must fit them (else INT64_MAX: no merge in the kernel). */
static int64_t merge_passes_of(int64_t tile_rows, int num_splits, int warps, int splits_per_warp)
{
    const int per_row = mgpu_attention_fwd_merge_warps(num_splits, splits_per_warp);
    return per_row > warps ? INT64_MAX : mgpu_cdiv(tile_rows, warps / per_row);
}

/* One merge warp a row of 9 to 16 splits (args.merge_splits_per_warp =
 * MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP; two rounds of 8 O loads)
 * where, with the two warps a row of the default share, the tile's 5 to 8
 * rows would not merge in one pass of 8 warps (so the combine kernel runs)
 * and the combine's CTAs could not be launched early beside the split grid
 * (tiles * splits + combine CTAs > SMs: it waits for the main grid's end
 * and a launch); one row a warp then merges the tile in one pass in the
 * main kernel (its 8-warp entries; the 64-row decode entry's 4 warps would
 * take two passes, so the 128-row one is kept). H100, GPU time, 1 x 32768
 * keys, GQA 64/8, d64, 15 splits (120 + 16 CTAs on 132 SMs): 31.6 us with
 * the combine after the main grid, 29.2 merged in the 128-row entry with 16
 * splits a warp loaded at once (decision 052), 29.4 with the 8-at-a-time
 * loads of merge_row (decision 056). Everywhere else the default share, so every
 * other plan is unchanged. A function of the call, the SMs and the forcing
 * switch only (not of where the merge runs, nor of the entry): whichever
 * merge runs adds in the same order. force: MGPU_ATTENTION_MERGE16, 1 for
 * every call of 9 to 16 splits, -1 never, 0 this rule. */
static int merge_wide_wanted(int num_splits, int64_t tiles, int64_t tile_rows, int64_t partial_rows, int64_t sms,
                             int force)
{
    if (num_splits <= MGPU_ATTENTION_FWD_COMBINE_SPLITS_PER_WARP ||
        num_splits > MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP)
        return 0; /* one warp a row either way, or more than one takes the row */
    if (force)
        return force > 0;
    const int64_t combine_ctas = mgpu_cdiv(partial_rows, mgpu_attention_fwd_combine_rows_per_cta(num_splits));
    return tiles <= MGPU_SPLIT_COUNTERS && tile_rows <= MGPU_ATTENTION_FWD_COMBINE_WARPS &&
           merge_passes_of(tile_rows, num_splits, MGPU_ATTENTION_FWD_COMBINE_WARPS, 0) > SPLIT_MERGE_MAX_PASSES &&
           tiles * num_splits + combine_ctas > sms;
}

size_t mgpu_attention_fwd_split_bytes(const struct mgpu_attention_problem *p, int num_splits)
{
    if (num_splits <= 1)
        return 0;
    const int64_t rows = partial_rows(p) * num_splits;
    return (size_t)(round_up(rows * p->head_dim * 4, PARTIAL_ALIGN) + round_up(rows * 4, PARTIAL_ALIGN));
}

/* GQA packing pays when a query tile would be mostly padding: the packed
 * tile's share of useful rows against the unpacked one's (FlashAttention-3's
 * rule), and only with group sizes a tile can hold. */
static int choose_pack(const struct mgpu_attention_problem *p, int block_m, int force)
{
    const int64_t group = p->heads_q / p->heads_kv;
    /* the packed map's KV-head stride (group * head stride) must stay a TMA stride */
    if (group > block_m || p->q_strides.head * group >= ((int64_t)1 << 40) / ELEMENT_BYTES)
        return 0;
    const int64_t per_tile = block_m / group;
    if (mgpu_attention_product_exceeds(mgpu_cdiv(p->seqlen_q, per_tile), p->heads_kv, p->batch,
                                       MGPU_ATTENTION_MAX_SIZE))
        return 0; /* the packed tiles must stay an int32 count, as the unpacked ones (validated) */
    if (force)
        return force > 0;
    if (group == 1)
        return 0;
    /* Prefill is packed only when it fills the query tiles better: packing a
     * full-length GQA prefill measured no faster (H100, 2026-11-23, decision
     * 016: within the run-to-run spread of +-4 %, either sign). */
    const double unpacked = (double)p->seqlen_q / (double)round_up(p->seqlen_q, block_m);
    const double packed = (double)(p->seqlen_q * group) / (double)(mgpu_cdiv(p->seqlen_q, per_tile) * block_m);
    return unpacked < 0.9 * packed;
}

/* Key splits: 1 when the work tiles fill the SMs; one per key block when
 * every key block of every tile then has its own CTA in one wave (short
 * caches); else the fewest splits whose last wave is nearly as full as the
 * best count's (FlashAttention's heuristic), at most one per key block.
 * Then as many as the workspace holds, and none without keys: the count
 * that gives each split the same ceil(blocks / splits) key blocks.
 * `fill`: the split fill below, for tiles of at most 8 rows (0: off, also
 * by MGPU_ATTENTION_SPLIT_FILL=0). */
static int choose_splits(const struct mgpu_attention_problem *p, int64_t tiles, int64_t key_blocks, int sms,
                         int dram_gbps, size_t workspace_bytes, int force, int packed, int few_rows, int fill)
{
    int64_t limit = key_blocks < MGPU_ATTENTION_FWD_MAX_SPLITS ? key_blocks : MGPU_ATTENTION_FWD_MAX_SPLITS;
    if (limit > MGPU_ATTENTION_MAX_SIZE / tiles)
        limit = MGPU_ATTENTION_MAX_SIZE / tiles;
    /* the combine's grid: up to one CTA per row */
    if (partial_rows(p) > MGPU_ATTENTION_MAX_SIZE)
        limit = 1;
    int splits = 1;
    if (force > 0) {
        splits = force;
    } else if (sms > 0 && tiles * key_blocks <= sms) {
        /* H100, 1 x 1024 keys, GQA 64/8, d128 (8 key blocks): 8 splits 9.0 us,
         * the wave rule's 7 (4 of them with keys) 10.3 us (decision 027) */
        splits = (int)key_blocks;
    } else if (sms > 0 && (double)tiles < SPLIT_MIN_FILL * sms) {
        double eff[MGPU_ATTENTION_FWD_MAX_SPLITS + 1], best = 0;
        const int64_t top = limit < sms ? limit : sms;
        for (int64_t s = 1; s <= top; s++) {
            const double waves = (double)(tiles * s) / sms;
            eff[s] = waves / ceil(waves);
            best = eff[s] > best ? eff[s] : best;
        }
        for (int64_t s = 1; s <= top; s++)
            if (eff[s] >= SPLIT_WAVE_SLACK * best) {
                splits = (int)s;
                break;
            }
    }
    /* Split fill: packed GQA tiles of at most 8 rows that split take the
     * fewest key blocks a split that keep every split CTA in one wave of
     * the SMs (one CTA an SM), with at most 16 splits (8 tiles of 16 splits
     * and the combine's CTAs exceed the SMs, so merge_wide_wanted gives one
     * merge warp a row and the tiles merge in one pass of the 128-row entry;
     * 9 to 15 splits keep the combine where it can start early, 8 or fewer
     * merge in the kernel in one pass), where a split then walks at most
     * SPLIT_FILL_MAX_KEY_BLOCKS blocks, when that is more splits than the
     * wave rule's: a short CTA waits on its chain (set-up, loads, partials,
     * merge: decisions 031 / 041), so the fewer blocks each walks, the
     * sooner the call ends. H100, GPU time, GQA 64/8, batch 1, 8 tiles:
     * 8192 keys d128 16 splits of 4 blocks merged in the kernel 11.7 us
     * against the wave rule's 13 of 5 with the early combine 12.7-13.2
     * (cuDNN 11.5), d64 9.65 against 10.4-10.7 (cuDNN 8.8); 4096 keys d128
     * 9.0 against 9.7-10.0, d64 7.9 against 8.6. The long-cache rule below
     * still takes its half of the SMs where it applies. On a device with
     * more bandwidth (FAST_DRAM_GBPS) the fill holds at any block count:
     * H200, GQA 64/8, batch 1, d64, 32768 keys: 16 splits of 16 blocks
     * 22.7 us against the wave rule's 15 of 18 24.0 (decision 067). */
    if (fill && force <= 0 && packed && sms > 0 && splits > 1) {
        int64_t per_wave = sms / tiles;
        if (per_wave > MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP)
            per_wave = MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP;
        if (per_wave > limit)
            per_wave = limit;
        if (per_wave >= 2) {
            const int64_t blocks = mgpu_cdiv(key_blocks, per_wave);
            const int64_t filled = mgpu_cdiv(key_blocks, blocks);
            if ((blocks <= SPLIT_FILL_MAX_KEY_BLOCKS || dram_gbps > FAST_DRAM_GBPS) && filled > splits)
                splits = (int)filled;
        }
    }
    /* Long caches of packed GQA tiles at head dims from 128 (at least 1 MiB
     * of K and V per split): the splits that fill half the SMs, where that
     * leaves one merge warp per row. H100, GQA 64/8, batch 1, GPU time
     * (decision 027): 8 splits against the wave rule's 15 at 32768 keys
     * 51.7 against 55.2 us, 131072 keys 178.6 against 187.0, d256 8192
     * keys 30.7 against 33.8; not at d64 (32768 keys: 35.3 against 32.0)
     * nor below 1 MiB (d128, 8192 keys: 17.7 against 15.1). Half the SMs
     * draw an H100's bandwidth, not more: on a device with more
     * (FAST_DRAM_GBPS), for tiles of at most 8 rows (`few_rows`: one merge
     * warp a row), the splits fill every SM, as many as one
     * merge warp a row takes in the kernel (H200, GPU time, 1 x 32768 keys
     * d128: 16 splits 38.6 us against half's 8 43.0, 1 x 131072 137.9
     * against 152.0; decision 067). */
    if (force <= 0 && packed && p->head_dim >= 128 && sms > 0 && splits > 1) {
        const int every_sm = dram_gbps > FAST_DRAM_GBPS && few_rows;
        const int64_t share = every_sm ? sms / tiles : sms / 2 / tiles;
        const int64_t most =
            every_sm ? MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP : MGPU_ATTENTION_FWD_COMBINE_SPLITS_PER_WARP;
        if (share >= 2 && share <= most &&
            2 * p->seqlen_k * p->head_dim * ELEMENT_BYTES / share >= ((int64_t)1 << 20))
            splits = (int)share;
    }
    if (splits > limit)
        splits = (int)limit;
    while (splits > 1 && mgpu_attention_fwd_split_bytes(p, splits) > workspace_bytes)
        splits--;
    if (force <= 0 && splits > 1)
        splits = (int)mgpu_cdiv(key_blocks, mgpu_cdiv(key_blocks, splits));
    return splits < 1 ? 1 : splits;
}

void mgpu_attention_make_plan(const struct mgpu_attention_problem *p, const struct mgpu_variant *v,
                              const struct mgpu_device_caps *caps, struct mgpu_attention_plan *out)
{
    const struct mgpu_attention_fwd_choice none = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    mgpu_attention_make_plan_ex(p, v, caps, &none, out);
}

/* Whether a call with these arguments uses the kernel's inference features
 * (packed GQA, key splits, per-sequence key counts, pages). */
static int uses_inference_features(const struct mgpu_attention_problem *p, const struct mgpu_attention_fwd_args *a)
{
    return a->pack_gqa || a->num_splits > 1 || p->seqused_k || p->block_table;
}

/* The plan for query tiles of block_m rows: the variant's, or the 64-row
 * decode entry's (one consumer warpgroup, whose merge runs 4 warps). */
static void make_plan_tiles(const struct mgpu_attention_problem *p, const struct mgpu_variant *v,
                            const struct mgpu_device_caps *caps, const struct mgpu_attention_fwd_choice *choice,
                            int block_m, struct mgpu_attention_plan *out)
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
    a->seqused_k = (uint64_t)p->seqused_k;

    const int block_n = v->attention.block_n;
    const int merge_warps = block_m == MGPU_ATTENTION_FWD_DECODE64_BLOCK_M ? MGPU_ATTENTION_FWD_COMBINE_WARPS / 2
                                                                          : MGPU_ATTENTION_FWD_COMBINE_WARPS;
    const int64_t group = p->heads_q / p->heads_kv;
    /* The decode planning (GQA packing, key splits) is the sm_90a kernel's
     * (abi/attention_abi.h); seqused_k and the paged maps below are every
     * 16-bit kernel's, with the variant's key block. */
    const int decode_features = v->kind == MGPU_KIND_ATTENTION_FWD_SM90;
    a->pack_gqa = decode_features && choose_pack(p, block_m, choice->force_pack);
    a->tile_heads = (int32_t)(a->pack_gqa ? p->heads_kv : p->heads_q);
    a->tile_queries = (int32_t)(a->pack_gqa ? block_m / group : block_m);
    if (a->pack_gqa) {
        /* {head_dim, group, seq, heads_kv, nbatch}: the packed tile is one box per 64 columns. */
        struct mgpu_tensor_map_desc *m = &out->q_map;
        mgpu_attention_map_shape(m, p->q, p, p->total_q, p->heads_q, &p->q_strides, block_m);
        m->rank = 5;
        m->dims[1] = (uint64_t)group;
        m->dims[2] = (uint64_t)p->total_q;
        m->dims[3] = (uint64_t)p->heads_kv;
        m->dims[4] = (uint64_t)(p->varlen ? 1 : p->batch);
        const uint64_t seq_bytes = m->byte_strides[0], head_bytes = m->byte_strides[1];
        const uint64_t batch_bytes = m->byte_strides[2];
        m->byte_strides[0] = head_bytes;
        m->byte_strides[1] = seq_bytes;
        m->byte_strides[2] = head_bytes * (uint64_t)group;
        m->byte_strides[3] = batch_bytes;
        m->box[1] = (uint32_t)group;
        m->box[2] = (uint32_t)a->tile_queries;
        m->box[3] = 1;
        m->box[4] = 1;
    } else {
        mgpu_attention_map_shape(&out->q_map, p->q, p, p->total_q, p->heads_q, &p->q_strides, block_m);
    }
    if (p->block_table) {
        /* Pages: {head_dim, page_size, heads_kv, num_pages}, boxes of gcd(page_size, block_n) rows. */
        int64_t box = p->page_size, r = block_n;
        while (r) {
            const int64_t t = box % r;
            box = r;
            r = t;
        }
        a->block_table = (uint64_t)p->block_table;
        a->block_table_stride = (int32_t)p->max_blocks_per_seq;
        a->page_size = (int32_t)p->page_size;
        a->page_box_rows = (int32_t)box;
        a->num_pages = (int32_t)p->num_pages;
        /* Boxes under 32 rows: the producer warpgroup gathers rows with
         * cp.async rather than one TMA box per page and 64 columns (decision
         * 020: the per-box issue, not the bytes, costs there). The sm_90a
         * 16-bit forward at head dims 64 and 128 only. */
        const int gather_dims = p->head_dim == 64 || p->head_dim == 128; /* the kernel's kPagedGather */
        const int gather_default = box < PAGED_GATHER_BELOW_BOX_ROWS;
        a->paged_gather = decode_features && gather_dims &&
                          (choice->force_gather ? choice->force_gather > 0 : gather_default);
        if (a->paged_gather) {
            a->paged_k = (uint64_t)p->k;
            a->paged_v = (uint64_t)p->v;
        }
        struct mgpu_attention_problem pages = *p;
        pages.batch = p->num_pages;
        mgpu_attention_map_shape(&out->k_map, p->k, &pages, p->page_size, p->heads_kv, &p->k_strides, (int)box);
        mgpu_attention_map_shape(&out->v_map, p->v, &pages, p->page_size, p->heads_kv, &p->v_strides, (int)box);
    } else {
        mgpu_attention_map_shape(&out->k_map, p->k, p, p->total_k, p->heads_kv, &p->k_strides, block_n);
        mgpu_attention_map_shape(&out->v_map, p->v, p, p->total_k, p->heads_kv, &p->v_strides, block_n);
    }

    const int64_t tiles = mgpu_cdiv(p->seqlen_q, a->tile_queries) * a->tile_heads * p->batch;
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : tiles;
    /* A tile's rows that hold queries: */
    const int64_t q_rows = p->seqlen_q < a->tile_queries ? p->seqlen_q : a->tile_queries;
    const int64_t tile_rows = q_rows * (a->pack_gqa ? group : 1);
    /* the split fill where a tile's rows are one merge warp's each */
    const int few_rows = tile_rows <= MGPU_ATTENTION_FWD_COMBINE_WARPS;
    const int fill = choice->split_fill >= 0 && few_rows;
    a->num_splits = decode_features ? choose_splits(p, tiles, mgpu_cdiv(p->seqlen_k, block_n), (int)sms,
                                                    caps->dram_gbps, choice->workspace_bytes, choice->force_splits,
                                                    a->pack_gqa, few_rows, fill)
                                    : 1;
    a->partial_rows = partial_rows(p);
    out->workspace_bytes = mgpu_attention_fwd_split_bytes(p, a->num_splits);
    /* The merge of the splits: in the main kernel (one counter per work
     * tile, the handle's) where one CTA merges a tile's rows in few passes,
     * else the combine kernel. */
    if (a->num_splits > 1 &&
        merge_wide_wanted(a->num_splits, tiles, tile_rows, a->partial_rows, sms, choice->force_merge16))
        a->merge_splits_per_warp = MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP;
    const int row_warps = mgpu_attention_fwd_merge_warps(a->num_splits, a->merge_splits_per_warp);
    out->combine_grid = (unsigned)mgpu_cdiv(a->partial_rows, MGPU_ATTENTION_FWD_COMBINE_WARPS / row_warps);
    if (a->num_splits > 1 && tiles <= MGPU_SPLIT_COUNTERS) {
        const int64_t passes = merge_passes_of(tile_rows, a->num_splits, merge_warps, a->merge_splits_per_warp);
        out->merge_in_kernel = choice->force_merge ? choice->force_merge > 0 : passes <= SPLIT_MERGE_MAX_PASSES;
    }
    if (out->merge_in_kernel && row_warps > merge_warps)
        out->merge_in_kernel = 0; /* forced: a row's warps must fit the kernel's merge */

    /* Equal tiles (no mask that skips key blocks, no per-sequence lengths):
     * a persistent CTA loads the next tile's Q and K/V while it finishes the
     * current one, which pays where the per-tile fill and epilogue are a large
     * share, i.e. short key loops. Needs the second Q buffer. Split calls
     * have few tiles by construction: one CTA each. */
    const int unwindowed = !p->varlen && !p->seqused_k && !p->block_table && p->window_left < 0 &&
                           p->window_right < 0;
    const int short_loop = mgpu_cdiv(p->seqlen_k, block_n) <= PERSISTENT_MAX_KEY_BLOCKS;
    const int q_stages = v->kind == MGPU_KIND_ATTENTION_FWD_FP8_SM90
                             ? MGPU_ATTENTION_FWD_FP8_Q_STAGES /* abi/attention_fwd_fp8_abi.h */
                             : mgpu_attention_fwd_q_stages(block_m, block_n, v->attention.head_dim, v->attention.stages);
    const int persistent = variant_takes_persistent_grid(v) && unwindowed && short_loop && q_stages == 2 &&
                           sms < tiles && a->num_splits == 1;
    out->grid = (unsigned)(persistent ? sms : tiles * a->num_splits);
    /* The combine's CTAs may be scheduled while the main kernel runs
     * (programmatic dependent launch) where they fit on the SMs the main
     * grid leaves free (one main CTA per SM: its shared memory); where they do
     * not, the early ones crowd a few SMs (H100, 8 x 1024 keys, GQA 64/8, d128,
     * 128 + 64 CTAs: 13.4 -> 16.5 us as GPU time), elsewhere they gain 1-4 %. */
    out->combine_early = a->num_splits > 1 && !out->merge_in_kernel && (int64_t)out->grid + out->combine_grid <= sms;
    /* Inference calls (the kernel's inference path: packed GQA, splits,
     * per-sequence lengths, pages) are short: the main kernel is launched for
     * programmatic dependent launch, so its CTAs are set up on the SMs the
     * stream's previous kernel leaves free (a decode step's previous call, a
     * projection GEMM) and start as soon as it completes (decision 028),
     * except long loops on a full grid. Prefill grids are long and take every
     * SM: launched as before. */
    const int inference_call = uses_inference_features(p, a);
    const int64_t blocks_per_cta = mgpu_cdiv(mgpu_cdiv(p->seqlen_k, block_n), a->num_splits);
    const int long_full_grid =
        (int64_t)out->grid * 8 >= sms * 7 && blocks_per_cta >= PROGRAMMATIC_MAX_KEY_BLOCKS_FULL_GRID;
    out->programmatic = decode_features && (choice->force_programmatic ? choice->force_programmatic > 0
                                                                      : inference_call && !long_full_grid);
    /* The decode entry (kernels/abi/attention_abi.h, "Decode entry"): for
     * calls whose queries fit one tile per (sequence, tile head), one work
     * tile per CTA with its coordinates from blockIdx, only the inference
     * code, the grid-dependency wait after the tile set-up (decision 036).
     * Planned for fixed-length decode steps (one query a sequence; MHA ones
     * too, which then leave the persistent grid: H100, 8 x 1024 keys, 32
     * heads, d128, 58.1 -> 50.9 us of GPU time) and for the other inference
     * calls that do not take the persistent grid. Varlen calls keep the
     * general kernel, forced or not (the entry's varlen path is not among
     * the tested ones). Forced on: every fixed-length call whose queries
     * fit; forced off, or a forward variant forced by name: never. */
    const int one_tile = mgpu_cdiv(p->seqlen_q, a->tile_queries) == 1;
    /* the decode entry's grid: {num_splits, tile_heads, batch} */
    const int decode_fits_grid = a->tile_heads <= MGPU_MAX_GRID_YZ && p->batch <= MGPU_MAX_GRID_YZ;
    const int decode_default = p->seqlen_q == 1 || (inference_call && !persistent);
    out->decode_entry = decode_features && one_tile && decode_fits_grid && !p->varlen &&
                        (choice->force_decode_entry ? choice->force_decode_entry > 0 : decode_default);
    if (out->decode_entry) {
        out->grid = (unsigned)(tiles * a->num_splits);
        out->decode_grid[0] = (unsigned)a->num_splits;
        out->decode_grid[1] = (unsigned)a->tile_heads;
        out->decode_grid[2] = (unsigned)p->batch;
        out->combine_early = a->num_splits > 1 && !out->merge_in_kernel && (int64_t)out->grid + out->combine_grid <= sms;
        /* Every decode step at head dims above 64 is launched for
         * programmatic dependent launch, those without an inference feature
         * (MHA, no split) as well (the inference calls' rule above gives the
         * others the same answer): the entry waits for the grid dependency after its tile
         * set-up, so a CTA scheduled early starts loading when the previous
         * kernel ends. Except long loops on a full grid, as above, counted
         * on this grid. H100, GPU time, 32/32 heads d128: 8 x 1024 keys
         * 50.1 -> 49.5 us, 4 x 1024 26.7 -> 26.2, 16 x 1024 93.9 -> 93.0,
         * 8 x 8192 347.9 -> 346.3; d256 8 x 8192 693.8 -> 691.2; but d64
         * 8 x 8192 178.7 -> 179.6 (decision 058-attention-decode-split-counts;
         * d64 long loops lost with it before, 028). */
        const int long_decode =
            (int64_t)out->grid * 8 >= sms * 7 && blocks_per_cta >= PROGRAMMATIC_MAX_KEY_BLOCKS_FULL_GRID;
        if (p->seqlen_q == 1 && p->head_dim > 64 && !choice->force_programmatic)
            out->programmatic = !long_decode;
    }
    /* Causal tiles differ in length (the last query block sees every key, the
     * first one block): the persistent grid takes them at run time, heaviest
     * first within groups of heads whose K/V stay in L2. */
    out->dynamic = persistent && p->causal && !out->decode_entry;
    if (out->dynamic) {
        /* per (batch, tile head); seqlen_k < 2^31, head_dim <= 256 here */
        const int64_t kv_bytes = 2 * p->seqlen_k * p->head_dim * ELEMENT_BYTES;
        int64_t lpt = LPT_GROUP_KV_BYTES / (kv_bytes > 0 ? kv_bytes : 1);
        const int64_t pairs = a->tile_heads * p->batch;
        lpt = lpt < 1 ? 1 : lpt > pairs ? pairs : lpt;
        a->lpt_group = (int32_t)lpt;
    }
    if (v->kind == MGPU_KIND_ATTENTION_FWD_FP8_SM90)
        mgpu_attention_fwd_plan_fp8(p, out);
}

/* Whether a decode-entry call runs the 64-row variant (plan64) rather than
 * the 128-row one (plan): its rows (queries times the packed group) fit 64,
 * and, by measurement (H100, GPU time, decision 044), the call neither
 * loses the 128-row plan's merge in the kernel (the 64-row entry's 4 warps
 * merge 8 packed rows in two passes, so its split calls of 8 GQA rows took
 * the combine kernel: 1 x 1024 keys, 64/8, d128 6.6 -> 6.9 us, 8 x 1024
 * 11.3 -> 11.9) nor is an unpacked call at head dim 64 (MHA d64: 1 x 8192
 * keys 27.8 -> 29.5 us, 8 x 8192 178.4 -> 185.7). Where it runs: MHA d128
 * (1 x 1024 keys 9.2 -> 8.6 us), GQA whose splits merge in the combine
 * kernel either way (1 x 8192 keys d128 13.4 -> 13.2, d64 10.7 -> 10.5),
 * GQA without splits, MQA. On a device with more DRAM bandwidth
 * (FAST_DRAM_GBPS) unpacked head dim 64 calls without splits whose grid
 * exceeds the SMs take it too: two of its CTAs fit an SM where the 128-row
 * entry's one does (registers). H200, GPU time, MHA 32/32 d64 (decision
 * 071): 8 x 1024 keys 24.5 -> 20.0 us, 8 x 8192 128.8 -> 124.8; but with
 * splits on one wave, 1 x 8192 22.0 -> 26.1. */
static int decode64_pays(const struct mgpu_attention_problem *p, const struct mgpu_attention_plan *plan,
                         const struct mgpu_attention_plan *plan64, int force, const struct mgpu_device_caps *caps)
{
    const struct mgpu_attention_fwd_args *a = &plan64->args;
    const int64_t group = p->heads_q / p->heads_kv;
    const int64_t rows = p->seqlen_q * (a->pack_gqa ? group : 1);
    /* the same packing (a group of more than 64 heads is not packed there) */
    if (!plan64->decode_entry || a->pack_gqa != plan->args.pack_gqa || rows > MGPU_ATTENTION_FWD_DECODE64_BLOCK_M)
        return 0;
    if (force)
        return force > 0;
    if (plan->merge_in_kernel && !plan64->merge_in_kernel)
        return 0;
    const int over_a_wave = a->num_splits == 1 && caps->sm_count > 0 && plan64->grid > (unsigned)caps->sm_count;
    return a->pack_gqa || p->head_dim != 64 || (over_a_wave && caps->dram_gbps > FAST_DRAM_GBPS);
}

/* Whether the 64-row decode entry's 64-row key blocks pay (head dim 128):
 * two of its CTAs fit an SM (98 KiB of shared memory; 166 KiB with 128-row
 * blocks), so one CTA's set-up, first loads and epilogue overlap the other's
 * key loop. That pays where the grid is more than one wave of single CTAs
 * and each CTA walks a short cache; where the CTAs fit one wave, or walk
 * long caches, half the bytes in flight a CTA (two stages of 64 rows) cost
 * more. H200, GPU time, bf16 (decision 071), 64-row blocks against 128-row:
 * GQA 64/8 64 x 1024 keys (512 CTAs) 72.1 -> 67.3 us, 32 x 2048 (256) 66.8
 * -> 64.8; MHA 32/32 8 x 1024 (256) 37.8 -> 34.5, 64 x 1024 (2048) 257.3
 * -> 250.6, 16 x 4096 (512) 245.7 -> 243.6; but GQA 16 x 1024 (128 CTAs)
 * 20.0 -> 21.8, 64 x 8192 477.7 -> 482.2, MHA 8 x 8192 241.4 -> 248.8,
 * 1 x 8192 (4 splits) 36.1 -> 39.4. The cache length (at most
 * DECODE64_SHORT_MAX_KEYS) is checked before the call is planned on those
 * blocks; the grid here, on its plan. */
#define DECODE64_SHORT_MAX_KEYS 4096
static int decode64_short_pays(const struct mgpu_attention_plan *plan, int sms)
{
    return plan->args.num_splits == 1 && sms > 0 && plan->grid > (unsigned)sms;
}

/* Paged calls at head dim 64 load a key block (16 KiB a tile) in less time
 * than their producer takes to issue it, by TMA boxes or by the gather
 * (decision 070): two CTAs an SM, i.e. two producers, pay there where one
 * wave of single CTAs does not. So such calls whose 64-row plan (the
 * planner's splits, plan64) leaves the SMs a CTA or less each take the
 * 64-row entry (two CTAs an SM at d64) split to about two CTAs an SM, at
 * most twice the planner's splits and where the splits do grow; packed GQA
 * calls only (those measured; unpacked d64 has decode64_pays's rule). H200,
 * GPU time, GQA 64/8 (decision 072): 8 x 32768 keys, 16-row pages 178-179
 * -> 142-144 us (contiguous 131), 64-row pages 153 -> 132; 8 x 8192, 16-row
 * pages 50.0 -> 42.2 (contiguous 38.0).
 * Returns the split count, or 0 (the rule does not apply, or splits or the
 * entry are forced). */
static int paged_d64_splits(const struct mgpu_attention_problem *p, const struct mgpu_attention_plan *plan64,
                            int sms, const struct mgpu_attention_fwd_choice *choice)
{
    if (!p->block_table || p->head_dim != 64 || choice->force_splits > 0 || choice->force_decode64 || sms <= 0 ||
        !plan64->decode_entry || !plan64->args.pack_gqa)
        return 0;
    const int splits = plan64->args.num_splits;
    const int64_t tiles = (int64_t)plan64->grid / splits;
    if ((int64_t)plan64->grid > sms || tiles <= 0)
        return 0;
    int64_t want = 2 * (int64_t)sms / tiles;
    if (want > 2 * splits)
        want = 2 * splits;
    return want > splits ? (int)want : 0;
}

void mgpu_attention_make_plan_ex(const struct mgpu_attention_problem *p, const struct mgpu_variant *v,
                                 const struct mgpu_device_caps *caps, const struct mgpu_attention_fwd_choice *choice,
                                 struct mgpu_attention_plan *out)
{
    make_plan_tiles(p, v, caps, choice, v->attention.block_m, out);
    if (!out->decode_entry || !choice->decode64 || choice->force_decode64 < 0)
        return;
    /* The same call on 64-row tiles, through the decode entry. */
    struct mgpu_attention_fwd_choice c = *choice;
    c.force_decode_entry = 1;
    struct mgpu_attention_plan plan64;
    make_plan_tiles(p, v, caps, &c, MGPU_ATTENTION_FWD_DECODE64_BLOCK_M, &plan64);
    const int paged_splits = paged_d64_splits(p, &plan64, caps->sm_count, choice);
    if (paged_splits > 0) {
        struct mgpu_attention_fwd_choice c_paged = c;
        c_paged.force_splits = paged_splits;
        struct mgpu_attention_plan plan_paged;
        make_plan_tiles(p, v, caps, &c_paged, MGPU_ATTENTION_FWD_DECODE64_BLOCK_M, &plan_paged);
        /* only where the splits did grow (at most one a key block) */
        if (plan_paged.decode_entry && plan_paged.args.pack_gqa == out->args.pack_gqa &&
            plan_paged.args.num_splits > plan64.args.num_splits) {
            *out = plan_paged;
            out->decode64 = 1;
            out->decode64_block_n = v->attention.block_n;
            return;
        }
    }
    /* forcing the 64-row key blocks on forces the 64-row entry too */
    const int short_forced = choice->decode64_short && choice->force_decode64_short > 0;
    if (!decode64_pays(p, out, &plan64, choice->force_decode64 ? choice->force_decode64 : short_forced, caps))
        return;
    *out = plan64;
    out->decode64 = 1;
    out->decode64_block_n = v->attention.block_n;
    if (!choice->decode64_short || choice->force_decode64_short < 0 ||
        (choice->force_decode64_short == 0 && p->seqlen_k > DECODE64_SHORT_MAX_KEYS))
        return;
    /* and on its 64-row key blocks (the forward variant's plan with that
     * key block: the maps' boxes, the key-block counts and the splits) */
    struct mgpu_variant v_short = *v;
    v_short.attention.block_n = MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N;
    struct mgpu_attention_plan plan_short;
    make_plan_tiles(p, &v_short, caps, &c, MGPU_ATTENTION_FWD_DECODE64_BLOCK_M, &plan_short);
    if (plan_short.decode_entry && plan_short.args.pack_gqa == out->args.pack_gqa &&
        (choice->force_decode64_short > 0 || decode64_short_pays(&plan_short, caps->sm_count))) {
        *out = plan_short;
        out->decode64 = 1;
        out->decode64_block_n = MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N;
    }
}

/* A plan that the wide entry can run: the main kernel's, none of the
 * inference features (the entry has only the prefill copy of the code). */
static int prefill_plan(const struct mgpu_attention_problem *p, const struct mgpu_attention_plan *plan)
{
    return !plan->decode_entry && !uses_inference_features(p, &plan->args);
}

/* Whether the 192-row tiles pay: the query rows padded to whole tiles at
 * most this many thousandths more than with 128-row tiles, less where a
 * causal mask skips key blocks (each 192-row tile then also runs more
 * partly masked blocks). Varlen calls (seqlen_q is only the longest
 * sequence's) and windowed calls were not timed on the wide entry: they
 * keep the 128-row kernel unless forced. H100, bf16, 32 heads, d64,
 * against the 128-row entry (decision 063): 4 x 4096 (+3.1 % rows) 1311 ->
 * 1187 us, causal 689 -> 660; 8 x 8192 (+0.8 %) 10541 -> 9275, causal
 * 5422 -> 5125; 16 x 1024 (+12.5 %) 351-379 -> 341-350 us, but causal
 * 236-241 -> 258. */
#define WIDE_MAX_PADDING_PERMILLE 125
#define WIDE_MAX_PADDING_PERMILLE_MASKED 40
static int wide_pays(const struct mgpu_attention_problem *p)
{
    if (p->varlen || p->window_left >= 0 || p->window_right >= 0)
        return 0;
    const int64_t limit = p->causal ? WIDE_MAX_PADDING_PERMILLE_MASKED : WIDE_MAX_PADDING_PERMILLE;
    const int64_t rows_wide = round_up(p->seqlen_q, MGPU_ATTENTION_FWD_WIDE_BLOCK_M);
    const int64_t rows = round_up(p->seqlen_q, MGPU_ATTENTION_FWD_BLOCK_M);
    return rows_wide * 1000 <= rows * (1000 + limit);
}

void mgpu_attention_fwd_plan_wide(const struct mgpu_attention_problem *p, const struct mgpu_variant *v,
                                  const struct mgpu_device_caps *caps, const struct mgpu_attention_fwd_choice *choice,
                                  int force, struct mgpu_attention_plan *plan)
{
    if (force < 0 || v->kind != MGPU_KIND_ATTENTION_FWD_SM90 || !prefill_plan(p, plan))
        return;
    if (!force && !wide_pays(p))
        return;
    /* The same call on 192-row tiles: never packed, never through the decode entry. */
    struct mgpu_attention_fwd_choice c = *choice;
    c.force_pack = -1;
    c.force_decode_entry = -1;
    struct mgpu_attention_plan wide;
    make_plan_tiles(p, v, caps, &c, MGPU_ATTENTION_FWD_WIDE_BLOCK_M, &wide);
    if (!prefill_plan(p, &wide))
        return; /* e.g. fewer tiles that the planner would split */
    *plan = wide;
    plan->wide = 1;
}

/* Places the partial buffers at the workspace's base. */
void mgpu_attention_fwd_place_partials(struct mgpu_attention_plan *plan, uint64_t workspace)
{
    struct mgpu_attention_fwd_args *a = &plan->args;
    if (a->num_splits <= 1)
        return;
    const int64_t rows = a->partial_rows * a->num_splits;
    a->o_partial = workspace;
    a->lse_partial = workspace + (uint64_t)round_up(rows * a->head_dim * 4, PARTIAL_ALIGN);
}

/* ---------------------------------------------------------------- KV-cache append */

static mgpu_status append_strides(const char *name, const mgpu_attention_strides *given, int64_t rows,
                                  int64_t heads, int64_t d, int64_t out[3])
{
    if (given->batch == 0 && given->seq == 0 && given->head == 0) {
        out[2] = d;
        out[1] = heads * d;
        out[0] = rows * heads * d;
    } else {
        out[0] = given->batch;
        out[1] = given->seq;
        out[2] = given->head;
    }
    if (out[0] < 0 || out[1] < 0 || out[2] < 0)
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "%s strides {%lld, %lld, %lld} must be >= 0", name,
                         (long long)out[0], (long long)out[1], (long long)out[2]);
    if (out[0] % 8 || out[1] % 8 || out[2] % 8)
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "%s strides {%lld, %lld, %lld} must be multiples of 8 elements "
                         "(16-byte vectors)", name, (long long)out[0], (long long)out[1], (long long)out[2]);
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_kv_cache_append_validate(const mgpu_kv_cache_append_desc *desc, const void *k_new, const void *v_new,
                                          void *k_cache, void *v_cache, struct mgpu_kv_cache_append_args *out)
{
    memset(out, 0, sizeof *out);
    if (!desc)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    if (desc->struct_size != sizeof(mgpu_kv_cache_append_desc))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "desc->struct_size is %zu, expected %zu: start from MGPU_KV_CACHE_APPEND_DESC_INIT",
                         desc->struct_size, sizeof(mgpu_kv_cache_append_desc));
    if (desc->dtype != MGPU_DTYPE_F16 && desc->dtype != MGPU_DTYPE_BF16)
        return mgpu_fail(MGPU_STATUS_UNSUPPORTED_DTYPE, "KV-cache dtype is %d; it must be MGPU_DTYPE_F16 or "
                         "MGPU_DTYPE_BF16", (int)desc->dtype);
    if ((uintptr_t)desc->cache_seqlens % INDEX_ALIGN_BYTES || (uintptr_t)desc->block_table % INDEX_ALIGN_BYTES)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "cache_seqlens and block_table must be 4-byte aligned int32 arrays");
    const int64_t sizes[] = {desc->batch, desc->seqlen_new, desc->heads_kv, desc->head_dim, desc->page_size,
                             desc->num_pages, desc->max_blocks_per_seq};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i] < 0 || sizes[i] > MGPU_ATTENTION_MAX_SIZE)
            return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "batch, seqlen_new, heads_kv, head_dim, page_size, num_pages "
                             "and max_blocks_per_seq must each lie in [0, 2^31 - 1]");
    if (desc->batch == 0 || desc->seqlen_new == 0 || desc->heads_kv == 0)
        return MGPU_STATUS_SUCCESS;
    if (desc->page_size < 1 || desc->head_dim < 1)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "page_size (%lld) and head_dim (%lld) must be >= 1",
                         (long long)desc->page_size, (long long)desc->head_dim);
    if (desc->block_table ? desc->max_blocks_per_seq < 1 : desc->num_pages < desc->batch)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, desc->block_table ? "max_blocks_per_seq must be >= 1 with a "
                         "block_table" : "a contiguous cache (block_table NULL) needs num_pages >= batch (one "
                         "page per sequence)");
    if (desc->head_dim % 8)
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "head_dim %lld: the append moves 16-byte vectors and needs a "
                         "multiple of 8", (long long)desc->head_dim);
    int64_t vectors;
    if (!mgpu_mul3_ok(desc->batch, desc->seqlen_new, desc->heads_kv, &vectors) ||
        !mgpu_mul_ok(vectors, desc->head_dim / 4, &vectors) ||
        mgpu_cdiv(vectors, MGPU_KV_APPEND_THREADS) > MGPU_ATTENTION_MAX_SIZE)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "2 * batch * seqlen_new * heads_kv * head_dim / 8 vectors exceed "
                         "2^31 - 1 CTAs of %d", MGPU_KV_APPEND_THREADS);
    if (!k_new || !v_new || !k_cache || !v_cache || !desc->cache_seqlens)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "k_new, v_new, k_cache, v_cache and cache_seqlens must not be NULL");
    const uintptr_t bases[4] = {(uintptr_t)k_new, (uintptr_t)v_new, (uintptr_t)k_cache, (uintptr_t)v_cache};
    for (int i = 0; i < 4; i++)
        if (bases[i] % 16)
            return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "k_new, v_new, k_cache and v_cache must be 16-byte aligned");
    mgpu_status s = append_strides("new", &desc->new_strides, desc->seqlen_new, desc->heads_kv, desc->head_dim,
                                   out->k_new_strides);
    if (s == MGPU_STATUS_SUCCESS)
        s = append_strides("cache", &desc->cache_strides, desc->page_size, desc->heads_kv, desc->head_dim,
                           out->k_cache_strides);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    memcpy(out->v_new_strides, out->k_new_strides, sizeof out->v_new_strides);
    memcpy(out->v_cache_strides, out->k_cache_strides, sizeof out->v_cache_strides);
    out->batch = (int32_t)desc->batch;
    out->seqlen_new = (int32_t)desc->seqlen_new;
    out->heads_kv = (int32_t)desc->heads_kv;
    out->head_dim = (int32_t)desc->head_dim;
    out->page_size = (int32_t)desc->page_size;
    out->block_table_stride = (int32_t)desc->max_blocks_per_seq;
    out->k_new = (uint64_t)(uintptr_t)k_new;
    out->v_new = (uint64_t)(uintptr_t)v_new;
    out->k_cache = (uint64_t)(uintptr_t)k_cache;
    out->v_cache = (uint64_t)(uintptr_t)v_cache;
    out->block_table = (uint64_t)(uintptr_t)desc->block_table;
    out->cache_seqlens = (uint64_t)(uintptr_t)desc->cache_seqlens;
    out->vectors = vectors;
    return MGPU_STATUS_SUCCESS;
}
