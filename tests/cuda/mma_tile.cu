// mma_tile.cu (tests only): the tensor-core path the ladder's mma rungs take, at its smallest. A
// block of one warp owns a 16 x 8 tile of C; per 16 of K it stages A's 16 x 16 tile and B's 16 x 8
// tile (row-major, K x N) in shared memory as halves (zeros past the edges), loads A's with
// LDMATRIX_X4 and B's with LDMATRIX_X2_T, and multiplies them with MMA_16816. The product is right
// only if ldmatrix (plain and .trans) and mma agree on the PTX ISA's fragment layouts.
#include "trace.cuh"

extern "C" __global__ void mma_tile(const __half *A, const __half *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) __half As[16][16];
    __shared__ __align__(16) __half Bs[16][8];
    int lane = threadIdx.x, row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int e = lane; e < 16 * 16; e += 32) {
            int r = e / 16, k = e % 16;
            __half a = row0 + r < M && k0 + k < K ? LDG(A, (row0 + r) * K + k0 + k) : __float2half(0.0f);
            STS(As, r, k, a);
        }
        for (int e = lane; e < 16 * 8; e += 32) {
            int k = e / 8, n = e % 8;
            __half b = k0 + k < K && col0 + n < N ? LDG(B, (k0 + k) * N + col0 + n) : __float2half(0.0f);
            STS(Bs, k, n, b);
        }
        SYNC();   // the tiles are staged
        // A as four 8 x 8 matrices in the order of mma's a registers: rows 0-7 and 8-15 of k 0-7,
        // then of k 8-15 (lane 8m + j names row j of matrix m).
        unsigned int a[4];
        LDMATRIX_X4(a, As, lane % 16, lane / 16 * 8);
        // B's rows k 0-7 and 8-15 (lanes 0-15 name them), each matrix handed out transposed: lane t
        // gets B(2 (t % 4) + 0, 1, t / 4), mma's "col" operand.
        unsigned int b[2];
        LDMATRIX_X2_T(b, Bs, lane % 16, 0);
        MMA_16816(d, a, b);
        SYNC();   // As and Bs are free for the next 16 of K
    }
    // d[i]: C(lane / 4 + 8 (i / 2), 2 (lane % 4) + i % 2) of the tile.
    for (int i = 0; i < 4; i++) {
        int r = row0 + lane / 4 + 8 * (i / 2), c = col0 + 2 * (lane % 4) + i % 2;
        if (r < M && c < N) {
            STG(C, r * N + c, d[i]);
        }
    }
}
