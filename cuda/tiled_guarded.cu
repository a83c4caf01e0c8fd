// tiled_guarded.cu: shared-memory tiling, one TILE x TILE block per TILE x TILE tile of C
// (as two of the documents write it, with their boundary guards). Fixes the naive rungs' re-reading: per phase the
// block loads one tile of A and one of B (each thread one element of each, coalesced), waits at a
// barrier, and every element loaded is then reused TILE times from shared memory. Out-of-range
// elements are stored as zeros, so any M, N, K work. TILE is set at compile time (8, 16 or 32).
#include "trace.cuh"

#ifndef TILE
#define TILE 16   // one of: 8 16 32
#endif
LAUNCH_GRID(CDIV(N, TILE), CDIV(M, TILE));
LAUNCH_BLOCK(TILE, TILE);
TRACE_RECORDS(CDIV(K, TILE) * (4 + 2 * TILE) + 1);   // per phase 2 loads, 2 stores, 2 TILE shared loads

extern "C" __global__ void tiled_guarded(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
        int a_col = t * TILE + tx;
        int b_row = t * TILE + ty;
        STS(As, ty, tx, (row < M && a_col < K) ? LDG(A, row * K + a_col) : 0.0f);
        STS(Bs, ty, tx, (b_row < K && col < N) ? LDG(B, b_row * N + col) : 0.0f);
        SYNC();  // the whole tile is in shared memory before anyone reads it
        for (int k = 0; k < TILE; k++) {
            float a = LDS(As, ty, k);
            float b = LDS(Bs, k, tx);
            sum += a * b;
        }
        SYNC();  // everyone is done with this tile before the next phase overwrites it
    }
    if (row < M && col < N) {
        STG(C, row * N + col, sum);
    }
}
