"""The pages, run with Streamlit's AppTest in CPU mode (tests/conftest.py's cpu_mode, on a GPU
machine too): assertions on what the figures show."""
import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from engine.kernels import registry
from pages.lib import cached
from tests import browser

APP = __import__("pathlib").Path(__file__).resolve().parent.parent / "app.py"

pytestmark = pytest.mark.usefixtures("cpu_mode")
TIMEOUT = 120


def open_page(page: str | None = None, params: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def figures(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def notes(fig: dict, frame: int = 0) -> str:
    """The headlines a frame shows: text traces the frame updates (engine/plots/animation.py)."""
    return " ".join(t for d in fig["frames"][frame]["data"] if d.get("text") for t in d["text"] if isinstance(t, str))


def test_home_shows_mode_and_catalog():
    at = open_page()
    text = " ".join(str(m.value) for m in at.markdown) + " ".join(str(i.value) for i in list(at.info) + list(at.success))
    assert "CPU mode" in text and "MATMUL_EXPLORER_GPU=0" in text and "GPU mode" not in text
    df = at.table[0].value
    assert list(df.index) == [k.name for k in registry.CATALOG]


def test_coalescing_compares_seed000_mapping_with_the_coalesced_one():
    at = open_page("pages/coalescing.py", {"m": "32", "n": "32", "k": "16", "block": "16x16"})
    fig = figures(at)[0]
    first = notes(fig, 0)
    assert "naive_x_rows" in first and "16 sectors" in first   # 16 rows of A, one sector each
    assert "naive_x_cols" in first and "2 sectors" in first    # 2 rows x 16 floats
    assert len(fig["frames"]) == 2 * 16 + 1                    # A and B loads per k, then the C store
    # Frame 0, first panel, A picture: lanes on 16 consecutive rows of column 0.
    lanes = next(d for d in fig["frames"][0]["data"] if d.get("marker", {}).get("color"))
    assert sorted(set(lanes["y"])) == list(range(16)) and set(lanes["x"]) == {0}
    rows = at.dataframe[0].value
    a = rows[(rows["kernel"] == "naive_x_rows") & (rows["access"] == "load A")].iloc[0]
    assert a["sectors per request"] == 16
    assert at.query_params["kernel"] == "naive_x_rows"


def test_coalescing_counts_the_sectors_that_would_do_from_the_bytes_the_warp_touches():
    """In a 16x16 block a warp's 32 lanes read 16 distinct floats of A (two rows of threads, one column of
    A): 64 bytes, which 2 sectors hold; it said '(4 would do)', counting 4 bytes a lane."""
    at = open_page("pages/coalescing.py", {"m": "32", "n": "32", "k": "16", "block": "16x16"})
    first = notes(figures(at)[0], 0)
    assert "uncoalesced: its 64 B would fit in 2 sectors" in first, first


def test_the_whole_kernel_table_names_the_launch_each_site_is_in():
    """naive_transposed_b runs transpose_b first: that launch's load B and store BT (lines 15 and 16 of
    transpose_b.cu) were listed as naive_transposed_b's, whose lines 15 and 16 hold no access."""
    at = open_page("pages/coalescing.py", {"kernel": "naive_transposed_b", "compare": "(none)", "block": "32x32",
                                           "m": "32", "n": "32", "k": "16"})
    rows = at.dataframe[0].value
    named = {(r.kernel, r.line, r.access) for r in rows.itertuples()}
    assert {("naive_transposed_b, launch transpose_b", 15, "load B"),
            ("naive_transposed_b, launch transpose_b", 16, "store BT"),
            ("naive_transposed_b", 20, "load BT")} <= named, named


def test_coalescing_follows_its_controls_and_url():
    at = open_page("pages/coalescing.py", {"kernel": "naive_transposed_b", "compare": "(none)", "block": "32x32",
                                           "m": "32", "n": "32", "k": "8"})
    fig = figures(at)[0]
    assert "32 sectors" in notes(fig, 1)          # BT read: one sector per lane
    at.selectbox[0].set_value("naive_x_cols").run()
    assert not at.exception
    assert "naive_x_cols" in notes(figures(at)[0], 0)
    assert at.query_params["kernel"] == "naive_x_cols"


def test_tile_phases_animate_loads_and_zero_filled_edges():
    at = open_page("pages/tile_phases.py", {"m": "40", "n": "40", "k": "40", "TILE": "16", "bx": "2", "by": "2"})
    fig = figures(at)[0]
    assert len(fig["frames"]) == 2 * 3                         # 3 phases, load + compute each
    red = [i for i, d in enumerate(fig["data"]) if d.get("line", {}).get("dash") == "dot"]   # the overhang traces
    first = dict(zip(fig["frames"][0]["traces"], fig["frames"][0]["data"]))
    assert red and any(first[i]["x"] for i in red)              # zero-filled overhang drawn in phase 1
    assert "stores 256 zeros" in notes(fig, 0)
    bars = figures(at)[1]["data"][0]["y"]
    assert bars[0] == 2 * 40 * 40 * 40 and bars[1] < bars[0] / 10
    # The C tile fills with partial sums in the compute frames only: 8x8 elements of C at block (2, 2).
    sums = lambda f: next(d for d in fig["frames"][f]["data"] if "marker" in d)["marker"]["color"]  # noqa: E731
    assert sums(0) == [] and len(sums(1)) == 8 * 8 and all(v > 0 for v in sums(1))


def test_bank_conflicts_vanish_with_padding():
    at = open_page("pages/bank_conflicts.py", {"TILE": "32", "PAD": "0", "m": "32", "n": "32", "k": "32"})
    assert "32-way" in notes(figures(at)[0], 0)
    at.selectbox(key="bank_conflicts.shared_bank_conflicts.PAD").set_value(1).run()
    assert not at.exception
    assert "1-way" in notes(figures(at)[0], 0)
    assert at.query_params["PAD"] == "1"


def test_bank_conflicts_reaches_every_shared_load_of_a_long_kernel():
    """At 128^3 warp 0 issues 256 shared loads: the animation stopped at 160 with no way to the others,
    and its headline ('shared load 160 of 256') did not say why."""
    at = open_page("pages/bank_conflicts.py", {"k": "128"})
    fig = figures(at)[0]
    assert len(fig["frames"]) == 160 and "shared load 1 of 256 (animation: 1–160)" in notes(fig, 0), notes(fig, 0)
    at.number_input(key="bank_conflicts.from").set_value(161).run()
    fig = figures(at)[0]
    assert len(fig["frames"]) == 96 and "shared load 161 of 256 (animation: 161–256)" in notes(fig, 0), notes(fig, 0)
    assert "shared load 256 of 256" in notes(fig, 95) and at.query_params["from"] == "161"
    # a link to a load past the first window opens the window that holds it
    at = open_page("pages/bank_conflicts.py", {"k": "128", "step": "200"})
    assert at.number_input(key="bank_conflicts.from").value == 161
    assert not at.warning and not at.error


def test_bank_conflicts_histogram_has_both_views_when_nvcc_merges_loads():
    from engine.kernels import sass
    at = open_page("pages/bank_conflicts.py", {"TILE": "16", "PAD": "0", "m": "32", "n": "32", "k": "32"})
    hist = figures(at)[1]
    counts = dict(zip(map(str, hist["data"][0]["x"]), hist["data"][0]["y"]))
    assert counts["8"] > 0 and counts["1"] > 0                # tile_A 8-way, tile_B broadcast
    if sass.nvdisasm():
        assert len(hist["data"]) == 2                          # as compiled too
        assert hist["data"][1]["name"] == "as compiled (nvcc's merges counted)"


def test_bank_conflicts_histogram_counts_the_whole_kernel():
    """The histogram sits under "The whole kernel" beside its table: it counts every block's shared
    loads, as the table does, not only those of the block the animation shows (4 blocks here)."""
    at = open_page("pages/bank_conflicts.py", {"TILE": "16", "PAD": "0", "m": "32", "n": "32", "k": "32"})
    hist, table = figures(at)[1], at.dataframe[0].value
    loads = table[table["access"].str.startswith("load")]
    assert sum(hist["data"][0]["y"]) == loads["requests"].sum() == 4 * 8 * 2 * 2 * 16   # blocks, warps, phases, arrays, p
    if len(hist["data"]) == 2:
        assert sum(hist["data"][1]["y"]) == loads["as compiled: instructions"].sum()


def test_bank_conflicts_says_when_the_sass_listing_failed(failing_nvcc):
    """A failing nvcc is one line on the page (the counts as written still shown), never an error
    that stops the page, nor "SASS matches the source"."""
    from tests.conftest import FAILING_NVCC
    cached.RESULTS.clear()
    try:
        at = open_page("pages/bank_conflicts.py", {"TILE": "16", "PAD": "0", "m": "32", "n": "32", "k": "32"})
    finally:
        cached.RESULTS.clear()
    assert not at.error, [e.value for e in at.error]
    captions = [str(c.value) for c in at.caption]
    assert f"SASS listing unavailable: nvcc on shared_bank_conflicts.cu failed: {FAILING_NVCC}" in captions
    assert len(figures(at)[1]["data"]) == 1      # the histogram as written only


def test_presenter_mode_makes_text_bigger():
    small = figures(open_page("pages/bank_conflicts.py", {"m": "32", "n": "32", "k": "32"}))[0]["layout"]["font"]["size"]
    big = figures(open_page("pages/bank_conflicts.py", {"m": "32", "n": "32", "k": "32", "presenter": "1"}))[0]["layout"]["font"]["size"]
    assert big > small


def test_presenter_mode_draws_small_tables_as_static_tables_a_room_can_read():
    """The grid (st.dataframe) draws on a canvas at 14 px, which presenter mode's styles never reached."""
    args = {"m": "32", "n": "32", "k": "16", "block": "16x16"}
    normal, shown = (open_page("pages/coalescing.py", {**args, "presenter": p}) for p in ("0", "1"))
    assert any("sectors" in d.value.columns for d in normal.dataframe)
    assert not any("sectors" in t.value.columns for t in normal.table)
    assert any("sectors" in t.value.columns for t in shown.table)
    assert not any("sectors" in d.value.columns for d in shown.dataframe)


@pytest.mark.usefixtures("cpu_mode")
def test_presenter_mode_keeps_the_every_column_table_and_long_tables_as_grids_and_draws_the_sweep_tab():
    """A static table of every column ran past the screen's edge (the expander's table scrolls sideways, a
    grid's way); the autotuning tab's table had been drawn as a grid outside ui.table."""
    at = open_page("pages/ladder.py", {"presenter": "1"})
    assert any("why" in d.value.columns and "parameters" in d.value.columns for d in at.dataframe)   # every column
    assert any("why" in t.value.columns and "parameters" not in t.value.columns for t in at.table)   # the lead ones
    bench = open_page("pages/benchmarks.py", {"presenter": "1"})
    tabs = [t for t in bench.table if "configuration" in t.value.columns]
    assert tabs and all(len(t.value) <= 40 for t in tabs)
    assert all(len(d.value) > 40 for d in bench.dataframe if "configuration" in d.value.columns)


def _presenter_table():   # an AppTest script: its source is run on its own
    import pandas as pd
    import streamlit as st

    from pages.lib import ui
    st.session_state["presenter_mode"] = True
    number = st.column_config.NumberColumn
    ui.table({"GPU": ["![x](http://example.com/x.png)"], "GFLOP/s": [12345.6], "error": [2.4e-5],
              "median (ms)": [0.12345], "sectors": [16384], "ok": [False], "note": pd.Series([pd.NA], dtype=object),
              "time": [2.345], "share": [0.5], "secret": [1], "n": [3.9]}, hide_index=True,
             column_config={"GFLOP/s": number("GFLOP/s", format="%,.0f"), "time": number("time", format="%.1f ms"),
                            "share": number("share", format="percent"),   # a named format: the default, not an error
                            "secret": None, "n": number("count", format="%d")})
    ui.table({"n": list(range(ui.PRESENTER_ROWS + 1))})   # longer than a screen: stays a scrolling grid


def test_a_presenter_table_shows_the_grids_formats_and_text_as_itself():
    """Formats the grid takes (printf with text around it, Streamlit's named ones) had raised or been ignored;
    a hidden column shown, a label not; NA in a text column shown as "<NA>"."""
    import pyarrow as pa
    at = AppTest.from_function(_presenter_table).run()
    assert not at.exception and len(at.table) == 1 and len(at.dataframe) == 1
    shown = pa.ipc.open_stream(at.table[0].proto.arrow_data.styler.display_values).read_pandas()
    row = shown.iloc[0].rename(lambda c: c.replace("\\", ""))
    assert row["GFLOP/s"] == "12,346" and row["error"] == "2.4e-05" and row["median (ms)"] == "0.1235"
    assert row["sectors"] == "16384"   # as the grid shows a count with no format: no thousands separator
    assert row["time"] == "2.3 ms" and row["share"] == "0.5" and row["count"] == "3"   # %d truncates, as the grid's does
    assert row["ok"] == "✗" and row["note"] == ""
    assert "secret" not in shown.columns and "1" not in set(row)
    # A static table's cells are Markdown: an uploaded GPU name must not become an image every screen fetches.
    assert row["GPU"].startswith("\\!\\[x\\]") and "](" not in row["GPU"]
    assert "count" in shown.columns and "n" not in shown.columns   # the grid's label for column n
    assert "GFLOP/s" not in shown.columns and "GFLOP\\/s" in shown.columns   # headers are Markdown too: escaped


def test_bad_input_gets_a_message_and_the_page_keeps_running():
    at = open_page("pages/tile_phases.py", {"kernel": "tiled_unguarded", "m": "40", "n": "40", "k": "40"})
    assert any("multiples of TILE" in str(e.value) for e in at.error)
    at.number_input[0].set_value(48).run()
    at.number_input[1].set_value(48).run()
    at.number_input[2].set_value(48).run()
    assert not at.error and figures(at)


# ---------------------------------------------------------------- issue: pages that tell the truth while they move

def test_coalescing_opens_on_the_lesson_32_sectors_against_4():
    at = open_page("pages/coalescing.py")
    fig = figures(at)[0]
    first, second = notes(fig, 0), notes(fig, 1)
    assert "block 32x32" in first
    assert "naive_x_rows" in first and "32 sectors" in first                 # A: one sector per lane
    assert "naive_x_cols" in second and "4 sectors" in second and "load B" in second


def test_pages_do_not_share_controls():
    at = open_page("pages/coalescing.py")
    at.number_input(key="coalescing.m").set_value(7).run()
    at.switch_page("pages/tile_phases.py").run()
    assert not at.exception
    assert at.number_input(key="tile_phases.m").value == 40
    assert at.selectbox(key="tile_phases.kernel").value == "tiled_guarded"
    at.switch_page("pages/bank_conflicts.py").run()
    assert at.selectbox(key="bank_conflicts.kernel").value == "shared_bank_conflicts"
    assert "32-way" in notes(figures(at)[0], 0)
    at.switch_page("pages/coalescing.py").run()
    assert at.number_input(key="coalescing.m").value == 7                    # its own view, kept


def test_frames_change_only_traces_so_everything_moves_without_a_redraw():
    """Plotly leaves layout annotations and titles alone (and drops heatmaps) when frames play
    without a redraw: the headline must be a trace, and such frames must carry no layout."""
    for page, params in (("pages/coalescing.py", {}), ("pages/bank_conflicts.py", {"m": "32", "n": "32", "k": "32"}), ("pages/tile_phases.py", {})):
        fig = figures(open_page(page, params))[0]
        redraw = fig["layout"]["updatemenus"][0]["buttons"][0]["args"][1]["frame"]["redraw"]
        assert redraw is False
        assert all("layout" not in f for f in fig["frames"])
        assert not any(d.get("type") == "heatmap" for d in fig["data"])
        for i in (0, len(fig["frames"]) - 1):
            assert "line " in notes(fig, i)


def test_slider_steps_are_the_frames():
    for page in ("pages/coalescing.py", "pages/tile_phases.py", "pages/bank_conflicts.py"):
        fig = figures(open_page(page, {"m": "32", "n": "32", "k": "32"}))[0]
        names = [f["name"] for f in fig["frames"]]
        assert [s["args"][0][0] for s in fig["layout"]["sliders"][0]["steps"]] == names, page


def test_bank_pad_select_leaves_with_a_kernel_without_padding():
    """A kernel without PAD offers no PAD select, and the link no longer carries one."""
    at = open_page("pages/bank_conflicts.py", {"TILE": "32", "PAD": "1", "m": "32", "n": "32", "k": "32"})
    assert at.selectbox(key="bank_conflicts.shared_bank_conflicts.PAD").value == 1
    at.selectbox(key="bank_conflicts.kernel").set_value("tiled_guarded").run()
    assert not at.exception and not at.error
    assert "PAD" not in [s.label for s in at.selectbox] and "PAD" not in at.query_params
    assert at.query_params["TILE"] == "32"


def test_tile_phase_colour_bar_stays_off_the_source():
    fig = figures(open_page("pages/tile_phases.py"))[0]
    bar = next(d["marker"]["colorbar"] for d in fig["data"] if "colorbar" in d.get("marker", {}))
    code_axis = max((v for k, v in fig["layout"].items() if k.startswith("xaxis")), key=lambda a: a["domain"][0])
    assert bar["orientation"] == "h" and bar["x"] <= code_axis["domain"][0]
    # ...and off the slider under the plot (it lay on the rail's labels), under the pictures
    pictures = min(v["domain"][0] for k, v in fig["layout"].items() if k.startswith("yaxis") and v["domain"][0] > 0)
    assert bar["yanchor"] == "top" and 0 < bar["y"] < pictures


def test_sector_strip_rows_are_128_byte_lines():
    """The strip said 'four to a 128-byte line' while a row of four boxes spanned two lines: now each
    row is one line, each box one of its four 32-byte sectors."""
    import numpy as np

    from engine.metrics.views import Step
    from engine.plots import coalescing_figures as f
    offsets = np.array([0, 64, 4 * 128 + 96, 4 * 128 + 100])        # lines 0 and 4; sectors 0, 2, 19
    step = Step(0, 0, 14, "k", "A", "global", "load", 0, np.arange(4), np.zeros(4, int), np.arange(4), offsets,
                3, 2, 0)
    lines, row_of = f.strip_layout(step)
    assert lines.tolist() == [0, 4] and row_of == {0: 0, 4: 1}
    boxes = f._strip_sectors(step)
    corners = {(x, y) for x, y in zip(boxes["x"], boxes["y"]) if x is not None}
    assert (0 * 9 - .5, 0 - .42) in corners and (2 * 9 - .5, 0 - .42) in corners and (3 * 9 - .5, 1 - .42) in corners
    lanes = f._strip_lanes(step)
    assert lanes["y"] == [0, 0, 1, 1] and lanes["x"] == [0, 18, 27, 28]


def test_bank_conflicts_shows_the_ladders_shared_loads_scalar_and_128_bit():
    """The rungs at their own (tuned) shapes: each headline is the engine's count for that load, as
    n-way for blocktile_2d's scalar loads, in wavefronts against the fewest for the 128-bit ones. A
    rung has no TILE to choose: its own parameters are offered instead."""
    from engine.kernels.problem import make_problem
    from engine.metrics import analysis, views
    from engine.tracing import tracer
    for kernel in ("blocktile_2d", "vectorized", "warptile"):
        at = open_page("pages/bank_conflicts.py", {"kernel": kernel, "m": "64", "n": "64", "k": "64"})
        labels = [s.label for s in at.selectbox]
        assert not at.error and "TILE" not in labels and "BM" in labels
        fig = figures(at)[0]
        t = tracer.trace(kernel, make_problem(64, 64, 64), [(0, 0)], "cpu")
        steps = views.bank_steps(t, analysis.warp_instructions(t), 0, 0, 0, loads_only=True).steps
        for i in (0, len(fig["frames"]) - 1):
            head, step = notes(fig, i), steps[i]
            if kernel == "blocktile_2d":
                assert step.width == 1 and f"<b>{step.wavefronts}-way</b>" in head
            else:
                first = np.full((1, 32), -1, dtype=np.int64)
                first[0, step.lanes] = step.offsets // 4
                group = int(analysis.served_lanes(first, 4, True)[0])
                assert step.width == 4 and f"{group} lanes at a time → <b>{step.wavefronts} wavefronts</b> " \
                    f"(at best {step.ideal})" in head


def test_an_animation_export_takes_its_place_in_line_when_clicked(monkeypatch):
    """The room's exports run in the order they were asked for: the place is taken by the click's
    callback, before the rerun that makes the file (and draws the page) starts."""
    asked = []

    def fake_file(fmt, build, title, progress, number=None):
        asked.append((fmt, number))
        return b"GIF89a"
    monkeypatch.setattr(cached, "animation_file", fake_file)
    at = open_page("pages/tile_phases.py", {"m": "16", "n": "16", "k": "16", "tile": "8"})
    before = cached.LINE.number()
    at.button(key="animation-gif").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(asked) == 1 and asked[0][0] == "gif"
    assert isinstance(asked[0][1], int) and asked[0][1] > before


@pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
@pytest.mark.parametrize("fmt", ["gif", "mp4"])
def test_an_animation_export_made_on_the_page_ends_with_its_download(fmt):
    """Every GIF and MP4 export ended in Streamlit's error box: the frames' progress was drawn from the
    thread that drives Chromium, which has no script context (NoSessionContext). The test above had
    stood in for the export, so the page never ran a real one."""
    at = open_page("pages/tile_phases.py", {"m": "16", "n": "16", "k": "16", "tile": "8"})
    at.button(key=f"animation-{fmt}").click().run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    made = [b for b in at.get("download_button") if b.key == f"animation-download-{fmt}"]
    assert len(made) == 1 and made[0].proto.label.endswith(f".{fmt}")
    assert [s.label.startswith(f"Made the {fmt.upper()} (") for s in at.status] == [True], [s.label for s in at.status]


def _titles_apart(fig: dict, pattern: str, font: int) -> list[tuple[float, float]]:
    """The x extents (paper) of the annotations matching `pattern`, at the figure's narrowest and 0.6 em
    a character (generous for Open Sans), in order; asserted not to overlap."""
    from engine.plots import style
    spans = []
    for a in fig["layout"]["annotations"]:
        if re.match(pattern, a.get("text", "")) and a.get("xref") == "paper":
            half = max(len(t) for t in a["text"].split("<br>")) * .6 * font / 2 / (style.SCREEN.narrowest - 16)
            spans.append((a["y"], a["x"] - half, a["x"] + half))
    spans.sort()
    assert all(a[2] < b[1] for a, b in zip(spans, spans[1:]) if a[0] == b[0]), spans   # in one row
    return [(left, right) for _, left, right in spans]


@pytest.mark.parametrize("presenter", [False, True])
def test_tile_phase_titles_never_stand_on_each_other(presenter):
    """A 128x7 B beside a 128x7 C: their titles overlapped ("B (128xC)(128x7)"). Each panel is now at
    least as wide as its title."""
    from engine.plots import style
    params = {"kernel": "tiled_guarded", "m": "128", "n": "7", "k": "128", "TILE": "8", "bx": "0", "by": "15"}
    if presenter:
        params["presenter"] = "1"
    fig = figures(open_page("pages/tile_phases.py", params))[0]
    spans = _titles_apart(fig, r"[ABC] \(\d+x\d+\)$", style.sizes(presenter).base)
    assert len(spans) == 3 and spans[-1][1] < .64          # clear of the source listing too


def test_tile_phases_at_one_element_draw_c_like_a_and_b_and_say_it_in_the_singular():
    """At 1x1x1 the headline read "reads 1 elements of A" and "stores 2046 zeros"; C was a dot beside A's
    and B's whole tiles: now C's tile is drawn whole too, its overhang red and dotted as theirs."""
    fig = figures(open_page("pages/tile_phases.py", {"kernel": "tiled_guarded", "m": "1", "n": "1", "k": "1",
                                                     "TILE": "32", "bx": "0", "by": "0"}))[0]
    head = notes(fig, 0)
    assert "reads 1 element of A and 1 of B" in head and "stores 2,046 zeros" in head
    c_axis = "x4"   # A, B, C on axes 2, 3, 4
    c_traces = [d for d in fig["data"] if d.get("xaxis") == c_axis and d.get("mode") == "lines"]
    xs = [x for d in c_traces for x in d["x"] if x is not None]
    assert max(xs) - min(xs) == 32                          # the whole 32-wide tile, not the 1x1 matrix
    assert any(d.get("line", {}).get("dash") == "dot" for d in c_traces)


def test_coalescing_at_one_element_says_one_lane():
    fig = figures(open_page("pages/coalescing.py", {"m": "1", "n": "1", "k": "1"}))[0]
    assert "load A: 1 lane → " in notes(fig, 0) and "1 lanes" not in notes(fig, 0)


@pytest.mark.parametrize("presenter", [False, True])
def test_the_coalescing_strip_title_keeps_clear_of_the_source(presenter):
    """"128-B lines · 32-B sectors" on one line ran into the listing's first line number."""
    from engine.plots import style
    fig = figures(open_page("pages/coalescing.py", {"presenter": "1"} if presenter else {}))[0]
    spans = _titles_apart(fig, r"128-B lines", style.sizes(presenter).base)
    code = min(d["x"][0] for d in fig["data"] if d.get("textfont", {}).get("family") == style.CODE_FAMILY)
    assert spans and all(right < code for _, right in spans)   # the listing's line numbers start at `code`


@pytest.mark.parametrize("presenter", [False, True])
def test_the_coalescing_highlight_band_starts_where_the_listing_does(presenter):
    """The band behind the current line was placed at the normal mode's listing edge: in presenter
    mode, whose listing starts further left, it began mid-line ("f|loat a = LDG(...")."""
    from engine.plots import style
    fig = figures(open_page("pages/coalescing.py", {"presenter": "1"} if presenter else {}))[0]
    starts = {d["x"][0] for d in fig["data"] if d.get("textfont", {}).get("family") == style.CODE_FAMILY}
    bands = [d["x"] for f in fig["frames"][:3] for d in f["data"] if len(d.get("x") or []) == 5 and d["x"][1] == 1]
    assert len(starts) == 1 and bands and all(min(x) == min(starts) for x in bands), (starts, bands[:2])
    # and under the listing's text: drawn over it, the translucent band paled the line it lit
    fills = [i for i, d in enumerate(fig["data"]) if d.get("fill") == "toself" and d.get("fillcolor") == style.HIGHLIGHT]
    texts = [i for i, d in enumerate(fig["data"]) if d.get("textfont", {}).get("family") == style.CODE_FAMILY]
    assert len(fills) == len(texts) >= 1 and all(f < t for f, t in zip(fills, texts)), (fills, texts)


PAGE_FILES = [None, "pages/coalescing.py", "pages/tile_phases.py", "pages/bank_conflicts.py", "pages/ladder.py",
              "pages/tensor_cores.py", "pages/benchmarks.py", "pages/playground.py"]


@pytest.mark.parametrize("page", PAGE_FILES)
def test_every_page_says_its_mode_on_its_title_in_presenter_mode(page):
    """In presenter mode the sidebar, whose banner says the mode, is folded away: Bank conflicts and the
    Ladder had said nowhere else that their traces came from the CPU."""
    at = open_page(page, {"presenter": "1"})
    assert at.title[0].value.endswith(" :gray-badge[CPU mode]"), at.title[0].value


def test_the_gpu_mode_badge_names_the_gpu_as_written(monkeypatch):
    from engine.devices.gpu_client import GpuStatus
    from pages.lib import ui
    monkeypatch.setattr(ui, "device_status", lambda: GpuStatus(True, "NVIDIA H200 [x]*_"))
    assert ui.mode_badge() == r":green-badge[GPU mode · NVIDIA H200 \[x\]\*\_]"


def test_coalescing_says_when_the_start_is_past_the_other_kernels_instructions():
    """Warp 1 of tiled_guarded makes 3 global accesses at 48x32x20: from instruction 5 it had been said
    to have no active lanes."""
    at = open_page("pages/coalescing.py", {"kernel": "naive_transposed_b", "compare": "tiled_guarded", "m": "48",
                                           "n": "32", "k": "20", "block": "16x16", "warp": "1", "TILE": "32",
                                           "from": "5"})
    said = [w.value for w in at.warning]
    assert "tiled_guarded: warp 1 of block (0, 0) makes 3 global accesses at this size, none from instruction 5 on." \
        in said, said
    assert not any("no active lanes" in w for w in said), said


def test_two_kernels_refused_for_a_parameter_they_share_are_told_which_value_runs_both():
    """Coalescing's warptile beside prefetched said only that prefetched needs at most 48 KB of shared
    memory: the BK it took was warptile's (one select for a name both declare), and nothing said so."""
    at = open_page("pages/coalescing.py", {"kernel": "warptile", "compare": "prefetched"})
    said = [e.value for e in at.error]
    assert len(said) == 1 and said[0].startswith("prefetched needs at most 48 KB"), said
    hint = re.search(r"The kernels shown take ([A-Z, ]+) from the same selects: with ([A-Z]+) (\d+) both run\.$", said[0])
    # the value it took from warptile (BK 32) put back to its own (16): the cause, not any change that runs both
    assert hint and "BK" in hint[1].split(", ") and (hint[2], hint[3]) == ("BK", "16"), said
    both = open_page("pages/coalescing.py", {"kernel": "warptile", "compare": "prefetched", hint[2]: hint[3]})
    assert not both.error and len(figures(both)) == 1
    alone = [e.value for e in open_page("pages/tile_phases.py", {"kernel": "tiled_unguarded", "m": "17"}).error]
    assert len(alone) == 1 and "the same selects" not in alone[0]   # one kernel: nothing shared to speak of
    # two kernels, refused for the size whatever they share: the sharing is not the cause and is not said
    sized = [e.value for e in open_page("pages/coalescing.py", {"kernel": "tiled_unguarded", "compare": "tiled_guarded",
                                                                "m": "17"}).error]
    assert len(sized) == 1 and "the same selects" not in sized[0], sized
