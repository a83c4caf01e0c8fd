"""How each tensor rung splits the work, from its registry defaults: the block's tile of C, one
warp's (or warpgroup's) tile, one instruction's M x N x K. Plain data for the Tensor cores page's
hierarchy figure (engine/plots/tensor_figures.py); no Streamlit here.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from engine.bench import benchmark
from engine.kernels import registry
from engine.kernels.problem import make_problem
from engine.metrics import tensor_evidence


@dataclass(frozen=True)
class Hierarchy:
    rung: str
    block: tuple[int, int]          # BM x BN of C one block computes
    warp: tuple[int, int]           # WM x WN one warp (or warpgroup) computes
    mma: tuple[int, int, int]       # M x N x K of one instruction
    unit: str                       # "warp" or "warpgroup"
    instruction: str
    threads: int
    # How many warps of the block compute each warp tile: 1 where the warps split the block's tile;
    # the document's kernel (wmma_as_written) puts all its warps on one tile (its warp index, worked out
    # from its source by tensor_evidence.seed_warp_tiles).
    warps_per_tile: int = 1


@functools.cache   # the shipped sweeps do not change while the server runs; read them once, not per rerun
def swept(rung: str) -> bool:
    """Whether a recorded autotuning sweep (engine/bench/recorded/tuning/) timed this rung's configurations."""
    return bool(benchmark.tuning_runs(holding=[rung]))


# The rungs whose consumer warpgroups each multiply 64 x BN of a 128 x BN tile with wgmma: one
# product (cuda/wgmma.cuh), on padded copies or not, and the persistent ones (wgmma_persistent.cuh).
WGMMA_RUNGS = ("wgmma_tma", "wgmma_padded", "wgmma_persistent", "wgmma_cluster", "wgmma_epilogue", "wgmma_stream_k")


def hierarchy(rung: str, params: dict[str, int] | None = None) -> Hierarchy:
    """The tiles of the rung with these parameters (those not named: its registry defaults), from the
    block down to one instruction."""
    spec = registry.get(rung)
    q = {**spec.default_params(), **(params or {})}
    p = registry.bind(spec, make_problem(1024, 1024, 1024, block=spec.default_block, params=dict(q)))
    bx, by = spec.launches[-1].block(p)
    if rung in WGMMA_RUNGS:
        return Hierarchy(rung, (q["BM"], q["BN"]), (64, q["BN"]), (64, q["BN"], 16), "consumer warpgroup",
                         f"wgmma.m64n{q['BN']}k16", bx * by)
    if rung == "mma_tma":   # 8 consumer warps, each 64 x 64 (one of B's 64-wide boxes) of its warpgroup's 64 rows
        return Hierarchy(rung, (q["BM"], q["BN"]), (64, 64), (16, 8, 16), "warp", "mma.sync.m16n8k16", bx * by)
    if rung == "wmma_as_written":
        tiles = tensor_evidence.seed_warp_tiles(p)
        first = tiles[tiles[:, 0] == 0][:, 1:]          # the first block's warps, each with its tile
        shared = len(first) // len(np.unique(first, axis=0))
        return Hierarchy(rung, (16, 16), (16, 16), (16, 16, 16), "warp", "wmma m16n16k16 (2 × HMMA.16816)", bx * by,
                         shared)
    if rung == "wmma_warp":
        return Hierarchy(rung, (16, 64), (16, 16), (16, 16, 16), "warp", "wmma m16n16k16 (2 × HMMA.16816)", bx * by)
    wmma = rung == "wmma_block"
    return Hierarchy(rung, (q["BM"], q["BN"]), (q["WM"], q["WN"]), (16, 16, 16) if wmma else (16, 8, 16), "warp",
                     "wmma m16n16k16 (2 × HMMA.16816)" if wmma else "mma.sync.m16n8k16", bx * by)
