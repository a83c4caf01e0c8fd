// blocktile_2d.cu: 2-D register tiling: each thread owns a TM x TN tile of C.
// Fixes: 1-D register tiling reuses b across TM outputs but still loads one a per FMA. Here, per k,
// a thread loads TM values of A's column and TN of B's row into registers and does all TM * TN
// products between them (an outer product), so shared loads per FMA fall to (TM + TN) / (TM * TN):
// 1/4 with 8 x 8. A block owns a BM x BN tile of C with BM * BN / (TM * TN) threads. As written,
// the loads from Bs are TN words apart across a warp's lanes and conflict in shared memory's banks.
// As compiled they do not: nvcc unrolls the k loop and merges each thread's TN consecutive reads of
// Bs, and its reads of As[row + m][k .. k + 3], into LDS.128, and Nsight Compute counts 0 shared-load
// bank conflicts (the Ladder page shows both). What the next rung adds is the global side: float4
// loads from A and B. Out-of-range elements are stored as zeros, so any M, N, K work.
#include "trace.cuh"

#ifndef BM
#define BM 64   // one of: 32 64 128 256
#endif
#ifndef BN
#define BN 64   // one of: 32 64 128 256
#endif
#ifndef BK
#define BK 32   // one of: 8 16 32
#endif
#ifndef TM
#define TM 8   // one of: 4 8
#endif
#ifndef TN
#define TN 4   // one of: 4 8
#endif
#define THREADS (BM * BN / (TM * TN))
#define OUTPUTS_DOWN TM   // a thread's outputs down (rows of C) and across
#define OUTPUTS_ACROSS TN
REQUIRE(BM * BN % (TM * TN) == 0, "needs TM x TN to divide BM x BN");
REQUIRE(THREADS >= 32 && THREADS <= 1024 && THREADS % 32 == 0,
        "needs a multiple of 32 threads per block, up to 1024 (it would run {THREADS})");
REQUIRE(OUTPUTS_DOWN * OUTPUTS_ACROSS <= 128, "needs at most 128 outputs per thread: a thread has at most 255 registers, and "
        "over 128 outputs they spill to local memory (it would keep {OUTPUTS_DOWN * OUTPUTS_ACROSS})");
REQUIRE(4 * BK * (BM + BN) <= 48 * 1024,
        "needs at most 48 KB of shared memory, the static limit (it would take {4 * BK * (BM + BN) / 1024} KB)");
LAUNCH_GRID(CDIV(N, BN), CDIV(M, BM));
LAUNCH_BLOCK(THREADS, 1);
// Per K tile its share of the tiles' elements, each loaded and stored once (at an edge a float4 is
// four scalar loads; a cp.async is one record of a copy and one of its store), its shared loads
// (1 element each), then its outputs.
TRACE_RECORDS(CDIV(K, BK) * (2 * (CDIV(BM * BK, THREADS) + CDIV(BK * BN, THREADS)) + BK * (OUTPUTS_DOWN + OUTPUTS_ACROSS)) +
              OUTPUTS_DOWN * OUTPUTS_ACROSS);

extern "C" __global__ void __launch_bounds__(BM * BN / (TM * TN)) blocktile_2d(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int threads = BM * BN / (TM * TN);
    int tid = threadIdx.x;
    int row = (tid / (BN / TN)) * TM;   // this thread's TM x TN tile, within the block's tile
    int col = (tid % (BN / TN)) * TN;
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    float a[TM];
    float b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += threads) {
            int r = i / BK, c = i % BK;
            STS(As, r, c, (row0 + r < M && k0 + c < K) ? LDG(A, (row0 + r) * K + k0 + c) : (SKIP_LDG(A), 0.0f));
        }
        for (int i = tid; i < BK * BN; i += threads) {
            int r = i / BN, c = i % BN;
            STS(Bs, r, c, (k0 + r < K && col0 + c < N) ? LDG(B, (k0 + r) * N + col0 + c) : (SKIP_LDG(B), 0.0f));
        }
        SYNC();
        for (int k = 0; k < BK; k++) {
            for (int m = 0; m < TM; m++) {
                a[m] = LDS(As, row + m, k);
            }
            for (int n = 0; n < TN; n++) {
                b[n] = LDS(Bs, k, col + n);
            }
            // TM + TN loads, TM * TN FMAs, all from registers.
            for (int m = 0; m < TM; m++) {
                for (int n = 0; n < TN; n++) {
                    acc[m][n] += a[m] * b[n];
                }
            }
        }
        SYNC();
    }
    for (int m = 0; m < TM; m++) {
        for (int n = 0; n < TN; n++) {
            bool inside = row0 + row + m < M && col0 + col + n < N;
            if (inside) STG(C, (row0 + row + m) * N + col0 + col + n, acc[m][n]); else SKIP_STG(C);
        }
    }
}
