// wgmma_persistent.cu: wgmma_tma as a persistent kernel, tiles in grouped order, wgmma kept in flight.
// Fixes, relative to wgmma_tma (one block per tile of C, 512 blocks at 4096^3 on 132 SMs):
//   - the tensor cores drained at every k-tile: a consumer waited for all its wgmma to retire
//     (wait_group 0) before handing its slot back and issuing the next. Here it waits for all but
//     the newest group (wait_group 1), so one k-tile's products are always queued behind the one
//     being issued, and it hands back the previous k-tile's slot, whose products have retired;
//   - each block's start (mbarrier set-up, the ring filling from empty) and end (storing C while no
//     copy ran) were paid once per tile: here SMS blocks, one per SM, each loop over tiles, and the
//     producer copies the next tile's first k-tiles while the consumers store this one's C;
//   - blocks ran in launch order, a row of tiles at a time, every running block reading a different
//     slice of B: here the tiles are walked GROUP rows at a time, column by column, so the 132
//     tiles in progress read few slices of A and B and L2 serves most of the copies.
// Not traced, as wgmma_tma. The product is in wgmma_persistent.cuh (wgmma_cluster.cu shares it).
// Sizes: any, as wgmma_tma (A and B padded first where K or N is not a multiple of 8).
#include "contract.cuh"

#ifndef BM
#define BM 128   // one of: 128
#endif
#ifndef BN
#define BN 256   // one of: 128 256
#endif
#ifndef STAGES
#define STAGES 4   // one of: 3 4 5 6
#endif
#ifndef GROUP
#define GROUP 16   // one of: 4 8 16
#endif
#ifndef SMS
#define SMS 132   // one of: 132
#endif
#define CLUSTER 1
#include "wgmma_persistent.cuh"

REQUIRE(BM == 128 && (BN == 128 || BN == 256) && STAGES >= 2,
        "needs BM 128, BN 128 or 256 and 2 or more STAGES: the shapes wgmma.cuh is written for");
#define SHARED_BYTES (STAGES * (kStageBytes + 16) + 1024)   // the ring, its mbarriers, room to align it to 1 KB
REQUIRE(SHARED_BYTES <= 227 * 1024, "needs at most 227 KB of shared memory, a block's most (it would take {SHARED_BYTES / 1024} KB)");
// One block per SM (the H100's and H200's 132), fewer where C has fewer tiles.
LAUNCH_GRID(MIN(CDIV(M, BM) * CDIV(N, BN), SMS), 1);
LAUNCH_BLOCK(kThreads, 1);
LAUNCH_SHARED(SHARED_BYTES);
LAUNCH_TMA_BOX(A_map, kBK, BM);   // (columns, rows): A's tile, BM rows of one 128-byte swizzle row
LAUNCH_TMA_BOX(B_map, 64, kBK);   // one of B's BN / 64 boxes of 64 k x 64 n

extern "C" __global__ void __launch_bounds__(kThreads, 1) wgmma_persistent(const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, float *C, int M, int N, int K) {
    wgmma_persistent_gemm(&A_map, &B_map, C, nullptr, M, N, K);
}
