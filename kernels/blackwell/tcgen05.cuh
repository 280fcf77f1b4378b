/*
 * The small pieces of tcgen05 (5th-generation tensor core, sm_100a) that CCCL's
 * cuda::ptx does not provide: the 64-bit shared-memory matrix descriptor and the
 * 32-bit instruction descriptor of tcgen05.mma, plus the TMEM address arithmetic.
 * The instructions themselves (tcgen05.alloc/mma/commit/ld/wait/fence) are used
 * through cuda::ptx directly.
 *
 * Bit layouts follow the PTX ISA, "Tensor Core 5th Generation Family
 * Instructions" -> "Matrix Descriptors" (shared memory descriptor table and the
 * instruction descriptor table for .kind::f16 and .kind::f8f6f4). Written from the tables; this
 * code has not run on Blackwell hardware (compiled and SASS-checked only).
 */
#pragma once

#include <cuda/ptx>
#include <cuda/std/type_traits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

namespace mgpu {
namespace sm100 {

/* ---- Shared memory matrix descriptor ---------------------------------------
 *
 *   bits  0-13  start address >> 4
 *   bits 16-29  leading dimension byte offset (LBO) >> 4
 *   bits 32-45  stride dimension byte offset (SBO) >> 4
 *   bits 46-48  fixed 0b001 (descriptor version on sm_100)
 *   bits 49-51  matrix base offset (0: tiles start 1024-byte aligned)
 *   bit  52     LBO mode (0: relative byte offset)
 *   bits 61-63  swizzle mode (2: 128-byte swizzle, 16-byte atoms)
 *
 * Only the 128-byte swizzle is used here: every operand tile is what TMA writes
 * with CU_TENSOR_MAP_SWIZZLE_128B, i.e. rows of 128 bytes, 8 rows (1024 bytes)
 * forming one swizzle atom, with the XOR pattern taken from address bits
 * [7:9] -> [4:6]. The tile bases are 1024-byte aligned, so the base offset is 0.
 */
constexpr uint64_t kSmemDescSwizzle128B = 2;

__host__ __device__ constexpr uint64_t smem_desc_field(uint32_t bytes)
{
    return static_cast<uint64_t>((bytes & 0x3FFFFu) >> 4);
}

__host__ __device__ constexpr uint64_t make_smem_desc_sw128(uint32_t smem_addr, uint32_t lbo_bytes,
                                                            uint32_t sbo_bytes)
{
    return smem_desc_field(smem_addr) | (smem_desc_field(lbo_bytes) << 16) |
           (smem_desc_field(sbo_bytes) << 32) | (uint64_t{1} << 46) | (kSmemDescSwizzle128B << 61);
}

/* K-major operand (rows of 128 bytes = 64 K-elements, one row per M/N index):
 * SBO = 1024 bytes between consecutive groups of 8 rows; LBO is unused for
 * swizzled K-major layouts (the ISA says "assumed 1"; we encode 16 bytes). */
__host__ __device__ constexpr uint64_t make_smem_desc_kmajor_sw128(uint32_t smem_addr)
{
    return make_smem_desc_sw128(smem_addr, 16, 1024);
}

/* MN-major operand stored as chunks of 64 MN-elements (128 bytes) x 64 K-rows,
 * `chunk_bytes` apart (8 KB when the chunks are consecutive):
 * LBO = stride between 64-element MN chunks ("from the first swizzle-size/16
 *       rows to the next" in the ISA's 128-bit-normalised terms),
 * SBO = 1024 bytes between consecutive groups of 8 K-rows. */
__host__ __device__ constexpr uint64_t make_smem_desc_mnmajor_sw128(uint32_t smem_addr, uint32_t chunk_bytes)
{
    return make_smem_desc_sw128(smem_addr, chunk_bytes, 1024);
}

/* Byte offset, inside one stage's tile, of the K-slice that the j-th
 * tcgen05.mma reads: 32 bytes of K (K = 16 for 16-bit inputs, K = 32 for
 * fp8 inputs of .kind::f8f6f4).
 *   K-major:  32 bytes along the 128-byte row (the hardware applies the
 *             swizzle to the absolute address, so a plain start-address advance
 *             inside the atom is correct with a 1024-aligned tile base);
 *   MN-major: 16 K-rows of 128 bytes = 2048 bytes (two whole swizzle atoms). */
template <bool kKMajor>
__host__ __device__ constexpr uint32_t k16_step_bytes()
{
    return kKMajor ? 32u : 2048u;
}

/* ---- Instruction descriptor, .kind::f16 -------------------------------------
 *
 *   bits  0-1  sparsity selector (0)      bit  2  sparse (0 = dense)
 *   bit   3    saturate (0)               bits 4-5  D type (1 = F32)
 *   bits  7-9  A type (0 = F16, 1 = BF16) bits 10-12 B type (same)
 *   bit  13/14 negate A/B (0)
 *   bit  15    transpose A (1 = A is M-major)
 *   bit  16    transpose B (1 = B is N-major)
 *   bits 17-22 N >> 3                     bits 24-28 M >> 4
 *   bits 30-31 max shift (.ws only, 0)
 */
template <class T>
__host__ __device__ constexpr uint32_t f16_kind_type_code()
{
    static_assert(cuda::std::is_same<T, __half>::value || cuda::std::is_same<T, __nv_bfloat16>::value,
                  "kind::f16 takes fp16 or bf16 inputs");
    return cuda::std::is_same<T, __nv_bfloat16>::value ? 1u : 0u;
}

/* kCtaGroup 1: M = 64 or 128 on one SM; kCtaGroup 2 (the collective MMA of a
 * CTA pair, issued by the even CTA): M = 128 or 256 across the pair, each
 * CTA holding M / 2 rows of A and of D. N is the full N either way (each
 * CTA of a pair holds N / 2 columns of B, the instruction reads both). */
template <class T, int kM, int kN, bool kAKMajor, bool kBKMajor, int kCtaGroup = 1>
__host__ __device__ constexpr uint32_t make_idesc_f16_f32acc()
{
    static_assert(kCtaGroup == 1 || kCtaGroup == 2, "cta_group::1 or cta_group::2");
    static_assert(kCtaGroup == 1 ? (kM == 64 || kM == 128) : (kM == 128 || kM == 256),
                  "cta_group::1 MMA has M = 64 or 128; cta_group::2 has M = 128 or 256");
    static_assert(kN % 16 == 0 && kN >= 16 && kN <= 256, "M >= 128 needs N % 16 == 0, 16 <= N <= 256");
    return (1u << 4)                           /* D: fp32 */
           | (f16_kind_type_code<T>() << 7)    /* A type */
           | (f16_kind_type_code<T>() << 10)   /* B type */
           | ((kAKMajor ? 0u : 1u) << 15)      /* A M-major */
           | ((kBKMajor ? 0u : 1u) << 16)      /* B N-major */
           | (static_cast<uint32_t>(kN >> 3) << 17)
           | (static_cast<uint32_t>(kM >> 4) << 24);
}

/* ---- Instruction descriptor, .kind::f8f6f4 ---------------------------------
 *
 * The same bit layout as .kind::f16 (the PTX ISA gives both in one table);
 * only the type codes differ:
 *   bits 7-9  A type, bits 10-12 B type: E4M3 = 0, E5M2 = 1 (E2M3 = 3,
 *             E3M2 = 4, E2M1 = 5: the fp6 / fp4 formats, unused here)
 *   bits 4-5  D type: F32 = 1 (the only one of this kind)
 * K of one instruction is 32 elements (32 bytes of an fp8 row), and the
 * operands here are K-major (fp8 GEMMs are "TN", as on Hopper), so the
 * transpose bits stay 0. */
template <class T>
__host__ __device__ constexpr uint32_t f8f6f4_kind_type_code()
{
    static_assert(cuda::std::is_same<T, __nv_fp8_e4m3>::value || cuda::std::is_same<T, __nv_fp8_e5m2>::value,
                  "kind::f8f6f4 is used here for fp8 e4m3 / e5m2 inputs");
    return cuda::std::is_same<T, __nv_fp8_e5m2>::value ? 1u : 0u;
}

/* TA is the MMA's A operand (M side), TB its B operand (N side). */
template <class TA, class TB, int kM, int kN, int kCtaGroup = 1>
__host__ __device__ constexpr uint32_t make_idesc_f8f6f4_f32acc()
{
    static_assert(kCtaGroup == 1 || kCtaGroup == 2, "cta_group::1 or cta_group::2");
    static_assert(kCtaGroup == 1 ? (kM == 64 || kM == 128) : (kM == 128 || kM == 256),
                  "cta_group::1 MMA has M = 64 or 128; cta_group::2 has M = 128 or 256");
    static_assert(kN % 16 == 0 && kN >= 16 && kN <= 256, "M >= 128 needs N % 16 == 0, 16 <= N <= 256");
    return (1u << 4)                             /* D: fp32 */
           | (f8f6f4_kind_type_code<TA>() << 7)  /* A type */
           | (f8f6f4_kind_type_code<TB>() << 10) /* B type */
           | (static_cast<uint32_t>(kN >> 3) << 17)
           | (static_cast<uint32_t>(kM >> 4) << 24);
}

template <class T>
constexpr bool kIsFp8Sm100 = cuda::std::is_same<T, __nv_fp8_e4m3>::value || cuda::std::is_same<T, __nv_fp8_e5m2>::value;

/* The GEMM's instruction descriptor (gemm_sm100_persistent.cuh): the MMA
 * computes D^T, so its A operand is the GEMM's B tile and its B operand the
 * GEMM's A tile. fp8 operands are both K-major. */
template <class TA, class TB, bool kAKMajor, bool kBKMajor, int kM, int kN, int kCtaGroup>
__host__ __device__ constexpr uint32_t make_gemm_idesc()
{
    if constexpr (kIsFp8Sm100<TA>)
        return make_idesc_f8f6f4_f32acc<TB, TA, kM, kN, kCtaGroup>();
    else
        return make_idesc_f16_f32acc<TA, kM, kN, kBKMajor, kAKMajor, kCtaGroup>();
}

/* ---- Tensor memory addresses ------------------------------------------------
 * A TMEM address is (lane << 16) | column. For an M = 128 cta_group::1 MMA the
 * accumulator row i lives in lane i and column j in column base + j. */
__host__ __device__ constexpr uint32_t tmem_addr(uint32_t base, uint32_t lane, uint32_t column)
{
    return base + (lane << 16) + column;
}

} // namespace sm100
} // namespace mgpu
