// One warp, one shared-memory instruction per launch, for Nsight Compute to count: the lane -> word
// patterns of tests/benchmarks/shared_patterns.py, loaded or stored 32, 64 or 128 bits wide.
// Reads patterns.bin: int32 count, then per pattern int32 kind (0 load, 1 store), int32 width (words
// per lane: 1, 2, 4) and 32 int32 words (-1: the lane takes no part). Launch i is pattern i.
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int WORDS = 8192;

template <int W>
__global__ void shared_load(const int *pattern, float *out) {
    __shared__ __align__(16) float s[WORDS];
    for (int i = threadIdx.x; i < WORDS; i += 32) s[i] = float(i);
    __syncthreads();
    int w = pattern[threadIdx.x];
    float v = 0.0f;
    if (w >= 0) {
        if constexpr (W == 1) v = s[w];
        if constexpr (W == 2) { float2 x = *reinterpret_cast<const float2 *>(&s[w]); v = x.x + x.y; }
        if constexpr (W == 4) { float4 x = *reinterpret_cast<const float4 *>(&s[w]); v = x.x + x.y + x.z + x.w; }
    }
    out[threadIdx.x] = v;
}

template <int W>
__global__ void shared_store(const int *pattern, float *out) {
    __shared__ __align__(16) float s[WORDS];
    int w = pattern[threadIdx.x];
    float v = float(threadIdx.x);
    if (w >= 0) {
        if constexpr (W == 1) s[w] = v;
        if constexpr (W == 2) *reinterpret_cast<float2 *>(&s[w]) = make_float2(v, v);
        if constexpr (W == 4) *reinterpret_cast<float4 *>(&s[w]) = make_float4(v, v, v, v);
    }
    __syncthreads();
    out[threadIdx.x] = w >= 0 ? s[w] : 0.0f;
}

int main(int argc, char **argv) {
    FILE *f = fopen(argc > 1 ? argv[1] : "patterns.bin", "rb");
    if (!f) { perror("patterns"); return 1; }
    int count = 0;
    if (fread(&count, 4, 1, f) != 1) return 1;
    std::vector<int> all(size_t(count) * 34);
    if (fread(all.data(), 4, all.size(), f) != all.size()) return 1;
    int *pattern; float *out;
    cudaMalloc(&pattern, 32 * sizeof(int));
    cudaMalloc(&out, 32 * sizeof(float));
    for (int i = 0; i < count; i++) {
        const int *p = &all[size_t(i) * 34];
        cudaMemcpy(pattern, p + 2, 32 * sizeof(int), cudaMemcpyHostToDevice);
        int kind = p[0], width = p[1];
        if (kind == 0 && width == 1) shared_load<1><<<1, 32>>>(pattern, out);
        if (kind == 0 && width == 2) shared_load<2><<<1, 32>>>(pattern, out);
        if (kind == 0 && width == 4) shared_load<4><<<1, 32>>>(pattern, out);
        if (kind == 1 && width == 1) shared_store<1><<<1, 32>>>(pattern, out);
        if (kind == 1 && width == 2) shared_store<2><<<1, 32>>>(pattern, out);
        if (kind == 1 && width == 4) shared_store<4><<<1, 32>>>(pattern, out);
    }
    cudaError_t e = cudaDeviceSynchronize();
    printf("%d launches: %s\n", count, cudaGetErrorString(e));
    return e != cudaSuccess;
}
