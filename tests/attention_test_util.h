/*
 * What the attention GPU tests (test_attention_gpu.c, forward, and
 * test_attention_bwd_gpu.c, backward) share: the memory layouts they put
 * tensors in, their strides and sizes, the pseudo-random sequence lengths.
 */
#ifndef MGPU_TESTS_ATTENTION_TEST_UTIL_H
#define MGPU_TESTS_ATTENTION_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mgpukernels.h"

#define ALIGN_ELEMS 8 /* 16 bytes of 16-bit elements: what strides and offsets keep */

enum layout {
    DENSE,  /* zero strides for the inputs: the library's dense default */
    BHSD,   /* (batch, head, seq, dim) memory order through strides */
    PADDED, /* gaps after each head, row and batch entry */
    FUSED,  /* forward only: Q, K, V interleaved in one (batch, seq, 3, heads, dim) buffer */
};

/* Strides of a tensor with `rows` seq rows per batch entry (varlen: the
 * packed total, one batch entry); FUSED and DENSE give dense strides. */
mgpu_attention_strides strides_for(enum layout l, int64_t rows, int64_t heads, int64_t d);

/* Elements from the first to one past the last of a (nbatch, rows, heads, d) tensor. */
size_t span_of(const mgpu_attention_strides *s, int64_t nbatch, int64_t rows, int64_t heads, int64_t d);

const char *layout_name(enum layout l);

/* cu_seqlens_q / cu_seqlens_k (batch + 1 offsets each) copied to new device
 * arrays; the caller frees them with cudaFree. */
void upload_seqlens(const int32_t *cq, const int32_t *ck, int batch, int32_t **cq_dev, int32_t **ck_dev);

/* Deterministic pseudo-random lengths in [lo, hi]. */
int pick(uint64_t *s, int lo, int hi);

#endif
