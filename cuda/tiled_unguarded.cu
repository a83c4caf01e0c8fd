// tiled_unguarded.cu: the tiled kernel as the two tiling documents write it: no boundary guards, and the
// phase loop runs K / TILE times. Same memory behaviour as tiled_guarded.cu on sizes that are
// multiples of TILE, and a few instructions lighter. On other sizes it reads and writes outside A, B
// and C and drops the last partial tile of K, so the engine refuses those sizes.
#include "trace.cuh"

#ifndef TILE
#define TILE 16   // one of: 8 16 32
#endif
REQUIRE_SIZES(M % TILE == 0, "needs M, N and K to be multiples of TILE={TILE} (M={M} is not): it has no "
              "boundary guards, so edge threads would read and write outside A, B and C, and its K / TILE phase "
              "loop would drop the last partial tile. Use tiled_guarded for these sizes.");
REQUIRE_SIZES(N % TILE == 0, "needs M, N and K to be multiples of TILE={TILE} (N={N} is not): it has no "
              "boundary guards, so edge threads would read and write outside A, B and C, and its K / TILE phase "
              "loop would drop the last partial tile. Use tiled_guarded for these sizes.");
REQUIRE_SIZES(K % TILE == 0, "needs M, N and K to be multiples of TILE={TILE} (K={K} is not): it has no "
              "boundary guards, so edge threads would read and write outside A, B and C, and its K / TILE phase "
              "loop would drop the last partial tile. Use tiled_guarded for these sizes.");
LAUNCH_GRID(CDIV(N, TILE), CDIV(M, TILE));
LAUNCH_BLOCK(TILE, TILE);
TRACE_RECORDS(CDIV(K, TILE) * (4 + 2 * TILE) + 1);   // per phase 2 loads, 2 stores, 2 TILE shared loads

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
