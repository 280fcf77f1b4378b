/* See gpu_util.h. */
#include "gpu_util.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gpu_available(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

size_t dtype_bytes(mgpu_dtype t)
{
    return t == MGPU_DTYPE_F32 ? 4 : 2;
}

double dtype_eps(mgpu_dtype t)
{
    return t == MGPU_DTYPE_F32 ? ldexp(1.0, -24) : t == MGPU_DTYPE_BF16 ? ldexp(1.0, -8) : ldexp(1.0, -11);
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t to_bf16(float f)
{
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

/* fp32 -> fp16, round to nearest even, with subnormals; inputs here are finite. */
static uint16_t to_f16(float f)
{
    uint32_t u = float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    float a = fabsf(f);
    if (a >= 65520.0f)
        return sign | 0x7c00;
    if (a < ldexpf(1.0f, -14)) { /* subnormal: multiples of 2^-24 */
        return sign | (uint16_t)lrintf(a * ldexpf(1.0f, 24));
    }
    uint32_t v = float_bits(a);
    uint32_t exp = (v >> 23) - 127 + 15;
    uint32_t mant = v & 0x7fffffu;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;
    return sign | (uint16_t)h;
}

static float from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0)
        return (sign ? -1.0f : 1.0f) * ldexpf((float)mant, -24);
    if (exp == 31)
        return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

static float load(const void *host, mgpu_dtype t, size_t i)
{
    if (t == MGPU_DTYPE_F32)
        return ((const float *)host)[i];
    uint16_t v = ((const uint16_t *)host)[i];
    return t == MGPU_DTYPE_BF16 ? bits_float((uint32_t)v << 16) : from_f16(v);
}

float host_load_elem(const void *p, mgpu_dtype t)
{
    return load(p, t, 0);
}

void host_store_elem(void *p, mgpu_dtype t, float value)
{
    if (t == MGPU_DTYPE_F32) {
        memcpy(p, &value, 4);
        return;
    }
    const uint16_t bits = t == MGPU_DTYPE_BF16 ? to_bf16(value) : to_f16(value);
    memcpy(p, &bits, 2);
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

void fill_normal(void *dev, mgpu_dtype t, size_t count, uint64_t seed, float scale)
{
    size_t esize = dtype_bytes(t);
    unsigned char *host = malloc(count * esize + 4);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    for (size_t i = 0; i < count; i += 2) {
        double u1 = ((next(&s) >> 11) + 1.0) / 9007199254740993.0, u2 = (next(&s) >> 11) / 9007199254740992.0;
        double r = sqrt(-2.0 * log(u1));
        float v[2] = {(float)(r * cos(2 * M_PI * u2)) * scale, (float)(r * sin(2 * M_PI * u2)) * scale};
        for (int j = 0; j < 2 && i + j < count; j++) {
            if (t == MGPU_DTYPE_F32)
                ((float *)host)[i + j] = v[j];
            else
                ((uint16_t *)host)[i + j] = t == MGPU_DTYPE_BF16 ? to_bf16(v[j]) : to_f16(v[j]);
        }
    }
    cudaMemcpy(dev, host, count * esize, cudaMemcpyHostToDevice);
    free(host);
}

void poison(void *dev, size_t bytes)
{
    cudaMemset(dev, 0xff, bytes);
}

struct compare_result compare_matrices(const void *out_dev, const void *ref_dev, mgpu_dtype t, int64_t m,
                                       int64_t n, int64_t ld, int64_t stride, int64_t batch)
{
    struct compare_sums sums = {{0, 0, 0, 0}, 0, 0};
    size_t span = (size_t)((batch - 1) * stride + (n - 1) * ld + m);
    size_t esize = dtype_bytes(t);
    void *out = malloc(span * esize), *ref = malloc(span * esize);
    cudaMemcpy(out, out_dev, span * esize, cudaMemcpyDeviceToHost);
    cudaMemcpy(ref, ref_dev, span * esize, cudaMemcpyDeviceToHost);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                size_t idx = (size_t)(b * stride + j * ld + i);
                compare_add(&sums, load(out, t, idx), load(ref, t, idx));
            }
    free(out);
    free(ref);
    return compare_total(&sums);
}

void compare_add(struct compare_sums *s, double o, double e)
{
    if (!isfinite(o) && isfinite(e)) {
        s->r.nan_count++;
        return;
    }
    const double d = fabs(o - e);
    s->num += d * d;
    s->den += e * e;
    if (d > s->r.max_err)
        s->r.max_err = d;
    if (fabs(e) > s->r.max_ref)
        s->r.max_ref = fabs(e);
}

struct compare_result compare_total(const struct compare_sums *s)
{
    struct compare_result r = s->r;
    r.rel_err = s->den > 0 ? sqrt(s->num / s->den) : sqrt(s->num);
    return r;
}
