// crash_wild_pointer.cu (tests only): stores through a pointer no macro checks, as a buggy kernel
// might. On the CPU that is a segmentation fault in the process running it: it must cost that
// request only (the CPU trace worker is replaced), never the app.
#include "trace.cuh"

extern "C" __global__ void crash_wild_pointer(const float *A, const float *B, float *C, int M, int N, int K) {
    volatile float *wild = (volatile float *)(16ull + threadIdx.x);
    *wild = 1.0f;
    STG(C, threadIdx.x, LDG(A, threadIdx.x));
}
