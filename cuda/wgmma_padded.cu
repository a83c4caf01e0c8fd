// wgmma_padded.cu: wgmma_tma at any M, N and K, its rows first padded to 128-byte multiples.
// Fixes: wgmma_tma's TMA copies need rows whose byte stride is a multiple of 16 (K and N multiples
// of 8 halves), and cuBLAS's FP16 GEMM has a cliff at the same place: at 4095^3 it ran 151 TFLOP/s
// on the H200 against 772 at 4096^3 (recorded). A first launch (pad_ab.cu) copies A and B into AP
// and BP, whose rows are padded with zeros to a multiple of 64 halves; then wgmma_tma's product
// runs on them unchanged (wgmma.cuh), TMA zero-filling the tiles that overhang, and C is stored
// inside M x N only (through shared memory, a row at a time, where N is odd). The copy costs one pass over A and B, 4 (MK + KN)
// bytes, timed with the product: small against 2 MNK operations once the matrices are large.
// Not traced, as wgmma_tma.
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
LAUNCH_TMA_BOX(AP_map, kBK, BM);   // (columns, rows): A's tile, BM rows of one 128-byte swizzle row
LAUNCH_TMA_BOX(BP_map, 64, kBK);   // one of B's BN / 64 boxes of 64 k x 64 n

extern "C" __global__ void __launch_bounds__(kThreads, 1) wgmma_padded(const __grid_constant__ CUtensorMap AP_map, const __grid_constant__ CUtensorMap BP_map, float *C, int M, int N, int K) {
    wgmma_gemm(&AP_map, &BP_map, C, M, N, K);
}
