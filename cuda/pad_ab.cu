// pad_ab.cu: the first step of wgmma_padded. AP = A (M x K) and BP = B (K x N), each row padded
// with zeros to a multiple of 8 halves (AP is M x Kp, BP is K x Np): rows of 16-byte multiples,
// which TMA needs and a K or N not a multiple of 8 does not give. One thread writes one 16-byte
// chunk of AP or BP; it reads it with one 16-byte load where the source rows are 16-byte aligned,
// half by half where they are not. The copy reads and writes each element of A and B once, a
// pass over 4 (M K + K N) bytes, against the 2 M N K operations of the product that follows.
#include <cuda_fp16.h>

// The n (at most 8) halves from p, zeros after; p 16-byte aligned where aligned is true.
__device__ __forceinline__ uint4 chunk(const __half *p, long long n, bool aligned) {
    if (aligned && n >= 8) return *reinterpret_cast<const uint4 *>(p);
    unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < 8; e++)
        if (e < n) w[e / 2] |= (unsigned)__half_as_ushort(p[e]) << (16 * (e % 2));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

extern "C" __global__ void __launch_bounds__(256) pad_ab(const __half *A, const __half *B, __half *AP, __half *BP, int M, int N, int K) {
    long long kp = (K + 7) / 8 * 8, np = (N + 7) / 8 * 8;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // chunks of AP, then of BP
    long long a_chunks = M * (kp / 8), b_chunks = K * (np / 8);
    if (i < a_chunks) {
        long long row = i / (kp / 8), c = i % (kp / 8) * 8;
        *reinterpret_cast<uint4 *>(AP + row * kp + c) = chunk(A + row * K + c, K - c, K % 8 == 0);
    } else if (i - a_chunks < b_chunks) {
        i -= a_chunks;
        long long row = i / (np / 8), c = i % (np / 8) * 8;
        *reinterpret_cast<uint4 *>(BP + row * np + c) = chunk(B + row * N + c, N - c, N % 8 == 0);
    }
}
