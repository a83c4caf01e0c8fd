// mma_peak.cu: how fast the tensor cores multiply when nothing but the multiply is asked of them,
// for tests/benchmarks/mma_peak.py. Three ceilings, each on random halves in [0, 1) (the tensor
// cores draw less power on constant data, and a GPU held at its power limit then clocks higher):
//   mma_regs_<ILP>: mma.sync.m16n8k16 (f16 x f16 -> f32) from registers only: each warp cycles
//     through 4 A and 4 B fragments into ILP independent accumulators, so no instruction waits
//     for the one before; the launch decides the warps per SM. The ceiling of any mma.sync kernel.
//   mma_smem_<WM>x<WN>: the same instruction fed as a kernel must feed it: per 16-wide k step the
//     warp's WM x WN tile loads its A and B fragments from shared memory by ldmatrix.x4 (the
//     next step's while this one multiplies), conflict-free. The ceiling of an mma.sync kernel
//     with that warp tile, copies from global memory left out.
//   wgmma_smem: wgmma.m64n256k16 as the wgmma rungs issue it (2 warpgroups, each 64 x 256 of a
//     128 x 256 tile, A and B from a ring of 4 shared-memory slots in the 128-byte swizzle, 4
//     instructions per 64-wide k-tile, one k-tile's group kept in flight), the TMA copies left out.
// Each writes one float per thread (the sum of its accumulators) so nothing is optimised away.
#include <cuda_fp16.h>
#include <stdint.h>

#define BM 128
#define BN 256
#define STAGES 4
#include "wgmma.cuh"

// d += a b for one m16n8k16 fragment set (PTX ISA: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32).
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Four 8 x 8 matrices of halves from shared memory, lane l naming row l % 8 of matrix l / 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

template <int ILP>
__device__ __forceinline__ void mma_regs(const uint32_t *in, float *out, int iters) {
    int lane = threadIdx.x % 32;
    uint32_t a[4][4], b[4][2];
    // Different fragments per lane and per set: 24 words of the random buffer per lane.
    for (int s = 0; s < 4; s++) {
        for (int j = 0; j < 4; j++) a[s][j] = in[(s * 6 + j) * 32 + lane];
        for (int j = 0; j < 2; j++) b[s][j] = in[(s * 6 + 4 + j) * 32 + lane];
    }
    float d[ILP][4] = {};
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int i = 0; i < ILP; i++) mma16816(d[i], a[i % 4], b[(i + i / 4) % 4]);   // compile-time indices: registers
    }
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ILP; i++) sum += d[i][0] + d[i][1] + d[i][2] + d[i][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

#define MMA_REGS(ILP)                                                                                        \
    extern "C" __global__ void mma_regs_##ILP(const uint32_t *in, float *out, int iters) {                   \
        mma_regs<ILP>(in, out, iters);                                                                       \
    }
MMA_REGS(4)
MMA_REGS(8)
MMA_REGS(16)

// The shared buffer of the ldmatrix ceiling: KSTEPS k steps, each A's WM rows and B's WN columns of
// 16 halves (32 bytes) as 8 x 8 matrices of 128 contiguous bytes, the same for every warp.
constexpr int KSTEPS = 4;

template <int WM, int WN>
__device__ __forceinline__ void mma_smem(const uint32_t *in, float *out, int iters) {
    constexpr int A_MATS = WM / 8 * 2, B_MATS = WN / 8 * 2;   // 8 x 8 matrices per k step
    constexpr int STEP_BYTES = (A_MATS + B_MATS) * 128;
    __shared__ __align__(128) uint32_t buf[KSTEPS * STEP_BYTES / 4];
    for (int i = threadIdx.x; i < KSTEPS * STEP_BYTES / 4; i += blockDim.x) buf[i] = in[i];
    __syncthreads();
    int lane = threadIdx.x % 32;
    uint32_t base = (uint32_t)__cvta_generic_to_shared(buf) + (lane / 8) * 128 + (lane % 8) * 16;
    // Fragments of two k steps: the next one's load while this one multiplies.
    uint32_t a[2][WM / 16][4], b[2][WN / 16][4];
    float d[WM / 16][WN / 8][4] = {};
    auto load = [&](int buf_i, int step) {
        uint32_t at = base + step * STEP_BYTES;
#pragma unroll
        for (int i = 0; i < WM / 16; i++) ldmatrix_x4(a[buf_i][i], at + i * 512);
#pragma unroll
        for (int j = 0; j < WN / 16; j++) ldmatrix_x4(b[buf_i][j], at + A_MATS * 128 + j * 512);
    };
    load(0, 0);
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int s = 0; s < KSTEPS; s++) {
            load((s + 1) % 2, (s + 1) % KSTEPS);
#pragma unroll
            for (int i = 0; i < WM / 16; i++)
#pragma unroll
                for (int j = 0; j < WN / 8; j++) {
                    const uint32_t(&bb)[4] = b[s % 2][j / 2];
                    uint32_t frag[2] = {bb[(j % 2) * 2], bb[(j % 2) * 2 + 1]};
                    mma16816(d[i][j], a[s % 2][i], frag);
                }
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < WM / 16; i++)
#pragma unroll
        for (int j = 0; j < WN / 8; j++) sum += d[i][j][0] + d[i][j][1] + d[i][j][2] + d[i][j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

#define MMA_SMEM(WM, WN)                                                                                     \
    extern "C" __global__ void mma_smem_##WM##x##WN(const uint32_t *in, float *out, int iters) {             \
        mma_smem<WM, WN>(in, out, iters);                                                                    \
    }
MMA_SMEM(64, 64)
MMA_SMEM(64, 32)
MMA_SMEM(32, 64)

// 2 warpgroups of 128 threads, STAGES * kStageBytes (+ 1 KB to align) of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(256, 1) wgmma_smem(const uint32_t *in, float *out, int iters) {
    extern __shared__ unsigned char dyn[];
    unsigned char *ring = (unsigned char *)(((uintptr_t)dyn + 1023) & ~(uintptr_t)1023);
    for (int i = threadIdx.x; i < STAGES * kStageBytes / 4; i += blockDim.x) ((uint32_t *)ring)[i] = in[i];
    // Ordinary stores that the tensor cores read next: made visible to them before the barrier.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    int c = threadIdx.x / 128;
    float d[kAccs] = {};
    for (int it = 0; it < iters; it++) {
        int s = it % STAGES;
        unsigned char *a = ring + s * kStageBytes + c * 64 * 128, *b = ring + s * kStageBytes + kABytes;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < kBK / 16; kk++)
            wgmma_256(d, descriptor(a + 32 * kk, 16, 1024), descriptor(b + 2048 * kk, BLBO, BSBO));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kAccs; j++) sum += d[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
