// fragment_probe.cu: which lane holds which element of a tensor-core fragment, found by loading
// known values (each element's own index) and writing out what every lane received. Not a matmul:
// one warp, run once by tests/benchmarks/record_fragments.py on the GPU; its output ships as the
// recorded fragment maps the Tensor cores page draws (engine/metrics/fragments.py compares them
// with the PTX ISA's tables).
//
// out, in floats (lane-major: [lane][element]):
//   [0, 512)      WMMA m16n16k16 matrix_a (row_major) elements x[0..15] of each lane: the index r*16+c
//   [512, 1024)   matrix_b, row_major (index k*16+n)
//   [1024, 1536)  matrix_b, col_major (index k+16n as stored)
//   [1536, 1792)  accumulator: lane*8+e written into x[e], stored row-major: out[1536 + r*16+c]
//   [1792, 2048)  D = A B of the random inputs through wmma (row-major 16 x 16)
//   [2048, 2304)  mma.sync m16n8k16 A fragment via ldmatrix.x4: 4 registers x 2 halves per lane
//   [2304, 2432)  B fragment via ldmatrix.x2.trans of a row-major 16 x 8 (k x n): 2 x 2 per lane
//   [2432, 2560)  accumulator: d[0..3] of each lane after D = A B with A[m][0] = m, A[m][1] = 1,
//                 B[0][n] = 16, B[1][n] = n, all else 0, so d = 16 m + n names its element
//   [2560, 2688)  D = A B of the random inputs through ldmatrix + mma.sync, lane-major d[0..3]
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

__device__ __forceinline__ float lo(unsigned r) { return __half2float(__ushort_as_half(r & 0xffff)); }
__device__ __forceinline__ float hi(unsigned r) { return __half2float(__ushort_as_half(r >> 16)); }

// ra: 16 x 16 random A (row-major), rb: 16 x 16 random B (row-major; its first 8 columns are the
// mma.sync B).
extern "C" __global__ void fragment_probe(const __half *ra, const __half *rb, float *out) {
    __shared__ __align__(32) __half idx[256];
    __shared__ __align__(32) __half as[256], bs[256], b8[128], pa[256], pb[128];
    int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) {
        idx[i] = __float2half((float)i);
        as[i] = ra[i], bs[i] = rb[i];
        int m = i / 16, k = i % 16;
        pa[i] = __float2half(k == 0 ? (float)m : k == 1 ? 1.0f : 0.0f);
    }
    for (int i = lane; i < 128; i += 32) {
        int k = i / 8, n = i % 8;
        b8[i] = rb[k * 16 + n];
        pb[i] = __float2half(k == 0 ? 16.0f : k == 1 ? (float)n : 0.0f);
    }
    __syncwarp();

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> br;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> bc;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(a, idx, 16);
    wmma::load_matrix_sync(br, idx, 16);
    wmma::load_matrix_sync(bc, idx, 16);
    for (int e = 0; e < a.num_elements; e++) out[lane * 16 + e] = __half2float(a.x[e]);
    for (int e = 0; e < br.num_elements; e++) out[512 + lane * 16 + e] = __half2float(br.x[e]);
    for (int e = 0; e < bc.num_elements; e++) out[1024 + lane * 16 + e] = __half2float(bc.x[e]);
    for (int e = 0; e < acc.num_elements; e++) acc.x[e] = (float)(lane * 8 + e);
    wmma::store_matrix_sync(out + 1536, acc, 16, wmma::mem_row_major);
    wmma::load_matrix_sync(a, as, 16);
    wmma::load_matrix_sync(br, bs, 16);
    wmma::fill_fragment(acc, 0.0f);
    wmma::mma_sync(acc, a, br, acc);
    wmma::store_matrix_sync(out + 1792, acc, 16, wmma::mem_row_major);

    // mma.sync: fragments as ldmatrix hands them out (A: lane l names row l % 16 at column
    // 8 (l / 16); B: lanes 0-15 name rows k = l of the 16 x 8 tile).
    unsigned ar[4], br2[2];
    unsigned addr_a = (unsigned)__cvta_generic_to_shared(&idx[(lane % 16) * 16 + lane / 16 * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(ar[0]), "=r"(ar[1]), "=r"(ar[2]), "=r"(ar[3]) : "r"(addr_a));
    for (int r = 0; r < 4; r++) out[2048 + lane * 8 + 2 * r] = lo(ar[r]), out[2048 + lane * 8 + 2 * r + 1] = hi(ar[r]);
    __shared__ __align__(16) __half idx8[128];
    for (int i = lane; i < 128; i += 32) idx8[i] = __float2half((float)i);
    __syncwarp();
    unsigned addr_b = (unsigned)__cvta_generic_to_shared(&idx8[(lane % 16) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(br2[0]), "=r"(br2[1]) : "r"(addr_b));
    for (int r = 0; r < 2; r++) out[2304 + lane * 4 + 2 * r] = lo(br2[r]), out[2304 + lane * 4 + 2 * r + 1] = hi(br2[r]);

    // Two products through the same loads: the position code, then the random inputs.
    const __half *srcs_a[2] = {pa, as}, *srcs_b[2] = {pb, b8};
    for (int p = 0; p < 2; p++) {
        addr_a = (unsigned)__cvta_generic_to_shared(&srcs_a[p][(lane % 16) * 16 + lane / 16 * 8]);
        addr_b = (unsigned)__cvta_generic_to_shared(&srcs_b[p][(lane % 16) * 8]);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(ar[0]), "=r"(ar[1]), "=r"(ar[2]), "=r"(ar[3]) : "r"(addr_a));
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(br2[0]), "=r"(br2[1]) : "r"(addr_b));
        float d[4] = {0, 0, 0, 0};
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                     "{%0, %1, %2, %3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br2[0]), "r"(br2[1]));
        for (int e = 0; e < 4; e++) out[2432 + 128 * p + lane * 4 + e] = d[e];
    }
}
