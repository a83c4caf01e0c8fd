"""The trace's schema and meaning, checked on CPU traces of small problems."""
import numpy as np

from engine.kernels.problem import make_problem
from engine.tracing import tracer
from engine.tracing.records import STORED_BYTES, TRACE_DTYPE


def test_record_is_at_most_32_bytes_in_memory():
    t = tracer.trace("naive_x_cols", make_problem(8, 40, 6, block=(32, 8)), source="cpu")
    assert sum(c.itemsize for c in t.columns.values()) == STORED_BYTES <= 32
    assert t.records.dtype == TRACE_DTYPE     # exports still carry every field, line included


def test_naive_thread_reads_a_row_of_a_and_a_column_of_b_in_order():
    t = tracer.trace("naive_x_cols", make_problem(8, 40, 6, block=(32, 8)), source="cpu")
    r = t.records
    me = r[(r["block_x"] == 1) & (r["thread_x"] == 3) & (r["thread_y"] == 5)]  # row 5, col 35
    names = [t.arrays[a] for a in me["array"]]
    assert names == ["A", "B"] * 6 + ["C"]
    a = me[me["array"] == 0]
    assert list(a["row"]) == [5] * 6 and list(a["col"]) == list(range(6)) and list(a["ordinal"]) == list(range(6))
    b = me[me["array"] == 1]
    assert list(b["row"]) == list(range(6)) and list(b["col"]) == [35] * 6
    assert list(b["offset"]) == [4 * (k * 40 + 35) for k in range(6)]
    c = me[me["array"] == 2][0]
    assert (c["row"], c["col"], c["op"], c["space"]) == (5, 35, 1, 0)
    assert set(me["warp"]) == {(5 * 32 + 3) // 32} and set(me["lane"]) == {(5 * 32 + 3) % 32}
    assert set(me["epoch"]) == {0}
    for rec in me:
        site = t.sites[rec["site"]].site
        assert site.line == rec["line"] and site.array == t.arrays[rec["array"]]


def test_tiled_epochs_alternate_load_and_compute():
    t = tracer.trace("tiled_guarded", make_problem(20, 20, 20, params={"TILE": 8}), source="cpu")
    r = t.records
    glob_loads = r[(r["space"] == 0) & (r["op"] == 0)]
    shared_loads = r[(r["space"] == 1) & (r["op"] == 0)]
    assert set(glob_loads["epoch"] % 2) == {0} and set(shared_loads["epoch"] % 2) == {1}
    assert r["epoch"].max() == 2 * 3  # 3 phases of K=20 in tiles of 8, two barriers each


def test_edge_threads_store_zeros_without_loading():
    t = tracer.trace("tiled_guarded", make_problem(20, 20, 20, params={"TILE": 8}), source="cpu")
    r = t.records
    edge = r[(r["block_x"] == 2) & (r["block_y"] == 2) & (r["thread_x"] == 7) & (r["thread_y"] == 7)]
    # row 23 >= M: never loads A, but stores As in every phase
    assert not ((edge["array"] == 0) & (edge["op"] == 0)).any()
    assert ((edge["array"] == t.arrays.index("As")) & (edge["op"] == 1)).sum() == 3


def test_selected_blocks_give_the_same_records_as_the_full_trace():
    p = make_problem(48, 40, 24, params={"TILE": 8})
    full = tracer.trace("tiled_guarded", p, source="cpu").records
    part = tracer.trace("tiled_guarded", p, [(3, 1), (0, 5)], source="cpu").records
    want = np.concatenate([full[(full["block_x"] == x) & (full["block_y"] == y)] for x, y in [(3, 1), (0, 5)]])
    assert np.array_equal(part, want)


def test_padded_shared_rows_use_the_padded_pitch():
    t = tracer.trace("shared_bank_conflicts", make_problem(32, 32, 32, params={"TILE": 16, "PAD": 1}), source="cpu")
    r = t.records
    tile_a = r[r["array"] == t.arrays.index("tile_A")]
    assert t.shapes["tile_A"] == (16, 17)
    assert np.array_equal(tile_a["offset"], 4 * (tile_a["row"].astype(np.int64) * 17 + tile_a["col"]))


def test_dataframe_has_names():
    t = tracer.trace("naive_x_rows", make_problem(4, 4, 4), source="cpu")
    df = t.to_dataframe()
    assert set(df["array"].astype(str)) == {"A", "B", "C"} and set(df["space"].astype(str)) == {"global"}


def test_recorded_ordinals_count_each_threads_executions_of_a_site():
    t = tracer.trace("shared_bank_conflicts", make_problem(37, 45, 29, params={"TILE": 16}), source="cpu")
    df = t.to_dataframe()
    thread = df[["block_x", "block_y", "thread_x", "thread_y"]].astype(str).agg("-".join, axis=1)
    expected = df.groupby([thread, df["site"]]).cumcount()
    assert (expected.to_numpy() == df["ordinal"].to_numpy()).all()


def test_rows_past_65535_are_recorded_as_they_are():
    """split_k's partial sums CP have SPLITK x M rows: at M 16,400 and SPLITK 4, 65,600. A row was 16
    bits, and the export gave row 65,599 as 63 (the offset, and so every count, was right)."""
    # The sum launch is traced: a block per row of C; the last adds CP rows 16,399 + 16,400 s.
    t = tracer.trace("split_k", make_problem(16400, 8, 8, params={"SPLITK": 4}), [(0, 16399)], source="cpu")
    r = t.records
    assert t.shapes["CP"] == (4 * 16400, 8)
    cp = r[r["array"] == t.arrays.index("CP")]
    assert cp["row"].max() > 65535
    assert np.array_equal(cp["row"].astype(np.int64) * 8 + cp["col"], cp["offset"] // 4)
    assert t.to_dataframe()["row"].max() == cp["row"].max()


def test_space_follows_from_the_site_in_every_view_of_the_records():
    t = tracer.trace("tiled_guarded", make_problem(20, 20, 20, params={"TILE": 8}), source="cpu")
    want = np.array([t.sites[s].site.space == "shared" for s in t.columns["site"]], dtype=np.uint8)
    assert np.array_equal(t.records["space"], want) and np.array_equal(t.spaces(), want)
    block = t.block_columns(1, 2)
    assert np.array_equal(block["space"], want[t.block_records(1, 2)])
    assert list(t.to_dataframe()["space"]) == [("global", "shared")[s] for s in want]


def test_a_thread_past_its_declared_records_is_refused_before_they_are_made(tmp_path):
    """TRACE_RECORDS bounds the host memory a trace is given: a kernel that declared 1 record a thread
    and made 15 M had been traced, and the server grew by 360 MB. The count pass finds it, so nothing
    is allocated for the records; the message names the thread and TRACE_RECORDS's line."""
    import pytest

    from engine.devices.cpu import CpuDevice
    from engine.errors import EngineError
    from engine.kernels import declared, sources
    from engine.tracing.execute import execute
    from engine.tracing.plan import plan_for
    text = (sources.CUDA_DIR / "playground" / "blank.cu").read_text()
    assert "TRACE_RECORDS(2 * K + 1);" in text
    path = tmp_path / "my_kernel.cu"
    path.write_text(text.replace("TRACE_RECORDS(2 * K + 1);", "TRACE_RECORDS(K);"))
    line = 1 + text.splitlines().index(next(t for t in text.splitlines() if t.startswith("TRACE_RECORDS")))
    spec = declared.spec_from_source(path, name="my_kernel")
    plan = plan_for(spec, make_problem(8, 40, 6, block=spec.default_block, params=spec.default_params()))
    with pytest.raises(EngineError, match=rf"^my_kernel.cu:{line}: thread \(0, 0\) of block \(0, 0\) made 13 trace "
                                          r"records, more than my_kernel's TRACE_RECORDS allows a thread \(6 here\)$"):
        execute(plan, CpuDevice())
    # As declared, it traces (another folder: sources are read once per path, as the Playground's digests name them).
    path = tmp_path / "as_declared" / "my_kernel.cu"
    path.parent.mkdir()
    path.write_text(text)
    spec = declared.spec_from_source(path, name="my_kernel")
    run = execute(plan_for(spec, make_problem(8, 40, 6, block=spec.default_block, params=spec.default_params())),
                  CpuDevice())
    assert run.checked_outputs == 8 * 40


def test_all_of_c_is_checked_after_every_block_ran(tmp_path):
    """whole_result: C starts as NaN and every block runs; what no block wrote is counted, and the rest
    is checked against float64 (a trace checks only the outputs its traced blocks stored)."""
    from engine.devices.cpu import CpuDevice
    from engine.kernels import declared, sources
    from engine.tracing.execute import whole_result
    from engine.tracing.plan import plan_for
    text = (sources.CUDA_DIR / "playground" / "blank.cu").read_text()
    for name, body, written in (("as_written", text, 40 * 24),
                                ("one_a_block", text.replace("if (row < M && col < N) {",
                                                             "if (row < M && col < N && threadIdx.x == 1 && threadIdx.y == 2) {"),
                                 2 * 3),
                                # NaN written is written (it had been counted as no block's): wrong, not missing
                                ("nan", text.replace("STG(C, row * N + col, sum);", "STG(C, row * N + col, (sum - sum) / (sum - sum));"),
                                 40 * 24)):
        path = tmp_path / name / "my_kernel.cu"
        path.parent.mkdir()
        path.write_text(body)
        spec = declared.spec_from_source(path, name="my_kernel")   # BX 32, BY 8: a grid of 2 x 3 blocks
        got = whole_result(plan_for(spec, make_problem(24, 40, 5, block=spec.default_block)), CpuDevice())
        assert (got.written, got.total) == (written, 24 * 40)
        assert got.rel_error < 1e-6 if name != "nan" else np.isnan(got.rel_error)
