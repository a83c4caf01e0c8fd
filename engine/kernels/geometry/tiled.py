"""Launch geometry of the shared-memory tiled kernels (cuda/tiled_*.cu, shared_bank_conflicts.cu):
TILE x TILE blocks, one thread per output of C, walking K one TILE-wide phase at a time.
"""
from __future__ import annotations

from typing import Callable

from engine.kernels.geometry import cdiv
from engine.kernels.problem import Problem


def block(p: Problem) -> tuple[int, int]:
    return (p.params["TILE"], p.params["TILE"])


def grid(x: str, y: str) -> Callable[[Problem], tuple[int, int]]:
    """TILE x TILE blocks over C: blockIdx.x over size x ("m" or "n"), blockIdx.y over size y."""
    return lambda p: (cdiv(getattr(p, x), p.params["TILE"]), cdiv(getattr(p, y), p.params["TILE"]))


def records(p: Problem) -> int:
    tile = p.params["TILE"]
    return cdiv(p.k, tile) * (4 + 2 * tile) + 1


def multiples_of_tile(p: Problem) -> str | None:
    tile = p.params["TILE"]
    bad = [f"{n}={v}" for n, v in (("M", p.m), ("N", p.n), ("K", p.k)) if v % tile]
    if not bad:
        return None
    return (f"needs M, N and K to be multiples of TILE={tile} ({', '.join(bad)} {'is' if len(bad) == 1 else 'are'} "
            "not): it has no boundary guards, so edge threads would read and write outside A, B and C, and its "
            "K / TILE phase loop would drop the last partial tile. Use tiled_guarded for these sizes.")
