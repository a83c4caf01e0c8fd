"""The page-ready data of engine/metrics/views.py, each checked against the trace's records counted
another way (pandas on the raw records), not against the analysis code it is built from."""
import numpy as np
import pandas as pd
import pytest

from engine.kernels import sass, sources
from engine.kernels.problem import make_inputs, make_problem
from engine.kernels.reference import matmul
from engine.metrics import analysis, views
from engine.tracing import tracer

INSTRUCTION = ["launch", "block_x", "block_y", "warp", "site", "ordinal"]   # one warp-level instruction


def _trace(kernel, m, n, k, blocks=None, block=(16, 16), **params):
    """params: TILE, PAD as the kernel names them (lower case here)."""
    t = tracer.trace(kernel, make_problem(m, n, k, block=block, params={p.upper(): v for p, v in params.items()}),
                     blocks, "cpu")
    return t, analysis.warp_instructions(t)


def _records(trace) -> pd.DataFrame:
    return trace.to_dataframe().astype({"space": str, "op": str, "array": str})


def _wavefronts(offsets: pd.Series) -> int:
    """Most distinct 4-byte words any one of the 32 banks serves."""
    words = np.unique(offsets.to_numpy() // 4)
    return int(np.bincount(words % 32).max())


@pytest.fixture(scope="module")
def conflicts():
    """4 blocks of 16x16, tile_A read 8 ways (TILE 16, no padding), tile_B by broadcast."""
    return _trace("shared_bank_conflicts", 32, 32, 32, tile=16, pad=0, block=(16, 16))


def test_shared_kernel_counts_every_shared_load_of_the_kernel(conflicts):
    trace, inst = conflicts
    whole = views.shared_kernel(trace, inst, analysis.site_summary(trace, inst), {"available": False, "note": "none"})
    r = _records(trace)
    loads = r[(r["space"] == "shared") & (r["op"] == "load")]
    ways = loads.groupby(INSTRUCTION)["offset"].apply(_wavefronts)
    assert whole.as_written == ways.value_counts().sort_index().to_dict()
    assert set(whole.as_written) == {1, 8}   # tile_B broadcast, tile_A 8-way
    assert whole.as_compiled is None and whole.sass_note == "none"   # no listing: nothing merged


def test_shared_kernel_table_is_per_shared_site_as_written(conflicts):
    trace, inst = conflicts
    whole = views.shared_kernel(trace, inst, analysis.site_summary(trace, inst), {"available": False, "note": ""})
    r = _records(trace)
    shared = r[r["space"] == "shared"]
    per_inst = shared.groupby(INSTRUCTION + ["line", "op", "array"], observed=True)["offset"].apply(_wavefronts)
    per_site = per_inst.groupby(["line", "op", "array"]).agg(["size", "sum"]).reset_index()
    expected = {(int(x.line), f"{x.op} {x.array}"): (int(x.size), int(x.sum)) for x in per_site.itertuples()}
    got = {(int(x.line), x.access): (int(x.requests), int(x.wavefronts)) for x in whole.table.itertuples()}
    assert got == expected
    assert list(whole.table.columns) == ["line", "access", "requests", "wavefronts", "bank conflicts",
                                         "as compiled: instructions", "as compiled: wavefronts",
                                         "as compiled: bank conflicts"]


def test_shared_kernel_as_compiled_counts_the_hardware_loads(conflicts):
    trace, inst = conflicts
    info = sass.memory_instructions(trace.launches[-1].file, trace.problem.params)
    if not info.get("available") or not any("LDS.128" in ops for ops in info["by_line"].values()):
        pytest.skip("no SASS listing here, or nvcc merged no loads")
    whole = views.shared_kernel(trace, inst, analysis.site_summary(trace, inst), info)
    loads = whole.table[whole.table["access"].str.startswith("load")]
    assert sum(whole.as_compiled.values()) == loads["as compiled: instructions"].sum()
    assert sum(w * n for w, n in whole.as_compiled.items()) == loads["as compiled: wavefronts"].sum()
    assert sum(whole.as_written.values()) == loads["requests"].sum()
    assert whole.notes


def test_bank_steps_number_loads_among_themselves_and_fill_the_window():
    """TILE 8 at 128: 288 shared instructions per warp, 256 of them loads; the window is 160 loads."""
    trace, inst = _trace("shared_bank_conflicts", 128, 128, 128, blocks=[(0, 0)], tile=8, pad=0, block=(8, 8))
    r = _records(trace)
    mine = r[(r["block_x"] == 0) & (r["block_y"] == 0) & (r["warp"] == 1) & (r["space"] == "shared")]
    loads = mine[mine["op"] == "load"]
    shown = views.bank_steps(trace, inst, 0, 0, 1, loads_only=True)
    assert shown.total == len(loads.groupby(["site", "ordinal"])) == 256
    assert [s.index for s in shown.steps] == list(range(160))
    assert {s.op for s in shown.steps} == {"load"} and shown.what == "shared load"
    first = loads[(loads["site"] == shown.steps[0].site) & (loads["ordinal"] == 0)]
    assert shown.steps[0].lanes.tolist() == sorted(first["lane"].tolist())
    assert shown.layers[0] == views.bank_layers(shown.steps[0])
    every = views.bank_steps(trace, inst, 0, 0, 1, loads_only=False)
    assert every.total == len(mine.groupby(["site", "ordinal"])) == 288 and every.what == "shared instruction"
    assert {s.op for s in every.steps} == {"load", "store"}


def test_global_accesses_are_the_sectors_of_every_global_site():
    summaries, expected = {}, {}
    for kernel in ("naive_x_rows", "naive_x_cols"):
        trace, inst = _trace(kernel, 32, 32, 16, block=(16, 16))
        summaries[kernel] = analysis.site_summary(trace, inst)
        r = _records(trace)
        g = r[r["space"] == "global"]
        sectors = g.groupby(INSTRUCTION + ["line", "op", "array"], observed=True)["offset"].apply(
            lambda o: len(np.unique(o.to_numpy() // 32)))
        for (line, op, array), s in sectors.groupby(["line", "op", "array"]):
            expected[(kernel, line, f"{op} {array}")] = (len(s), int(s.sum()))
    table = views.global_accesses(summaries)
    got = {(x.kernel, x.line, x.access): (x.requests, x.sectors) for x in table.itertuples()}
    assert got == expected
    a = table[(table["kernel"] == "naive_x_rows") & (table["access"] == "load A")].iloc[0]
    assert a["sectors per request"] == 16   # 16 lanes on 16 rows: a sector each
    assert set(table["ncu metric"]) == {analysis.NCU_METRICS[("global", op, "sectors")] for op in ("load", "store")}


def test_warp_panel_is_the_warps_global_accesses():
    trace, inst = _trace("naive_x_cols", 40, 33, 20, blocks=[(1, 0)], block=(8, 32))
    panel = views.warp_panel(trace, inst, 1, 0, 2, start=10, limit=5)
    r = _records(trace)
    mine = r[(r["block_x"] == 1) & (r["block_y"] == 0) & (r["warp"] == 2) & (r["space"] == "global")]
    assert panel.total == len(mine.groupby(["site", "ordinal"]))
    assert [s.index for s in panel.steps] == list(range(10, 15))
    assert panel.arrays == {a: trace.shapes[a] for a in dict.fromkeys(s.array for s in panel.steps)}
    assert set(panel.arrays) == {"A", "B"}
    assert (panel.kernel, panel.block, panel.warp) == ("naive_x_cols", (8, 32), 2)
    assert panel.file == trace.launches[-1].file


def test_tile_view_is_the_blocks_loads_and_partial_sums():
    m = n = k = 40
    trace, _ = _trace("tiled_guarded", m, n, k, blocks=[(2, 1)], tile=16)
    view = views.tile_view(trace, 2, 1)
    r = _records(trace)
    mine = r[(r["block_x"] == 2) & (r["block_y"] == 1)]
    c = mine[(mine["array"] == "C") & (mine["op"] == "store")]
    assert view.rows[0] == c["row"].min() and min(view.rows[1], m) == c["row"].max() + 1
    assert view.cols[0] == c["col"].min() and min(view.cols[1], n) == c["col"].max() + 1
    assert len(view.phases) == 3
    for p in view.phases:
        epoch = mine[mine["epoch"] == 2 * p.phase]
        reads = epoch[(epoch["space"] == "global") & (epoch["op"] == "load")]
        assert p.a_loaded == (reads["array"] == "A").sum() and p.b_loaded == (reads["array"] == "B").sum()
        stores = ((epoch["space"] == "shared") & (epoch["op"] == "store")).sum()
        assert p.zero_filled == stores - len(reads)
    assert view.zero_filled   # block (2, 1) reaches column 48 of 40
    rows, cols = slice(view.rows[0], min(view.rows[1], m)), slice(view.cols[0], min(view.cols[1], n))
    a, b = make_inputs(trace.problem)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.allclose(view.partials[-1], exact[rows, cols])
    assert np.allclose(view.partials[0], matmul(a[rows, :16], b[:16, cols]))
    lines = sources.load(view.file).text.splitlines()
    assert "STS" in lines[view.load_line - 1] and "LDS" in lines[view.compute_line - 1]
    assert view.shapes == {"A": (m, k), "B": (k, n), "C": (m, n)}


def test_ncu_command_names_the_metrics_of_analysis():
    command = views.ncu_command("shared", "load", ("requests", "bank_conflicts"))
    assert command == ("ncu --metrics smsp__inst_executed_op_shared_ld.sum,"
                       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")


def test_bank_layers_of_a_128_bit_load_wire_each_lane_to_its_four_words_8_lanes_at_a_time():
    """vectorized's LDS4 of Bs: lanes TN = 8 words apart, 4 words each, no two lanes reading the same
    piece: served 8 lanes (128 bytes) at a time, as Nsight Compute counts it (analysis.served_lanes).
    Lanes 0-7's 32 words hold 2 of each of 16 banks: 2 wavefronts where 1 would do; then lanes 8-15's."""
    trace, inst = _trace("vectorized", 64, 64, 64, blocks=[(0, 0)], bm=128, bn=128, bk=8, tm=8, tn=8)
    shown = views.bank_steps(trace, inst, 0, 0, 0, loads_only=True)
    step, lay = next((s, l) for s, l in zip(shown.steps, shown.layers) if s.array == "Bs")
    assert step.width == 4 and (step.wavefronts, step.ideal) == (8, 4)
    for lane, offset in zip(step.lanes, step.offsets):
        wired = {w for w, lanes in zip(lay["word"], lay["lane"]) if lane in lanes}
        assert wired == {offset // 4 + j for j in range(4)}
    assert max(lay["layer"]) + 1 == step.wavefronts
    first_group = {y for y, lanes in zip(lay["layer"], lay["lane"]) if min(lanes) < 8}
    assert first_group == {0, 1} and {y for y, e in zip(lay["layer"], lay["extra"]) if e} == {1, 3, 5, 7}
    assert all(b == w % 32 for b, w in zip(lay["bank"], lay["word"]))
