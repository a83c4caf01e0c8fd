// wgmma_tma.cu: Hopper's own path: TMA copies tiles, wgmma multiplies from shared memory,
// warpgroups specialise (the instructions cuBLAS's sm90 kernels use on this GPU).
// Fixes: in mma_pipelined every thread computes copy addresses and issues cp.async, every warp
// loads its fragments from shared memory into registers with ldmatrix before each mma.sync, and a
// warp's tensor-core work is a 16 x 8 x 16 product at a time. Here:
//   - TMA (cp.async.bulk.tensor): one thread asks the copy engine for a whole tile by its
//     coordinates in a tensor map (made on the host); it lands 128-byte-swizzled, and an mbarrier
//     counts its bytes in;
//   - wgmma.mma_async: a warpgroup (4 warps, 128 threads) multiplies 64 x BN x 16 per instruction,
//     reading A and B straight from shared memory through 64-bit descriptors (no ldmatrix, no
//     fragment registers for A and B), asynchronously;
//   - warp specialisation: warpgroup 0 only copies (a producer, with few registers), the BM / 64
//     others only multiply (consumers, with up to 232 registers for their accumulators); a ring of
//     STAGES slots, each with a "full" and an "empty" mbarrier, is the hand-over.
// Not traced: TMA and wgmma address shared and global memory from descriptors, not from lanes.
// The machinery (and the product, wgmma_gemm) is in wgmma.cuh, which wgmma_padded.cu shares.
// Sizes: any. TMA copies rows whose stride is a multiple of 16 bytes: where K or N is not a multiple
// of 8 a first launch pads A and B (pad_ab.cu, timed with the product, as wgmma_padded always does)
// and the maps read the padded copies. Tiles that overhang A, B or C are zero-filled by TMA and not stored.
#include "contract.cuh"

#ifndef BM
#define BM 128   // one of: 128
#endif
#ifndef BN
#define BN 256   // one of: 128 256
#endif
#ifndef STAGES
#define STAGES 3   // one of: 3 4 5 6
#endif
#include "wgmma.cuh"

REQUIRE(BM == 128 && (BN == 128 || BN == 256) && STAGES >= 2,
        "needs BM 128, BN 128 or 256 and 2 or more STAGES: the shapes wgmma.cuh is written for");
#define SHARED_BYTES (STAGES * (kStageBytes + 16) + 1024)   // the ring, its mbarriers, room to align it to 1 KB
REQUIRE(SHARED_BYTES <= 227 * 1024, "needs at most 227 KB of shared memory, a block's most (it would take {SHARED_BYTES / 1024} KB)");
LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM));
LAUNCH_BLOCK(kThreads, 1);
LAUNCH_SHARED(SHARED_BYTES);
LAUNCH_TMA_BOX(A_map, kBK, BM);   // (columns, rows): A's tile, BM rows of one 128-byte swizzle row
LAUNCH_TMA_BOX(B_map, 64, kBK);   // one of B's BN / 64 boxes of 64 k x 64 n

extern "C" __global__ void __launch_bounds__(kThreads, 1) wgmma_tma(const __grid_constant__ CUtensorMap A_map, const __grid_constant__ CUtensorMap B_map, float *C, int M, int N, int K) {
    wgmma_gemm(&A_map, &B_map, C, M, N, K);
}
