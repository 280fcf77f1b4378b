/*
 * GPU test of mgpu_attention_fwd against a float32 reference: on the CPU for
 * small heads; for large ones (Sq * Sk * d over REF_GPU_WORK) the two matrix
 * products run on the GPU through cuBLAS in fp32 (cublasSgemm on the decoded
 * inputs) and the masking and softmax on the CPU, in the same loop.
 *
 * Each case fills Q, K and V (in one of several memory layouts: dense,
 * (batch, head, seq, dim) through strides, padded strides, one fused QKV
 * buffer, packed varlen) with random normal data, poisons O and LSE with NaN,
 * runs the call and compares every O element and LSE value with the
 * reference; O's padding between rows must still hold the poison. It prints
 * the relative error ||O - ref|| / ||ref||, the max abs error and the max LSE
 * error per case; a case passes when the relative error is <= 1e-2, the LSE
 * error <= 1e-2 and nothing is left NaN. Some cases force GQA packing and
 * key splits (MGPU_FORCE_PACK_GQA / MGPU_FORCE_NUM_SPLITS through force.h)
 * together with masks, soft-cap, varlen and layouts. MGPU_TEST_QUICK=1 runs
 * a few small cases (for compute-sanitizer). Exits 77 without a device.
 *
 * With the argument "fp8" it runs the fp8 forward's cases instead (qkv_fp8:
 * e4m3 Q, K, V drawn as N(0, 2^2) rounded to e4m3, descale factors per
 * tensor, per KV head, per sequence and KV head, or none). The reference is
 * the same, on the dequantised inputs: the fp8 values decoded exactly to
 * fp32, scores times softmax_scale * q_descale * k_descale, O times
 * v_descale. Tolerance (MAX_REL_ERR_FP8): the kernel rounds each
 * probability to e4m3 before P V, a relative error delta_j of at most 2^-4
 * (3 mantissa bits, round to nearest; the row maximum itself is exact),
 * uniform, so rms 2^-4 / sqrt(3) = 0.036. The error of O is
 * sum_j delta_j p_j v_j / l, whose mean square over random V is
 * (2^-8 / 3) sum_j p_j^2 v_j^2 / l^2 against the reference's
 * sum_j p_j^2 v_j^2 / l^2: an expected relative error of 0.036 whatever the
 * softmax's shape (less when a few exactly-rounded maxima dominate). The
 * other terms are far smaller (scores: products of e4m3 values are exact,
 * sums in the tensor cores' accumulators; O's 16-bit rounding 2^-9).
 * MAX_REL_ERR_FP8 = 0.05 leaves 1.4x over that expectation; a wrong key
 * order, descale or mask gives errors near 1. The LSE comes from the fp32
 * probabilities, but its scores from fp8 wgmma, whose tensor cores add the
 * (exact) e4m3 products with fewer bits than fp32 (test_gemm_fp8_gpu.c,
 * docs/decisions/006): measured on H100 2.3e-2 at |LSE| ~ 50 (relative
 * 5e-4, ~2^-11). So fp8 cases allow MAX_LSE_ERR + LSE_REL_FP8 * |LSE|,
 * LSE_REL_FP8 = 2^-9.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "attention_test_util.h"
#include "force.h"
#include "gpu_util.h"
#include "test_gemm_ref.h"

#define MAX_REL_ERR 1e-2
#define MAX_REL_ERR_FP8 0.05 /* see above */
#define FP8_INPUT_SCALE 2.0f /* inputs N(0, 2^2) before rounding to e4m3 */
#define LSE_REL_FP8 (1.0 / 512) /* see above */
#define FP8_SMALL_WORKSPACE 4096                /* holds no V^T: the fp8 kernel transposes V itself */
#define FP8_DEFAULT_WORKSPACE ((size_t)32 << 20) /* the handle's at mgpu_create */
#define MAX_LSE_ERR 1e-2
#define POISON_16 0xffffu
#define REF_GPU_WORK ((int64_t)1 << 27) /* Sq * Sk * d of a head above which the reference uses cuBLAS */

static cublasHandle_t ref_blas;

struct tcase {
    int batch, sq, sk, hq, hkv, d;
    mgpu_dtype dtype;
    int causal, wl, wr;
    float softcap;
    float scale; /* softmax_scale; 0: the default 1 / sqrt(d) */
    int varlen;
    enum layout layout;
    int no_lse;
    int pack;   /* MGPU_FORCE_PACK_GQA for the call: 1 on, -1 off, 0 the planner's choice */
    int splits; /* MGPU_FORCE_NUM_SPLITS for the call; 0 the planner's choice */
    int fp8;    /* e4m3 inputs with descales: FP8_* below; 0: 16-bit inputs */
    int vt;     /* fp8: 1 forces the V^T-from-workspace kernel (if the workspace holds V^T), -1 the kernel
                   that transposes V itself, 0 the planner's choice */
    int wide;   /* MGPU_ATTENTION_WIDE for the call: 1 on, -1 off, 0 the planner's choice */
};

/* Descale arrays of fp8 cases: index (sequence b, KV head h) at b * batch + h * head strides. */
enum { FP8_PER_TENSOR = 1, FP8_PER_HEAD, FP8_PER_SEQ_HEAD, FP8_NO_DESCALE };

struct tensor {
    void *dev;
    float *val;              /* the whole allocation (or the fused buffer), decoded */
    int64_t offset;          /* elements from the allocation's start */
    mgpu_attention_strides st;
    size_t elems;            /* of the allocation */
};

static uint64_t seed_counter = 1;

/* Row (b, s, h) of a tensor: head_dim contiguous values. */
static const float *row_of(const struct tensor *t, int64_t b, int64_t s, int64_t h)
{
    return t->val + t->offset + b * t->st.batch + s * t->st.seq + h * t->st.head;
}

static void tensor_alloc(struct tensor *t, size_t elems)
{
    t->elems = elems;
    t->offset = 0;
    cudaMalloc(&t->dev, elems * 2);
    t->val = malloc(elems * sizeof(float));
}

static void tensor_fill(struct tensor *t, mgpu_dtype dt)
{
    uint16_t *raw = malloc(t->elems * 2);
    fill_normal(t->dev, dt, t->elems, seed_counter++, 1.0f);
    cudaMemcpy(raw, t->dev, t->elems * 2, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < t->elems; i++)
        t->val[i] = host_load_elem(&raw[i], dt);
    free(raw);
}

/* e4m3 values (N(0, FP8_INPUT_SCALE^2) rounded), their exact floats in val. */
static void tensor_fill_fp8(struct tensor *t)
{
    uint8_t *raw = malloc(t->elems + 1);
    ref_fill_normal(raw, t->val, MGPU_DTYPE_E4M3, t->elems, seed_counter++, FP8_INPUT_SCALE);
    cudaMemcpy(t->dev, raw, t->elems, cudaMemcpyHostToDevice);
    free(raw);
}

static void tensor_free(struct tensor *t)
{
    cudaFree(t->dev);
    free(t->val);
}

/* A tensor's decoded values on the GPU in fp32, for the cuBLAS reference. */
static float *upload_f32(const struct tensor *t)
{
    float *dev = NULL;
    cudaMalloc((void **)&dev, t->elems * sizeof(float));
    cudaMemcpy(dev, t->val, t->elems * sizeof(float), cudaMemcpyHostToDevice);
    return dev;
}

/* Element (row r, column x) of a (rows x d) head matrix starting at `first`
 * with rows `ld` apart is first[r * ld + x]: column-major d x rows with
 * leading dimension ld. dots[i * sk + j] = <Q_i, K_j> for the head's sq
 * query rows at q_first and sk key rows at k_first (fp32, on the GPU). */
static void gpu_dots(const float *q_first, int64_t q_ld, const float *k_first, int64_t k_ld, int sq, int sk, int d,
                     float *dots)
{
    float *s_dev = NULL;
    cudaMalloc((void **)&s_dev, (size_t)sq * sk * sizeof(float));
    const float one = 1.0f, zero = 0.0f;
    /* S (sk x sq, column-major) = K^T (sk x d) * Q (d x sq) */
    cublasStatus_t st = cublasSgemm(ref_blas, CUBLAS_OP_T, CUBLAS_OP_N, sk, sq, d, &one, k_first, (int)k_ld, q_first,
                                    (int)q_ld, &zero, s_dev, sk);
    CHECK(st == CUBLAS_STATUS_SUCCESS, "reference cublasSgemm (Q K^T): %d", (int)st);
    cudaMemcpy(dots, s_dev, (size_t)sq * sk * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(s_dev);
}

/* out[i * d + x] = sum_j p[i * sk + j] * V_j[x] (fp32, on the GPU). */
static void gpu_pv(const float *p, const float *v_first, int64_t v_ld, int sq, int sk, int d, float *out)
{
    float *p_dev = NULL, *o_dev = NULL;
    cudaMalloc((void **)&p_dev, (size_t)sq * sk * sizeof(float));
    cudaMalloc((void **)&o_dev, (size_t)sq * d * sizeof(float));
    cudaMemcpy(p_dev, p, (size_t)sq * sk * sizeof(float), cudaMemcpyHostToDevice);
    const float one = 1.0f, zero = 0.0f;
    /* O (d x sq, column-major) = V (d x sk) * P (sk x sq) */
    cublasStatus_t st = cublasSgemm(ref_blas, CUBLAS_OP_N, CUBLAS_OP_N, d, sq, sk, &one, v_first, (int)v_ld, p_dev, sk,
                                    &zero, o_dev, d);
    CHECK(st == CUBLAS_STATUS_SUCCESS, "reference cublasSgemm (P V): %d", (int)st);
    cudaMemcpy(out, o_dev, (size_t)sq * d * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(p_dev);
    cudaFree(o_dev);
}

static void run_case(mgpu_handle *h, struct tcase c)
{
    const mgpu_dtype dt = c.dtype;
    /* Sequence lengths and offsets. Varlen: ragged, the last one the longest;
     * one empty query sequence when the batch allows. */
    int *lq = malloc(sizeof(int) * c.batch), *lk = malloc(sizeof(int) * c.batch);
    int32_t *cq = malloc(sizeof(int32_t) * (c.batch + 1)), *ck = malloc(sizeof(int32_t) * (c.batch + 1));
    uint64_t rs = (uint64_t)(c.sq * 131 + c.sk * 7 + c.d);
    cq[0] = ck[0] = 0;
    for (int b = 0; b < c.batch; b++) {
        const int last = b == c.batch - 1;
        lq[b] = !c.varlen || last ? c.sq : (b == 1 ? 0 : pick(&rs, 1, c.sq));
        lk[b] = !c.varlen || last ? c.sk : c.layout == FUSED ? lq[b] : pick(&rs, 1, c.sk);
        cq[b + 1] = cq[b] + lq[b];
        ck[b + 1] = ck[b] + lk[b];
    }
    const int64_t total_q = c.varlen ? cq[c.batch] : c.sq, total_k = c.varlen ? ck[c.batch] : c.sk;
    const int64_t nb = c.varlen ? 1 : c.batch;

    struct tensor q, k, v, o, fused;
    memset(&fused, 0, sizeof fused);
    if (c.layout == FUSED) { /* requires hq == hkv and, Q, K and V sharing rows, total_k == total_q */
        CHECK(c.hq == c.hkv && total_k == total_q, "packed QKV case with hq %d, hkv %d, %lld queries, %lld keys", c.hq,
              c.hkv, (long long)total_q, (long long)total_k);
        mgpu_attention_strides st = strides_for(DENSE, total_q, 3 * c.hq, c.d);
        tensor_alloc(&fused, span_of(&st, nb, total_q, 3 * c.hq, c.d));
        if (c.fp8)
            tensor_fill_fp8(&fused);
        else
            tensor_fill(&fused, dt);
        struct tensor *parts[3] = {&q, &k, &v};
        for (int i = 0; i < 3; i++) {
            *parts[i] = fused;
            parts[i]->offset = (int64_t)i * c.hq * c.d;
            parts[i]->st = st;
        }
        q.st.batch = k.st.batch = v.st.batch = c.varlen ? 0 : st.batch;
    } else {
        q.st = strides_for(c.layout, total_q, c.hq, c.d);
        k.st = strides_for(c.layout, total_k, c.hkv, c.d);
        v.st = k.st;
        tensor_alloc(&q, span_of(&q.st, nb, total_q, c.hq, c.d));
        tensor_alloc(&k, span_of(&k.st, nb, total_k, c.hkv, c.d));
        tensor_alloc(&v, span_of(&v.st, nb, total_k, c.hkv, c.d));
        struct tensor *in[3] = {&q, &k, &v};
        for (int i = 0; i < 3; i++) {
            if (c.fp8)
                tensor_fill_fp8(in[i]);
            else
                tensor_fill(in[i], dt);
        }
    }
    /* fp8: descale factors in [0.25, 0.75) (3 arrays of batch x hkv) and their strides. */
    float *descale_host = NULL, *descale_dev = NULL;
    int64_t ds_batch = 0, ds_head = 0;
    if (c.fp8) {
        const size_t n_ds = (size_t)c.batch * c.hkv;
        descale_host = malloc(3 * n_ds * sizeof(float));
        uint64_t ds = seed_counter++;
        for (size_t i = 0; i < 3 * n_ds; i++)
            descale_host[i] = 0.25f + (float)pick(&ds, 0, 999) / 2000.0f;
        cudaMalloc((void **)&descale_dev, 3 * n_ds * sizeof(float));
        cudaMemcpy(descale_dev, descale_host, 3 * n_ds * sizeof(float), cudaMemcpyHostToDevice);
        ds_head = c.fp8 == FP8_PER_HEAD || c.fp8 == FP8_PER_SEQ_HEAD ? 1 : 0;
        ds_batch = c.fp8 == FP8_PER_SEQ_HEAD ? c.hkv : 0;
    }
    /* The factor of tensor `which` (0 q, 1 k, 2 v) for (b, hk); 1 without arrays. */
#define DESCALE(which, b, hk)                                                                                   \
    (c.fp8 && c.fp8 != FP8_NO_DESCALE                                                                       \
         ? descale_host[(size_t)(which) * c.batch * c.hkv + (size_t)((b) * ds_batch + (hk) * ds_head)]       \
         : 1.0f)
    o.st = strides_for(c.layout == FUSED ? PADDED : c.layout, total_q, c.hq, c.d);
    tensor_alloc(&o, span_of(&o.st, nb, total_q, c.hq, c.d));
    poison(o.dev, o.elems * 2);
    const size_t n_lse = (size_t)c.hq * (c.varlen ? total_q : (int64_t)c.batch * c.sq);
    float *lse_dev = NULL;
    cudaMalloc((void **)&lse_dev, n_lse * sizeof(float) + 1);
    poison(lse_dev, n_lse * sizeof(float));
    int32_t *cq_dev = NULL, *ck_dev = NULL;
    if (c.varlen)
        upload_seqlens(cq, ck, c.batch, &cq_dev, &ck_dev);

    mgpu_attention_fwd_desc desc = MGPU_ATTENTION_FWD_DESC_INIT;
    desc.batch = c.batch;
    desc.seqlen_q = c.sq;
    desc.seqlen_k = c.sk;
    desc.heads_q = c.hq;
    desc.heads_kv = c.hkv;
    desc.head_dim = c.d;
    desc.dtype = dt;
    desc.causal = c.causal;
    desc.window_left = c.wl;
    desc.window_right = c.wr;
    desc.softcap = c.softcap;
    desc.softmax_scale = c.scale;
    if (c.varlen) {
        desc.cu_seqlens_q = cq_dev;
        desc.cu_seqlens_k = ck_dev;
        desc.total_q = total_q;
        desc.total_k = total_k;
    }
    if (c.layout != DENSE) {
        desc.q_strides = q.st;
        desc.k_strides = k.st;
        desc.v_strides = v.st;
    }
    desc.o_strides = o.st; /* O is always given explicitly; DENSE gives dense values */
    if (c.fp8) {
        desc.qkv_fp8 = 1;
        if (c.fp8 != FP8_NO_DESCALE) {
            const size_t n_ds = (size_t)c.batch * c.hkv;
            desc.q_descale = descale_dev;
            desc.k_descale = descale_dev + n_ds;
            desc.v_descale = descale_dev + 2 * n_ds;
            desc.descale_batch_stride = ds_batch;
            desc.descale_head_stride = ds_head;
        }
    }
    const int esz = c.fp8 ? 1 : 2;
    if (c.pack)
        force_setenv("MGPU_FORCE_PACK_GQA", c.pack > 0 ? "1" : "0");
    if (c.splits) {
        char n[16];
        snprintf(n, sizeof n, "%d", c.splits);
        force_setenv("MGPU_FORCE_NUM_SPLITS", n);
    }
    if (c.wide)
        force_setenv("MGPU_ATTENTION_WIDE", c.wide > 0 ? "1" : "0");
    if (c.fp8 && c.vt) {
        char name[80];
        snprintf(name, sizeof name, "mgpu_attention_fwd_fp8_%ssm90_e4m3_%s_d128", c.vt > 0 ? "vt_" : "",
                 dt == MGPU_DTYPE_BF16 ? "bf16" : "f16");
        force_setenv("MGPU_FORCE_VARIANT", name);
    }
    mgpu_status s = mgpu_attention_fwd(h, &desc, (const char *)q.dev + q.offset * esz,
                                       (const char *)k.dev + k.offset * esz, (const char *)v.dev + v.offset * esz,
                                       o.dev, c.no_lse ? NULL : lse_dev);
    force_unsetenv("MGPU_FORCE_PACK_GQA");
    force_unsetenv("MGPU_FORCE_NUM_SPLITS");
    force_unsetenv("MGPU_FORCE_VARIANT");
    force_unsetenv("MGPU_ATTENTION_WIDE");
    cudaError_t ce = cudaDeviceSynchronize();
    CHECK(s == MGPU_STATUS_SUCCESS && ce == cudaSuccess, "call: %s (%s), cuda: %s", mgpu_status_string(s),
          mgpu_last_error_message(), cudaGetErrorString(ce));

    uint16_t *oh = malloc(o.elems * 2);
    float *lh = malloc(n_lse * sizeof(float) + 1);
    cudaMemcpy(oh, o.dev, o.elems * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(lh, lse_dev, n_lse * sizeof(float), cudaMemcpyDeviceToHost);
    unsigned char *written = calloc(o.elems, 1);

    const float scale = c.scale > 0 ? c.scale : 1.0f / sqrtf((float)c.d);
    const int group = c.hq / c.hkv;
    const int wr = c.causal ? 0 : c.wr; /* causal: no key right of the diagonal */
    /* Per head: raw dots, then probabilities p (unnormalized, 0 where masked), then p V. */
    const int max_sq = c.varlen ? (int)total_q : c.sq, max_sk = c.varlen ? (int)total_k : c.sk;
    float *dots = malloc(sizeof(float) * (size_t)max_sq * max_sk), *p = malloc(sizeof(float) * (size_t)max_sq * max_sk);
    float *pv = malloc(sizeof(float) * (size_t)max_sq * c.d), *rmax = malloc(sizeof(float) * max_sq);
    double *rsum = malloc(sizeof(double) * max_sq);
    float *q_gpu = NULL, *k_gpu = NULL, *v_gpu = NULL;
    double err2 = 0, ref2 = 0, max_abs = 0, lse_max = 0, lse_excess = 0;
    long bad = 0, lse_bad = 0, gpu_heads = 0;
    for (int b = 0; b < c.batch; b++) {
        const int Sq = lq[b], Sk = lk[b], diag = Sk - Sq;
        const int64_t qo = c.varlen ? cq[b] : 0, ko = c.varlen ? ck[b] : 0, bb = c.varlen ? 0 : b;
        const int on_gpu = (int64_t)Sq * Sk * c.d > REF_GPU_WORK;
        if (on_gpu && !q_gpu) {
            q_gpu = upload_f32(&q);
            k_gpu = c.layout == FUSED ? q_gpu : upload_f32(&k);
            v_gpu = c.layout == FUSED ? q_gpu : upload_f32(&v);
        }
        for (int hh = 0; hh < c.hq; hh++) {
            const int hk = hh / group;
            const float qk_factor = DESCALE(0, b, hk) * DESCALE(1, b, hk), v_factor = DESCALE(2, b, hk);
            if (on_gpu && Sq > 0 && Sk > 0) {
                gpu_dots(q_gpu + (row_of(&q, bb, qo, hh) - q.val), q.st.seq, k_gpu + (row_of(&k, bb, ko, hk) - k.val),
                         k.st.seq, Sq, Sk, c.d, dots);
                gpu_heads++;
            }
            for (int i = 0; i < Sq; i++) {
                const float *qr = row_of(&q, bb, qo + i, hh);
                float *pr = p + (size_t)i * Sk;
                float mx = -INFINITY;
                for (int j = 0; j < Sk; j++) {
                    pr[j] = -INFINITY;
                    if ((wr >= 0 && j > i + diag + wr) || (c.wl >= 0 && j < i + diag - c.wl))
                        continue;
                    float dot = 0;
                    if (on_gpu) {
                        dot = dots[(size_t)i * Sk + j];
                    } else {
                        const float *kr = row_of(&k, bb, ko + j, hk);
                        for (int x = 0; x < c.d; x++)
                            dot += qr[x] * kr[x];
                    }
                    float sv = dot * scale * qk_factor;
                    if (c.softcap > 0)
                        sv = c.softcap * tanhf(sv / c.softcap);
                    pr[j] = sv;
                    mx = fmaxf(mx, sv);
                }
                double sum = 0;
                for (int j = 0; j < Sk; j++) {
                    pr[j] = pr[j] == -INFINITY ? 0.0f : expf(pr[j] - mx);
                    sum += pr[j];
                }
                rmax[i] = mx;
                rsum[i] = sum;
            }
            if (on_gpu && Sq > 0 && Sk > 0) {
                gpu_pv(p, v_gpu + (row_of(&v, bb, ko, hk) - v.val), v.st.seq, Sq, Sk, c.d, pv);
            } else {
                for (int i = 0; i < Sq; i++) {
                    float *acc = pv + (size_t)i * c.d;
                    for (int x = 0; x < c.d; x++)
                        acc[x] = 0;
                    for (int j = 0; j < Sk; j++) {
                        const float pj = p[(size_t)i * Sk + j];
                        if (pj == 0.0f)
                            continue;
                        const float *vr = row_of(&v, bb, ko + j, hk);
                        for (int x = 0; x < c.d; x++)
                            acc[x] += pj * vr[x];
                    }
                }
            }
            for (int i = 0; i < Sq; i++) {
                const double sum = rsum[i];
                const float mx = rmax[i];
                const int64_t row = bb * o.st.batch + (qo + i) * o.st.seq + hh * o.st.head;
                for (int x = 0; x < c.d; x++) {
                    const double ref = sum > 0 ? pv[(size_t)i * c.d + x] / sum * v_factor : 0.0;
                    const float got = host_load_elem(&oh[row + x], dt);
                    written[row + x] = 1;
                    if (!isfinite(got)) {
                        bad++;
                        continue;
                    }
                    err2 += (got - ref) * (got - ref);
                    ref2 += ref * ref;
                    max_abs = fmax(max_abs, fabs(got - ref));
                }
                if (c.no_lse)
                    continue;
                const double lref = sum > 0 ? mx + log(sum) : INFINITY;
                const size_t li = c.varlen ? (size_t)hh * total_q + qo + i : ((size_t)b * c.hq + hh) * c.sq + i;
                const float lg = lh[li];
                if (isinf(lref))
                    lse_bad += !(isinf(lg) && lg > 0);
                else if (!isfinite(lg))
                    lse_bad++;
                else {
                    lse_max = fmax(lse_max, fabs(lg - lref));
                    lse_excess = fmax(lse_excess, fabs(lg - lref) - (c.fp8 ? LSE_REL_FP8 * fabs(lref) : 0.0));
                }
            }
        }
    }
    long clobbered = 0; /* O elements outside the tensor must keep the poison */
    for (size_t e = 0; e < o.elems; e++)
        clobbered += !written[e] && oh[e] != POISON_16;
    const double rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
    const int pass = s == MGPU_STATUS_SUCCESS && bad == 0 && lse_bad == 0 && clobbered == 0 &&
                     rel <= (c.fp8 ? MAX_REL_ERR_FP8 : MAX_REL_ERR) && lse_excess <= MAX_LSE_ERR;
    static const char *const fp8_modes[] = {"", " e4m3 descale/tensor", " e4m3 descale/head",
                                            " e4m3 descale/seq,head", " e4m3 no-descale"};
    printf("%s%s %-4s d=%-3d B=%d Sq=%d Sk=%d Hq=%d Hkv=%d causal=%d win=(%d,%d) cap=%g scale=%g %s%s%s%s pack=%d "
           "splits=%d vt=%d: rel=%.2e maxabs=%.2e lse=%.2e nan=%ld lse_bad=%ld clobbered=%ld\n",
           pass ? "PASS" : "FAIL", fp8_modes[c.fp8], dt == MGPU_DTYPE_BF16 ? "bf16" : "f16", c.d, c.batch, c.sq, c.sk, c.hq, c.hkv,
           c.causal, c.wl, c.wr, (double)c.softcap, (double)scale, layout_name(c.layout), c.varlen ? " varlen" : "",
           c.no_lse ? " no-lse" : "", gpu_heads ? " (cuBLAS reference)" : "", c.pack, c.splits, c.vt, rel, max_abs, lse_max,
           bad, lse_bad, clobbered);
    CHECK(pass, "case above failed");

    free(dots);
    free(p);
    free(pv);
    free(rmax);
    free(rsum);
    if (q_gpu) {
        cudaFree(q_gpu);
        if (c.layout != FUSED) {
            cudaFree(k_gpu);
            cudaFree(v_gpu);
        }
    }
    free(oh);
    free(lh);
    free(written);
    free(lq);
    free(lk);
    free(cq);
    free(ck);
    if (c.layout == FUSED) {
        tensor_free(&fused);
    } else {
        tensor_free(&q);
        tensor_free(&k);
        tensor_free(&v);
    }
    tensor_free(&o);
    free(descale_host);
    cudaFree(descale_dev);
#undef DESCALE
    cudaFree(lse_dev);
    cudaFree(cq_dev);
    cudaFree(ck_dev);
}

#define CASE(...) run_case(h, (struct tcase){__VA_ARGS__})
#define BF16 MGPU_DTYPE_BF16
#define F16 MGPU_DTYPE_F16

static void quick_cases(mgpu_handle *h)
{
    CASE(.batch = 1, .sq = 129, .sk = 129, .hq = 2, .hkv = 1, .d = 64, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1);
    CASE(.batch = 3, .sq = 130, .sk = 150, .hq = 2, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1);
    CASE(.batch = 1, .sq = 65, .sk = 200, .hq = 1, .hkv = 1, .d = 256, .dtype = BF16, .wl = 50, .wr = 10,
         .softcap = 5.0f, .layout = PADDED);
    /* Persistent grid: 300 tiles on at most 132 SMs, so CTAs take up to 3
     * tiles and reuse a Q buffer. */
    CASE(.batch = 2, .sq = 520, .sk = 300, .hq = 30, .hkv = 6, .d = 64, .dtype = BF16, .wl = -1, .wr = -1);
    /* Causal on the persistent grid: tiles taken at run time from the
     * handle's counter, heavy first (twice: the counter is back at 0). */
    for (int rep = 0; rep < 2; rep++)
        CASE(.batch = 3, .sq = 700, .sk = 650, .hq = 16, .hkv = 4, .d = 128, .dtype = F16, .causal = 1, .wl = -1,
             .wr = -1);
    /* Head dim 64 on 192-row tiles (the wide entry, three consumer
     * warpgroups): 144 tiles on the persistent grid, then 192 causal ones
     * taken at run time. */
    CASE(.batch = 2, .sq = 1100, .sk = 1100, .hq = 12, .hkv = 12, .d = 64, .dtype = F16, .wl = -1, .wr = -1);
    CASE(.batch = 3, .sq = 1500, .sk = 1500, .hq = 8, .hkv = 8, .d = 64, .dtype = BF16, .causal = 1, .wl = -1,
         .wr = -1);
}

/* GQA packing and key splits forced on every feature of the call: masks,
 * soft-cap, varlen (ragged, an empty query sequence), layouts, no LSE,
 * head dims, group sizes that do not divide the query block. */
static void pack_split_cases(mgpu_handle *h)
{
    CASE(.batch = 3, .sq = 5, .sk = 700, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .pack = 1, .splits = 3);
    CASE(.batch = 2, .sq = 40, .sk = 333, .hq = 12, .hkv = 2, .d = 64, .dtype = F16, .wl = 60, .wr = 5,
         .softcap = 10.0f, .pack = 1, .splits = 4);
    CASE(.batch = 4, .sq = 70, .sk = 300, .hq = 8, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .wl = -1,
         .wr = -1, .varlen = 1, .pack = 1, .splits = 2);
    CASE(.batch = 2, .sq = 3, .sk = 500, .hq = 6, .hkv = 6, .d = 256, .dtype = BF16, .wl = -1, .wr = -1,
         .layout = PADDED, .pack = -1, .splits = 5);
    CASE(.batch = 2, .sq = 9, .sk = 400, .hq = 24, .hkv = 1, .d = 96, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .layout = BHSD, .pack = 1, .splits = 1);
    CASE(.batch = 1, .sq = 1, .sk = 2000, .hq = 8, .hkv = 1, .d = 192, .dtype = BF16, .wl = -1, .wr = -1,
         .no_lse = 1, .pack = 1, .splits = 16);
    CASE(.batch = 3, .sq = 130, .sk = 130, .hq = 3, .hkv = 3, .d = 64, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1, .layout = FUSED, .splits = 3);
    CASE(.batch = 1, .sq = 200, .sk = 1000, .hq = 4, .hkv = 2, .d = 128, .dtype = F16, .wl = 100, .wr = 20,
         .pack = 1, .splits = 7);
    /* More splits than key blocks (capped), and the planner's own choice. */
    CASE(.batch = 1, .sq = 1, .sk = 200, .hq = 32, .hkv = 8, .d = 128, .dtype = BF16, .wl = -1, .wr = -1,
         .splits = 64);
    CASE(.batch = 2, .sq = 1, .sk = 5000, .hq = 32, .hkv = 4, .d = 128, .dtype = BF16, .causal = 1, .wl = -1,
         .wr = -1);
}

/* The wide entry forced (MGPU_ATTENTION_WIDE=1) on calls the planner
 * leaves to the 128-row kernel or that no other case gives it; each has
 * enough 192-row tiles (at least 144) that the planner splits no keys, so
 * the forcing holds. */
static void wide_cases(mgpu_handle *h)
{
    /* 1000 queries: the last tile's 40 queries all in consumer 0's rows,
     * consumers 1 and 2 hold only padding (144 tiles, persistent grid). */
    CASE(.batch = 2, .sq = 1000, .sk = 1000, .hq = 12, .hkv = 12, .d = 64, .dtype = BF16, .wl = -1, .wr = -1,
         .wide = 1);
    /* Varlen (ragged, an empty query sequence): tiles counted on the longest. */
    CASE(.batch = 4, .sq = 700, .sk = 800, .hq = 16, .hkv = 8, .d = 64, .dtype = F16, .causal = 1, .wl = -1,
         .wr = -1, .varlen = 1, .wide = 1);
    CASE(.batch = 4, .sq = 700, .sk = 800, .hq = 16, .hkv = 16, .d = 64, .dtype = BF16, .wl = -1, .wr = -1,
         .varlen = 1, .wide = 1);
    /* Sliding window with soft-cap, and causal with a left window. */
    CASE(.batch = 2, .sq = 1100, .sk = 1100, .hq = 12, .hkv = 4, .d = 64, .dtype = BF16, .wl = 300, .wr = 40,
         .softcap = 20.0f, .wide = 1);
    CASE(.batch = 2, .sq = 1100, .sk = 1300, .hq = 12, .hkv = 12, .d = 64, .dtype = F16, .causal = 1, .wl = 256,
         .wr = -1, .wide = 1);
    /* 4608 keys: 36 key blocks a tile, above the persistent grid's 32, so
     * one CTA per tile (144 tiles). */
    CASE(.batch = 1, .sq = 4608, .sk = 4608, .hq = 6, .hkv = 6, .d = 64, .dtype = BF16, .wl = -1, .wr = -1,
         .wide = 1);
}

static void full_cases(mgpu_handle *h)
{
    pack_split_cases(h);
    wide_cases(h);
    static const int dims[] = {64, 96, 128, 192, 256};
    static const mgpu_dtype dtypes[] = {BF16, F16};
    /* Every variant, causal and not, with a ragged last block. */
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 5; i++)
            for (int causal = 0; causal < 2; causal++)
                CASE(.batch = 2, .sq = 129, .sk = 129, .hq = 2, .hkv = 1, .d = dims[i], .dtype = dtypes[t],
                     .causal = causal, .wl = -1, .wr = -1);
    /* Edge sequence lengths. */
    static const int lens[] = {1, 17, 127, 128, 129, 1000};
    for (int i = 0; i < 6; i++)
        for (int causal = 0; causal < 2; causal++)
            CASE(.batch = 1, .sq = lens[i], .sk = lens[i], .hq = 2, .hkv = 2, .d = 128, .dtype = BF16,
                 .causal = causal, .wl = -1, .wr = -1);
    /* seqlen_q != seqlen_k, causal aligned bottom-right, both ways. */
    static const int qk[][2] = {{17, 300}, {300, 17}, {129, 1000}, {1000, 129}, {1, 513}, {200, 1}};
    for (int i = 0; i < 6; i++)
        for (int causal = 0; causal < 2; causal++)
            CASE(.batch = 2, .sq = qk[i][0], .sk = qk[i][1], .hq = 2, .hkv = 1, .d = 64, .dtype = i % 2 ? F16 : BF16,
                 .causal = causal, .wl = -1, .wr = -1);
    /* Unmasked fixed length with more tiles than SMs: the persistent grid, CTAs
     * taking 2 or 3 tiles (every head dim that double-buffers Q). */
    CASE(.batch = 3, .sq = 1000, .sk = 777, .hq = 12, .hkv = 3, .d = 128, .dtype = BF16, .wl = -1, .wr = -1);
    CASE(.batch = 2, .sq = 1100, .sk = 1100, .hq = 12, .hkv = 12, .d = 64, .dtype = F16, .wl = -1, .wr = -1);
    CASE(.batch = 4, .sq = 600, .sk = 300, .hq = 8, .hkv = 8, .d = 96, .dtype = BF16, .wl = -1, .wr = -1,
         .layout = PADDED);
    CASE(.batch = 2, .sq = 900, .sk = 900, .hq = 20, .hkv = 20, .d = 128, .dtype = F16, .wl = -1, .wr = -1,
         .softcap = 30.0f, .no_lse = 1);
    /* Causal with more tiles than SMs: dynamic tiles, heavy first in head
     * groups (several groups at the larger shapes), CTAs taking many tiles;
     * each shape twice in a row (the tile counter must be back at 0). */
    for (int rep = 0; rep < 2; rep++) {
        CASE(.batch = 4, .sq = 1024, .sk = 1024, .hq = 16, .hkv = 16, .d = 128, .dtype = BF16, .causal = 1,
             .wl = -1, .wr = -1);
        CASE(.batch = 2, .sq = 1500, .sk = 1800, .hq = 8, .hkv = 1, .d = 64, .dtype = F16, .causal = 1, .wl = -1,
             .wr = -1, .softcap = 20.0f);
        CASE(.batch = 7, .sq = 333, .sk = 333, .hq = 24, .hkv = 8, .d = 96, .dtype = BF16, .causal = 1, .wl = -1,
             .wr = -1, .layout = PADDED);
    }
    /* Heads: 1, GQA 8:1, MQA; batch many. */
    CASE(.batch = 1, .sq = 333, .sk = 333, .hq = 1, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, .wl = -1, .wr = -1);
    CASE(.batch = 2, .sq = 257, .sk = 257, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .wl = -1, .wr = -1);
    CASE(.batch = 1, .sq = 200, .sk = 390, .hq = 6, .hkv = 1, .d = 64, .dtype = F16, .causal = 1, .wl = -1, .wr = -1);
    CASE(.batch = 9, .sq = 70, .sk = 90, .hq = 4, .hkv = 4, .d = 96, .dtype = BF16, .wl = -1, .wr = -1);
    /* An explicit softmax_scale (with and without soft-cap). */
    CASE(.batch = 1, .sq = 200, .sk = 300, .hq = 2, .hkv = 1, .d = 128, .dtype = BF16, .wl = -1, .wr = -1,
         .scale = 0.3f);
    CASE(.batch = 2, .sq = 129, .sk = 129, .hq = 2, .hkv = 2, .d = 64, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .scale = 0.02f, .softcap = 10.0f);
    /* Long sequences against the cuBLAS-backed reference: every head dim,
     * causal and not, seqlen_q != seqlen_k, GQA 8:1, a window, a scale. */
    CASE(.batch = 1, .sq = 4096, .sk = 4096, .hq = 2, .hkv = 1, .d = 128, .dtype = BF16, .wl = -1, .wr = -1);
    CASE(.batch = 1, .sq = 4096, .sk = 4096, .hq = 2, .hkv = 2, .d = 128, .dtype = F16, .causal = 1, .wl = -1,
         .wr = -1);
    CASE(.batch = 2, .sq = 2048, .sk = 2048, .hq = 8, .hkv = 1, .d = 64, .dtype = BF16, .causal = 1, .wl = -1,
         .wr = -1);
    CASE(.batch = 1, .sq = 4096, .sk = 4096, .hq = 1, .hkv = 1, .d = 256, .dtype = BF16, .causal = 1, .wl = -1,
         .wr = -1, .scale = 0.05f);
    CASE(.batch = 1, .sq = 3000, .sk = 5000, .hq = 2, .hkv = 1, .d = 192, .dtype = F16, .causal = 1, .wl = -1,
         .wr = -1);
    CASE(.batch = 1, .sq = 4096, .sk = 4096, .hq = 2, .hkv = 2, .d = 96, .dtype = BF16, .wl = 512, .wr = 0,
         .layout = BHSD);
    /* Sliding windows and soft-cap. */
    CASE(.batch = 1, .sq = 700, .sk = 700, .hq = 2, .hkv = 1, .d = 128, .dtype = BF16, .wl = 100, .wr = 50);
    CASE(.batch = 1, .sq = 700, .sk = 700, .hq = 2, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, .wl = 200, .wr = -1);
    CASE(.batch = 1, .sq = 300, .sk = 600, .hq = 2, .hkv = 1, .d = 64, .dtype = BF16, .wl = 64, .wr = 0);
    CASE(.batch = 1, .sq = 500, .sk = 500, .hq = 2, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .softcap = 30.0f);
    CASE(.batch = 1, .sq = 257, .sk = 257, .hq = 2, .hkv = 2, .d = 256, .dtype = F16, .wl = -1, .wr = -1,
         .softcap = 5.0f);
    /* Variable length (ragged, one empty query sequence), layouts, no LSE. */
    CASE(.batch = 4, .sq = 300, .sk = 300, .hq = 4, .hkv = 2, .d = 128, .dtype = BF16, .wl = -1, .wr = -1, .varlen = 1);
    CASE(.batch = 4, .sq = 300, .sk = 400, .hq = 4, .hkv = 2, .d = 128, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1);
    CASE(.batch = 5, .sq = 129, .sk = 129, .hq = 2, .hkv = 1, .d = 64, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1, .layout = PADDED);
    CASE(.batch = 3, .sq = 200, .sk = 150, .hq = 2, .hkv = 1, .d = 256, .dtype = BF16, .wl = -1, .wr = -1,
         .varlen = 1);
    CASE(.batch = 3, .sq = 100, .sk = 100, .hq = 3, .hkv = 3, .d = 192, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1, .layout = FUSED);
    CASE(.batch = 2, .sq = 300, .sk = 300, .hq = 4, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .layout = BHSD);
    CASE(.batch = 2, .sq = 140, .sk = 140, .hq = 3, .hkv = 3, .d = 96, .dtype = BF16, .wl = -1, .wr = -1,
         .layout = FUSED);
    CASE(.batch = 2, .sq = 150, .sk = 170, .hq = 4, .hkv = 1, .d = 192, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .layout = PADDED, .no_lse = 1);
}

/* fp8 inputs (qkv_fp8), head dim 128: odd lengths, causal, GQA / MQA,
 * windows, soft-cap, varlen with an empty query sequence, layouts, each
 * descale mode, both output dtypes, the persistent grids. */
static void fp8_quick_cases(mgpu_handle *h)
{
    CASE(.batch = 1, .sq = 129, .sk = 129, .hq = 2, .hkv = 1, .d = 128, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .fp8 = FP8_PER_TENSOR, .vt = 1);
    CASE(.batch = 3, .sq = 130, .sk = 150, .hq = 2, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1, .fp8 = FP8_PER_SEQ_HEAD, .vt = 1);
    /* persistent grid, CTAs taking up to 3 tiles */
    CASE(.batch = 2, .sq = 520, .sk = 300, .hq = 30, .hkv = 6, .d = 128, .dtype = BF16, .wl = -1, .wr = -1,
         .fp8 = FP8_PER_HEAD, .vt = 1);
    /* causal persistent grid with dynamic tiles, twice (counter back at 0) */
    for (int rep = 0; rep < 2; rep++)
        CASE(.batch = 3, .sq = 700, .sk = 650, .hq = 16, .hkv = 4, .d = 128, .dtype = F16, .causal = 1, .wl = -1,
             .wr = -1, .fp8 = FP8_PER_SEQ_HEAD, .vt = 1);
}

/* fp8 calls take V^T from the handle's workspace when it holds it (a
 * pre-pass writes it), else the kernel transposes V itself: the quick cases
 * plus varlen with many short sequences and a long fixed-length causal call
 * with the default workspace, then cases with a workspace too small for V^T
 * (the in-kernel transpose), then the default workspace again. */
static void fp8_workspace_cases(mgpu_handle *h)
{
    CASE(.batch = 9, .sq = 300, .sk = 260, .hq = 4, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .wl = -1,
         .wr = -1, .varlen = 1, .fp8 = FP8_PER_SEQ_HEAD, .vt = 1);
    CASE(.batch = 2, .sq = 1100, .sk = 1100, .hq = 4, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, .wl = -1,
         .wr = -1, .fp8 = FP8_PER_HEAD, .vt = 1);
    void *small = NULL;
    cudaMalloc(&small, FP8_SMALL_WORKSPACE);
    CHECK_STATUS(mgpu_set_workspace(h, small, FP8_SMALL_WORKSPACE), MGPU_STATUS_SUCCESS);
    CASE(.batch = 1, .sq = 129, .sk = 129, .hq = 2, .hkv = 1, .d = 128, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .fp8 = FP8_PER_TENSOR, .vt = 1);
    CASE(.batch = 3, .sq = 130, .sk = 150, .hq = 2, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1, .fp8 = FP8_PER_SEQ_HEAD, .vt = 1);
    CASE(.batch = 3, .sq = 700, .sk = 650, .hq = 16, .hkv = 4, .d = 128, .dtype = F16, .causal = 1, .wl = -1,
         .wr = -1, .fp8 = FP8_PER_SEQ_HEAD, .vt = 1);
    CHECK_STATUS(mgpu_set_workspace(h, NULL, 0), MGPU_STATUS_SUCCESS);
    CASE(.batch = 2, .sq = 520, .sk = 300, .hq = 30, .hkv = 6, .d = 128, .dtype = BF16, .wl = -1, .wr = -1,
         .fp8 = FP8_PER_HEAD, .vt = 1);
    cudaFree(small);
    CHECK_STATUS(mgpu_reserve_workspace(h, FP8_DEFAULT_WORKSPACE), MGPU_STATUS_SUCCESS);
    CASE(.batch = 4, .sq = 300, .sk = 400, .hq = 4, .hkv = 2, .d = 128, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1, .fp8 = FP8_PER_HEAD, .vt = 1);
}

static void fp8_full_cases(mgpu_handle *h)
{
    fp8_quick_cases(h);
    fp8_workspace_cases(h);
    static const int lens[] = {1, 17, 127, 128, 129, 1000};
    for (int i = 0; i < 6; i++)
        for (int causal = 0; causal < 2; causal++)
            CASE(.batch = 1, .sq = lens[i], .sk = lens[i], .hq = 2, .hkv = 2, .d = 128, .dtype = causal ? F16 : BF16,
                 .causal = causal, .wl = -1, .wr = -1, .fp8 = FP8_PER_TENSOR + i % 4);
    static const int qk[][2] = {{17, 300}, {300, 17}, {129, 1000}, {1000, 129}, {1, 513}, {200, 1}};
    for (int i = 0; i < 6; i++)
        for (int causal = 0; causal < 2; causal++)
            CASE(.batch = 2, .sq = qk[i][0], .sk = qk[i][1], .hq = 2, .hkv = 1, .d = 128, .dtype = i % 2 ? F16 : BF16,
                 .causal = causal, .wl = -1, .wr = -1, .fp8 = FP8_PER_SEQ_HEAD, .vt = 1);
    /* GQA 8:1, MQA */
    CASE(.batch = 2, .sq = 257, .sk = 257, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .wl = -1, .wr = -1,
         .fp8 = FP8_PER_HEAD);
    CASE(.batch = 1, .sq = 200, .sk = 390, .hq = 6, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .fp8 = FP8_PER_TENSOR);
    /* windows, soft-cap, explicit scales */
    CASE(.batch = 1, .sq = 700, .sk = 700, .hq = 2, .hkv = 1, .d = 128, .dtype = BF16, .wl = 100, .wr = 50,
         .fp8 = FP8_PER_HEAD);
    CASE(.batch = 1, .sq = 700, .sk = 700, .hq = 2, .hkv = 1, .d = 128, .dtype = F16, .causal = 1, .wl = 200, .wr = -1,
         .fp8 = FP8_PER_TENSOR);
    CASE(.batch = 1, .sq = 500, .sk = 500, .hq = 2, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .softcap = 30.0f, .fp8 = FP8_PER_SEQ_HEAD);
    CASE(.batch = 1, .sq = 300, .sk = 300, .hq = 2, .hkv = 1, .d = 128, .dtype = BF16, .wl = -1, .wr = -1,
         .scale = 0.3f, .softcap = 5.0f, .fp8 = FP8_PER_HEAD);
    CASE(.batch = 1, .sq = 200, .sk = 300, .hq = 2, .hkv = 1, .d = 128, .dtype = F16, .wl = -1, .wr = -1,
         .scale = 0.3f, .fp8 = FP8_NO_DESCALE);
    /* varlen (ragged, an empty query sequence), layouts, no LSE */
    CASE(.batch = 4, .sq = 300, .sk = 300, .hq = 4, .hkv = 2, .d = 128, .dtype = BF16, .wl = -1, .wr = -1, .varlen = 1,
         .fp8 = FP8_PER_SEQ_HEAD);
    CASE(.batch = 4, .sq = 300, .sk = 400, .hq = 4, .hkv = 2, .d = 128, .dtype = F16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1, .fp8 = FP8_PER_HEAD);
    CASE(.batch = 3, .sq = 130, .sk = 130, .hq = 3, .hkv = 3, .d = 128, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .varlen = 1, .layout = FUSED, .fp8 = FP8_PER_TENSOR);
    CASE(.batch = 2, .sq = 300, .sk = 300, .hq = 4, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .wl = -1, .wr = -1,
         .layout = BHSD, .fp8 = FP8_PER_SEQ_HEAD);
    CASE(.batch = 2, .sq = 900, .sk = 900, .hq = 20, .hkv = 20, .d = 128, .dtype = F16, .wl = -1, .wr = -1,
         .no_lse = 1, .fp8 = FP8_PER_HEAD);
    /* long sequences, cuBLAS-backed reference */
    CASE(.batch = 1, .sq = 4096, .sk = 4096, .hq = 2, .hkv = 1, .d = 128, .dtype = BF16, .wl = -1, .wr = -1,
         .fp8 = FP8_PER_HEAD);
    CASE(.batch = 1, .sq = 4096, .sk = 4096, .hq = 2, .hkv = 2, .d = 128, .dtype = F16, .causal = 1, .wl = -1,
         .wr = -1, .fp8 = FP8_PER_TENSOR);
}

/* What the fp8 forward refuses, on the device too. */
static void fp8_refusals(mgpu_handle *h)
{
    void *buf = NULL;
    cudaMalloc(&buf, 1 << 20);
    mgpu_attention_fwd_desc d = MGPU_ATTENTION_FWD_DESC_INIT;
    d.batch = 1;
    d.seqlen_q = d.seqlen_k = 64;
    d.heads_q = d.heads_kv = 1;
    d.head_dim = 64;
    d.qkv_fp8 = 1;
    CHECK_STATUS(mgpu_attention_fwd(h, &d, buf, buf, buf, buf, NULL), MGPU_STATUS_NOT_SUPPORTED);
    d.head_dim = 128;
    d.seqused_k = (const int32_t *)buf;
    CHECK_STATUS(mgpu_attention_fwd(h, &d, buf, buf, buf, buf, NULL), MGPU_STATUS_NOT_SUPPORTED);
    cudaFree(buf);
}

int main(int argc, char **argv)
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
    const char *quick = getenv("MGPU_TEST_QUICK");
    const int fp8 = argc > 1 && strcmp(argv[1], "fp8") == 0;
    if (fp8) {
        if (quick && quick[0] == '1') {
            fp8_quick_cases(h);
            fp8_workspace_cases(h);
        } else
            fp8_full_cases(h);
        fp8_refusals(h);
    } else if (quick && quick[0] == '1') {
        quick_cases(h);
        CASE(.batch = 3, .sq = 5, .sk = 700, .hq = 16, .hkv = 2, .d = 128, .dtype = BF16, .causal = 1, .wl = -1,
             .wr = -1, .pack = 1, .splits = 3);
        CASE(.batch = 4, .sq = 70, .sk = 300, .hq = 8, .hkv = 2, .d = 64, .dtype = F16, .wl = 50, .wr = 3,
             .softcap = 5.0f, .varlen = 1, .pack = 1, .splits = 2);
    }
    else
        full_cases(h);

    /* A call the kernels cannot take fails cleanly on the device too. */
    mgpu_attention_fwd_desc bad = MGPU_ATTENTION_FWD_DESC_INIT;
    bad.batch = 1;
    bad.seqlen_q = bad.seqlen_k = 64;
    bad.heads_q = bad.heads_kv = 1;
    bad.head_dim = 80;
    void *buf = NULL;
    cudaMalloc(&buf, 1 << 16);
    CHECK_STATUS(mgpu_attention_fwd(h, &bad, buf, buf, buf, buf, NULL), MGPU_STATUS_NOT_SUPPORTED);
    cudaFree(buf);
    cublasDestroy(ref_blas);
    mgpu_destroy(h);
    return check_exit();
}
