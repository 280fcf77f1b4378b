/*
 * Hopper warpgroup MMA (wgmma) as inline PTX, in one place: the shared-memory
 * matrix descriptor, the fence / commit / wait instructions,
 * wgmma.mma_async m64nNk16 with fp32 accumulators and f16 or bf16 operands
 * (N in {64, 128, 256}), and m64nNk32 with fp8 operands (e4m3 or e5m2, each
 * operand its own; N in {128, 192}; SASS QGMMA), both operands read from
 * shared memory. Either kind consumes 32 bytes of K per instruction.
 *
 * CCCL's cuda::ptx has no wgmma wrapper, hence this file. The operand lists of
 * an m64n256 call run to 128 accumulator registers; the macros below spell
 * them ("%0, %1, ..." and "+f"(d[0]), ...) so that each instruction is written
 * once per shape and stays readable.
 *
 * Accumulator fragment (PTX ISA, "wgmma .m64nNk16 register fragment D"):
 * thread t of the warpgroup (warp w = t / 32, lane l = t % 32) holds d[i],
 * i in [0, N/2), for
 *     row = 16*w + l/4 + 8*((i/2) % 2),      col = 8*(i/4) + 2*(l%4) + (i%2).
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

namespace mgpu {
namespace sm90 {

/* ---- shared-memory matrix descriptor -------------------------------------
 *
 * 64-bit value (PTX ISA, "Matrix Descriptor Format"):
 *   bits  0-13  start address >> 4
 *   bits 16-29  leading dimension byte offset (LBO) >> 4
 *   bits 32-45  stride dimension byte offset (SBO) >> 4
 *   bits 49-51  matrix base offset (0: every tile here is 1024-byte aligned)
 *   bits 62-63  swizzle mode: 1 = 128-byte swizzle
 *
 * With the 128-byte swizzle, a tile is a stack of 128-byte rows, swizzled in
 * 1024-byte atoms of 8 rows (what TMA writes with CU_TENSOR_MAP_SWIZZLE_128B):
 *   K-major  (rows = M/N, 64 K-elements per row): SBO = 1024 (next 8 M/N rows),
 *            LBO unused (1 by convention); the k16 slice j starts at +32*j bytes.
 *   MN-major (rows = K, 64 M/N-elements per row): SBO = 1024 (next 8 K rows),
 *            LBO = bytes between 64-element M/N chunks; k16 slice j at +2048*j.
 */
constexpr uint64_t kWgmmaSwizzle128B = 1;

__device__ __forceinline__ uint64_t wgmma_desc(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes)
{
    return static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) |
           (static_cast<uint64_t>((lbo_bytes & 0x3FFFF) >> 4) << 16) |
           (static_cast<uint64_t>((sbo_bytes & 0x3FFFF) >> 4) << 32) | (kWgmmaSwizzle128B << 62);
}

/* Moves a descriptor's start address by `bytes` (a multiple of 16 that keeps it
 * inside shared memory, so the 14-bit field does not carry). */
__device__ __forceinline__ uint64_t wgmma_desc_advance(uint64_t desc, uint32_t bytes)
{
    return desc + (bytes >> 4);
}

/* ---- ordering -------------------------------------------------------------- */

/* Before the first wgmma of a batch: orders earlier register (accumulator)
 * writes and shared-memory accesses of this warpgroup before the async MMA. */
__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

/* Closes the wgmma ops issued since the last commit into one group. */
__device__ __forceinline__ void wgmma_commit_group()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* Waits until at most N committed groups of this warpgroup are pending. */
template <int N>
__device__ __forceinline__ void wgmma_wait_group()
{
    static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes 0..7");
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Ties the accumulators to this point of the instruction stream: the compiler
 * may not move their reads or writes across it. Call it around wgmma batches
 * and after the final wait, so no accumulator access drifts into the window
 * where the tensor cores own the registers. */
template <int R>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

/* ---- mma_async --------------------------------------------------------------
 *
 * D(64 x N, f32) = A(64 x 16) * B(16 x N) + (scale_d ? D : 0), A and B from
 * shared memory through descriptors. kTransA = 1 when A is M-major in shared
 * memory (0: K-major), kTransB = 1 when B is N-major (0: K-major).
 */

/* "%<t>0, ..., %<t>9": ten consecutive operand numbers; t is the tens digit
 * (empty for 0..9). */
#define MGPU_WGMMA_R10(t)                                                                          \
    "%" #t "0, %" #t "1, %" #t "2, %" #t "3, %" #t "4, %" #t "5, %" #t "6, %" #t "7, %" #t "8, %" #t "9"

#define MGPU_WGMMA_D32                                                                             \
    "{" MGPU_WGMMA_R10() ", " MGPU_WGMMA_R10(1) ", " MGPU_WGMMA_R10(2) ", %30, %31}"
#define MGPU_WGMMA_D64                                                                             \
    "{" MGPU_WGMMA_R10() ", " MGPU_WGMMA_R10(1) ", " MGPU_WGMMA_R10(2) ", " MGPU_WGMMA_R10(3)      \
    ", " MGPU_WGMMA_R10(4) ", " MGPU_WGMMA_R10(5) ", %60, %61, %62, %63}"
#define MGPU_WGMMA_D128                                                                            \
    "{" MGPU_WGMMA_R10() ", " MGPU_WGMMA_R10(1) ", " MGPU_WGMMA_R10(2) ", " MGPU_WGMMA_R10(3)      \
    ", " MGPU_WGMMA_R10(4) ", " MGPU_WGMMA_R10(5) ", " MGPU_WGMMA_R10(6) ", " MGPU_WGMMA_R10(7)    \
    ", " MGPU_WGMMA_R10(8) ", " MGPU_WGMMA_R10(9) ", " MGPU_WGMMA_R10(10) ", " MGPU_WGMMA_R10(11)  \
    ", %120, %121, %122, %123, %124, %125, %126, %127}"

#define MGPU_WGMMA_D96                                                                             \
    "{" MGPU_WGMMA_R10() ", " MGPU_WGMMA_R10(1) ", " MGPU_WGMMA_R10(2) ", " MGPU_WGMMA_R10(3)      \
    ", " MGPU_WGMMA_R10(4) ", " MGPU_WGMMA_R10(5) ", " MGPU_WGMMA_R10(6) ", " MGPU_WGMMA_R10(7)    \
    ", " MGPU_WGMMA_R10(8) ", %90, %91, %92, %93, %94, %95}"

/* "+f"(d[b]), ..., "+f"(d[b + 7]) and multiples. */
#define MGPU_WGMMA_F8(d, b)                                                                        \
    "+f"(d[(b) + 0]), "+f"(d[(b) + 1]), "+f"(d[(b) + 2]), "+f"(d[(b) + 3]), "+f"(d[(b) + 4]),      \
        "+f"(d[(b) + 5]), "+f"(d[(b) + 6]), "+f"(d[(b) + 7])
#define MGPU_WGMMA_F32(d, b)                                                                       \
    MGPU_WGMMA_F8(d, (b) + 0), MGPU_WGMMA_F8(d, (b) + 8), MGPU_WGMMA_F8(d, (b) + 16),              \
        MGPU_WGMMA_F8(d, (b) + 24)
#define MGPU_WGMMA_F64(d, b) MGPU_WGMMA_F32(d, (b) + 0), MGPU_WGMMA_F32(d, (b) + 32)
#define MGPU_WGMMA_F96(d) MGPU_WGMMA_F64(d, 0), MGPU_WGMMA_F32(d, 64)
#define MGPU_WGMMA_F128(d) MGPU_WGMMA_F64(d, 0), MGPU_WGMMA_F64(d, 64)

/* One wgmma.mma_async statement. After the R accumulators come, numbered
 * R..R+4: desc_a, desc_b, scale_d (register, turned into the predicate),
 * transpose-A and transpose-B (immediates); scale-a and scale-b are +1. */
#define MGPU_WGMMA_ASM(INSTR, DREGS, OP_A, OP_B, OP_SCALE_D, OP_TA, OP_TB, ...)                    \
    asm volatile("{\n"                                                                             \
                 ".reg .pred p;\n"                                                                 \
                 "setp.ne.b32 p, " OP_SCALE_D ", 0;\n" INSTR " " DREGS ", " OP_A ", " OP_B         \
                 ", p, 1, 1, " OP_TA ", " OP_TB ";\n"                                              \
                 "}\n"                                                                             \
                 : __VA_ARGS__                                                                     \
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(int(kTransA)), "n"(int(kTransB)))

template <class T, bool kTransA, bool kTransB>
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d)
{
    if constexpr (std::is_same_v<T, __half>)
        MGPU_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16", MGPU_WGMMA_D32, "%32", "%33",
                       "%34", "%35", "%36", MGPU_WGMMA_F32(d, 0));
    else
        MGPU_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", MGPU_WGMMA_D32, "%32", "%33",
                       "%34", "%35", "%36", MGPU_WGMMA_F32(d, 0));
}

template <class T, bool kTransA, bool kTransB>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d)
{
    if constexpr (std::is_same_v<T, __half>)
        MGPU_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", MGPU_WGMMA_D64, "%64", "%65",
                       "%66", "%67", "%68", MGPU_WGMMA_F64(d, 0));
    else
        MGPU_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", MGPU_WGMMA_D64, "%64", "%65",
                       "%66", "%67", "%68", MGPU_WGMMA_F64(d, 0));
}

template <class T, bool kTransA, bool kTransB>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d)
{
    if constexpr (std::is_same_v<T, __half>)
        MGPU_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", MGPU_WGMMA_D128, "%128", "%129",
                       "%130", "%131", "%132", MGPU_WGMMA_F128(d));
    else
        MGPU_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", MGPU_WGMMA_D128, "%128", "%129",
                       "%130", "%131", "%132", MGPU_WGMMA_F128(d));
}

/* ---- fp8: m64nNk32 ------------------------------------------------------------
 *
 * D(64 x N, f32) = A(64 x 32) * B(32 x N) + (scale_d ? D : 0) with A and B of
 * type e4m3 or e5m2 each. fp8 wgmma reads both operands K-major only (no
 * transpose immediates). The tensor cores keep the running sum of an fp8
 * wgmma chain at reduced precision: callers add the result into a separate
 * fp32 accumulator every few k-steps (see gemm_sm90_persistent.cuh).
 */
template <class T>
constexpr bool kIsFp8 = std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>;
template <class T>
constexpr bool kIsE4m3 = std::is_same_v<T, __nv_fp8_e4m3>;

/* One fp8 wgmma.mma_async statement: after the R accumulators come desc_a,
 * desc_b and scale_d (turned into the predicate); scale-a and scale-b are +1. */
#define MGPU_WGMMA_FP8_ASM(INSTR, DREGS, OP_A, OP_B, OP_SCALE_D, ...)                               \
    asm volatile("{\n"                                                                             \
                 ".reg .pred p;\n"                                                                 \
                 "setp.ne.b32 p, " OP_SCALE_D ", 0;\n" INSTR " " DREGS ", " OP_A ", " OP_B         \
                 ", p, 1, 1;\n"                                                                    \
                 "}\n"                                                                             \
                 : __VA_ARGS__                                                                     \
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d))

/* The statement for the operand types TA, TB of one shape. */
#define MGPU_WGMMA_FP8_PAIRS(SHAPE, DREGS, OP_A, OP_B, OP_SCALE_D, ...)                             \
    if constexpr (kIsE4m3<TA> && kIsE4m3<TB>)                                                      \
        MGPU_WGMMA_FP8_ASM("wgmma.mma_async.sync.aligned." SHAPE ".f32.e4m3.e4m3", DREGS, OP_A,    \
                           OP_B, OP_SCALE_D, __VA_ARGS__);                                         \
    else if constexpr (kIsE4m3<TA>)                                                                \
        MGPU_WGMMA_FP8_ASM("wgmma.mma_async.sync.aligned." SHAPE ".f32.e4m3.e5m2", DREGS, OP_A,    \
                           OP_B, OP_SCALE_D, __VA_ARGS__);                                         \
    else if constexpr (kIsE4m3<TB>)                                                                \
        MGPU_WGMMA_FP8_ASM("wgmma.mma_async.sync.aligned." SHAPE ".f32.e5m2.e4m3", DREGS, OP_A,    \
                           OP_B, OP_SCALE_D, __VA_ARGS__);                                         \
    else                                                                                           \
        MGPU_WGMMA_FP8_ASM("wgmma.mma_async.sync.aligned." SHAPE ".f32.e5m2.e5m2", DREGS, OP_A,    \
                           OP_B, OP_SCALE_D, __VA_ARGS__)

template <class TA, class TB>
__device__ __forceinline__ void wgmma_m64n128k32(float (&d)[64], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d)
{
    MGPU_WGMMA_FP8_PAIRS("m64n128k32", MGPU_WGMMA_D64, "%64", "%65", "%66", MGPU_WGMMA_F64(d, 0));
}

template <class TA, class TB>
__device__ __forceinline__ void wgmma_m64n192k32(float (&d)[96], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d)
{
    MGPU_WGMMA_FP8_PAIRS("m64n192k32", MGPU_WGMMA_D96, "%96", "%97", "%98", MGPU_WGMMA_F96(d));
}

/* ---- one k-step of either kind ----------------------------------------------
 *
 * D(64 x N) (+)= A * B over 32 bytes of K: m64nNk16 for f16 / bf16 (TA == TB),
 * m64nNk32 for fp8 (K-major operands only), picked at compile time.
 */
constexpr int kWgmmaKBytes = 32; /* bytes of K one wgmma instruction consumes */

template <int N, class TA, class TB, bool kTransA, bool kTransB>
__device__ __forceinline__ void wgmma_m64_kstep(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d)
{
    if constexpr (kIsFp8<TA>) {
        static_assert(kIsFp8<TB>, "fp8 operands pair only with fp8 operands");
        static_assert(!kTransA && !kTransB, "fp8 wgmma reads K-major operands only");
        static_assert(N == 128 || N == 192, "fp8 wgmma N must be 128 or 192 here");
        if constexpr (N == 128)
            wgmma_m64n128k32<TA, TB>(d, desc_a, desc_b, scale_d);
        else
            wgmma_m64n192k32<TA, TB>(d, desc_a, desc_b, scale_d);
    } else {
        static_assert(std::is_same_v<TA, TB>, "16-bit operands must have one type");
        static_assert(std::is_same_v<TA, __half> || std::is_same_v<TA, __nv_bfloat16>, "f16 or bf16 operands");
        static_assert(N == 64 || N == 128 || N == 256, "wgmma N must be 64, 128 or 256 here");
        if constexpr (N == 64)
            wgmma_m64n64k16<TA, kTransA, kTransB>(d, desc_a, desc_b, scale_d);
        else if constexpr (N == 128)
            wgmma_m64n128k16<TA, kTransA, kTransB>(d, desc_a, desc_b, scale_d);
        else
            wgmma_m64n256k16<TA, kTransA, kTransB>(d, desc_a, desc_b, scale_d);
    }
}

#undef MGPU_WGMMA_FP8_PAIRS
#undef MGPU_WGMMA_FP8_ASM
#undef MGPU_WGMMA_ASM
#undef MGPU_WGMMA_F128
#undef MGPU_WGMMA_F96
#undef MGPU_WGMMA_F64
#undef MGPU_WGMMA_F32
#undef MGPU_WGMMA_F8
#undef MGPU_WGMMA_D128
#undef MGPU_WGMMA_D96
#undef MGPU_WGMMA_D64
#undef MGPU_WGMMA_D32
#undef MGPU_WGMMA_R10

} // namespace sm90
} // namespace mgpu
