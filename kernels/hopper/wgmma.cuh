/*
 * Hopper warpgroup MMA (wgmma) as inline PTX, the one layer every sm_90a
 * kernel uses: the shared-memory matrix descriptor, the fence / commit / wait
 * instructions, and wgmma.mma_async with fp32 accumulators in three forms:
 *
 *   wgmma_ss<T, kTnspA, kTnspB[, kScaleA]>(d, desc_a, desc_b, scale_d)
 *       m64nNk16, T = f16 / bf16, A and B from shared memory, each K-major (0)
 *       or MN-major (1, the transpose bit); N in {16, 32, 64, 80, 96, 112,
 *       128, 192, 224, 256}; kScaleA = -1 subtracts A B (the instruction's
 *       imm-scale-a), 1 (the default) adds it.
 *   wgmma_rs<T, kTnspB>(d, a, desc_b, scale_d)                m64nNk16, T = f16 / bf16,
 *       A from registers (4 x 32 bits per thread), B from shared memory;
 *       N in {16, 32, 64, 96, 128, 192, 256}.
 *   wgmma_ss_fp8<TA, TB>(d, desc_a, desc_b, scale_d)          m64nNk32, TA, TB = e4m3 / e5m2,
 *       both K-major (fp8 wgmma has no transpose); N in {128, 192}.
 *   wgmma_rs_fp8<TA, TB>(d, a, desc_b, scale_d)               m64nNk32, A from registers
 *       (4 x 32 bits, four 8-bit values each), B K-major; N in {128}.
 *
 * N is the accumulator's: d is float[N / 2], and the overload for that size
 * is the instruction of that shape. scale_d = 0 overwrites d, else adds to it.
 * The instruction text of each form is written once, in its _BODY macro; the
 * shape lists at the end of the file instantiate it per N (a template, so a
 * shape no kernel calls costs nothing). CCCL's cuda::ptx has no wgmma wrapper,
 * hence the inline PTX.
 *
 * Accumulator fragment (PTX ISA, "wgmma .m64nNk16 register fragment D"):
 * thread t of the warpgroup (warp w = t / 32, lane l = t % 32) holds d[i],
 * i in [0, N/2), for
 *     row = 16*w + l/4 + 8*((i/2) % 2),      col = 8*(i/4) + 2*(l%4) + (i%2).
 * The register A fragment of m64nNk16 is the same picture for 16 columns, two
 * 16-bit values per register: a[0] = (row, cols 0-7 part), a[1] = (row + 8,
 * same), a[2] = (row, cols 8-15 part), a[3] = (row + 8, same); so accumulator
 * elements d[8k .. 8k+7] converted pairwise to 16 bits are the A fragment of
 * k-step k (attention's P = softmax(S) feeding O += P V).
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
 *   K-major  (rows = M/N, 128 bytes of K per row): SBO = 1024 (next 8 M/N rows),
 *            LBO unused (16 or 1 by convention); the k-step j starts at +32*j bytes.
 *   MN-major (rows = K, 64 M/N-elements per row): SBO = 1024 (next 8 K rows),
 *            LBO = bytes between 64-element M/N chunks; k16 step j at +2048*j.
 */
constexpr uint64_t kWgmmaSwizzle128B = 1;
/* Bytes of one 8-row swizzle atom: the SBO, and the alignment of every tile. */
constexpr uint32_t kSwizzleAtomBytes = 1024;

/* A descriptor in two words (wgmma_desc joins them), for loops of wgmmas over
 * one tile: the low word (start address, LBO) of the tile's first step,
 * computed once, and the high word (SBO, swizzle), a constant. Step j's descriptor is then
 * wgmma_desc_join(lo + offset_j / 16, sbo_bytes): one 32-bit add (the 14-bit
 * address field does not carry inside shared memory) where wgmma_desc of each
 * step's address repeats the masks and shifts. */
__device__ __forceinline__ uint32_t wgmma_desc_lo(uint32_t smem_addr, uint32_t lbo_bytes)
{
    return ((smem_addr & 0x3FFFF) >> 4) | (((lbo_bytes & 0x3FFFF) >> 4) << 16);
}

__device__ __forceinline__ uint64_t wgmma_desc_join(uint32_t lo, uint32_t sbo_bytes)
{
    return static_cast<uint64_t>(lo) | (static_cast<uint64_t>((sbo_bytes & 0x3FFFF) >> 4) << 32) |
           (kWgmmaSwizzle128B << 62);
}

__device__ __forceinline__ uint64_t wgmma_desc(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes)
{
    return wgmma_desc_join(wgmma_desc_lo(smem_addr, lbo_bytes), sbo_bytes);
}

/* Moves a descriptor's start address by `bytes` (a multiple of 16 that keeps it
 * inside shared memory, so the 14-bit field does not carry). */
__device__ __forceinline__ uint64_t wgmma_desc_advance(uint64_t desc, uint32_t bytes)
{
    return desc + (bytes >> 4);
}

/* ---- ordering -------------------------------------------------------------- */

/* Before the first wgmma of a batch: orders earlier register (accumulator, A
 * fragment) writes and shared-memory accesses of this warpgroup before the
 * async MMA. */
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

/* Ties registers (accumulators or A fragments) to this point of the
 * instruction stream: the compiler may not move their reads or writes across
 * it. Call it around wgmma batches and after the final wait, so no access
 * drifts into the window where the tensor cores own the registers. */
template <int R>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

template <int R>
__device__ __forceinline__ void wgmma_fence_operands(uint32_t (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; ++i)
        asm volatile("" : "+r"(d[i])::"memory");
}

template <class T>
constexpr bool kIsFp8 = std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>;
template <class T>
constexpr bool kIsE4m3 = std::is_same_v<T, __nv_fp8_e4m3>;

/* ---- operand lists ----------------------------------------------------------
 *
 * An m64nN instruction takes R = N/2 accumulators, asm operands 0 .. R-1
 * ("+f"(d[i])); its other operands are numbered from R on. Operand numbers
 * come in groups of eight: MGPU_WGMMA_FROM<r> is r .. r+7; MGPU_WGMMA_D<R> is
 * the string "%0, ..., %<R-1>", MGPU_WGMMA_F<R>(d) the R "+f" constraints.
 */
#define MGPU_WGMMA_NAMES(...) MGPU_WGMMA_NAMES_(__VA_ARGS__)
#define MGPU_WGMMA_NAMES_(p0, p1, p2, p3, p4, p5, p6, p7)                                                     \
    "%" #p0 ", %" #p1 ", %" #p2 ", %" #p3 ", %" #p4 ", %" #p5 ", %" #p6 ", %" #p7
#define MGPU_WGMMA_TIES(d, ...) MGPU_WGMMA_TIES_(d, __VA_ARGS__)
#define MGPU_WGMMA_TIES_(d, p0, p1, p2, p3, p4, p5, p6, p7)                                                   \
    "+f"(d[p0]), "+f"(d[p1]), "+f"(d[p2]), "+f"(d[p3]), "+f"(d[p4]), "+f"(d[p5]), "+f"(d[p6]), "+f"(d[p7])

#define MGPU_WGMMA_FROM0 0, 1, 2, 3, 4, 5, 6, 7
#define MGPU_WGMMA_FROM8 8, 9, 10, 11, 12, 13, 14, 15
#define MGPU_WGMMA_FROM16 16, 17, 18, 19, 20, 21, 22, 23
#define MGPU_WGMMA_FROM24 24, 25, 26, 27, 28, 29, 30, 31
#define MGPU_WGMMA_FROM32 32, 33, 34, 35, 36, 37, 38, 39
#define MGPU_WGMMA_FROM40 40, 41, 42, 43, 44, 45, 46, 47
#define MGPU_WGMMA_FROM48 48, 49, 50, 51, 52, 53, 54, 55
#define MGPU_WGMMA_FROM56 56, 57, 58, 59, 60, 61, 62, 63
#define MGPU_WGMMA_FROM64 64, 65, 66, 67, 68, 69, 70, 71
#define MGPU_WGMMA_FROM72 72, 73, 74, 75, 76, 77, 78, 79
#define MGPU_WGMMA_FROM80 80, 81, 82, 83, 84, 85, 86, 87
#define MGPU_WGMMA_FROM88 88, 89, 90, 91, 92, 93, 94, 95
#define MGPU_WGMMA_FROM96 96, 97, 98, 99, 100, 101, 102, 103
#define MGPU_WGMMA_FROM104 104, 105, 106, 107, 108, 109, 110, 111
#define MGPU_WGMMA_FROM112 112, 113, 114, 115, 116, 117, 118, 119
#define MGPU_WGMMA_FROM120 120, 121, 122, 123, 124, 125, 126, 127
#define MGPU_WGMMA_FROM128 128, 129, 130, 131, 132, 133, 134, 135

#define MGPU_WGMMA_D8 MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM0)
#define MGPU_WGMMA_D16 MGPU_WGMMA_D8 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM8)
#define MGPU_WGMMA_D24 MGPU_WGMMA_D16 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM16)
#define MGPU_WGMMA_D32 MGPU_WGMMA_D24 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM24)
#define MGPU_WGMMA_D40 MGPU_WGMMA_D32 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM32)
#define MGPU_WGMMA_D48 MGPU_WGMMA_D40 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM40)
#define MGPU_WGMMA_D56 MGPU_WGMMA_D48 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM48)
#define MGPU_WGMMA_D64 MGPU_WGMMA_D56 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM56)
#define MGPU_WGMMA_D72 MGPU_WGMMA_D64 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM64)
#define MGPU_WGMMA_D80 MGPU_WGMMA_D72 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM72)
#define MGPU_WGMMA_D88 MGPU_WGMMA_D80 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM80)
#define MGPU_WGMMA_D96 MGPU_WGMMA_D88 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM88)
#define MGPU_WGMMA_D104 MGPU_WGMMA_D96 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM96)
#define MGPU_WGMMA_D112 MGPU_WGMMA_D104 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM104)
#define MGPU_WGMMA_D120 MGPU_WGMMA_D112 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM112)
#define MGPU_WGMMA_D128 MGPU_WGMMA_D120 ", " MGPU_WGMMA_NAMES(MGPU_WGMMA_FROM120)

#define MGPU_WGMMA_F8(d) MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM0)
#define MGPU_WGMMA_F16(d) MGPU_WGMMA_F8(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM8)
#define MGPU_WGMMA_F24(d) MGPU_WGMMA_F16(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM16)
#define MGPU_WGMMA_F32(d) MGPU_WGMMA_F24(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM24)
#define MGPU_WGMMA_F40(d) MGPU_WGMMA_F32(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM32)
#define MGPU_WGMMA_F48(d) MGPU_WGMMA_F40(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM40)
#define MGPU_WGMMA_F56(d) MGPU_WGMMA_F48(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM48)
#define MGPU_WGMMA_F64(d) MGPU_WGMMA_F56(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM56)
#define MGPU_WGMMA_F72(d) MGPU_WGMMA_F64(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM64)
#define MGPU_WGMMA_F80(d) MGPU_WGMMA_F72(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM72)
#define MGPU_WGMMA_F88(d) MGPU_WGMMA_F80(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM80)
#define MGPU_WGMMA_F96(d) MGPU_WGMMA_F88(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM88)
#define MGPU_WGMMA_F104(d) MGPU_WGMMA_F96(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM96)
#define MGPU_WGMMA_F112(d) MGPU_WGMMA_F104(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM104)
#define MGPU_WGMMA_F120(d) MGPU_WGMMA_F112(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM112)
#define MGPU_WGMMA_F128(d) MGPU_WGMMA_F120(d), MGPU_WGMMA_TIES(d, MGPU_WGMMA_FROM120)

/* ---- the three forms: instruction text once each ----------------------------
 *
 * MGPU_WGMMA_STATEMENT(BODY, N, TA, TB, R) emits the statement of shape m64nN
 * (R = N/2 accumulators) for PTX operand types TA, TB: it expands the
 * accumulator list and the group of operand numbers after it (p0, p1, ... =
 * R, R+1, ...) and hands them to the form's BODY.
 */
#define MGPU_WGMMA_STATEMENT(BODY, N, TA, TB, R)                                                              \
    MGPU_WGMMA_STATEMENT_(BODY, N, TA, TB, MGPU_WGMMA_D##R, MGPU_WGMMA_FROM##R, MGPU_WGMMA_F##R(d))
#define MGPU_WGMMA_STATEMENT_(BODY, ...) BODY(__VA_ARGS__)

/* SS: after the accumulators, desc_a, desc_b, scale_d (register, turned into
 * the predicate), transpose-A, transpose-B, scale-a (immediates); scale-b
 * is +1. */
#define MGPU_WGMMA_SS_BODY(N, TA, TB, DREGS, p0, p1, p2, p3, p4, p5, p6, p7, ...)                             \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #p2 ", 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #TA "." #TB " {" DREGS "}, %" #p0         \
                 ", %" #p1 ", p, %" #p5 ", 1, %" #p3 ", %" #p4 ";\n}\n"                                      \
                 : __VA_ARGS__                                                                               \
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(int(kTnspA)), "n"(int(kTnspB)), "n"(kScaleA))

/* RS: after the accumulators, a[0..3], desc_b, scale_d, transpose-B. */
#define MGPU_WGMMA_RS_BODY(N, TA, TB, DREGS, p0, p1, p2, p3, p4, p5, p6, p7, ...)                             \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #p5 ", 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #TA "." #TB " {" DREGS "}, {%" #p0        \
                 ", %" #p1 ", %" #p2 ", %" #p3 "}, %" #p4 ", p, 1, 1, %" #p6 ";\n}\n"                        \
                 : __VA_ARGS__                                                                               \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(int(kTnspB)))

/* SS fp8 (k32, no transpose immediates): after the accumulators, desc_a,
 * desc_b, scale_d. */
#define MGPU_WGMMA_FP8_BODY(N, TA, TB, DREGS, p0, p1, p2, p3, p4, p5, p6, p7, ...)                            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #p2 ", 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32." #TA "." #TB " {" DREGS "}, %" #p0         \
                 ", %" #p1 ", p, 1, 1;\n}\n"                                                                 \
                 : __VA_ARGS__                                                                               \
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d))

/* RS fp8 (k32, B K-major only): after the accumulators, a[0..3], desc_b, scale_d. */
#define MGPU_WGMMA_RS_FP8_BODY(N, TA, TB, DREGS, p0, p1, p2, p3, p4, p5, p6, p7, ...)                         \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #p5 ", 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32." #TA "." #TB " {" DREGS "}, {%" #p0        \
                 ", %" #p1 ", %" #p2 ", %" #p3 "}, %" #p4 ", p, 1, 1;\n}\n"                                 \
                 : __VA_ARGS__                                                                               \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d))

/* The statement for the C++ operand type(s) of the function being defined. */
#define MGPU_WGMMA_16BIT_TYPES(BODY, N, R)                                                                   \
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "f16 or bf16 operands");   \
    if constexpr (std::is_same_v<T, __half>)                                                                 \
        MGPU_WGMMA_STATEMENT(BODY, N, f16, f16, R);                                                          \
    else                                                                                                     \
        MGPU_WGMMA_STATEMENT(BODY, N, bf16, bf16, R)
#define MGPU_WGMMA_FP8_TYPES(BODY, N, R)                                                                     \
    static_assert(kIsFp8<TA> && kIsFp8<TB>, "e4m3 or e5m2 operands");                                        \
    if constexpr (kIsE4m3<TA> && kIsE4m3<TB>)                                                                \
        MGPU_WGMMA_STATEMENT(BODY, N, e4m3, e4m3, R);                                                        \
    else if constexpr (kIsE4m3<TA>)                                                                          \
        MGPU_WGMMA_STATEMENT(BODY, N, e4m3, e5m2, R);                                                        \
    else if constexpr (kIsE4m3<TB>)                                                                          \
        MGPU_WGMMA_STATEMENT(BODY, N, e5m2, e4m3, R);                                                        \
    else                                                                                                     \
        MGPU_WGMMA_STATEMENT(BODY, N, e5m2, e5m2, R)

/* One function per shape and form; N, R = N/2. */
#define MGPU_WGMMA_SS(N, R)                                                                                  \
    template <class T, bool kTnspA, bool kTnspB, int kScaleA = 1>                                            \
    __device__ __forceinline__ void wgmma_ss(float(&d)[R], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) \
    {                                                                                                        \
        static_assert(kScaleA == 1 || kScaleA == -1, "imm-scale-a is +1 or -1");                             \
        MGPU_WGMMA_16BIT_TYPES(MGPU_WGMMA_SS_BODY, N, R);                                                     \
    }
#define MGPU_WGMMA_RS(N, R)                                                                                  \
    template <class T, bool kTnspB>                                                                          \
    __device__ __forceinline__ void wgmma_rs(float(&d)[R], const uint32_t(&a)[4], uint64_t desc_b,           \
                                             uint32_t scale_d)                                               \
    {                                                                                                        \
        MGPU_WGMMA_16BIT_TYPES(MGPU_WGMMA_RS_BODY, N, R);                                                     \
    }
#define MGPU_WGMMA_SS_FP8(N, R)                                                                              \
    template <class TA, class TB>                                                                            \
    __device__ __forceinline__ void wgmma_ss_fp8(float(&d)[R], uint64_t desc_a, uint64_t desc_b,             \
                                                 uint32_t scale_d)                                           \
    {                                                                                                        \
        MGPU_WGMMA_FP8_TYPES(MGPU_WGMMA_FP8_BODY, N, R);                                                      \
    }

#define MGPU_WGMMA_RS_FP8(N, R)                                                                              \
    template <class TA, class TB>                                                                            \
    __device__ __forceinline__ void wgmma_rs_fp8(float(&d)[R], const uint32_t(&a)[4], uint64_t desc_b,       \
                                                 uint32_t scale_d)                                           \
    {                                                                                                        \
        MGPU_WGMMA_FP8_TYPES(MGPU_WGMMA_RS_FP8_BODY, N, R);                                                   \
    }

/* ---- the shapes -------------------------------------------------------------
 * SS 16-bit: attention S = Q K^T (N = key block 80, 112, 128) and its
 * backward's products; the 16-bit GEMM (N = tile_m 64, 128, 192, 224, 256).
 * RS 16-bit: attention O += P V (N = head dim) and its backward's products.
 * SS fp8: the fp8 GEMM (N = tile_m 128, 192), fp8 attention S = Q K^T (N = key block 128).
 * RS fp8: fp8 attention O += P V (N = head dim 128). */
MGPU_WGMMA_SS(16, 8)
MGPU_WGMMA_SS(32, 16)
MGPU_WGMMA_SS(64, 32)
MGPU_WGMMA_SS(80, 40)
MGPU_WGMMA_SS(96, 48)
MGPU_WGMMA_SS(112, 56)
MGPU_WGMMA_SS(128, 64)
MGPU_WGMMA_SS(192, 96)
MGPU_WGMMA_SS(224, 112)
MGPU_WGMMA_SS(256, 128)

MGPU_WGMMA_RS(16, 8)
MGPU_WGMMA_RS(32, 16)
MGPU_WGMMA_RS(64, 32)
MGPU_WGMMA_RS(96, 48)
MGPU_WGMMA_RS(128, 64)
MGPU_WGMMA_RS(192, 96)
MGPU_WGMMA_RS(256, 128)

MGPU_WGMMA_SS_FP8(128, 64)
MGPU_WGMMA_SS_FP8(192, 96)

MGPU_WGMMA_RS_FP8(128, 64)

/* ---- one GEMM k-step of either kind -------------------------------------------
 *
 * D(64 x N) (+)= A * B over 32 bytes of K: m64nNk16 for f16 / bf16 (TA == TB),
 * m64nNk32 for fp8 (K-major operands only), picked at compile time. The
 * tensor cores keep the running sum of an fp8 wgmma chain at reduced
 * precision: callers add the result into a separate fp32 accumulator every
 * few k-steps (see gemm_sm90_persistent.cuh).
 */
constexpr int kWgmmaKBytes = 32; /* bytes of K one wgmma instruction consumes */

template <int N, class TA, class TB, bool kTransA, bool kTransB>
__device__ __forceinline__ void wgmma_m64_kstep(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d)
{
    if constexpr (kIsFp8<TA>) {
        static_assert(!kTransA && !kTransB, "fp8 wgmma reads K-major operands only");
        wgmma_ss_fp8<TA, TB>(d, desc_a, desc_b, scale_d);
    } else {
        static_assert(std::is_same_v<TA, TB>, "16-bit operands must have one type");
        wgmma_ss<TA, kTransA, kTransB>(d, desc_a, desc_b, scale_d);
    }
}

} // namespace sm90
} // namespace mgpu
