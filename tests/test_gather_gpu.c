/*
 * mgpu_gather and mgpu_scatter_add on the device against a CPU reference.
 *
 * Gather: every element size (1/2/4/8 bytes), int32 and int64 indices, rows
 * from 1 byte to 14 KiB, aligned and unaligned pointers and strides, padded
 * strides (the padding must stay untouched), 0 and 1 rows, empty tables, and
 * out-of-range indices (zero rows, MGPU_STATUS_INDEX_OUT_OF_RANGE from
 * mgpu_check_index_errors, cleared afterwards). Destinations are poisoned
 * with 0xff bytes (NaN in every float type) before each call. Each aligned
 * case also runs with every applicable kernel forced (MGPU_FORCE_VARIANT).
 *
 * Scatter-add: fp32/bf16/fp16, atomic and sorted modes, duplicate indices
 * (thousands of rows into three), unaligned rows, out-of-range indices;
 * the sorted mode must be bitwise reproducible and must report unsorted
 * input. Exits 77 when there is no CUDA device. MGPU_TEST_QUICK=1 (used
 * under compute-sanitizer) runs a subset: fewer row counts and row lengths.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "force.h"
#include "gpu_util.h"

#define POISON_BYTE 0xff
#define BAD_INDEX_COUNT 5
#define F32_ULP 0x1p-23 /* the sorted mode's fp32 running sum */

#define CUDA_OK(x)                                                                                      \
    do {                                                                                                \
        cudaError_t e_ = (x);                                                                           \
        if (e_ != cudaSuccess) {                                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));         \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int quick; /* MGPU_TEST_QUICK */
static char arch_tag[8]; /* "sm90" or "sm100": the suffix of this device's variant names */

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

/* Writes n indices of index_type at dev from the int64 list. */
static void upload_indices(void *dev, const int64_t *idx, int64_t n, mgpu_index_type t)
{
    const size_t isz = t == MGPU_INDEX_I64 ? 8 : 4;
    unsigned char *h = malloc((size_t)n * isz + 1);
    for (int64_t i = 0; i < n; i++) {
        if (t == MGPU_INDEX_I64) {
            memcpy(h + i * 8, &idx[i], 8);
        } else {
            const int32_t v = (int32_t)idx[i];
            memcpy(h + i * 4, &v, 4);
        }
    }
    CUDA_OK(cudaMemcpy(dev, h, (size_t)n * isz, cudaMemcpyHostToDevice));
    free(h);
}

/* ------------------------------------------------------------------ gather */

struct gather_case {
    int64_t row_elems, n, table_rows;
    int elem_size;
    int64_t src_off, dst_off; /* bytes from a 256-byte aligned allocation */
    int64_t src_pad, dst_pad; /* stride = row bytes + pad */
    int oob;                  /* plant out-of-range indices */
};

/* Runs the case once with `force` (NULL: the library's choice) and checks it. */
static void run_gather_once(mgpu_handle *h, const struct gather_case *c, mgpu_index_type it, const char *force)
{
    const int64_t row_bytes = c->row_elems * c->elem_size;
    const int64_t src_stride = row_bytes + c->src_pad, dst_stride = row_bytes + c->dst_pad;
    const size_t src_size = (size_t)(c->src_off + c->table_rows * src_stride);
    const size_t dst_size = (size_t)(c->dst_off + c->n * dst_stride);
    unsigned char *h_src = malloc(src_size + 1), *h_dst = malloc(dst_size + 1);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(c->n + 1));
    for (size_t i = 0; i < src_size; i++)
        h_src[i] = (unsigned char)rng();
    int any_oob = 0;
    const int64_t bad[BAD_INDEX_COUNT] = {-1, c->table_rows, c->table_rows + 1000,
                                          it == MGPU_INDEX_I64 ? -((int64_t)1 << 40) : INT32_MIN,
                                          it == MGPU_INDEX_I64 ? (int64_t)1 << 40 : INT32_MAX};
    for (int64_t i = 0; i < c->n; i++) {
        idx[i] = c->table_rows ? (int64_t)(rng() % (uint64_t)c->table_rows) : 0;
        if (c->oob && i % 7 == 3) {
            idx[i] = bad[(i / 7) % BAD_INDEX_COUNT];
        }
        any_oob |= idx[i] < 0 || idx[i] >= c->table_rows;
    }
    unsigned char *d_src = dev_alloc(src_size), *d_dst = dev_alloc(dst_size);
    void *d_idx = dev_alloc((size_t)c->n * 8);
    CUDA_OK(cudaMemcpy(d_src, h_src, src_size, cudaMemcpyHostToDevice));
    upload_indices(d_idx, idx, c->n, it);
    CUDA_OK(cudaMemset(d_dst, POISON_BYTE, dst_size));

    mgpu_gather_desc d = MGPU_GATHER_DESC_INIT;
    d.src = d_src + c->src_off;
    d.src_rows = c->table_rows;
    d.src_row_stride = src_stride;
    d.dst = d_dst + c->dst_off;
    d.dst_row_stride = dst_stride;
    d.index = d_idx;
    d.index_type = it;
    d.n_indices = c->n;
    d.row_elems = c->row_elems;
    d.elem_size = c->elem_size;
    if (force)
        force_setenv("MGPU_FORCE_VARIANT", force);
    const mgpu_status s = mgpu_gather(h, &d);
    force_unsetenv("MGPU_FORCE_VARIANT");
    CHECK(s == MGPU_STATUS_SUCCESS, "mgpu_gather: %s (%s)", mgpu_status_string(s), mgpu_last_error_message());
    const mgpu_status checked = mgpu_check_index_errors(h);
    const mgpu_status expected = any_oob && c->n > 0 && row_bytes > 0 ? MGPU_STATUS_INDEX_OUT_OF_RANGE
                                                                       : MGPU_STATUS_SUCCESS;
    CUDA_OK(cudaMemcpy(h_dst, d_dst, dst_size, cudaMemcpyDeviceToHost));

    int64_t bad_rows = 0, bad_gap = 0;
    for (int64_t r = 0; r < c->n; r++) {
        const unsigned char *got = h_dst + c->dst_off + r * dst_stride;
        const int in = idx[r] >= 0 && idx[r] < c->table_rows;
        int ok = 1;
        for (int64_t b = 0; b < row_bytes && ok; b++)
            ok = got[b] == (in ? h_src[c->src_off + idx[r] * src_stride + b] : 0);
        bad_rows += !ok;
        for (int64_t b = row_bytes; b < dst_stride; b++)
            bad_gap += got[b] != POISON_BYTE;
    }
    for (int64_t b = 0; b < c->dst_off; b++)
        bad_gap += h_dst[b] != POISON_BYTE;
    CHECK(bad_rows == 0 && bad_gap == 0 && checked == expected,
          "gather %s i%d elem=%d row_elems=%lld n=%lld table=%lld offs=%lld/%lld pads=%lld/%lld oob=%d: %lld bad "
          "rows, %lld padding bytes written, check %s (expected %s)",
          force ? force : "(auto)", it == MGPU_INDEX_I64 ? 64 : 32, c->elem_size, (long long)c->row_elems,
          (long long)c->n, (long long)c->table_rows, (long long)c->src_off, (long long)c->dst_off,
          (long long)c->src_pad, (long long)c->dst_pad, c->oob, (long long)bad_rows, (long long)bad_gap,
          mgpu_status_string(checked), mgpu_status_string(expected));
    CHECK_STATUS(mgpu_check_index_errors(h), MGPU_STATUS_SUCCESS); /* the check cleared the word */
    CUDA_OK(cudaFree(d_src));
    CUDA_OK(cudaFree(d_dst));
    CUDA_OK(cudaFree(d_idx));
    free(h_src);
    free(h_dst);
    free(idx);
}

static void run_gather(mgpu_handle *h, struct gather_case c)
{
    static const char *kinds[3] = {"narrow", "wide", "unaligned"};
    for (int it = 0; it < 2; it++) {
        const mgpu_index_type t = it ? MGPU_INDEX_I64 : MGPU_INDEX_I32;
        run_gather_once(h, &c, t, NULL);
        const int64_t row_bytes = c.row_elems * c.elem_size;
        const int vec16 = ((c.src_off | c.dst_off | c.src_pad | c.dst_pad | row_bytes) % 16) == 0;
        for (int k = 0; k < 3; k++) {
            if ((k == 0 && (!vec16 || row_bytes > 512)) || (k == 1 && !vec16))
                continue;
            char name[64];
            snprintf(name, sizeof name, "mgpu_gather_%s_%s_i%d", kinds[k], arch_tag, it ? 64 : 32);
            run_gather_once(h, &c, t, name);
        }
    }
}

static void test_gather(mgpu_handle *h)
{
    const int elem_sizes[4] = {1, 2, 4, 8};
    const int64_t row_bytes[] = {1, 2, 3, 7, 8, 16, 24, 48, 100, 256, 512, 528, 1000, 2048, 4112, 8192, 14336};
    const int64_t ns[] = {1, 7, 65, 1000};
    for (size_t r = 0; r < sizeof row_bytes / sizeof row_bytes[0]; r++)
        for (int e = 0; e < 4; e++) {
            if (row_bytes[r] % elem_sizes[e])
                continue;
            const int64_t elems = row_bytes[r] / elem_sizes[e];
            const int es = elem_sizes[e];
            for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
                const int64_t n = ns[k];
                if ((e != 2 || quick) && n != 65) /* every size with 65 rows; other counts with 4-byte elements */
                    continue;
                run_gather(h, (struct gather_case){elems, n, 777, es, 0, 0, 0, 0, 0});
                run_gather(h, (struct gather_case){elems, n, 300, es, 16, 48, 32, 16, 1});
                run_gather(h, (struct gather_case){elems, n, 300, es, es, 3 * es, es, 5 * es, n > 1});
            }
        }
    /* one source row; no source rows at all (every index out of range) */
    run_gather(h, (struct gather_case){64, 100, 1, 4, 0, 0, 0, 0, 0});
    run_gather(h, (struct gather_case){64, 100, 0, 4, 0, 0, 0, 0, 0});
    run_gather(h, (struct gather_case){3, 10, 0, 1, 1, 0, 0, 0, 0});
    /* 16-byte row lengths with misaligned pointers */
    run_gather(h, (struct gather_case){128, 1000, 100, 2, 4, 0, 0, 0, 1});
    run_gather(h, (struct gather_case){256, 100, 100, 8, 0, 8, 0, 0, 0});
    /* a larger one through every path */
    run_gather(h, (struct gather_case){512, 20000, 4096, 4, 0, 0, 0, 0, 1});

    /* empty calls succeed and touch nothing */
    mgpu_gather_desc d = MGPU_GATHER_DESC_INIT;
    d.elem_size = 4;
    d.row_elems = 16;
    d.src_row_stride = d.dst_row_stride = 64;
    CHECK_STATUS(mgpu_gather(h, &d), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_check_index_errors(h), MGPU_STATUS_SUCCESS);
}

/* ------------------------------------------------------------- scatter-add */

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

struct scatter_case {
    int64_t row_elems, n, dst_rows;
    int64_t elem_off, pad; /* elements: base offset and stride padding */
    int oob;
};

static void run_scatter(mgpu_handle *h, struct scatter_case c, mgpu_dtype t, mgpu_index_type it, int sorted)
{
    const int64_t es = (int64_t)dtype_bytes(t);
    const int64_t stride = (c.row_elems + c.pad) * es;
    const size_t src_size = (size_t)(c.elem_off * es + c.n * stride), dst_size = (size_t)(c.elem_off * es + c.dst_rows * stride);
    unsigned char *h_src = malloc(src_size + 1), *h_dst0 = malloc(dst_size + 1), *h_dst = malloc(dst_size + 1),
                  *h_dst2 = malloc(dst_size + 1);
    for (size_t k = 0; k + (size_t)es <= src_size; k += (size_t)es)
        host_store_elem(h_src + k, t, (float)((double)(rng() % 2001) / 1000.0 - 1.0));
    for (size_t k = 0; k + (size_t)es <= dst_size; k += (size_t)es)
        host_store_elem(h_dst0 + k, t, (float)((double)(rng() % 2001) / 1000.0 - 1.0));
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(c.n + 1));
    int any_oob = 0;
    for (int64_t i = 0; i < c.n; i++) {
        idx[i] = (int64_t)(rng() % (uint64_t)c.dst_rows);
        if (c.oob && i % 11 == 5)
            idx[i] = i % 2 ? -1 : c.dst_rows + i;
        any_oob |= idx[i] < 0 || idx[i] >= c.dst_rows;
    }
    if (sorted)
        qsort(idx, (size_t)c.n, sizeof *idx, cmp_i64);

    /* reference in double, and each element's error budget */
    const size_t elems = dst_size / (size_t)es;
    double *ref = malloc(sizeof(double) * elems), *mag = malloc(sizeof(double) * elems),
           *cnt = calloc(elems, sizeof(double));
    for (size_t k = 0; k < elems; k++) {
        ref[k] = host_load_elem(h_dst0 + k * (size_t)es, t);
        mag[k] = fabs(ref[k]);
    }
    for (int64_t i = 0; i < c.n; i++) {
        if (idx[i] < 0 || idx[i] >= c.dst_rows)
            continue;
        for (int64_t e = 0; e < c.row_elems; e++) {
            const size_t o = (size_t)(c.elem_off + idx[i] * (c.row_elems + c.pad) + e);
            const double v = host_load_elem(h_src + (size_t)(c.elem_off * es + i * stride + e * es), t);
            ref[o] += v;
            mag[o] += fabs(v);
            cnt[o] += 1;
        }
    }
    unsigned char *d_src = dev_alloc(src_size), *d_dst = dev_alloc(dst_size);
    void *d_idx = dev_alloc((size_t)c.n * 8);
    CUDA_OK(cudaMemcpy(d_src, h_src, src_size, cudaMemcpyHostToDevice));
    upload_indices(d_idx, idx, c.n, it);

    mgpu_scatter_add_desc d = MGPU_SCATTER_ADD_DESC_INIT;
    d.src = d_src + c.elem_off * es;
    d.src_row_stride = stride;
    d.dst = d_dst + c.elem_off * es;
    d.dst_rows = c.dst_rows;
    d.dst_row_stride = stride;
    d.index = d_idx;
    d.index_type = it;
    d.n_indices = c.n;
    d.row_elems = c.row_elems;
    d.dtype = t;
    d.mode = sorted ? MGPU_SCATTER_SORTED : MGPU_SCATTER_ATOMIC;
    const double eps = dtype_eps(t) * 2; /* one ulp of the storage type */
    for (int rep = 0; rep < (sorted ? 2 : 1); rep++) {
        CUDA_OK(cudaMemcpy(d_dst, h_dst0, dst_size, cudaMemcpyHostToDevice));
        const mgpu_status s = mgpu_scatter_add(h, &d);
        CHECK(s == MGPU_STATUS_SUCCESS, "mgpu_scatter_add: %s (%s)", mgpu_status_string(s), mgpu_last_error_message());
        const mgpu_status checked = mgpu_check_index_errors(h);
        CHECK(checked == (any_oob ? MGPU_STATUS_INDEX_OUT_OF_RANGE : MGPU_STATUS_SUCCESS),
              "scatter check: %s (oob %d)", mgpu_status_string(checked), any_oob);
        CUDA_OK(cudaMemcpy(rep ? h_dst2 : h_dst, d_dst, dst_size, cudaMemcpyDeviceToHost));
    }
    int64_t bad = 0;
    double worst = 0;
    for (size_t k = 0; k < elems; k++) {
        const double got = host_load_elem(h_dst + k * (size_t)es, t);
        /* atomic: a rounding per addition in the storage type; sorted: fp32 sum, one rounding */
        const double tol = sorted ? eps * fabs(ref[k]) + F32_ULP * mag[k] * (cnt[k] + 1) + 1e-30
                                  : eps * mag[k] * (cnt[k] + 1) + 1e-30;
        const double diff = fabs(got - ref[k]);
        bad += !(diff <= tol);
        if (diff / tol > worst)
            worst = diff / tol;
    }
    CHECK(bad == 0, "scatter_add %s dtype=%d i%d row_elems=%lld n=%lld dst_rows=%lld off=%lld pad=%lld oob=%d: "
                    "%lld bad elements (worst %.2f of tolerance)",
          sorted ? "sorted" : "atomic", t, it == MGPU_INDEX_I64 ? 64 : 32, (long long)c.row_elems, (long long)c.n,
          (long long)c.dst_rows, (long long)c.elem_off, (long long)c.pad, c.oob, (long long)bad, worst);
    if (sorted) {
        CHECK(memcmp(h_dst, h_dst2, dst_size) == 0, "sorted scatter_add is not bitwise reproducible");
        /* reversed (descending) indices must be reported */
        if (c.n >= 2 && idx[0] != idx[c.n - 1]) {
            for (int64_t i = 0; i < c.n / 2; i++) {
                const int64_t tmp = idx[i];
                idx[i] = idx[c.n - 1 - i];
                idx[c.n - 1 - i] = tmp;
            }
            upload_indices(d_idx, idx, c.n, it);
            CHECK_STATUS(mgpu_scatter_add(h, &d), MGPU_STATUS_SUCCESS);
            CHECK_STATUS(mgpu_check_index_errors(h), MGPU_STATUS_INVALID_VALUE);
        }
    }
    CUDA_OK(cudaFree(d_src));
    CUDA_OK(cudaFree(d_dst));
    CUDA_OK(cudaFree(d_idx));
    free(h_src);
    free(h_dst0);
    free(h_dst);
    free(h_dst2);
    free(idx);
    free(ref);
    free(mag);
    free(cnt);
}

static void test_scatter(mgpu_handle *h)
{
    const mgpu_dtype dtypes[3] = {MGPU_DTYPE_F32, MGPU_DTYPE_BF16, MGPU_DTYPE_F16};
    const int64_t row_elems[] = {1, 2, 3, 8, 64, 129, 1024};
    for (int t = 0; t < 3; t++)
        for (int sorted = 0; sorted < 2; sorted++)
            for (int it = 0; it < 2; it++)
                for (size_t r = 0; r < sizeof row_elems / sizeof row_elems[0]; r++) {
                    const mgpu_index_type ix = it ? MGPU_INDEX_I64 : MGPU_INDEX_I32;
                    const int64_t re = row_elems[r];
                    if (quick && (re == 2 || re == 8 || re == 1024))
                        continue;
                    run_scatter(h, (struct scatter_case){re, 1, 1, 0, 0, 0}, dtypes[t], ix, sorted);
                    run_scatter(h, (struct scatter_case){re, 7, 5, 0, 0, 1}, dtypes[t], ix, sorted);
                    run_scatter(h, (struct scatter_case){re, 1000, 1000, 0, 0, 0}, dtypes[t], ix, sorted);
                    run_scatter(h, (struct scatter_case){re, 3000, 3, 1, 1, 1}, dtypes[t], ix, sorted);
                }
    /* empty calls */
    mgpu_scatter_add_desc d = MGPU_SCATTER_ADD_DESC_INIT;
    d.row_elems = 4;
    d.src_row_stride = d.dst_row_stride = 16;
    CHECK_STATUS(mgpu_scatter_add(h, &d), MGPU_STATUS_SUCCESS);
}

int main(void)
{
    if (!gpu_available()) {
        printf("no CUDA device: skipped\n");
        return MGPU_TEST_SKIP;
    }
    struct cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    snprintf(arch_tag, sizeof arch_tag, "sm%d", prop.major * 10 + prop.minor);
    const char *q = getenv("MGPU_TEST_QUICK");
    quick = q && q[0] && strcmp(q, "0") != 0;
    CUDA_OK(cudaFree(NULL)); /* make the runtime's primary context current */
    mgpu_handle *h = NULL;
    mgpu_status s = mgpu_create(&h);
    if (s != MGPU_STATUS_SUCCESS) {
        fprintf(stderr, "mgpu_create: %s (%s)\n", mgpu_status_string(s), mgpu_last_error_message());
        return 1;
    }
    CHECK_STATUS(mgpu_check_index_errors(h), MGPU_STATUS_SUCCESS); /* nothing run yet */
    test_gather(h);
    test_scatter(h);
    mgpu_destroy(h);
    return check_exit();
}
