"""One block of a ladder rung at a long K, counted from two short traces.

A rung's block walks K one tile at a time (BK elements, TILE on the tiled kernel), and every tile
does the same work at the same shared addresses; only its global addresses move on, by BK elements
of A's row and BK rows of B. So the block's counts grow by the same amount for every `period`
elements of K, where `period` (k_period) is a whole number of
- tiles of both shared buffers (double_buffered and prefetched alternate two), and
- 8 elements (32 bytes, a sector), so that A's and B's tiles keep their place within the sectors.
Two short traces, at K0 < K1, both equal to K modulo the period (so both keep K's alignment, which
decides the rungs' vector and scalar paths, and the same last partial tile), give the counts of one
period, their difference over (K1 - K0) / period; the counts at K are those of K0 plus (K - K0) / period
times them. K0 is as short as MIN_TILES tiles. The first barrier intervals, which the Ladder's timeline
draws, are K1's trace's: the same as the long one's when that trace runs on past them (_tiles_needed).
And the block is traced on canonical()'s smaller product, M and N cut around it.

This is exact, not an estimate: tests/test_long_k.py checks it against the whole trace for every
rung, at sizes with partial tiles and K not a multiple of the period. At 4096³ it is a fifth to a
twentieth of the tracing (bench: tests/benchmarks/bench_as_compiled.py).
"""
from __future__ import annotations

import dataclasses
import math
import threading
from collections import OrderedDict

from engine.kernels import registry, sources
from engine.kernels.problem import Problem
from engine.metrics import analysis, rung_counts
from engine.metrics.rung_counts import RungCounts
from engine.tracing import plan, tracer

# The timeline's first TIMELINE_INTERVALS barrier intervals are the short trace's when its loop runs
# on past them for a tile more (the last tile skips the prefetch: the loop's tail). How many tiles
# that takes depends on the barriers per tile (one or two on the ladder), learned from the rung's
# traces (a whole one at a short K, or the two); until then, two are assumed, and a guess that came
# out short is traced again.
_EPOCHS_PER_TILE: dict[tuple, float] = {}


def k_period(params: dict[str, int]) -> int:
    """K elements after which one block's work repeats, its global addresses one sector further on."""
    return math.lcm(2 * rung_counts.k_step(params), 8)


def _tiles_needed(epochs_per_tile: float) -> int:
    return math.ceil(rung_counts.TIMELINE_INTERVALS / epochs_per_tile) + 1


# The shorter trace's least number of tiles: the loop's first tile (the prologue before it) and its
# last (which skips the prefetch) apart, every period added after them is a middle one.
MIN_TILES = 2


def short_ks(problem: Problem, tiles: int | None = None) -> tuple[int, int] | None:
    """The two short K to trace instead of K, both equal to K modulo the period: the longer has at least
    `tiles` tiles (the timeline's), the shorter as few as MIN_TILES; or None where K is too short for
    that to save work."""
    period, step = k_period(problem.params), rung_counts.k_step(problem.params)
    floor = (tiles or _tiles_needed(1)) * step
    k1 = problem.k - period * max(0, (problem.k - floor) // period)   # the least K >= floor with K1 = K (mod period)
    if k1 < floor:
        k1 += period
    k0 = k1 - period * max(0, (k1 - MIN_TILES * step) // period)
    if k0 == k1:
        k1 += period
    if k0 + k1 > problem.k:   # the two short traces would cost as much as the long one
        return None
    return k0, k1


def _at_k(problem: Problem, k: int) -> Problem:
    return dataclasses.replace(problem, k=k)


def _counted(kernel: str, problem: Problem, block: tuple[int, int], source: str, listing) -> RungCounts:
    trace = tracer.trace(kernel, problem, [block], source, check=False)   # counted only: rel_error unused
    return rung_counts.rung_counts(trace, analysis.warp_instructions(trace), block,
                                   listing(trace.launches[-1].file, trace.problem.params))


# The short traces' counts, most recent last. K0 and K1 depend on K only modulo the period, so a size change
# that keeps M and N (512 -> 4096 in K, or typing M, N, then K) counts again from the two short traces
# it already has. A few kilobytes each; SHORT_KEPT of them.
SHORT_KEPT = 256
_SHORT: OrderedDict[tuple, RungCounts] = OrderedDict()
_SHORT_LOCK = threading.Lock()


def _short_counted(kernel: str, problem: Problem, block: tuple[int, int], source: str, listing) -> RungCounts:
    key = (kernel, problem, tuple(block), source, listing)
    with _SHORT_LOCK:
        if key in _SHORT:
            _SHORT.move_to_end(key)
            return _SHORT[key]
    counts = _counted(kernel, problem, block, source, listing)
    with _SHORT_LOCK:
        _SHORT[key] = counts
        while len(_SHORT) > SHORT_KEPT:
            _SHORT.popitem(last=False)
    return counts


# M and N are cut in steps of ALIGN elements (128 bytes of floats): every row of A, B and C then starts
# at the same place within its sectors and 128-byte lines, and M, N keep the residues that pick a rung's
# vector or scalar paths. KEEP elements are kept on each side of the block where there were as many:
# with that gap, two rows of B or C that one warp instruction touches never share a 128-byte line, as
# they did not in the larger product (cut to the block alone, a partial block's short rows would).
ALIGN = 32
KEEP = 2 * ALIGN


def _tile(grid, problem: Problem, dim: str) -> tuple[int, int] | None:
    """(grid axis, elements of `dim` a block covers) when the launch's grid is ceil(dim / tile) along
    one axis and does not depend on `dim` along the other; else None."""
    def axes(size):
        return grid(dataclasses.replace(problem, **{dim: size}))
    big = 1 << 15   # (the largest power of two a Problem may name: MAX_DIM is 65,535)
    for axis in (0, 1):
        count = axes(big)[axis]
        tile = big // count if count else 0
        if tile and axes(big)[1 - axis] == axes(1)[1 - axis] and axes(tile)[axis] == 1 and axes(tile + 1)[axis] == 2 \
                and axes(big + 1)[axis] == count + 1 - (big % tile != 0):
            return axis, tile
    return None


def _moved(size: int, start: int, tile: int) -> tuple[int, int]:
    """(new size, new start) of one dimension: what lies before the block cut by whole steps of
    lcm(tile, ALIGN) and what lies past its tile by whole ALIGN steps, keeping KEEP of each (or all)."""
    step = math.lcm(tile, ALIGN)
    before = start - step * max(0, (start - KEEP) // step)
    after = size - start - tile
    if after <= 0:                 # a partial block: it ends where the product does
        return before + size - start, before
    return before + tile + after - ALIGN * max(0, (after - KEEP) // ALIGN), before


def canonical(kernel: str, problem: Problem, block: tuple[int, int]) -> tuple[Problem, tuple[int, int]]:
    """A small problem and block whose one-block trace is the given block's, but for where A, B and C
    lie: M and N cut before and past the block by whole 128-byte steps (_moved), K kept.
    The ladder's rungs read M and N only for their guards and row strides (none reads gridDim), so the
    block touches the same rows and columns relative to its own, at the same offsets within sectors, and
    takes the same paths: every count is the same (tests/test_long_k.py checks this against the block's
    own trace). Answers the problem as given for a kernel whose grid this cannot read."""
    spec = registry.get(kernel)
    grid = spec.launches[-1].grid
    rows, cols = _tile(grid, problem, "m"), _tile(grid, problem, "n")
    if (kernel not in registry.LADDER_RUNGS or len(spec.launches) != 1 or not rows or not cols or rows[0] == cols[0]
            or "gridDim" in sources.load(spec.launches[0].file).path.read_text()):   # it reads the grid's size
        return problem, tuple(block)
    at = list(block)
    m, at[rows[0]] = _moved(problem.m, block[rows[0]] * rows[1], rows[1])
    n, at[cols[0]] = _moved(problem.n, block[cols[0]] * cols[1], cols[1])
    at[rows[0]] //= rows[1]
    at[cols[0]] //= cols[1]
    return dataclasses.replace(problem, m=m, n=n), (at[0], at[1])


def block_counts(kernel: str, problem: Problem, block: tuple[int, int], source: str, listing) -> RungCounts:
    """rung_counts.rung_counts of one block of a ladder rung (problem bound to its parameters), from
    two short traces where K is long (see the module's docstring), else from the block's own trace;
    both of the canonical() problem, whose counts are the block's (so a size change that keeps the
    block's place within 128-byte lines traces nothing new).
    listing(file, params): the rung's SASS listing (engine/kernels/sass.py) or None."""
    small, at = canonical(kernel, problem, block)
    if (small, at) != (problem, tuple(block)):
        return dataclasses.replace(block_counts(kernel, small, at, source, listing), block=tuple(block))
    learned = (kernel, tuple(sorted(problem.params.items())))
    tiles = _tiles_needed(_EPOCHS_PER_TILE.get(learned, 2.0))
    while (ks := short_ks(problem, tiles) if kernel in registry.LADDER_RUNGS else None) is not None:
        short, longer = (_short_counted(kernel, _at_k(problem, k), block, source, listing) for k in ks)
        per_tile = (longer.epochs - short.epochs) * rung_counts.k_step(problem.params) / (ks[1] - ks[0])
        _EPOCHS_PER_TILE[learned] = per_tile = max(per_tile, 0.5)
        if ks[1] >= _tiles_needed(per_tile) * rung_counts.k_step(problem.params):
            period = k_period(problem.params)
            return rung_counts.extended(short, longer, (problem.k - ks[0]) // period, problem.k,
                                        (ks[1] - ks[0]) // period)
        tiles = _tiles_needed(per_tile)   # the guess was short: the loop's tail would show in the timeline
    counts = _counted(kernel, problem, block, source, listing)
    if kernel in registry.LADDER_RUNGS and learned not in _EPOCHS_PER_TILE:   # its barriers per tile, rounded down
        _EPOCHS_PER_TILE[learned] = max(0.5, counts.epochs // -(-problem.k // rung_counts.k_step(problem.params)))
    return counts


def host_need(kernel: str, problem: Problem, block: tuple[int, int]) -> int:
    """The host bytes block_counts' largest trace takes (plan.host_need): what it reserves."""
    problem, block = canonical(kernel, problem, block)
    ks = short_ks(problem) if kernel in registry.LADDER_RUNGS else None
    return plan.host_need(kernel, _at_k(problem, ks[1]) if ks else problem, [block])
