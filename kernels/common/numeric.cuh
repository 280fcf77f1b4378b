/*
 * Element conversions shared by every kernel, and the GEMM epilogue:
 *
 *   D = scale_d * act(alpha * scale_a * scale_b * acc + beta * C + bias)
 *
 * in the output's dtype (abi/gemm_abi.h lists the fields). C is read only
 * when beta != 0 so that an uninitialised (even NaN) C never leaks into D;
 * the bias is read only inside D (callers check row < m and col < n first).
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

#include "abi/gemm_abi.h"

namespace mgpu {

__device__ __forceinline__ float load_as_float(uint64_t base, int32_t dtype, int64_t offset)
{
    switch (dtype) {
    case MGPU_ABI_F32: return reinterpret_cast<const float *>(base)[offset];
    case MGPU_ABI_BF16: return __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(base)[offset]);
    case MGPU_ABI_E4M3: return static_cast<float>(reinterpret_cast<const __nv_fp8_e4m3 *>(base)[offset]);
    case MGPU_ABI_E5M2: return static_cast<float>(reinterpret_cast<const __nv_fp8_e5m2 *>(base)[offset]);
    default: return __half2float(reinterpret_cast<const __half *>(base)[offset]);
    }
}

/* One fp16, bf16 or fp32 element as fp32 (the element type known at compile time). */
template <class T>
__device__ __forceinline__ float load_float(const T *p)
{
    if constexpr (std::is_same_v<T, __half>)
        return __half2float(*p);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
        return __bfloat162float(*p);
    else
        return *p;
}

__device__ __forceinline__ int abi_dtype_bytes(int32_t dtype)
{
    return dtype == MGPU_ABI_F32 ? 4 : dtype == MGPU_ABI_E4M3 || dtype == MGPU_ABI_E5M2 ? 1 : 2;
}

__device__ __forceinline__ void store_from_float(uint64_t base, int32_t dtype, int64_t offset, float v)
{
    switch (dtype) {
    case MGPU_ABI_F32: reinterpret_cast<float *>(base)[offset] = v; break;
    case MGPU_ABI_BF16: reinterpret_cast<__nv_bfloat16 *>(base)[offset] = __float2bfloat16_rn(v); break;
    default: reinterpret_cast<__half *>(base)[offset] = __float2half_rn(v); break;
    }
}

/* Two fp32 values -> one register of two 16-bit values (T = __half or
 * __nv_bfloat16), lo in the low half: the layout of a 16-bit wgmma A fragment
 * and of two adjacent elements in memory. */
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi)
{
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "f16 or bf16");
    uint32_t r;
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
        r = *reinterpret_cast<uint32_t *>(&v);
    } else {
        __half2 v = __floats2half2_rn(lo, hi);
        r = *reinterpret_cast<uint32_t *>(&v);
    }
    return r;
}

/* The tanh approximation of GELU, as cuBLASLt's CUBLASLT_EPILOGUE_GELU:
 * 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3). Since
 * 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)), it is computed as x / (1 + exp(-2u))
 * with the hardware exp2 and a fast division: a few instructions and a
 * relative error of a few fp32 ulps, where tanhf would expand to a long
 * sequence at each of the epilogue's unrolled elements. For very negative x,
 * exp(-2u) overflows and the result is 0 (the exact value is below 1e-30). */
constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ float gelu_tanh(float x)
{
    const float u = kGeluSqrt2OverPi * fmaf(kGeluCubic * x, x * x, x);
    return __fdividef(x, 1.0f + __expf(-2.0f * u));
}

/* The same GELU with the hardware tanh (tanh.approx.f32, relative error
 * about 2^-11): one special-function instruction per element instead of two
 * (exp2 and the reciprocal), for outputs of 16 bits, whose own rounding
 * (a relative 2^-8 for bf16, 2^-11 for f16 at most) is of the same order or
 * coarser. The
 * fused epilogue of a whole tile runs tile_m x 128 of these, which the
 * special-function units serve at 16 per cycle per SM. Times 2 * half_scale
 * (the output scale), folded in as x * half_scale (1 + t): the factor is
 * formed first, so no product overflows where the scaled GELU does not (for
 * very negative x, t is -1, the factor exactly 0 and the result -0, as
 * GELU's). u is written x (c + c' x^2), so the whole form is five fp32
 * instructions and the tanh per element. */
__device__ __forceinline__ float gelu_tanh_fast_scaled(float x, float half_scale)
{
    const float u = x * fmaf(kGeluSqrt2OverPi * kGeluCubic, x * x, kGeluSqrt2OverPi);
    float t;
    asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
    return x * fmaf(half_scale, t, half_scale);
}

/* The per-tensor scales of one launch, read from device memory once per
 * thread (not per tile): scale_a * scale_b and scale_d, 1 where absent. */
struct GemmScales {
    float ab, d;

    __device__ __forceinline__ explicit GemmScales(const mgpu_gemm_args &args)
    {
        const float sa = args.scale_a ? __ldg(reinterpret_cast<const float *>(args.scale_a)) : 1.0f;
        const float sb = args.scale_b ? __ldg(reinterpret_cast<const float *>(args.scale_b)) : 1.0f;
        ab = sa * sb;
        d = args.scale_d ? __ldg(reinterpret_cast<const float *>(args.scale_d)) : 1.0f;
    }
};

/* The epilogue of one launch. `fused` is set when a bias or an activation
 * sits between alpha * acc + beta * C and the output scale; otherwise the
 * output scale is folded into alpha and beta and the whole epilogue is
 * D = alpha * acc + beta * C, the plain BLAS one. */
struct GemmEpilogue {
    float alpha, beta, scale_d;
    uint64_t bias;             /* 0: none */
    int64_t bias_batch_stride; /* elements */
    int32_t bias_dtype;        /* F32 or D's dtype */
    bool bias_per_column, fused;
    int32_t activation;

    __device__ __forceinline__ GemmEpilogue(const mgpu_gemm_args &args, const GemmScales &scales)
    {
        bias = args.bias;
        bias_batch_stride = args.bias_batch_stride;
        bias_dtype = args.bias_dtype;
        bias_per_column = args.bias_mode == MGPU_ABI_BIAS_PER_COLUMN;
        activation = args.activation;
        fused = bias != 0 || activation != MGPU_ABI_ACT_NONE;
        alpha = args.alpha * scales.ab;
        beta = args.beta;
        scale_d = scales.d;
        if (!fused) {
            alpha *= scale_d;
            beta *= scale_d;
            scale_d = 1.0f;
        }
    }

    __device__ __forceinline__ explicit GemmEpilogue(const mgpu_gemm_args &args) : GemmEpilogue(args, GemmScales(args))
    {
    }

    /* Points the bias at batch `batch`'s vector (call once per tile). */
    __device__ __forceinline__ void select_batch(int64_t batch)
    {
        if (bias)
            bias += static_cast<uint64_t>(batch * bias_batch_stride) * abi_dtype_bytes(bias_dtype);
    }

    /* Activation and output scale. */
    __device__ __forceinline__ float activate(float v) const
    {
        if (activation == MGPU_ABI_ACT_RELU)
            v = fmaxf(v, 0.0f);
        else if (activation == MGPU_ABI_ACT_GELU)
            v = gelu_tanh(v);
        return v * scale_d;
    }

    /* Element i of the bias of the batch chosen by select_batch; OutT is D's
     * element type, and the bias is OutT or fp32. */
    template <class OutT>
    __device__ __forceinline__ float bias_at(int64_t i) const
    {
        if (std::is_same_v<OutT, float> || bias_dtype == MGPU_ABI_F32)
            return __ldg(reinterpret_cast<const float *>(bias) + i);
        if constexpr (std::is_same_v<OutT, __half>)
            return __half2float(__ldg(reinterpret_cast<const __half *>(bias) + i));
        else
            return __bfloat162float(__ldg(reinterpret_cast<const __nv_bfloat16 *>(bias) + i));
    }

    /* The bias and activation for an output dtype known only at run time. */
    __device__ __forceinline__ float finish_any(float v, int64_t row, int64_t col) const
    {
        if (!fused)
            return v;
        const float b = bias ? load_as_float(bias, bias_dtype, bias_per_column ? col : row) : 0.0f;
        return activate(v + b);
    }
};

/* Writes element `offset` (in elements from args.c) of D, at (row, col) of
 * the batch chosen by ep.select_batch, from its accumulator. */
__device__ __forceinline__ void epilogue_store(const mgpu_gemm_args &args, const GemmEpilogue &ep, int64_t offset,
                                               float acc, int64_t row, int64_t col)
{
    float v = ep.alpha * acc;
    if (ep.beta != 0.0f)
        v = fmaf(ep.beta, load_as_float(args.c, args.c_dtype, offset), v);
    store_from_float(args.c, args.c_dtype, offset, ep.finish_any(v, row, col));
}

} // namespace mgpu
