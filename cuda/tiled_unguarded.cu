// tiled_unguarded.cu: the tiled kernel as seeds 003 and 004 write it: no boundary guards, and the
// phase loop runs K / TILE times. Same memory behaviour as tiled_guarded.cu on sizes that are
// multiples of TILE, and a few instructions lighter. On other sizes it reads and writes outside A, B
// and C and drops the last partial tile of K, so the engine refuses those sizes.
#include "trace.cuh"

extern "C" __global__ void tiled_unguarded(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float Asub[TILE][TILE];
    __shared__ float Bsub[TILE][TILE];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float P = 0.0f;
    for (int i = 0; i < K / TILE; ++i) {
        STS(Asub, threadIdx.y, threadIdx.x, LDG(A, row * K + i * TILE + threadIdx.x));
        STS(Bsub, threadIdx.y, threadIdx.x, LDG(B, (i * TILE + threadIdx.y) * N + col));
        SYNC();
        for (int j = 0; j < TILE; ++j) {
            float a = LDS(Asub, threadIdx.y, j);
            float b = LDS(Bsub, j, threadIdx.x);
            P += a * b;
        }
        SYNC();
    }
    STG(C, row * N + col, P);
}
