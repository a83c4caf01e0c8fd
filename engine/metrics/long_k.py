"""One block of a ladder rung at a long K, counted from two short traces.

A rung's block walks K one tile at a time (BK elements, TILE on the tiled kernel), and every tile
does the same work at the same shared addresses; only its global addresses move on, by BK elements
of A's row and BK rows of B. So the block's counts grow by the same amount for every `period`
elements of K, where `period` (k_period) is a whole number of
- tiles of both shared buffers (double_buffered and prefetched alternate two), and
- 8 elements (32 bytes, a sector), so that A's and B's tiles keep their place within the sectors.
Two short traces, at K0 and K0 + period with K0 = K modulo the period (so both keep K's alignment,
which decides the rungs' vector and scalar paths, and the same last partial tile), give the counts
of one period; the counts at K are those of K0 plus (K - K0) / period times them. The first barrier
intervals, which the Ladder's timeline draws, are the short trace's: the same as the long one's when
the short trace runs on past them (_tiles_needed).

This is exact, not an estimate: tests/test_long_k.py checks it against the whole trace for every
rung, at sizes with partial tiles and K not a multiple of the period. At 4096³ it is a fifth to a
twentieth of the tracing (bench: tests/benchmarks/bench_as_compiled.py).
"""
from __future__ import annotations

import dataclasses
import math
import threading
from collections import OrderedDict

from engine.kernels import registry
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


def short_ks(problem: Problem, tiles: int | None = None) -> tuple[int, int] | None:
    """The two short K to trace instead of K (the shorter of at least `tiles` tiles), or None where K is
    too short for that to save work."""
    period, step = k_period(problem.params), rung_counts.k_step(problem.params)
    floor = (tiles or _tiles_needed(1)) * step
    k0 = problem.k - period * max(0, (problem.k - floor) // period)   # the least K >= floor with K0 = K (mod period)
    if k0 < floor:
        k0 += period
    if 2 * (k0 + period) > problem.k:   # the two short traces would cost as much as the long one
        return None
    return k0, k0 + period


def _at_k(problem: Problem, k: int) -> Problem:
    return dataclasses.replace(problem, k=k)


def _counted(kernel: str, problem: Problem, block: tuple[int, int], source: str, listing) -> RungCounts:
    trace = tracer.trace(kernel, problem, [block], source, check=False)   # counted only: rel_error unused
    return rung_counts.rung_counts(trace, analysis.warp_instructions(trace), block,
                                   listing(trace.launches[-1].file, trace.problem.params))


# The short traces' counts, most recent last. K0 depends on K only modulo the period, so a size change
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


def block_counts(kernel: str, problem: Problem, block: tuple[int, int], source: str, listing) -> RungCounts:
    """rung_counts.rung_counts of one block of a ladder rung (problem bound to its parameters), from
    two short traces where K is long (see the module's docstring), else from the block's own trace.
    listing(file, params): the rung's SASS listing (engine/kernels/sass.py) or None."""
    learned = (kernel, tuple(sorted(problem.params.items())))
    tiles = _tiles_needed(_EPOCHS_PER_TILE.get(learned, 2.0))
    while (ks := short_ks(problem, tiles) if kernel in registry.LADDER_RUNGS else None) is not None:
        short, longer = (_short_counted(kernel, _at_k(problem, k), block, source, listing) for k in ks)
        per_tile = (longer.epochs - short.epochs) * rung_counts.k_step(problem.params) / (ks[1] - ks[0])
        _EPOCHS_PER_TILE[learned] = per_tile = max(per_tile, 0.5)
        if ks[0] >= _tiles_needed(per_tile) * rung_counts.k_step(problem.params):
            return rung_counts.extended(short, longer, (problem.k - ks[0]) // (ks[1] - ks[0]), problem.k)
        tiles = _tiles_needed(per_tile)   # the guess was short: the loop's tail would show in the timeline
    counts = _counted(kernel, problem, block, source, listing)
    if kernel in registry.LADDER_RUNGS and learned not in _EPOCHS_PER_TILE:   # its barriers per tile, rounded down
        _EPOCHS_PER_TILE[learned] = max(0.5, counts.epochs // -(-problem.k // rung_counts.k_step(problem.params)))
    return counts


def host_need(kernel: str, problem: Problem, block: tuple[int, int]) -> int:
    """The host bytes block_counts' largest trace takes (plan.host_need): what it reserves."""
    ks = short_ks(problem) if kernel in registry.LADDER_RUNGS else None
    return plan.host_need(kernel, _at_k(problem, ks[1]) if ks else problem, [block])
