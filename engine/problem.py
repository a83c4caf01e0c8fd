"""What a request asks for: sizes and compile-time/launch parameters, validated once, here."""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from .errors import EngineError

# Largest side a request may name. Traces store rows and columns as 16-bit numbers (engine/trace.py).
MAX_DIM = 65535


@dataclass(frozen=True)
class Problem:
    """C (m x n) = A (m x k) . B (k x n), float32, row-major."""

    m: int
    n: int
    k: int
    tile: int = 16
    pad: int = 0
    block: tuple[int, int] = (16, 16)
    seed: int = field(default=0, compare=True)

    def describe(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


def check_size(name: str, value) -> int:
    """Sizes are whole numbers from 1 to MAX_DIM; anything else gets a one-line reason."""
    if isinstance(value, bool):
        raise EngineError(f"{name} must be a whole number, got {value!r}")
    if not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer():
            value = int(value)
        else:
            raise EngineError(f"{name} must be a whole number, got {value!r}")
    value = int(value)
    if value <= 0:
        raise EngineError(f"{name} must be at least 1, got {value}")
    if value > MAX_DIM:
        raise EngineError(f"{name} = {value} is larger than the engine's limit of {MAX_DIM}")
    return value


def make_problem(m, n, k, tile=16, pad=0, block=(16, 16), seed=0) -> Problem:
    m, n, k = check_size("M", m), check_size("N", n), check_size("K", k)
    bx, by = (check_size("block x", block[0]), check_size("block y", block[1]))
    if bx * by > 1024:
        raise EngineError(f"a block of {bx}x{by} = {bx * by} threads is over CUDA's limit of 1024")
    return Problem(m, n, k, check_size("TILE", tile), int(pad), (bx, by), int(seed))


def parse_block(text: str) -> tuple[int, int]:
    """'32x8' -> (32, 8)."""
    try:
        bx, by = text.lower().split("x")
        return int(bx), int(by)
    except ValueError:
        raise EngineError(f"block shape must look like 32x8, got {text!r}") from None


def make_inputs(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Random A and B in [0, 1) (never zeros: zeros hide unwritten outputs), the same on every backend."""
    rng = np.random.default_rng(problem.seed)
    a = rng.random((problem.m, problem.k), dtype=np.float32)
    b = rng.random((problem.k, problem.n), dtype=np.float32)
    return a, b
