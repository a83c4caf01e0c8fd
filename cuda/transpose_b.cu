// transpose_b.cu: BT = B^T (B is K x N, BT is N x K), step one of the non-square document's method.
// A plain one-element-per-thread transpose: lanes walk the columns of B, so the reads of B are
// coalesced and the writes of BT are K floats apart. That document counts its cost as n*k*T_transpose.
#include "trace.cuh"

// One thread per element of BT (N x K), in blocks of the shape the user picks at launch (no rebuild per shape).
LAUNCH_GRID(CDIV(N, BLOCK_X), CDIV(K, BLOCK_Y));
LAUNCH_BLOCK(BLOCK_X, BLOCK_Y);
TRACE_RECORDS(2);   // one load of B, one store of BT

extern "C" __global__ void transpose_b(const float *B, float *BT, int K, int N) {
    int p = blockIdx.y * blockDim.y + threadIdx.y;  // row of B
    int j = blockIdx.x * blockDim.x + threadIdx.x;  // column of B
    if (p < K && j < N) {
        float b = LDG(B, p * N + j);
        STG(BT, j * K + p, b);
    }
}
