/*
 * GPU test of mgpu_attention_bwd: the gradients dQ, dK, dV against two
 * references computed here, per (sequence, query head), with the matrix
 * products on the GPU through cuBLAS and the elementwise steps on the CPU:
 *
 *   exact     float64 throughout (cublasDgemm): S, P from Q, K and the mask,
 *             O = P V, D = rowsum(dO * O), dV = P^T dO, dP = dO V^T,
 *             dS = P * (dP - D) (times the soft-cap's derivative), dQ =
 *             scale dS K, dK = scale dS^T Q; GQA sums over the group;
 *   low       the same math as a kernel in the input precision would do it:
 *             products in fp32 (cublasSgemm) of 16-bit values, P and dS
 *             rounded to the input dtype before they enter a product, dP and
 *             D (from the rounded O) in fp32, results rounded to the dtype.
 *
 * FlashAttention's rule decides: for each of dQ, dK, dV, mgpu's max abs
 * error against the exact reference is at most 2x the low reference's max
 * abs error, plus a floor: one rounding of that gradient's largest value,
 * but at least 2^-16 of the case's largest gradient (gradients that vanish
 * in exact math, such as dK with a single key, leave only fp32 noise). No output may be NaN where the reference is
 * finite, and the padding of strided outputs must keep its poison.
 *
 * Each case fills Q, K, V and dO with random normal data, runs
 * mgpu_attention_fwd for O and the LSE, poisons dQ, dK, dV with NaN, runs
 * the backward pass and compares; deterministic cases run it twice more
 * (re-poisoned) and compare the three outputs bitwise. Further checks: a
 * workspace one byte short gives INSUFFICIENT_WORKSPACE and writes nothing;
 * bad descriptors give their statuses on the device too.
 *
 * Output: one table row per case (the errors are mgpu's / the low
 * reference's max abs error per gradient), the last line the counts.
 * MGPU_TEST_QUICK=1 runs a few small cases (for compute-sanitizer).
 * Exits 77 without a device.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "attention_test_util.h"
#include "gpu_util.h"

#define POISON_16 0xffffu
#define ERR_FACTOR 2.0

static cublasHandle_t ref_blas;
static int cases_run, cases_failed, cases_skipped;

struct tcase {
    int batch, sq, sk, hq, hkv, d;
    mgpu_dtype dtype;
    int causal;
    int windowed, wl, wr; /* windowed 0: both sides unbounded (-1) */
    float softcap;
    float scale; /* 0: the default 1 / sqrt(d) */
    int varlen;
    enum layout layout;
    int det;
};

struct tensor {
    void *dev;
    uint16_t *host;          /* a copy of the whole allocation */
    mgpu_attention_strides st;
    size_t elems;
};

static uint64_t seed_counter = 1;

static float round_to(mgpu_dtype t, float x)
{
    uint16_t h;
    host_store_elem(&h, t, x);
    return host_load_elem(&h, t);
}

static void tensor_alloc(struct tensor *t, enum layout l, int64_t nbatch, int64_t rows, int64_t heads, int64_t d)
{
    t->st = strides_for(l, rows, heads, d);
    t->elems = span_of(&t->st, nbatch, rows, heads, d);
    if (rows == 0)
        t->elems = 1;
    cudaMalloc(&t->dev, t->elems * 2);
    t->host = malloc(t->elems * 2);
}

static void tensor_fill(struct tensor *t, mgpu_dtype dt)
{
    fill_normal(t->dev, dt, t->elems, seed_counter++, 1.0f);
    cudaMemcpy(t->host, t->dev, t->elems * 2, cudaMemcpyDeviceToHost);
}

static void tensor_poison(struct tensor *t)
{
    poison(t->dev, t->elems * 2);
}

static void tensor_download(struct tensor *t)
{
    cudaMemcpy(t->host, t->dev, t->elems * 2, cudaMemcpyDeviceToHost);
}

static void tensor_free(struct tensor *t)
{
    cudaFree(t->dev);
    free(t->host);
}

static size_t at(const struct tensor *t, int64_t b, int64_t s, int64_t h)
{
    return (size_t)(b * t->st.batch + s * t->st.seq + h * t->st.head);
}

/* ---------------------------------------------------------------- reference GEMMs */

/* C (m x n) = op(A) op(B), all row-major on the host: op(A) is m x k (A is
 * k x m when ta), op(B) is k x n (B is n x k when tb). Run on the GPU in
 * float64, or in fp32 (the operands converted to float first) when fp32. */
static void ref_gemm(int ta, int tb, int m, int n, int k, const double *A, const double *B, double *C, int fp32)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        memset(C, 0, sizeof(double) * (size_t)m * n);
        return;
    }
    const size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n, esz = fp32 ? 4 : 8;
    void *da = NULL, *db = NULL, *dc = NULL, *host = malloc((na > nb ? (na > nc ? na : nc) : (nb > nc ? nb : nc)) * esz);
    cudaMalloc(&da, na * esz);
    cudaMalloc(&db, nb * esz);
    cudaMalloc(&dc, nc * esz);
    const double *src[2] = {A, B};
    void *dst[2] = {da, db};
    const size_t cnt[2] = {na, nb};
    for (int i = 0; i < 2; i++) {
        if (fp32) {
            for (size_t e = 0; e < cnt[i]; e++)
                ((float *)host)[e] = (float)src[i][e];
            cudaMemcpy(dst[i], host, cnt[i] * 4, cudaMemcpyHostToDevice);
        } else {
            cudaMemcpy(dst[i], src[i], cnt[i] * 8, cudaMemcpyHostToDevice);
        }
    }
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. */
    const cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N, oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ldb = tb ? k : n, lda = ta ? m : k;
    cublasStatus_t st;
    if (fp32) {
        const float one = 1.0f, zero = 0.0f;
        st = cublasSgemm(ref_blas, ob, oa, n, m, k, &one, db, ldb, da, lda, &zero, dc, n);
        cudaMemcpy(host, dc, nc * 4, cudaMemcpyDeviceToHost);
        for (size_t e = 0; e < nc; e++)
            C[e] = ((float *)host)[e];
    } else {
        const double one = 1.0, zero = 0.0;
        st = cublasDgemm(ref_blas, ob, oa, n, m, k, &one, db, ldb, da, lda, &zero, dc, n);
        cudaMemcpy(C, dc, nc * 8, cudaMemcpyDeviceToHost);
    }
    CHECK(st == CUBLAS_STATUS_SUCCESS, "reference cuBLAS GEMM: %d", (int)st);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    free(host);
}

/* ---------------------------------------------------------------- one case */

struct grad_err {
    double err, low_err, max_ref, rel; /* max abs errors, max |ref|, ||out - ref|| / ||ref|| */
    double num, den;
    long nan;
};

static void err_add(struct grad_err *e, double got, double ref, double low)
{
    if (!isfinite(got)) {
        e->nan++;
        return;
    }
    e->err = fmax(e->err, fabs(got - ref));
    e->low_err = fmax(e->low_err, fabs(low - ref));
    e->max_ref = fmax(e->max_ref, fabs(ref));
    e->num += (got - ref) * (got - ref);
    e->den += ref * ref;
}

/* `scale`: the largest reference value of the case's three gradients. */
static int err_ok(struct grad_err *e, mgpu_dtype dt, double scale)
{
    e->rel = e->den > 0 ? sqrt(e->num / e->den) : sqrt(e->num);
    /* One rounding of the gradient's largest value; and since a gradient
     * that cancels to ~0 in exact math (one key: dS = P (dP - D) = 0) keeps
     * only the fp32 rounding of the sums that cancelled, never below 2^-16
     * (2^-24 over 256 terms) of the case's largest gradient. */
    const double floor = fmax(dtype_eps(dt) * e->max_ref, ldexp(scale, -16));
    return e->nan == 0 && e->err <= ERR_FACTOR * e->low_err + floor;
}

/* Reference gradients of one (sequence, query head), added into the
 * exact (double) and low (float, rounded at the end by the caller) arrays. */
struct head_ref {
    int Sq, Sk, d;
    const double *q, *k, *v, *dout; /* Sq x d, Sk x d, Sk x d, Sq x d, row-major */
    double *dq, *dk, *dv;           /* exact: Sq x d (written), Sk x d (added) */
    double *dq_low, *dk_low, *dv_low;
};

static void head_reference(const struct tcase *c, struct head_ref *r, double scale)
{
    const int Sq = r->Sq, Sk = r->Sk, d = r->d, diag = Sk - Sq;
    const int wr = c->causal ? 0 : c->wr;
    const size_t ss = (size_t)Sq * Sk;
    double *s = malloc(sizeof(double) * ss), *p = malloc(sizeof(double) * ss), *dp = malloc(sizeof(double) * ss);
    double *ds = malloc(sizeof(double) * ss), *p_low = malloc(sizeof(double) * ss), *ds_low = malloc(sizeof(double) * ss);
    double *dp_low = malloc(sizeof(double) * ss);
    double *o = malloc(sizeof(double) * (size_t)Sq * d), *dsum = malloc(sizeof(double) * (Sq ? Sq : 1));
    double *dsum_low = malloc(sizeof(double) * (Sq ? Sq : 1)), *deriv = malloc(sizeof(double) * ss);
    double *tmp = malloc(sizeof(double) * (size_t)(Sq > Sk ? Sq : Sk) * d);
    ref_gemm(0, 1, Sq, Sk, d, r->q, r->k, s, 0); /* Q K^T */
    for (int i = 0; i < Sq; i++) {
        double mx = -INFINITY;
        for (int j = 0; j < Sk; j++) {
            const size_t e = (size_t)i * Sk + j;
            deriv[e] = 1.0;
            if ((wr >= 0 && j > i + diag + wr) || (c->wl >= 0 && j < i + diag - c->wl)) {
                s[e] = -INFINITY;
                continue;
            }
            double sv = s[e] * scale;
            if (c->softcap > 0) {
                const double t = tanh(sv / c->softcap);
                sv = c->softcap * t;
                deriv[e] = 1.0 - t * t;
            }
            s[e] = sv;
            mx = fmax(mx, sv);
        }
        double sum = 0;
        for (int j = 0; j < Sk; j++)
            sum += s[(size_t)i * Sk + j] == -INFINITY ? 0.0 : exp(s[(size_t)i * Sk + j] - mx);
        const double lse = sum > 0 ? mx + log(sum) : INFINITY;
        for (int j = 0; j < Sk; j++) {
            const size_t e = (size_t)i * Sk + j;
            p[e] = s[e] == -INFINITY ? 0.0 : exp(s[e] - lse);
            p_low[e] = round_to(c->dtype, (float)p[e]);
        }
    }
    ref_gemm(0, 0, Sq, d, Sk, p, r->v, o, 0); /* O = P V */
    for (int i = 0; i < Sq; i++) {
        double a = 0;
        float b = 0; /* low: fp32 sum over the 16-bit O the forward stores */
        for (int x = 0; x < d; x++) {
            const double g = r->dout[(size_t)i * d + x], ox = o[(size_t)i * d + x];
            a += g * ox;
            b = fmaf((float)g, round_to(c->dtype, (float)ox), b);
        }
        dsum[i] = a;
        dsum_low[i] = b;
    }
    ref_gemm(0, 1, Sq, Sk, d, r->dout, r->v, dp, 0);     /* dP = dO V^T */
    ref_gemm(0, 1, Sq, Sk, d, r->dout, r->v, dp_low, 1); /* the same in fp32 */
    for (size_t e = 0; e < ss; e++) {
        const int i = (int)(e / Sk);
        ds[e] = p[e] * (dp[e] - dsum[i]) * deriv[e];
        /* the kernel's dS: fp32 P, dP and D, rounded once before the products */
        ds_low[e] = round_to(c->dtype, (float)p[e] * ((float)dp_low[e] - (float)dsum_low[i]) * (float)deriv[e]);
    }
    /* exact */
    ref_gemm(0, 0, Sq, d, Sk, ds, r->k, r->dq, 0);
    for (size_t e = 0; e < (size_t)Sq * d; e++)
        r->dq[e] *= scale;
    ref_gemm(1, 0, Sk, d, Sq, ds, r->q, tmp, 0);
    for (size_t e = 0; e < (size_t)Sk * d; e++)
        r->dk[e] += scale * tmp[e];
    ref_gemm(1, 0, Sk, d, Sq, p, r->dout, tmp, 0);
    for (size_t e = 0; e < (size_t)Sk * d; e++)
        r->dv[e] += tmp[e];
    /* low precision: fp32 products of 16-bit values */
    ref_gemm(0, 0, Sq, d, Sk, ds_low, r->k, r->dq_low, 1);
    for (size_t e = 0; e < (size_t)Sq * d; e++)
        r->dq_low[e] = (float)(r->dq_low[e] * (float)scale);
    ref_gemm(1, 0, Sk, d, Sq, ds_low, r->q, tmp, 1);
    for (size_t e = 0; e < (size_t)Sk * d; e++)
        r->dk_low[e] = (float)(r->dk_low[e] + (float)(tmp[e] * (float)scale));
    ref_gemm(1, 0, Sk, d, Sq, p_low, r->dout, tmp, 1);
    for (size_t e = 0; e < (size_t)Sk * d; e++)
        r->dv_low[e] = (float)(r->dv_low[e] + tmp[e]);
    free(s);
    free(p);
    free(dp);
    free(ds);
    free(p_low);
    free(ds_low);
    free(dp_low);
    free(o);
    free(dsum);
    free(dsum_low);
    free(deriv);
    free(tmp);
}

/* Copies rows [first, first + n) of head h of sequence slot b into a dense
 * n x d double array. */
static void gather_rows(const struct tensor *t, mgpu_dtype dt, int64_t b, int64_t first, int n, int h, int d,
                        double *out)
{
    for (int i = 0; i < n; i++)
        for (int x = 0; x < d; x++)
            out[(size_t)i * d + x] = host_load_elem(t->host + at(t, b, first + i, h) + x, dt);
}

static void fwd_desc_of(const struct tcase *c, mgpu_attention_bwd_desc *bd, mgpu_attention_fwd_desc *fd)
{
    mgpu_attention_fwd_desc f = MGPU_ATTENTION_FWD_DESC_INIT;
    f.batch = bd->batch;
    f.seqlen_q = bd->seqlen_q;
    f.seqlen_k = bd->seqlen_k;
    f.heads_q = bd->heads_q;
    f.heads_kv = bd->heads_kv;
    f.head_dim = bd->head_dim;
    f.dtype = bd->dtype;
    f.softmax_scale = bd->softmax_scale;
    f.causal = bd->causal;
    f.window_left = bd->window_left;
    f.window_right = bd->window_right;
    f.softcap = bd->softcap;
    f.cu_seqlens_q = bd->cu_seqlens_q;
    f.cu_seqlens_k = bd->cu_seqlens_k;
    f.total_q = bd->total_q;
    f.total_k = bd->total_k;
    f.q_strides = bd->q_strides;
    f.k_strides = bd->k_strides;
    f.v_strides = bd->v_strides;
    f.o_strides = bd->o_strides;
    (void)c;
    *fd = f;
}

/* Counts elements of `t` outside the tensor proper (`written` 0) that lost the poison. */
static long clobbered(const struct tensor *t, const unsigned char *written)
{
    long n = 0;
    for (size_t e = 0; e < t->elems; e++)
        n += !written[e] && t->host[e] != POISON_16;
    return n;
}

static int run_bwd(mgpu_handle *h, const mgpu_attention_bwd_desc *bd, struct tensor *q, struct tensor *k,
                   struct tensor *v, struct tensor *o, struct tensor *dout, const float *lse, struct tensor *dq,
                   struct tensor *dk, struct tensor *dv)
{
    tensor_poison(dq);
    tensor_poison(dk);
    tensor_poison(dv);
    mgpu_status s = mgpu_attention_bwd(h, bd, q->dev, k->dev, v->dev, o->dev, dout->dev, lse, dq->dev, dk->dev,
                                       dv->dev);
    CHECK_STATUS(s, MGPU_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "device error after mgpu_attention_bwd");
    tensor_download(dq);
    tensor_download(dk);
    tensor_download(dv);
    return s == MGPU_STATUS_SUCCESS;
}

/* 1 (and a SKIP row) when this build has no backward kernel for the case's
 * dtype and head dim: counted apart, never as run. */
static int not_built(mgpu_handle *h, const struct tcase *c)
{
    mgpu_attention_bwd_desc d = MGPU_ATTENTION_BWD_DESC_INIT;
    d.batch = d.seqlen_q = d.seqlen_k = d.heads_q = d.heads_kv = 1;
    d.head_dim = c->d;
    d.dtype = c->dtype;
    size_t bytes;
    if (mgpu_attention_bwd_workspace_size(h, &d, &bytes) != MGPU_STATUS_NOT_SUPPORTED ||
        !strstr(mgpu_last_error_message(), "no attention backward variant"))
        return 0;
    printf("SKIP %-4s %3d: %s\n", c->dtype == MGPU_DTYPE_BF16 ? "bf16" : "f16", c->d, mgpu_last_error_message());
    cases_skipped++;
    return 1;
}

static void run_case(mgpu_handle *h, struct tcase c)
{
    const mgpu_dtype dt = c.dtype;
    if (not_built(h, &c))
        return;
    if (!c.windowed)
        c.wl = c.wr = -1;
    int *lq = malloc(sizeof(int) * c.batch), *lk = malloc(sizeof(int) * c.batch);
    int32_t *cq = malloc(sizeof(int32_t) * (c.batch + 1)), *ck = malloc(sizeof(int32_t) * (c.batch + 1));
    uint64_t rs = (uint64_t)(c.sq * 131 + c.sk * 7 + c.d);
    cq[0] = ck[0] = 0;
    for (int b = 0; b < c.batch; b++) { /* varlen: ragged, the last the longest, sequence 1 without queries */
        const int last = b == c.batch - 1;
        lq[b] = !c.varlen || last ? c.sq : (b == 1 ? 0 : pick(&rs, 1, c.sq));
        lk[b] = !c.varlen || last ? c.sk : pick(&rs, 1, c.sk);
        cq[b + 1] = cq[b] + lq[b];
        ck[b + 1] = ck[b] + lk[b];
    }
    const int64_t total_q = c.varlen ? cq[c.batch] : c.sq, total_k = c.varlen ? ck[c.batch] : c.sk;
    const int64_t nb = c.varlen ? 1 : c.batch;

    struct tensor q, k, v, o, dout, dq, dk, dv;
    tensor_alloc(&q, c.layout, nb, total_q, c.hq, c.d);
    tensor_alloc(&k, c.layout, nb, total_k, c.hkv, c.d);
    tensor_alloc(&v, c.layout, nb, total_k, c.hkv, c.d);
    tensor_alloc(&o, c.layout, nb, total_q, c.hq, c.d);
    tensor_alloc(&dout, c.layout == DENSE ? BHSD : c.layout, nb, total_q, c.hq, c.d);
    tensor_alloc(&dq, c.layout == DENSE ? PADDED : c.layout, nb, total_q, c.hq, c.d);
    tensor_alloc(&dk, c.layout, nb, total_k, c.hkv, c.d);
    tensor_alloc(&dv, c.layout == BHSD ? DENSE : PADDED, nb, total_k, c.hkv, c.d);
    tensor_fill(&q, dt);
    tensor_fill(&k, dt);
    tensor_fill(&v, dt);
    tensor_fill(&dout, dt);
    tensor_poison(&o);
    const size_t n_lse = (size_t)c.hq * (c.varlen ? total_q : (int64_t)c.batch * c.sq);
    float *lse = NULL;
    cudaMalloc((void **)&lse, n_lse * sizeof(float) + 4);
    poison(lse, n_lse * sizeof(float));
    int32_t *cq_dev = NULL, *ck_dev = NULL;
    if (c.varlen)
        upload_seqlens(cq, ck, c.batch, &cq_dev, &ck_dev);

    mgpu_attention_bwd_desc bd = MGPU_ATTENTION_BWD_DESC_INIT;
    bd.batch = c.batch;
    bd.seqlen_q = c.sq;
    bd.seqlen_k = c.sk;
    bd.heads_q = c.hq;
    bd.heads_kv = c.hkv;
    bd.head_dim = c.d;
    bd.dtype = dt;
    bd.softmax_scale = c.scale;
    bd.causal = c.causal;
    bd.window_left = c.wl;
    bd.window_right = c.wr;
    bd.softcap = c.softcap;
    if (c.varlen) {
        bd.cu_seqlens_q = cq_dev;
        bd.cu_seqlens_k = ck_dev;
        bd.total_q = total_q;
        bd.total_k = total_k;
    }
    if (c.layout != DENSE) { /* DENSE: zero strides for the inputs, explicit ones for the outputs */
        bd.q_strides = q.st;
        bd.k_strides = k.st;
        bd.v_strides = v.st;
        bd.o_strides = o.st;
    }
    bd.do_strides = dout.st;
    bd.dq_strides = dq.st;
    bd.dk_strides = dk.st;
    bd.dv_strides = dv.st;
    bd.deterministic = c.det;
    mgpu_attention_fwd_desc fd;
    fwd_desc_of(&c, &bd, &fd);

    size_t ws = 0;
    CHECK_STATUS(mgpu_attention_bwd_workspace_size(h, &bd, &ws), MGPU_STATUS_SUCCESS);
    mgpu_status s = mgpu_attention_fwd(h, &fd, q.dev, k.dev, v.dev, o.dev, lse);
    CHECK_STATUS(s, MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_reserve_workspace(h, ws), MGPU_STATUS_SUCCESS);
    cudaDeviceSynchronize();
    tensor_download(&o);
    int ok = run_bwd(h, &bd, &q, &k, &v, &o, &dout, lse, &dq, &dk, &dv);

    /* Deterministic: two more runs, bitwise equal to the first. */
    long det_diff = 0;
    if (c.det && ok) {
        struct tensor *outs[3] = {&dq, &dk, &dv};
        uint16_t *first[3];
        for (int i = 0; i < 3; i++) {
            first[i] = malloc(outs[i]->elems * 2);
            memcpy(first[i], outs[i]->host, outs[i]->elems * 2);
        }
        for (int rep = 0; rep < 2; rep++) {
            ok &= run_bwd(h, &bd, &q, &k, &v, &o, &dout, lse, &dq, &dk, &dv);
            for (int i = 0; i < 3; i++)
                for (size_t e = 0; e < outs[i]->elems; e++)
                    det_diff += outs[i]->host[e] != first[i][e];
        }
        for (int i = 0; i < 3; i++)
            free(first[i]);
    }

    /* References, per sequence and query head. */
    const float scale = c.scale > 0 ? c.scale : 1.0f / sqrtf((float)c.d);
    const int group = c.hq / c.hkv;
    struct grad_err e_dq = {0}, e_dk = {0}, e_dv = {0};
    unsigned char *w_dq = calloc(dq.elems, 1), *w_dk = calloc(dk.elems, 1), *w_dv = calloc(dv.elems, 1);
    const int max_sq = c.varlen ? (int)total_q : c.sq, max_sk = c.varlen ? (int)total_k : c.sk;
    const size_t qsz = (size_t)(max_sq ? max_sq : 1) * c.d, ksz = (size_t)(max_sk ? max_sk : 1) * c.d;
    double *hq_ = malloc(sizeof(double) * qsz), *hdo = malloc(sizeof(double) * qsz);
    double *hk = malloc(sizeof(double) * ksz), *hv = malloc(sizeof(double) * ksz);
    double *rdq = malloc(sizeof(double) * qsz), *rdq_low = malloc(sizeof(double) * qsz);
    double *rdk = malloc(sizeof(double) * ksz), *rdv = malloc(sizeof(double) * ksz);
    double *rdk_low = malloc(sizeof(double) * ksz), *rdv_low = malloc(sizeof(double) * ksz);
    for (int b = 0; b < c.batch; b++) {
        const int Sq = lq[b], Sk = lk[b];
        const int64_t qo = c.varlen ? cq[b] : 0, ko = c.varlen ? ck[b] : 0, bb = c.varlen ? 0 : b;
        for (int hk_ = 0; hk_ < c.hkv; hk_++) {
            memset(rdk, 0, sizeof(double) * ksz);
            memset(rdv, 0, sizeof(double) * ksz);
            memset(rdk_low, 0, sizeof(double) * ksz);
            memset(rdv_low, 0, sizeof(double) * ksz);
            gather_rows(&k, dt, bb, ko, Sk, hk_, c.d, hk);
            gather_rows(&v, dt, bb, ko, Sk, hk_, c.d, hv);
            for (int g = 0; g < group; g++) {
                const int hh = hk_ * group + g;
                gather_rows(&q, dt, bb, qo, Sq, hh, c.d, hq_);
                gather_rows(&dout, dt, bb, qo, Sq, hh, c.d, hdo);
                struct head_ref r = {Sq, Sk, c.d, hq_, hk, hv, hdo, rdq, rdk, rdv, rdq_low, rdk_low, rdv_low};
                head_reference(&c, &r, scale);
                for (int i = 0; i < Sq; i++)
                    for (int x = 0; x < c.d; x++) {
                        const size_t e = at(&dq, bb, qo + i, hh) + x;
                        const size_t re = (size_t)i * c.d + x;
                        err_add(&e_dq, host_load_elem(dq.host + e, dt), rdq[re], round_to(dt, (float)rdq_low[re]));
                        w_dq[e] = 1;
                    }
            }
            for (int j = 0; j < Sk; j++)
                for (int x = 0; x < c.d; x++) {
                    const size_t re = (size_t)j * c.d + x, ek = at(&dk, bb, ko + j, hk_) + x,
                                 ev = at(&dv, bb, ko + j, hk_) + x;
                    err_add(&e_dk, host_load_elem(dk.host + ek, dt), rdk[re], round_to(dt, (float)rdk_low[re]));
                    err_add(&e_dv, host_load_elem(dv.host + ev, dt), rdv[re], round_to(dt, (float)rdv_low[re]));
                    w_dk[ek] = 1;
                    w_dv[ev] = 1;
                }
        }
    }
    const long clob = clobbered(&dq, w_dq) + clobbered(&dk, w_dk) + clobbered(&dv, w_dv);
    const double grad_scale = fmax(e_dq.max_ref, fmax(e_dk.max_ref, e_dv.max_ref));
    const int grads_ok = err_ok(&e_dq, dt, grad_scale) & err_ok(&e_dk, dt, grad_scale) & err_ok(&e_dv, dt, grad_scale);
    const int pass = ok && grads_ok && clob == 0 && det_diff == 0;
    char win[24];
    snprintf(win, sizeof win, "%d,%d", c.wl, c.wr);
    printf("%-4s %-4s %3d %2d %5d %5d %2d/%-2d %d %-9s %4g %-6s %s %d | %.1e/%.1e %.1e/%.1e %.1e/%.1e | %.1e %.1e %.1e "
           "| %ld %ld %ld\n",
           pass ? "PASS" : "FAIL", dt == MGPU_DTYPE_BF16 ? "bf16" : "f16", c.d, c.batch, c.sq, c.sk, c.hq, c.hkv,
           c.causal, win, (double)c.softcap, layout_name(c.layout),
           c.varlen ? "V" : "-", c.det, e_dq.err, e_dq.low_err, e_dk.err, e_dk.low_err, e_dv.err, e_dv.low_err,
           e_dq.rel, e_dk.rel, e_dv.rel, e_dq.nan + e_dk.nan + e_dv.nan, clob, det_diff);
    CHECK(pass, "case above failed");
    cases_run++;
    cases_failed += !pass;
    free(hq_);
    free(hdo);
    free(hk);
    free(hv);
    free(rdq);
    free(rdq_low);
    free(rdk);
    free(rdv);
    free(rdk_low);
    free(rdv_low);
    free(w_dq);
    free(w_dk);
    free(w_dv);
    free(lq);
    free(lk);
    free(cq);
    free(ck);
    struct tensor *all[8] = {&q, &k, &v, &o, &dout, &dq, &dk, &dv};
    for (int i = 0; i < 8; i++)
        tensor_free(all[i]);
    cudaFree(lse);
    cudaFree(cq_dev);
    cudaFree(ck_dev);
}

/* ---------------------------------------------------------------- statuses */

/* A workspace one 256-byte step short of the need: INSUFFICIENT_WORKSPACE,
 * and the outputs keep their poison. Then bad descriptors. */
static void check_refusals(mgpu_handle *h)
{
    const int B = 1, S = 200, H = 2, D = 128;
    const size_t n = (size_t)B * S * H * D;
    void *buf[8];
    for (int i = 0; i < 8; i++) {
        cudaMalloc(&buf[i], n * 2);
        if (i < 5)
            fill_normal(buf[i], MGPU_DTYPE_BF16, n, seed_counter++, 1.0f);
        else
            poison(buf[i], n * 2);
    }
    float *lse = NULL;
    cudaMalloc((void **)&lse, (size_t)B * H * S * 4);
    mgpu_attention_fwd_desc fd = MGPU_ATTENTION_FWD_DESC_INIT;
    fd.batch = B;
    fd.seqlen_q = fd.seqlen_k = S;
    fd.heads_q = fd.heads_kv = H;
    fd.head_dim = D;
    CHECK_STATUS(mgpu_attention_fwd(h, &fd, buf[0], buf[1], buf[2], buf[3], lse), MGPU_STATUS_SUCCESS);
    mgpu_attention_bwd_desc bd = MGPU_ATTENTION_BWD_DESC_INIT;
    bd.batch = B;
    bd.seqlen_q = bd.seqlen_k = S;
    bd.heads_q = bd.heads_kv = H;
    bd.head_dim = D;
    size_t need = 0;
    CHECK_STATUS(mgpu_attention_bwd_workspace_size(h, &bd, &need), MGPU_STATUS_SUCCESS);
    void *ws = NULL;
    cudaMalloc(&ws, need);
    CHECK_STATUS(mgpu_set_workspace(h, ws, need - 256), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_attention_bwd(h, &bd, buf[0], buf[1], buf[2], buf[3], buf[4], lse, buf[5], buf[6], buf[7]),
                 MGPU_STATUS_INSUFFICIENT_WORKSPACE);
    CHECK(strstr(mgpu_last_error_message(), "bytes"), "message names the bytes: %s", mgpu_last_error_message());
    cudaDeviceSynchronize();
    uint16_t *host = malloc(n * 2);
    long touched = 0;
    for (int i = 5; i < 8; i++) {
        cudaMemcpy(host, buf[i], n * 2, cudaMemcpyDeviceToHost);
        for (size_t e = 0; e < n; e++)
            touched += host[e] != POISON_16;
    }
    CHECK(touched == 0, "INSUFFICIENT_WORKSPACE wrote %ld output elements", touched);
    /* exactly the need is enough */
    CHECK_STATUS(mgpu_set_workspace(h, ws, need), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_attention_bwd(h, &bd, buf[0], buf[1], buf[2], buf[3], buf[4], lse, buf[5], buf[6], buf[7]),
                 MGPU_STATUS_SUCCESS);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "device error");
    CHECK_STATUS(mgpu_set_workspace(h, NULL, 0), MGPU_STATUS_SUCCESS);

    /* Bad descriptors: their statuses, nothing queued. */
    mgpu_attention_bwd_desc bad = bd;
    bad.head_dim = 80;
    CHECK_STATUS(mgpu_attention_bwd(h, &bad, buf[0], buf[1], buf[2], buf[3], buf[4], lse, buf[5], buf[6], buf[7]),
                 MGPU_STATUS_NOT_SUPPORTED);
    bad = bd;
    bad.deterministic = 2;
    CHECK_STATUS(mgpu_attention_bwd(h, &bad, buf[0], buf[1], buf[2], buf[3], buf[4], lse, buf[5], buf[6], buf[7]),
                 MGPU_STATUS_INVALID_VALUE);
    CHECK_STATUS(mgpu_attention_bwd(h, &bd, buf[0], buf[1], buf[2], buf[3], NULL, lse, buf[5], buf[6], buf[7]),
                 MGPU_STATUS_NULL_POINTER);
    CHECK_STATUS(mgpu_attention_bwd(h, &bd, buf[0], buf[1], buf[2], buf[3], buf[4], lse, (char *)buf[5] + 2, buf[6],
                                    buf[7]),
                 MGPU_STATUS_NOT_SUPPORTED);
    CHECK_STATUS(mgpu_attention_bwd(h, NULL, buf[0], buf[1], buf[2], buf[3], buf[4], lse, buf[5], buf[6], buf[7]),
                 MGPU_STATUS_NULL_POINTER);
    bad = bd;
    bad.struct_size = sizeof(mgpu_attention_fwd_desc);
    CHECK_STATUS(mgpu_attention_bwd(h, &bad, buf[0], buf[1], buf[2], buf[3], buf[4], lse, buf[5], buf[6], buf[7]),
                 MGPU_STATUS_INVALID_VALUE);
    CHECK_STATUS(mgpu_attention_bwd(NULL, &bd, buf[0], buf[1], buf[2], buf[3], buf[4], lse, buf[5], buf[6], buf[7]),
                 MGPU_STATUS_INVALID_HANDLE);
    CHECK_STATUS(mgpu_attention_bwd_workspace_size(h, &bd, NULL), MGPU_STATUS_NULL_POINTER);
    bad = bd;
    bad.batch = 0; /* nothing to do */
    CHECK_STATUS(mgpu_attention_bwd_workspace_size(h, &bad, &need), MGPU_STATUS_SUCCESS);
    CHECK(need == 0, "empty call needs no workspace (%zu)", need);
    CHECK_STATUS(mgpu_attention_bwd(h, &bad, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                 MGPU_STATUS_SUCCESS);
    printf("refusals: insufficient workspace wrote %ld elements; bad descriptors checked\n", touched);
    free(host);
    for (int i = 0; i < 8; i++)
        cudaFree(buf[i]);
    cudaFree(lse);
    cudaFree(ws);
}

/* ---------------------------------------------------------------- cases */

#define CASE(...) run_case(h, (struct tcase){__VA_ARGS__})
#define WIN(l, r) .windowed = 1, .wl = (l), .wr = (r)
#define BF16 MGPU_DTYPE_BF16
#define F16 MGPU_DTYPE_F16

static void quick_cases(mgpu_handle *h)
{
    CASE(.batch = 2, .sq = 129, .sk = 200, .hq = 4, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .det = 1);
    CASE(.batch = 3, .sq = 100, .sk = 90, .hq = 2, .hkv = 2, .d = 128, .dtype = F16, .varlen = 1,
         .layout = PADDED);
    CASE(.batch = 1, .sq = 129, .sk = 129, .hq = 2, .hkv = 1, .d = 64, .dtype = BF16, .causal = 1);
    CASE(.batch = 3, .sq = 130, .sk = 150, .hq = 2, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, .varlen = 1,
         .det = 1);
    CASE(.batch = 1, .sq = 65, .sk = 200, .hq = 2, .hkv = 2, .d = 256, .dtype = BF16, WIN(50, 10),
         .softcap = 5.0f, .layout = PADDED, .det = 1);
    CASE(.batch = 1, .sq = 150, .sk = 40, .hq = 4, .hkv = 1, .d = 96, .dtype = BF16, .causal = 1);
}

static void full_cases(mgpu_handle *h)
{
    static const int dims[] = {64, 96, 128, 192, 256};
    static const mgpu_dtype dtypes[] = {BF16, F16};
    /* Every variant, both modes, causal and not, with a ragged last block. */
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 5; i++)
            for (int det = 0; det < 2; det++)
                for (int causal = 0; causal < 2; causal++)
                    CASE(.batch = 2, .sq = 129, .sk = 129, .hq = 2, .hkv = 1, .d = dims[i], .dtype = dtypes[t],
                         .causal = causal, .det = det);
    /* Edge sequence lengths. */
    static const int lens[] = {1, 17, 127, 129, 1000};
    for (int i = 0; i < 5; i++)
        for (int causal = 0; causal < 2; causal++)
            CASE(.batch = 1, .sq = lens[i], .sk = lens[i], .hq = 2, .hkv = 2, .d = 128, .dtype = BF16,
                 .causal = causal, .det = i % 2);
    /* seqlen_q != seqlen_k both ways; causal with sq > sk has rows that see no key. */
    static const int qk[][2] = {{17, 300}, {300, 17}, {129, 1000}, {1000, 129}, {1, 513}, {200, 1}};
    for (int i = 0; i < 6; i++)
        for (int causal = 0; causal < 2; causal++)
            CASE(.batch = 2, .sq = qk[i][0], .sk = qk[i][1], .hq = 2, .hkv = 1, .d = i % 2 ? 64 : 192,
                 .dtype = i % 2 ? F16 : BF16, .causal = causal, .det = causal);
    /* GQA 8:1 and MQA, deterministic and not (the ordered dK / dV adds). */
    for (int det = 0; det < 2; det++) {
        CASE(.batch = 2, .sq = 257, .sk = 257, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .det = det);
        CASE(.batch = 1, .sq = 200, .sk = 390, .hq = 6, .hkv = 1, .d = 64, .dtype = F16, .causal = 1, .det = det);
        CASE(.batch = 2, .sq = 300, .sk = 300, .hq = 8, .hkv = 1, .d = 256, .dtype = BF16, .causal = 1, .det = det);
    }
    /* Windows (rows that see no key: left window with sq > sk), soft-cap, scale. */
    CASE(.batch = 1, .sq = 700, .sk = 700, .hq = 2, .hkv = 1, .d = 128, .dtype = BF16, WIN(100, 50));
    CASE(.batch = 1, .sq = 700, .sk = 700, .hq = 2, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, WIN(200, -1),
         .det = 1);
    CASE(.batch = 1, .sq = 300, .sk = 600, .hq = 2, .hkv = 1, .d = 64, .dtype = BF16, WIN(64, 0));
    CASE(.batch = 1, .sq = 600, .sk = 200, .hq = 2, .hkv = 2, .d = 96, .dtype = BF16, WIN(30, 0));
    CASE(.batch = 1, .sq = 500, .sk = 500, .hq = 2, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1,
         .softcap = 30.0f, .det = 1);
    CASE(.batch = 1, .sq = 257, .sk = 257, .hq = 2, .hkv = 2, .d = 256, .dtype = F16, .softcap = 5.0f);
    CASE(.batch = 2, .sq = 129, .sk = 129, .hq = 2, .hkv = 2, .d = 64, .dtype = F16, .causal = 1, .scale = 0.02f,
         .softcap = 10.0f);
    CASE(.batch = 1, .sq = 200, .sk = 300, .hq = 2, .hkv = 1, .d = 192, .dtype = BF16, .scale = 0.3f);
    /* Variable length (ragged, sequence 1 without queries: its dK, dV are 0). */
    CASE(.batch = 4, .sq = 300, .sk = 300, .hq = 4, .hkv = 2, .d = 128, .dtype = BF16, .varlen = 1);
    CASE(.batch = 4, .sq = 300, .sk = 400, .hq = 4, .hkv = 2, .d = 128, .dtype = F16, .causal = 1, .varlen = 1,
         .det = 1);
    CASE(.batch = 5, .sq = 129, .sk = 129, .hq = 2, .hkv = 1, .d = 64, .dtype = BF16, .causal = 1, .varlen = 1,
         .layout = PADDED);
    CASE(.batch = 3, .sq = 200, .sk = 150, .hq = 2, .hkv = 1, .d = 256, .dtype = BF16, .varlen = 1, .det = 1);
    CASE(.batch = 3, .sq = 100, .sk = 100, .hq = 3, .hkv = 3, .d = 192, .dtype = F16, .causal = 1, .varlen = 1,
         WIN(20, -1));
    /* Layouts. */
    CASE(.batch = 2, .sq = 300, .sk = 300, .hq = 4, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .layout = BHSD);
    CASE(.batch = 2, .sq = 150, .sk = 170, .hq = 4, .hkv = 1, .d = 96, .dtype = BF16, .causal = 1, .layout = PADDED,
         .det = 1);
    /* More work than SMs (several waves), both modes. */
    for (int det = 0; det < 2; det++)
        CASE(.batch = 4, .sq = 1024, .sk = 1024, .hq = 8, .hkv = 8, .d = 128, .dtype = BF16, .causal = 1, .det = det);
}

int main(void)
{
    if (!gpu_available()) {
        printf("no CUDA device: skipped\n");
        return MGPU_TEST_SKIP;
    }
    mgpu_handle *h = NULL;
    CHECK_STATUS(mgpu_create(&h), MGPU_STATUS_SUCCESS);
    CHECK(cublasCreate(&ref_blas) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
    if (!h || !ref_blas)
        return check_exit();
    printf("errors: max abs, mgpu / same-precision reference, both against float64; pass: mgpu <= %g x low + "
           "max(eps * max|ref|, 2^-16 * max|any gradient ref|)\n",
           ERR_FACTOR);
    printf("res  type   d  B    Sq    Sk Hq/Hkv c win      cap layout v det | dQ err/low dK err/low dV err/low | "
           "rel dQ dK dV | nan clobbered det-diff\n");
    const char *quick = getenv("MGPU_TEST_QUICK");
    if (quick && quick[0] == '1')
        quick_cases(h);
    else
        full_cases(h);
    check_refusals(h);
    cublasDestroy(ref_blas);
    mgpu_destroy(h);
    const int checks_failed = check_failures;
    printf("attention_bwd: %d cases passed, %d failed, %d skipped (no kernel in this build); %d checks, %d failed\n",
           cases_run - cases_failed, cases_failed, cases_skipped, check_count, checks_failed);
    return checks_failed ? 1 : 0;
}
