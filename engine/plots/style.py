"""The one style of every figure: the benchmark charts (engine/plots/charts.py, on the Benchmarks page and
in `python -m engine bench` exports) and the trace figures (engine/plots/animation.py and the
figure modules built on it, on the other pages).

Everything two figures could disagree on lives here: the font, the template, the palette and the named
colours, and the sizes for a laptop screen or for a projector (presenter mode: sizes()). A figure module names a
colour by its role (style.BLUE, style.MATRIX_FILL), never by its value, and lays itself out through
apply(), so a change here changes every figure at once. Imports no Streamlit.
"""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go
import plotly.io as pio

# Plotly's own default, named: so a figure carries it whatever template a viewer's plotly defaults to.
FONT_FAMILY = '"Open Sans", verdana, arial, sans-serif'
CODE_FAMILY = "monospace"   # kernel source listings

# Tableau's ten, without grey (the roofline's roofs are black and grey), then the lighter shades of
# nine of them, then three of ColorBrewer's Dark2 and PiYG (a run of 22 kernels had Tableau 20b's dark
# red and olive beside Tableau's brown and olive, told apart by nobody), then darker and middle ones
# (Tableau's 20b and 20c), a navy, a dark teal, a dark olive and a ColorBrewer green: a benchmark chart
# gives each kernel of a run one of these (charts.colors), and the catalog times 30 kernels; every other
# figure takes them in order (the template's colorway). tests/test_style.py keeps every two apart.
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#e377c2", "#8c564b", "#bcbd22",
           "#393b79", "#aec7e8", "#ff9896", "#98df8a", "#c5b0d5", "#ffbb78", "#9edae5", "#c49c94", "#f7b6d2",
           "#dbdb8d", "#1b9e77", "#e6ab02", "#8e0152", "#7b4173", "#bd9e39", "#ad494a", "#a55194", "#6b6ecf",
           "#b5cf6b", "#000080", "#003c30", "#4d4d00", "#31a354"]
BLUE, RED, GREEN = PALETTE[0], PALETTE[1], PALETTE[2]
BLUE_FILL = "rgba(31,119,180,0.25)"        # BLUE, see-through: a tile being loaded
RED_FILL = "rgba(214,39,40,0.25)"          # RED, see-through: a tile's zero-filled overhang
GREEN_FILL = "rgba(44,160,44,0.35)"        # GREEN, see-through: one tensor-core instruction's tile
NO_FILL = "rgba(0,0,0,0)"
INK = "#1a1a1a"                            # headlines
NOTE_INK = "#444"                          # provenance notes above a chart
ROOF, SECOND_ROOF = "black", "gray"        # the roofline's roofs
MATRIX_FILL, MATRIX_EDGE = "#eeeeee", "#bbbbbb"   # a matrix's background and outline
CELL_LINE = "white"                        # lines between a matrix's cells
SLOT_LINE = "#cccccc"                      # a sector slot nothing touches
WIRE = "rgba(80,80,80,0.5)"                # lane-to-bank wires
HIGHLIGHT = "rgba(255, 200, 0, 0.45)"      # the source line a frame is at (the browser tests look for it)
NOTE_BACKGROUND = "rgba(255,255,255,0.85)"
PAGE_BACKGROUND = "#fff"                   # behind an exported animation (engine/plots/movie.py)
BAR_TEXT = "white"                         # a label inside a filled bar
LANE_SCALE = "Turbo"                       # lane 0..31 as a colour

# Plotly's white template with the font and palette above: every figure's layout starts from it.
TEMPLATE = go.layout.Template(pio.templates["plotly_white"])
TEMPLATE.layout.font.family = FONT_FAMILY
TEMPLATE.layout.colorway = PALETTE


@dataclass(frozen=True)
class Sizes:
    """Sizes for the normal page or for a projector. `width` is the figure width a trace figure's layout
    is planned for (the page's content width at 1280 px: with the sidebar, or without it in presenter
    mode); marker sizes are in pixels, so they are worked out from it. `base`, `headline` and `code`
    are the trace figures' text sizes; `chart` the charts of measured speed' (one size in both modes); small
    figures grow by `scale`; `least` is the smallest text a figure may draw (a projector's is 14 px, read
    from the back of a room)."""
    presenter: bool
    width: int
    base: int
    headline: int
    code: int
    chart: int
    scale: float
    least: int = 9
    # The narrowest the figure is drawn: the main column at 1280 px with the sidebar open, in either mode
    # (presenter mode folds the sidebar, but a presenter may open it). Text that must not run past the
    # figure's edge (source listings, headlines) is fitted to it.
    narrowest: int = 820


# `chart` is one size in both modes: a page's charts of measured speed (Benchmarks, and the Ladder's and
# Tensor cores' speed charts, drawn at PRESENTER's sizes) are then one figure in either mode, so that
# switching presenter mode redraws none of them (the Benchmarks page's six took ~2 s in the browser);
# 16 px is over a projector's 14 everywhere, a chart's notes 2 px smaller included.
SCREEN = Sizes(False, 820, 12, 14, 11, 16, 1.0)
PRESENTER = Sizes(True, 1100, 16, 17, 14, 16, 1.3, 14)
EXPORT_FONT = 13   # a benchmark chart saved as a 1200x700 picture


def sizes(presenter: bool) -> Sizes:
    return PRESENTER if presenter else SCREEN


def with_note(title: str, note: str, st: Sizes) -> str:
    """A chart title with its provenance note below it, a point smaller and in the note colour (not
    <sup>'s 70%: the note is read from the back of a room too)."""
    return f"{title}<br><span style='font-size: {st.base - 1}px; color: {NOTE_INK}'>{note}</span>" if note else title


def two_lines(name: str) -> str:
    """A kernel's label on two lines, broken after its first comma or before its first parenthesis."""
    for sep, joint in ((", ", ",<br>"), (" (", "<br>(")):
        if sep in name:
            return joint.join(name.split(sep, 1))
    return name


# Category names under bars stand upright (-90 degrees): turned 30 degrees, Plotly's own choice when
# they do not fit, the boxes of long neighbours ("cublas_sgemm_tf32", "cublas_sgemm") lie on each other
# in a narrow chart at a projector's size.
UPRIGHT = -90


def apply(fig: go.Figure, font: int, **layout) -> go.Figure:
    """The template, text of `font` points (hover labels too), and the figure's own layout on top."""
    fig.update_layout(template=TEMPLATE, font={"family": FONT_FAMILY, "size": font},
                      hoverlabel={"font": {"size": font}}, **layout)
    # Streamlit's chart theme draws tick labels at 12 px unless the figure names their size: on a
    # projector that is under the 14 px a room reads
    fig.for_each_xaxis(lambda a: a.update(tickfont={"size": font}) if a.tickfont.size is None else None)
    fig.for_each_yaxis(lambda a: a.update(tickfont={"size": font}) if a.tickfont.size is None else None)
    if fig.layout.legend.font.size is None:   # the theme's legend is 12 px too
        fig.update_layout(legend_font_size=font)
    return fig


def count(n: int, word: str, plural: str | None = None) -> str:
    """A number and what it counts, as a headline says it: '1 lane', '2,046 zeros' (thousands separated,
    as every number on the pages; a headline read "1 lanes" and "2046 zeros")."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def share(pct: float) -> str:
    """A share of a reference (cuBLAS) as a bar's label: whole percents, except within half a percent of
    100, where rounding would read as a tie (99.6% as "100%"): there as many decimals as keep it off 100."""
    if abs(pct - 100) > 0.5 or pct == 100:
        return f"{pct:.0f}%"
    return f"{pct:.1f}%" if round(pct, 1) != 100 else f"{pct:.2f}%"


def faster_or_slower(speed: float, other: float, name: str) -> str:
    """'12% faster than {name}', '3% slower than {name}', or, within 1%, 'as fast as {name} (within 1%)':
    a difference that rounds to '0% faster' read as a bug on a projector."""
    ratio = speed / other
    if abs(ratio - 1) < 0.01:
        return f"as fast as {name} (within 1%)"
    return f"{abs(ratio - 1):.0%} {'faster' if ratio > 1 else 'slower'} than {name}"


def percent_axis(fig: go.Figure, top: float, reference: float, title: str) -> None:
    """A right axis that reads the same bars as a % of `reference`: the left axis's 0..top is
    0..100 * top / reference there (the Ladder and Tensor cores speed charts). A tick every 20% up
    to about 150%, wider steps above: at 4,095³ the rungs reach 390% of cuBLAS FP16, and ticks every
    20% ran into each other there."""
    span = 100 * top / reference
    step = 20 if span <= 160 else 50 if span <= 400 else 100
    fig.update_layout(yaxis2={"overlaying": "y", "side": "right", "range": [0, span], "showgrid": False,
                              "title": title, "tick0": 0, "dtick": step, "ticksuffix": "%"})
    fig.add_trace(go.Scatter(x=[], y=[], yaxis="y2", showlegend=False))   # draws the right axis
