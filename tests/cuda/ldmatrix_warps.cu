// ldmatrix_warps.cu (tests only): warp-collective loads among barriers, for the CPU scheduler
// (cuda/cpu_shim.h). One block of three warps (96 x 1). Each thread reads from A which row it names
// (int(1000 a) % 32 of its warp's region), so a test chooses them; C receives what every lane got,
// for the test to compare with the PTX ISA's table, computed in numpy (tests/test_ldmatrix.py).
//   1. Thread t writes row t + 32 of S (mod 96): each warp fills the next warp's region. SYNC.
//   2. Warp w, in its own region, w + 1 times: loads four matrices whose rows its lanes name, then
//      each lane writes what it received over row `lane` of the region at once (a lane that runs on
//      ahead must not change a row another lane is still to receive). The warps arrive at the
//      barrier after 1, 2 and 3 loads: the barrier must wait for the last.
//   3. Each warp loads from the next warp's region (X4, X2, X1) and stores the 14 halves each lane
//      received in its row of C (N = 14; A holds at least 384 numbers).
#include "trace.cuh"

extern "C" __global__ void ldmatrix_warps(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) __half S[96][8];
    int t = threadIdx.x, warp = t / 32, lane = t % 32;
    for (int i = 0; i < 8; i++) {
        STS(S, (t + 32) % 96, i, __float2half((float)(8 * t + i)));
    }
    SYNC();
    for (int round = 0; round <= warp; round++) {
        int named = (int)(LDG(A, 96 * round + t) * 1000.0f) % 32;
        unsigned int got[4];
        LDMATRIX_X4(got, S, 32 * warp + named, 0);
        STS8(S, 32 * warp + lane, 0, make_uint4(got[0], got[1], got[2], got[3]));
        __syncwarp();   // the region is rewritten before the next load reads it
    }
    SYNC();
    int named = (int)(LDG(A, 288 + t) * 1000.0f) % 32, region = 32 * ((warp + 1) % 3);
    unsigned int four[4], two[2], one[1];
    LDMATRIX_X4(four, S, region + named, 0);
    LDMATRIX_X2(two, S, region + (named + 5) % 32, 0);
    LDMATRIX_X1(one, S, region + (named + 11) % 32, 0);
    unsigned int got[7] = {four[0], four[1], four[2], four[3], two[0], two[1], one[0]};
    for (int i = 0; i < 7; i++) {
        STG(C, t * N + 2 * i, __half2float(__ushort_as_half((unsigned short)(got[i] & 0xffff))));
        STG(C, t * N + 2 * i + 1, __half2float(__ushort_as_half((unsigned short)(got[i] >> 16))));
    }
}
