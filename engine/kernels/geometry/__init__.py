"""Launch geometry, one module per kernel family: for a problem bound to a kernel (sizes, block and
compile-time parameters), the grid and block it launches with, the most accesses one thread can
record (a trace too big is refused before it runs), and the checks its shapes and sizes must pass
(each returns why a problem breaks it, or None; engine/kernels/catalog.py names them as Rules).

It lives here, in Python, not in the .cu files: the engine must know a launch's shape before it
builds or runs anything, and the pages show it. This module holds what the families share.
"""
from __future__ import annotations

from engine.kernels.problem import Problem

SHARED_LIMIT = 48 * 1024   # static shared memory per block


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def block_tile_grid(p: Problem) -> tuple[int, int]:
    """One block per BM x BN tile of C: blockIdx.x over its columns, blockIdx.y over its rows (both
    ladders, FP32 and tensor-core)."""
    return (cdiv(p.n, p.params["BN"]), cdiv(p.m, p.params["BM"]))
