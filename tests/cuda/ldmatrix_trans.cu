// ldmatrix_trans.cu (tests only): what ldmatrix .trans hands each lane (LDMATRIX_X4_T, X2_T, X1_T),
// for tests/test_mma.py to compare with the PTX ISA's table. One warp (32 x 1). Thread t fills row
// t of S with 8 t .. 8 t + 7; each lane reads from A which row it names (int(1000 a) % 32, so a test
// chooses them) and stores the 14 halves it received, register by register and low half first, in
// its row of C (N = 14).
#include "trace.cuh"

extern "C" __global__ void ldmatrix_trans(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) __half S[32][8];
    int lane = threadIdx.x;
    for (int i = 0; i < 8; i++) {
        STS(S, lane, i, __float2half((float)(8 * lane + i)));
    }
    SYNC();
    int named = (int)(LDG(A, lane) * 1000.0f) % 32;
    unsigned int four[4], two[2], one[1];
    LDMATRIX_X4_T(four, S, named, 0);
    LDMATRIX_X2_T(two, S, (named + 5) % 32, 0);
    LDMATRIX_X1_T(one, S, (named + 11) % 32, 0);
    unsigned int got[7] = {four[0], four[1], four[2], four[3], two[0], two[1], one[0]};
    for (int e = 0; e < 14; e++) {
        unsigned short bits = (unsigned short)(got[e / 2] >> (16 * (e % 2)));
        STG(C, 14 * lane + e, __half2float(__ushort_as_half(bits)));
    }
}
