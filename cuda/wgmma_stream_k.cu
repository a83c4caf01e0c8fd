// wgmma_stream_k.cu: wgmma_epilogue with the tiles of a partial last wave shared out by k-tiles.
// Fixes, relative to wgmma_epilogue: the GPU works through C's tiles in waves, one tile per block.
// At 3000^3 C has 288 tiles of 128 x 256, 144 pairs for the clusters of 2: on 128 SMs that is two
// whole waves of 64 pairs and a third of 16, so three waves' time for 2.25 waves of work, the SMs
// three-quarters idle through the last. And a C of few tiles with a long K (1000 x 1000 x 8192: 16
// pairs) keeps a quarter of the SMs busy whatever the tile order. Here (STREAM_K in
// wgmma_persistent.cuh) the whole waves go as before and the tiles left over are cut into k-tiles,
// laid end to end and dealt out in equal runs to every cluster, at most SPLITS clusters to a tile (so
// a small C launches up to SPLITS clusters per pair of tiles). A tile so shared is added up by the
// cluster whose run began it: the clusters whose runs start inside it write their sums (a run's first
// item) to their row of WS and set a flag; it waits for each in turn, adds them to its own in a fixed
// order (the same bits every launch) and stores C as wgmma_epilogue does.
// Handing sums over is not free: each shared tile's 128 KB of partial sums go out to L2 and back, and
// the clusters of the last wave do it at once. On an H200, with every tile left over shared out (no
// threshold), 4096^3 on 132 SMs (a last wave of 58 pairs for 66 clusters, runs of 56 of 64 k-tiles)
// ran 719 TFLOP/s against wgmma_epilogue's 762 on 128 SMs, and 2048^3 (a single wave, runs of 31 of
// 32) 460 against 619: the hand-over cost about what 16 k-tiles of multiplying do. So the tiles left
// over are shared out only where a run plus 16 k-tiles is shorter than the whole-tile wave it replaces
// (kHandOver); elsewhere they go whole, and the kernel is wgmma_epilogue's. Measured on an H200 beside
// it (TFLOP/s, CUDA events, median of 20; cuBLAS FP16 in the same process):
//   3000^3            510 -> 570 (cuBLAS 670)   1000 x 1000 x 8192   203 -> 429 (535)
//   4095 x 4104 x 4096  611 -> 664 (738)         256 x 256 x 4096     12.7 -> 23.4 (77.9)
//   4096^3 and 8192^3: the same as wgmma_epilogue (whole waves: 758 / 757 and 792 / 790; cuBLAS 762, 778).
// And on an H100 (tests/benchmarks/stream_k.py): 3000^3 503 -> 556 (cuBLAS 648), 1000 x 1000 x 8192
// 202 -> 392 (383: past cuBLAS), 4095 x 4104 x 4096 600 -> 650 (722).
// CLUSTER 1 (no multicast, 128 or 132 blocks) was slower at every size but 2048^3 and 1024^3.
// Nor is the hand-over's cost the moving of the sums. A probe (not kept) handed nothing over: the run
// that ends a shared tile stored its share to C through the staging as any tile is stored, and each
// run before it, once the next one's flag said those stores were done, added its own share to C with
// the copy engine's reduce-add (cp.reduce.async.bulk.tensor .add: L2 reads, adds and writes; the same
// order, so the same bits, every launch; right against float64 at 11 sizes from 1^3 to 8192 x 8192 x
// 1000). On 132 SMs it ran 735.9 TFLOP/s at 4096^3 against this kernel's 742.1 with every tile left over
// shared out and 782.0 for wgmma_epilogue on 128 (H200, medians of 4 rounds, cuBLAS FP16 782.5), and
// 543.6 against 574.8 at 3000^3: what 132 SMs save in k-tiles is lost elsewhere (README: the power limit).
// A smaller kHandOver (a probe of 8, 4 and 0 k-tiles; H100, TFLOP/s) changed nothing at 2048^3, 3000^3
// and 4096^3 and cost at 1024^3 (129.5 -> 103: runs of 8 of a tile's 16 k-tiles, every tile's sums handed over once).
// What helps a C that small is smaller tiles: BN 128 ran 182 at 1024^3 and 150 at 1000^3 against 130 and
// 120 at 256 (cuBLAS FP16: 307, 216), and lost from 2048^3 up (511 against 575 there, 624 against 758
// at 4096^3), so the default stays 256 and BN is the choice to make per size.
// Needs every block of the grid resident at once (one per SM, as the persistent rungs have): the
// block that stores a shared tile waits for the others' flags. Not traced, as wgmma_tma. Sizes: any,
// as wgmma_epilogue.
#include "contract.cuh"

#ifndef BM
#define BM 128   // one of: 128
#endif
#ifndef BN
#define BN 256   // one of: 128 256
#endif
#ifndef STAGES
#define STAGES 4   // one of: 3 4 5
#endif
#ifndef GROUP
#define GROUP 8   // one of: 4 8 16
#endif
#ifndef SMS
#define SMS 128   // one of: 128 132 120
#endif
#ifndef CLUSTER
#define CLUSTER 2   // one of: 1 2
#endif
#ifndef SPLITS
#define SPLITS 4   // one of: 1 2 4
#endif
// wgmma_epilogue's defaults, not offered again here.
#define SUSPEND 1
#define DESC_STEP 1
#define TMA_STORE 1
#define STREAM_K 1
#include "wgmma_persistent.cuh"

REQUIRE(BM == 128 && (BN == 128 || BN == 256) && STAGES >= 2,
        "needs BM 128, BN 128 or 256 and 2 or more STAGES: the shapes wgmma.cuh is written for");
// The ring and its mbarriers, the staging buffers of C, room to align it all to 1 KB.
#define SHARED_BYTES (STAGES * (kStageBytes + 16) + kStoreBytes + 1024)
REQUIRE(SHARED_BYTES <= 227 * 1024, "needs at most 227 KB of shared memory, a block's most (it would take {SHARED_BYTES / 1024} KB)");
// One block per SM up to SMS, in whole clusters, and at most SPLITS clusters per cluster tile.
LAUNCH_GRID(CLUSTER * MIN(CDIV(M, kClusterM * BM) * CDIV(N, kClusterN * BN) * SPLITS, SMS / CLUSTER), 1);
LAUNCH_BLOCK(kThreads, 1);
LAUNCH_SHARED(SHARED_BYTES);
LAUNCH_TMA_BOX(A_map, kBK, kABoxRows);   // (columns, rows): A's tile, rows of one 128-byte swizzle row
LAUNCH_TMA_BOX(B_map, 64, kBK);   // one of B's BN / 64 boxes of 64 k x 64 n
// A piece of C: 64 rows of 32 floats; no map (an empty box) where N is not a multiple of 4 (see wgmma_epilogue).
LAUNCH_TMA_BOX(C_map, N % 4 == 0 ? kChunkCols : 0, kChunkRows);

// WS: SMS rows of kWsRow floats (engine/tracing/plan.py makes it), each block's partial sums and flags.
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(kThreads, 1) wgmma_stream_k(const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, const __grid_constant__ CUtensorMap C_map, float *C, float *WS, int M, int N, int K) {
    wgmma_persistent_gemm(&A_map, &B_map, C, &C_map, M, N, K, WS);
}
