/*
 * One transformer block step (pre-norm omitted: normalisation is not a
 * library operation) on a batch of token sequences, all in bf16:
 *
 *   qkv = x Wqkv                      mgpu_gemm
 *   o   = attention(q, k, v), causal  mgpu_attention_fwd (reads q, k, v in place inside qkv)
 *   h   = x + o Wo                    mgpu_gemm with beta = 1 (the residual)
 *   u   = gelu(h W1 + b1)             mgpu_gemm_ex: bias and GELU fused
 *   y   = h + u W2                    mgpu_gemm with beta = 1
 *
 * and then one backward step of the attention: given dO (here random, as
 * if from the loss), mgpu_attention_bwd gives dQ, dK and dV from q, k, v,
 * o and the LSE the forward saved, with its scratch in the handle's
 * workspace (sized by mgpu_attention_bwd_workspace_size).
 *
 * Activations are row-major (token, feature) as frameworks store them. The
 * library is column-major like cuBLAS; a row-major Y = X W is the
 * column-major Y^T = W^T X^T, so row-major callers pass W first and X second
 * with m = columns of Y and n = rows of Y; nothing is transposed in memory.
 * One attention output row and one row of dV are checked against CPU
 * computations.
 *
 * Build:  cc transformer_block.c $(pkg-config --cflags --libs mgpukernels) -lcudart -lm
 * Run:    ./transformer_block    exits 0 (checked), 77 (no GPU) or 1 (error)
 */
#include "example_util.h"

#include <math.h>

#define BATCH 2
#define SEQ 128
#define HEADS 4
#define HEAD_DIM 64
#define MODEL (HEADS * HEAD_DIM) /* 256 */
#define FFN (4 * MODEL)
#define TOKENS (BATCH * SEQ)

static uint32_t seed = 12345u;

static float uniform(float scale) /* in [-scale, scale) */
{
    seed = seed * 1664525u + 1013904223u;
    return scale * ((float)(seed >> 8) / 8388608.0f - 1.0f);
}

static void *random_bf16(size_t n, float scale)
{
    float *x = malloc(n * sizeof *x);
    if (!x)
        exit(1);
    for (size_t i = 0; i < n; i++)
        x[i] = uniform(scale);
    void *d = upload_bf16(x, n);
    free(x);
    return d;
}

/* Row-major Y (rows x cols) = beta * Y + X (rows x inner) W (inner x cols), bf16. */
static void linear(mgpu_handle *h, const void *x, const void *w, void *y, int64_t rows, int64_t inner, int64_t cols,
                   float beta)
{
    const float one = 1.0f;
    MGPU_CHECK(mgpu_gemm(h, MGPU_OP_N, MGPU_OP_N, cols, rows, inner, &one, w, MGPU_DTYPE_BF16, cols, x,
                         MGPU_DTYPE_BF16, inner, &beta, y, MGPU_DTYPE_BF16, cols));
}

/* Checks o[b, i, head, :] against softmax(q k^T / sqrt(d)) v computed on the CPU from qkv. */
static double check_row(const uint16_t *qkv, const uint16_t *o, int b, int i, int head)
{
    const uint16_t *q = qkv + ((size_t)b * SEQ + i) * 3 * MODEL + head * HEAD_DIM;
    double s[SEQ], mx = -INFINITY, sum = 0.0, err = 0.0, norm = 0.0;
    for (int j = 0; j <= i; j++) { /* causal: keys 0..i */
        const uint16_t *k = qkv + ((size_t)b * SEQ + j) * 3 * MODEL + MODEL + head * HEAD_DIM;
        s[j] = 0.0;
        for (int d = 0; d < HEAD_DIM; d++)
            s[j] += (double)bf16_to_f32(q[d]) * bf16_to_f32(k[d]);
        s[j] /= sqrt((double)HEAD_DIM);
        mx = s[j] > mx ? s[j] : mx;
    }
    for (int j = 0; j <= i; j++)
        sum += s[j] = exp(s[j] - mx);
    for (int d = 0; d < HEAD_DIM; d++) {
        double ref = 0.0;
        for (int j = 0; j <= i; j++)
            ref += s[j] / sum * bf16_to_f32(qkv[((size_t)b * SEQ + j) * 3 * MODEL + 2 * MODEL + head * HEAD_DIM + d]);
        const double got = bf16_to_f32(o[((size_t)b * SEQ + i) * MODEL + head * HEAD_DIM + d]);
        err += (got - ref) * (got - ref);
        norm += ref * ref;
    }
    return sqrt(err / (norm > 0.0 ? norm : 1.0));
}

/* p[j] = softmax(q_i k_j^T / sqrt(d)) over the keys j <= i (causal) of (b, head), from qkv. */
static void softmax_row(const uint16_t *qkv, int b, int i, int head, double *p)
{
    const uint16_t *q = qkv + ((size_t)b * SEQ + i) * 3 * MODEL + head * HEAD_DIM;
    double mx = -INFINITY, sum = 0.0;
    for (int j = 0; j <= i; j++) {
        const uint16_t *k = qkv + ((size_t)b * SEQ + j) * 3 * MODEL + MODEL + head * HEAD_DIM;
        p[j] = 0.0;
        for (int d = 0; d < HEAD_DIM; d++)
            p[j] += (double)bf16_to_f32(q[d]) * bf16_to_f32(k[d]);
        p[j] /= sqrt((double)HEAD_DIM);
        mx = p[j] > mx ? p[j] : mx;
    }
    for (int j = 0; j <= i; j++)
        sum += p[j] = exp(p[j] - mx);
    for (int j = 0; j <= i; j++)
        p[j] /= sum;
}

/* Checks dV[b, j, head, :] = sum over queries i >= j of P[i, j] dO[i, head, :] (dense dO, dV). */
static double check_dv_row(const uint16_t *qkv, const uint16_t *dout, const uint16_t *dv, int b, int j, int head)
{
    double p[SEQ], ref[HEAD_DIM] = {0}, err = 0.0, norm = 0.0;
    for (int i = j; i < SEQ; i++) { /* causal: the queries that see key j */
        softmax_row(qkv, b, i, head, p);
        for (int d = 0; d < HEAD_DIM; d++)
            ref[d] += p[j] * bf16_to_f32(dout[((size_t)b * SEQ + i) * MODEL + head * HEAD_DIM + d]);
    }
    for (int d = 0; d < HEAD_DIM; d++) {
        const double got = bf16_to_f32(dv[((size_t)b * SEQ + j) * MODEL + head * HEAD_DIM + d]);
        err += (got - ref[d]) * (got - ref[d]);
        norm += ref[d] * ref[d];
    }
    return sqrt(err / (norm > 0.0 ? norm : 1.0));
}

int main(void)
{
    mgpu_handle *h = create_handle(); /* exits 77 without a GPU */
    const size_t bf = sizeof(uint16_t);

    /* Weights (scaled by 1/sqrt(fan-in)) and the input x. */
    void *x = random_bf16((size_t)TOKENS * MODEL, 1.0f);
    void *w_qkv = random_bf16((size_t)MODEL * 3 * MODEL, 1.0f / sqrtf(MODEL));
    void *w_o = random_bf16((size_t)MODEL * MODEL, 1.0f / sqrtf(MODEL));
    void *w_1 = random_bf16((size_t)MODEL * FFN, 1.0f / sqrtf(MODEL));
    void *w_2 = random_bf16((size_t)FFN * MODEL, 1.0f / sqrtf(FFN));
    float b1_host[FFN], *b_1;
    for (int i = 0; i < FFN; i++)
        b1_host[i] = uniform(0.1f);
    CUDA_CHECK(cudaMalloc((void **)&b_1, sizeof b1_host));
    CUDA_CHECK(cudaMemcpy(b_1, b1_host, sizeof b1_host, cudaMemcpyHostToDevice));

    void *qkv, *o, *hid, *u, *y;
    float *lse; /* log-sum-exp per (batch, head, query): what the backward pass reads */
    CUDA_CHECK(cudaMalloc(&qkv, (size_t)TOKENS * 3 * MODEL * bf));
    CUDA_CHECK(cudaMalloc(&o, (size_t)TOKENS * MODEL * bf));
    CUDA_CHECK(cudaMalloc(&hid, (size_t)TOKENS * MODEL * bf));
    CUDA_CHECK(cudaMalloc(&u, (size_t)TOKENS * FFN * bf));
    CUDA_CHECK(cudaMalloc(&y, (size_t)TOKENS * MODEL * bf));
    CUDA_CHECK(cudaMalloc((void **)&lse, sizeof(float) * BATCH * HEADS * SEQ));

    /* qkv = x Wqkv: each token row holds its q, k and v (MODEL values each). */
    linear(h, x, w_qkv, qkv, TOKENS, MODEL, 3 * MODEL, 0.0f);

    /* Causal attention straight out of qkv: strides in elements say where
     * q, k and v of (sequence, position, head) are. o is dense. */
    mgpu_attention_fwd_desc att = MGPU_ATTENTION_FWD_DESC_INIT;
    att.batch = BATCH;
    att.seqlen_q = att.seqlen_k = SEQ;
    att.heads_q = att.heads_kv = HEADS;
    att.head_dim = HEAD_DIM;
    att.dtype = MGPU_DTYPE_BF16;
    att.causal = 1; /* softmax_scale 0: 1 / sqrt(head_dim) */
    const mgpu_attention_strides in_qkv = {SEQ * 3 * MODEL, 3 * MODEL, HEAD_DIM};
    att.q_strides = att.k_strides = att.v_strides = in_qkv;
    const uint16_t *q = qkv;
    MGPU_CHECK(mgpu_attention_fwd(h, &att, q, q + MODEL, q + 2 * MODEL, o, lse));

    /* h = x + o Wo: start from a copy of x and accumulate with beta = 1. */
    CUDA_CHECK(cudaMemcpy(hid, x, (size_t)TOKENS * MODEL * bf, cudaMemcpyDeviceToDevice));
    linear(h, o, w_o, hid, TOKENS, MODEL, MODEL, 1.0f);

    /* u = gelu(h W1 + b1), bias and activation fused into the GEMM. The bias
     * is per output feature: a row of the column-major result. */
    mgpu_gemm_desc up = MGPU_GEMM_DESC_INIT;
    up.m = FFN;
    up.n = TOKENS;
    up.k = MODEL;
    up.A = w_1;
    up.lda = FFN;
    up.B = hid;
    up.ldb = MODEL;
    up.C = u;
    up.ldc = FFN;
    up.a_type = up.b_type = up.c_type = MGPU_DTYPE_BF16;
    up.bias = b_1;
    up.bias_type = MGPU_DTYPE_F32;
    up.bias_mode = MGPU_BIAS_PER_ROW;
    up.activation = MGPU_ACTIVATION_GELU;
    MGPU_CHECK(mgpu_gemm_ex(h, &up));

    /* y = h + u W2 */
    CUDA_CHECK(cudaMemcpy(y, hid, (size_t)TOKENS * MODEL * bf, cudaMemcpyDeviceToDevice));
    linear(h, u, w_2, y, TOKENS, FFN, MODEL, 1.0f);

    /* ---- backward step of the attention ----
     * In training dO comes from the loss through the layers above; here it
     * is random. The descriptor repeats the forward's fields (same strides
     * into qkv); dO, dQ, dK and dV are dense (strides left 0). */
    void *dout = random_bf16((size_t)TOKENS * MODEL, 1.0f), *dq, *dk, *dv;
    CUDA_CHECK(cudaMalloc(&dq, (size_t)TOKENS * MODEL * bf));
    CUDA_CHECK(cudaMalloc(&dk, (size_t)TOKENS * MODEL * bf));
    CUDA_CHECK(cudaMalloc(&dv, (size_t)TOKENS * MODEL * bf));
    mgpu_attention_bwd_desc bwd = MGPU_ATTENTION_BWD_DESC_INIT;
    bwd.batch = att.batch;
    bwd.seqlen_q = att.seqlen_q;
    bwd.seqlen_k = att.seqlen_k;
    bwd.heads_q = att.heads_q;
    bwd.heads_kv = att.heads_kv;
    bwd.head_dim = att.head_dim;
    bwd.dtype = att.dtype;
    bwd.causal = att.causal;
    bwd.q_strides = bwd.k_strides = bwd.v_strides = in_qkv;
    /* The scratch (fp32 dQ accumulator and row statistics) lives in the
     * handle's workspace: ask for its size and reserve it once, outside any
     * graph capture; the call itself allocates nothing. */
    size_t need = 0;
    MGPU_CHECK(mgpu_attention_bwd_workspace_size(h, &bwd, &need));
    MGPU_CHECK(mgpu_reserve_workspace(h, need));
    MGPU_CHECK(mgpu_attention_bwd(h, &bwd, q, q + MODEL, q + 2 * MODEL, o, dout, lse, dq, dk, dv));

    CUDA_CHECK(cudaDeviceSynchronize());
    uint16_t *qkv_h = malloc((size_t)TOKENS * 3 * MODEL * bf), *o_h = malloc((size_t)TOKENS * MODEL * bf),
             *y_h = malloc((size_t)TOKENS * MODEL * bf), *do_h = malloc((size_t)TOKENS * MODEL * bf),
             *grad_h = malloc((size_t)3 * TOKENS * MODEL * bf); /* dQ, dK, dV one after another */
    if (!qkv_h || !o_h || !y_h || !do_h || !grad_h)
        return 1;
    CUDA_CHECK(cudaMemcpy(qkv_h, qkv, (size_t)TOKENS * 3 * MODEL * bf, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(o_h, o, (size_t)TOKENS * MODEL * bf, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(y_h, y, (size_t)TOKENS * MODEL * bf, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(do_h, dout, (size_t)TOKENS * MODEL * bf, cudaMemcpyDeviceToHost));
    const size_t n = (size_t)TOKENS * MODEL;
    CUDA_CHECK(cudaMemcpy(grad_h, dq, n * bf, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(grad_h + n, dk, n * bf, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(grad_h + 2 * n, dv, n * bf, cudaMemcpyDeviceToHost));
    int finite = 1, grads_finite = 1;
    for (size_t i = 0; i < n; i++)
        finite &= isfinite(bf16_to_f32(y_h[i]));
    for (size_t i = 0; i < 3 * n; i++)
        grads_finite &= isfinite(bf16_to_f32(grad_h[i]));
    const double err = fmax(check_row(qkv_h, o_h, 1, SEQ - 1, 2), check_row(qkv_h, o_h, 0, 5, 0));
    const double dv_err = fmax(check_dv_row(qkv_h, do_h, grad_h + 2 * n, 1, 3, 1),
                               check_dv_row(qkv_h, do_h, grad_h + 2 * n, 0, SEQ - 1, 3));
    printf("transformer block: %d tokens, output %s, attention rows vs CPU: relative error %.2e\n", TOKENS,
           finite ? "finite" : "NOT finite", err);
    printf("attention backward: workspace %zu bytes, dQ dK dV %s, dV rows vs CPU: relative error %.2e\n", need,
           grads_finite ? "finite" : "NOT finite", dv_err);

    void *bufs[] = {x, w_qkv, w_o, w_1, w_2, b_1, qkv, o, hid, u, y, lse, dout, dq, dk, dv};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        CUDA_CHECK(cudaFree(bufs[i]));
    free(qkv_h);
    free(o_h);
    free(y_h);
    free(do_h);
    free(grad_h);
    MGPU_CHECK(mgpu_destroy(h));
    return finite && err < 2e-2 && grads_finite && dv_err < 2e-2 ? 0 : 1;
}
