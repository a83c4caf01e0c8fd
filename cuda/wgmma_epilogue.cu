// wgmma_epilogue.cu: wgmma_cluster with C leaving through shared memory by TMA stores.
// Fixes, relative to wgmma_cluster: its consumers stored C straight from their accumulators, a
// float2 per lane, so each warp's store touched 8 rows of C (8 lines) and the 128 x 256 tile took
// about a thousand such instructions per block, with the tensor cores idle until the last was
// issued: at 4096^3 each block stores 4 tiles against 64 k-tiles of work per tile. Here each
// consumer warpgroup writes a 64 x 32 piece of C into a staging buffer in shared memory (in TMA's
// 128-byte swizzle: no bank conflicts), one thread asks the copy engine to store it
// (cp.async.bulk.tensor from shared to global, whole lines), and the warpgroup fills the other
// buffer meanwhile; after the last piece it goes straight on to the next tile's wgmma while the
// copy engine writes. TMA also clips the pieces that overhang C, so no store is guarded.
// Other choices, each measured beside cuBLAS FP16 (tests/benchmarks/wgmma_beyond.py; TFLOP/s, CUDA
// events; Nsight Compute for instructions and L2 bytes, tests/benchmarks/ncu_wgmma.py, at 4096^3):
//   - DESC_STEP 1 (the default): the wgmma descriptors made once and stepped by adds
//     (wgmma_persistent.cuh): warp instructions issued 29.0 M -> 20.3 M (H100; cuBLAS: 17.6 M), 99.2 ->
//     99.3% of cuBLAS at 4096^3 and 101.8 -> 102.3% at 8192^3 (H100): fewer instructions, no
//     faster at 4096^3;
//   - SUSPEND 1 (the default): the mbarrier waits pass try_wait a time hint (wgmma.cuh): 29.0 M ->
//     28.7 M instructions (H200), the same speed: the waits were not where the instructions went;
//   - CLUSTER 4: clusters of 2 x 2 blocks, A's tile shared by multicast along rows as B's is along
//     columns, so each block reads a quarter less from L2 per k-tile (1.26 -> 1.03 GB at 4096^3),
//     yet 406 TFLOP/s against 773 (H200), about two waves' time: by that, fewer clusters of 4
//     blocks of 225 KB of shared memory fit on the GPU at once than the grid's 32 (not queried). On
//     120 SMs (30 clusters) 633 TFLOP/s at 4096^3 and 743 at 8192^3 against the default's 773 and 810
//     (H200): by that the 30 fit at once (not queried either), but C's 128 squares of tiles then take
//     5 rounds, not 4;
//   - LAG 2: the second consumer warpgroup runs 2 k-tiles behind the first, so their epilogues (no
//     wgmma issued) fall at different times: 99.0% against 99.4% (H200); likely because the ring
//     of 4 slots then holds 2 fewer k-tiles ahead of the first. LAG 1: 773.9 TFLOP/s against 775.1
//     at 4096^3 (H200, probe);
//   - STORE_ROWS 16: each warp stores its own 16 x 32 pieces of C, no barrier across the
//     warpgroup: 99.3% at 4096^3 as with 64 rows, 101.8% against 102.3% at 8192^3 (H100).
//   - C_BY_TMA 0: the staged pieces stored by the warps themselves, each a row of 32 floats per
//     instruction (what C whose rows are not 16-byte multiples gets): 676 TFLOP/s against 751 at
//     4096^3 and 742 against 789 at 8192^3 (H100, cuBLAS FP16 754 and 772): the copy engine's stores
//     are worth 10% at 4096^3;
//   - STORE_BUFS 4: four staging buffers a warpgroup, so a piece waits for the store of the piece
//     four before it, not two; only a ring of 3 leaves room for them: 713 against 711 with 2 buffers
//     at 4096^3, where the ring of 4 runs 750 (H100): the ring's depth, not the stores' buffers,
//     sets the pace.
//   - STAGE_IN_RING 1 (the default): a tile's pieces of C staged in the slot of the ring its last
//     k-tile used as well as in the warpgroup's own 2 buffers, so only its sixth to eighth pieces wait
//     for a store to have read their buffer (the store five before, not two); the slot goes back to
//     the producer at the next tile's first k-tile, once the stores have read it. Medians of 5
//     rounds, every configuration and cuBLAS FP16 timed in turn each round (wgmma_beyond.py --rounds
//     5, an H200): 779.4 -> 782.2 TFLOP/s at 4096^3 (99.7 -> 100.1% of cuBLAS's 781.4), 712.6 -> 715.0
//     at 4096 x 4096 x 2048 (99.4 -> 99.8%). Probes timed the same way (not shipped): on the H200
//     4096^3 +0.1% twice, K = 2048 +0.3% and +0.4%, K = 1024 +0.1%, 8192^3 +0.05%; on an H100 4096^3
//     764.2 -> 762.7 (-0.2%), K = 2048 +0.3%, 8192^3 +0.1%. So the epilogue's waits for its stores
//     cost up to 0.4%, and 4096^3 still falls short of cuBLAS in most runs (by up to 0.8%, H100). What
//     is left grows as K shrinks (0.3, 0.6 and 0.8% at K = 4096, 2048 and 1024 in the probe, H200),
//     at 1024 more slowly than a cost per tile would: where it goes is not settled. Prefetching the tensor maps
//     (prefetch.tensormap) while the mbarriers are made: no change (772.4 against 772.7, H200, probe);
//     timed again with tests/benchmarks/source_ab.py (11 rounds, an H100), with C_map too: 603.1 ->
//     604.6 at 2048^3 and 762.7 -> 763.3 at 4096^3 (cuBLAS FP16 650.4 and 767.5), within the rounds'
//     spread; and ending with cp.async.bulk.wait_group.read 0, the stores only read before the block
//     leaves: 603.5 and 762.9. Neither kept.
//   - Ping-pong (as CUTLASS's kernel of that name; a probe, not kept): each consumer warpgroup on
//     64 x 256 tiles of its own, the two taking turns on the tensor cores so that one stores C while
//     the other multiplies. 624 TFLOP/s against 760 at 4096^3 and 633 against 801 at 8192^3 (H100,
//     128 SMs as here; 602 and 595 on 132; 425 at 4096^3 without clusters; timed as the engine's
//     benchmark times, cuBLAS FP16 765 and 783): the warpgroups no longer share B's k-tile, so a block copies
//     40 KB per 2.1 MFLOP where this kernel copies 48 KB per 4.2, and the copies, not the tensor
//     cores, set the pace. Clusters of 4 blocks one above the other (B multicast to all four, as
//     little read from L2 per FLOP as here) were slower still. And there was less to hide than it
//     seemed: a probe that never stored C ran past the H100's peak, because ptxas, seeing the
//     accumulators unused, replaced every wgmma by an empty one; one that staged C in shared memory
//     but left out the TMA stores ran a few percent faster than this kernel, no more.
//   - Where a launch's time goes (a probe, not kept: %globaltimer stamps in a copy of
//     wgmma_persistent.cuh; 9 launches, each timed alone from rest, an H100; medians over blocks): at 4096^3
//     a block's first k-tile lands 2.2 us after it starts (0.7 making the ring and the cluster
//     barrier, 0.4 more to its first copy, 1.1 for the copy); then each of its 4 tiles takes 39-45 us
//     of k-loop, 2.4-2.8 us of storing C (the tensor cores idle meanwhile: both warpgroups store at
//     once) and 0.45 us before the next tile's first k-tile is waited through; after the last, 0.9 us
//     until the stores are done and 0.9 more to leave. The storing weighs twice as much at 4096^3 as at
//     8192^3 (2.5 us a tile there too, against 79-83 us of k-loop), where this kernel passes cuBLAS.
//     Writing all 8 pieces before storing any, each in a buffer of its own (the warpgroup's 2 and
//     its share of the last two k-tiles' slots, both held until the stores have read them), with one
//     fence and one barrier for all: slower everywhere (source_ab.py, an H100: 756.9 -> 734.9 at
//     4096^3, 564.4 -> 508.4 at 4096 x 4096 x 1024, 798.8 -> 784.8 at 8192^3, 605.4 -> 580.1 at
//     2048^3): the first store starts only after the last piece is written, and the producer has two
//     slots fewer for the next tile's first k-tiles.
//   - The next tile's first k-tiles multiplied during the epilogue (a probe, not kept): once a tile's
//     first half of C (columns 0 .. 127) was staged, the next tile's first 2 or 3 k-tiles went into
//     the accumulators it left, as m64n128 wgmma (the first 64 of a thread's 128 accumulators are
//     columns 0 .. 127 in both shapes), while the second half was stored; then the same k-tiles into
//     the second half's, and the tile went on 256 wide after a wait for the halves. Correct against
//     float64 (11 sizes, from 17 x 33 x 9 to 1000 x 1000 x 8192), and ptxas kept the k-loop's wgmma
//     pipelined with 2 or 3 k-tiles (with 1 it serialized every wgmma: "insufficient register
//     resources"), but slower (wgmma_beyond.py, 5 rounds, an H200, cuBLAS FP16 781.2 / 797.8 / 603.2):
//     4096^3 779.0 -> 777.3 (2 k-tiles) and 774.2 (3), 8192^3 817.9 -> 811.5 and 811.7, 4096 x 4096 x
//     1024 596.1 -> 589.7 and 558.2. Likely why: the halves read A's tile twice, and their reads
//     share shared memory with C's staging and its stores (not measured apart).
// Not traced, as wgmma_tma. Sizes: any, as wgmma_tma; where N is not a multiple of 4, C's rows are no
// 16-byte multiples, which a tensor map cannot describe, and each warp stores its rows of the staged
// pieces itself (as C_BY_TMA 0 does at every size).
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
#ifndef CLUSTER
#define CLUSTER 2   // one of: 2 4
#endif
#ifndef SUSPEND
#define SUSPEND 1   // one of: 0 1
#endif
#ifndef LAG
#define LAG 0   // one of: 0 1 2
#endif
#ifndef DESC_STEP
#define DESC_STEP 1   // one of: 0 1
#endif
#ifndef STORE_ROWS
#define STORE_ROWS 64   // one of: 64 16
#endif
#ifndef STORE_BUFS
#define STORE_BUFS 2   // one of: 2 4
#endif
#ifndef C_BY_TMA
#define C_BY_TMA 1   // one of: 1 0
#endif
#ifndef STAGE_IN_RING
#define STAGE_IN_RING 1   // one of: 1 0
#endif
#define TMA_STORE 1
#include "wgmma_persistent.cuh"

REQUIRE(BM == 128 && (BN == 128 || BN == 256) && STAGES >= 2,
        "needs BM 128, BN 128 or 256 and 2 or more STAGES: the shapes wgmma.cuh is written for");
REQUIRE(LAG < STAGES, "needs LAG below STAGES: the first consumer runs ahead only as far as the ring holds");
REQUIRE(!STAGE_IN_RING || (STORE_ROWS == 64 && LAG == 0),
        "needs pieces of C 64 rows high and no LAG to stage C in the ring: its slot is shared by both consumers");
// The ring and its mbarriers, the staging buffers of C, room to align it all to 1 KB.
#define SHARED_BYTES (STAGES * (kStageBytes + 16) + kStoreBytes + 1024)
REQUIRE(SHARED_BYTES <= 227 * 1024, "needs at most 227 KB of shared memory, a block's most (it would take {SHARED_BYTES / 1024} KB)");
// One block per SM up to SMS, in whole clusters (one per CLUSTER tiles), fewer where C has fewer.
LAUNCH_GRID(CLUSTER * MIN(CDIV(M, kClusterM * BM) * CDIV(N, kClusterN * BN), SMS / CLUSTER), 1);
LAUNCH_BLOCK(kThreads, 1);
LAUNCH_SHARED(SHARED_BYTES);
LAUNCH_TMA_BOX(A_map, kBK, kABoxRows);   // (columns, rows): A's tile (half of it in clusters of 4), rows of one 128-byte swizzle row
LAUNCH_TMA_BOX(B_map, 64, kBK);   // one of B's BN / 64 boxes of 64 k x 64 n
// A piece of C: 64 (or a warp's 16) rows of 32 floats; no map (an empty box) where C's rows are not
// 16-byte multiples, and C is stored through C instead.
LAUNCH_TMA_BOX(C_map, N % 4 == 0 ? kChunkCols : 0, kChunkRows);

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(kThreads, 1) wgmma_epilogue(const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, const __grid_constant__ CUtensorMap C_map, float *C, int M, int N, int K) {
    wgmma_persistent_gemm(&A_map, &B_map, C, &C_map, M, N, K);
}
