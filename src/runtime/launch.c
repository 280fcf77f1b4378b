/*
 * The two driver steps every operation ends with: encoding the tensor maps
 * its plan describes (one encoder for every operation) and launching a
 * variant on the handle's stream with the block size, dynamic shared memory
 * and cluster shape the registry records for it.
 */
#include "runtime.h"

#include <stdio.h>
#include <string.h>

static CUtensorMapDataType map_type(enum mgpu_map_type t)
{
    switch (t) {
    case MGPU_MAP_F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case MGPU_MAP_BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case MGPU_MAP_F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case MGPU_MAP_U32: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
    case MGPU_MAP_U64: return CU_TENSOR_MAP_DATA_TYPE_UINT64;
    case MGPU_MAP_U8: break;
    }
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

mgpu_status mgpu_encode_tensor_map(const struct mgpu_driver *d, const struct mgpu_tensor_map_desc *m,
                                   const char *what, CUtensorMap *out)
{
    cuuint64_t dims[MGPU_MAP_MAX_RANK], strides[MGPU_MAP_MAX_RANK - 1];
    cuuint32_t box[MGPU_MAP_MAX_RANK], elem_strides[MGPU_MAP_MAX_RANK];
    for (int i = 0; i < m->rank; i++) {
        dims[i] = m->dims[i];
        box[i] = m->box[i];
        elem_strides[i] = 1;
        if (i > 0)
            strides[i - 1] = m->byte_strides[i - 1];
    }
    CUresult r = d->cuTensorMapEncodeTiled(
        out, map_type(m->type), (cuuint32_t)m->rank, (void *)(uintptr_t)m->base, dims, strides, box, elem_strides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, m->swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
        m->l2_promote == 0     ? CU_TENSOR_MAP_L2_PROMOTION_NONE
        : m->l2_promote == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                               : CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        char message[96];
        snprintf(message, sizeof message, "cuTensorMapEncodeTiled (%s)", what);
        return mgpu_driver_fail(d, r, message);
    }
    return MGPU_STATUS_SUCCESS;
}

static mgpu_status launch(mgpu_handle *h, const struct mgpu_driver *d, int variant, unsigned grid_x, unsigned grid_y,
                          unsigned grid_z, void **params, int programmatic)
{
    const struct mgpu_variant *v = &mgpu_variants[variant];
    CUfunction fn = NULL;
    mgpu_status s = mgpu_kernel_function(h, d, variant, &fn);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    const unsigned cluster = (unsigned)v->cluster;
    CUlaunchAttribute attrs[2];
    unsigned n_attrs = 0;
    memset(attrs, 0, sizeof attrs);
    if (cluster > 1) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n_attrs].value.clusterDim.x = cluster;
        attrs[n_attrs].value.clusterDim.y = 1;
        attrs[n_attrs].value.clusterDim.z = 1;
        n_attrs++;
    }
    /* Older drivers get an ordinary launch (the kernels' griddepcontrol
     * instructions are then no-ops): handle.c, programmatic_launch. */
    if (programmatic && h->programmatic_launch) {
        attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n_attrs].value.programmaticStreamSerializationAllowed = 1;
        n_attrs++;
    }
    CUlaunchConfig cfg = {
        .gridDimX = grid_x, .gridDimY = grid_y, .gridDimZ = grid_z,
        .blockDimX = (unsigned)v->threads, .blockDimY = 1, .blockDimZ = 1,
        .sharedMemBytes = (unsigned)v->smem_bytes,
        .hStream = h->stream,
        .attrs = attrs, .numAttrs = n_attrs,
    };
    CUresult r = d->cuLaunchKernelEx(&cfg, fn, params, NULL);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, v->name);
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_launch(mgpu_handle *h, const struct mgpu_driver *d, int variant, unsigned grid_x, unsigned grid_y,
                        unsigned grid_z, void **params)
{
    return launch(h, d, variant, grid_x, grid_y, grid_z, params, 0);
}

mgpu_status mgpu_launch_programmatic(mgpu_handle *h, const struct mgpu_driver *d, int variant, unsigned grid_x,
                                     unsigned grid_y, unsigned grid_z, void **params)
{
    return launch(h, d, variant, grid_x, grid_y, grid_z, params, 1);
}
