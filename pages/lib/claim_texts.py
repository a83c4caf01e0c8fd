"""What the source documents claim, in words, and what traces and measurement on an H200 GPU say.

Each page shows the claims that belong to it, including the ones the traces and timings prove wrong.
A claim starts with the bold titles of the documents that make it (the pages set claims in italics).
Every measured figure in a verdict is computed from a recorded run (engine/bench/claim_checks.py's
Quoted: the Coalescing, Tile phases and Bank conflicts pages quote the recorded run the Benchmarks page
shows without a GPU), never typed in; where the run lacks a row, the verdict says so. The Benchmarks
page's claims (MEASURED) quote the documents' printed figures that claim_checks holds; their verdicts
are computed there from the run the page shows.
"""
from engine.bench import claim_checks
from engine.bench.claim_checks import Quoted
from engine.kernels.documents import cite


def _by(*ids: str) -> str:
    return f"{cite(ids, '**{}**')}: "


def _coalescing_wrong_way(q: Quoted) -> str:
    said = ("Wrong way round. Consecutive lanes hold consecutive rows, so their A reads are K floats apart: one "
            "sector per lane. Their B reads share a sector. ")
    if not q.has("rows", "cols"):
        return said + q.missing("rows", "cols")
    return said + (f"In the {q.run} at N={q.n:,} with 16x16 blocks: {q.speed('rows')} GFLOP/s, against "
                   f"{q.speed('cols')} for the mapping with threadIdx.x on columns ({q.ratio('cols', 'rows')}). "
                   "With 16x16 blocks a warp spans 16 rows of A, not 32, so each load needs 16 sectors; with 32x32 "
                   "blocks it would need 32.")


def _coalescing_transposed(q: Quoted) -> str:
    said = ("Each thread now walks a row of Bᵀ, but coalescing is about the 32 lanes of one load: lane j reads "
            "Bᵀ[j][p], K floats from lane j+1. 32 sectors per request")
    if not q.has("transposed", "cols", "rows"):
        return said + ". " + q.missing("transposed", "cols", "rows")
    return said + (f"; in the {q.run} at N={q.n:,}, {q.speed('transposed')} GFLOP/s with 32x32 blocks: the plain "
                   f"coalesced kernel ({q.speed('cols')}, 16x16 blocks) runs {q.ratio('cols', 'transposed')} its "
                   f"speed, and even the mapping of {cite('000', '*{}*')} ({q.speed('rows')}, 16x16 blocks: "
                   f"16 sectors per request) {q.ratio('rows', 'transposed')}.")


def _coalescing_right(q: Quoted) -> str:
    said = ("Right: lanes walk columns, B and C accesses take 4 sectors per 32 lanes (128 bytes), A is one "
            "broadcast address. ")
    if not q.has("cols"):
        return said + q.missing("cols")
    return said + f"In the {q.run}: {q.speed('cols')} GFLOP/s at N={q.n:,} with 16x16 blocks."


def _tiling_time(q: Quoted) -> str:
    said = "Right for the count of global loads: the page counts them in both traces. "
    if not q.has("tiled", "cols"):
        return said + q.missing("tiled", "cols")
    return said + (f"Time falls by far less: in the {q.run} at N={q.n:,}, {q.speed('tiled')} GFLOP/s for "
                   f"tiled_guarded (TILE 16) against {q.speed('cols')} for the coalesced naive kernel (16x16 "
                   f"blocks), {q.ratio('tiled', 'cols')} and not 16x, because the L1 and L2 caches already absorbed "
                   "most of the naive kernel's re-reads.")


def _banks_padding(q: Quoted) -> str:
    said = ("Right. Without padding the lanes of a warp read words TILE apart: TILE 32 puts all 32 in one bank "
            "(32 wavefronts), TILE 16 gives 8-way conflicts. With one word of padding each row starts one bank "
            "later and the conflicts vanish. ")
    gains = [f"{q.ratio(f'padded{t}', f'conflicts{t}')} faster at TILE {t}" for t in (16, 32)
             if q.has(f"padded{t}", f"conflicts{t}")]
    if gains:
        return said + f"Padding, measured in the {q.run} at N={q.n:,}: {', '.join(gains)}."
    if q.has("conflicts16", "tiled"):
        return said + (f"The {q.run} times only the unpadded kernel, at TILE 16: {q.speed('conflicts16')} GFLOP/s "
                       f"at N={q.n:,}, while tiled_guarded, whose shared loads do not conflict, runs "
                       f"{q.speed('tiled')} at the same TILE, {q.ratio('tiled', 'conflicts16')} as fast.")
    return said + q.missing("padded16", "conflicts16")


# Each page's claims: (the claim, its verdict); a verdict with measured figures is a function of the
# run's Quoted figures (claims() computes it), one without is its text.
CLAIMS = {
    "coalescing": [
        (_by("000") + "with i = blockIdx.x * blockDim.x + threadIdx.x as the row, 'the way we read from A is "
         "coalesced but for B it's strided'.", _coalescing_wrong_way),
        (_by("001") + "transposing B 'enables coalesced memory access patterns where threads in a warp access "
         "contiguous memory locations', a speed-up of about the warp size.", _coalescing_transposed),
        (_by("002", "003", "004") + "row = blockIdx.y * blockDim.y + threadIdx.y, "
         "col = blockIdx.x * blockDim.x + threadIdx.x.", _coalescing_right),
        (_by("000") + "the launch `matMul<<<blocksPerGridX, blocksPerGridY>>>`.",
         "Passes a block count where the threads per block belong; the explorer launches the 2-D grid the "
         "kernel's indexing expects."),
    ],
    "tiling": [
        (_by("000", "002", "003", "004") + "tiling reads each element from global memory once per tile and "
         f"reuses it TILE times: 'TILE times fewer' global reads ({cite('004', '**{}**')}: 2N³ down to 2N³/TILE).",
         _tiling_time),
        (_by("003", "004") + "the kernel loops `for (t = 0; t < n / TILE_SIZE; ++t)` with no bounds checks.",
         "Only correct when every size is a multiple of TILE: otherwise it reads and writes outside the "
         "matrices and drops the last partial tile. The engine refuses such sizes for it."),
        (_by("002") + "'each element of A and B gets read ~1024 times from global memory' (N=1024, naive).",
         "Right as a count of load instructions per element; the trace shows 2·M·N·K loads for the naive kernel."),
    ],
    "banks": [
        (_by("001") + "padding the shared tiles prevents the bank conflicts of `tile_A[threadIdx.x][p]`.",
         _banks_padding),
        (_by("002") + "shared memory is 'SRAM, ~19TB/s'.",
         "Only when a warp's 32 lanes hit 32 different banks (or the same word): every extra word in one bank "
         "is one more serialized wavefront."),
        ("Nsight Compute counts what nvcc emitted, not what the source says.",
         "nvcc merges the unrolled `tile_A[threadIdx.x][p]` reads of 4 consecutive p into one LDS.128 when the "
         "rows are 16-byte aligned (no padding). The page shows both views; the 'as compiled' numbers are the "
         "ones ncu reads (checked on an H200)."),
    ],
}


def tagline(q: Quoted | None = None) -> str:
    """The home page's opening line: how much faster the fastest FP32 kernel ran than the slowest, in q
    (by default the recorded run)."""
    q = q if q is not None else claim_checks.recorded_quoted()
    if not q.has("cublas", "transposed"):
        return "Why one matrix-multiplication kernel is many times faster than another"
    return (f"Why one matrix-multiplication kernel is {q.ratio('cublas', 'transposed')} faster than another "
            f"({q.label('cublas')} against {q.label('transposed')} at N={q.n:,}, {q.run})")


def claims(page: str, q: Quoted | None = None) -> list[tuple[str, str]]:
    """A page's claims with their verdicts, the measured figures from q: by default the recorded run
    the Benchmarks page shows without a GPU (claim_checks.recorded_quoted)."""
    q = q if q is not None else claim_checks.recorded_quoted()
    return [(claim, verdict(q) if callable(verdict) else verdict) for claim, verdict in CLAIMS[page]]


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
