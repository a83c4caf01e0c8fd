// blocktile_1d.cu: 1-D register tiling, the first rung after shared-memory tiling.
// Fixes: the tiled kernel does one FMA per two shared loads (a and b), so shared memory, not the
// FMA units, sets its speed. Here each thread owns TM outputs of one column of C: per k it loads
// b once from shared memory and keeps it in a register for TM FMAs, so shared loads per FMA fall
// from 2 to (1 + TM) / TM. A block owns a BM x BN tile of C with BM * BN / TM threads, walks K in
// steps of BK, and loads its A and B tiles with every thread helping (strided loops, coalesced
// along rows). Out-of-range elements are stored as zeros, so any M, N, K work.
#include "trace.cuh"

#ifndef BM
#define BM 64   // one of: 32 64 128 256
#endif
#ifndef BN
#define BN 64   // one of: 32 64 128 256
#endif
#ifndef BK
#define BK 32   // one of: 4 8 16 32
#endif
#ifndef TM
#define TM 16   // one of: 4 8 16 32
#endif
#define THREADS (BM * BN / TM)
#define OUTPUTS_DOWN TM   // a thread's outputs down (rows of C) and across
#define OUTPUTS_ACROSS 1
REQUIRE(BM * BN % TM == 0, "needs TM to divide BM x BN");
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

extern "C" __global__ void __launch_bounds__(BM * BN / TM) blocktile_1d(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int threads = BM * BN / TM;
    int tid = threadIdx.x;
    int col = tid % BN;          // lanes on consecutive columns of C: B's loads and C's stores coalesce
    int row = (tid / BN) * TM;   // the first of this thread's TM rows, within the tile
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;
    float acc[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += threads) {
            int r = i / BK, c = i % BK;
            STS(As, r, c, (row0 + r < M && k0 + c < K) ? LDG(A, (row0 + r) * K + k0 + c) : (SKIP_LDG(A), 0.0f));
        }
        for (int i = tid; i < BK * BN; i += threads) {
            int r = i / BN, c = i % BN;
            STS(Bs, r, c, (k0 + r < K && col0 + c < N) ? LDG(B, (k0 + r) * N + col0 + c) : (SKIP_LDG(B), 0.0f));
        }
        SYNC();  // both tiles are in shared memory
        for (int k = 0; k < BK; k++) {
            float b = LDS(Bs, k, col);   // one load of b serves TM outputs
            for (int m = 0; m < TM; m++) {
                acc[m] += LDS(As, row + m, k) * b;   // the whole warp reads one word: a broadcast
            }
        }
        SYNC();  // everyone is done with these tiles before the next ones overwrite them
    }
    for (int m = 0; m < TM; m++) {
        bool inside = row0 + row + m < M && col0 + col < N;
        if (inside) STG(C, (row0 + row + m) * N + col0 + col, acc[m]); else SKIP_STG(C);
    }
}
