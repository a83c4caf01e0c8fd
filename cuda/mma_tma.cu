// mma_tma.cu: mma.sync.m16n8k16 fed as the wgmma rungs are fed: TMA, a ring of mbarriers, 128 x 256 tiles.
// Fixes, relative to mma_pipelined (128 x 128 block tiles copied by cp.async, one barrier per k-tile):
//   - bytes: a 128 x 128 tile reads 16 KB from L2 per 32-wide k step, about 6 TB/s out of L2 at
//     mma_pipelined's 398 TFLOP/s on an H100, where mma.sync itself runs at 650 TFLOP/s
//     (tests/benchmarks/mma_peak.py): more speed from the same tiles would need more bytes a second.
//     Here a block's tile is 128 x 256: a quarter fewer bytes per product (and with CLUSTER 2, two
//     blocks one above the other share B's tile by TMA multicast, as wgmma_cluster; on an H100 that
//     ran slower, 478.6 TFLOP/s at 4096^3 against 494.7 for single blocks);
//   - copies: one thread of a producer warpgroup asks the copy engine for each k-tile (TMA, 128-byte
//     swizzle) into a ring of STAGES slots, instead of every thread issuing cp.async between its
//     multiplies;
//   - barriers: no barrier across the block. Each consumer warp waits on the slot's mbarrier, loads
//     its fragments (ldmatrix, the next k step's while this one's mma.sync run) and hands the slot
//     back on its own, so a slow warp holds up no other until the ring runs dry.
// Like mma_pipelined, it reads the next k-tile's first fragments (once that slot's mbarrier says it
// is full) while this k-tile's last step multiplies, so no k-tile's first mma.sync waits for its
// ldmatrix (an A/B of the two sources on an H200, not shipped: 496.7 -> 503.2 TFLOP/s at 4096^3,
// 529.2 -> 535.0 at 8192^3).
// A slot goes back to the producer after the mma.sync that read its last fragments. The build before,
// which read each k-tile's first fragments after its own wait, raced there: the source handed the
// slot back after the last step's mma.sync, but ptxas had moved six of that step's ldmatrix down
// next to the mma.sync that use them, past the mbarrier arrive (cuobjdump -sass), and an arrive does
// not wait for an ldmatrix in flight, so the copy engine refilled the slot under their reads: a few
// hundred elements of C wrong in every launch at 4096 x 4096 x 512 (H200), with C's relative error
// still about 1e-4, under FP16's tolerance. In this build's SASS (CUDA 13.0) every ldmatrix of a slot
// is issued before the wait for the next slot and read by an mma.sync before the arrive, on a tile's
// last k-tile too (the same loop body, the wait skipped); the only ldmatrix in flight at an arrive
// read the next slot. That is ptxas's schedule, not a dependency in the code: tests/test_gpu.py
// checks C element by element at the sizes that showed the race.
// The block's 8 consumer warps each multiply a 64 x 64 piece of C (2 warpgroups of 4, as the wgmma
// rungs' consumers, with setmaxnreg giving them the producer's registers); C is stored straight
// from the registers. The producer, the ring and the grouped tile order are wgmma_persistent.cuh's.
// Not traced, as wgmma_tma (the copy engine addresses its copies). Sizes: any, as wgmma_tma (A and B
// padded first where K or N is not a multiple of 8; C's pairs as two floats where N is odd).
#include "contract.cuh"

#ifndef BM
#define BM 128   // one of: 128
#endif
#ifndef BN
#define BN 256   // one of: 256
#endif
#ifndef STAGES
#define STAGES 4   // one of: 3 4
#endif
#ifndef GROUP
#define GROUP 16   // one of: 8 16
#endif
#ifndef SMS
#define SMS 128   // one of: 128 132
#endif
#ifndef CLUSTER
#define CLUSTER 1   // one of: 1 2
#endif
#include "wgmma_persistent.cuh"

REQUIRE(BM == 128 && BN == 256 && STAGES >= 2 && (CLUSTER == 1 || CLUSTER == 2),
        "needs BM 128 and BN 256 (4 warps of 64 x 64 per 64 rows of the tile), "
        "2 or more STAGES and clusters of 1 or 2 blocks");
#define SHARED_BYTES (STAGES * (kStageBytes + 16) + 1024)   // the ring, its mbarriers, room to align it to 1 KB
REQUIRE(SHARED_BYTES <= 227 * 1024, "needs at most 227 KB of shared memory, a block's most (it would take {SHARED_BYTES / 1024} KB)");
// One block per SM, in whole clusters, fewer where C has fewer tiles (CLUSTER tiles one above the other).
LAUNCH_GRID(CLUSTER * MIN(CDIV(M, CLUSTER * BM) * CDIV(N, BN), SMS / CLUSTER), 1);
LAUNCH_BLOCK(kThreads, 1);
LAUNCH_SHARED(SHARED_BYTES);
LAUNCH_TMA_BOX(A_map, kBK, BM);   // (columns, rows): A's tile, BM rows of one 128-byte swizzle row
LAUNCH_TMA_BOX(B_map, 64, kBK);   // one of B's BN / 64 boxes of 64 k x 64 n
constexpr int kWarps = 4 * kConsumers;   // consumer warps: each hands a slot back on its own
// The next k-tile's first fragments go into set (kBK / 16) % 2, and its first step reads set 0.
static_assert(kBK / 16 % 2 == 0, "an even number of k steps a k-tile");

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// A warp's fragments of one 16-wide k step: A's 4 16 x 16 pieces (rows 16 i ..), B's 4 16 x 16
// pieces (columns 16 j ..; registers 0, 1 the first 8 columns, 2, 3 the next). In TMA's 128-byte
// swizzle, 16-byte chunk c of a 128-byte row r sits at chunk c ^ (r % 8).
struct Frags { uint32_t a[4][4], b[4][4]; };
__device__ __forceinline__ void load_frags(Frags &f, uint32_t a_rows, uint32_t b_box, int kk, int lane) {
    int r = lane % 16, half = lane / 16;
#pragma unroll
    for (int i = 0; i < 4; i++) {   // rows 16 i + r of A, k chunk 2 kk + half
        int row = 16 * i + r;
        ldsm_x4(f.a[i], a_rows + row * 128 + (((2 * kk + half) ^ (row % 8)) * 16));
    }
    int k = 16 * kk + r;            // B: k row of the box, n chunk 2 j + half, transposed on the way
#pragma unroll
    for (int j = 0; j < 4; j++) ldsm_x4_t(f.b[j], b_box + k * 128 + (((2 * j + half) ^ (k % 8)) * 16));
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(kThreads, 1)
    mma_tma(const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, float *C, int M, int N, int K) {
    extern __shared__ unsigned char raw_smem[];
    unsigned char *ring = (unsigned char *)(((uintptr_t)raw_smem + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(ring + STAGES * kStageBytes), *empty = full + STAGES;
    int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    int rank = CLUSTER == 1 ? 0 : (int)cluster_rank();
    int ktiles = (K + kBK - 1) / kBK;
    int rows = (M + BM * CLUSTER - 1) / (BM * CLUSTER), cols = (N + BN - 1) / BN;
    int tiles = rows * cols, cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    init_ring(full, empty, kWarps);   // each consumer warp hands a slot back on its own

    if (wg == 0) {   // the producer, wgmma_persistent.cuh's
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) produce(&A_map, &B_map, ring, full, empty, rank, cluster, clusters, rows, cols, ktiles);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        int c = wg - 1, w = tid / 32, lane = tid % 32;   // rows 64 c .., columns 64 w .. (B's box w)
        int it = 0;
        for (int i = cluster; i < tiles; i += clusters) {
            int row0, col0;
            tile_origin(i, rows, cols, rank, row0, col0);
            float d[4][8][4];
#pragma unroll
            for (int x = 0; x < 4; x++)
#pragma unroll
                for (int y = 0; y < 8; y++) d[x][y][0] = d[x][y][1] = d[x][y][2] = d[x][y][3] = 0.0f;
            // The slot of the warp's it-th k-tile: A's rows of this warpgroup, B's box of this warp.
            auto a_rows_of = [&](int at) { return smem(ring + at % STAGES * kStageBytes + c * 64 * 128); };
            auto b_box_of = [&](int at) { return smem(ring + at % STAGES * kStageBytes + kABytes + w * kBBoxBytes); };
            Frags f[2];
            bar_wait(&full[it % STAGES], (it / STAGES) & 1);
            load_frags(f[0], a_rows_of(it), b_box_of(it), 0, lane);
            for (int t = 0; t < ktiles; t++, it++) {
                int s = it % STAGES;
                uint32_t a_rows = a_rows_of(it), b_box = b_box_of(it);
#pragma unroll
                for (int kk = 0; kk < kBK / 16; kk++) {
                    if (kk + 1 < kBK / 16) {
                        load_frags(f[(kk + 1) % 2], a_rows, b_box, kk + 1, lane);
                    } else if (t + 1 < ktiles) {
                        // The next k-tile's first fragments, read while this last step multiplies:
                        // otherwise every k-tile's first mma.sync waits for its ldmatrix.
                        bar_wait(&full[(it + 1) % STAGES], ((it + 1) / STAGES) & 1);
                        load_frags(f[(kk + 1) % 2], a_rows_of(it + 1), b_box_of(it + 1), 0, lane);
                    }
#pragma unroll
                    for (int x = 0; x < 4; x++)
#pragma unroll
                        for (int y = 0; y < 8; y++)
                            mma16816(d[x][y], f[kk % 2].a[x], f[kk % 2].b[y / 2][(y % 2) * 2], f[kk % 2].b[y / 2][(y % 2) * 2 + 1]);
                }
                // This slot's last fragments have been used by the mma.sync above (see the header):
                // the warp hands it back, lane r telling block r of the cluster.
                __syncwarp();
                if (lane < CLUSTER) {
                    if (CLUSTER == 1) bar_arrive(&empty[s]);
                    else bar_arrive_at(&empty[s], lane);
                }
            }
            // Lane l holds rows 16 x + l / 4 (+ 8) and columns 8 y + 2 (l % 4) (+ 1) of the warp's
            // 64 x 64 piece (mma.sync's accumulator layout).
#pragma unroll
            for (int x = 0; x < 4; x++)
#pragma unroll
                for (int y = 0; y < 8; y++) {
                    int r = row0 + 64 * c + 16 * x + lane / 4, cc = col0 + 64 * w + 8 * y + 2 * (lane % 4);
                    store_pair(C, M, N, r, cc, d[x][y][0], d[x][y][1]);
                    store_pair(C, M, N, r + 8, cc, d[x][y][2], d[x][y][3]);
                }
        }
    }
    if (CLUSTER > 1) cluster_sync();
}
