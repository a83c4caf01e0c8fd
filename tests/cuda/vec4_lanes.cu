// vec4_lanes.cu (tests only): 128-bit shared accesses by a few lanes spread over the warp (0, 1,
// 16 and 17: one pair in each half-warp), as a guard can leave them. No two words share a bank.
#include "trace.cuh"

extern "C" __global__ void vec4_lanes(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ __align__(16) float Bs[1][128];
    int lane = threadIdx.x;
    if ((lane & 15) < 2) {
        STS4(Bs, 0, lane * 4, make_float4(1.0f, 2.0f, 3.0f, 4.0f));
    }
    SYNC();
    if ((lane & 15) < 2) {
        float4 v = LDS4(Bs, 0, lane * 4);
        STG(C, lane, v.x + v.y + v.z + v.w);
    }
}
