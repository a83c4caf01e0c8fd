// hang_forever.cu (tests only): spins while A[0] >= 0, which the inputs always are. The worker's
// client must give up after its timeout and replace the worker (GPU and CPU alike).
#include "trace.cuh"

extern "C" __global__ void hang_forever(const float *A, const float *B, float *C, int M, int N, int K) {
    float x = 0.0f;
    while (LDG(A, 0) >= 0.0f) {
        x += 1.0f;
    }
    STG(C, 0, x);
}
