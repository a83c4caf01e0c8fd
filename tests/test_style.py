"""One style for every figure: the trace figures of the pages and the benchmark charts (on the page and
in `python -m engine bench` exports) take their font, template, colours and presenter sizes from
engine/plots/style.py, and no figure module names its own."""
import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from engine.bench import benchmark, export
from engine.kernels.problem import make_problem
from engine.metrics import analysis, views
from engine.plots import bank_figures, style, tile_phase_figures
from engine.tracing import tracer
from tests.test_pages import figures, open_page

ROOT = Path(__file__).resolve().parent.parent
RECORDED = benchmark.RECORDED / "h200-2026-11-22.json"


def _style_of(fig: dict) -> tuple[str, str]:
    """What a drawn figure's text and background come from: its font family and its template."""
    layout = fig["layout"]
    return layout["font"]["family"], json.dumps(layout["template"], sort_keys=True)


def test_trace_figures_and_bench_exports_carry_the_one_style():
    t = tracer.trace("shared_bank_conflicts", make_problem(32, 32, 32, params={"TILE": 32, "PAD": 0}), [(0, 0)], "cpu")
    inst = analysis.warp_instructions(t)
    drawn = [bank_figures.bank_figure(views.bank_steps(t, inst, 0, 0, 0, True), "label").to_dict(),
             tile_phase_figures.reads_bar({"a": 1, "b": 2}).to_dict()]
    doc = json.loads(RECORDED.read_text())
    exported = [f.to_dict() for f in export.figures(doc["results"], doc["provenance"]).values()]
    one = _style_of(exported[0])
    assert one[0] == style.FONT_FAMILY
    assert json.loads(one[1])["layout"]["colorway"] == style.PALETTE
    assert {_style_of(f) for f in drawn + exported} == {one}


@pytest.mark.parametrize("presenter", [False, True], ids=["screen", "presenter"])
def test_pages_draw_in_the_one_style_at_its_sizes(presenter):
    """Both kinds of figure on the pages, at the text sizes style.py gives the screen or a projector."""
    flag = {"presenter": "1"} if presenter else {}
    sizes = style.sizes(presenter)
    bank = figures(open_page("pages/bank_conflicts.py", {"size": "32", **flag}))
    bench = figures(open_page("pages/benchmarks.py", flag))
    assert len(bank) == 2 and len(bench) == 4 + 2 * bool(benchmark.tuning_runs())   # the run's four, the FP32 and tensor sweeps'
    assert len({_style_of(f) for f in bank + bench}) == 1 and _style_of(bank[0])[0] == style.FONT_FAMILY
    assert {f["layout"]["font"]["size"] for f in bank} == {sizes.base}
    assert {f["layout"]["font"]["size"] for f in bench} == {sizes.chart}


# A colour written as a value (#rrggbb, rgb(...), a named one) or a font family or template named anywhere
# but style.py: the one style would then have a second home.
OWN_STYLE = re.compile(r"""#[0-9a-fA-F]{3,8}\b|rgba?\(|["'](black|white|gray|grey)["']|["']family["']\s*:\s*["']"""
                       r"""|\btemplate\s*=|\bplotly_white\b""")


def test_no_figure_module_names_a_style_of_its_own():
    modules = [p for p in (ROOT / "engine" / "plots").glob("*.py") if p.name != "style.py"]
    modules += list((ROOT / "pages").rglob("*.py")) + [ROOT / "app.py"]
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in modules
             for i, line in enumerate(p.read_text().splitlines(), 1) if OWN_STYLE.search(line)]
    assert not found, found


def test_the_wavefront_axis_labels_never_stand_on_each_other():
    """A 32-way conflict labelled rows 1, 3, ..., 31 and then 32 for the last: "31" and "32" overlapped."""
    t = tracer.trace("shared_bank_conflicts", make_problem(32, 32, 32, params={"TILE": 32, "PAD": 0}), [(0, 0)], "cpu")
    fig = bank_figures.bank_figure(views.bank_steps(t, analysis.warp_instructions(t), 0, 0, 0, True), "label")
    labels = list(fig.layout.yaxis2.ticktext[1:])
    assert labels[0] == "1" and labels[-1] == str(len(labels)) == "32"
    rows = [i for i, text in enumerate(labels) if text]
    assert min(b - a for a, b in zip(rows, rows[1:])) >= 2
    for n in range(1, 70):        # every height: the first and last row labelled, none adjacent
        shown = [i for i, text in enumerate(bank_figures.every_few(n)) if text]
        assert shown[0] == 0 and shown[-1] == n - 1
        assert n < 24 or min(b - a for a, b in zip(shown, shown[1:])) >= 2



def test_the_percent_axis_keeps_its_ticks_apart_however_far_the_bars_reach():
    """Ticks every 20% up to about 150% of the reference; at 4,095³ the tensor rungs reach 390% of cuBLAS
    FP16, where ticks every 20% (25 of them on a 500-pixel axis) overlapped."""
    for top, step in ((120, 20), (300, 50), (500, 100)):
        fig = go.Figure()
        style.percent_axis(fig, top, 100, "% of it")
        assert fig.layout.yaxis2.dtick == step and fig.layout.yaxis2.range[1] / step <= 8


@pytest.mark.parametrize("presenter", [False, True])
def test_the_whole_kernel_histogram_keeps_its_legend_and_axis_title_clear_of_the_bars(presenter):
    """The legend stood on the bars' tops (paper units, above the plot, wrapped to two rows in the page's
    narrow column), and the x title ran past the column's right edge. Now: the legend in a top margin of
    its own, one entry a row, and the title on two lines no longer than the plot is wide."""
    kernel = views.SharedKernel(table=None, as_written={1: 8192, 32: 8192}, as_compiled={1: 8192, 32: 2048},
                                notes=[], sass_note=None)
    fig = bank_figures.ways_histogram(kernel, presenter)
    st = style.sizes(presenter)
    legend = fig.layout.legend
    assert legend.yref == "container" and legend.yanchor == "top" and legend.orientation == "v"
    entries_px = len(fig.data) * (1.5 * st.base + 6)
    assert fig.layout.margin.t >= entries_px          # every entry above the plot area
    title = fig.layout.xaxis.title.text
    widest = max(len(line) for line in title.split("<br>")) * .6 * st.base
    column = st.narrowest * 1.3 / 2.3               # pages/bank_conflicts.py: st.columns([1.3, 1])
    assert widest <= column - 80 and title.endswith(")")   # less the y axis's ticks and title


def test_a_count_reads_singular_for_one_and_separates_thousands():
    assert style.count(1, "lane") == "1 lane" and style.count(32, "lane") == "32 lanes"
    assert style.count(2046, "zero") == "2,046 zeros" and style.count(0, "sector") == "0 sectors"
    assert style.count(1, "element") == "1 element"


@pytest.mark.parametrize("n", [1, 24, 25, 33, 100, 128, 129, 257, 1000])
def test_a_sliders_labels_are_spread_out_and_end_on_the_last_frame(n):
    """Bank conflicts' slider of 128 instructions labelled 1, 13, ... 121, not 128."""
    from engine.plots.animation import _sparse
    labels = [str(i + 1) for i in range(n)]
    shown = [i for i, lab in enumerate(_sparse(labels)) if lab]
    assert shown[0] == 0 and shown[-1] == n - 1 and len(shown) <= 25
    gaps = [b - a for a, b in zip(shown, shown[1:])]
    assert not gaps or min(gaps) >= max(gaps) / 2, gaps   # no two labels much closer than the rest
    assert all(_sparse(labels)[i] == labels[i] for i in shown)


def _lab(hex_colour: str) -> np.ndarray:
    """sRGB to CIELAB (D65), to measure how far apart two colours look (CIE76: the distance in Lab)."""
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    f = lambda t: np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)   # noqa: E731
    x, y, z = f(xyz / np.array([0.95047, 1.0, 1.08883]))
    return np.array([116 * y - 16, 500 * (x - y), 200 * (y - z)])


def test_the_kernels_of_a_long_run_have_colours_told_apart():
    """A recorded run of 22 kernels drew cublas_sgemm_tf32 in a dark red beside blocktile_2d's brown
    (12 apart in Lab) and cublas_sgemm in an olive beside split_k_padded's; the 24th and 29th colours
    were as close. Every two colours are now at least 15 apart (about where two lines in a legend stop
    being mistaken for each other)."""
    lab = [_lab(c) for c in style.PALETTE]
    closest = min((float(np.linalg.norm(a - b)), style.PALETTE[i], style.PALETTE[j])
                  for i, a in enumerate(lab) for j, b in enumerate(lab) if i < j)
    assert closest[0] >= 15, closest
