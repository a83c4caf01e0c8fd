// warp_shuffles.cu (tests only): one warp per element of C, its lanes splitting K and summing their
// shares with __shfl_xor_sync. Before the store the warp checks the shuffles' finer points against
// the PTX ISA's shfl.sync (modes idx, up, down, bfly; the width; a source lane outside the segment
// reads the lane's own value), the votes and __syncwarp; a wrong answer anywhere makes C wrong, so
// the trace's float64 check fails. Launch: grid (N, M / 4), block (32, 4).
#include "trace.cuh"

__device__ __forceinline__ bool shuffles_as_ptx_says(int lane) {
    const unsigned full = 0xffffffffu;
    bool ok = true;
    // idx: srcLane modulo width, within the lane's own segment of 8
    ok &= __shfl_sync(full, lane, 35, 8) == (lane / 8) * 8 + 3;
    ok &= __shfl_sync(full, 100 + lane, 31) == 131;
    // up: lanes whose source falls before their segment of 16 keep their own value
    ok &= __shfl_up_sync(full, lane, 3, 16) == (lane % 16 < 3 ? lane : lane - 3);
    // down: past the segment's end (of 32 here), their own value
    ok &= __shfl_down_sync(full, lane, 5) == (lane + 5 < 32 ? lane + 5 : lane);
    ok &= __shfl_down_sync(full, lane, 1, 4) == (lane % 4 == 3 ? lane : lane + 1);
    // bfly: an earlier segment may be read, a later one not (its own value instead)
    ok &= __shfl_xor_sync(full, lane, 8, 8) == ((lane ^ 8) < lane ? (lane ^ 8) : lane);
    ok &= __shfl_xor_sync(full, lane, 1) == (lane ^ 1);
    // 64-bit values move whole
    ok &= __shfl_sync(full, 1e300 * (lane + 1), 7) == 1e300 * 8;
    // a shuffle of half the warp, with a mask of that half
    if (lane < 16) ok &= __shfl_down_sync(0x0000ffffu, lane, 8, 16) == (lane < 8 ? lane + 8 : lane);
    __syncwarp();
    ok &= __ballot_sync(full, lane % 3 == 0) == 0x49249249u;
    ok &= __any_sync(full, lane == 17);
    ok &= !__any_sync(full, lane > 40);
    ok &= __all_sync(full, lane < 32);
    ok &= !__all_sync(full, lane != 5);
    return __all_sync(full, ok);
}

extern "C" __global__ void warp_shuffles(const float *__restrict__ A, const float *__restrict__ B,
                                         float *__restrict__ C, int M, int N, int K) {
    int lane = threadIdx.x;
    int row = blockIdx.y * 4 + threadIdx.y, col = blockIdx.x;
    float sum = 0.0f;
    for (int k = lane; k < K; k += warpSize) {
        float a = LDG(A, row * K + k);
        float b = LDG(B, k * N + col);
        sum = fmaf(a, b, sum);
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    bool ok = shuffles_as_ptx_says(lane);
    if (lane == 0) STG(C, row * N + col, ok ? sum : sum + 1.0f); else SKIP_STG(C);
}
