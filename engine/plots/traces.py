"""The trace figures (Plotly) of the Coalescing, Tile phases and Bank conflicts pages, from the engine's
plain data (engine/metrics/views.py). Nothing here runs a kernel or imports Streamlit; fonts, colours and
sizes are engine/plots/style.py's, as for every figure.

Animations are Plotly frames: they play, pause, step and scrub in the browser with no round trip
to the server. Two rules keep every visible element in step with the frame:
  - everything that changes from frame to frame is a scatter trace (markers, outlines, the
    highlighted source line and the headline itself, drawn as text), because Plotly moves scatter
    traces without a full redraw, while layout parts (annotations, titles) and heatmaps are not
    updated, or vanish, when frames are played without one;
  - what does not change (matrix backgrounds, names, grid lines) is drawn once, as layout shapes,
    annotations or static traces that no frame touches.
Figures are laid out in pixels (the heights below), sized so that in presenter mode the headline,
the figure and its Play button fit one 1280x720 projector screen.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from engine.kernels import sources
from engine.metrics.views import BankSteps, SharedKernel, Step, TileView, WarpPanel
from engine.plots import style
from engine.plots.style import HIGHLIGHT, LANE_SCALE, Sizes

CONTROLS_PX = 86          # below the plot: the slider, then Play / Pause / Step buttons


def source_lines(file: str) -> list[str]:
    """A kernel's source, line by line (for the listing beside a figure)."""
    return sources.load(file).text.splitlines()


# --------------------------------------------------------------------------- shared parts
# (public: engine/plots/tensor.py draws the Tensor cores page's figures with them too)

def rects(boxes) -> tuple[list, list]:
    """The outlines of boxes (x0, x1, y0, y1) as one scatter trace's x and y, split by None gaps."""
    xs, ys = [], []
    for x0, x1, y0, y1 in boxes:
        xs += [x0, x1, x1, x0, x0, None]
        ys += [y0, y0, y1, y1, y0, None]
    return xs, ys


def axis(fig: go.Figure, n: int, x_domain, y_domain, x_range, y_range, anchor_square: bool = False) -> tuple[str, str]:
    """One panel of a figure: hidden axis pair n (1-based) at these paper domains; returns its trace refs."""
    sx = sy = "" if n == 1 else str(n)
    clamp = lambda d: [round(min(max(v, 0.0), 1.0), 6) for v in d]   # noqa: E731 - float dust off the ends
    x_domain, y_domain = clamp(x_domain), clamp(y_domain)
    xa = {"domain": list(x_domain), "range": list(x_range), "visible": False, "anchor": f"y{sy}", "fixedrange": True}
    ya = {"domain": list(y_domain), "range": list(y_range), "visible": False, "anchor": f"x{sx}", "fixedrange": True}
    if anchor_square:   # square cells; the picture shrinks inside its domain rather than stretch
        ya.update(scaleanchor=f"x{sx}", scaleratio=1, constrain="domain", constraintoward="top")
        xa.update(constrain="domain", constraintoward="left")
    fig.layout[f"xaxis{sx}"] = xa
    fig.layout[f"yaxis{sy}"] = ya
    return f"x{sx}", f"y{sy}"


def headline_trace(text: str, xref: str, yref: str, size: int) -> go.Scatter:
    """The frame's headline, as a text trace so it moves with the frames (see the module note)."""
    return go.Scatter(x=[0], y=[0.5], xaxis=xref, yaxis=yref, mode="text", text=[text],
                      textposition="middle right", textfont={"size": size, "color": style.INK}, hoverinfo="skip",
                      showlegend=False, cliponaxis=False)


@dataclass
class CodeView:
    """The source as shown: the kernel's lines (header comments are on the page already), long
    lines wrapped, and where each source line sits (display rows, top to bottom)."""
    texts: list[str]
    rows_of: dict[int, tuple[int, int]]   # source line -> (first display row, last display row)
    first: int
    last: int

    @property
    def n_rows(self) -> int:
        return len(self.texts)


def code_view(lines: list[str], chars: int, lo: int | None = None, hi: int | None = None,
              strip_comments: bool = False) -> CodeView:
    """lines[lo-1 .. hi-1] (1-based, inclusive; default: from the kernel's `__global__` line to
    the end), each wrapped to `chars` columns with its line number in front."""
    if lo is None:
        lo = next((n for n, l in enumerate(lines, 1) if "__global__" in l), 1)
    hi = len(lines) if hi is None else min(hi, len(lines))
    while hi > lo and not lines[hi - 1].strip():
        hi -= 1
    texts, rows_of = [], {}
    for n in range(lo, hi + 1):
        line = lines[n - 1].rstrip()
        if strip_comments and "//" in line and line.strip() and not line.strip().startswith("//"):
            line = line[:line.index("//")].rstrip()
        indent = len(line) - len(line.lstrip())
        body = textwrap.wrap(line.strip(), max(chars - 5 - indent, 12), break_long_words=True) or [""]
        start = len(texts)
        for i, part in enumerate(body):
            prefix = f"{n:3d}  " if i == 0 else "     "
            texts.append(prefix + " " * indent + ("" if i == 0 else "  ") + part)
        rows_of[n] = (start, len(texts) - 1)
    return CodeView(texts, rows_of, lo, hi)


def code_window(lines: list[str], wanted: set[int], max_rows: int, chars: int, strip_comments: bool) -> CodeView:
    """The kernel's source, cut to at most `max_rows` display rows around the lines the frames
    highlight (so a long kernel still reads at a legible size): the window grows from those lines
    outwards while it fits."""
    view = code_view(lines, chars, strip_comments=strip_comments)
    if view.n_rows <= max_rows or not wanted:
        return view
    lo, hi = max(min(wanted), view.first), min(max(wanted), view.last)
    best = code_view(lines, chars, lo, hi, strip_comments)
    grew = True
    while grew:
        grew = False
        for cand in ((lo - 1, hi), (lo, hi + 1)):
            if cand[0] < view.first or cand[1] > view.last:
                continue
            trial = code_view(lines, chars, *cand, strip_comments)
            if trial.n_rows <= max_rows:
                lo, hi, best, grew = cand[0], cand[1], trial, True
    return best


def fit_code(lines: list[str], wanted: set[int], width_px: float, height_px: float, st: Sizes) -> tuple[CodeView, int]:
    """The largest code font (down to 3 points below the page's) at which the whole kernel fits the
    column; below that, the page's smallest font and a window around the highlighted lines."""
    for font in range(st.code, st.code - 4, -1):
        rows, chars = int(height_px / (font * 1.45)), _chars_fitting(width_px, font)
        view = code_view(lines, chars, strip_comments=st.presenter)
        if view.n_rows <= rows:
            return view, font
    return code_window(lines, wanted, rows, chars, st.presenter), font


def _code_trace(view: CodeView, xref: str, yref: str, font: int) -> go.Scatter:
    """The listing, one display row per unit of the y axis (row 0 on top)."""
    return go.Scatter(x=[0] * view.n_rows, y=list(range(view.n_rows)), xaxis=xref, yaxis=yref, mode="text",
                      text=view.texts, textposition="middle right", hoverinfo="skip", showlegend=False,
                      textfont={"family": style.CODE_FAMILY, "size": font}, cliponaxis=False)


def _highlight(view: CodeView, line: int) -> dict:
    """The band behind source line `line` (all its wrapped rows); empty if the line is not shown."""
    if line not in view.rows_of:
        return {"x": [], "y": []}
    r0, r1 = view.rows_of[line]
    return {"x": [0, 1, 1, 0, 0], "y": [r0 - .5, r0 - .5, r1 + .5, r1 + .5, r0 - .5]}


def _highlight_trace(view: CodeView, line: int, xref: str, yref: str) -> go.Scatter:
    return go.Scatter(**_highlight(view, line), xaxis=xref, yaxis=yref, fill="toself", fillcolor=HIGHLIGHT,
                      line={"width": 0}, mode="lines", hoverinfo="skip", showlegend=False)


def _chars_fitting(px: float, font: int) -> int:
    return int(px / (0.62 * font)) - 1   # monospace glyphs are about 0.6 em wide


def controls(names: list[str], labels: list[str], duration: int, st: Sizes, redraw: bool,
             plot_px: float, url_key: str = "") -> dict:
    """Play / Pause / one step back / one step on (pages/lib/player.js does the steps), and a slider
    whose steps are the frames themselves, so it follows the animation and scrubs it. url_key: the
    page's query parameter that names the frame shown (frame names are its values), which the player
    keeps at the frame the figure stands still at."""
    args = lambda d: {"frame": {"duration": d, "redraw": redraw}, "mode": "immediate",  # noqa: E731
                      "transition": {"duration": 0}}
    font = st.base
    below = lambda px: -px / plot_px   # noqa: E731 - paper coordinates of a point px below the plot
    return {
        # (the buttons sit lower as the fonts grow, so presenter mode's slider labels stay clear of them)
        "updatemenus": [{"type": "buttons", "direction": "left", "x": 0, "y": below(48 + 2 * max(0, font - 12)),
                         "xanchor": "left",
                         "yanchor": "top", "showactive": False, "font": {"size": font}, "pad": {"t": 0, "r": 6},
                         "buttons": [{"label": "▶ Play", "method": "animate",
                                      "args": [None, {**args(duration), "fromcurrent": True}]},
                                     {"label": "❚❚ Pause", "method": "animate", "args": [[None], args(0)]},
                                     {"label": "◀ Step", "method": "skip", "args": []},
                                     {"label": "Step ▶", "method": "skip", "args": []}]}],
        "sliders": [{"active": 0, "x": 0, "len": 1, "y": below(4), "yanchor": "top", "pad": {"t": 0, "b": 0},
                     "currentvalue": {"visible": False}, "ticklen": 3, "minorticklen": 0,
                     "font": {"size": max(font - 3, 9)},
                     "steps": [{"label": lab, "method": "animate", "args": [[name], args(0)]}
                               for name, lab in zip(names, _sparse(labels))]}],
        **({"meta": {"url_key": url_key}} if url_key else {}),
    }


def _sparse(labels: list[str], most: int = 24) -> list[str]:
    """Slider tick labels: every one when few, else every k-th, so they never run together."""
    if len(labels) <= most:
        return labels
    k = -(-len(labels) // most)
    return [lab if i % k == 0 else "" for i, lab in enumerate(labels)]


class AnimatedFigure(go.Figure):
    """A figure whose frames travel as the plain dicts they were built as. Plotly (and st.plotly_chart,
    which re-checks whatever dict it is given) would otherwise validate hundreds of frames property
    by property: about a second per redraw. The base figure is a normal, checked one; the frames
    hold only x, y, text, marker colours and customdata of traces that figure already has."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._plain_frames, self._controls = [], {}   # the slider has a step per frame: unchecked too
        self._frozen: dict | None = None

    def to_dict(self) -> dict:
        if self._frozen is not None:
            return self._frozen
        out = super().to_dict()
        out["layout"].update(self._controls)
        out["frames"] = self._plain_frames
        return out

    def freeze(self) -> "AnimatedFigure":
        """Done: to_dict() is computed once and the same dict handed out from then on. A figure
        shared by every session showing its view (pages/lib/ui.py cached_figure) then costs each
        of them the JSON encoding only, not plotly's deep copy of every shape and frame. Nothing may
        change the figure or that dict afterwards (st.plotly_chart only reads it)."""
        self._frozen = self.to_dict()
        return self


def with_frames(fig: AnimatedFigure, frames: list[dict], player: dict) -> AnimatedFigure:
    """Gives fig its frames and its player (the layout part controls() returns), unchecked; returns fig."""
    fig._plain_frames, fig._controls = frames, player
    return fig


def _layout(fig: go.Figure, st: Sizes) -> None:
    style.apply(fig, st.base, margin={"t": 8, "b": CONTROLS_PX, "l": 8, "r": 8}, showlegend=False, dragmode=False)


def _headed_figure(head_px: int, body_px: int, st: Sizes):
    """A figure of a headline band over a body band, in pixels: (figure, plot height in px, a function
    from px to paper fractions)."""
    plot_px = head_px + body_px
    frac = lambda px: px / plot_px   # noqa: E731
    fig = AnimatedFigure()
    hx, hy = axis(fig, 1, (0, 1), (1 - frac(head_px), 1), (0, 1), (0, 1))
    fig.add_trace(headline_trace("", hx, hy, st.headline))
    fig.layout.height = plot_px + CONTROLS_PX + 8
    return fig, plot_px, frac


# --------------------------------------------------------------------------- coalescing

def coalescing_figure(panels: list[WarpPanel], presenter: bool = False, duration: int = 300) -> AnimatedFigure:
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
    body_px = (180 if presenter else 250) if n == 2 else 330
    head_px, gap_px = (44, 10) if presenter else (42, 18)
    title_px = st.base + 8                       # the names above the matrices and the strip
    plot_px = n * (head_px + body_px) + (n - 1) * gap_px
    x_mat, x_strip, x_code = (0, .47), (.49, .60), (.625, 1)
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
        offsets, x, titles = {}, 0, []
        for name, (rows, cols) in p.arrays.items():
            offsets[name] = x
            titles.append((name, x, rows, cols))
            x += cols + max(2, cols // 8)
        mrows = max(rows for rows, _ in p.arrays.values())
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
        fig.add_annotation(x=sum(x_strip) / 2, y=1 - body_top / plot_px, xref="paper", yref="paper", showarrow=False,
                           yanchor="top", text="128-B lines · 32-B sectors", font={"size": st.base})
        most_lines = max(max(len(np.unique(s.offsets // 128)) for s in p.steps), 4)
        row_px = (body_px - title_px) / most_lines
        strips.append(_StripPlace(x_strip, body_top + title_px, row_px,
                                  min((x_strip[1] - x_strip[0]) * st.width / 37, row_px) * .8))
        # source
        view, font = fit_code(source_lines(p.file), {s.line for s in p.steps}, (x_code[1] - x_code[0]) * st.width,
                              body_px, st)
        code_px = body_px / max(view.n_rows, body_px / (font * 1.45))
        place = lambda row, top=body_top, h=code_px: top + (row + .5) * h   # noqa: E731
        fig.add_trace(go.Scatter(x=[x_code[0]] * view.n_rows, y=[place(i) for i in range(view.n_rows)], xaxis=ox,
                                 yaxis=oy, mode="text", text=view.texts, textposition="middle right",
                                 hoverinfo="skip", showlegend=False, cliponaxis=False,
                                 textfont={"family": style.CODE_FAMILY, "size": font}))
        fig.add_trace(go.Scatter(xaxis=ox, yaxis=oy, fill="toself", fillcolor=HIGHLIGHT, line={"width": 0},
                                 mode="lines", hoverinfo="skip", showlegend=False))
        lights.append((len(fig.data) - 1, view, place, code_px))
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
    frames = []
    for i in range(n_frames):
        now = [p.steps[min(i, len(p.steps) - 1)] for p in panels]
        data = [{"text": [_coalescing_note(p, s) for p, s in zip(panels, now)]}]
        idx = [headline]
        for (lt, lanes_fn, st_, sectors_fn), s in zip(mats, now):
            data += [lanes_fn(s), sectors_fn(s)]
            idx += [lt, st_]
        for (t, view, place, code_px), s in zip(lights, now):
            data.append(_highlight_px(view, s.line, place, code_px))
            idx.append(t)
        slots, sectors, lanes = _merge([_strip_slots(s, pl) for s, pl in zip(now, strips)]), \
            _merge([_strip_sectors(s, pl) for s, pl in zip(now, strips)]), \
            _merge([_strip_lanes(s, pl) for s, pl in zip(now, strips)])
        data += [slots, sectors, lanes]
        idx += [slot_t, sector_t, lanes_t]
        frames.append({"name": str(i), "data": data, "traces": idx})
    for t, d in zip(frames[0]["traces"], frames[0]["data"]):
        fig.data[t].update(d)
    _layout(fig, st)
    first = panels[0].steps[0].index
    return with_frames(fig, frames, controls([f["name"] for f in frames], [str(first + i + 1) for i in range(n_frames)],
                                               duration, st, False, plot_px))


@dataclass(frozen=True)
class _StripPlace:
    """Where a panel's strip sits on the overlay: its x span (paper), its top and row height (px)."""
    x: tuple[float, float]
    top: float
    row_px: float
    marker: float

    def at(self, unit: float, row: float) -> tuple[float, float]:
        """Strip units (9 per sector slot, -1..36) and row numbers to overlay coordinates."""
        return self.x[0] + (unit + 1) / 37 * (self.x[1] - self.x[0]), self.top + (row + .5) * self.row_px


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


def _highlight_px(view: CodeView, line: int, place, code_px: float) -> dict:
    if line not in view.rows_of:
        return {"x": [], "y": []}
    r0, r1 = view.rows_of[line]
    top, bottom = place(r0) - code_px / 2, place(r1) + code_px / 2
    return {"x": [.625, 1, 1, .625, .625], "y": [top, top, bottom, bottom, top]}


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
    """Coalesced when the warp's lanes need no more sectors than their bytes fill (4 per 32 floats)."""
    if step.sectors == 1 and len(np.unique(step.offsets)) == 1 and len(step.lanes) > 1:
        return "one address for all lanes: a broadcast"
    ideal = -(-len(step.lanes) * 4 // 32)
    return "coalesced" if step.sectors <= ideal else f"uncoalesced ({ideal} would do)"


def _coalescing_note(panel: WarpPanel, step: Step) -> str:
    bx, by = panel.block
    total = panel.total
    first, last = panel.steps[0].index + 1, panel.steps[-1].index + 1
    window = f" (animation: {first:,}–{last:,})" if last - first + 1 < total else ""
    plural = lambda n, w: f"{n} {w}{'s' if n != 1 else ''}"   # noqa: E731
    return (f"<b>{panel.kernel}</b> · block {bx}x{by}, warp {panel.warp} · instruction {step.index + 1:,} of "
            f"{total:,}{window} · line {step.line}<br>{step.op} {step.array}: {len(step.lanes)} lanes → "
            f"<b>{plural(step.sectors, 'sector')}</b> in {plural(step.lines, 'line')} of 128 B: "
            f"<b>{coalescing_verdict(step)}</b>")


# --------------------------------------------------------------------------- bank conflicts

def bank_figure(shown: BankSteps, label: str, presenter: bool = False, duration: int = 400) -> AnimatedFigure:
    """Lanes (top row) wired to the banks holding their words; a bank's second, third ... word
    stacks below it: each layer is one more wavefront. shown: engine.metrics.views.bank_steps (with steps)."""
    st = style.sizes(presenter)
    steps, layers, total, what = shown.steps, shown.layers, shown.total, shown.what
    max_layer = max((int(max(l["layer"])) for l in layers), default=0)
    head_px = 48 if presenter else 44
    body_px = 400 if presenter else 420
    fig, plot_px, frac = _headed_figure(head_px, body_px, st)
    x_banks, x_code = (0.035, .6), (.63, 1)
    body = (0, 1 - frac(head_px) - frac(st.base + 12))   # room for the bank numbers above
    rows = max_layer + 1 + 3          # lanes at -2.5, a gap, then one row per wavefront
    bx_, by_ = axis(fig, 2, x_banks, body, (-1, 32), (max_layer + .6, -3.2))
    fig.layout.xaxis2.update(visible=True, side="top", tickvals=list(range(0, 32, 4)) + [31],
                             showgrid=False, zeroline=False, tickfont={"size": st.base - 1}, ticklabelstandoff=0)
    fig.layout.yaxis2.update(visible=True, tickvals=[-2.4] + list(range(max_layer + 1)),
                             ticktext=["lanes"] + [str(i + 1) if (i % max(1, (max_layer + 1) // 12) == 0 or i == max_layer)
                                                   else "" for i in range(max_layer + 1)],
                             title={"text": "wavefront", "standoff": 2}, showgrid=False, zeroline=False,
                             tickfont={"size": st.base - 1})
    bank_w = (x_banks[1] - x_banks[0]) * st.width / 33
    row_h = body_px / (rows + 1)
    square = max(min(bank_w * .8, row_h * .85, 18), 3)
    lane_labels = [""] * 32   # the bank numbers above say where lane i starts: lane i sits over bank i
    fig.add_trace(go.Scatter(x=list(range(32)), y=[-2.4] * 32, xaxis=bx_, yaxis=by_, mode="markers+text",
                             text=lane_labels, textposition="top center", textfont={"size": st.base - 1},
                             marker={"size": min(bank_w * .7, 14), "color": list(range(32)), "colorscale": LANE_SCALE},
                             hovertemplate="lane %{x}<extra></extra>", showlegend=False, cliponaxis=False))
    fig.add_trace(go.Scatter(xaxis=bx_, yaxis=by_, mode="lines", line={"width": 1, "color": style.WIRE},
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(xaxis=bx_, yaxis=by_, mode="markers", marker={"symbol": "square", "size": square},
                             hovertemplate="%{customdata}<extra></extra>", showlegend=False))
    view, font = fit_code(source_lines(shown.file), {s.line for s in steps}, (x_code[1] - x_code[0]) * st.width,
                          body_px, st)
    cx, cy = axis(fig, 3, x_code, body, (0, 1), (max(view.n_rows, body_px / (font * 1.45)) - .5, -.5))
    fig.add_trace(_highlight_trace(view, steps[0].line, cx, cy))
    fig.add_trace(_code_trace(view, cx, cy, font))
    frames = []
    for i, (step, lay) in enumerate(zip(steps, layers)):
        wx, wy = [], []   # a wire from each lane to each word it reads (4 for a 128-bit access)
        for b, y, lanes in zip(lay["bank"], lay["layer"], lay["lane"]):
            for lane in lanes:
                wx += [lane, int(b), None]
                wy += [-2.25, int(y), None]
        colors = [style.RED if extra else style.GREEN for extra in lay["extra"]]
        info = [f"bank {b}, word {w}<br>lanes {', '.join(map(str, lanes))}" + (" (broadcast)" if len(lanes) > 1 else "")
                for b, w, lanes in zip(lay["bank"], lay["word"], lay["lane"])]
        frames.append({"name": str(i), "traces": [0, 2, 3, 4], "data": [
            {"text": [bank_note(label, step, total, what)]},
            {"x": wx, "y": wy},
            {"x": [int(b) for b in lay["bank"]], "y": [int(y) for y in lay["layer"]], "marker": {"color": colors},
             "customdata": info},
            _highlight(view, step.line)]})
    for t, d in zip(frames[0]["traces"], frames[0]["data"]):
        fig.data[t].update(d)
    _layout(fig, st)
    return with_frames(fig, frames, controls([f["name"] for f in frames], [str(s.index + 1) for s in steps], duration, st,
                                  False, plot_px))


def bank_note(label: str, step: Step, total: int, what: str = "shared instruction") -> str:
    w = step.wavefronts
    extra = w - step.ideal
    verdict = "no conflict" if extra <= 0 else f"{extra} bank conflict{'s' if extra > 1 else ''}"
    head = f"<b>{label}</b> · {what} {step.index + 1:,} of {total:,} · line {step.line}, {step.op} {step.array}<br>"
    if step.width > 1:   # served a half-warp at a time: "n-way" would not say what it costs
        return (head + f"{len(step.lanes)} lanes × {4 * step.width} bytes, a half-warp at a time → <b>{w} wavefronts</b> "
                f"(at best {step.ideal}): <b>{verdict}</b>")
    return head + (f"{len(step.lanes)} lanes → <b>{w}-way</b>: {w} wavefront{'s' if w != 1 else ''}, "
                   f"<b>{verdict}</b>")


def ways_histogram(kernel: SharedKernel, presenter: bool = False) -> go.Figure:
    """Shared-load instructions by wavefronts each: as written and, if nvcc merged loads, as compiled."""
    st = style.sizes(presenter)
    fig = go.Figure()
    fig.add_bar(x=list(kernel.as_written), y=list(kernel.as_written.values()), name="as written (32-bit reads)")
    if kernel.as_compiled:
        fig.add_bar(x=list(kernel.as_compiled), y=list(kernel.as_compiled.values()), name="as compiled (LDS.128)")
    fig.update_xaxes(type="category")
    return style.apply(fig, st.base, barmode="group", height=320 * st.scale, margin={"t": 30},
                       xaxis_title="wavefronts per warp-level shared load (1 = no conflict)",
                       yaxis_title="instructions", legend={"orientation": "h", "y": 1.12})


# --------------------------------------------------------------------------- tile phases

def tile_phase_figure(tiles: TileView, presenter: bool = False, duration: int = 900) -> AnimatedFigure:
    """A, B and C with the block's tiles per phase: load (tiles outlined and filled, zero-filled
    overhang in red), barrier, compute (the block's C tile fills with its partial sums, one square
    per element coloured by value). All of it is scatter traces, so it plays without a redraw."""
    st = style.sizes(presenter)
    shape_a, shape_b, shape_c = (tiles.shapes[a] for a in ("A", "B", "C"))
    phases, partials, (c_rows, c_cols) = tiles.phases, tiles.partials, (tiles.rows, tiles.cols)
    load_line, compute_line, source = tiles.load_line, tiles.compute_line, source_lines(tiles.file)
    (m, k), (_, n) = shape_a, shape_b
    tile = phases[0].a_cols[1] - phases[0].a_cols[0]
    span = lambda size: -(-size // tile) * tile  # noqa: E731 - the tiles reach this far, overhang included
    head_px, body_px = (48, 380) if presenter else (44, 400)
    fig, plot_px, frac = _headed_figure(head_px, body_px, st)
    body = (0, 1 - frac(head_px) - frac(st.base + 10))
    widths = [span(k), span(n), span(n)]
    pic_w, gaps = .6, .025
    scale = (pic_w - 2 * gaps) / sum(widths)
    x0, refs = 0.0, []
    for i, ((rows, cols), w, title) in enumerate(zip((shape_a, shape_b, shape_c), widths,
                                                     (f"A ({m}x{k})", f"B ({k}x{n})", f"C ({m}x{n})"))):
        dom = (x0, x0 + w * scale)
        xr, yr = axis(fig, 2 + i, dom, body, (-.5, span(cols) - .5), (span(rows) - .5, -.5), anchor_square=True)
        refs.append((xr, yr))
        fig.add_shape(type="rect", xref=xr, yref=yr, x0=-.5, x1=cols - .5, y0=-.5, y1=rows - .5,
                      fillcolor=style.MATRIX_FILL, line={"color": style.MATRIX_EDGE, "width": 1}, layer="below")
        fig.add_annotation(x=sum(dom) / 2, y=body[1], xref="paper", yref="paper", yanchor="bottom", showarrow=False,
                           text=title, font={"size": st.base})
        x0 = dom[1] + gaps
    (ax, ay), (bx, by), (cx, cy) = refs
    # Per picture: the tile (blue), its zero-filled overhang (red); on C, the block's tile outline.
    dynamic = []
    for xr, yr in ((ax, ay), (bx, by)):
        for color, fill in ((style.BLUE, style.BLUE_FILL), (style.RED, style.RED_FILL)):
            fig.add_trace(go.Scatter(xaxis=xr, yaxis=yr, mode="lines", fill="toself", fillcolor=fill, hoverinfo="skip",
                                     line={"color": color, "width": 3 if color != style.RED else 1.5,
                                           "dash": "solid" if color != style.RED else "dot"}, showlegend=False))
            dynamic.append(len(fig.data) - 1)
    r0, r1 = c_rows
    c0, c1 = c_cols
    xs, ys = rects([(c0 - .5, min(c1, n) - .5, r0 - .5, min(r1, m) - .5)])
    fig.add_trace(go.Scatter(x=xs, y=ys, xaxis=cx, yaxis=cy, mode="lines", line={"color": style.BLUE, "width": 3},
                             hoverinfo="skip", showlegend=False))
    final = partials[-1]
    vmax = float(final.max()) if final.size else 1.0
    c_w = scale * span(n) * st.width
    cell = min(c_w / span(n), (body_px - st.base - 10) / span(m))
    fig.add_trace(go.Scatter(xaxis=cx, yaxis=cy, mode="markers", showlegend=False,
                             marker={"symbol": "square", "size": max(cell * .9, 2), "color": [], "colorscale": "Blues",
                                     "cmin": 0, "cmax": vmax, "showscale": True,
                                     "colorbar": {"title": {"text": "sum", "side": "right"}, "orientation": "h",
                                                  "x": x0 - gaps, "xanchor": "right", "len": .18, "y": -.02,
                                                  "yanchor": "top", "thickness": 10, "tickfont": {"size": st.base - 2}}},
                             hovertemplate="C[%{y}][%{x}] = %{marker.color:.3f}<extra></extra>"))
    sums = len(fig.data) - 1
    x_code = (.64, 1)
    view, font = fit_code(source, {load_line, compute_line}, (x_code[1] - x_code[0]) * st.width, body_px, st)
    sx, sy = axis(fig, 5, x_code, (0, 1 - frac(head_px)), (0, 1), (max(view.n_rows, body_px / (font * 1.45)) - .5, -.5))
    fig.add_trace(_highlight_trace(view, load_line, sx, sy))
    lit = len(fig.data) - 1
    fig.add_trace(_code_trace(view, sx, sy, font))
    frames, labels = [], []
    for ph, part in zip(phases, partials):
        for stage in ("load", "compute"):
            data = [{"text": [tile_note(ph, stage, len(phases), load_line if stage == "load" else compute_line)]}]
            for (rr, cc), (rows, cols) in (((ph.a_rows, ph.a_cols), shape_a), ((ph.b_rows, ph.b_cols), shape_b)):
                xs, ys = rects([(cc[0] - .5, cc[1] - .5, rr[0] - .5, rr[1] - .5)])
                data.append({"x": xs, "y": ys, "fillcolor": style.BLUE_FILL if stage == "load" else style.NO_FILL})
                over = [(max(cc[0], cols), cc[1], rr[0], rr[1]), (cc[0], cc[1], max(rr[0], rows), rr[1])]
                xs, ys = rects([(x_0 - .5, x_1 - .5, y_0 - .5, y_1 - .5) for x_0, x_1, y_0, y_1 in over
                                 if x_1 > x_0 and y_1 > y_0])   # the overhang: zero-filled
                data.append({"x": xs, "y": ys})
            done = part if stage == "compute" else (partials[ph.phase - 1] if ph.phase > 0 else None)
            if done is None:
                data.append({"x": [], "y": [], "marker": {"color": []}})
            else:
                rr, cc = np.mgrid[0:done.shape[0], 0:done.shape[1]]
                data.append({"x": (cc + c0).ravel().tolist(), "y": (rr + r0).ravel().tolist(),
                             "marker": {"color": np.round(done.ravel(), 4).tolist()}})
            data.append(_highlight(view, load_line if stage == "load" else compute_line))
            frames.append({"name": f"{ph.phase + 1} {stage}", "traces": [0, *dynamic, sums, lit], "data": data})
            labels.append(f"{ph.phase + 1} {stage}" if len(phases) <= 6 else f"{ph.phase + 1}{stage[0].upper()}")
    for t, d in zip(frames[0]["traces"], frames[0]["data"]):
        fig.data[t].update(d)
    _layout(fig, st)
    return with_frames(fig, frames, controls([f["name"] for f in frames], labels, duration, st, False, plot_px))


def tile_note(ph, stage: str, n_phases: int, line: int) -> str:
    head = f"phase {ph.phase + 1} of {n_phases} · line {line} · "
    if stage == "load":
        zeros = f", stores {ph.zero_filled} zeros for the overhang" if ph.zero_filled else ""
        return (head + f"<b>load</b>: the block reads {ph.a_loaded} elements of A and {ph.b_loaded} of B into "
                f"shared memory{zeros},<br>then waits at __syncthreads()")
    return head + (f"<b>compute</b>: every thread adds {ph.a_cols[1] - ph.a_cols[0]} products from shared memory "
                   "to its sum<br>(the C tile shows the block's partial sums after this phase)")


def reads_bar(counts: dict[str, int], presenter: bool = False) -> go.Figure:
    """Global loads by kernel (label -> count), each bar with its count written above it."""
    st = style.sizes(presenter)
    fig = go.Figure(go.Bar(x=list(counts), y=list(counts.values()), text=[f"{v:,}" for v in counts.values()],
                           textposition="outside", cliponaxis=False))
    return style.apply(fig, st.base, yaxis_title="global loads (element reads)", height=300 * st.scale,
                       margin={"t": 30})
