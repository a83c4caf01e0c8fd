"""The tensor-core macros on the CPU: ldmatrix .trans (LDMATRIX_X1_T/X2_T/X4_T) and MMA_16816
(mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32), checked against the PTX ISA's layouts
(engine/metrics/fragments.py) and by the product they compute. Their GPU twins are in test_gpu.py."""
from pathlib import Path

import numpy as np
import pytest

from engine.kernels import sources
from engine.kernels.problem import make_problem
from engine.metrics import analysis, fragments
from engine.tracing import tracer
from engine.tracing.plan import single_launch_plan
from tests.test_ldmatrix import _run_on_cpu, received
from tests.test_sources import _kernel

CUDA = Path(__file__).parent / "cuda"
TILE = str(CUDA / "mma_tile.cu")
TRANS = str(CUDA / "ldmatrix_trans.cu")
FRAGMENTS = str(CUDA / "mma_fragments.cu")


def tile_plan(m, n, k, file=TILE):
    """mma_tile.cu: a warp per 16 x 8 tile of C."""
    return single_launch_plan(file, make_problem(m, n, k), (-(-n // 8), -(-m // 16)), (32, 1))


def test_a_trans_site_is_an_ldmatrix_site_marked_trans(tmp_path):
    sites = {s.line: s for s in sources.load(TRANS).sites if s.matrices}
    assert [(s.matrices, s.trans, s.bytes, s.width, s.array, s.op) for s in sites.values()] == \
        [(4, True, 16, 8, "S", "load"), (2, True, 16, 8, "S", "load"), (1, True, 16, 8, "S", "load")]
    assert [(s.matrices, s.trans) for s in sources.load(TILE).sites if s.matrices] == [(4, False), (2, True)]
    # Refused where the plain form is: a global array.
    with pytest.raises(ValueError, match=r"k.cu:4: ldmatrix reads shared memory only"):
        sources.load(_kernel(tmp_path, "  unsigned r[2];\n  LDMATRIX_X2_T(r, A, 0);"))


def test_lanes_receive_what_the_ptx_table_says_for_trans():
    rng = np.random.default_rng(3)
    named = rng.permutation(32)
    named[:8] = named[0]                     # lanes 0-7 all name one row
    c = _run_on_cpu(TRANS, ((named + 0.5) / 1000).astype(np.float32).reshape(32, 1), (32, 1), 14)
    rows = 8 * np.arange(32)[:, None] + np.arange(8)   # S's rows: 8 t .. 8 t + 7
    want = np.concatenate([received(rows, named, 4, trans=True), received(rows, (named + 5) % 32, 2, trans=True),
                           received(rows, (named + 11) % 32, 1, trans=True)], axis=1)
    assert np.array_equal(c, want)
    assert not np.array_equal(want[:, :8], received(rows, named, 4))   # .trans does hand out others


def test_trans_records_and_bank_conflicts_are_those_of_the_plain_ldmatrix(tmp_path):
    # .trans changes who receives which element, not which rows are read.
    plain = tmp_path / "ldmatrix_trans.cu"
    plain.write_text(Path(TRANS).read_text().replace("_T(", "("))
    traces = []
    for file in (TRANS, str(plain)):
        plan = single_launch_plan(file, make_problem(32, 14, 1), (1, 1), (32, 1))
        traces.append(tracer.assemble(plan, tracer.run_plan(plan, "cpu"), "cpu"))
    trans, same = traces
    assert [s.site.trans for s in trans.sites if s.site.matrices] == [True] * 3
    assert [s.site.trans for s in same.sites if s.site.matrices] == [False] * 3
    assert len(trans.records) and trans.records.tobytes() == same.records.tobytes()
    columns = ["requests", "wavefronts", "bank_conflicts"]
    assert analysis.site_summary(trans)[columns].equals(analysis.site_summary(same)[columns])


def test_mma_computes_d_plus_a_b_on_the_ptx_fragments():
    """mma_fragments.cu hands each lane its fragments straight from A; small integers make every
    product and sum exact, so one element out of place shows."""
    rng = np.random.default_rng(5)
    a, b = rng.integers(-8, 9, (16, 16)), rng.integers(-8, 9, (16, 8))
    d0 = rng.integers(-100, 101, (16, 8))
    at = {x: fragments.ptx_mma_m16n8k16(x) for x in "abc"}
    lanes = np.concatenate([a[at["a"][..., 0], at["a"][..., 1]], b[at["b"][..., 0], at["b"][..., 1]],
                            d0[at["c"][..., 0], at["c"][..., 1]]], axis=1)
    d = _run_on_cpu(FRAGMENTS, lanes.astype(np.float32), (32, 1), 4)
    assert np.array_equal(d, (d0 + a @ b)[at["c"][..., 0], at["c"][..., 1]])


def test_ldmatrix_and_mma_multiply_tiles_exactly():
    """mma_tile.cu over several tiles and steps of K, with edges: small integers (exact in half, and
    every sum exact in float) give exactly A B."""
    rng = np.random.default_rng(11)
    m, n, k = 37, 29, 45
    a, b = rng.integers(-4, 5, (m, k)).astype(np.float32), rng.integers(-4, 5, (k, n)).astype(np.float32)
    c = _run_on_cpu(TILE, a, (32, 1), n, b, grid=(-(-n // 8), -(-m // 16)))
    assert np.array_equal(c, a.astype(np.float64) @ b)


def test_the_mma_tile_trace_is_the_product_in_float64_within_half_rounding():
    plan = tile_plan(37, 29, 45)
    raw = tracer.run_plan(plan, "cpu")
    t = tracer.assemble(plan, raw, "cpu")
    assert raw.checked_outputs == 37 * 29 and raw.rel_error < 1e-3    # A and B stored as halves
    # Each ldmatrix is one 16-byte record per lane that names a row: 32 for A's x4, 16 for B's x2.t,
    # per tile and step of K (3 x 4 tiles, 3 steps).
    lines = {s.matrices: s.line for s in sources.load(TILE).sites if s.matrices}
    lane = t.records["lane"]
    for matrices, line in lines.items():
        assert np.array_equal(np.bincount(lane[t.records["line"] == line], minlength=32),
                              [12 * 3] * 8 * matrices + [0] * (32 - 8 * matrices))

