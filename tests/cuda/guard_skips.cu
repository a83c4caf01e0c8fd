// guard_skips.cu (tests only): one warp, a guarded load in a loop of two passes. In pass 0 only
// the even lanes are inside; in pass 1 every lane is. The hardware runs the load as one instruction
// per pass (16 lanes, then 32); the odd lanes' one load belongs with pass 1, not with pass 0.
#include "trace.cuh"

extern "C" __global__ void guard_skips(const float *A, const float *B, float *C, int M, int N, int K) {
    int lane = threadIdx.x;
    float sum = 0.0f;
    for (int pass = 0; pass < 2; pass++) {
        bool inside = pass == 1 || lane % 2 == 0;
        sum += inside ? LDG(A, pass * 32 + lane) : (SKIP_LDG(A), 0.0f);
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 || lane % 2 == 0) STG(C, pass * 32 + lane, sum); else SKIP_STG(C);
    }
}
