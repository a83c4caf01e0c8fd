"""What the source documents claim, and what traces and measurement on an H200 GPU say.

Each page shows the claims that belong to it, including the ones the traces and timings prove wrong.
A claim starts with the bold titles of the documents that make it (the pages set claims in italics).
The Benchmarks page's claims (MEASURED) are figures: their verdicts are computed from the run the page
shows (engine/bench/claim_checks.py), never typed in; the claims quote the figures that module holds.
"""
from engine.bench import claim_checks
from engine.kernels.documents import cite


def _by(*ids: str) -> str:
    return f"{cite(ids, '**{}**')}: "


CLAIMS = {
    "coalescing": [
        (_by("000") + "with i = blockIdx.x * blockDim.x + threadIdx.x as the row, 'the way we read from A is "
         "coalesced but for B it's strided'.",
         "Wrong way round. Consecutive lanes hold consecutive rows, so their A reads are K floats apart: one "
         "sector per lane. Their B reads share a sector. Measured on an H200 at N=1024 with 32x32 blocks: 486 "
         "GFLOP/s, against 6,208 for the mapping with threadIdx.x on columns (12x). With 16x16 blocks (the "
         "recorded run on the Benchmarks page) it is 943 against 5,044 (5.3x): a warp then spans 16 rows of A, "
         "not 32, so each load needs 16 sectors instead of 32."),
        (_by("001") + "transposing B 'enables coalesced memory access patterns where threads in a warp access "
         "contiguous memory locations', a speed-up of about the warp size.",
         "Each thread now walks a row of Bᵀ, but coalescing is about the 32 lanes of one load: lane j reads "
         "Bᵀ[j][p], K floats from lane j+1. 32 sectors per request; measured 486 GFLOP/s (32x32 blocks, "
         "N=1024), as slow as the "
         f"mapping of {cite('000', '*{}*')} and 12x slower than the plain coalesced kernel."),
        (_by("002", "003", "004") + "row = blockIdx.y * blockDim.y + threadIdx.y, "
         "col = blockIdx.x * blockDim.x + threadIdx.x.",
         "Right: lanes walk columns, B and C accesses take 4 sectors per 32 lanes (128 bytes), A is one "
         "broadcast address. 32x32 blocks: 6,208 GFLOP/s at N=1024; 16x16 blocks: 5,171."),
        (_by("000") + "the launch `matMul<<<blocksPerGridX, blocksPerGridY>>>`.",
         "Passes a block count where the threads per block belong; the explorer launches the 2-D grid the "
         "kernel's indexing expects."),
    ],
    "tiling": [
        (_by("000", "002", "003", "004") + "tiling reads each element from global memory once per tile and "
         f"reuses it TILE times: 'TILE times fewer' global reads ({cite('004', '**{}**')}: 2N³ down to 2N³/TILE).",
         "Right for the count of global loads: the page counts them in both traces. Time falls by far less: "
         "measured 7,765 GFLOP/s (TILE 16) and 9,104 (TILE 32) at N=1024 against 6,208 for the coalesced "
         "naive kernel, because the L1 and L2 caches already absorbed most of the naive kernel's re-reads."),
        (_by("003", "004") + "the kernel loops `for (t = 0; t < n / TILE_SIZE; ++t)` with no bounds checks.",
         "Only correct when every size is a multiple of TILE: otherwise it reads and writes outside the "
         "matrices and drops the last partial tile. The engine refuses such sizes for it."),
        (_by("002") + "'each element of A and B gets read ~1024 times from global memory' (N=1024, naive).",
         "Right as a count of load instructions per element; the trace shows 2·M·N·K loads for the naive kernel."),
    ],
    "banks": [
        (_by("001") + "padding the shared tiles prevents the bank conflicts of `tile_A[threadIdx.x][p]`.",
         "Right. Without padding the lanes of a warp read words TILE apart: TILE 32 puts all 32 in one bank "
         "(32 wavefronts), TILE 16 gives 8-way conflicts. With one word of padding each row starts one bank "
         "later and the conflicts vanish. Measured: 1.8x faster at TILE 16, 3.0x at TILE 32."),
        (_by("002") + "shared memory is 'SRAM, ~19TB/s'.",
         "Only when a warp's 32 lanes hit 32 different banks (or the same word): every extra word in one bank "
         "is one more serialized wavefront."),
        ("Nsight Compute counts what nvcc emitted, not what the source says.",
         "nvcc merges the unrolled `tile_A[threadIdx.x][p]` reads of 4 consecutive p into one LDS.128 when the "
         "rows are 16-byte aligned (no padding). The page shows both views; the 'as compiled' numbers are the "
         "ones ncu reads (checked on an H200)."),
    ],
}


_HEADLINE = claim_checks.NON_SQUARE
MEASURED = {
    "cuda_table": _by(claim_checks.CUDA_DOC) + "'Performance Comparison (Rough)' on an A100: " + "; ".join(
        # (a tilde escaped: GitHub-flavoured Markdown strikes text through between single tildes)
        f"{p.name} \\~{p.tflops:g} TFLOPS, {p.pct_of_peak:g}% of peak" for p in claim_checks.CUDA_TABLE) + ".",
    "divisible": _by(claim_checks.CUDA_DOC) + "'PyTorch Connection': torch.mm(A, B), torch.matmul(A, B), A @ B and "
    "F.linear 'all ... eventually call cuBLAS GEMM'; 'Check if tensor cores are being used: Dimensions divisible by 8 "
    "(ideal: 16), FP16 or BF16 dtype, Compute capability ≥ 7.0'.",
    "non_square": _by(claim_checks.NON_SQUARE_DOC) + f"on a {_HEADLINE.gpu}, matrix size n = {_HEADLINE.n} and kernel size "
    f"k = {_HEADLINE.k} (C = A·B with A {_HEADLINE.n}×{_HEADLINE.k} and B {_HEADLINE.k}×{_HEADLINE.n}): multiplication "
    f"time {_HEADLINE.seconds:g} s, performance {_HEADLINE.gflops:g} GFLOPS.",
}
