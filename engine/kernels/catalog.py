"""The kernel catalog: the one list of kernels that the pages, benchmarks, tests and README read
(through engine/kernels/registry.py, which answers questions about it).

An entry keeps what is not code: its title and lesson, the documents it comes from (seeds), its kind
and precisions, the views that show it, notes, and, for a kernel of several launches, their order
(naive_transposed_b: transpose_b.cu, then naive_transposed_b.cu). Its parameters with their
defaults, its rules and its launch geometry are the contract block of its sources
(cuda/contract.cuh), which engine/kernels/declared.py reads. Every entry is checked against the
contract when this module is imported, so a broken one stops the engine at start-up. Adding a
kernel is a .cu file with its contract block and an entry here for its title, lesson and pages.
"""
from __future__ import annotations

import numpy as np

from engine.kernels import declared
from engine.kernels.contract import NAIVE_BLOCKS, KernelSpec, Kind, Launch, Precision, check
from engine.kernels.documents import cite
from engine.kernels.problem import Problem


def _entry(*launches: str | Launch, **fields) -> KernelSpec:
    """An entry whose parameters, rules and launches its sources declare (launches: the files, in
    order, or a Launch where the catalog adds what is not the source's to say)."""
    made = [declared.launch(lc) if isinstance(lc, str) else lc for lc in launches]
    return KernelSpec(**declared.entry_fields(*made), **fields)


# The FP32 ladder after tiling (cuda/blocktile_1d.cu ... prefetched.cu). The defaults in the
# sources are the winners of the autotuning sweep (tests/benchmarks/tune_ladder.py) at 4096^3 on
# the H200, recorded in engine/bench/recorded/tuning/ (the Benchmarks page shows it), except
# prefetched's warp tile: that sweep (2026-11-21) predates the rung's unguarded interior path, and
# since then tests/benchmarks/tune_fp32.py timed WM 64 x WN 64 about a point of cuBLAS SGEMM faster
# than the sweep's WM 32 x WN 128 in every run on an H100 and an H200, at 4096^3 and 8192^3 (the
# sweep's ranking of it, 8th at 98% of its winner, is what the Benchmarks page shows).
LADDER_VIEWS = frozenset({"ladder", "coalescing", "benchmarks"})
# The rungs whose shared loads the Bank conflicts page also shows, at their own shapes:
# blocktile_2d's scalar loads of As and Bs (lanes a row or TN words apart: in conflict as written;
# nvcc merges them into LDS.128, conflict-free as compiled), and the 128-bit loads of vectorized and
# warptile, served 8 lanes at a time (16 where lanes read in pairs).
BANK_RUNGS = ("blocktile_2d", "vectorized", "warptile")


def _ladder_rung(name: str, title: str, lesson: str) -> KernelSpec:
    return _entry(f"{name}.cu", name=name, title=title, seeds=("002",), lesson=lesson,
                  shows=LADDER_VIEWS | ({"bank_conflicts"} if name in BANK_RUNGS else set()))


LADDER = (
    _ladder_rung("blocktile_1d", "1-D register tiling (TM outputs per thread)",
                 "Each thread computes TM outputs of one column: one b from shared memory serves TM FMAs."),
    _ladder_rung("blocktile_2d", "2-D register tiling (TM x TN outputs per thread)",
                 "Each thread computes a TM x TN tile as outer products of registers: TM + TN loads per TM x TN FMAs."),
    _ladder_rung("vectorized", "float4 loads, A transposed in shared memory",
                 "128-bit global and shared loads: a quarter of the load instructions, A's column as consecutive words."),
    _ladder_rung("warptile", "Warp tiling",
                 "Each warp owns a sub-tile: its lanes read consecutive 16-byte pieces of shared memory, without bank "
                 "conflicts."),
    _ladder_rung("double_buffered", "Double-buffered, cp.async",
                 "Two shared buffers: tile t + 1 is copied (cp.async) while tile t is multiplied; one barrier per tile."),
    _ladder_rung("prefetched", "Prefetched fragments (register double buffering)",
                 "Step k + 1's shared loads are issued before step k's FMAs: the multiply no longer waits on shared "
                 "memory."),
)



def _slices_read_by(p: Problem, blocks: np.ndarray) -> np.ndarray:
    """Which blocks of split_k.cu a traced block of split_k_sum.cu reads (how the two launches'
    outputs and inputs meet, not a contract): sum block (x, y) adds row y, columns x*4*threads ..
    of every slice, which split_k's blocks (x', row tile + s * row tiles) stored, s = 0 .. SPLITK - 1."""
    bm, bn, splits = p.params["BM"], p.params["BN"], p.params["SPLITK"]
    span = 4 * SUM_THREADS   # the columns of C one sum block covers
    row_tiles, col_tiles = -(-p.m // bm), -(-p.n // bn)
    wanted = {(x, y // bm + s * row_tiles) for bx, y in blocks.tolist()
              for x in range(bx * span // bn, min(col_tiles, -(-(bx + 1) * span // bn)))
              for s in range(splits)}
    return np.array(sorted(wanted, key=lambda b: (b[1], b[0])), dtype=np.uint32).reshape(-1, 2)


SUM_THREADS = declared.read("split_k_sum.cu").named("kSumThreads")
# Past the ladder: the prefetched kernel's block tile with K split over SPLITK blocks, for the sizes
# whose grid of tiles cannot fill the GPU (engine/bench/selection.py says which size takes which).
SPLIT_K = _entry(declared.launch("split_k.cu", prepares=_slices_read_by), "split_k_sum.cu", name="split_k",
                 title="Split-K (slices of K in parallel, then a deterministic sum)",
                 seeds=("002",),
                 lesson="A small C has too few tiles for 132 SMs: SPLITK blocks share each tile, one slice of K each, "
                        "and a second launch adds their partial tiles in a fixed order.",
                 shows=frozenset({"benchmarks"}),
                 notes=("Its timings include the summing launch (split_k_sum.cu): SPLITK x M x N partials read once.",))
SPLIT_K_PADDED = _entry("pad_rows.cu", declared.launch("split_k_padded.cu", prepares=_slices_read_by), "split_k_sum.cu",
                        name="split_k_padded", title="Split-K on rows padded to 64 floats (any size)",
                        seeds=("002",),
                        lesson="A K or N not a multiple of 4 leaves rows off 16-byte boundaries, and every float4 "
                               "and cp.async falls back to single floats: one pass pads the rows, and split_k runs "
                               "on 16-byte loads again.",
                        shows=frozenset({"benchmarks"}),
                        notes=("Its timings include the padding launch (pad_rows.cu, one pass over A and B) and "
                               "the summing launch (split_k_sum.cu).",))
# Every FP32 kernel of this family, the ladder's and those past it: what the tuning sweep times and
# ranks against cuBLAS FP32.
FP32_RUNGS = (*LADDER, SPLIT_K, SPLIT_K_PADDED)

# The tensor-core ladder (cuda/wmma_as_written.cu ... wgmma_padded.cu): FP16 inputs, FP32 accumulate.
# Defaults: the winners of the sweep at 4096^3 on the H200 (engine/bench/recorded/tuning/h200-tensor-*;
# the persistent wgmma rungs': h200-2026-11-26-wgmma-*). mma_pipelined's tiles stay: in its sweep
# since its fragments come in two sets (h200-2026-11-26-tensor-mma-4096) it is within 3% of the
# winner (128 x 256, STAGES 4), and new tiles would change the golden traces of the cases run at them;
# its COPY_AT 1 won in 5 of the 6 tile shapes on both GPUs (<gpu>-2026-11-27-mma-pipelined-copy-at-*).
# mma_tma's: the winner of its sweep on an H100 at 4096^3 and 8192^3 alike (h100-2026-11-26-mma-tma-*).
# wgmma_stream_k's (SMS 128, CLUSTER 2, SPLITS 4): of the choices tests/benchmarks/stream_k.py times beside
# the default, none was more than 0.3% faster where it shares tiles out, on an H100 or an H200
# (h100-stream-k-2026-11-26.json). A run that names none of its parameters takes the size sweeps' choice
# for its size instead (engine/bench/selection.py; selection/<gpu>-2026-11-27-tensor-sizes.json: BN 128
# for a C of few tiles, 1024^3).
TENSOR_VIEWS = frozenset({"tensor_cores", "benchmarks"})
# The K step of mma_ldmatrix's and mma_swizzled's shared tiles (kBK in their sources), which the
# Tensor cores page draws.
TENSOR_K = declared.read("mma_ldmatrix.cu").named("kBK")


def _tensor(name: str, title: str, lesson: str, *launches: str | Launch, **fields) -> KernelSpec:
    return _entry(*(launches or (f"{name}.cu",)), name=name, title=title, seeds=("002",), lesson=lesson,
                  kind=fields.pop("kind", Kind.CUDA), inputs=Precision.FP16, compute=Precision.FP16,
                  shows=TENSOR_VIEWS, **fields)


# wgmma needs the architecture-specific target (sm_90a), not what the other kernels build for
# (mma_tma too: setmaxnreg).
_WGMMA = {"arch": "sm_90a"}


def _rows_tma_cannot_copy(p: Problem) -> bool:
    """TMA copies rows whose byte stride is a multiple of 16: FP16 rows of K (A) or N (B) halves
    need K and N multiples of 8."""
    return p.k % 8 != 0 or p.n % 8 != 0


def _tma_rung(file: str) -> tuple[Launch, Launch]:
    """A TMA rung's launches at any size: where TMA cannot copy A's or B's rows, first the padding
    pass (pad_ab.cu, wgmma_padded's), then the rung with its maps of A and B reading the padded
    copies (rows of 64 halves, zeros past K and N); elsewhere the rung alone."""
    return (declared.launch("pad_ab.cu", runs=_rows_tma_cannot_copy),
            declared.launch(file, maps_read=lambda p: {"A": "AP", "B": "BP"} if _rows_tma_cannot_copy(p) else {},
                            **_WGMMA))


# What the TMA rungs' timings include where their sizes need it.
_PADS_WHERE_NEEDED = ("Where K or N is not a multiple of 8, its timings include a first launch (pad_ab.cu) that "
                      "copies A and B into rows padded to 64 halves, one pass over A and B.",)

# What any mma.sync kernel can reach, measured (tests/benchmarks/mma_peak.py; the run is
# engine/bench/recorded/peak/h100-2026-11-26.json, tests/test_peak.py holds this text to it).
MMA_SYNC_CEILING = ("mma.sync.m16n8k16 itself runs at 652 TFLOP/s on an H100 (from registers; 641 fed by ldmatrix "
                    "from shared memory), against 853 for wgmma and 719 for cuBLAS FP16 at 4096³ in the same run: "
                    "no mma.sync kernel passes about 91% of cuBLAS FP16 there, and 65% of cuBLAS FP16 (the aim for an "
                    "mma.sync rung) is 72% of the instruction's own ceiling.")

TENSOR_LADDER = (
    _tensor("wmma_as_written", "WMMA as the document writes it",
            "The document's kernel, as written: its warps compute every tile 32 times, and it reads B's 16 x 16 "
            "blocks transposed.", kind=Kind.OPAQUE,
            notes=("Launched with blocks of 32 x 4 threads and 8 x M / 16 blocks in y, so that warpM reaches every "
                   "row tile: 32 warps then share each tile.",)),
    _tensor("wmma_warp", "WMMA, one warp per 16 x 16 tile",
            "The same instructions, indexed right: each warp owns one 16 x 16 tile of C and walks K.", kind=Kind.OPAQUE),
    _tensor("wmma_block", "WMMA from shared-memory tiles",
            "A block's warps share A's and B's tiles through shared memory; each warp reuses its fragments "
            "across a WM x WN piece.", kind=Kind.OPAQUE),
    _tensor("mma_ldmatrix", "mma.sync m16n8k16 with ldmatrix",
            "The instruction under WMMA, written out: ldmatrix hands each lane its fragment, mma.sync multiplies "
            "16 x 8 x 16."),
    _tensor("mma_swizzled", "mma.sync on swizzled shared tiles",
            "An XOR of each 16-byte chunk with its row puts ldmatrix's 8 rows in 8 different bank groups: one "
            "wavefront per matrix."),
    _tensor("mma_pipelined", "mma.sync with a cp.async pipeline",
            "STAGES tiles in flight: the copies of the next tiles overlap the multiply of this one, one barrier "
            "per tile; blocks run in groups of 8 block rows, sharing B's tiles in L2.",
            notes=(MMA_SYNC_CEILING,)),
    _tensor("mma_tma", "mma.sync fed by TMA, 128 x 256 tiles",
            "mma_pipelined's instruction fed as the wgmma rungs are fed: one producer thread copies each k-tile "
            "of a 128 x 256 tile by TMA into a ring, and each consumer warp waits on its slot's mbarrier, "
            "multiplies a 64 x 64 piece (ldmatrix + mma.sync) and hands the slot back on its own.",
            *_tma_rung("mma_tma.cu"), kind=Kind.OPAQUE, notes=(MMA_SYNC_CEILING, *_PADS_WHERE_NEEDED)),
    _tensor("wgmma_tma", "wgmma with TMA and warp specialisation",
            "Hopper's path: TMA copies whole tiles, wgmma multiplies 64 x BN x 16 from shared memory, a producer "
            "warpgroup feeds consumer warpgroups.", *_tma_rung("wgmma_tma.cu"), kind=Kind.OPAQUE,
            notes=_PADS_WHERE_NEEDED),
    _tensor("wgmma_padded", "wgmma on rows padded to 16 bytes (any size)",
            "wgmma_tma with its padding at every size: a first pass copies A and B into rows padded to 128-byte "
            "multiples, as TMA needs them where K or N is not a multiple of 8, and it shows what the copy costs "
            "where it is not needed; cuBLAS FP16 falls off a cliff at the sizes that need it.",
            "pad_ab.cu", declared.launch("wgmma_padded.cu", **_WGMMA), kind=Kind.OPAQUE,
            notes=("Its timings include the padding launch (pad_ab.cu): one pass over A and B.",)),
    _tensor("wgmma_persistent", "wgmma, persistent, grouped tiles, wgmma in flight",
            "wgmma_tma with one block per SM looping over tiles in grouped order (L2 reuse), the producer copying "
            "the next tile while C is stored, and each k-tile's wgmma left in flight while the next is issued.",
            *_tma_rung("wgmma_persistent.cu"), kind=Kind.OPAQUE,
            notes=_PADS_WHERE_NEEDED),
    _tensor("wgmma_cluster", "wgmma in clusters of 2, B multicast by TMA",
            "wgmma_persistent with two blocks per thread-block cluster on tiles one above the other: each copies "
            "half of the B tile both need, and TMA multicast lands it in both blocks' shared memory.",
            *_tma_rung("wgmma_cluster.cu"), kind=Kind.OPAQUE,
            notes=_PADS_WHERE_NEEDED),
    _tensor("wgmma_epilogue", "wgmma clusters, C stored by TMA from shared memory",
            "wgmma_cluster with C written a 64 x 32 piece at a time into shared memory and stored by the copy "
            "engine, so the tensor cores start the next tile while C is still being written.",
            *_tma_rung("wgmma_epilogue.cu"), kind=Kind.OPAQUE,
            notes=_PADS_WHERE_NEEDED),
    _tensor("wgmma_stream_k", "wgmma, a partial last wave shared out by k-tiles (stream-K)",
            "wgmma_epilogue with the tiles of a partial last wave cut into k-tiles and dealt out evenly to every "
            "cluster: 3000³ is 2.25 waves of tile pairs for 64 clusters, and takes 2.25 waves' time, not 3; the "
            "cluster that began a shared tile adds the others' partial sums and stores it.",
            *_tma_rung("wgmma_stream_k.cu"), kind=Kind.OPAQUE,
            notes=_PADS_WHERE_NEEDED),
)
TENSOR_RUNGS = tuple(k.name for k in TENSOR_LADDER)
# The rungs that pad A and B first only where TMA cannot copy their rows (_tma_rung).
TMA_RUNGS = tuple(k.name for k in TENSOR_LADDER if k.launches[0].runs is _rows_tma_cannot_copy)


def _transposes_read_by(p: Problem, blocks: np.ndarray) -> np.ndarray:
    """Which blocks of transpose_b a traced block of naive_transposed_b reads (not a contract: how
    the two launches' outputs and inputs meet). Block (x, y) of naive_transposed_b reads rows
    x*bx .. x*bx+bx-1 of BT (its columns of C), all K of them; transpose_b's block (x, y), of the
    same block shape, writes those rows for columns y*by .. y*by+by-1 of BT. So: the transpose
    blocks of the same x, every y."""
    xs = np.unique(blocks[:, 0])
    rows = -(-p.k // p.block[1])
    return np.array([(x, y) for y in range(rows) for x in xs], dtype=np.uint32).reshape(-1, 2)


# The tiled kernels' tile sides (what their sources offer; a page's TILE select lists them).
TILES = declared.read("tiled_guarded.cu").params["TILE"]
NAIVE_VIEWS = frozenset({"coalescing", "benchmarks"})
TILED_VIEWS = frozenset({"coalescing", "tile_phases", "bank_conflicts", "benchmarks"})


CATALOG: tuple[KernelSpec, ...] = (
    KernelSpec(
        name="naive_x_rows",
        title="Naive, threadIdx.x walks rows",
        seeds=("000",),
        lesson="One thread per output, lanes on consecutive rows: every lane reads its own 32-byte sector of A.",
        **declared.entry_fields(declared.launch("naive_x_rows.cu")),
        block_shapes=NAIVE_BLOCKS,
        shows=NAIVE_VIEWS,
        rows_from_block_x=True,
        notes=(f"{cite('000')} says A is read coalesced and B strided; with its own mapping it is the reverse.",
               f"{cite('000')}'s launch line `matMul<<<blocksPerGridX, blocksPerGridY>>>` passes a block count "
               "where the threads per block belong; the engine launches the 2-D grid the kernel expects."),
    ),
    KernelSpec(
        name="naive_x_cols",
        title="Naive, threadIdx.x walks columns",
        seeds=("002", "003", "004"),
        lesson="Same arithmetic, lanes on consecutive columns: B and C accesses coalesce into 4 sectors per warp.",
        **declared.entry_fields(declared.launch("naive_x_cols.cu")),
        block_shapes=NAIVE_BLOCKS,
        shows=NAIVE_VIEWS,
    ),
    KernelSpec(
        name="naive_transposed_b",
        title="Naive on pre-transposed B",
        seeds=("001",),
        lesson="Transposing B makes each thread walk a row, but a warp's 32 lanes still land K floats apart.",
        **declared.entry_fields(declared.launch("transpose_b.cu", prepares=_transposes_read_by),
                                declared.launch("naive_transposed_b.cu")),
        block_shapes=NAIVE_BLOCKS,
        default_block=(32, 32),
        shows=NAIVE_VIEWS,
        notes=(f"{cite('001')} models a speed-up of about the warp size from the transpose; measured, the "
               "kernel is as slow as the uncoalesced naive one.",
               "Its timings include the transpose launch, which that document counts as part of the method."),
    ),
    KernelSpec(
        name="tiled_guarded",
        title="Shared-memory tiled (guarded)",
        seeds=("000", "002"),
        lesson="Each block loads a tile of A and of B per phase and reuses every element TILE times from shared memory.",
        **declared.entry_fields(declared.launch("tiled_guarded.cu")),
        shows=TILED_VIEWS | {"ladder"},   # the ladder's first rung
    ),
    KernelSpec(
        name="tiled_unguarded",
        title="Shared-memory tiled, no guards",
        seeds=("003", "004"),
        lesson="The tiled kernel as these documents write it, without boundary guards: right only when M, N and K "
               "are multiples of TILE.",
        **declared.entry_fields(declared.launch("tiled_unguarded.cu")),
        shows=TILED_VIEWS,
    ),
    KernelSpec(
        name="shared_bank_conflicts",
        title="Shared-memory tiled, threadIdx.x walks rows (bank conflicts, padding)",
        seeds=("001",),
        lesson="tile_A[threadIdx.x][p] puts a warp's lanes TILE words apart, in one bank; one word of padding spreads them.",
        **declared.entry_fields(declared.launch("shared_bank_conflicts.cu")),
        shows=TILED_VIEWS,
        rows_from_block_x=True,
    ),
    *LADDER,
    SPLIT_K,
    SPLIT_K_PADDED,
    *TENSOR_LADDER,
    KernelSpec(
        name="cublas_sgemm",
        title="cuBLAS SGEMM (FP32)",
        seeds=("002",),
        lesson="What you should actually use: NVIDIA's tuned FP32 GEMM, on the same buffers.",
        kind=Kind.CUBLAS,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="cublas_sgemm_tf32",
        title="cuBLAS SGEMM, TF32 tensor-op math",
        seeds=("002",),
        lesson="The same call with TF32 tensor cores allowed: FP32 storage, a 10-bit-mantissa multiply.",
        kind=Kind.CUBLAS,
        compute=Precision.TF32,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="cublas_gemm_fp16",
        title="cuBLAS GemmEx, FP16 inputs, FP32 accumulate",
        seeds=("002",),
        lesson="Half-precision A and B on tensor cores, summed in FP32: the cuBLAS FP16 row of the A100 table.",
        kind=Kind.CUBLAS,
        inputs=Precision.FP16,
        compute=Precision.FP16,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="cublas_gemm_bf16",
        title="cuBLAS GemmEx, BF16 inputs, FP32 accumulate",
        seeds=("002",),
        lesson="The same call on bfloat16 A and B: FP32's exponent range with 7 mantissa bits, on the same tensor cores.",
        kind=Kind.CUBLAS,
        inputs=Precision.BF16,
        compute=Precision.BF16,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="torch_mm_fp16",
        title="torch.mm, FP16",
        seeds=("002",),
        lesson="torch.mm on half tensors, which the PyTorch connection says ends in a cuBLAS GEMM: timed where the GPU "
               "machine has PyTorch.",
        kind=Kind.TORCH,
        inputs=Precision.FP16,
        compute=Precision.FP16,
        shows=frozenset({"benchmarks"}),
    ),
    KernelSpec(
        name="cpu_reference",
        title="CPU reference (numpy, float64)",
        seeds=("000", "002"),
        lesson=f"The float64 product every GPU result is checked against (relative error, as {cite('001')} "
               "reports).",
        kind=Kind.REFERENCE,
    ),
)


for _spec in CATALOG:
    check(_spec)

# What a live sweep on the Benchmarks page starts with: the story in five timings (uncoalesced,
# coalesced, tiled, and cuBLAS without and with tensor cores).
SWEEP_DEFAULT = ("naive_x_rows", "naive_x_cols", "tiled_guarded", "cublas_sgemm", "cublas_sgemm_tf32")
if not all("benchmarks" in {k.name: k for k in CATALOG}[name].shows for name in SWEEP_DEFAULT):
    raise ValueError("SWEEP_DEFAULT names a kernel the benchmarks view does not show")

# The FP32 ladder in order: the tiled kernel, then each rung of LADDER, each fixing what holds the
# one before it back (its .cu header says what). The Ladder page lists them so and diffs each rung's
# source against the one before.
LADDER_RUNGS = ("tiled_guarded", *(k.name for k in LADDER))
if [k.name for k in CATALOG if "ladder" in k.shows] != list(LADDER_RUNGS):
    raise ValueError("the kernels the ladder view shows are not LADDER_RUNGS, in that order")
