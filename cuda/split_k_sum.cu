// split_k_sum.cu: C = the sum of split_k.cu's SPLITK partial products, step two of the split-K rung.
// Each thread owns four consecutive elements of one row of C and adds their partials slice by
// slice, always in the order 0, 1, ..., SPLITK - 1: the same additions in the same order on every
// run, so the result does not depend on which blocks of split_k.cu finished first. Lanes walk
// consecutive float4s of a row, so every read of CP and write of C is coalesced; where N is not a
// multiple of 4 the rows are not 16-byte aligned and it reads and writes a float at a time.
#include "trace.cuh"

#ifndef SPLITK
#define SPLITK 4   // one of: 1 2 3 4 6 8
#endif

constexpr int kSumThreads = 256;   // a block covers 1024 columns of one row

LAUNCH_GRID(CDIV(N, 4 * kSumThreads), M);
LAUNCH_BLOCK(kSumThreads, 1);
TRACE_RECORDS(4 * (SPLITK + 1));   // per element (the scalar path) a load per slice and a store

extern "C" __global__ void __launch_bounds__(kSumThreads) split_k_sum(const float *CP, float *C, int M, int N) {
    int row = blockIdx.y;
    int col = (blockIdx.x * kSumThreads + threadIdx.x) * 4;
    if (N % 4 == 0 && col + 3 < N) {
        float4 sum = LDG4(CP, row * N + col);
        for (int s = 1; s < SPLITK; s++) {
            float4 part = LDG4(CP, (s * M + row) * N + col);
            sum.x += part.x;
            sum.y += part.y;
            sum.z += part.z;
            sum.w += part.w;
        }
        STG4(C, row * N + col, sum);
    } else {
        for (int j = 0; j < 4 && col + j < N; j++) {
            float sum = LDG(CP, row * N + col + j);
            for (int s = 1; s < SPLITK; s++) {
                sum += LDG(CP, (s * M + row) * N + col + j);
            }
            STG(C, row * N + col + j, sum);
        }
    }
}
