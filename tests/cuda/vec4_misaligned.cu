// vec4_misaligned.cu (tests only): a 128-bit load one float past a 16-byte boundary, which the GPU
// refuses ("misaligned address"); the CPU trace must refuse it too, not read 16 bytes anyway.
#include "trace.cuh"

extern "C" __global__ void vec4_misaligned(const float *A, const float *B, float *C, int M, int N, int K) {
    float4 b = LDG4(B, threadIdx.x * 4 + 1);
    STG(C, threadIdx.x, b.x);
}
