"""engine/metrics/long_k.py: a rung's block at a long K, counted from two short traces, equals the
counts of the block's own trace, field for field, for every rung of the ladder; at sizes with partial
tiles in M, N and K, K not a multiple of the period, other parameters and blocks at the grid's edge."""
import dataclasses

import pandas as pd
import pytest

from engine.kernels import registry, sass
from engine.kernels.problem import make_problem
from engine.metrics import long_k, rung_counts
from engine.tracing import tracer

# With nvdisasm the as-compiled counts (SASS merges, Nsight Compute's totals) are compared too.
LISTING = (lambda file, params: sass.memory_instructions(file, params)) if sass.nvdisasm() else (lambda *_: None)


def _fields_differing(a: rung_counts.RungCounts, b: rung_counts.RungCounts) -> list[str]:
    out = []
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, pd.DataFrame):
            try:
                pd.testing.assert_frame_equal(x, y)
            except AssertionError:
                out.append(f.name)
        elif x != y:
            out.append(f"{f.name}: {x} != {y}")
    return out


def _check(name: str, m: int, n: int, k: int, params: dict, block: tuple[int, int]):
    spec = registry.get(name)
    problem = registry.bind(spec, make_problem(m, n, k, block=spec.default_block, params=params))
    assert long_k.short_ks(problem), f"{name} at K={k}: too short to test the two short traces"
    whole = tracer.trace(name, problem, [block], "cpu")
    from engine.metrics import analysis
    expected = rung_counts.rung_counts(whole, analysis.warp_instructions(whole), block,
                                       LISTING(whole.launches[-1].file, problem.params))
    assert _fields_differing(long_k.block_counts(name, problem, block, "cpu", LISTING), expected) == []


@pytest.mark.parametrize("name", registry.LADDER_RUNGS)
def test_two_short_traces_count_what_the_whole_block_does(name):
    # 1001: odd, not a multiple of any tile or period, so the last tile is partial; 300 x 260 puts
    # partial tiles in M and N too. The block at the grid's far corner is partial in both.
    _check(name, 300, 260, 1001, {}, (0, 0))
    spec = registry.get(name)
    gx, gy = spec.launches[-1].grid(registry.bind(spec, make_problem(300, 260, 1001, block=spec.default_block)))
    _check(name, 300, 260, 1001, {}, (gx - 1, gy - 1))


@pytest.mark.parametrize("name, params, k", [
    ("blocktile_1d", {"BK": 4, "TM": 8}, 515),        # the shortest tile: a period of 8 elements
    ("blocktile_2d", {"BK": 8, "TN": 8}, 770),
    ("vectorized", {"BK": 16}, 900),                   # K a multiple of 4: the float4 path
    ("warptile", {"BK": 16, "WNITER": 1}, 1027),       # K not a multiple of 4: the scalar path
    ("double_buffered", {"BK": 32, "BM": 64, "WM": 64}, 1100),
    ("prefetched", {"BK": 8}, 603),
    ("tiled_guarded", {"TILE": 8}, 333),
])
def test_other_parameters_and_alignments(name, params, k):
    _check(name, 192, 136, k, params, (0, 0))


def test_short_ks_keep_k_modulo_the_period_and_enough_tiles():
    spec = registry.get("blocktile_2d")
    for k in (4096, 4095, 2001, 1777):
        problem = registry.bind(spec, make_problem(512, 512, k, block=spec.default_block, params={"BK": 32}))
        k0, k1 = long_k.short_ks(problem, 7)
        period = long_k.k_period(problem.params)
        assert period == 64 and (k1 - k0) % period == 0 and (k - k0) % period == 0
        assert 7 * 32 <= k1 < 7 * 32 + period                        # the timeline's tiles
        assert long_k.MIN_TILES * 32 <= k0 < long_k.MIN_TILES * 32 + period   # as short as it may be
    # Short K: the block's own trace (two short ones would cost as much).
    assert long_k.short_ks(registry.bind(spec, make_problem(512, 512, 300, block=spec.default_block)), 7) is None


def test_a_rung_with_one_barrier_per_tile_is_traced_again_with_more_tiles(monkeypatch):
    """double_buffered passes one barrier per tile: five tiles (enough at two) would end the longer trace's
    loop inside the timeline's first intervals, so it is taken again, longer."""
    long_k._EPOCHS_PER_TILE.clear()
    long_k._SHORT.clear()
    traced = []
    counted = long_k._counted
    monkeypatch.setattr(long_k, "_counted", lambda kernel, problem, *rest: traced.append(problem.k) or
                        counted(kernel, problem, *rest))
    spec = registry.get("double_buffered")
    problem = registry.bind(spec, make_problem(128, 128, 1024, block=spec.default_block))
    long_k.block_counts("double_buffered", problem, (0, 0), "cpu", lambda *_: None)
    # BK 16, a period of two tiles: the longer trace at least five tiles, then nine; the shorter two
    # (counted once: its counts are kept)
    assert traced == [32, 96, 160]
    traced.clear()
    long_k._SHORT.clear()                   # the counts are kept: forgotten, to see what is traced
    long_k.block_counts("double_buffered", problem, (0, 0), "cpu", lambda *_: None)
    assert traced == [32, 160]              # learned


def test_counts_that_do_not_agree_are_refused_not_extended():
    spec = registry.get("warptile")
    problem = registry.bind(spec, make_problem(128, 128, 64, block=spec.default_block))
    a = long_k.block_counts("warptile", problem, (0, 0), "cpu", lambda *_: None)
    with pytest.raises(ValueError, match="threads"):
        rung_counts.extended(a, dataclasses.replace(a, threads=a.threads + 32), 3, 256)
    with pytest.raises(ValueError, match="count different"):
        rung_counts.extended(a, dataclasses.replace(a, interval_totals={}), 3, 256)


def test_a_trace_made_only_to_be_counted_skips_the_float64_check_and_nothing_else():
    spec = registry.get("blocktile_2d")
    problem = registry.bind(spec, make_problem(96, 80, 70, block=spec.default_block))
    checked, counted = (tracer.trace("blocktile_2d", problem, [(0, 0)], "cpu", check=c) for c in (True, False))
    assert checked.rel_error < 1e-5 and checked.checked_outputs == 64 * 64
    assert counted.checked_outputs == 0 and counted.rel_error != counted.rel_error   # NaN: not checked
    assert (checked.records == counted.records).all()


def test_a_k_that_keeps_m_and_n_counts_from_the_short_traces_already_made(monkeypatch):
    # K0 depends on K only modulo the period: 1001 and 1001 + 8 periods need the same two short traces,
    # so the second size traces nothing (typing M, N, then K on the Ladder traced every rung again).
    spec = registry.get("warptile")
    first = registry.bind(spec, make_problem(300, 260, 1001, block=spec.default_block))
    long_k.block_counts("warptile", first, (0, 0), "cpu", LISTING)
    traced = []
    real = tracer.trace
    monkeypatch.setattr(tracer, "trace", lambda *a, **kw: traced.append(a[1].k) or real(*a, **kw))
    later = dataclasses.replace(first, k=1001 + 8 * long_k.k_period(first.params))
    counts = long_k.block_counts("warptile", later, (0, 0), "cpu", LISTING)
    assert traced == [] and counts.k == later.k
    other = dataclasses.replace(first, n=268)      # another N: traced again
    long_k.block_counts("warptile", other, (0, 0), "cpu", LISTING)
    assert len(traced) == 2


@pytest.mark.parametrize("name", registry.LADDER_RUNGS)
def test_a_block_moved_to_the_origin_counts_what_it_did_in_place(name):
    # canonical(): an interior block of a larger product, moved back and the sizes cut past it, counts
    # what the block itself does, field for field; N = 1000 and M = 1030 keep residues modulo 32 that
    # are not zero, and the blocks' starts are not all multiples of 32 (tiled_guarded's 16-row tiles).
    spec = registry.get(name)
    problem = registry.bind(spec, make_problem(1030, 1000, 72, block=spec.default_block))
    gx, gy = spec.launches[-1].grid(problem)
    for block in ((1, 1), (gx // 2, gy // 2 + 1), (gx - 1, gy - 2)):
        small, at = long_k.canonical(name, problem, block)
        assert small.m < problem.m and small.n < problem.n and (small.m - problem.m) % 32 == (small.n - problem.n) % 32 == 0
        whole = tracer.trace(name, problem, [block], "cpu")
        from engine.metrics import analysis
        expected = rung_counts.rung_counts(whole, analysis.warp_instructions(whole), block,
                                           LISTING(whole.launches[-1].file, problem.params))
        assert _fields_differing(long_k.block_counts(name, problem, block, "cpu", LISTING), expected) == [], block
