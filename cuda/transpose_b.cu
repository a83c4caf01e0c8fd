// transpose_b.cu: BT = B^T (B is K x N, BT is N x K), step one of the non-square document's method.
// A plain one-element-per-thread transpose: lanes walk the columns of B, so the reads of B are
// coalesced and the writes of BT are K floats apart. That document counts its cost as n*k*T_transpose.
#include "trace.cuh"

extern "C" __global__ void transpose_b(const float *B, float *BT, int K, int N) {
    int p = blockIdx.y * blockDim.y + threadIdx.y;  // row of B
    int j = blockIdx.x * blockDim.x + threadIdx.x;  // column of B
    if (p < K && j < N) {
        float b = LDG(B, p * N + j);
        STG(BT, j * K + p, b);
    }
}
