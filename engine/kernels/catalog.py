"""The kernel catalog: the one list of kernels that the pages, benchmarks, tests and README read
(through engine/kernels/registry.py, which answers questions about it).

Each entry is a KernelSpec (engine/kernels/contract.py says what its fields mean); its launch
geometry and shape checks are functions of engine/kernels/geometry/, one module per kernel family.
Every entry is checked against the contract when this module is imported, so a broken one stops
the engine at start-up. Adding a kernel is a .cu file and an entry here.
"""
from __future__ import annotations

from engine.kernels.contract import KernelSpec, Kind, Launch, Precision, Rule, check
from engine.kernels.documents import cite
from engine.kernels.geometry import fp32_ladder, naive, tensor_ladder, tiled

# The FP32 ladder after tiling (cuda/blocktile_1d.cu ... prefetched.cu; geometry/fp32_ladder.py).
# The defaults are the winners of the autotuning sweep (tests/benchmarks/tune_ladder.py) at 4096^3
# on the H200, recorded in engine/bench/recorded/tuning/ (the Benchmarks page shows it).
LADDER_VIEWS = frozenset({"ladder", "coalescing", "benchmarks"})
# The rungs whose shared loads the Bank conflicts page also shows, at their own shapes:
# blocktile_2d's scalar loads of As and Bs (lanes a row or TN words apart: in conflict as written;
# nvcc merges them into LDS.128, conflict-free as compiled), and the 128-bit loads of vectorized and
# warptile, served 8 lanes at a time (16 where lanes read in pairs).
BANK_RUNGS = ("blocktile_2d", "vectorized", "warptile")


def _ladder_rung(name: str, title: str, lesson: str, params: dict, defaults: dict, vec: int = 1,
                 buffers: int = 1) -> KernelSpec:
    rules = [Rule("thread and warp shapes", fp32_ladder.shapes),
             Rule("fits 48 KB of static shared memory", fp32_ladder.fits_shared(buffers))]
    if vec == 4:
        rules.append(Rule("float4 shapes", fp32_ladder.float4_shapes))
    if buffers == 2:
        rules.append(Rule("whole float4s per thread", fp32_ladder.even_loads))
    return KernelSpec(
        name=name, title=title, seeds=("002",), lesson=lesson,
        launches=(Launch(f"{name}.cu", grid=fp32_ladder.grid, block=fp32_ladder.block,
                         records_per_thread=fp32_ladder.records(vec, buffers)),),
        params=params, defaults=defaults, rules=tuple(rules),
        shows=LADDER_VIEWS | ({"bank_conflicts"} if name in BANK_RUNGS else set()))


_BLOCK_SIDES = (32, 64, 128, 256)
_WARP_PARAMS = {"BM": _BLOCK_SIDES, "BN": _BLOCK_SIDES, "BK": (8, 16, 32), "WM": (32, 64, 128),
                "WN": (32, 64, 128), "WNITER": (1, 2, 4), "TM": (4, 8), "TN": (4, 8)}
LADDER = (
    _ladder_rung("blocktile_1d", "1-D register tiling (TM outputs per thread)",
                 "Each thread computes TM outputs of one column: one b from shared memory serves TM FMAs.",
                 {"BM": _BLOCK_SIDES, "BN": _BLOCK_SIDES, "BK": (4, 8, 16, 32), "TM": (4, 8, 16, 32)},
                 {"BM": 64, "BN": 64, "BK": 32, "TM": 16}),
    _ladder_rung("blocktile_2d", "2-D register tiling (TM x TN outputs per thread)",
                 "Each thread computes a TM x TN tile as outer products of registers: TM + TN loads per TM x TN FMAs.",
                 {"BM": _BLOCK_SIDES, "BN": _BLOCK_SIDES, "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
                 {"BM": 64, "BN": 64, "BK": 32, "TM": 8, "TN": 4}),
    _ladder_rung("vectorized", "float4 loads, A transposed in shared memory",
                 "128-bit global and shared loads: a quarter of the load instructions, A's column as consecutive words.",
                 {"BM": _BLOCK_SIDES, "BN": _BLOCK_SIDES, "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8)},
                 {"BM": 64, "BN": 256, "BK": 32, "TM": 8, "TN": 4}, vec=4),
    _ladder_rung("warptile", "Warp tiling",
                 "Each warp owns a sub-tile: its lanes read consecutive 16-byte pieces of shared memory, without bank conflicts.",
                 _WARP_PARAMS, {"BM": 128, "BN": 128, "BK": 32, "WM": 32, "WN": 64, "WNITER": 2, "TM": 4, "TN": 4},
                 vec=4),
    _ladder_rung("double_buffered", "Double-buffered, cp.async",
                 "Two shared buffers: tile t + 1 is copied (cp.async) while tile t is multiplied; one barrier per tile.",
                 _WARP_PARAMS, {"BM": 128, "BN": 128, "BK": 16, "WM": 128, "WN": 32, "WNITER": 4, "TM": 4, "TN": 4},
                 vec=4, buffers=2),
    _ladder_rung("prefetched", "Prefetched fragments (register double buffering)",
                 "Step k + 1's shared loads are issued before step k's FMAs: the multiply no longer waits on shared memory.",
                 _WARP_PARAMS, {"BM": 128, "BN": 256, "BK": 16, "WM": 32, "WN": 128, "WNITER": 2, "TM": 8, "TN": 4},
                 vec=4, buffers=2),
)

# The tensor-core ladder (cuda/wmma_seed.cu ... wgmma_tma.cu; geometry/tensor_ladder.py): FP16
# inputs, FP32 accumulate. Defaults: the winners of the sweep at 4096^3 on the H200
# (engine/bench/recorded/tuning/h200-tensor-*).
TENSOR_VIEWS = frozenset({"tensor_cores", "benchmarks"})
_MULTIPLES_OF_16 = Rule("sizes multiple of 16", tensor_ladder.multiples_of_16, sizes=True)
_MMA_PARAMS = {"BM": (64, 128, 256), "BN": (64, 128, 256), "WM": (32, 64), "WN": (32, 64)}


def _mma_rung(name: str, title: str, lesson: str, defaults: dict, ring: dict | None = None) -> KernelSpec:
    """An mma.sync rung; ring: the parameters of a cp.async ring in dynamic shared memory (STAGES, BK)."""
    fits = (Rule("fits a block's shared memory", tensor_ladder.ring_fits),
            Rule("copies in whole passes", tensor_ladder.copy_passes)) if ring \
        else (Rule("fits 48 KB of static shared memory", tensor_ladder.mma_shared),)
    return KernelSpec(
        name=name, title=title, seeds=("002",), lesson=lesson,
        launches=(Launch(f"{name}.cu", grid=tensor_ladder.grid, block=tensor_ladder.block,
                         records_per_thread=tensor_ladder.mma_records,
                         shared_bytes=tensor_ladder.ring_bytes if ring else (lambda p: 0)),),
        params={**_MMA_PARAMS, **(ring or {})}, defaults=defaults,
        rules=(Rule("warp shapes", tensor_ladder.warp_shapes), *fits),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS)


TENSOR_LADDER = (
    KernelSpec(
        name="wmma_seed", title="WMMA as the document writes it",
        seeds=("002",),
        lesson="The document's kernel, as written: its warps compute every tile 32 times, and it reads B's 16 x 16 "
               "blocks transposed.",
        kind=Kind.OPAQUE,
        launches=(Launch("wmma_seed.cu", grid=tensor_ladder.seed_grid, block=tensor_ladder.seed_block,
                         records_per_thread=lambda p: 0),),
        rules=(_MULTIPLES_OF_16,
               Rule(f"M and N at most {tensor_ladder.SEED_WMMA_MAX}", tensor_ladder.seed_sizes, sizes=True)),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS,
        notes=("Launched with blocks of 32 x 4 threads and 8 x M / 16 blocks in y, so that warpM reaches every row "
               "tile: 32 warps then share each tile.",)),
    KernelSpec(
        name="wmma_warp", title="WMMA, one warp per 16 x 16 tile",
        seeds=("002",),
        lesson="The same instructions, indexed right: each warp owns one 16 x 16 tile of C and walks K.",
        kind=Kind.OPAQUE,
        launches=(Launch("wmma_warp.cu", grid=tensor_ladder.warp_grid, block=tensor_ladder.warp_block,
                         records_per_thread=lambda p: 0),),
        rules=(_MULTIPLES_OF_16,),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS),
    KernelSpec(
        name="wmma_block", title="WMMA from shared-memory tiles",
        seeds=("002",),
        lesson="A block's warps share A's and B's tiles through shared memory; each warp reuses its fragments "
               "across a WM x WN piece.",
        kind=Kind.OPAQUE,
        launches=(Launch("wmma_block.cu", grid=tensor_ladder.grid, block=tensor_ladder.block,
                         records_per_thread=lambda p: 0),),
        params=_MMA_PARAMS, defaults={"BM": 64, "BN": 64, "WM": 32, "WN": 64},
        rules=(Rule("warp shapes", tensor_ladder.warp_shapes),),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS),
    _mma_rung("mma_ldmatrix", "mma.sync m16n8k16 with ldmatrix",
              "The instruction under WMMA, written out: ldmatrix hands each lane its fragment, mma.sync multiplies "
              "16 x 8 x 16.", {"BM": 128, "BN": 128, "WM": 64, "WN": 64}),
    _mma_rung("mma_swizzled", "mma.sync on swizzled shared tiles",
              "An XOR of each 16-byte chunk with its row puts ldmatrix's 8 rows in 8 different bank groups: one "
              "wavefront per matrix.", {"BM": 128, "BN": 128, "WM": 64, "WN": 64}),
    _mma_rung("mma_pipelined", "mma.sync with a cp.async pipeline",
              "STAGES tiles in flight: the copies of the next tiles overlap the multiply of this one, one barrier "
              "per tile; blocks run in groups of 8 block rows, sharing B's tiles in L2.",
              {"BM": 128, "BN": 128, "WM": 64, "WN": 64, "STAGES": 3, "BK": 64},
              ring={"STAGES": (2, 3, 4, 5), "BK": (32, 64)}),
    KernelSpec(
        name="wgmma_tma", title="wgmma with TMA and warp specialisation",
        seeds=("002",),
        lesson="Hopper's path: TMA copies whole tiles, wgmma multiplies 64 x BN x 16 from shared memory, a producer "
               "warpgroup feeds consumer warpgroups.",
        kind=Kind.OPAQUE,
        launches=(Launch("wgmma_tma.cu", grid=tensor_ladder.grid, block=tensor_ladder.wgmma_block,
                         records_per_thread=lambda p: 0, shared_bytes=tensor_ladder.wgmma_shared, arch="sm_90a",
                         tensor_maps=tensor_ladder.wgmma_boxes),),
        params={"BM": (128,), "BN": (128, 256), "STAGES": (3, 4, 5, 6)}, defaults={"BN": 256, "STAGES": 3},
        rules=(Rule("fits a block's shared memory", tensor_ladder.wgmma_fits),
               Rule("K and N multiples of 8", tensor_ladder.tma_strides, sizes=True)),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS),
    KernelSpec(
        name="wgmma_padded", title="wgmma on rows padded to 16 bytes (any size)",
        seeds=("002",),
        lesson="wgmma_tma at any M, N and K: a first pass copies A and B into rows padded to 128-byte multiples, "
               "as TMA needs them; cuBLAS FP16 falls off a cliff at the sizes that need it.",
        kind=Kind.OPAQUE,
        launches=(Launch("pad_ab.cu", grid=tensor_ladder.pad_grid, block=tensor_ladder.pad_block,
                         records_per_thread=lambda p: 0),
                  Launch("wgmma_padded.cu", grid=tensor_ladder.grid, block=tensor_ladder.wgmma_block,
                         records_per_thread=lambda p: 0, shared_bytes=tensor_ladder.wgmma_shared, arch="sm_90a",
                         tensor_maps=tensor_ladder.padded_boxes)),
        params={"BM": (128,), "BN": (128, 256), "STAGES": (3, 4, 5, 6)}, defaults={"BN": 256, "STAGES": 3},
        rules=(Rule("fits a block's shared memory", tensor_ladder.wgmma_fits),),
        inputs=Precision.FP16, compute=Precision.FP16, shows=TENSOR_VIEWS,
        notes=("Its timings include the padding launch (pad_ab.cu): one pass over A and B.",)),
)
TENSOR_RUNGS = tuple(k.name for k in TENSOR_LADDER)


# The naive kernels' block shapes to choose from, and the tiled kernels' tile sides.
NAIVE_BLOCKS = ((16, 16), (32, 32), (32, 8), (8, 32), (32, 16), (16, 8), (32, 1))
TILES = (8, 16, 32)
NAIVE_VIEWS = frozenset({"coalescing", "benchmarks"})
TILED_VIEWS = frozenset({"coalescing", "tile_phases", "bank_conflicts", "benchmarks"})


CATALOG: tuple[KernelSpec, ...] = (
    KernelSpec(
        name="naive_x_rows",
        title="Naive, threadIdx.x walks rows",
        seeds=("000",),
        lesson="One thread per output, lanes on consecutive rows: every lane reads its own 32-byte sector of A.",
        launches=(Launch("naive_x_rows.cu", grid=naive.rows_grid, block=naive.block, records_per_thread=naive.records),),
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
        launches=(Launch("naive_x_cols.cu", grid=naive.cols_grid, block=naive.block, records_per_thread=naive.records),),
        block_shapes=NAIVE_BLOCKS,
        shows=NAIVE_VIEWS,
    ),
    KernelSpec(
        name="naive_transposed_b",
        title="Naive on pre-transposed B",
        seeds=("001",),
        lesson="Transposing B makes each thread walk a row, but a warp's 32 lanes still land K floats apart.",
        launches=(
            Launch("transpose_b.cu", grid=naive.transpose_grid, block=naive.block,
                   records_per_thread=naive.transpose_records, prepares=naive.transposes_read_by),
            Launch("naive_transposed_b.cu", grid=naive.cols_grid, block=naive.block, records_per_thread=naive.records),
        ),
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
        launches=(Launch("tiled_guarded.cu", grid=tiled.grid("n", "m"), block=tiled.block,
                         records_per_thread=tiled.records),),
        params={"TILE": TILES},
        defaults={"TILE": 16},
        shows=TILED_VIEWS | {"ladder"},   # the ladder's first rung
    ),
    KernelSpec(
        name="tiled_unguarded",
        title="Shared-memory tiled, no guards",
        seeds=("003", "004"),
        lesson="The tiled kernel as these documents write it, without boundary guards: right only when M, N and K "
               "are multiples of TILE.",
        launches=(Launch("tiled_unguarded.cu", grid=tiled.grid("n", "m"), block=tiled.block,
                         records_per_thread=tiled.records),),
        params={"TILE": TILES},
        defaults={"TILE": 16},
        rules=(Rule("sizes multiple of TILE", tiled.multiples_of_tile, sizes=True),),
        shows=TILED_VIEWS,
    ),
    KernelSpec(
        name="shared_bank_conflicts",
        title="Shared-memory tiled, threadIdx.x walks rows (bank conflicts, padding)",
        seeds=("001",),
        lesson="tile_A[threadIdx.x][p] puts a warp's lanes TILE words apart, in one bank; one word of padding spreads them.",
        launches=(Launch("shared_bank_conflicts.cu", grid=tiled.grid("m", "n"), block=tiled.block,
                         records_per_thread=tiled.records),),
        params={"TILE": TILES, "PAD": (0, 1)},
        defaults={"TILE": 16},
        shows=TILED_VIEWS,
        rows_from_block_x=True,
    ),
    *LADDER,
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
