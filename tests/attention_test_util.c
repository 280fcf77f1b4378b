/* See attention_test_util.h. */
#include "attention_test_util.h"

#include <cuda_runtime_api.h>

mgpu_attention_strides strides_for(enum layout l, int64_t rows, int64_t heads, int64_t d)
{
    mgpu_attention_strides s;
    if (l == BHSD) {
        s.seq = d;
        s.head = rows * d;
        s.batch = heads * rows * d;
    } else if (l == PADDED) {
        s.head = d + 2 * ALIGN_ELEMS;
        s.seq = heads * s.head + ALIGN_ELEMS;
        s.batch = rows * s.seq + 4 * ALIGN_ELEMS;
    } else {
        s.head = d;
        s.seq = heads * d;
        s.batch = rows * heads * d;
    }
    return s;
}

size_t span_of(const mgpu_attention_strides *s, int64_t nbatch, int64_t rows, int64_t heads, int64_t d)
{
    return (size_t)((nbatch - 1) * s->batch + (rows - 1) * s->seq + (heads - 1) * s->head + d);
}

const char *layout_name(enum layout l)
{
    return l == BHSD ? "bhsd" : l == PADDED ? "padded" : l == FUSED ? "fused" : "dense";
}

int pick(uint64_t *s, int lo, int hi)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (int)((*s >> 33) % (uint64_t)(hi - lo + 1));
}

void upload_seqlens(const int32_t *cq, const int32_t *ck, int batch, int32_t **cq_dev, int32_t **ck_dev)
{
    const size_t bytes = sizeof(int32_t) * (size_t)(batch + 1);
    cudaMalloc((void **)cq_dev, bytes);
    cudaMalloc((void **)ck_dev, bytes);
    cudaMemcpy(*cq_dev, cq, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(*ck_dev, ck, bytes, cudaMemcpyHostToDevice);
}
