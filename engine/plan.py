"""Turns a request (kernel, problem, which blocks) into launches: geometry, buffers, record budget."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from . import registry, sources
from .errors import EngineError
from .problem import Problem

DEFAULT_RECORD_CAP = int(os.environ.get("MATMUL_EXPLORER_RECORD_CAP", 10_000_000))


@dataclass
class LaunchPlan:
    file: str
    kernel: str
    params: tuple[tuple[str, str], ...]
    grid: tuple[int, int]
    block: tuple[int, int]
    blocks: np.ndarray      # (n, 2) uint32: the blocks to run, in trace order
    traced: bool            # False: run for its result only (a preparation step outside the selection)
    tile: int
    pad: int

    @property
    def threads(self) -> int:
        return len(self.blocks) * self.block[0] * self.block[1]


@dataclass
class TracePlan:
    kernel: str
    problem: Problem
    launches: list[LaunchPlan]
    shapes: dict[str, tuple[int, int]]
    cap: int
    estimate: int           # upper bound of the records, from the registry's per-thread bounds


def global_shapes(p: Problem) -> dict[str, tuple[int, int]]:
    return {"A": (p.m, p.k), "B": (p.k, p.n), "C": (p.m, p.n), "BT": (p.n, p.k)}


def all_blocks(grid: tuple[int, int]) -> np.ndarray:
    gx, gy = grid
    ys, xs = np.divmod(np.arange(gx * gy, dtype=np.uint32), gx)
    return np.stack([xs, ys], axis=1)


def parse_blocks(text: str | None) -> list[tuple[int, int]] | None:
    """'0,0 3,1' -> [(0, 0), (3, 1)]; None or 'all' -> None (every block)."""
    if text is None or text.strip().lower() in ("", "all"):
        return None
    out = []
    for item in text.replace(";", " ").split():
        try:
            x, y = item.split(",")
            out.append((int(x), int(y)))
        except ValueError:
            raise EngineError(f"blocks are given as x,y pairs like '0,0 3,1', got {item!r}") from None
    return out


def make_plan(kernel: str, problem: Problem, blocks: list[tuple[int, int]] | None = None,
              cap: int = DEFAULT_RECORD_CAP) -> TracePlan:
    spec = registry.get(kernel)
    if not spec.traceable:
        raise EngineError(f"{kernel} is not one of the explorer's CUDA sources ({spec.kind}): it has no trace")
    registry.check_problem(spec, problem)
    launches = []
    for i, launch in enumerate(spec.launches):
        grid, block = launch.grid(problem), launch.block(problem)
        main = i == len(spec.launches) - 1
        if main and blocks is not None:
            chosen = np.array(blocks, dtype=np.int64).reshape(-1, 2)
            bad = [f"{x},{y}" for x, y in chosen if not (0 <= x < grid[0] and 0 <= y < grid[1])]
            if bad or not len(chosen):
                raise EngineError(f"block {bad[0] if bad else '(none)'} is outside the grid of "
                                  f"{grid[0]}x{grid[1]} blocks for {problem.describe()}")
            chosen = chosen.astype(np.uint32)
        else:
            chosen = all_blocks(grid)
        src = sources.load(launch.file)
        launches.append(LaunchPlan(launch.file, src.name, src.params, grid, block, chosen,
                                   traced=main or blocks is None, tile=problem.tile, pad=problem.pad))
    shapes = global_shapes(problem)
    for lp in launches:
        src = sources.load(lp.file)
        for name in src.shared:
            shapes[name] = src.shared_shape(name, problem.tile, problem.pad)
    estimate = sum(lp.threads * launch.records_per_thread(problem)
                   for lp, launch in zip(launches, spec.launches) if lp.traced)
    if estimate > cap:
        raise EngineError(
            f"this trace would hold up to {estimate:,} records, over the cap of {cap:,}: "
            "trace fewer blocks or a smaller size")
    return TracePlan(kernel, problem, launches, shapes, cap, estimate)


def buffer_bytes(problem: Problem, kernel: str) -> int:
    """Device memory a run needs: A, B, C, and BT for the transposing pipeline."""
    spec = registry.get(kernel)
    names = {name for launch in spec.launches for _, name in sources.load(launch.file).params
             if name in ("A", "B", "C", "BT")} or {"A", "B", "C"}   # library kernels: A, B and C
    shapes = global_shapes(problem)
    return sum(4 * shapes[n][0] * shapes[n][1] for n in names)


def single_launch_plan(file: str, problem: Problem, grid: tuple[int, int], block: tuple[int, int],
                       cap: int = DEFAULT_RECORD_CAP) -> TracePlan:
    """A plan for one source outside the catalog (the tests' deliberately broken kernels)."""
    src = sources.load(file)
    lp = LaunchPlan(file, src.name, src.params, grid, block, all_blocks(grid), True, problem.tile, problem.pad)
    return TracePlan(src.name, problem, [lp], global_shapes(problem), cap, 0)


def format_bytes(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def check_fits_gpu(problem: Problem, kernel: str, status) -> None:
    """Refuses, with a one-line reason, a run whose matrices do not fit the GPU's free memory."""
    need = buffer_bytes(problem, kernel)
    if need > status.free_bytes:
        raise EngineError(f"{problem.describe()} needs {format_bytes(need)} of GPU memory for its matrices; "
                          f"{format_bytes(status.free_bytes)} is free on the {status.name}")
