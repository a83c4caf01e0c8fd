// pad_ab.cu: the first step of wgmma_padded, and of the other TMA rungs where K or N is not a multiple of 8. AP = A (M x K) and BP = B (K x N), each row padded
// with zeros to a multiple of 64 halves (AP is M x Kp, BP is K x Np): rows of 128-byte multiples.
// TMA needs rows of 16-byte multiples, which a K or N not a multiple of 8 does not give, and ran
// slower on rows of 16-byte but not 128-byte multiples (H100: wgmma_tma took 0.295 ms at 4088^3,
// rows 8,176 bytes apart, against 0.201 at 4096^3, as many tiles). One thread writes one 16-byte
// chunk of AP or BP. It reads 16 bytes at a time however the source rows lie: a row that does not
// start on a 16-byte boundary is read as the one or two aligned 16-byte chunks of the matrix its 8
// halves straddle, shifted into place (a neighbour reads the same chunks, from L1): two load
// instructions for 8 halves rather than eight. The copy reads and writes each element of A and B
// once, about 4 (MK + KN) bytes.
#include <cuda_fp16.h>
#include "contract.cuh"

// One thread per 16-byte chunk of AP (M x Kp), then of BP (K x Np), Kp and Np rounded up to 64 halves.
LAUNCH_GRID(CDIV(M * CDIV(K, 64) * 8 + K * CDIV(N, 64) * 8, 256), 1);
LAUNCH_BLOCK(256, 1);

// Of two 32-bit words of four halves, the word starting `odd` halves into the first.
__device__ __forceinline__ unsigned pick(unsigned w0, unsigned w1, bool odd) {
    return odd ? __funnelshift_r(w0, w1, 16) : w0;
}

// The n halves from element i of src on, at most 8, zeros after: 16-byte loads only, the aligned
// chunk holding element i and, where the 8 run past it, the next one. n of 0 or less (a chunk
// wholly in a row's padding, where a row's 64-half padding holds more than 8 halves past its end)
// reads nothing: element i is then past the row, and for the last row past the matrix. It was read,
// and at 4095 x 4097 x 4095 B ends 2 bytes short of 32 MiB, so its last row's padding chunks read
// past B's allocation: an illegal address (wgmma_tma, mma_tma, wgmma_padded alike).
__device__ __forceinline__ uint4 chunk(const __half *src, long long i, long long n) {
    if (n <= 0) return make_uint4(0, 0, 0, 0);
    const uint4 *at = reinterpret_cast<const uint4 *>(src) + i / 8;
    int shift = i % 8;
    uint4 lo = at[0], hi = shift + n > 8 ? at[1] : make_uint4(0, 0, 0, 0);
    unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w}, out[4];
    int first = shift / 2;
    bool odd = shift % 2;
#pragma unroll
    for (int k = 0; k < 4; k++) {   // word `first + k` of w, chosen by selects: w stays in registers
        unsigned a = first == 0 ? w[k] : first == 1 ? w[k + 1] : first == 2 ? w[k + 2] : w[k + 3];
        unsigned b = first == 0 ? w[k + 1] : first == 1 ? w[k + 2] : first == 2 ? w[k + 3] : w[k + 4];
        unsigned word = pick(a, b, odd);
        if (2 * k >= n) word = 0;                      // past the row's end: zeros
        else if (2 * k + 1 >= n) word &= 0xffffu;
        out[k] = word;
    }
    return make_uint4(out[0], out[1], out[2], out[3]);
}

extern "C" __global__ void __launch_bounds__(256) pad_ab(const __half *A, const __half *B, __half *AP, __half *BP, int M, int N, int K) {
    long long kp = (K + 63) / 64 * 64, np = (N + 63) / 64 * 64;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // chunks of AP, then of BP
    long long a_chunks = M * (kp / 8), b_chunks = K * (np / 8);
    if (i < a_chunks) {
        long long row = i / (kp / 8), c = i % (kp / 8) * 8;
        *reinterpret_cast<uint4 *>(AP + row * kp + c) = chunk(A, row * K + c, K - c);
    } else if (i - a_chunks < b_chunks) {
        i -= a_chunks;
        long long row = i / (np / 8), c = i % (np / 8) * 8;
        *reinterpret_cast<uint4 *>(BP + row * np + c) = chunk(B, row * N + c, N - c);
    }
}
