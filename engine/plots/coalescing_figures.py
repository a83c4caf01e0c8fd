"""The Coalescing page's figure: one panel per kernel, animated in step, showing which elements a
warp's lanes touch in one instruction, the 32-byte sectors and 128-byte lines they fall in, and the
source line it comes from; with the verdict (coalesced or not) in each frame's headline.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from engine.metrics.views import Step, WarpPanel
from engine.plots import listing, style
from engine.plots.animation import CONTROLS_PX, AnimatedFigure, apply_style, axis, controls, rects, with_frames
from engine.plots.listing import PRESENTER_CODE_FROM, fit_windows, source_lines
from engine.plots.style import HIGHLIGHT, LANE_SCALE

# The panels' columns, in paper fractions: matrices, the strip of lines and sectors, the source.
X_MAT, X_STRIP, X_CODE = (0, .47), (.49, .60), (.625, 1)
# presenter mode: the same, the listing wider (listing.PRESENTER_CODE_FROM)
PRESENTER_X = (0, .40), (.42, .52), (PRESENTER_CODE_FROM, 1)
STRIP_TITLE = "128-B lines<br>32-B sectors"
LABEL_EM = 0.62   # a character of a matrix's name, in em of its font (Open Sans' digits and capitals, with room)
LEFT_MARGIN_PX = 8   # the figure's margin left of the matrices' axis (animation.apply_style)


def coalescing_figure(panels: list[WarpPanel], presenter: bool = False, duration: int = 300,
                      url_key: str = "") -> AnimatedFigure:
    """panels: one per kernel (each with steps; engine.metrics.views.warp_panel), animated in step.

    Per panel: a headline (which instruction, how many lanes, sectors and lines, the verdict); the
    matrices side by side with the active lanes' elements (coloured by lane) and the 32-byte sectors
    they fall in outlined; a strip with one row per touched 128-byte line and its four 32-byte
    sectors (the touched ones outlined), to count them; the source with the current line lit.

    Only the matrices need axes of their own (square cells). Headlines, strips and sources of all
    panels share one overlay axis measured in pixels from the top, so a frame updates few traces on
    few axes: Plotly's per-frame work grows with both, and two panels must still play smoothly.
    """
    st = style.sizes(presenter)
    n = len(panels)
    # two panels stacked fit one 1280x720 screen with the title and Play in either mode
    body_px = (180 if presenter else 175) if n == 2 else 330
    head_px, gap_px = (44, 10) if presenter else (42, 18)
    title_px = st.base + 8                       # the names above the matrices and the strip
    plot_px = n * (head_px + body_px) + (n - 1) * gap_px
    x_mat, x_strip, x_code = PRESENTER_X if presenter else (X_MAT, X_STRIP, X_CODE)
    fig = AnimatedFigure()
    fig.layout.height = plot_px + CONTROLS_PX + 8
    ox, oy = axis(fig, 1, (0, 1), (0, 1), (0, 1), (plot_px, 0))      # the overlay: x paper, y px from the top
    fig.add_trace(go.Scatter(x=[0] * n, y=[r * (head_px + body_px + gap_px) + head_px / 2 for r in range(n)],
                             xaxis=ox, yaxis=oy, mode="text", text=[""] * n, textposition="middle right",
                             textfont={"size": st.headline, "color": style.INK}, hoverinfo="skip", showlegend=False,
                             cliponaxis=False))
    headline = len(fig.data) - 1
    strips, codes, lights, mats = [], [], [], []
    for r, p in enumerate(panels):
        body_top = r * (head_px + body_px + gap_px) + head_px
        y_dom = (1 - (body_top + body_px) / plot_px, 1 - (body_top + title_px) / plot_px)
        # matrices, side by side on one square-celled axis
        mrows = max(rows for rows, _ in p.arrays.values())
        # the names' room at the narrowest the figure is drawn (the cells are smallest there, the names as wide)
        offsets, x = _side_by_side(p.arrays, (x_mat[1] - x_mat[0]) * st.narrowest, body_px - title_px, st.base)
        titles = [(name, offsets[name], rows, cols) for name, (rows, cols) in p.arrays.items()]
        mx, my = axis(fig, 2 + r, x_mat, y_dom, (-1, x - 1), (mrows - .5, -.5), anchor_square=True)
        cell = min((x_mat[1] - x_mat[0]) * st.width / max(x, 1), (body_px - title_px) / max(mrows, 1))
        for name, x0, rows, cols in titles:
            fig.add_shape(type="rect", xref=mx, yref=my, x0=x0 - .5, x1=x0 + cols - .5, y0=-.5, y1=rows - .5,
                          fillcolor=style.MATRIX_FILL, line={"color": style.MATRIX_EDGE, "width": 1}, layer="below")
            fig.add_annotation(x=x0 + cols / 2 - .5, y=-.5, xref=mx, yref=my, text=f"{name} ({rows}x{cols})",
                               showarrow=False, yanchor="bottom", font={"size": st.base}, yshift=2)
        if cell >= 5:
            fig.add_trace(_cell_grid([(offsets[nm], rows, cols) for nm, (rows, cols) in p.arrays.items()], mx, my))
        size = max(cell * .82, 3)
        fig.add_trace(go.Scatter(xaxis=mx, yaxis=my, mode="markers", showlegend=False,
                                 marker={"symbol": "square", "size": size, "color": [], "colorscale": LANE_SCALE,
                                         "cmin": 0, "cmax": 31},
                                 hovertemplate="lane %{marker.color}<br>%{customdata[0]}[%{customdata[1]}]"
                                               "[%{customdata[2]}], byte %{customdata[3]:,}<extra></extra>"))
        fig.add_trace(go.Scatter(xaxis=mx, yaxis=my, mode="lines", line={"color": style.RED, "width": 1.5},
                                 hoverinfo="skip", showlegend=False))
        mats.append((len(fig.data) - 2, _lanes_on(offsets), len(fig.data) - 1, _sectors_on(offsets, p.arrays)))
        # strip: one row per touched 128-byte line, in the overlay's pixels
        # On two lines: on one, wider than the strip, it ran into the source's line numbers.
        fig.add_annotation(x=sum(x_strip) / 2, y=1 - body_top / plot_px, xref="paper", yref="paper", showarrow=False,
                           yanchor="top", text=STRIP_TITLE, font={"size": st.base})
        most_lines = max(max(len(np.unique(s.offsets // 128)) for s in p.steps), 4)
        strip_top = STRIP_TITLE.count("<br>") * (st.base + 4) + title_px
        row_px = (body_px - strip_top) / most_lines
        strips.append(_StripPlace(x_strip, body_top + strip_top, row_px,
                                  min((x_strip[1] - x_strip[0]) * st.width / 37, row_px) * .8))
        # source
        windows, window_at, font = fit_windows(source_lines(p.file), [s.line for s in p.steps],
                                               (x_code[1] - x_code[0]) * st.narrowest, body_px, st)
        view = windows[window_at[0]]
        code_px = body_px / listing.rows_shown(windows, body_px, font)
        place = lambda row, top=body_top, h=code_px: top + (row + .5) * h   # noqa: E731
        # the band first, under the text: drawn over it, its translucent yellow paled the line it lit
        fig.add_trace(go.Scatter(xaxis=ox, yaxis=oy, fill="toself", fillcolor=HIGHLIGHT, line={"width": 0},
                                 mode="lines", hoverinfo="skip", showlegend=False))
        lights.append((len(fig.data) - 1, windows, window_at, place, code_px, x_code[0]))
        fig.add_trace(go.Scatter(x=[x_code[0]] * view.n_rows, y=[place(i) for i in range(view.n_rows)], xaxis=ox,
                                 yaxis=oy, mode="text", text=view.texts, textposition="middle right",
                                 hoverinfo="skip", showlegend=False, cliponaxis=False,
                                 textfont={"family": style.CODE_FAMILY, "size": font}))
        codes.append(view)
    slot_t, sector_t = len(fig.data), len(fig.data) + 1
    fig.add_trace(go.Scatter(xaxis=ox, yaxis=oy, mode="lines", line={"color": style.SLOT_LINE, "width": 1, "dash": "dot"},
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(xaxis=ox, yaxis=oy, mode="lines", line={"color": style.RED, "width": 1.5},
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(xaxis=ox, yaxis=oy, mode="markers", showlegend=False,
                             marker={"symbol": "square", "size": min(pl.marker for pl in strips), "color": [],
                                     "colorscale": LANE_SCALE, "cmin": 0, "cmax": 31},
                             hovertemplate="lane %{marker.color}: byte %{customdata[1]:,} of %{customdata[0]}"
                                           "<br>line %{customdata[2]}, sector %{customdata[3]}<extra></extra>"))
    lanes_t = len(fig.data) - 1

    n_frames = max(len(p.steps) for p in panels)
    first = panels[0].steps[0].index
    frames = []
    for i in range(n_frames):
        now = [p.steps[min(i, len(p.steps) - 1)] for p in panels]
        data = [{"text": [_coalescing_note(p, s) for p, s in zip(panels, now)]}]
        idx = [headline]
        for (lt, lanes_fn, st_, sectors_fn), s in zip(mats, now):
            data += [lanes_fn(s), sectors_fn(s)]
            idx += [lt, st_]
        for (t, windows, window_at, place, code_px, left), p, s in zip(lights, panels, now):
            view = windows[window_at[min(i, len(p.steps) - 1)]]   # (a panel of fewer steps stays on its last)
            data += [listing.highlight(view, s.line, left, place, code_px / 2), listing.frame_text(windows, view, left, place)]
            idx += [t, t + 1]   # the band, then its text (added after it)
        slots, sectors, lanes = _merge([_strip_slots(s, pl) for s, pl in zip(now, strips)]), \
            _merge([_strip_sectors(s, pl) for s, pl in zip(now, strips)]), \
            _merge([_strip_lanes(s, pl) for s, pl in zip(now, strips)])
        data += [slots, sectors, lanes]
        idx += [slot_t, sector_t, lanes_t]
        # named by the instruction's number in the warp (the slider's label): a link names it (url_key)
        frames.append({"name": str(first + i + 1), "data": data, "traces": idx})
    for t, d in zip(frames[0]["traces"], frames[0]["data"]):
        fig.data[t].update(d)
    apply_style(fig, st)
    names = [f["name"] for f in frames]
    return with_frames(fig, frames, controls(names, names, duration, st, False, plot_px, url_key))


@dataclass(frozen=True)
class _StripPlace:
    """Where a panel's strip sits on the overlay: its x span (paper), its top and row height (px)."""
    x: tuple[float, float]
    top: float
    row_px: float
    marker: float

    def at(self, unit: float, row: float) -> tuple[float, float]:
        """Strip units (9 per sector slot, -1..36) and row numbers to overlay coordinates, rounded to a
        hundredth of a pixel at 1280 px: every frame repeats them, and 17-digit floats made half of a
        long window's figure (3.3 MB at K = 128, sent again on every control change)."""
        return (round(self.x[0] + (unit + 1) / 37 * (self.x[1] - self.x[0]), 6),
                round(self.top + (row + .5) * self.row_px, 2))


def _merge(parts: list[dict]) -> dict:
    """One trace's data from several panels' pieces (lines stay apart: each piece ends in None)."""
    out: dict = {}
    for part in parts:
        for key, value in part.items():
            if key == "marker":
                m = out.setdefault("marker", {})
                for mk, mv in value.items():
                    m.setdefault(mk, []).extend(mv)
            else:
                out.setdefault(key, []).extend(value)
    return out


def _side_by_side(arrays: dict, width_px: float, height_px: float, font: float) -> tuple[dict, int]:
    """Where each matrix starts, in cells, and the cells they span together, for matrices side by side
    with square cells in width_px x height_px. A gap is widened only where two names above the
    matrices would meet (half of each wider than the distance between the matrices' middles): at
    N = 1, B (16x1) and C (17x1) are a cell wide each, and their names had been printed over each
    other ("B (16C(17x1)"). Other sizes keep their layout."""
    items = [(name, cols, len(f"{name} ({rows}x{cols})") * LABEL_EM * font) for name, (rows, cols) in arrays.items()]
    mrows = max(rows for rows, _ in arrays.values())
    cell = math.inf
    for _ in range(16):   # the cell shrinks as wider gaps widen the row, which widens the names in cells
        half = [words / 2 / cell if math.isfinite(cell) else 0 for _, _, words in items]
        # the first matrix far enough in that its name starts inside the figure: the axis starts at its
        # left edge, with only the figure's margin to its left (A (17x1) at K = 1 had lost its "A ")
        margin = LEFT_MARGIN_PX / cell if math.isfinite(cell) else 0
        # (a matrix at x has its middle x + cols / 2 + 0.5 cells from the axis' start at -1)
        x = max(0, math.ceil(half[0] - margin - 0.5 - items[0][1] / 2))
        offsets = {}
        for i, (name, cols, _) in enumerate(items):
            offsets[name] = x
            gap = max(2, cols // 8)
            if i + 1 < len(items):   # the middles' distance holds half of each name, and a cell between
                gap = max(gap, math.ceil(half[i] + half[i + 1] + 1 - (cols + items[i + 1][1]) / 2))
            x += cols + gap
        name, cols, _ = items[-1]
        x = max(x, math.ceil(offsets[name] + cols / 2 + half[-1] + 1))   # and the last name ends on the axis
        fits = min(width_px / max(x, 1), height_px / max(mrows, 1))
        if fits == cell:
            break
        cell = fits
    return offsets, x


def _cell_grid(grid, xref: str, yref: str) -> go.Scatter:
    """Thin white lines between the cells of each matrix: one static trace for all of them."""
    xs, ys = [], []
    for x0, rows, cols in grid:
        for c in range(1, cols):
            xs += [x0 + c - .5, x0 + c - .5, None]
            ys += [-.5, rows - .5, None]
        for r in range(1, rows):
            xs += [x0 - .5, x0 + cols - .5, None]
            ys += [r - .5, r - .5, None]
    return go.Scatter(x=xs, y=ys, xaxis=xref, yaxis=yref, mode="lines", line={"color": style.CELL_LINE, "width": 1},
                      hoverinfo="skip", showlegend=False)


def _lanes_on(offsets: dict[str, int]):
    def fn(step: Step) -> dict:
        # Numbers per point, formatted by the trace's hover template: a third of the bytes of a
        # sentence per lane, and the template itself never changes (frames then move faster).
        return {"x": (step.cols + offsets[step.array]).tolist(), "y": step.rows.tolist(),
                "marker": {"color": step.lanes.tolist()},
                "customdata": [[step.array, r, c, o] for r, c, o in zip(step.rows.tolist(), step.cols.tolist(),
                                                                         step.offsets.tolist())]}
    return fn


def _sector_boxes(sector_ids: np.ndarray, cols: int) -> list[tuple[float, float, float, float]]:
    """Outlines of 32-byte sectors (8 floats) on a row-major matrix picture; a sector may wrap rows."""
    boxes = []
    for s in np.unique(sector_ids):
        start, end = int(s) * 8, int(s) * 8 + 8
        while start < end:
            row, col = divmod(start, cols)
            stop = min(end, (row + 1) * cols)
            boxes.append((col - .5, col + (stop - start) - .5, row - .5, row + .5))
            start = stop
    return boxes


def _sectors_on(offsets: dict[str, int], arrays: dict[str, tuple[int, int]]):
    def fn(step: Step) -> dict:
        boxes = [(x0 + offsets[step.array], x1 + offsets[step.array], y0, y1)
                 for x0, x1, y0, y1 in _sector_boxes(step.sector_ids, arrays[step.array][1])]
        xs, ys = rects(boxes)
        return {"x": xs, "y": ys}
    return fn


def strip_layout(step: Step) -> tuple[np.ndarray, dict[int, int]]:
    """The strip's rows: the distinct 128-byte lines the step touches, in address order."""
    lines = np.unique(step.offsets // 128)
    return lines, {int(l): r for r, l in enumerate(lines)}


def _slot_box(row: int, slot: int, at) -> tuple[float, float, float, float]:
    (x0, y0), (x1, y1) = at(slot * 9 - .5, row - .42), at(slot * 9 + 7.5, row + .42)
    return (x0, x1, y0, y1)


def _strip_slots(step: Step, place: _StripPlace | None = None) -> dict:
    """Every sector slot of every touched line, faint: the four sectors one line holds."""
    at = place.at if place else (lambda u, r: (u, r))
    lines, _ = strip_layout(step)
    xs, ys = rects([_slot_box(r, s, at) for r in range(len(lines)) for s in range(4)])
    return {"x": xs, "y": ys}


def _strip_sectors(step: Step, place: _StripPlace | None = None) -> dict:
    at = place.at if place else (lambda u, r: (u, r))
    _, row_of = strip_layout(step)
    sectors = np.unique(step.offsets // 32)
    xs, ys = rects([_slot_box(row_of[int(s) // 4], int(s) % 4, at) for s in sectors])
    return {"x": xs, "y": ys}


def _strip_lanes(step: Step, place: _StripPlace | None = None) -> dict:
    at = place.at if place else (lambda u, r: (u, r))
    _, row_of = strip_layout(step)
    xs, ys, info = [], [], []
    for off in step.offsets.tolist():
        x, y = at((off // 32) % 4 * 9 + (off % 32) // 4, row_of[off // 128])
        xs.append(x)
        ys.append(y)
        info.append([step.array, off, off // 128, off // 32])
    return {"x": xs, "y": ys, "marker": {"color": step.lanes.tolist()}, "customdata": info}


def coalescing_verdict(step: Step) -> str:
    """Coalesced when the warp needs no more sectors than the distinct bytes it touches fill: lanes that
    read one address share its bytes (in a 16x16 block two rows of threads read one column of A: 16
    floats, 64 bytes, 2 sectors, not the 4 that 32 lanes x 4 bytes would fill). Else the verdict says
    how many sectors those bytes would fit in side by side: a least for the data, not for these
    addresses (two floats of two rows of A take 2 sectors wherever they are; side by side, 1)."""
    if step.sectors == 1 and len(np.unique(step.offsets)) == 1 and len(step.lanes) > 1:
        return "one address for all lanes: a broadcast"
    touched = np.unique(step.offsets[:, None] + np.arange(4 * step.width))   # each lane: width 4-byte words
    ideal = max(1, -(-len(touched) // 32))
    return ("coalesced" if step.sectors <= ideal else
            f"uncoalesced: its {len(touched):,} B would fit in {style.count(ideal, 'sector')}")


def _coalescing_note(panel: WarpPanel, step: Step) -> str:
    bx, by = panel.block
    total = panel.total
    first, last = panel.steps[0].index + 1, panel.steps[-1].index + 1
    window = f" (animation: {first:,}–{last:,})" if last - first + 1 < total else ""
    return (f"<b>{panel.kernel}</b> · block {bx}x{by}, warp {panel.warp} · instruction {step.index + 1:,} of "
            f"{total:,}{window} · line {step.line}<br>{step.op} {step.array}: {style.count(len(step.lanes), 'lane')} → "
            f"<b>{style.count(step.sectors, 'sector')}</b> in {style.count(step.lines, 'line')} of 128 B: "
            f"<b>{coalescing_verdict(step)}</b>")

