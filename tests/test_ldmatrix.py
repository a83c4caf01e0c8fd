"""ldmatrix (LDMATRIX_X1/X2/X4): one 16-byte shared-load record per lane that names a row, lanes
receiving what the PTX ISA's table says, warp-collective operations and barriers on the CPU, and
wavefronts counted one matrix at a time.

The PTX ISA ("Warp-level matrix load instruction: ldmatrix"): for .x1, .x2, .x4 the rows of
matrix m are named by lanes 8m .. 8m + 7 (row j by lane 8m + j), each row 8 16-bit elements; lane t
receives, in register m, elements 2 (t % 4) and 2 (t % 4) + 1 of row t / 4 of matrix m.
"""
from pathlib import Path

import numpy as np
import pytest

from engine.devices.cpu import CpuDevice
from engine.errors import EngineError
from engine.kernels import sources
from engine.kernels.problem import make_problem
from engine.metrics import analysis, fragments
from engine.tracing import tracer
from engine.tracing.plan import global_shapes, single_launch_plan
from tests.test_sources import _kernel

CUDA = Path(__file__).parent / "cuda"
ROWS = str(CUDA / "ldmatrix_rows.cu")
WARPS = str(CUDA / "ldmatrix_warps.cu")


def rows_trace(m, n, k, source="cpu"):
    """ldmatrix_rows.cu: blocks of one warp, each owning 32 columns of one row of C."""
    plan = single_launch_plan(ROWS, make_problem(m, n, k), (-(-n // 32), m), (32, 1))
    raw = tracer.run_plan(plan, source)
    return tracer.assemble(plan, raw, source), raw


def received(rows: np.ndarray, named: np.ndarray, matrices: int, trans: bool = False) -> np.ndarray:
    """What each lane of a warp receives, by the PTX ISA's table (engine/metrics/fragments.py): rows
    (R, 8) the 16-bit elements of the rows that may be named, named[s] the row lane s names.
    (32, 2 * matrices): lane t's registers 0 .. matrices - 1, each as its two elements."""
    where = fragments.ptx_ldmatrix(matrices, trans)
    return rows[named[where[..., 0]], where[..., 1]]


def test_an_ldmatrix_site_is_a_16_byte_shared_load_marked_with_its_matrices():
    sites = [(s.array, s.space, s.op, s.bytes, s.width, s.matrices) for s in sources.load(ROWS).sites
             if s.matrices]
    assert sites == [("Bs", "shared", "load", 16, 8, 4), ("Bs", "shared", "load", 16, 8, 2),
                     ("Bs", "shared", "load", 16, 8, 1)]
    assert all(not s.matrices for s in sources.load(str(CUDA / "half_rows.cu")).sites)


@pytest.mark.parametrize("body, line, says", [
    ("  unsigned r[4];\n  LDMATRIX_X4(r, A, 0);", 4, "ldmatrix reads shared memory only; A is in global memory"),
    ("  __shared__ float Fs[64];\n  unsigned r[4];\n  LDMATRIX_X4(r, Fs, 0);", 5,
     "ldmatrix loads 16-bit elements .*; Fs holds float"),
    ("  __shared__ __half Hs[64];\n  unsigned r[2];\n  LDMATRIX_X2(r, Hs,\n    0);", 5,
     "write each access macro on one line"),
], ids=["global", "float", "two-lines"])
def test_ldmatrix_is_refused_where_its_records_would_be_wrong(tmp_path, body, line, says):
    file = _kernel(tmp_path, body)
    with pytest.raises(ValueError, match=rf"k.cu:{line}: {says}"):
        sources.load(file)


def test_a_bfloat16_shared_array_may_be_read_through_ldmatrix(tmp_path):
    file = _kernel(tmp_path, "  __shared__ __align__(16) __nv_bfloat16 Hs[8][8];\n  unsigned r[1];\n"
                             "  LDMATRIX_X1(r, Hs, threadIdx.x % 8, 0);\n  STG(C, threadIdx.x, (float)r[0]);")
    assert [(s.array, s.matrices) for s in sources.load(file).sites] == [("Hs", 1), ("C", 0)]


def test_each_lane_that_names_a_row_records_one_16_byte_load_there():
    t, _ = rows_trace(2, 64, 20)
    r = t.records
    lines = {s.matrices: s.line for s in sources.load(ROWS).sites if s.matrices}
    lane = r["lane"].astype(np.int64)
    # The rows ldmatrix_rows.cu names: (row of Bs, first column) for each lane.
    named = {4: (lane % 8, lane // 8 * 8), 2: (8 + lane % 16 // 4, lane % 4 * 8),
             1: (12 + 2 * (r["ordinal"].astype(np.int64) % 2) + lane % 8 // 4, lane % 4 * 8)}
    for matrices, line in lines.items():
        mine = r["line"] == line
        # Lanes 0 .. 8 * matrices - 1, once per instruction: 2 rows of C x 2 blocks x 2 steps of K,
        # X1 twice a step.
        times = 8 * (2 if matrices == 1 else 1)
        assert np.array_equal(np.bincount(r["lane"][mine], minlength=32),
                              [times] * 8 * matrices + [0] * (32 - 8 * matrices))
        row, col = named[matrices]
        assert np.array_equal(r["row"][mine], row[mine]) and np.array_equal(r["col"][mine], col[mine])
        assert np.array_equal(r["offset"][mine], (row[mine] * 32 + col[mine]) * 2)
        assert (r["space"][mine] == 1).all() and (r["op"][mine] == 0).all()


def test_the_product_is_right_only_if_every_lane_received_its_elements():
    # ldmatrix_rows.cu rebuilds B's tile from what each lane received, where the PTX ISA says it came
    # from; a lane with other elements makes C wrong (by 2e-2 and more, tried by hand).
    t, raw = rows_trace(3, 70, 37)
    assert raw.checked_outputs == 3 * 70
    assert 1e-5 < raw.rel_error < 2e-3     # B rounded to half, nothing more


def _run_on_cpu(file: str, a: np.ndarray, block: tuple[int, int], n: int, b: np.ndarray | None = None,
                grid: tuple[int, int] = (1, 1)) -> np.ndarray:
    """Runs a kernel's CPU build on inputs of the test's own (A, and B or ones) and returns all of C."""
    p = make_problem(len(a), n, a.shape[1])
    plan = single_launch_plan(file, p, grid, block)
    device = CpuDevice()
    device.upload({"A": a, "B": np.ones((p.k, n), np.float32) if b is None else b}, global_shapes(p),
                  {"M": p.m, "N": n, "K": p.k}, plan.inputs)
    device.run(plan.launches[0], None, 0)
    return device.buffers["C"]


def test_lanes_receive_what_the_ptx_table_says_across_barriers_and_collectives():
    """ldmatrix_warps.cu, simulated here from the table: three warps reach the barrier after 1, 2 and
    3 loads, each load followed by every lane overwriting a row its warp-mates read."""
    rng = np.random.default_rng(7)
    named = rng.integers(0, 32, size=(4, 96))            # per round (3) and for the last loads
    named[:, :8] = 5                                      # lanes 0-7 all name one row: a broadcast
    c = _run_on_cpu(WARPS, ((named + 0.5) / 1000).astype(np.float32).reshape(96, 4), (96, 1), 14)

    s = np.zeros((96, 8))
    t = np.arange(96)
    s[(t + 32) % 96] = 8 * t[:, None] + np.arange(8)
    for w in range(3):
        region = s[32 * w:32 * w + 32]
        for round_ in range(w + 1):
            region[:] = received(region.copy(), named[round_, 32 * w:32 * w + 32], 4)
    for w in range(3):
        rows = s[32 * ((w + 1) % 3):][:32]
        mine = named[3, 32 * w:32 * w + 32]
        want = np.concatenate([received(rows, mine, 4), received(rows, (mine + 5) % 32, 2),
                               received(rows, (mine + 11) % 32, 1)], axis=1)
        assert np.array_equal(c[32 * w:32 * w + 32], want), f"warp {w}"


def test_lanes_that_return_do_not_hold_up_their_warp(tmp_path):
    """The PTX ISA leaves ldmatrix undefined once a thread of the warp has exited; the CPU completes
    it with the lanes left (here lanes 0-15 of an x2, all it reads), so a trace still comes out."""
    file = _kernel(tmp_path, "  __shared__ __align__(16) __half Hs[16][8];\n"
                             "  for (int i = 0; i < 8; i++) STS(Hs, threadIdx.x % 16, i, __float2half((float)(8 * (threadIdx.x % 16) + i)));\n"
                             "  SYNC();\n  if (threadIdx.x >= 16) return;\n  unsigned r[2];\n"
                             "  LDMATRIX_X2(r, Hs, 15 - threadIdx.x, 0);\n"
                             "  for (int m = 0; m < 2; m++) STG(C, 2 * threadIdx.x + m, __half2float(__ushort_as_half(r[m] & 0xffff)));")
    c = _run_on_cpu(file, np.zeros((1, 1), np.float32), (32, 1), 64).ravel()
    # Lanes 0-15 named rows 15 .. 0 of Hs (matrix m's row j: Hs[15 - 8m - j]); lane t gets element
    # 2 (t % 4) of row t / 4 of each.
    hs = 8 * np.arange(16)[:, None] + np.arange(8)
    want = received(hs, 15 - np.arange(32) % 16, 2)[:16, ::2]
    assert np.array_equal(c[:32].reshape(16, 2), want) and not c[32:].any()


@pytest.mark.parametrize("body", [
    "  __shared__ __align__(16) __half Hs[8][8];\n  unsigned r[1];\n"
    "  if (threadIdx.x < 16) LDMATRIX_X1(r, Hs, threadIdx.x % 8, 0);\n  SYNC();\n  STG(C, threadIdx.x, 1.0f);",
    # Each mma is a collective of its own (its line is the tag): half a warp at each of two never meet.
    "  unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0};\n  float d[4] = {0, 0, 0, 0};\n"
    "  if (threadIdx.x < 16) MMA_16816(d, a, b);\n  else MMA_16816(d, a, b);\n  STG(C, threadIdx.x, d[0]);",
], ids=["ldmatrix-and-barrier", "two-mma-sites"])
def test_a_warp_split_between_collectives_is_an_error_not_a_hang(tmp_path, body):
    file = _kernel(tmp_path, body)
    plan = single_launch_plan(file, make_problem(1, 32, 1), (1, 1), (32, 1))
    with pytest.raises(EngineError, match="waited for each other forever"):
        tracer.run_plan(plan, "cpu")


def test_wavefronts_are_counted_one_matrix_at_a_time():
    t, _ = rows_trace(2, 64, 32)
    s = analysis.site_summary(t).set_index("matrices")
    # X4 of four 8 x 8 tiles of Bs (rows 64 bytes apart): each tile's rows hit 8 banks 4 times,
    # 4 wavefronts a matrix. (Served by half-warps, like LDS.128, two tiles' 16 rows would share
    # their 4: 8 wavefronts.) X2 and X1 name 128 consecutive bytes a matrix: one wavefront each.
    assert s.loc[4, "wavefronts_per_request"] == 16 and s.loc[4, "bank_conflicts"] == 12 * s.loc[4, "requests"]
    for matrices in (2, 1):
        assert s.loc[matrices, "wavefronts_per_request"] == matrices and s.loc[matrices, "bank_conflicts"] == 0
    totals = analysis.ncu_totals(analysis.site_summary(t))
    ldsm = s.loc[[4, 2, 1]]
    scalar = analysis.site_summary(t).query("space == 'shared' and op == 'load' and matrices == 0")
    assert totals["smsp__inst_executed_op_ldsm.sum"] == ldsm["requests"].sum() == 2 * 2 * 2 * 4
    assert totals["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"] == ldsm["wavefronts"].sum()
    assert totals["sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"] == ldsm["bank_conflicts"].sum()
    # To the l1tex counters an LDSM is a shared load; it is not a shared-load instruction.
    assert totals["smsp__inst_executed_op_shared_ld.sum"] == scalar["requests"].sum()
    assert totals["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == \
        ldsm["wavefronts"].sum() + scalar["wavefronts"].sum()
    assert totals["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == ldsm["bank_conflicts"].sum()


def test_a_trace_without_ldmatrix_reports_no_ldsm_counts():
    from tests.test_element_types import half_trace
    t, _, _ = half_trace(2, 32, 8)
    assert not any("ldsm" in metric for metric in analysis.ncu_totals(analysis.site_summary(t)))
