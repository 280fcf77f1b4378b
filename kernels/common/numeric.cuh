/*
 * Element conversions and the scalar GEMM epilogue shared by every kernel:
 * D = alpha * acc + beta * C in the output's dtype, reading C only when
 * beta != 0 so that an uninitialised (even NaN) C never leaks into D.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "common/gemm_abi.h"

namespace mgpu {

__device__ __forceinline__ float load_as_float(uint64_t base, int32_t dtype, int64_t offset)
{
    switch (dtype) {
    case MGPU_ABI_F32: return reinterpret_cast<const float *>(base)[offset];
    case MGPU_ABI_BF16: return __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(base)[offset]);
    default: return __half2float(reinterpret_cast<const __half *>(base)[offset]);
    }
}

__device__ __forceinline__ void store_from_float(uint64_t base, int32_t dtype, int64_t offset, float v)
{
    switch (dtype) {
    case MGPU_ABI_F32: reinterpret_cast<float *>(base)[offset] = v; break;
    case MGPU_ABI_BF16: reinterpret_cast<__nv_bfloat16 *>(base)[offset] = __float2bfloat16_rn(v); break;
    default: reinterpret_cast<__half *>(base)[offset] = __float2half_rn(v); break;
    }
}

/* Writes element `offset` (in elements from args.c) of D from its accumulator. */
__device__ __forceinline__ void epilogue_store(const mgpu_gemm_args &args, int64_t offset, float acc)
{
    float v = args.alpha * acc;
    if (args.beta != 0.0f)
        v = fmaf(args.beta, load_as_float(args.c, args.c_dtype, offset), v);
    store_from_float(args.c, args.c_dtype, offset, v);
}

} // namespace mgpu
