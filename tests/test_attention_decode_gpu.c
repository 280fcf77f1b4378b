/*
 * GPU test of mgpu_attention_fwd's inference paths against a CPU reference
 * (float inputs as decoded from the device, double sums): decode and short
 * query shapes (batch 1 ... 64, keys 1 ... 4096+, GQA 8:1, MQA, MHA, head dims
 * 64 / 128 / 256) with GQA packing and key splits forced on and off,
 * per-sequence key counts (seqused_k, including 0 and 1), a paged KV cache
 * with shuffled, non-contiguous pages (sequences of 0, 1 and page_size + 1
 * keys; cache rows past each sequence holding NaN), a workspace too
 * small for the splits asked for, and mgpu_kv_cache_append followed by
 * attention over the grown cache. Each case runs four times: as given, with
 * its splits merged in the main kernel (twice) and by the combine kernel
 * (MGPU_FORCE_SPLIT_MERGE); all four must carry the same bits. Then split
 * calls of several shapes alternate on one handle, uncaptured and as a
 * CUDA graph replayed, each output bitwise the combine kernel's.
 *
 * O and LSE are poisoned (NaN) before each call; a case passes with
 * ||O - ref|| / ||ref|| <= 1e-2, LSE error <= 1e-2, nothing NaN, and every
 * row either right or (no keys) O = 0 with LSE = +infinity.
 * MGPU_TEST_QUICK=1 runs a few small cases (for compute-sanitizer).
 * Exits 77 without a device.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "force.h"
#include "gpu_util.h"

#define MAX_REL_ERR 1e-2
#define NUM_MERGES 4 /* calls per case: the case's, merged in the main kernel twice, by the combine kernel */
#define MAX_LSE_ERR 1e-2

struct dcase {
    int batch, sq, sk, hq, hkv, d;
    mgpu_dtype dtype;
    int causal;
    int window;         /* > 0: window_left (right of the diagonal: causal or unbounded) */
    float softcap;
    int pack, splits;   /* forcing: MGPU_FORCE_PACK_GQA (1 / -1), MGPU_FORCE_NUM_SPLITS; 0: planner */
    int merge;          /* forcing: MGPU_FORCE_SPLIT_MERGE (1 / -1) of the first call; 0: planner */
    int gather;         /* forcing: MGPU_FORCE_PAGED_GATHER (1 / -1); 0: planner (or the environment's) */
    int short_blocks;   /* forcing: MGPU_ATTENTION_DECODE64_SHORT (1 / -1); 0: planner */
    int ragged;         /* seqused_k: lengths 0, 1, page_size + 1, random, sk (cycled) */
    int page_size;      /* > 0: paged cache */
    int append;         /* > 0: append this many rows (= sq) with mgpu_kv_cache_append first */
    size_t workspace;   /* > 0: the handle's workspace for this case */
};

static uint64_t seed = 7;

static uint64_t next_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* A device buffer of random 16-bit values and its host copy as floats. */
static void *random_dev(size_t elems, mgpu_dtype dt, float **host)
{
    void *dev = NULL;
    cudaMalloc(&dev, elems * 2 + 16);
    fill_normal(dev, dt, elems, seed++, 1.0f);
    uint16_t *raw = malloc(elems * 2);
    cudaMemcpy(raw, dev, elems * 2, cudaMemcpyDeviceToHost);
    *host = malloc(elems * sizeof(float));
    for (size_t i = 0; i < elems; i++)
        (*host)[i] = host_load_elem(raw + i, dt);
    free(raw);
    return dev;
}

static void reload(const void *dev, size_t elems, mgpu_dtype dt, float *host)
{
    uint16_t *raw = malloc(elems * 2);
    cudaMemcpy(raw, dev, elems * 2, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < elems; i++)
        host[i] = host_load_elem(raw + i, dt);
    free(raw);
}

static void force_case(const struct dcase *c)
{
    if (c->pack)
        force_setenv("MGPU_FORCE_PACK_GQA", c->pack > 0 ? "1" : "0");
    if (c->splits) {
        char n[16];
        snprintf(n, sizeof n, "%d", c->splits);
        force_setenv("MGPU_FORCE_NUM_SPLITS", n);
    }
    if (c->gather)
        force_setenv("MGPU_FORCE_PAGED_GATHER", c->gather > 0 ? "1" : "0");
    if (c->short_blocks)
        force_setenv("MGPU_ATTENTION_DECODE64_SHORT", c->short_blocks > 0 ? "1" : "0");
}

static void unforce(void)
{
    force_unsetenv("MGPU_FORCE_PACK_GQA");
    force_unsetenv("MGPU_FORCE_NUM_SPLITS");
    force_unsetenv("MGPU_FORCE_SPLIT_MERGE");
}

/* Unforces the gather (and the 64-row key blocks) only where the case forced
 * it, so that a run under MGPU_FORCE_PAGED_GATHER (or
 * MGPU_ATTENTION_DECODE64_SHORT) keeps it for the other cases. */
static char env_gather[16]; /* MGPU_FORCE_PAGED_GATHER of the environment ("": unset) */

static char env_short[16]; /* MGPU_ATTENTION_DECODE64_SHORT of the environment ("": unset) */

static void unforce_gather(const struct dcase *c)
{
    if (c->short_blocks) {
        if (env_short[0])
            force_setenv("MGPU_ATTENTION_DECODE64_SHORT", env_short);
        else
            force_unsetenv("MGPU_ATTENTION_DECODE64_SHORT");
    }
    if (!c->gather)
        return;
    if (env_gather[0])
        force_setenv("MGPU_FORCE_PAGED_GATHER", env_gather);
    else
        force_unsetenv("MGPU_FORCE_PAGED_GATHER");
}

static void run_case(mgpu_handle *h, struct dcase c)
{
    const mgpu_dtype dt = c.dtype;
    const int group = c.hq / c.hkv;
    const int paged = c.page_size > 0;
    const int wl = c.window > 0 ? c.window : -1;
    const size_t row_elems = (size_t)c.hkv * c.d;

    /* Key counts per sequence (before an append: the cache's old rows). */
    int *len = malloc(sizeof(int) * c.batch);
    uint64_t rs = (uint64_t)(c.batch * 977 + c.sk * 13 + c.d);
    const int tail = c.append > 0 ? c.append : 0;
    const int cap = c.sk; /* rows each sequence may hold */
    for (int b = 0; b < c.batch; b++) {
        int l = cap - tail;
        if (c.ragged) {
            const int page = paged ? c.page_size : 16;
            const int choices[5] = {0, 1, page + 1, (int)(next_rand(&rs) % (uint64_t)(cap - tail + 1)), cap - tail};
            l = choices[b % 5];
            if (l > cap - tail)
                l = cap - tail;
        }
        len[b] = l;
    }

    /* K / V storage: contiguous [batch][sk][hkv][d], or pages of page_size
     * rows shuffled across a cache with spare pages. */
    const int max_blocks = paged ? (cap + c.page_size - 1) / c.page_size : 1;
    const int pages = paged ? c.batch * max_blocks + 3 : c.batch;
    const int page_rows = paged ? c.page_size : cap;
    const size_t cache_elems = (size_t)pages * page_rows * row_elems;
    float *kh, *vh;
    void *k_dev = random_dev(cache_elems, dt, &kh), *v_dev = random_dev(cache_elems, dt, &vh);
    int32_t *table = NULL, *table_dev = NULL;
    if (paged) {
        int *perm = malloc(sizeof(int) * pages);
        for (int i = 0; i < pages; i++)
            perm[i] = i;
        for (int i = pages - 1; i > 0; i--) {
            const int j = (int)(next_rand(&rs) % (uint64_t)(i + 1)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        table = malloc(sizeof(int32_t) * c.batch * max_blocks);
        for (int b = 0; b < c.batch; b++)
            for (int blk = 0; blk < max_blocks; blk++) {
                const int used = blk * c.page_size < len[b] + tail;
                table[b * max_blocks + blk] = used ? perm[b * max_blocks + blk] : -1;
            }
        cudaMalloc((void **)&table_dev, sizeof(int32_t) * c.batch * max_blocks);
        cudaMemcpy(table_dev, table, sizeof(int32_t) * c.batch * max_blocks, cudaMemcpyHostToDevice);
        free(perm);
    }
    int32_t *used_dev = NULL;
    cudaMalloc((void **)&used_dev, sizeof(int32_t) * c.batch);

    float *qh;
    const size_t q_elems = (size_t)c.batch * c.sq * c.hq * c.d;
    void *q_dev = random_dev(q_elems, dt, &qh);

    if (c.append > 0) {
        /* New rows at the old lengths, then attend with the grown lengths. */
        float *knh, *vnh;
        const size_t new_elems = (size_t)c.batch * c.append * row_elems;
        void *kn = random_dev(new_elems, dt, &knh), *vn = random_dev(new_elems, dt, &vnh);
        int32_t *lens32 = malloc(sizeof(int32_t) * c.batch);
        for (int b = 0; b < c.batch; b++)
            lens32[b] = len[b];
        cudaMemcpy(used_dev, lens32, sizeof(int32_t) * c.batch, cudaMemcpyHostToDevice);
        mgpu_kv_cache_append_desc ad = MGPU_KV_CACHE_APPEND_DESC_INIT;
        ad.batch = c.batch;
        ad.seqlen_new = c.append;
        ad.heads_kv = c.hkv;
        ad.head_dim = c.d;
        ad.dtype = dt;
        ad.cache_seqlens = used_dev;
        ad.block_table = table_dev;
        ad.max_blocks_per_seq = max_blocks;
        ad.page_size = page_rows;
        ad.num_pages = pages;
        CHECK_STATUS(mgpu_kv_cache_append(h, &ad, kn, vn, k_dev, v_dev), MGPU_STATUS_SUCCESS);
        cudaDeviceSynchronize();
        /* Expected cache: the old one with the new rows written in. */
        for (int b = 0; b < c.batch; b++)
            for (int j = 0; j < c.append; j++) {
                const int pos = len[b] + j;
                const int page = paged ? table[b * max_blocks + pos / c.page_size] : b;
                const size_t dst = ((size_t)page * page_rows + pos % page_rows) * row_elems;
                const size_t src = ((size_t)b * c.append + j) * row_elems;
                memcpy(kh + dst, knh + src, row_elems * sizeof(float));
                memcpy(vh + dst, vnh + src, row_elems * sizeof(float));
            }
        float *kg = malloc(cache_elems * sizeof(float)), *vg = malloc(cache_elems * sizeof(float));
        reload(k_dev, cache_elems, dt, kg);
        reload(v_dev, cache_elems, dt, vg);
        long diff = 0;
        for (size_t i = 0; i < cache_elems; i++)
            diff += kg[i] != kh[i] || vg[i] != vh[i];
        CHECK(diff == 0, "append: %ld cache elements differ from the expected cache", diff);
        for (int b = 0; b < c.batch; b++)
            len[b] += c.append;
        free(kg);
        free(vg);
        free(knh);
        free(vnh);
        free(lens32);
        cudaFree(kn);
        cudaFree(vn);
    }
    int32_t *lens32 = malloc(sizeof(int32_t) * c.batch);
    for (int b = 0; b < c.batch; b++)
        lens32[b] = len[b];
    cudaMemcpy(used_dev, lens32, sizeof(int32_t) * c.batch, cudaMemcpyHostToDevice);
    free(lens32);
    /* Cache rows past each sequence's length (the rest of its last page, or
     * of its contiguous rows) hold NaN: the kernel must not let them in. */
    if (c.ragged || paged || c.append) {
        for (int b = 0; b < c.batch; b++) {
            /* rows len .. the end of the page (or of the sequence's rows): contiguous */
            const int pos = len[b], within = pos % page_rows;
            if (paged && within == 0)
                continue; /* the sequence ends on a page boundary: no tail */
            const int page = paged ? table[b * max_blocks + pos / c.page_size] : b;
            const size_t at = ((size_t)page * page_rows + within) * row_elems * 2;
            const size_t bytes = (size_t)(page_rows - within) * row_elems * 2;
            if (!paged && pos >= cap)
                continue;
            cudaMemset((char *)k_dev + at, 0xff, bytes);
            cudaMemset((char *)v_dev + at, 0xff, bytes);
        }
    }

    void *o_dev = NULL;
    cudaMalloc(&o_dev, q_elems * 2);
    poison(o_dev, q_elems * 2);
    const size_t n_lse = (size_t)c.batch * c.hq * c.sq;
    float *lse_dev = NULL;
    cudaMalloc((void **)&lse_dev, n_lse * sizeof(float));
    poison(lse_dev, n_lse * sizeof(float));

    mgpu_attention_fwd_desc desc = MGPU_ATTENTION_FWD_DESC_INIT;
    desc.batch = c.batch;
    desc.seqlen_q = c.sq;
    desc.seqlen_k = cap;
    desc.heads_q = c.hq;
    desc.heads_kv = c.hkv;
    desc.head_dim = c.d;
    desc.dtype = dt;
    desc.causal = c.causal;
    desc.window_left = wl;
    desc.softcap = c.softcap;
    if (c.ragged || paged || c.append)
        desc.seqused_k = used_dev;
    if (paged) {
        desc.block_table = table_dev;
        desc.max_blocks_per_seq = max_blocks;
        desc.page_size = c.page_size;
        desc.num_pages = pages;
    }
    void *small_ws = NULL;
    if (c.workspace) {
        cudaMalloc(&small_ws, c.workspace);
        CHECK_STATUS(mgpu_set_workspace(h, small_ws, c.workspace), MGPU_STATUS_SUCCESS);
    }
    /* The case's call, then the same call with the splits merged in the
     * main kernel (twice) and by the combine kernel: every output is checked
     * against the reference below, and all must carry the same bits (the
     * split count does not depend on where the splits merge, and both
     * merges add in the same order). */
    const int merges[NUM_MERGES] = {c.merge, 1, 1, -1};
    uint16_t *o_bits[NUM_MERGES];
    float *l_bits[NUM_MERGES];
    mgpu_status s = MGPU_STATUS_SUCCESS;
    for (int m = 0; m < NUM_MERGES; m++) {
        if (m > 0) {
            poison(o_dev, q_elems * 2);
            poison(lse_dev, n_lse * sizeof(float));
        }
        force_case(&c);
        if (merges[m])
            force_setenv("MGPU_FORCE_SPLIT_MERGE", merges[m] > 0 ? "1" : "0");
        const mgpu_status sm = mgpu_attention_fwd(h, &desc, q_dev, k_dev, v_dev, o_dev, lse_dev);
        unforce();
        unforce_gather(&c);
        cudaError_t ce = cudaDeviceSynchronize();
        CHECK(sm == MGPU_STATUS_SUCCESS && ce == cudaSuccess, "call (merge %d): %s (%s), cuda: %s", merges[m],
              mgpu_status_string(sm), mgpu_last_error_message(), cudaGetErrorString(ce));
        if (sm != MGPU_STATUS_SUCCESS)
            s = sm;
        o_bits[m] = malloc(q_elems * 2);
        l_bits[m] = malloc(n_lse * sizeof(float));
        cudaMemcpy(o_bits[m], o_dev, q_elems * 2, cudaMemcpyDeviceToHost);
        cudaMemcpy(l_bits[m], lse_dev, n_lse * sizeof(float), cudaMemcpyDeviceToHost);
    }
    if (c.workspace) {
        CHECK_STATUS(mgpu_set_workspace(h, NULL, 0), MGPU_STATUS_SUCCESS);
        CHECK_STATUS(mgpu_reserve_workspace(h, (size_t)32 << 20), MGPU_STATUS_SUCCESS);
        cudaFree(small_ws);
    }
    long differ = 0;
    for (int m = 1; m < NUM_MERGES; m++)
        differ += memcmp(o_bits[m], o_bits[0], q_elems * 2) != 0 ||
                  memcmp(l_bits[m], l_bits[0], n_lse * sizeof(float)) != 0;
    CHECK(differ == 0, "%ld of the calls merged in the main kernel / by the combine differ in bits from the first",
          differ);

    float *og = malloc(q_elems * sizeof(float)), *lg = malloc(n_lse * sizeof(float));
    for (size_t i = 0; i < q_elems; i++)
        og[i] = host_load_elem(o_bits[0] + i, dt);
    memcpy(lg, l_bits[0], n_lse * sizeof(float));
    for (int m = 0; m < NUM_MERGES; m++) {
        free(o_bits[m]);
        free(l_bits[m]);
    }

    const float scale = 1.0f / sqrtf((float)c.d);
    const int wr = c.causal ? 0 : -1; /* causal: no key right of the diagonal */
    double err2 = 0, ref2 = 0, lse_err = 0;
    long bad = 0;
    double *p = malloc(sizeof(double) * (cap > 0 ? cap : 1)), *acc = malloc(sizeof(double) * c.d);
    for (int b = 0; b < c.batch; b++) {
        const int Sk = len[b], diag = Sk - c.sq;
        for (int hh = 0; hh < c.hq; hh++) {
            const int hk = hh / group;
            for (int i = 0; i < c.sq; i++) {
                const float *qr = qh + (((size_t)b * c.sq + i) * c.hq + hh) * c.d;
                double mx = -INFINITY;
                for (int j = 0; j < Sk; j++) {
                    p[j] = -INFINITY;
                    if ((wr >= 0 && j > i + diag + wr) || (wl >= 0 && j < i + diag - wl))
                        continue;
                    const int page = paged ? table[b * max_blocks + j / c.page_size] : b;
                    const float *kr = kh + (((size_t)page * page_rows + j % page_rows) * c.hkv + hk) * c.d;
                    double dot = 0;
                    for (int x = 0; x < c.d; x++)
                        dot += (double)qr[x] * kr[x];
                    double sv = dot * scale;
                    if (c.softcap > 0)
                        sv = c.softcap * tanh(sv / c.softcap);
                    p[j] = sv;
                    mx = fmax(mx, sv);
                }
                double sum = 0;
                for (int x = 0; x < c.d; x++)
                    acc[x] = 0;
                for (int j = 0; j < Sk; j++) {
                    if (p[j] == -INFINITY)
                        continue;
                    const double e = exp(p[j] - mx);
                    sum += e;
                    const int page = paged ? table[b * max_blocks + j / c.page_size] : b;
                    const float *vr = vh + (((size_t)page * page_rows + j % page_rows) * c.hkv + hk) * c.d;
                    for (int x = 0; x < c.d; x++)
                        acc[x] += e * vr[x];
                }
                const float *orow = og + (((size_t)b * c.sq + i) * c.hq + hh) * c.d;
                for (int x = 0; x < c.d; x++) {
                    const double ref = sum > 0 ? acc[x] / sum : 0.0;
                    if (!isfinite(orow[x])) {
                        bad++;
                        continue;
                    }
                    err2 += (orow[x] - ref) * (orow[x] - ref);
                    ref2 += ref * ref;
                }
                const float l = lg[((size_t)b * c.hq + hh) * c.sq + i];
                if (sum > 0) {
                    if (!isfinite(l))
                        bad++;
                    else
                        lse_err = fmax(lse_err, fabs(l - (mx + log(sum))));
                } else if (!(isinf(l) && l > 0)) {
                    bad++;
                }
            }
        }
    }
    const double rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
    const int pass = s == MGPU_STATUS_SUCCESS && bad == 0 && rel <= MAX_REL_ERR && lse_err <= MAX_LSE_ERR;
    printf("%s %-4s d=%-3d B=%d Sq=%d Sk=%d Hq=%d Hkv=%d causal=%d win=(%d,%d) cap=%g pack=%d splits=%d%s page=%d "
           "append=%d ws=%zu: rel=%.2e lse=%.2e bad=%ld\n",
           pass ? "PASS" : "FAIL", dt == MGPU_DTYPE_BF16 ? "bf16" : "f16", c.d, c.batch, c.sq, c.sk, c.hq, c.hkv,
           c.causal, wl, wr, (double)c.softcap, c.pack, c.splits, c.ragged ? " ragged" : "", c.page_size,
           c.append, c.workspace, rel, lse_err, bad);
    CHECK(pass, "case above failed");

    free(p);
    free(acc);
    free(og);
    free(lg);
    free(qh);
    free(kh);
    free(vh);
    free(len);
    free(table);
    cudaFree(q_dev);
    cudaFree(k_dev);
    cudaFree(v_dev);
    cudaFree(o_dev);
    cudaFree(lse_dev);
    cudaFree(used_dev);
    cudaFree(table_dev);
}

/* ---- Split calls replayed: the same bits from every call and graph replay,
 * between calls of other shapes on the same handle (each launch leaves the
 * split counters at 0 for the next). */
struct replay_shape {
    int batch, sk, hq, hkv, d;
    int splits, merge; /* forcing of the call, 0: planner */
    void *q, *k, *v, *o, *lse;
    size_t q_elems, n_lse;
    uint16_t *o_ref;
    float *lse_ref;
};

static mgpu_status replay_call(mgpu_handle *h, const struct replay_shape *r)
{
    mgpu_attention_fwd_desc d = MGPU_ATTENTION_FWD_DESC_INIT;
    d.batch = r->batch;
    d.seqlen_q = 1;
    d.seqlen_k = r->sk;
    d.heads_q = r->hq;
    d.heads_kv = r->hkv;
    d.head_dim = r->d;
    d.dtype = MGPU_DTYPE_BF16;
    char n[16];
    snprintf(n, sizeof n, "%d", r->splits);
    if (r->splits)
        force_setenv("MGPU_FORCE_NUM_SPLITS", n);
    if (r->merge)
        force_setenv("MGPU_FORCE_SPLIT_MERGE", r->merge > 0 ? "1" : "0");
    const mgpu_status s = mgpu_attention_fwd(h, &d, r->q, r->k, r->v, r->o, r->lse);
    unforce();
    return s;
}

/* 0 when r's O and LSE hold the reference bits. */
static int replay_differs(const struct replay_shape *r)
{
    uint16_t *o = malloc(r->q_elems * 2);
    float *l = malloc(r->n_lse * sizeof(float));
    cudaMemcpy(o, r->o, r->q_elems * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(l, r->lse, r->n_lse * sizeof(float), cudaMemcpyDeviceToHost);
    const int differs = memcmp(o, r->o_ref, r->q_elems * 2) != 0 || memcmp(l, r->lse_ref, r->n_lse * sizeof(float)) != 0;
    free(o);
    free(l);
    return differs;
}

static void split_replays(mgpu_handle *h, int quick)
{
    const int reps = quick ? 1 : 3, replays = quick ? 2 : 4;
    /* GQA 64/8 by the planner (merged in the kernel), MQA 8/1 with 40
     * splits merged in the kernel (8 warps a row, 8 passes), MHA 32/32 of
     * another tile count, d256 GQA with 6 splits and with 4, GQA 64/8 d64
     * of 15 splits by the planner (one merge warp a row on an H100). */
    struct replay_shape shapes[] = {
        {.batch = 1, .sk = 1024, .hq = 64, .hkv = 8, .d = 128},
        {.batch = 1, .sk = 1920, .hq = 64, .hkv = 8, .d = 64},
        {.batch = 1, .sk = 20000, .hq = 8, .hkv = 1, .d = 128, .splits = 40, .merge = 1},
        {.batch = 2, .sk = 3000, .hq = 32, .hkv = 32, .d = 64, .merge = 1},
        {.batch = 3, .sk = 1500, .hq = 16, .hkv = 2, .d = 256, .splits = 6, .merge = 1},
        {.batch = 2, .sk = 4000, .hq = 16, .hkv = 2, .d = 256, .splits = 4, .merge = 1},
    };
    const int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int i = 0; i < n; i++) {
        struct replay_shape *r = &shapes[i];
        r->q_elems = (size_t)r->batch * r->hq * r->d;
        r->n_lse = (size_t)r->batch * r->hq;
        const size_t kv_elems = (size_t)r->batch * r->sk * r->hkv * r->d;
        cudaMalloc(&r->q, r->q_elems * 2);
        cudaMalloc(&r->k, kv_elems * 2);
        cudaMalloc(&r->v, kv_elems * 2);
        cudaMalloc(&r->o, r->q_elems * 2);
        cudaMalloc(&r->lse, r->n_lse * sizeof(float));
        fill_normal(r->q, MGPU_DTYPE_BF16, r->q_elems, seed++, 1.0f);
        fill_normal(r->k, MGPU_DTYPE_BF16, kv_elems, seed++, 1.0f);
        fill_normal(r->v, MGPU_DTYPE_BF16, kv_elems, seed++, 1.0f);
        /* The reference bits: the combine kernel's merge, uncaptured. */
        const int merge = r->merge;
        r->merge = -1;
        CHECK_STATUS(replay_call(h, r), MGPU_STATUS_SUCCESS);
        r->merge = merge;
        cudaDeviceSynchronize();
        r->o_ref = malloc(r->q_elems * 2);
        r->lse_ref = malloc(r->n_lse * sizeof(float));
        cudaMemcpy(r->o_ref, r->o, r->q_elems * 2, cudaMemcpyDeviceToHost);
        cudaMemcpy(r->lse_ref, r->lse, r->n_lse * sizeof(float), cudaMemcpyDeviceToHost);
    }
    /* Calls alternating between the shapes, uncaptured. */
    long differ = 0;
    for (int rep = 0; rep < reps; rep++)
        for (int i = 0; i < n; i++) {
            poison(shapes[i].o, shapes[i].q_elems * 2);
            poison(shapes[i].lse, shapes[i].n_lse * sizeof(float));
            CHECK_STATUS(replay_call(h, &shapes[i]), MGPU_STATUS_SUCCESS);
            CHECK(cudaDeviceSynchronize() == cudaSuccess, "replay call");
            differ += replay_differs(&shapes[i]);
        }
    CHECK(differ == 0, "split calls between other shapes: %ld of %d differ from the combine's bits", differ,
          reps * n);
    /* All shapes in one CUDA graph, replayed. */
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    CHECK_STATUS(mgpu_set_stream(h, stream), MGPU_STATUS_SUCCESS);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin capture");
    for (int i = 0; i < n; i++)
        CHECK_STATUS(replay_call(h, &shapes[i]), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(replay_call(h, &shapes[0]), MGPU_STATUS_SUCCESS); /* shape 0 again after the others */
    CHECK(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "end capture");
    CHECK(graph && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "instantiate");
    differ = 0;
    for (int rep = 0; exec && rep < replays; rep++) {
        for (int i = 0; i < n; i++) {
            poison(shapes[i].o, shapes[i].q_elems * 2);
            poison(shapes[i].lse, shapes[i].n_lse * sizeof(float));
        }
        cudaDeviceSynchronize();
        CHECK(cudaGraphLaunch(exec, stream) == cudaSuccess && cudaStreamSynchronize(stream) == cudaSuccess,
              "graph replay");
        for (int i = 0; i < n; i++)
            differ += replay_differs(&shapes[i]);
    }
    CHECK(differ == 0, "graph replays: %ld of %d outputs differ from the combine's bits", differ, replays * n);
    printf("%s split calls repeated and replayed in a graph: bitwise the combine's results\n",
           differ == 0 ? "PASS" : "FAIL");
    CHECK_STATUS(mgpu_set_stream(h, NULL), MGPU_STATUS_SUCCESS);
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    for (int i = 0; i < n; i++) {
        struct replay_shape *r = &shapes[i];
        cudaFree(r->q);
        cudaFree(r->k);
        cudaFree(r->v);
        cudaFree(r->o);
        cudaFree(r->lse);
        free(r->o_ref);
        free(r->lse_ref);
    }
}

#define CASE(...) run_case(h, (struct dcase){__VA_ARGS__})
#define BF16 MGPU_DTYPE_BF16
#define F16 MGPU_DTYPE_F16

static void quick_cases(mgpu_handle *h)
{
    CASE(.batch = 2, .sq = 1, .sk = 700, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .pack = 1, .splits = 4);
    CASE(.batch = 5, .sq = 1, .sk = 300, .hq = 8, .hkv = 1, .d = 64, .dtype = F16, .ragged = 1, .page_size = 32,
         .splits = 3);
    CASE(.batch = 3, .sq = 2, .sk = 400, .hq = 8, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .page_size = 256,
         .append = 2, .pack = 1, .splits = 2);
    CASE(.batch = 5, .sq = 1, .sk = 300, .hq = 4, .hkv = 4, .d = 256, .dtype = BF16, .ragged = 1, .page_size = 16,
         .splits = 2);
    CASE(.batch = 6, .sq = 1, .sk = 1100, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .ragged = 1, .page_size = 16,
         .splits = 3);
    /* The cp.async gather forced on pages of 64 rows, with queries of 3 rows (causal, several tiles). */
    CASE(.batch = 3, .sq = 3, .sk = 500, .hq = 8, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .ragged = 1,
         .page_size = 64, .gather = 1);
    /* 15 splits of 8 packed rows, 120 + 16 CTAs on an H100: one merge warp
     * a row (two rounds of 8 loads), merged in the 128-row decode entry */
    CASE(.batch = 1, .sq = 1, .sk = 1920, .hq = 64, .hkv = 8, .d = 64, .dtype = BF16);
    /* The 64-row entry's 64-row key blocks: the planner's (more than a wave
     * of CTAs, short caches) and forced on gathered 16-row pages. */
    CASE(.batch = 80, .sq = 1, .sk = 300, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16);
    CASE(.batch = 6, .sq = 1, .sk = 700, .hq = 16, .hkv = 2, .d = 128, .dtype = F16, .ragged = 1, .page_size = 16,
         .short_blocks = 1, .splits = 3);
    CASE(.batch = 4, .sq = 1, .sk = 3000, .hq = 16, .hkv = 2, .d = 64, .dtype = BF16, .ragged = 1, .page_size = 16);
}

static void full_cases(mgpu_handle *h)
{
    static const int dims[] = {64, 128, 256};
    static const int keys[] = {1, 17, 1000, 4100};
    /* Decode: GQA 8:1, MQA, MHA; every head dim; splits and packing forced
     * on and off, and the planner's choice. */
    for (int di = 0; di < 3; di++)
        for (int ki = 0; ki < 4; ki++) {
            const int d = dims[di], sk = keys[ki];
            CASE(.batch = 2, .sq = 1, .sk = sk, .hq = 16, .hkv = 2, .d = d, .dtype = BF16);
            CASE(.batch = 2, .sq = 1, .sk = sk, .hq = 16, .hkv = 2, .d = d, .dtype = BF16, .pack = -1, .splits = 1);
            CASE(.batch = 1, .sq = 1, .sk = sk, .hq = 8, .hkv = 1, .d = d, .dtype = F16, .pack = 1, .splits = 8);
            CASE(.batch = 3, .sq = 1, .sk = sk, .hq = 4, .hkv = 4, .d = d, .dtype = BF16, .splits = 3);
        }
    /* Batch 1 ... 64 at GQA 8:1 (64 query heads over 8). */
    CASE(.batch = 1, .sq = 1, .sk = 4096, .hq = 64, .hkv = 8, .d = 128, .dtype = BF16);
    CASE(.batch = 16, .sq = 1, .sk = 1000, .hq = 64, .hkv = 8, .d = 128, .dtype = BF16);
    CASE(.batch = 64, .sq = 1, .sk = 300, .hq = 64, .hkv = 8, .d = 128, .dtype = BF16);
    CASE(.batch = 64, .sq = 1, .sk = 300, .hq = 64, .hkv = 8, .d = 128, .dtype = BF16, .pack = -1);
    /* Short queries (speculative decode, chunked prefill), causal, windows, soft-cap. */
    CASE(.batch = 4, .sq = 7, .sk = 1000, .hq = 32, .hkv = 4, .d = 128, .dtype = BF16, .causal = 1);
    CASE(.batch = 2, .sq = 16, .sk = 2000, .hq = 8, .hkv = 1, .d = 64, .dtype = F16, .causal = 1, .window = 300,
         .softcap = 20.0f, .pack = 1, .splits = 5);
    CASE(.batch = 2, .sq = 33, .sk = 700, .hq = 12, .hkv = 2, .d = 256, .dtype = BF16, .causal = 1, .splits = 4);
    /* Per-sequence lengths 0, 1, page_size + 1, ...: contiguous and paged
     * (pages of 16 ... 256 rows, shuffled). */
    CASE(.batch = 10, .sq = 1, .sk = 1000, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .ragged = 1);
    CASE(.batch = 10, .sq = 1, .sk = 1000, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .ragged = 1, .splits = 6);
    static const int page_sizes[] = {16, 48, 64, 128, 256};
    for (int i = 0; i < 5; i++) {
        CASE(.batch = 10, .sq = 1, .sk = 1500, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .ragged = 1,
             .page_size = page_sizes[i]);
        CASE(.batch = 5, .sq = 3, .sk = 800, .hq = 8, .hkv = 8, .d = 64, .dtype = F16, .ragged = 1, .causal = 1,
             .page_size = page_sizes[i], .pack = -1, .splits = 3);
        CASE(.batch = 5, .sq = 1, .sk = 700, .hq = 8, .hkv = 1, .d = 256, .dtype = BF16, .ragged = 1,
             .page_size = page_sizes[i], .pack = 1, .splits = 2);
        CASE(.batch = 5, .sq = 1, .sk = 900, .hq = 8, .hkv = 1, .d = 64, .dtype = F16, .ragged = 1,
             .page_size = page_sizes[i], .splits = 2);
        /* Both paged loads at every page size: TMA boxes and the cp.async gather. */
        CASE(.batch = 10, .sq = 1, .sk = 1500, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .ragged = 1,
             .page_size = page_sizes[i], .gather = 1);
        CASE(.batch = 10, .sq = 1, .sk = 1500, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .ragged = 1,
             .page_size = page_sizes[i], .gather = -1);
        CASE(.batch = 5, .sq = 2, .sk = 700, .hq = 8, .hkv = 1, .d = 256, .dtype = BF16, .ragged = 1, .causal = 1,
             .page_size = page_sizes[i], .gather = 1, .splits = 3);
        CASE(.batch = 5, .sq = 1, .sk = 900, .hq = 8, .hkv = 1, .d = 64, .dtype = F16, .ragged = 1,
             .page_size = page_sizes[i], .gather = 1, .splits = 2);
    }
    /* The 64-row entry at head dim 128 with 64-row key blocks: forced (with
     * splits, MHA, MQA, short causal queries, paged by TMA boxes and
     * gathered, ragged lengths) and by the planner (more than a wave of
     * CTAs on short caches: packed GQA and MHA), and forced off there. */
    for (int ki = 0; ki < 4; ki++) {
        const int sk = keys[ki];
        CASE(.batch = 2, .sq = 1, .sk = sk, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .short_blocks = 1);
        CASE(.batch = 1, .sq = 1, .sk = sk, .hq = 8, .hkv = 1, .d = 128, .dtype = F16, .splits = 5,
             .short_blocks = 1);
        CASE(.batch = 3, .sq = 1, .sk = sk, .hq = 4, .hkv = 4, .d = 128, .dtype = BF16, .splits = 3,
             .short_blocks = 1);
    }
    CASE(.batch = 4, .sq = 7, .sk = 1000, .hq = 32, .hkv = 4, .d = 128, .dtype = BF16, .causal = 1, .short_blocks = 1);
    for (int i = 0; i < 5; i++) {
        CASE(.batch = 10, .sq = 1, .sk = 1500, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .ragged = 1,
             .page_size = page_sizes[i], .short_blocks = 1);
        CASE(.batch = 10, .sq = 1, .sk = 1500, .hq = 16, .hkv = 2, .d = 128, .dtype = F16, .ragged = 1,
             .page_size = page_sizes[i], .gather = 1, .short_blocks = 1, .splits = 2);
    }
    CASE(.batch = 80, .sq = 1, .sk = 1000, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16);
    CASE(.batch = 80, .sq = 1, .sk = 1000, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .short_blocks = -1);
    CASE(.batch = 8, .sq = 1, .sk = 1000, .hq = 32, .hkv = 32, .d = 128, .dtype = F16, .ragged = 1);
    CASE(.batch = 80, .sq = 1, .sk = 500, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .ragged = 1, .page_size = 16);
    /* Paged at head dim 64 on few tiles: the 64-row entry split for two CTAs an SM. */
    CASE(.batch = 4, .sq = 1, .sk = 3000, .hq = 16, .hkv = 2, .d = 64, .dtype = BF16, .ragged = 1, .page_size = 16);
    CASE(.batch = 3, .sq = 1, .sk = 5000, .hq = 16, .hkv = 2, .d = 64, .dtype = F16, .ragged = 1, .page_size = 64);
    /* Append then attend: contiguous and paged caches. */
    CASE(.batch = 4, .sq = 1, .sk = 600, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .append = 1);
    CASE(.batch = 5, .sq = 1, .sk = 600, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .ragged = 1,
         .page_size = 64, .append = 1);
    CASE(.batch = 3, .sq = 5, .sk = 900, .hq = 8, .hkv = 2, .d = 64, .dtype = F16, .causal = 1, .page_size = 128,
         .append = 5, .splits = 4);
    /* One merge warp a row of 9 to 16 splits (on an H100: the tiles * splits
     * CTAs and the two-warp combine's exceed the SMs): d64 / d128 / d256
     * (two column passes), f16, 16 splits forced, seqused_k (lengths 0, 1,
     * 17, ...: splits without keys). */
    CASE(.batch = 1, .sq = 1, .sk = 1920, .hq = 64, .hkv = 8, .d = 64, .dtype = F16);
    CASE(.batch = 1, .sq = 1, .sk = 1920, .hq = 64, .hkv = 8, .d = 128, .dtype = BF16);
    CASE(.batch = 1, .sq = 1, .sk = 1200, .hq = 64, .hkv = 8, .d = 256, .dtype = BF16);
    CASE(.batch = 1, .sq = 1, .sk = 4096, .hq = 64, .hkv = 8, .d = 128, .dtype = BF16, .splits = 16);
    CASE(.batch = 4, .sq = 1, .sk = 1920, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .ragged = 1);
    /* A workspace too small for the splits asked for: fewer splits, same result. */
    CASE(.batch = 1, .sq = 1, .sk = 8000, .hq = 64, .hkv = 8, .d = 128, .dtype = BF16, .splits = 32,
         .workspace = 64 * 1024);
    CASE(.batch = 1, .sq = 1, .sk = 8000, .hq = 64, .hkv = 8, .d = 128, .dtype = BF16, .workspace = 256);
}

int main(void)
{
    if (!gpu_available()) {
        printf("no CUDA device: skipped\n");
        return MGPU_TEST_SKIP;
    }
    mgpu_handle *h = NULL;
    CHECK_STATUS(mgpu_create(&h), MGPU_STATUS_SUCCESS);
    if (!h)
        return check_exit();
    const char *gather = getenv("MGPU_FORCE_PAGED_GATHER");
    snprintf(env_gather, sizeof env_gather, "%s", gather ? gather : "");
    const char *short_blocks = getenv("MGPU_ATTENTION_DECODE64_SHORT");
    snprintf(env_short, sizeof env_short, "%s", short_blocks ? short_blocks : "");
    const char *quick = getenv("MGPU_TEST_QUICK");
    const int is_quick = quick && quick[0] == '1';
    if (is_quick)
        quick_cases(h);
    else
        full_cases(h);
    split_replays(h, is_quick);
    mgpu_destroy(h);
    return check_exit();
}
