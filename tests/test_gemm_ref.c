/* See test_gemm_ref.h. */
#include "test_gemm_ref.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ref_dtype_bytes(mgpu_dtype t)
{
    return t == MGPU_DTYPE_F32 ? 4 : t == MGPU_DTYPE_E4M3 || t == MGPU_DTYPE_E5M2 ? 1 : 2;
}

const char *ref_dtype_name(mgpu_dtype t)
{
    switch (t) {
    case MGPU_DTYPE_F16: return "f16";
    case MGPU_DTYPE_BF16: return "bf16";
    case MGPU_DTYPE_F32: return "f32";
    case MGPU_DTYPE_E4M3: return "e4m3";
    case MGPU_DTYPE_E5M2: return "e5m2";
    }
    return "?";
}

/* A binary floating-point format with an implicit leading bit: exponent and
 * mantissa widths, bias, largest finite value. */
struct fmt {
    int exp_bits, man_bits, bias;
    float max_finite;
};

/* e4m3 has no infinities: its largest finite value is 1.75 * 2^8. */
static const struct fmt fmt_e4m3 = {4, 3, 7, 448.0f};
static const struct fmt fmt_e5m2 = {5, 2, 15, 57344.0f};
static const struct fmt fmt_f16 = {5, 10, 15, 65504.0f};

static const struct fmt *fmt_of(mgpu_dtype t)
{
    return t == MGPU_DTYPE_E4M3 ? &fmt_e4m3 : t == MGPU_DTYPE_E5M2 ? &fmt_e5m2 : &fmt_f16;
}

/* Finite floats only (the tests never make others). */
static uint32_t encode(const struct fmt *f, float v)
{
    const uint32_t sign = signbit(v) ? 1u << (f->exp_bits + f->man_bits) : 0;
    double a = fabs((double)v);
    if (a > f->max_finite)
        a = f->max_finite;
    const int min_exp = 1 - f->bias; /* exponent of the smallest normal */
    int e;
    frexp(a, &e);
    e -= 1; /* a = m * 2^e with m in [1, 2) */
    if (e < min_exp)
        e = min_exp; /* subnormal: the same spacing as the smallest normals */
    const double step = ldexp(1.0, e - f->man_bits);
    uint32_t q = (uint32_t)nearbyint(a / step); /* ties to even */
    /* q counts steps of 2^(e - man_bits); fold the implicit bit into the exponent */
    uint32_t code;
    if (q >= (2u << f->man_bits)) { /* rounded up to the next binade */
        q >>= 1;
        e += 1;
    }
    if (q < (1u << f->man_bits))
        code = q; /* subnormal (e == min_exp) */
    else
        code = ((uint32_t)(e + f->bias) << f->man_bits) | (q - (1u << f->man_bits));
    return sign | code;
}

static float decode(const struct fmt *f, uint32_t code)
{
    const uint32_t man = code & ((1u << f->man_bits) - 1);
    const uint32_t ex = (code >> f->man_bits) & ((1u << f->exp_bits) - 1);
    const int neg = (code >> (f->exp_bits + f->man_bits)) & 1;
    double v = ex == 0 ? ldexp((double)man, 1 - f->bias - f->man_bits)
                       : ldexp((double)((1u << f->man_bits) | man), (int)ex - f->bias - f->man_bits);
    return (float)(neg ? -v : v);
}

static uint16_t to_bf16(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float ref_load(const void *host, mgpu_dtype t, size_t i)
{
    switch (t) {
    case MGPU_DTYPE_F32: return ((const float *)host)[i];
    case MGPU_DTYPE_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)host)[i] << 16;
        float v;
        memcpy(&v, &u, 4);
        return v;
    }
    case MGPU_DTYPE_F16: return decode(&fmt_f16, ((const uint16_t *)host)[i]);
    default: return decode(fmt_of(t), ((const uint8_t *)host)[i]);
    }
}

void ref_store(void *host, mgpu_dtype t, size_t i, float v)
{
    switch (t) {
    case MGPU_DTYPE_F32: ((float *)host)[i] = v; break;
    case MGPU_DTYPE_BF16: ((uint16_t *)host)[i] = to_bf16(v); break;
    case MGPU_DTYPE_F16: ((uint16_t *)host)[i] = (uint16_t)encode(&fmt_f16, v); break;
    default: ((uint8_t *)host)[i] = (uint8_t)encode(fmt_of(t), v); break;
    }
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

void ref_fill_normal(void *host, float *as_float, mgpu_dtype t, size_t count, uint64_t seed, float scale)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < count; i += 2) {
        double u1 = ((next(&s) >> 11) + 1.0) / 9007199254740993.0, u2 = (next(&s) >> 11) / 9007199254740992.0;
        double r = sqrt(-2.0 * log(u1));
        float v[2] = {(float)(r * cos(2 * M_PI * u2)) * scale, (float)(r * sin(2 * M_PI * u2)) * scale};
        for (size_t j = 0; j < 2 && i + j < count; j++) {
            ref_store(host, t, i + j, v[j]);
            if (as_float)
                as_float[i + j] = ref_load(host, t, i + j);
        }
    }
}

float ref_finish(float v, float bias, mgpu_activation act, float scale_d)
{
    double x = (double)v + bias;
    if (act == MGPU_ACTIVATION_RELU)
        x = x > 0 ? x : 0;
    else if (act == MGPU_ACTIVATION_GELU)
        x = 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    return (float)(x * scale_d);
}

struct compare_result ref_compare(const void *out_dev, mgpu_dtype t, const float *ref, int64_t m, int64_t n,
                                  int64_t ld, int64_t stride, int64_t batch)
{
    struct compare_sums sums = {{0, 0, 0, 0}, 0, 0};
    const size_t span = (size_t)((batch - 1) * stride + (n - 1) * ld + m);
    void *out = malloc(span * ref_dtype_bytes(t));
    ref_download(out, out_dev, span * ref_dtype_bytes(t));
    for (int64_t b = 0; b < batch; b++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                const size_t idx = (size_t)(b * stride + j * ld + i);
                compare_add(&sums, ref_load(out, t, idx), ref[idx]);
            }
    free(out);
    return compare_total(&sums);
}

size_t ref_changed_outside(const void *dev, const void *before, size_t bytes, mgpu_dtype t, int64_t m, int64_t n,
                           int64_t ld, int64_t stride, int64_t batch)
{
    unsigned char *now = malloc(bytes);
    ref_download(now, dev, bytes);
    const size_t es = ref_dtype_bytes(t);
    size_t bad = 0;
    for (size_t e = 0; e < bytes / es; e++) {
        const int64_t b = (int64_t)e / stride, rem = (int64_t)e % stride, j = rem / ld, i = rem % ld;
        const int inside = b < batch && j < n && i < m;
        if (!inside && memcmp(now + e * es, (const unsigned char *)before + e * es, es) != 0)
            bad++;
    }
    free(now);
    return bad;
}

void *ref_dalloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 16) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed\n", bytes);
        exit(1);
    }
    return p;
}

void ref_upload(void *dev, const void *host, size_t bytes)
{
    cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
}

void ref_download(void *host, const void *dev, size_t bytes)
{
    cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
}

int ref_test_start(mgpu_handle **handle, cublasHandle_t *cublas, int *quick)
{
    const char *q = getenv("MGPU_TEST_QUICK");
    *quick = q && q[0] == '1';
    cudaFree(0);
    if (mgpu_create(handle) != MGPU_STATUS_SUCCESS) {
        fprintf(stderr, "mgpu_create: %s\n", mgpu_last_error_message());
        exit(1);
    }
    cublasCreate(cublas);
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    if (major == 9 && minor == 0)
        return 90;
    return major == 10 && minor == 0 ? 100 : 0;
}

mgpu_status ref_run_small(mgpu_handle *handle, mgpu_gemm_desc desc)
{
    void *buf = ref_dalloc(1 << 16);
    desc.m = desc.n = desc.k = 32;
    desc.A = desc.B = desc.C = buf;
    desc.lda = desc.ldb = desc.ldc = 32;
    const mgpu_status s = mgpu_gemm_ex(handle, &desc);
    cudaDeviceSynchronize();
    cudaFree(buf);
    return s;
}
