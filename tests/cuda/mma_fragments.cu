// mma_fragments.cu (tests only): MMA_16816 on fragments a test hands each lane directly, for
// tests/test_mma.py to check against the PTX ISA's layout without ldmatrix. One warp (32 x 1); row
// t of A (K = 16) is lane t's: its eight elements of A (a[0] .. a[3], low half first), its four of
// B (b[0], b[1]) and its four accumulators d. Lane t stores its d after d += a b in row t of C
// (N = 4). B is not read.
#include "trace.cuh"

// Two numbers as the halves of one register, the first in the low 16 bits.
__device__ unsigned int pack(float low, float high) {
    return (unsigned int)__half_as_ushort(__float2half(low)) | (unsigned int)__half_as_ushort(__float2half(high)) << 16;
}

extern "C" __global__ void mma_fragments(const float *A, const float *B, float *C, int M, int N, int K) {
    int lane = threadIdx.x;
    float mine[16];
    for (int i = 0; i < 16; i++) {
        mine[i] = LDG(A, 16 * lane + i);
    }
    unsigned int a[4] = {pack(mine[0], mine[1]), pack(mine[2], mine[3]), pack(mine[4], mine[5]), pack(mine[6], mine[7])};
    unsigned int b[2] = {pack(mine[8], mine[9]), pack(mine[10], mine[11])};
    float d[4] = {mine[12], mine[13], mine[14], mine[15]};
    MMA_16816(d, a, b);
    for (int i = 0; i < 4; i++) {
        STG(C, 4 * lane + i, d[i]);
    }
}
