// pad_rows.cu: AP = A and BP = B with each row padded with zeros to a multiple of 64 floats, step
// one of split_k_padded. A K or N that is not a multiple of 4 puts most rows of A or B off 16-byte
// boundaries, where no float4 load or cp.async can start; AP (M x Kp) and BP (K x Np) start every
// row on a 256-byte boundary. One thread writes one float4 of AP or BP (a 16-byte store), reading
// its four floats one by one, since the source rows lie anywhere; lanes read consecutive floats of a
// row, so the reads coalesce too. Each element of A and B is read once and written once.
#include "trace.cuh"

// One thread per float4 of AP (M x Kp), then of BP (K x Np).
LAUNCH_GRID(CDIV(M * CDIV(K, 64) * 16 + K * CDIV(N, 64) * 16, 256), 1);
LAUNCH_BLOCK(256, 1);
TRACE_RECORDS(5);   // four loads, one 16-byte store

extern "C" __global__ void __launch_bounds__(256) pad_rows(const float *A, const float *B, float *AP, float *BP, int M, int N, int K) {
    int kp = (K + 63) / 64 * 64, np = (N + 63) / 64 * 64;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // float4s of AP, then of BP
    long long a4 = (long long)M * (kp / 4), b4 = (long long)K * (np / 4);
    if (i < a4) {
        int row = i / (kp / 4), c = i % (kp / 4) * 4;
        float4 v;
        v.x = c < K ? LDG(A, row * K + c) : (SKIP_LDG(A), 0.0f);
        v.y = c + 1 < K ? LDG(A, row * K + c + 1) : (SKIP_LDG(A), 0.0f);
        v.z = c + 2 < K ? LDG(A, row * K + c + 2) : (SKIP_LDG(A), 0.0f);
        v.w = c + 3 < K ? LDG(A, row * K + c + 3) : (SKIP_LDG(A), 0.0f);
        STG4(AP, row * kp + c, v);
    } else if (i - a4 < b4) {
        i -= a4;
        int row = i / (np / 4), c = i % (np / 4) * 4;
        float4 v;
        v.x = c < N ? LDG(B, row * N + c) : (SKIP_LDG(B), 0.0f);
        v.y = c + 1 < N ? LDG(B, row * N + c + 1) : (SKIP_LDG(B), 0.0f);
        v.z = c + 2 < N ? LDG(B, row * N + c + 2) : (SKIP_LDG(B), 0.0f);
        v.w = c + 3 < N ? LDG(B, row * N + c + 3) : (SKIP_LDG(B), 0.0f);
        STG4(BP, row * np + c, v);
    }
}
