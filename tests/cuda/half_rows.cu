// half_rows.cu (tests only): a shared array of 16-bit elements. One block per 32 columns of one row
// of C (block 32 x 1): the block first stages its row of A in a __half shared array (rounded to
// half precision), then every thread multiplies from there. Accesses are 2 bytes a lane, two lanes
// to a 4-byte bank word: 32 lanes on consecutive elements fill 16 words, one wavefront. Each thread
// walks K from its own lane's place (the sum is the same in any order), so its reads stay
// 2 bytes wide: read in order, nvcc would merge four of them into one 8-byte load. K at most 256.
#include "trace.cuh"

extern "C" __global__ void half_rows(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __half As[256];
    int row = blockIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
        STS(As, k, __float2half(LDG(A, row * K + k)));
    }
    SYNC();   // the row is staged
    if (col < N) {
        float sum = 0.0f;
        for (int step = 0; step < K; step++) {
            int k = (step + threadIdx.x) % K;
            float a = __half2float(LDS(As, k));
            float b = LDG(B, k * N + col);
            sum += a * b;
        }
        STG(C, row * N + col, sum);
    }
}
