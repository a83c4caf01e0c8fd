"""Where mma_pipelined's warps wait: the parsing of Nsight Compute's pages (tests/benchmarks/mma_stalls.py),
the recorded run (engine/bench/recorded/stalls/), its words (engine/metrics/stalls.py) and the Tensor
cores page that draws it."""
import json

import pytest

from engine.bench import benchmark
from engine.errors import EngineError
from engine.metrics import stalls
from engine.plots import style, tensor_figures
from tests.benchmarks import mma_stalls
from tests.test_pages import open_page

RAW = ('"ID","gpu__time_duration.sum","sm__cycles_elapsed.avg.per_second",'
       '"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active","smsp__inst_executed.sum",'
       '"launch__registers_per_thread","smsp__average_warp_latency_per_inst_issued.ratio",'
       '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
       '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"\n'
       '"","msecond","Mhz","%","inst","register/thread","cycle","",""\n'
       '"0","0.30","1,750","75.0","80,801,792","255","6.5","0.25","0.70"\n')
SOURCE = ('"Kernel Name","mma_pipelined",\n'
          '"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_long_sb","stall_barrier",'
          '"stall_long_sb (Not Issued)"\n'
          '"0x10","LDGSTS.E.BYPASS.LTC128B.128 desc[UR12][R140.64], !P3, [R132+0x10000]","5","10","0","0","0"\n'
          '"0x20","LDGSTS.E.BYPASS.LTC128B.128 desc[UR12][R146.64], !P0, [R132+0x17000]","7","10","0","0","0"\n'
          '"0x30","HMMA.16816.F32 R4, R164, R168, R4","40","80","0","0","0"\n'
          '"0x40","IMAD.U32 R146, RZ, RZ, UR7","30","10","29","0","29"\n'
          '"0x50","LDSM.16.M88.4 R8, [R207]","20","10","0","19","0"\n')


def test_the_raw_page_is_read_in_its_units():
    row = mma_stalls.raw_rows(RAW)[0]
    s = mma_stalls.summary(row)
    assert s["duration_us"] == pytest.approx(300.0) and s["sm_ghz"] == pytest.approx(1.75)
    assert s["instructions"] == 80801792 and s["registers"] == 255
    assert s["stalls"] == {"barrier": 0.25, "long_scoreboard": 0.70}


def test_an_instruction_waiting_on_the_long_scoreboard_finds_the_copy_that_reads_its_register():
    rows = mma_stalls.source_rows(SOURCE)
    top = mma_stalls.hot_instructions(rows, top=3)
    assert [t["sass"].split()[0] for t in top] == ["HMMA.16816.F32", "IMAD.U32", "LDSM.16.M88.4"]
    assert top[0]["share"] == pytest.approx(40 / 102)
    imad = top[1]
    # R146 is the second copy's global address (R146.64), not the first's: the nearest copy that reads it.
    assert imad["copy_reading"].endswith("[R132+0x17000]") and imad["reasons"] == {"long_sb": 29}
    assert "copy_reading" not in top[2]   # a barrier wait is not a register's


@pytest.mark.parametrize("sass, regs", [("IMAD.U32 R132, RZ, RZ, UR7", {132}), ("LDC.64 R136, c[0x0][0x218]", {136, 137}),
                                        ("LDSM.16.M88.4 R132, [R207]", {132, 133, 134, 135}),
                                        ("@!P4 IADD3 R5, R2, 0x1, RZ", {5}),
                                        ("LDGSTS.E.BYPASS.128 [R4], desc[UR6][R2.64]", set()),
                                        ("STS.128 [R238+0x15000], R140", set())])
def test_what_an_instruction_writes(sass, regs):
    assert mma_stalls.written(sass) == regs


def _shipped() -> stalls.Stalls:
    return stalls.load(benchmark.stalls_run())


def test_the_recorded_run_shows_the_copies_in_the_long_scoreboard_and_the_barrier():
    s = _shipped()
    mine, none = (next(k for k in s.kernels if k["name"] == n) for n in ("as written", "no copies"))
    # The reasons add up to the cycles between two issued instructions (Nsight Compute's own identity).
    for k in s.kernels:
        assert sum(k["stalls"].values()) == pytest.approx(k["cycles_per_issue"], rel=0.02)
    assert mine["stalls"]["long_scoreboard"] > none["stalls"]["long_scoreboard"]
    assert mine["stalls"]["barrier"] > 5 * none["stalls"]["barrier"]
    assert mine["hmma_pct"] < none["hmma_pct"] and mine["duration_us"] > none["duration_us"]
    waits = [t for t in mine["top"] if t.get("copy_reading")]
    assert waits and all("LDGSTS" in t["copy_reading"] for t in waits)
    words = stalls.story(s)
    for t in waits:
        assert f"`{t['sass']}`" in words and f"`{t['copy_reading']}`" in words
    assert f"{mine['cycles_per_issue']:.2f} cycles" in words and f"{mine['hmma_pct']:.1f}%" in words
    table = stalls.by_words(s)
    assert list(dict.fromkeys(table["kernel"])) == [k["name"] for k in s.kernels]
    for k in s.kernels:
        assert table[table["kernel"] == k["name"]]["cycles"].sum() == pytest.approx(sum(k["stalls"].values()))


def _damaged() -> list[str]:
    """The shipped file spoilt in each way a reviewer found that had raised something else than one line."""
    good = json.loads(benchmark.stalls_run().read_text())

    def spoilt(change) -> str:
        doc = json.loads(json.dumps(good))
        change(doc)
        return json.dumps(doc)
    return ["{", "[]", json.dumps({"format": "something else"}), json.dumps({"format": stalls.FORMAT, "gpu": "G"}),
            spoilt(lambda d: d.update(kernels=[])),
            spoilt(lambda d: d["kernels"].pop(0)),                              # no "as written"
            spoilt(lambda d: d["kernels"][0].update(stalls=[1, 2])),
            spoilt(lambda d: d["kernels"][0].pop("hmma_pct")),
            spoilt(lambda d: d["kernels"][1].update(cycles_per_issue="many")),
            spoilt(lambda d: d["kernels"][0]["top"].append({"sass": "NOP"})),
            spoilt(lambda d: d["kernels"][0]["stalls"].update(wait=None))]


def test_a_damaged_file_is_one_line(tmp_path):
    bad = tmp_path / "h200-2026-11-27.json"
    for text in _damaged():
        bad.write_text(text)
        with pytest.raises(EngineError) as info:
            stalls.load(bad)
        assert "\n" not in str(info.value) and "not a recorded warp-stall run" in str(info.value), text[:80]


def test_an_instruction_that_writes_no_register_is_left_out_of_the_story():
    s = _shipped()
    mine = next(k for k in s.kernels if k["name"] == "as written")
    mine["top"].append({"sass": "BAR.SYNC.DEFER_BLOCKING 0x0", "samples": 9, "share": 0.01, "executed": 1,
                        "reasons": {"long_sb": 9}, "copy_reading": "LDGSTS.E.BYPASS.128 [R4], desc[UR6][R2.64]"})
    assert "BAR.SYNC" not in stalls.story(s)


def test_mma_tmas_long_scoreboard_is_said_to_be_its_mbarrier_waits():
    s = _shipped()
    tma = next(k for k in s.kernels if k["name"] == "mma_tma")
    polls = [t for t in tma["top"] if " BRA " in f" {t['sass']} " and t["reasons"].get("long_sb", 0) > t["samples"] / 2]
    assert polls   # in the shipped H200 run: two branches after the mbarrier's test
    words = stalls.story(s)
    assert f"mma_tma waits on the long scoreboard too ({tma['stalls']['long_scoreboard']:.2f})" in words
    assert f"{sum(t['reasons']['long_sb'] for t in polls):,} of those samples" in words


@pytest.mark.usefixtures("cpu_mode")
def test_the_tensor_page_draws_where_the_warps_wait():
    at = open_page("pages/tensor_cores.py")
    assert not at.exception
    assert any(m.value.startswith("**Where its warps wait.**") for m in at.markdown)
    figures = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    fig = next(f for f in figures if "warps wait" in f["layout"].get("title", {}).get("text", ""))
    bars = {t["name"]: t["x"] for t in fig["data"] if t["type"] == "bar"}
    hover = next(t for t in fig["data"] if t.get("name") == "long scoreboard")
    assert "long_scoreboard" in hover["customdata"][0][0] and "% of the bar" in hover["hovertemplate"]
    s = _shipped()
    labels = fig["data"][0]["y"]
    written = labels.index("mma_pipelined as written")
    mine = next(k for k in s.kernels if k["name"] == "as written")
    assert bars["long scoreboard"][written] == pytest.approx(mine["stalls"]["long_scoreboard"])
    assert bars["barrier"][written] == pytest.approx(mine["stalls"]["barrier"])


def test_every_reason_in_the_stalls_legend_shows_without_a_scrollbar():
    """The legend wrapped at the plot's width, which the kernels' long names as tick labels halved: it
    went one entry a row into a box with a scrollbar, and the last reasons were out of sight. Now the
    names stand over their bars, the plot spans the figure, and the legend has the rows its entries
    take at the figure's narrowest (the sidebar open at 1280 px), with no scrolling."""
    fig = tensor_figures.stalls_figure(_shipped(), "a note")
    names = [d.name for d in fig.data if d.type == "bar"]
    assert len(names) >= 9 and fig.layout.yaxis.showticklabels is False
    assert {a.text for a in fig.layout.annotations} >= set(fig.data[0].y)   # each kernel named over its bar
    legend = fig.layout.legend
    assert legend.yref == "container" and legend.orientation == "h" and legend.maxheight == 1
    font, width = style.PRESENTER.chart, style.PRESENTER.narrowest - 16
    per_row = int(width // (max(len(n) for n in names) * .6 * font + 45))
    rows = -(-len(names) // per_row)
    assert 2 <= rows <= 4 and tensor_figures.legend_rows(names, font, width) == rows
    assert fig.layout.margin.b >= 2 * font + rows * 1.3 * font   # the axis title, then every row
