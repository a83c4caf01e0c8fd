"""The Ladder page's figures, from the plain data of engine/metrics/rung_diff.py, rung_counts.py and
engine/bench/speeds.py: a rung's source with the lines that changed from the rung before (HTML: a
listing reads better as text than as a chart), the table across the rungs with the chosen one marked,
the barrier intervals of one warp (tile loads against the multiply), and the rungs' measured speed.
Fonts, colours and sizes are engine/plots/style.py's, as for every figure; nothing here imports
Streamlit.
"""
from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.bench.speeds import LadderSpeeds
from engine.kernels.registry import LADDER_RUNGS
from engine.metrics.rung_counts import COPY, MULTIPLY, TIMELINE_INTERVALS, Timeline
from engine.metrics.rung_diff import RungSource
from engine.plots import style

REMOVED_INK = style.RED
SHOWN_INTERVALS = TIMELINE_INTERVALS    # barrier intervals the timeline draws (all that the counts keep)


# --------------------------------------------------------------------------- the source, with its diff

def _ranges(runs: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in runs)


def source_html(src: RungSource, presenter: bool = False, height_px: int = 380) -> str:
    """The rung's opening comment as prose, which lines changed from the previous rung, and the code
    below the comment, numbered, the changed lines marked + on the highlight colour and each place
    where lines of the previous rung were removed marked with how many. Long lines wrap under their
    own code column, so nothing is cut off at the box's edge."""
    st = style.sizes(presenter)
    code_px, text_px = st.code + 2, st.base + 2
    first = src.header_lines + 1
    if src.previous is None:
        summary = "The first rung: nothing to compare with."
    else:
        runs = src.changed_ranges(first)
        changed = sum(b - a + 1 for a, b in runs)
        removed = sum(n for line, n in src.removed.items() if line >= first)
        summary = (f"<b>Changed from {html.escape(src.previous_file)}</b>: lines {_ranges(runs) or 'none'} "
                   f"({changed} of {len(src.lines) - src.header_lines} code lines); "
                   f"{removed} line{'s' if removed != 1 else ''} of {html.escape(src.previous_file)} removed.")
    rows = []
    for n in range(first, len(src.lines) + 1):
        gone = src.removed.get(n, 0)
        if gone and src.previous:
            rows.append(_removed_row(gone, src.previous_file))
        rows.append(_code_row(n, src.lines[n - 1], n in src.changed))
    end = src.removed.get(len(src.lines) + 1, 0)
    if end and src.previous:
        rows.append(_removed_row(end, src.previous_file))
    return (f'<div class="ladder-source" style="font-family: {style.FONT_FAMILY}; font-size: {text_px}px;">'
            f'<p style="margin: 0 0 .4rem 0; color: {style.INK};">{html.escape(src.header)}</p>'
            f'<p class="ladder-changes" style="margin: 0 0 .4rem 0;">{summary}</p>'
            f'<div style="max-height: {height_px}px; overflow-y: auto; border: 1px solid {style.MATRIX_EDGE}; '
            f'border-radius: 4px;"><table style="border-collapse: collapse; width: 100%; font-family: '
            f'{style.CODE_FAMILY}; font-size: {code_px}px; line-height: 1.35;">{"".join(rows)}</table></div></div>')


def _code_row(n: int, text: str, changed: bool) -> str:
    look = f' class="changed" style="background: {style.HIGHLIGHT};"' if changed else ""
    cell = "padding: 0 .4rem; vertical-align: top; border: none;"
    return (f'<tr data-line="{n}"{look}><td style="{cell} text-align: right; color: {style.NOTE_INK}; '
            f'user-select: none; width: 3.2em;">{n}</td><td style="{cell} width: 1em; font-weight: bold;">'
            f'{"+" if changed else ""}</td><td style="{cell} white-space: pre-wrap; overflow-wrap: anywhere;">'
            f'{html.escape(text) or " "}</td></tr>')


def _removed_row(count: int, previous_file: str) -> str:
    return (f'<tr class="removed"><td></td><td style="color: {REMOVED_INK}; font-weight: bold; border: none;">−</td>'
            f'<td style="color: {REMOVED_INK}; font-style: italic; padding: 0 .4rem; border: none;">'
            f'{count} line{"s" if count != 1 else ""} of {html.escape(previous_file)} removed here</td></tr>')


# --------------------------------------------------------------------------- the table across the rungs

def metrics_styler(table: pd.DataFrame, chosen: str):
    """The table with the chosen rung's column on the highlight colour, in bold."""
    return (table.style.set_properties(subset=[chosen], **{"background-color": style.HIGHLIGHT, "font-weight": "bold"})
            .set_table_styles([{"selector": "th", "props": [("white-space", "nowrap")]}]))


# --------------------------------------------------------------------------- barrier intervals

def intervals_figure(timelines: list[Timeline], presenter: bool = False) -> go.Figure:
    """One timeline per rung, for one warp: barrier intervals across (the first SHOWN_INTERVALS),
    and in each the K tile whose global loads the warp issued (top row) and the tile its shared
    loads multiply (bottom row). Where a column holds both, the next tile is on its way while this
    one is multiplied: that column is drawn on the highlight colour."""
    st = style.sizes(presenter)
    fig = make_subplots(rows=len(timelines), cols=1, vertical_spacing=0.3 if len(timelines) > 1 else 0.1,
                        subplot_titles=[_panel_title(t, t.intervals[t.intervals["epoch"] < SHOWN_INTERVALS])
                                        for t in timelines])
    for i, t in enumerate(timelines, start=1):
        shown = t.intervals[t.intervals["epoch"] < SHOWN_INTERVALS]
        for what, color in ((COPY, style.BLUE), (MULTIPLY, style.GREEN)):
            part = shown[shown["what"] == what]
            hover = [f"barrier interval {e}: {n} warp instruction{'s' if n != 1 else ''}"
                     + (f", cp.async group {', '.join(map(str, g))}" if g else "")
                     for e, n, g in zip(part["epoch"], part["instructions"], part["groups"])]
            fig.add_trace(go.Bar(y=[what] * len(part), x=[0.9] * len(part), base=part["epoch"] - 0.45, orientation="h",
                                 marker={"color": color}, text=[f"tile {k}" for k in part["tile"]],
                                 textposition="inside", insidetextanchor="middle",
                                 textfont={"color": style.BAR_TEXT, "size": st.base}, hovertext=hover,
                                 hovertemplate="%{hovertext}<extra></extra>", showlegend=False, name=t.name),
                          row=i, col=1)
        kinds = shown.groupby("epoch")["what"].nunique()
        for epoch in kinds[kinds == 2].index:
            fig.add_vrect(x0=epoch - 0.5, x1=epoch + 0.5, fillcolor=style.HIGHLIGHT, line_width=0, layer="below",
                          row=i, col=1)
        fig.update_yaxes(categoryorder="array", categoryarray=[MULTIPLY, COPY], row=i, col=1)
        fig.update_xaxes(range=[-0.6, SHOWN_INTERVALS - 0.4], dtick=1, row=i, col=1,
                         title={"text": "barrier interval (barriers passed)" if i == len(timelines) else ""})
    style.apply(fig, st.base, height=(150 + 150 * len(timelines)) * st.scale,
                margin={"l": 10, "r": 10, "t": 60, "b": 40}, bargap=0.15)
    fig.update_annotations(font={"size": st.base + 1})
    return fig


def _panel_title(t: Timeline, shown: pd.DataFrame) -> str:
    """The title counts the intervals drawn (the first SHOWN_INTERVALS), and the run's in all where
    more were not drawn: '31 of 32' over 8 drawn intervals read as a miscount."""
    kinds = shown.groupby("epoch")["what"].nunique()
    overlap, multiplies = int((kinds == 2).sum()), int(shown.loc[shown["what"] == MULTIPLY, "epoch"].nunique())
    if not t.overlap:
        verdict = "loading and multiplying take turns, never in one interval"
    elif multiplies == t.multiplies:
        verdict = f"{t.overlap} of {t.multiplies} multiply intervals also load the next tile"
    else:
        verdict = (f"{overlap} of {multiplies} multiply intervals drawn also load the next tile "
                   f"({t.overlap} of {t.multiplies} in all)")
    return f"<b>{html.escape(t.name)}</b>, warp {t.warp}: {verdict}"


def tiles_drawn(timelines: list[Timeline]) -> str:
    """Which tiles of each rung's loop the timeline draws, where it draws fewer than the loop has: at
    K = 512 it drew tiles 0 to 3 of 32 and, without a word, read as the whole loop. A sentence for
    under the figure (in the panels' titles it ran past a projector's screen)."""
    parts = []
    for t in timelines:
        shown = t.intervals[(t.intervals["epoch"] < SHOWN_INTERVALS) & (t.intervals["what"] == MULTIPLY)]
        drawn = int(shown["epoch"].nunique())
        if 0 < drawn < t.multiplies:
            parts.append(f"tiles 0–{drawn - 1} of {t.name}'s {t.multiplies:,}")
    return f"Drawn: the first {SHOWN_INTERVALS} barrier intervals, {' and '.join(parts)}." \
        if parts else ""


# --------------------------------------------------------------------------- measured speed

def speed_figure(speeds: LadderSpeeds, chosen: str, mode: str, note: str = "") -> go.Figure:
    """GFLOP/s of each rung with a row (left axis) and its share of cuBLAS SGEMM (right axis, the same
    bars read against cuBLAS), cuBLAS as a dashed line, the chosen rung in its own colour; a rung
    without a row keeps its place on the axis, marked "no row"."""
    st = style.PRESENTER   # in both modes: one figure, which switching modes does not redraw (style.Sizes)
    rows = speeds.rows.set_index("rung")
    names = list(LADDER_RUNGS)
    gflops = [rows["gflops"].get(r) for r in names]
    pct = [rows["pct_cublas"].get(r) for r in names]
    text = [("" if g is None else f"{g:,.0f}" + (f"<br>{style.share(p)} of cuBLAS" if p is not None and pd.notna(p) else ""))
            for g, p in zip(gflops, pct)]
    colors = [style.PALETTE[4] if r == chosen else style.BLUE for r in names]
    params = [html.escape(rows["params"].get(r) or "") for r in names]
    top = max([g or 0 for g in gflops] + [speeds.cublas or 0]) * 1.25 or 1
    # A label above a bar just under cuBLAS was struck through by its line (46,669 under 51,331): such a
    # bar's two-line label goes inside its top. Its height in GFLOP/s: two lines of the font over the plot.
    label = top * 2 * 1.3 * st.chart / (440 * st.scale - 130)
    where = ["inside" if g and speeds.cublas and 0 <= speeds.cublas - g < label else "outside" for g in gflops]
    # textangle 0: Plotly turns a label inside a narrow bar on its side, which a class reads sideways.
    fig = go.Figure(go.Bar(x=names, y=[g or 0 for g in gflops], text=text, textposition=where, textangle=0,
                           insidetextanchor="end", insidetextfont={"color": style.BAR_TEXT}, marker={"color": colors},
                           customdata=params, hovertemplate="%{x} %{customdata}: %{y:,.0f} GFLOP/s<extra></extra>",
                           showlegend=False, cliponaxis=False))
    if speeds.cublas:
        fig.add_hline(y=speeds.cublas, line={"dash": "dash", "color": style.ROOF},
                      annotation={"text": f"cuBLAS SGEMM {speeds.cublas:,.0f} GFLOP/s", "xanchor": "left", "x": 0,
                                  "yanchor": "bottom", "font": {"size": st.base}})
        style.percent_axis(fig, top, speeds.cublas, "% of cuBLAS SGEMM")
    for name, g in zip(names, gflops):
        if g is None:
            why = "not timed" if name in speeds.failed else "no row"
            fig.add_annotation(x=name, y=0, text=why, showarrow=False, yanchor="bottom",
                               font={"color": style.RED, "size": st.base})
    title = style.with_note(f"Measured GFLOP/s at {speeds.size:,}³ · {html.escape(mode)}", note, st)
    return style.apply(fig, st.chart, height=440 * st.scale, margin={"t": 80 if note else 50, "l": 10, "r": 10, "b": 40},
                       title={"text": title, "x": 0, "xanchor": "left"},
                       yaxis={"title": "GFLOP/s", "range": [0, top]},
                       # Seven rungs: each name level, broken after its underscores ("double_" over
                       # "buffered"), fits its bar's width with the sidebar open. Upright, they read sideways
                       # and, with no margin made for them, ran off the figure's foot ("ouble_buffered").
                       xaxis={"type": "category", "tickangle": 0, "automargin": True, "tickvals": names,
                              "ticktext": [name.replace("_", "_<br>") for name in names]})

