"""The Ladder page, run with Streamlit's AppTest in CPU mode: what it shows against the engine's own
numbers, its view in the URL, a trace over the record cap, and a benchmark run with rungs missing."""
import json

import pytest

from engine.bench import benchmark, speeds
from engine.kernels import registry, sass
from engine.kernels.problem import make_problem
from engine.metrics import analysis, rung_counts, rung_diff
from engine.tracing import tracer
from tests.test_ladder import ABSENT, synthetic_export
from tests.test_pages import open_page

pytestmark = pytest.mark.usefixtures("cpu_mode")   # tests/conftest.py: the GPU switched off
PAGE = "pages/ladder.py"


def _texts(at) -> str:
    return " ".join(str(e.value) for e in list(at.markdown) + list(at.caption) + list(at.warning) + list(at.info))


def _figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_opens_on_the_first_rung_after_tiling_with_its_diff_and_every_rungs_counts():
    at = open_page(PAGE)
    assert at.subheader[0].value == f"Rung 2 of {len(registry.LADDER_RUNGS)}: 1-D register tiling (TM outputs per thread)"
    src = rung_diff.rung_source("blocktile_1d")
    listing = next(h.proto.body for h in at.get("html") if "ladder-source" in h.proto.body)
    assert listing.count('class="changed"') == len([n for n in src.changed if n > src.header_lines])
    table = at.table[0].value
    assert list(table.columns) == list(registry.LADDER_RUNGS)
    t = tracer.trace("warptile", make_problem(512, 512, 512, block=(16, 16)), [(0, 0)], "cpu")
    listing = sass.memory_instructions("warptile.cu", t.problem.params)
    want = rung_counts.metrics_table({"warptile": rung_counts.rung_counts(t, analysis.warp_instructions(t), (0, 0),
                                                                          listing)})
    assert table["warptile"].tolist() == want["warptile"].tolist()
    assert at.query_params["rung"] == "blocktile_1d" and at.query_params["m"] == "512"


def test_a_link_opens_its_rung_size_and_block_and_double_buffering_shows_its_overlap():
    at = open_page(PAGE, {"rung": "double_buffered", "m": "256", "n": "256", "k": "256", "bx": "1", "warp": "2"})
    assert at.subheader[0].value == f"Rung 6 of {len(registry.LADDER_RUNGS)}: Double-buffered, cp.async"
    assert at.table[0].value.loc["block traced", "double_buffered"] == "(1, 0)"
    fig = next(f for f in _figures(at) if "barrier interval" in json.dumps(f["layout"]))
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles == ["<b>warptile</b>, warp 2: loading and multiplying take turns, never in one interval",
                      "<b>double_buffered</b>, warp 2: 7 of 7 multiply intervals drawn also load the next tile "
                      "(15 of 16 in all)"]
    at.selectbox(key="ladder.rung").set_value("vectorized").run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Rung 4 of") and at.query_params["rung"] == "vectorized"


def test_the_timeline_title_counts_the_intervals_it_draws():
    """At 512³ double_buffered has 32 multiply intervals and the timeline draws the first 8: its title
    said '31 of 32' over 8 drawn. The title counts what is drawn (multiply bars, highlighted intervals),
    and says how many there are in all."""
    import re
    at = open_page(PAGE, {"rung": "double_buffered", "m": "512", "n": "512", "k": "512", "bx": "0", "warp": "2"})
    fig = next(f for f in _figures(at) if "barrier interval" in json.dumps(f["layout"]))
    title = [a["text"] for a in fig["layout"]["annotations"]][1]
    drawn = re.search(r"(\d+) of (\d+) multiply intervals drawn", title)
    assert drawn, title
    bars = next(d for d in fig["data"] if d.get("y") and d["y"][0].startswith("multiply") and d.get("yaxis") == "y2")
    highlighted = [s for s in fig["layout"].get("shapes", []) if s.get("yref", "").startswith("y2")]
    assert (int(drawn[1]), int(drawn[2])) == (len(highlighted), len(bars["y"])), title
    assert "31 of 32 in all" in title, title


@pytest.mark.parametrize("presenter", ["0", "1"])
def test_its_figures_are_in_the_one_style_at_its_sizes(presenter):
    from engine.plots import style
    sizes = style.sizes(presenter == "1")
    intervals, speed = _figures(open_page(PAGE, {"m": "128", "n": "128", "k": "128", "presenter": presenter}))
    for fig in (intervals, speed):
        assert fig["layout"]["font"]["family"] == style.FONT_FAMILY
        assert fig["layout"]["template"]["layout"]["colorway"] == style.PALETTE
    assert intervals["layout"]["font"]["size"] == sizes.base and speed["layout"]["font"]["size"] == sizes.chart


def test_a_trace_over_the_record_cap_is_its_one_line_and_the_rest_is_shown(monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_RECORD_CAP", "300000")
    from pages.lib import cached
    cached.RESULTS.clear()
    try:
        at = open_page(PAGE, {"m": "256", "n": "256", "k": "256"})
    finally:
        cached.RESULTS.clear()
    warnings = [str(w.value) for w in at.warning]
    assert any(w.startswith("blocktile_1d: this trace would hold up to") and "over the cap of 300,000" in w
               for w in warnings), warnings
    table = at.table[0].value
    assert (table["blocktile_1d"] == "—").all() and table.loc["threads per block", "tiled_guarded"] == "256"


def test_speeds_come_from_the_recorded_run_and_say_which_rungs_it_lacks(tmp_path, monkeypatch):
    (tmp_path / "h200-2027-01-02.json").write_text(synthetic_export())
    monkeypatch.setattr(benchmark, "RECORDED", tmp_path)
    at = open_page(PAGE, {"rung": "blocktile_2d", "m": "128", "n": "128", "k": "128"})
    fig = next(f for f in _figures(at) if "Measured GFLOP/s" in f["layout"].get("title", {}).get("text", ""))
    assert "at 1,024³ · recorded NVIDIA H200 run of 2027-01-02" in fig["layout"]["title"]["text"]
    bars = fig["data"][0]
    assert bars["x"] == list(registry.LADDER_RUNGS) and bars["y"][2] == 20000
    text = _texts(at)
    assert f"No row for {', '.join(ABSENT)} at 1,024³ in this run (recorded NVIDIA H200 run of 2027-01-02)" in text
    assert "warptile at 1,024³ was not timed: relative error" in text


def test_the_shipped_recorded_run_is_labelled_and_its_missing_rungs_named():
    at = open_page(PAGE, {"m": "128", "n": "128", "k": "128"})
    fig = next(f for f in _figures(at) if "Measured GFLOP/s" in f["layout"].get("title", {}).get("text", ""))
    df, run = benchmark.load_document(benchmark.recorded_runs(registry.LADDER_RUNGS)[-1].read_text())
    assert f"recorded {run['gpu']} run of {run['date'][:10]}" in fig["layout"]["title"]["text"]
    assert "SM clock not recorded" not in fig["layout"]["title"]["text"]   # the run's rows carry their clock
    missing = speeds.ladder_speeds(df, at.select_slider(key="ladder.128x128x128.timed").value).missing
    assert not missing or f"No row for {', '.join(missing)}" in _texts(at)


def test_a_live_run_is_drawn_and_labelled_live(monkeypatch):
    """The page's live branch, with the GPU's answer stood in for: a status that says there is one,
    and a sweep that yields the rows of the synthetic export at the page's size."""
    from engine.devices.gpu_client import GpuStatus
    from pages.lib import ui
    info = {"name": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132, "sm_clock_mhz": 1980,
            "memory_clock_mhz": 3201, "memory_bus_bits": 6144, "driver": 13000, "cuda": "13.0.0", "l2_bytes": 2**26,
            "total_bytes": 2**37}
    monkeypatch.setattr(ui, "device_status", lambda: GpuStatus(True, "NVIDIA H200", info=info))
    asked = []

    def sweep(kernels, sizes, settings, params=None, blocks=None):
        asked.append((kernels, sizes))
        rows = json.loads(synthetic_export())["results"]
        return iter([{**r, "m": sizes[0][0], "n": sizes[0][1], "k": sizes[0][2]} for r in rows])
    monkeypatch.setattr(benchmark, "sweep", sweep)
    at = open_page(PAGE, {"m": "128", "n": "128", "k": "128"})
    next(b for b in at.button if b.label.startswith("Time every rung")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert asked == [(list(registry.LADDER_RUNGS) + ["cublas_sgemm"], [(128, 128, 128)])]
    fig = next(f for f in _figures(at) if "Measured GFLOP/s" in f["layout"].get("title", {}).get("text", ""))
    assert "at 128³ · live on this NVIDIA H200" in fig["layout"]["title"]["text"]
    assert fig["data"][0]["y"][registry.LADDER_RUNGS.index("double_buffered")] == 30000
    assert f"No row for {', '.join(ABSENT)} at 128³ in this run (live on this NVIDIA H200" in _texts(at)


def test_no_speed_label_stands_on_the_cublas_line():
    """A bar just under cuBLAS (46,669 against 51,331 GFLOP/s at 4096³) had its label above it, struck
    through by cuBLAS's dashed line: a label above a bar ends at least a tenth of the axis below the line."""
    at = open_page(PAGE, {"m": "4096", "n": "4096", "k": "4096"})
    fig = next(f for f in _figures(at) if "Measured GFLOP/s" in json.dumps(f["layout"].get("title")))
    bar = fig["data"][0]
    cublas = next(s["y0"] for s in fig["layout"]["shapes"] if s.get("line", {}).get("dash") == "dash")
    top = fig["layout"]["yaxis"]["range"][1]
    where = bar["textposition"] if isinstance(bar["textposition"], list) else [bar["textposition"]] * len(bar["y"])
    from tests.test_benchmarks_page import _numbers
    ys = _numbers(bar["y"])
    near = [(t, y) for t, y, w in zip(bar["text"], ys, where) if w == "outside" and 0 <= cublas - y < top / 10]
    assert not near, (near, cublas)
    assert any(w == "inside" for w in where)   # the shipped run has such a bar


def test_partial_tiles_point_to_the_bank_conflicts_page_only_for_the_rungs_it_offers():
    """At 300³ the caption sent prefetched's users to the Bank conflicts page, which does not offer it."""
    from engine.kernels import registry
    offered = registry.showing("bank_conflicts")
    for rung in ("prefetched", "warptile"):
        at = open_page("pages/ladder.py", {"rung": rung, "m": "300", "n": "300", "k": "300"})
        said = next(c.value for c in at.caption if c.value.startswith("Beside Nsight Compute: at 300"))
        assert ("the Bank conflicts page compares whole kernels" in said) == (rung in offered), said
        assert "multiples of 256" in said
    assert "warptile" in offered and "prefetched" not in offered


def test_the_step_sentence_says_when_the_speeds_are_of_other_parameters_than_the_counts():
    """With prefetched at BK 8 the sentence compared the recorded run's BK 16 speed with BK 8's counts,
    unsaid; at the defaults the run timed what is counted, and nothing is added."""
    def said(params):
        at = open_page("pages/ladder.py", params)
        return next(m.value for m in at.markdown if m.value.startswith("**From double_buffered to prefetched**"))
    assert "the run did not time the choice counted" not in said({"rung": "prefetched"})
    chosen = said({"rung": "prefetched", "BK": "8"})
    assert "The speeds are of the parameters the run timed (prefetched with " in chosen and "BK 16" in chosen
    assert "the run did not time the choice counted" in chosen


def test_the_speeds_are_timed_at_the_size_counted_where_the_run_has_it_and_no_verdict_joins_two_sizes():
    """The 'Timed at' slider stayed at 8,192³ whatever was counted, and at 1³ the step's verdict read
    'None of the counted costs per FMA went down: the gain comes from what is not counted here'."""
    def step(params):
        at = open_page(PAGE, {"rung": "prefetched", **params})
        said = next(m.value for m in at.markdown if m.value.startswith("**From double_buffered to prefetched**"))
        return at, said
    at, said = step({"m": "512", "n": "512", "k": "512"})
    assert at.select_slider(key="ladder.512x512x512.timed").value == 512 and "(speeds at 512³," in said
    assert "without a verdict" not in said
    at, said = step({"m": "1", "n": "1", "k": "1"})
    sizes = at.select_slider(key="ladder.1x1x1.timed").options
    assert at.select_slider(key="ladder.1x1x1.timed").value == int(sizes[0])   # the nearest timed: the smallest
    assert "without a verdict" in said and "went down" not in said and "pays more" not in said


def test_the_timed_size_follows_a_size_changed_in_the_session_and_is_kept_across_pages():
    """Opened at 512^3 (its ?timed=512 in the URL), then counted at 4,096^3: the slider stayed at 512, the
    link's value read again for the new size; and a size chosen on the slider was lost on coming back."""
    at = open_page(PAGE, {"rung": "prefetched", "m": "512", "n": "512", "k": "512"})
    assert at.select_slider(key="ladder.512x512x512.timed").value == 512
    for name in "mnk":
        at.number_input(key=f"ladder.{name}").set_value(4096)
    at.run()
    assert at.select_slider(key="ladder.4096x4096x4096.timed").value == 4096
    at.select_slider(key="ladder.4096x4096x4096.timed").set_value(2048).run()
    at.switch_page("pages/coalescing.py").run()
    at.switch_page("pages/ladder.py").run()
    assert at.select_slider(key="ladder.4096x4096x4096.timed").value == 2048


def test_the_barrier_timeline_says_it_draws_only_the_first_tiles_of_a_longer_loop():
    """At K = 512 the timeline drew tiles 0 to 3 of 32 and said nothing: it read as the whole loop."""
    from tests.test_pages import open_page

    def said(at):
        return next(str(c.value) for c in at.caption if str(c.value).startswith("Each column is one barrier interval"))
    assert said(open_page("pages/ladder.py", {"k": "512"})).endswith(
        "Drawn: the first 8 barrier intervals, tiles 0–3 of tiled_guarded's 32 and tiles 0–3 of blocktile_1d's 16.")
    assert "Drawn:" not in said(open_page("pages/ladder.py", {"k": "64"}))
