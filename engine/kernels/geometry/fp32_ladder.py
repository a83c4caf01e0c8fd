"""Launch geometry of the FP32 ladder after tiling (cuda/blocktile_1d.cu ... prefetched.cu): a block
of THREADS threads (1-D) owns a BM x BN tile of C and walks K in steps of BK; each thread owns TM
(x TN) outputs; the warp-tiled rungs (those with WM) split the block's tile into WM x WN warp tiles
of WNITER sub-tiles across. The thread count follows from the parameters, so the checks here are
the integer divisions the kernels' index arithmetic needs to be exact.
"""
from __future__ import annotations

from typing import Callable

from engine.kernels.geometry import SHARED_LIMIT, block_tile_grid, cdiv
from engine.kernels.problem import Problem

grid = block_tile_grid


def threads(p: Problem) -> int:
    q = p.params
    if "WM" in q:
        return (q["BM"] // q["WM"]) * (q["BN"] // q["WN"]) * 32
    return q["BM"] * q["BN"] // (q["TM"] * q.get("TN", 1))


def block(p: Problem) -> tuple[int, int]:
    return (threads(p), 1)


def _per_thread(p: Problem, elements: int) -> int:
    return cdiv(elements, threads(p))


def thread_outputs(p: Problem) -> tuple[int, int]:
    """A thread's outputs down (rows of C) and across (columns of C)."""
    q = p.params
    if "WM" in q:
        return (q["WM"] * q["WN"] // (32 * q["TN"] * q["WNITER"]), q["WNITER"] * q["TN"])
    return (q["TM"], q.get("TN", 1))


def records(vec: int, buffers: int) -> Callable[[Problem], int]:
    """Per thread at most: per K tile, its share of the tiles' elements, each loaded and stored once
    (at an edge a float4 is four scalar loads, each stored; a cp.async is one record of a copy and
    one of its store per 4), the shared loads of the multiply (vec elements each), then its
    outputs; a double-buffered rung loads one tile more."""
    def count(p: Problem) -> int:
        q = p.params
        down, across = thread_outputs(p)
        tiles = cdiv(p.k, q["BK"]) + buffers - 1
        loads = 2 * (_per_thread(p, q["BM"] * q["BK"]) + _per_thread(p, q["BK"] * q["BN"]))
        return tiles * (loads + q["BK"] * (down + across) // vec) + down * across
    return count


def shapes(p: Problem) -> str | None:
    """The shapes a rung's thread and warp arithmetic needs (integer divisions that must be exact)."""
    q = p.params
    n = threads(p)
    if "WM" not in q and n * q["TM"] * q.get("TN", 1) != q["BM"] * q["BN"]:
        return f"needs TM{' x TN' if 'TN' in q else ''} to divide BM x BN"
    if not 32 <= n <= 1024 or n % 32:
        return f"would run {n} threads per block (it needs a multiple of 32, up to 1024)"
    down, across = thread_outputs(p)
    if down * across > 128:
        return (f"would keep {down * across} outputs per thread in registers (a thread has at most 255; over 128 "
                "they spill to local memory)")
    if "WM" in q:
        if q["BM"] % q["WM"] or q["BN"] % q["WN"]:
            return "needs warp tiles (WM x WN) that divide the block's tile (BM x BN)"
        per_warp = 32 * q["TM"] * q["TN"] * q["WNITER"]
        if (q["WM"] * q["WN"]) % per_warp or q["WN"] % q["WNITER"]:
            return "needs a warp tile that its 32 lanes' TM x TN pieces and WNITER sub-tiles divide exactly"
        wm_iter = q["WM"] * q["WN"] // per_warp
        sub_m, sub_n = q["WM"] // wm_iter, q["WN"] // q["WNITER"]
        lanes_across = sub_n // q["TN"]
        if q["WM"] % wm_iter or sub_n % q["TN"] or not lanes_across or 32 % lanes_across or \
                32 // lanes_across * q["TM"] != sub_m:
            return "needs each warp sub-tile to be exactly its 32 lanes' TM x TN pieces"
    return None


def float4_shapes(p: Problem) -> str | None:
    q = p.params
    if q["BK"] % 4 or q["TM"] % 4 or q["TN"] % 4:
        return "needs BK, TM and TN multiples of 4 (it moves float4s)"
    return None


def fits_shared(buffers: int) -> Callable[[Problem], str | None]:
    """The check that `buffers` copies of A's and B's tiles fit 48 KB of static shared memory."""
    def check(p: Problem) -> str | None:
        q = p.params
        need = 4 * buffers * q["BK"] * (q["BM"] + q["BN"])
        return f"needs {need // 1024} KB of shared memory (48 KB is the static limit)" if need > SHARED_LIMIT else None
    return check


def even_loads(p: Problem) -> str | None:
    q = p.params
    n = threads(p)
    if (q["BM"] * q["BK"] // 4) % n or (q["BK"] * q["BN"] // 4) % n:
        return f"needs A's and B's tiles to be whole float4s for each of its {n} threads (fixed register arrays)"
    return None
