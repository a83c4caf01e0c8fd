"""The kernel catalog: the one list of kernels that the pages, benchmarks, tests and README read.

Each entry says where its source lives (cuda/), which source documents it comes from (`seeds`: ids
of engine/documents.py, whose titles are what users read), the lesson it teaches, which parameters
it takes, and its launch geometry (kept here, not in the .cu files).
Kinds: "cuda" kernels run from cuda/ sources and can be traced; "cublas" entries call cuBLAS on
the same buffers (timed, not traced); "reference" is the float64 numpy product every result is
checked against. Tensor-core kernels join with a kind of their own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .documents import cite
from .errors import EngineError, lookup
from .problem import Problem


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Launch:
    """One kernel launch: the source file (kernel name = file stem) and its geometry."""

    file: str
    grid: Callable[[Problem], tuple[int, int]]
    block: Callable[[Problem], tuple[int, int]]
    # Upper bound of accesses one thread records: used to refuse a trace before running it.
    records_per_thread: Callable[[Problem], int]
    # A preparation launch: its blocks whose output the given blocks of the main launch read, (n, 2)
    # uint32, so that tracing a few blocks runs only those. None: all of them.
    prepares: Callable[[Problem, np.ndarray], np.ndarray] | None = None

    @property
    def kernel(self) -> str:
        return self.file.removesuffix(".cu")


@dataclass(frozen=True)
class KernelSpec:
    name: str
    title: str
    seeds: tuple[str, ...]
    lesson: str
    kind: str = "cuda"
    launches: tuple[Launch, ...] = ()      # in order; the last one computes C
    tiles: tuple[int, ...] = ()            # compile-time TILE choices (tiled kernels)
    pads: tuple[int, ...] = ()             # compile-time PAD choices
    block_shapes: tuple[tuple[int, int], ...] = ()   # launch block shapes (naive kernels)
    needs_tile_multiple: bool = False      # seeds 003/004: no boundary guards
    default_block: tuple[int, int] = (16, 16)
    precision: str = "fp32"                # arithmetic: "fp32", or "tf32" for tensor-op math
    rows_from_block_x: bool = False        # blockIdx.x walks the rows of C (seeds 000 and 001's mapping)
    notes: tuple[str, ...] = field(default=())

    @property
    def source_titles(self) -> str:
        """The titles of the documents it comes from, in words: what users read instead of the ids."""
        return cite(self.seeds)

    @property
    def traceable(self) -> bool:
        return self.kind == "cuda"

    @property
    def uses_tile(self) -> bool:
        return bool(self.tiles)

    def block_of(self, problem: Problem) -> tuple[int, int]:
        return self.launches[-1].block(problem)


NAIVE_BLOCKS = ((16, 16), (32, 32), (32, 8), (8, 32), (32, 16), (16, 8), (32, 1))
TILES = (8, 16, 32)


def _naive_records(p: Problem) -> int:
    return 2 * p.k + 1


def _tiled_records(p: Problem) -> int:
    phases = _cdiv(p.k, p.tile)
    return phases * (4 + 2 * p.tile) + 1


def _transposes_read_by(p: Problem, blocks: np.ndarray) -> np.ndarray:
    """naive_transposed_b's block (x, y) reads rows x*bx .. x*bx+bx-1 of BT (its columns of C), all
    K of them; transpose_b's block (x, y), of the same block shape, writes those rows for columns
    y*by .. y*by+by-1 of BT. So: the transpose blocks of the same x, every y."""
    xs = np.unique(blocks[:, 0])
    return np.array([(x, y) for y in range(_cdiv(p.k, p.block[1])) for x in xs], dtype=np.uint32).reshape(-1, 2)


def _tile_block(p: Problem) -> tuple[int, int]:
    return (p.tile, p.tile)


CATALOG: tuple[KernelSpec, ...] = (
    KernelSpec(
        name="naive_x_rows",
        title="Naive, threadIdx.x walks rows",
        seeds=("000",),
        lesson="One thread per output, lanes on consecutive rows: every lane reads its own 32-byte sector of A.",
        launches=(Launch("naive_x_rows.cu",
                         grid=lambda p: (_cdiv(p.m, p.block[0]), _cdiv(p.n, p.block[1])),
                         block=lambda p: p.block, records_per_thread=_naive_records),),
        block_shapes=NAIVE_BLOCKS,
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
        launches=(Launch("naive_x_cols.cu",
                         grid=lambda p: (_cdiv(p.n, p.block[0]), _cdiv(p.m, p.block[1])),
                         block=lambda p: p.block, records_per_thread=_naive_records),),
        block_shapes=NAIVE_BLOCKS,
    ),
    KernelSpec(
        name="naive_transposed_b",
        title="Naive on pre-transposed B",
        seeds=("001",),
        lesson="Transposing B makes each thread walk a row, but a warp's 32 lanes still land K floats apart.",
        launches=(
            Launch("transpose_b.cu",
                   grid=lambda p: (_cdiv(p.n, p.block[0]), _cdiv(p.k, p.block[1])),
                   block=lambda p: p.block, records_per_thread=lambda p: 2, prepares=_transposes_read_by),
            Launch("naive_transposed_b.cu",
                   grid=lambda p: (_cdiv(p.n, p.block[0]), _cdiv(p.m, p.block[1])),
                   block=lambda p: p.block, records_per_thread=_naive_records),
        ),
        block_shapes=NAIVE_BLOCKS,
        default_block=(32, 32),
        notes=(f"{cite('001')} models a speed-up of about the warp size from the transpose; measured, the "
               "kernel is as slow as the uncoalesced naive one.",
               "Its timings include the transpose launch, which that document counts as part of the method."),
    ),
    KernelSpec(
        name="tiled_guarded",
        title="Shared-memory tiled (guarded)",
        seeds=("000", "002"),
        lesson="Each block loads a tile of A and of B per phase and reuses every element TILE times from shared memory.",
        launches=(Launch("tiled_guarded.cu",
                         grid=lambda p: (_cdiv(p.n, p.tile), _cdiv(p.m, p.tile)),
                         block=_tile_block, records_per_thread=_tiled_records),),
        tiles=TILES,
    ),
    KernelSpec(
        name="tiled_unguarded",
        title="Shared-memory tiled, no guards",
        seeds=("003", "004"),
        lesson="The tiled kernel as these documents write it, without boundary guards: right only when M, N and K "
               "are multiples of TILE.",
        launches=(Launch("tiled_unguarded.cu",
                         grid=lambda p: (_cdiv(p.n, p.tile), _cdiv(p.m, p.tile)),
                         block=_tile_block, records_per_thread=_tiled_records),),
        tiles=TILES,
        needs_tile_multiple=True,
    ),
    KernelSpec(
        name="shared_bank_conflicts",
        title="Shared-memory tiled, threadIdx.x walks rows (bank conflicts, padding)",
        seeds=("001",),
        lesson="tile_A[threadIdx.x][p] puts a warp's lanes TILE words apart, in one bank; one word of padding spreads them.",
        launches=(Launch("shared_bank_conflicts.cu",
                         grid=lambda p: (_cdiv(p.m, p.tile), _cdiv(p.n, p.tile)),
                         block=_tile_block, records_per_thread=_tiled_records),),
        tiles=TILES,
        pads=(0, 1),
        rows_from_block_x=True,
    ),
    KernelSpec(
        name="cublas_sgemm",
        title="cuBLAS SGEMM (FP32)",
        seeds=("002",),
        lesson="What you should actually use: NVIDIA's tuned FP32 GEMM, on the same buffers.",
        kind="cublas",
    ),
    KernelSpec(
        name="cublas_sgemm_tf32",
        title="cuBLAS SGEMM, TF32 tensor-op math",
        seeds=("002",),
        lesson="The same call with TF32 tensor cores allowed: FP32 storage, a 10-bit-mantissa multiply.",
        kind="cublas",
        precision="tf32",
    ),
    KernelSpec(
        name="cpu_reference",
        title="CPU reference (numpy, float64)",
        seeds=("000", "002"),
        lesson=f"The float64 product every GPU result is checked against (relative error, as {cite('001')} "
               "reports).",
        kind="reference",
    ),
)

_BY_NAME = {k.name: k for k in CATALOG}


def get(name: str) -> KernelSpec:
    return lookup(_BY_NAME, name, "kernel")


def traceable() -> list[KernelSpec]:
    return [k for k in CATALOG if k.traceable]


def check_problem(spec: KernelSpec, problem: Problem) -> None:
    """Parameters the kernel cannot take get a one-line reason."""
    if spec.tiles and problem.tile not in spec.tiles:
        raise EngineError(f"{spec.name} takes TILE {', '.join(map(str, spec.tiles))}, not {problem.tile}")
    if problem.pad not in (spec.pads or (0,)):
        raise EngineError(f"{spec.name} takes padding {', '.join(map(str, spec.pads or (0,)))}, not {problem.pad}")
    if spec.needs_tile_multiple:
        bad = [f"{n}={v}" for n, v in (("M", problem.m), ("N", problem.n), ("K", problem.k)) if v % problem.tile]
        if bad:
            raise EngineError(
                f"{spec.name} needs M, N and K to be multiples of TILE={problem.tile} ({', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not): "
                "it has no boundary guards, so edge threads would read and write outside A, B and C, and its "
                "K / TILE phase loop would drop the last partial tile. Use tiled_guarded for these sizes.")
