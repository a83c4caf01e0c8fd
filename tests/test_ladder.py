"""The ladder's page data (engine/metrics/rung_diff.py, rung_counts.py, engine/bench/speeds.py), each checked another way: the diff against
the two files themselves, the counts against the records (pandas) and against the arithmetic of
each rung's parameters, the timelines against the records' epochs and groups, and the speeds
against a synthetic benchmark export made here."""
import json
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from engine.bench import benchmark, schema, speeds
from engine.kernels import registry, sources
from engine.kernels.problem import make_problem
from engine.metrics import analysis, rung_counts, rung_diff
from engine.plots import ladder_figures
from engine.tracing import tracer

SIZE = 256


@pytest.fixture(scope="module")
def counted():
    """Every rung's block (0, 0) at SIZE^3, with its trace."""
    out = {}
    for name in registry.LADDER_RUNGS:
        t = tracer.trace(name, make_problem(SIZE, SIZE, SIZE, block=registry.get(name).default_block), [(0, 0)], "cpu")
        out[name] = (t, rung_counts.rung_counts(t, analysis.warp_instructions(t), (0, 0)))
    return out


# --------------------------------------------------------------------------- the diff

@pytest.mark.parametrize("name", registry.LADDER_RUNGS[1:])
def test_changed_lines_are_what_the_previous_rung_lacks(name):
    src = rung_diff.rung_source(name)
    old = sources.load(registry.get(src.previous).launches[-1].file).text.splitlines()
    assert src.lines == tuple(sources.load(registry.get(name).launches[-1].file).text.splitlines())
    kept = [line for n, line in enumerate(src.lines, 1) if n not in src.changed]
    # What is kept appears in the previous file, in the same order; every other old line was removed.
    it = iter(old)
    assert all(line in it for line in kept)
    assert len(kept) + sum(src.removed.values()) == len(old)
    # A line that appears nowhere in the previous file is marked changed.
    assert {n for n, line in enumerate(src.lines, 1) if line not in old} <= src.changed


def test_the_diff_marks_what_each_rung_is_about():
    def changed_text(name):
        src = rung_diff.rung_source(name)
        return "\n".join(src.lines[n - 1] for n in src.changed)
    assert "CP_ASYNC4" in changed_text("double_buffered") and "CP_ASYNC4" not in changed_text("warptile")
    assert "LDS4(Bs" in changed_text("vectorized") and "acc[TM][TN]" in changed_text("blocktile_2d")
    warptile = rung_diff.rung_source("warptile")
    assert '#include "trace.cuh"' not in {warptile.lines[n - 1] for n in warptile.changed}
    first = rung_diff.rung_source("tiled_guarded")
    assert first.previous is None and not first.changed and not first.removed
    assert first.header.startswith("tiled_guarded.cu: shared-memory tiling")


def test_the_listing_marks_the_changed_lines_and_the_removed_ones():
    src = rung_diff.rung_source("blocktile_1d")
    page = ladder_figures.source_html(src)
    code = [n for n in src.changed if n > src.header_lines]
    assert page.count('class="changed"') == len(code)
    assert f'data-line="{code[0]}" class="changed"' in page
    assert f"{sum(n for line, n in src.removed.items() if line > src.header_lines)} lines of tiled_guarded.cu removed" \
        in page
    assert "&lt;" in ladder_figures.source_html(rung_diff.rung_source("vectorized"))     # the code is escaped


# --------------------------------------------------------------------------- what one block's trace counts

def _block_records(trace) -> pd.DataFrame:
    r = trace.to_dataframe().astype({"space": str, "op": str, "array": str})
    r["bytes"] = [trace.sites[s].site.bytes for s in r["site"]]
    return r


@pytest.mark.parametrize("name", registry.LADDER_RUNGS)
def test_counts_are_the_records_of_the_block(counted, name):
    trace, c = counted[name]
    r = _block_records(trace)
    loads = r[r["op"] == "load"]
    assert c.global_loads == (loads["space"] == "global").sum()
    assert c.shared_loads == (loads["space"] == "shared").sum()
    assert c.global_bytes == loads[loads["space"] == "global"]["bytes"].sum()
    assert c.shared_bytes == loads[loads["space"] == "shared"]["bytes"].sum()
    stores = r[(r["array"] == "C") & (r["op"] == "store")]
    written = {o // 4 + j for o, b in zip(stores["offset"], stores["bytes"]) for j in range(b // 4)}
    assert c.outputs == len(written) and c.fmas == len(written) * SIZE
    # Sectors per request: the distinct 32-byte sectors of each warp-level global load.
    per_request = loads[loads["space"] == "global"].groupby(["warp", "site", "ordinal"])["offset"].apply(
        lambda o: len(set(o // 32)))
    assert c.global_requests == len(per_request) and c.global_sectors == per_request.sum()


def test_loads_per_fma_follow_each_rungs_arithmetic(counted):
    """Per K step, a thread of each rung loads from shared memory what its parameters say, for
    what its outputs multiply."""
    got = {name: Fraction(c.shared_loads, c.fmas) for name, (_, c) in counted.items()}
    p = {name: registry.get(name).default_params() for name in registry.LADDER_RUNGS}
    assert got["tiled_guarded"] == 2                                        # a and b per FMA
    tm = p["blocktile_1d"]["TM"]
    assert got["blocktile_1d"] == Fraction(1 + tm, tm)                      # one b for TM outputs
    q = p["blocktile_2d"]
    assert got["blocktile_2d"] == Fraction(q["TM"] + q["TN"], q["TM"] * q["TN"])   # the outer product
    q = p["vectorized"]
    assert got["vectorized"] == Fraction(q["TM"] + q["TN"], 4 * q["TM"] * q["TN"])  # as float4s
    for name in [n for n in registry.LADDER_RUNGS if "WM" in p[n]]:   # a lane's column of A and row of B, per sub-tile
        q = p[name]
        down, across = q["WM"] * q["WN"] // (32 * q["TN"] * q["WNITER"]), q["WNITER"] * q["TN"]
        assert got[name] == Fraction(down + across, 4 * down * across), name
    # Global: each element of the block's A and B tiles once per tile, float4 from vectorized on.
    for name in ("blocktile_1d", "blocktile_2d", "vectorized"):
        q, vec = p[name], 4 if name == "vectorized" else 1
        assert Fraction(counted[name][1].global_loads, counted[name][1].fmas) == \
            Fraction(q["BM"] + q["BN"], vec * q["BM"] * q["BN"])


# Shapes that teach banks, whatever the tuned defaults are: 8 x 8 per thread puts blocktile_2d's and
# vectorized's lanes TN = 8 words apart in Bs; warptile at its defaults reads Bs in consecutive float4s.
WIDE_TN = {"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8}


def test_bank_conflicts_across_the_rungs(counted):
    """blocktile_2d at 8 x 8: As 2-way (two rows of lanes, BK words apart, one bank), Bs 4-way (lanes
    8 words apart): 1 + 3 conflicts over two loads; vectorized: Bs's float4s still 8 words apart,
    8 wavefronts of a 4-wavefront ideal, while its As loads are one float4 for all (a broadcast);
    warptile and double_buffered read Bs in consecutive 16-byte pieces: no conflict."""
    def conflicts(name):
        t = tracer.trace(name, make_problem(SIZE, SIZE, SIZE, params=WIDE_TN), [(0, 0)], "cpu")
        return rung_counts.rung_counts(t, analysis.warp_instructions(t), (0, 0)).conflicts_per_request
    assert conflicts("blocktile_2d") == (1 + 3) / 2 and conflicts("vectorized") == (0 + 4) / 2
    assert counted["warptile"][1].conflicts_per_request == counted["double_buffered"][1].conflicts_per_request == 0
    assert counted["vectorized"][1].sectors_per_request == 16 == counted["vectorized"][1].ideal_sectors_per_request
    assert counted["blocktile_2d"][1].sectors_per_request == 4


def test_double_buffered_loads_the_next_tile_while_it_multiplies(counted):
    """Checked on the records: in interval e >= 1 (e barriers passed), double_buffered's global loads
    are of tile e (k // BK), its copies of commit group e, and its shared loads multiply tile e - 1;
    warptile's intervals are either loads or shared loads, never both."""
    trace, c = counted["double_buffered"]
    bk, tiles = c.params["BK"], SIZE // c.params["BK"]
    r = _block_records(trace)
    r = r[r["warp"] == 0]
    g = r[(r["space"] == "global") & (r["op"] == "load")]
    k = np.where(g["array"] == "A", g["col"], g["row"])
    assert (k // bk == g["epoch"]).all()
    copies = g[[trace.sites[s].site.copy for s in g["site"]]]
    assert len(copies) and (copies["group"] == copies["epoch"]).all()
    multiply = sorted(set(r[(r["space"] == "shared") & (r["op"] == "load")]["epoch"]))
    assert multiply == list(range(1, tiles + 1))
    line = rung_counts.timeline(c, 0)
    both = line.intervals.pivot(index="epoch", columns="what", values="tile").dropna()
    assert list(both.index) == list(range(1, min(tiles, rung_counts.TIMELINE_INTERVALS)))
    assert (both[rung_counts.COPY] == both[rung_counts.MULTIPLY] + 1).all()
    assert line.overlap == tiles - 1 and line.multiplies == tiles
    assert rung_counts.timeline(counted["warptile"][1], 0).overlap == 0


def _intervals_by_groups(trace, global_loads, shared_loads) -> pd.DataFrame:
    """rung_counts.intervals by its definition, with pandas, interval by interval."""
    r = trace.columns
    first = global_loads["first"]
    k = np.where(r["array"][first] == trace.arrays.index("A"), r["col"][first], r["row"][first]).astype(np.int64)
    copy = np.array([ts.site.copy for ts in trace.sites], dtype=bool)[global_loads["site"]]
    loads = pd.DataFrame({"warp": global_loads["warp"], "epoch": global_loads["epoch"],
                          "tile": k // rung_counts.k_step(trace.problem.params),
                          "group": np.where(copy, r["group"][first].astype(np.int64), -1)})
    rows = []
    for (warp, epoch), part in loads.groupby(["warp", "epoch"]):
        rows.append({"warp": int(warp), "epoch": int(epoch), "what": rung_counts.COPY, "instructions": len(part),
                     "tile": int(part["tile"].max()), "tiles": sorted(set(part["tile"].tolist())),
                     "groups": sorted(int(g) for g in set(part["group"]) - {-1})})
    newest = loads.groupby("epoch")["tile"].max()
    shared = pd.DataFrame({"warp": shared_loads["warp"], "epoch": shared_loads["epoch"]})
    for (warp, epoch), part in shared.groupby(["warp", "epoch"]):
        before = newest[newest.index < epoch]
        rows.append({"warp": int(warp), "epoch": int(epoch), "what": rung_counts.MULTIPLY, "instructions": len(part),
                     "tile": int(before.max()) if len(before) else -1, "tiles": [], "groups": []})
    out = pd.DataFrame(rows, columns=["warp", "epoch", "what", "instructions", "tile", "tiles", "groups"])
    return out.sort_values(["warp", "epoch", "what"], ignore_index=True)


@pytest.mark.parametrize("name", registry.LADDER_RUNGS)
def test_intervals_are_those_of_each_warp_and_epoch(counted, name):
    trace, c = counted[name]
    inst = analysis.warp_instructions(trace)
    space_op = [(ts.site.space, ts.site.op) for ts in trace.sites]
    global_loads = inst[[space_op[s] == ("global", "load") for s in inst["site"]]]
    shared_loads = inst[[space_op[s] == ("shared", "load") for s in inst["site"]]]
    every = _intervals_by_groups(trace, global_loads, shared_loads)
    # The counts keep each warp's first intervals (what the timeline draws) and the totals of all.
    expected = every[every["epoch"] < rung_counts.TIMELINE_INTERVALS].reset_index(drop=True)
    pd.testing.assert_frame_equal(c.intervals, expected)
    assert c.intervals["tiles"].tolist() == expected["tiles"].tolist()
    assert c.intervals["groups"].tolist() == expected["groups"].tolist()
    for warp, rows in every.groupby("warp"):
        kinds = rows.groupby("epoch")["what"].nunique()
        assert c.interval_totals[warp] == ((kinds == 2).sum(), (rows["what"] == rung_counts.MULTIPLY).sum())
    # Without loads of one kind, or of either: the same rows, and the same empty table.
    pd.testing.assert_frame_equal(rung_counts.intervals(trace, global_loads[:0], shared_loads),
                                  _intervals_by_groups(trace, global_loads[:0], shared_loads))
    pd.testing.assert_frame_equal(rung_counts.intervals(trace, global_loads, shared_loads[:0]),
                                  _intervals_by_groups(trace, global_loads, shared_loads[:0]))
    pd.testing.assert_frame_equal(rung_counts.intervals(trace, global_loads[:0], shared_loads[:0]),
                                  _intervals_by_groups(trace, global_loads[:0], shared_loads[:0]))


def test_a_warp_the_rung_has_not_is_its_last(counted):
    c = counted["warptile"][1]
    last = c.threads // 32 - 1
    line = rung_counts.timeline(c, last + 5)
    assert line.warp == last and set(line.intervals["warp"]) == {last}


def test_the_table_has_a_column_per_rung_and_dashes_where_one_was_not_traced(counted):
    rungs = {name: c for name, (_, c) in counted.items()}
    rungs["blocktile_1d"] = "this trace would hold up to 23,072,768 records, over the cap"
    table = rung_counts.metrics_table(rungs)
    assert list(table.columns) == list(registry.LADDER_RUNGS)
    assert (table["blocktile_1d"] == "—").all()
    assert table.loc["shared loads per FMA", "tiled_guarded"] == "2"
    warptile = Fraction(rungs["warptile"].shared_loads, rungs["warptile"].fmas)
    assert table.loc["shared loads per FMA", "warptile"] == f"{warptile.numerator}/{warptile.denominator}"
    assert table.loc["sectors per global request (ideal)", "vectorized"] == "16 (16)"
    q = registry.get("blocktile_2d").default_params()
    assert table.loc["FMAs per block", "blocktile_2d"] == f"{q['BM'] * q['BN'] * SIZE:,}"


def test_compiled_loads_follow_the_sass_where_nvcc_merged_consecutive_words(counted):
    trace, c = counted["blocktile_2d"]
    bs = next(s.line for s in sources.load("blocktile_2d.cu").sites if s.array == "Bs" and s.op == "load")
    listing = {"available": True, "by_line": {bs: {"LDS.128": 2}}, "note": ""}
    merged = rung_counts.rung_counts(trace, analysis.warp_instructions(trace), (0, 0), listing)
    q = c.params
    assert Fraction(merged.compiled_shared_loads, merged.fmas) == Fraction(q["TM"] + q["TN"] // 4, q["TM"] * q["TN"])
    assert c.compiled_shared_loads is None and c.compiled_why == "no SASS"


# --------------------------------------------------------------------------- measured speed

def _row(kernel: str, gflops: float | None, status: str = "ok", **params) -> dict:
    spec = registry.get(kernel)
    row = {"kernel": kernel, "title": spec.title, "precision": str(spec.precision), "m": 1024, "n": 1024, "k": 1024,
           "params": {**spec.default_params(), **params}, "status": status}
    if gflops is not None:
        row.update(gflops=gflops, intensity=170.0, median_ms=2 * 1024**3 / gflops / 1e6)
    elif status != "ok":
        row["error"] = "relative error 3e-02 over the tolerance 1e-04: not timed"
    return row


TIMED = ("tiled_guarded", "blocktile_2d", "double_buffered")   # what synthetic_export timed; warptile went wrong
ABSENT = [r for r in registry.LADDER_RUNGS if r not in TIMED and r != "warptile"]


def synthetic_export() -> str:
    """A made-up run (test data, never shipped): three rungs timed (TIMED), warptile wrong, the others
    absent (ABSENT), and cuBLAS."""
    rows = [_row("cublas_sgemm", 40000.0), _row("tiled_guarded", 8000.0),
            _row("blocktile_2d", 15000.0, BK=16 if registry.get("blocktile_2d").default_params()["BK"] != 16 else 8),
            _row("blocktile_2d", 20000.0),
            _row("warptile", None, status="wrong result"), _row("double_buffered", 30000.0)]
    prov = {"gpu": "NVIDIA H200", "date": "2027-01-02T03:04:05+00:00", "peaks": {"fp32_gflops": 66908.0,
            "bandwidth_gbs": 4800.0}}
    return json.dumps(schema.to_document(rows, prov))


def test_speeds_take_each_rungs_fastest_row_and_say_which_are_missing():
    df, prov = benchmark.load_document(synthetic_export())
    assert speeds.square_sizes(df, registry.LADDER_RUNGS) == [1024]
    timed = speeds.ladder_speeds(df, 1024)
    assert list(timed.rows["rung"]) == ["tiled_guarded", "blocktile_2d", "double_buffered"]
    best = timed.rows.set_index("rung")
    bk = registry.get("blocktile_2d").default_params()["BK"]
    assert best.loc["blocktile_2d", "gflops"] == 20000 and f"BK={bk}" in best.loc["blocktile_2d", "params"]
    assert best.loc["double_buffered", "pct_cublas"] == pytest.approx(75)
    assert timed.cublas == 40000
    assert timed.missing == ABSENT and "blocktile_1d" in ABSENT
    assert "relative error" in timed.failed["warptile"]
    assert speeds.run_label(prov, live=False) == "recorded NVIDIA H200 run of 2027-01-02"

    fig = ladder_figures.speed_figure(timed, "blocktile_2d", speeds.run_label(prov, False))
    bars = fig.data[0]
    assert list(bars.x) == list(registry.LADDER_RUNGS) and bars.y[2] == 20000 and bars.y[1] == 0
    notes = {a.x: a.text for a in fig.layout.annotations if a.text in ("no row", "not timed")}
    assert notes == {**{r: "no row" for r in ABSENT}, "warptile": "not timed"}
    assert "recorded NVIDIA H200 run of 2027-01-02" in fig.layout.title.text


def test_the_table_never_writes_a_power_of_ten():
    """At 1^3 a block's table read 1.393e+05, 4.915e+04 and 3.59e-06 beside 1/32, and 0.00391 outputs per thread."""
    from engine.metrics.rung_counts import _num
    assert [_num(v) for v in (139300.5, 49152.2, 3.59e-06, 1 / 256, 16, 2.5, 0.0123, float("nan"), 1e-300)] == [
        "139,300", "49,152", "≈1/278,552", "1/256", "16", "2.5", "0.0123", "—", "0"]
    # the table itself, at 1^3: a block of one output (its loads per FMA are whole numbers or 4-digit counts)
    counts = {}
    for name in ("tiled_guarded", "blocktile_2d", "warptile"):
        t = tracer.trace(name, make_problem(1, 1, 1, block=registry.get(name).default_block), [(0, 0)], "cpu")
        counts[name] = rung_counts.rung_counts(t, analysis.warp_instructions(t), (0, 0))
    table = rung_counts.metrics_table(counts)
    assert not table.map(lambda v: bool(re.search(r"\de[+-]\d", str(v)))).any().any(), table
    # one style along a row: TILE 8's 64 threads had read 0.0156 outputs each beside the others' 1/256
    t = tracer.trace("tiled_guarded", make_problem(1, 1, 1, params={"TILE": 8}), [(0, 0)], "cpu")
    few = rung_counts.metrics_table({**counts, "tiled_guarded": rung_counts.rung_counts(t, analysis.warp_instructions(t), (0, 0))})
    assert few.loc["outputs per thread"].tolist() == ["1/64", "1/128", "1/256"], few
    # and a 1/N that is rounded says so: blocktile_1d's 81/278,528 FLOP per shared byte at 9x9x1 had read 1/3,439
    t = tracer.trace("blocktile_1d", make_problem(9, 9, 1, block=registry.get("blocktile_1d").default_block), [(0, 0)], "cpu")
    nine = rung_counts.metrics_table({"blocktile_1d": rung_counts.rung_counts(t, analysis.warp_instructions(t), (0, 0))})
    assert nine.loc["FLOP per shared byte"].tolist() == ["≈1/3,439"], nine
    step, _ = rung_counts.step(counts["tiled_guarded"], counts["blocktile_2d"])   # the step's table too (7.373e+04)
    assert not step.map(lambda v: bool(re.search(r"\de[+-]\d", str(v)))).any().any(), step
