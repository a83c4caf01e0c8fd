// wgmma.cuh: the machinery of the wgmma rungs (wgmma_tma.cu, wgmma_padded.cu): mbarriers, TMA
// copies, wgmma descriptors and instructions, and wgmma_gemm, the product itself (a producer
// warpgroup copying tiles by TMA into a ring of STAGES slots, BM / 64 consumer warpgroups
// multiplying them with wgmma). Its parameters are the including kernel's: BM, BN, STAGES.
#pragma once
#include <cuda.h>
#include <cuda_fp16.h>
#include <stdint.h>

constexpr int kBK = 64;                        // one 128-byte swizzle row of halves
constexpr int kConsumers = BM / 64;            // warpgroups that multiply, 64 rows of C each
constexpr int kThreads = (kConsumers + 1) * 128;
constexpr int kABytes = BM * kBK * 2;          // A's tile: BM rows of 128 bytes
constexpr int kBBoxBytes = kBK * 64 * 2;       // B's tile comes as BN / 64 boxes of 64 k x 64 n
constexpr int kStageBytes = kABytes + (BN / 64) * kBBoxBytes;
constexpr int kAccs = BN / 2;                  // accumulator floats per consumer thread
// A row of C's tile as staged in shared memory for the odd-N store: 8 floats of padding put the 8
// rows one float2 store spans in different banks.
constexpr int kStageRow = BN + 8;
static_assert(kConsumers * 64 * kStageRow * 4 <= STAGES * kStageBytes, "C's tile fits in the ring");

__device__ __forceinline__ uint32_t smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// mbarriers: a phase completes when `count` arrivals and the bytes announced have come in.
__device__ __forceinline__ void bar_init(uint64_t *bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(bar)), "r"(count));
}
__device__ __forceinline__ void bar_expect_bytes(uint64_t *bar, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem(bar)) : "memory");
}
// SUSPEND 1 (a kernel's parameter; 0 where it sets none) passes try_wait a time hint: the warp may
// be parked until the phase completes (or 10 ms pass, and it asks again) rather than the hardware's
// own limit, meant to cut the loop a waiting warp issues (the producer nearly always waits for a
// free slot). Measured in wgmma_epilogue at 4096^3 on an H200: 29.0 M warp instructions -> 28.7 M,
// the same speed: the loops were never many.
#ifndef SUSPEND
#define SUSPEND 0
#endif
__device__ __forceinline__ void bar_wait(uint64_t *bar, int parity) {
#if SUSPEND
    asm volatile("{ .reg .pred done; WAIT: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2; @!done bra WAIT; }"
                 :: "r"(smem(bar)), "r"(parity), "r"(10000000) : "memory");
#else
    asm volatile("{ .reg .pred done; WAIT: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1; @!done bra WAIT; }"
                 :: "r"(smem(bar)), "r"(parity) : "memory");
#endif
}

// TMA: the box at (x, y) (x the contiguous coordinate) of the tensor map, into shared memory at dst.
__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, int x, int y, uint64_t *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(smem(dst)), "l"((uint64_t)map), "r"(x), "r"(y), "r"(smem(bar)) : "memory");
}

// A wgmma shared-memory descriptor with the 128-byte swizzle: start address, leading- and
// stride-dimension byte offsets (PTX ISA, "Matrix Descriptor Format"), each in 16-byte units.
__device__ __forceinline__ uint64_t descriptor(const void *p, uint32_t leading, uint32_t stride) {
    return (uint64_t)((smem(p) & 0x3FFFF) >> 4) | (uint64_t)(leading >> 4) << 16 | (uint64_t)(stride >> 4) << 32 |
           1ull << 62;
}

// wgmma.mma_async m64n128k16, f16 x f16 -> f32: d (the warpgroup's 64 x 128 accumulator, 64
// floats per thread) += A (64 x 16, K-major in shared memory) B (16 x 128, N-major: transposed).
// accumulate false: d = A B, whatever d held (scale-d 0, PTX ISA "wgmma.mma_async"), so a tile's
// first product needs no zeroed accumulators.
__device__ __forceinline__ void wgmma_128(float (&d)[64], uint64_t a, uint64_t b, bool accumulate = true) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %66, 0; "
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 1; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b), "r"((int)accumulate));
}

// wgmma.mma_async m64n256k16, f16 x f16 -> f32: d (the warpgroup's 64 x 256 accumulator, 128
// floats per thread) += A (64 x 16, K-major in shared memory) B (16 x 256, N-major: transposed);
// accumulate false: d = A B, as wgmma_128's.
__device__ __forceinline__ void wgmma_256(float (&d)[128], uint64_t a, uint64_t b, bool accumulate = true) {
    asm volatile(
        "{ .reg .pred p; setp.ne.b32 p, %130, 0; "
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"((int)accumulate));
}

#define WGMMA_N(n) wgmma_##n
#define WGMMA_AT(n) WGMMA_N(n)
#define WGMMA WGMMA_AT(BN)

#ifndef BLBO
#define BLBO 8192
#endif
#ifndef BSBO
#define BSBO 1024
#endif

// The whole product, for a block of kThreads threads launched over C's BM x BN tiles with
// wgmma_shared bytes of dynamic shared memory: A_map and B_map are the tensor maps of A (M x K)
// and B (K x N), or of copies of them whose rows are padded (wgmma_padded.cu); C is M x N.
__device__ __forceinline__ void wgmma_gemm(const CUtensorMap *A_map, const CUtensorMap *B_map, float *C, int M, int N, int K) {
    // The ring, 1024-byte aligned: the 128-byte swizzle repeats every 8 rows (1024 bytes), and TMA
    // and wgmma agree on it only from such a boundary.
    extern __shared__ unsigned char raw[];
    unsigned char *ring = (unsigned char *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(ring + STAGES * kStageBytes), *empty = full + STAGES;
    int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int tiles = (K + kBK - 1) / kBK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) bar_init(&full[s], 1), bar_init(&empty[s], kConsumers);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {   // the producer: one thread asks for every tile
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) {
            for (int t = 0; t < tiles; t++) {
                int s = t % STAGES;
                if (t >= STAGES) bar_wait(&empty[s], (t / STAGES - 1) & 1);   // its slot's last tile is used
                unsigned char *slot = ring + s * kStageBytes;
                bar_expect_bytes(&full[s], kStageBytes);
                tma_load(slot, A_map, t * kBK, row0, &full[s]);
                for (int j = 0; j < BN / 64; j++)
                    tma_load(slot + kABytes + j * kBBoxBytes, B_map, col0 + 64 * j, t * kBK, &full[s]);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    int c = wg - 1;   // this consumer's rows: 64 c .. 64 c + 63 of the tile
    float d[kAccs] = {};
    for (int t = 0; t < tiles; t++) {
        int s = t % STAGES;
        bar_wait(&full[s], (t / STAGES) & 1);
        unsigned char *a = ring + s * kStageBytes + c * 64 * 128, *b = ring + s * kStageBytes + kABytes;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        for (int kk = 0; kk < kBK / 16; kk++) {
            // A: K-major, k step kk is 32 bytes along each 128-byte row; 8-row groups 1024 bytes apart.
            // B: N-major (transposed), k step kk is 16 rows of 128 bytes; 64-wide boxes BLBO apart
            // along N, 8-row groups BSBO apart along K.
            WGMMA(d, descriptor(a + 32 * kk, 16, 1024), descriptor(b + 2048 * kk, BLBO, BSBO));
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        if (tid == 0) bar_arrive(&empty[s]);   // this warpgroup is done with slot s
    }
    // Lane l of warp w holds rows 16 w + l / 4 (+ 8) and columns 8 j + 2 (l % 4) (+ 1) of each
    // 8-column piece j (the accumulator layout of wgmma m64nNk16).
    int w = tid / 32, lane = tid % 32;
    if (N % 2 == 0) {   // each pair 8-byte aligned, both or neither inside C: straight to C
        int r = row0 + 64 * c + 16 * w + lane / 4;
        for (int j = 0; j < BN / 8; j++) {
            int col = col0 + 8 * j + 2 * (lane % 4);
            if (col < N && r < M) *reinterpret_cast<float2 *>(C + (size_t)r * N + col) = make_float2(d[4 * j], d[4 * j + 1]);
            if (col < N && r + 8 < M) *reinterpret_cast<float2 *>(C + (size_t)(r + 8) * N + col) = make_float2(d[4 * j + 2], d[4 * j + 3]);
        }
        return;
    }
    // N odd: every other row of C starts at an odd float, so no pair is 8-byte aligned, and a
    // float at a time from the accumulator layout wrote each 32-byte sector in halves, from two
    // instructions (on an H100 at 4095^3 the product took 0.324 ms, against 0.257 at 4092^3). So
    // the accumulators go through shared memory, the ring (free once both consumers are done with
    // it: named barrier 1), and leave it a row at a time, a warp's lanes on 32 consecutive floats.
    float *stage = reinterpret_cast<float *>(ring) + c * 64 * kStageRow;
    asm volatile("bar.sync 1, %0;" :: "r"(kConsumers * 128) : "memory");
    for (int j = 0; j < BN / 8; j++) {
        int rr = 16 * w + lane / 4, col = 8 * j + 2 * (lane % 4);
        *reinterpret_cast<float2 *>(stage + rr * kStageRow + col) = make_float2(d[4 * j], d[4 * j + 1]);
        *reinterpret_cast<float2 *>(stage + (rr + 8) * kStageRow + col) = make_float2(d[4 * j + 2], d[4 * j + 3]);
    }
    asm volatile("bar.sync %0, 128;" :: "r"(2 + c) : "memory");   // this warpgroup's 64 rows are in
    for (int i = tid; i < 64 * BN; i += 128) {
        int rr = i / BN, col = i % BN, r = row0 + 64 * c + rr;
        if (r < M && col0 + col < N) C[(size_t)r * N + col0 + col] = stage[rr * kStageRow + col];
    }
}
