// moved_pointers.cu (tests only): shared-memory tiling written the way production kernels are
// written (the style of the ladder's rungs): A, B and C are moved to the block's tiles and along K
// (A += ...), the tiles are 1-D shared arrays, and the inner product is a template helper that
// takes them by reference. Records still name each element by its place in the whole matrix.
// One TILE x TILE tile of C per block of TILE * TILE threads (any block shape: 256 x 1 as the
// ladder launches it, or 16 x 16 as tiled_guarded.cu is), one thread per element; M, N, K
// multiples of TILE.
#include "trace.cuh"

#ifndef TILE
#define TILE 8   // one of: 8 16
#endif
REQUIRE_SIZES(M % TILE == 0 && N % TILE == 0 && K % TILE == 0, "needs M, N and K to be multiples of TILE={TILE}");
LAUNCH_GRID(N / TILE, M / TILE);
LAUNCH_BLOCK(TILE * TILE, 1);
TRACE_RECORDS(4 * (K / TILE) + 2 * K + 1);   // per tile 2 loads and 2 stores, 2 shared loads per k, C

template <int S>
__device__ float tile_dot(const float (&As)[S * S], const float (&Bs)[S * S], int row, int col) {
    float sum = 0.0f;
    for (int k = 0; k < S; k++) {
        float a = LDS(As, row * S + k);
        float b = LDS(Bs, k * S + col);
        sum += a * b;
    }
    return sum;
}

extern "C" __global__ void moved_pointers(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[TILE * TILE];
    __shared__ float Bs[TILE * TILE];
    int thread = threadIdx.y * blockDim.x + threadIdx.x;
    int row = thread / TILE, col = thread % TILE;
    A += blockIdx.y * TILE * K;                       // the block's rows of A
    B += blockIdx.x * TILE;                           // its columns of B
    C += blockIdx.y * TILE * N + blockIdx.x * TILE;   // its tile of C
    float sum = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        STS(As, row * TILE + col, LDG(A, row * K + col));
        STS(Bs, row * TILE + col, LDG(B, row * N + col));
        SYNC();   // both tiles are in shared memory
        A += TILE;                                    // the next tiles, along K
        B += TILE * N;
        sum += tile_dot<TILE>(As, Bs, row, col);
        SYNC();   // everyone is done with them
    }
    STG(C, row * N + col, sum);
}
