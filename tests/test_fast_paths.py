"""The engine's fast paths (blocks on several threads, one-block views, batched analysis, shared
libraries and listings kept in the cache) must not change an answer: each is checked against the
plain way. How fast they are is measured by tests/benchmarks/bench_engine.py, not here."""
import json

import numpy as np
import pytest

from engine import parallel
from engine.devices import cpu
from engine.kernels import build, reference, sass
from engine.kernels.problem import make_inputs, make_problem
from engine.metrics import analysis, views
from engine.tracing import records, tracer
from engine.tracing.execute import execute
from engine.tracing.plan import make_plan
from engine.tracing.records import Trace


def _named(**params) -> dict:
    return {name: value for name, value in params.items() if value is not None}


def _trace(kernel, m, n, k, tile=None, pad=None, block=(16, 16), blocks=None):
    return tracer.trace(kernel, make_problem(m, n, k, block=block, params=_named(TILE=tile, PAD=pad)), blocks, "cpu")


CASES = [  # edge blocks with divergent warps, several launches, a subset with a block twice
    ("naive_x_rows", (37, 45, 29), dict(block=(32, 1))),
    ("naive_x_cols", (40, 33, 20), dict(block=(8, 32))),
    ("naive_transposed_b", (50, 40, 30), dict(block=(32, 8))),
    ("naive_transposed_b", (100, 70, 50), dict(block=(32, 8), blocks=[(1, 2), (0, 0), (1, 2)])),
    ("tiled_guarded", (37, 45, 29), dict(tile=8, block=(8, 8))),
    ("shared_bank_conflicts", (40, 40, 40), dict(tile=16, pad=1, block=(16, 16))),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def case(request):
    kernel, size, kw = request.param
    return _trace(kernel, *size, **kw)


def test_block_records_are_the_block_mask(case: Trace):
    r = case.columns
    for launch, info in enumerate(case.launches):
        for bx, by in {tuple(int(v) for v in b) for b in info.blocks} | {(999, 999)}:
            mask = (r["launch"] == launch) & (r["block_x"] == bx) & (r["block_y"] == by)
            assert np.array_equal(case.block_records(bx, by, launch), np.flatnonzero(mask))
            columns = case.block_columns(bx, by, launch)
            assert columns.keys() == r.keys() | {"space"}   # space: from each record's site, as Trace.spaces()
            assert all(np.array_equal(columns[k], r[k][mask]) and columns[k].dtype == r[k].dtype for k in r)
            assert np.array_equal(columns["space"], case.spaces()[mask])
            if len(case.block_runs(bx, by, launch)) == 1:   # traced once: views of the trace, read-only
                assert all(np.shares_memory(columns[k], r[k]) and not columns[k].flags.writeable for k in r)
    site = r["site"]
    assert np.array_equal(analysis.counts_of(site, 300), np.bincount(site, minlength=300))


def _reference_instructions(trace: Trace) -> np.ndarray:
    """The grouping by its definition, site by site: rows of (warp, site, ordinal), every lane placed
    by its lane number; ordered by warp, then position of the first record in its thread."""
    r = trace.columns
    warp_id = np.repeat(trace.thread_warp.astype(np.int64), trace.thread_counts)
    starts = np.repeat(trace.thread_starts()[:-1], trace.thread_counts)
    seq = np.arange(len(trace)) - starts
    parts = []
    for s, ts in enumerate(trace.sites):
        idx = np.flatnonzero(r["site"] == s)
        if not len(idx):
            continue
        keys, inverse = np.unique(np.stack([warp_id[idx], r["ordinal"][idx]], axis=1), axis=0, return_inverse=True)
        inverse = inverse.ravel()
        addr = np.full((len(keys), 32), -1, dtype=np.int64)
        addr[inverse, r["lane"][idx]] = r["offset"][idx]
        first = np.full(len(keys), len(trace), dtype=np.int64)
        np.minimum.at(first, inverse, idx)
        inst = np.zeros(len(keys), dtype=analysis.INSTANCE_DTYPE)
        for f in ("launch", "block_x", "block_y", "warp", "ordinal", "epoch"):
            inst[f] = r[f][first]
        inst["site"], inst["first"], inst["seq"] = s, first, seq[first]
        inst["active"] = (addr >= 0).sum(axis=1)
        for row, a in zip(inst, addr):
            a = a[a >= 0]
            if ts.site.space == "global":
                row["sectors"], row["lines"] = len(set(a // 32)), len(set(a // 128))
            else:
                words = set(a // 4)
                row["wavefronts"] = max(sum(1 for w in words if w % 32 == b) for b in range(32))
                row["ideal"] = 1     # these kernels' shared accesses are 4 bytes a lane
        parts.append(inst)
    inst = np.concatenate(parts)
    return inst[np.lexsort((inst["seq"], warp_id[inst["first"]]))]


def test_warp_instructions_match_their_definition(case: Trace):
    got = analysis.warp_instructions(case)
    assert got.tobytes() == _reference_instructions(case).tobytes()


def test_one_block_views_match_a_whole_trace_scan(case: Trace):
    r, inst = {**case.columns, "space": case.spaces()}, analysis.warp_instructions(case)
    bx, by = (int(v) for v in case.launches[-1].blocks[-1])
    mask = (r["launch"] == len(case.launches) - 1) & (r["block_x"] == bx) & (r["block_y"] == by)
    warps = sorted(set(r["warp"][mask].tolist()))
    assert views.warps_of(case, bx, by) == warps
    for space in (None, "global", "shared"):
        steps, total = views.warp_steps(case, inst, bx, by, warps[-1], space)
        mine = inst[(inst["launch"] == len(case.launches) - 1) & (inst["block_x"] == bx) & (inst["block_y"] == by)
                    & (inst["warp"] == warps[-1])]
        mine = [row for row in mine if space is None or case.sites[row["site"]].site.space == space]
        assert total == len(mine)
        for step, row in zip(steps, mine):
            sel = mask & (r["warp"] == warps[-1]) & (r["site"] == row["site"]) & (r["ordinal"] == row["ordinal"])
            assert np.array_equal(step.lanes, r["lane"][sel]) and np.array_equal(step.offsets, r["offset"][sel])
    reads = analysis.block_phases(case, bx, by)
    assert len(reads) == int((mask & (r["space"] == 0) & (r["op"] == 0)).sum())


def test_tile_phases_count_the_block_records():
    t = _trace("tiled_guarded", 37, 45, 29, tile=8, block=(8, 8))
    r = {**t.columns, "space": t.spaces()}
    bx, by = t.launches[-1].grid[0] - 1, t.launches[-1].grid[1] - 1
    mine = (r["block_x"] == bx) & (r["block_y"] == by)
    for ph in views.tile_phases(t, bx, by):
        ep = mine & (r["epoch"] == 2 * ph.phase)
        assert ph.a_loaded == int((ep & (r["space"] == 0) & (r["op"] == 0) & (r["array"] == t.arrays.index("A"))).sum())
        assert ph.a_loaded + ph.b_loaded + ph.zero_filled == int((ep & (r["space"] == 1) & (r["op"] == 1)).sum())


def test_blocks_on_several_host_threads_give_the_one_thread_records(monkeypatch):
    # In this process, not a worker's, so that the switch below reaches the device that runs.
    plan = make_plan("tiled_guarded", make_problem(128, 96, 40, block=(8, 8), params={"TILE": 8}))   # 12,288 threads
    calls = []
    monkeypatch.setattr(parallel, "pool", lambda real=parallel.pool: calls.append(1) or real())
    shared_out = execute(plan, cpu.CpuDevice())
    assert calls                                      # the blocks were shared out
    monkeypatch.setattr(cpu, "_PARALLEL_SLOTS", 10**9)
    calls.clear()
    alone = execute(plan, cpu.CpuDevice())
    assert not calls
    for a, b in zip(shared_out.launches, alone.launches):
        assert a.records.tobytes() == b.records.tobytes() and np.array_equal(a.counts, b.counts)
    assert shared_out.rel_error == alone.rel_error


def test_kernels_without_tile_build_one_cpu_library():
    lib = build.build_cpu_library
    assert lib("naive_x_cols.cu", {"TILE": 8, "PAD": 0}) == lib("naive_x_cols.cu", {"TILE": 32, "PAD": 0})
    assert lib("tiled_guarded.cu", {"TILE": 8, "PAD": 0}) != lib("tiled_guarded.cu", {"TILE": 32, "PAD": 0})


@pytest.mark.skipif(not (sass.nvdisasm() and build.nvcc()), reason="needs nvcc and nvdisasm")
def test_sass_listing_is_kept_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))
    first = sass.memory_instructions("shared_bank_conflicts.cu", {"TILE": 8, "PAD": 1})
    saved = list(tmp_path.glob("*.sass.json"))
    assert len(saved) == 1 and first["available"] and first["by_line"]
    assert sass.memory_instructions("shared_bank_conflicts.cu", {"TILE": 8, "PAD": 1}) == first    # int line keys again
    saved[0].write_text("{not json")
    assert sass.memory_instructions("shared_bank_conflicts.cu", {"TILE": 8, "PAD": 1}) == first    # listed again
    assert json.loads(saved[0].read_text())["note"] == first["note"]


def test_warp_instructions_in_small_batches_match_their_definition(case: Trace, monkeypatch):
    # Batches smaller than one warp's records: each warp is cut into pieces of its instructions.
    monkeypatch.setattr(analysis, "_UNIFORM_CHUNK", 100)
    got = analysis.warp_instructions(case)
    assert got.tobytes() == _reference_instructions(case).tobytes()


def test_assembly_in_pieces_on_several_threads_gives_the_one_piece_trace(monkeypatch):
    plan = make_plan("naive_transposed_b", make_problem(100, 70, 50, block=(32, 8)))   # two launches
    raw = tracer.run_plan(plan, "cpu")
    monkeypatch.setattr(records, "_CHUNK", 10**9)
    monkeypatch.setattr(parallel, "THREADS", 1)
    whole = tracer.assemble(plan, raw, "cpu")
    monkeypatch.setattr(records, "_CHUNK", 777)
    monkeypatch.setattr(parallel, "THREADS", 3)
    pieces = tracer.assemble(plan, raw, "cpu")
    assert whole.columns.keys() == pieces.columns.keys()
    for name, column in whole.columns.items():
        assert column.dtype == pieces.columns[name].dtype and np.array_equal(column, pieces.columns[name]), name


def test_a_record_of_no_site_is_reported_at_its_line_from_any_piece(monkeypatch):
    plan = make_plan("tiled_guarded", make_problem(64, 64, 64, block=(8, 8), params={"TILE": 8}))
    raw = tracer.run_plan(plan, "cpu")
    bad = raw.launches[-1].records
    bad[[30_000, 50_000]] = [(0, 250, 41, 0, 0, 0), (0, 250, 17, 0, 0, 0)]   # site 250: none
    monkeypatch.setattr(records, "_CHUNK", 1000)
    with pytest.raises(ValueError, match="a record from line 41 matches no access site"):
        tracer.assemble(plan, raw, "cpu")


def test_parallel_each_keeps_order_and_raises_the_first_failure():
    assert parallel.each(lambda x: x * x, range(50)) == [x * x for x in range(50)]

    def fail_at(x):
        if x in (7, 30):
            raise ValueError(f"failed at {x}")
        return x
    with pytest.raises(ValueError, match="failed at 7"):
        parallel.each(fail_at, range(50))
    # From the pool's own threads: run there, one after another, not waiting for the pool.
    assert parallel.each(lambda x: parallel.each(lambda y: x * y, range(3)), range(4)) == \
        [[x * y for y in range(3)] for x in range(4)]
    assert parallel.spans(10, 3) == [(0, 3), (3, 6), (6, 10)] and parallel.spans(2, 4) == [(0, 1), (1, 2)]


@pytest.mark.parametrize("m, n, k", [(300, 260, 70), (120, 2048, 2)])
def test_reference_values_by_products_of_rows_and_columns_are_those_of_each_dot(m, n, k, monkeypatch):
    a, b = make_inputs(make_problem(m, n, k))
    rng = np.random.default_rng(0)
    rows, cols = np.meshgrid(np.arange(40, 104), np.arange(128, 192), indexing="ij")
    chosen = {
        "one tile": rows.ravel() * n + cols.ravel(),
        "two tiles apart": np.r_[rows.ravel() * n + cols.ravel(), (rows.ravel() + 180) % m * n + cols.ravel() + 50],
        "everything, backwards": np.arange(m * n)[::-1],
        "scattered": rng.integers(0, m * n, 500),
    }
    for what, flat in chosen.items():
        expected = reference._dot_each(a, b, *np.divmod(flat, n))
        assert np.allclose(reference.elements(a, b, flat, n), expected, rtol=1e-12, atol=0), what
    monkeypatch.setattr(reference, "_OPERAND", 3000)   # many pieces of rows and columns
    flat = chosen["everything, backwards"]
    assert np.allclose(reference.elements(a, b, flat, n), reference._dot_each(a, b, *np.divmod(flat, n)),
                       rtol=1e-12, atol=0)
