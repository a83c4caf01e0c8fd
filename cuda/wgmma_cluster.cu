// wgmma_cluster.cu: wgmma_persistent in clusters of 2 blocks that share B's tiles by TMA multicast.
// Fixes, relative to wgmma_persistent: two tiles one above the other need the same k-tiles of B,
// and each block copied them from L2 for itself: B's tile is 2/3 of a slot (BN = 256), so L2 sent
// each SM 48 KB per k-tile. Here the two blocks are launched as one thread-block cluster
// (__cluster_dims__), each asks the copy engine for half of B's tile with a mask naming both
// blocks (cp.async.bulk.tensor ... .multicast::cluster), and the half lands in both blocks' slots,
// counted by each block's own mbarrier: 32 KB per SM per k-tile from L2. A slot is reused only when
// the consumers of both blocks are done with it: each consumer warpgroup arrives on the slot's
// "empty" mbarrier in both blocks (mapa gives the other block's address), and both blocks wait for
// each other (barrier.cluster) before the first copy and before either leaves.
// Not traced, as wgmma_tma. Sizes: any, as wgmma_tma.
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
#define GROUP 8   // one of: 4 8 16
#endif
#ifndef SMS
#define SMS 128   // one of: 132 128 120
#endif
#define CLUSTER 2
#include "wgmma_persistent.cuh"

REQUIRE(BM == 128 && (BN == 128 || BN == 256) && STAGES >= 2,
        "needs BM 128, BN 128 or 256 and 2 or more STAGES: the shapes wgmma.cuh is written for");
#define SHARED_BYTES (STAGES * (kStageBytes + 16) + 1024)   // the ring, its mbarriers, room to align it to 1 KB
REQUIRE(SHARED_BYTES <= 227 * 1024, "needs at most 227 KB of shared memory, a block's most (it would take {SHARED_BYTES / 1024} KB)");
// One cluster per 2 SMs, fewer where C has fewer pairs of tiles; the grid is whole clusters.
LAUNCH_GRID(2 * MIN(CDIV(M, 2 * BM) * CDIV(N, BN), SMS / 2), 1);
LAUNCH_BLOCK(kThreads, 1);
LAUNCH_SHARED(SHARED_BYTES);
LAUNCH_TMA_BOX(A_map, kBK, BM);   // (columns, rows): A's tile, BM rows of one 128-byte swizzle row
LAUNCH_TMA_BOX(B_map, 64, kBK);   // one of B's BN / 64 boxes of 64 k x 64 n

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads, 1) wgmma_cluster(const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, float *C, int M, int N, int K) {
    wgmma_persistent_gemm(&A_map, &B_map, C, nullptr, M, N, K);
}
