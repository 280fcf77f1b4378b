/*
 * The one place the attention operations encode tensor maps (see
 * attention_maps.h); the layout rules are those of the attention ABIs.
 */
#include "attention/attention_maps.h"

#define TMA_RANK 4

mgpu_status mgpu_attention_encode_map(const struct mgpu_driver *d, int dtype, const struct mgpu_attention_map_shape *m,
                                      const char *what, CUtensorMap *out)
{
    cuuint64_t dims[TMA_RANK], strides[TMA_RANK - 1];
    cuuint32_t box[TMA_RANK], elem_strides[TMA_RANK];
    for (int i = 0; i < TMA_RANK; i++) {
        dims[i] = m->dims[i];
        box[i] = m->box[i];
        elem_strides[i] = 1;
    }
    for (int i = 0; i < TMA_RANK - 1; i++)
        strides[i] = m->byte_strides[i];
    CUresult r = d->cuTensorMapEncodeTiled(
        out, dtype == MGPU_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, TMA_RANK,
        (void *)m->base, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, what);
    return MGPU_STATUS_SUCCESS;
}
