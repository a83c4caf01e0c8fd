"""The Bank conflicts page's figures: the animation of a warp's shared accesses wired to the 32
banks (each extra word in a bank is one more wavefront), and the histogram of a kernel's shared
loads by wavefronts.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from engine.metrics.analysis import served_lanes
from engine.metrics.views import BankSteps, SharedKernel, Step
from engine.plots import listing, style
from engine.plots.animation import AnimatedFigure, apply_style, axis, controls, headed_figure, with_frames
from engine.plots.listing import PRESENTER_CODE_FROM, code_trace, fit_windows, highlight, highlight_trace, source_lines
from engine.plots.style import LANE_SCALE


def bank_figure(shown: BankSteps, label: str, presenter: bool = False, duration: int = 400,
                url_key: str = "") -> AnimatedFigure:
    """Lanes (top row) wired to the banks holding their words; a bank's second, third ... word
    stacks below it: each layer is one more wavefront. shown: engine.metrics.views.bank_steps (with steps)."""
    st = style.sizes(presenter)
    steps, layers, total, what = shown.steps, shown.layers, shown.total, shown.what
    max_layer = max((int(max(l["layer"])) for l in layers), default=0)
    head_px = 48 if presenter else 44
    body_px = 400   # with the headline and the player, Play stays on a 720 px screen under the title
    fig, plot_px, frac = headed_figure(head_px, body_px, st)
    x_banks, x_code = ((0.035, PRESENTER_CODE_FROM - .03), (PRESENTER_CODE_FROM, 1)) if presenter else ((0.035, .6), (.63, 1))
    body = (0, 1 - frac(head_px) - frac(st.base + 12))   # room for the bank numbers above
    rows = max_layer + 1 + 3          # lanes at -2.5, a gap, then one row per wavefront
    bx_, by_ = axis(fig, 2, x_banks, body, (-1, 32), (max_layer + .6, -3.2))
    fig.layout.xaxis2.update(visible=True, side="top", tickvals=list(range(0, 32, 4)) + [31],
                             showgrid=False, zeroline=False, tickfont={"size": st.base - 1}, ticklabelstandoff=0)
    fig.layout.yaxis2.update(visible=True, tickvals=[-2.4] + list(range(max_layer + 1)),
                             ticktext=["lanes"] + every_few(max_layer + 1),
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
    windows, window_at, font = fit_windows(source_lines(shown.file), [s.line for s in steps],
                                           (x_code[1] - x_code[0]) * st.narrowest, body_px, st)
    view = windows[window_at[0]]
    cx, cy = axis(fig, 3, x_code, body, (0, 1), (listing.rows_shown(windows, body_px, font) - .5, -.5))
    fig.add_trace(highlight_trace(view, steps[0].line, cx, cy))
    fig.add_trace(code_trace(view, cx, cy, font))
    first, last = steps[0].index + 1, steps[-1].index + 1
    window = f" (animation: {first:,}–{last:,})" if last - first + 1 < total else ""
    frames = []
    for step, lay, at in zip(steps, layers, window_at):
        view = windows[at]
        wx, wy = [], []   # a wire from each lane to each word it reads (4 for a 128-bit access)
        for b, y, lanes in zip(lay["bank"], lay["layer"], lay["lane"]):
            for lane in lanes:
                wx += [lane, int(b), None]
                wy += [-2.25, int(y), None]
        colors = [style.RED if extra else style.GREEN for extra in lay["extra"]]
        info = [f"bank {b}, word {w}<br>lanes {', '.join(map(str, lanes))}" + (" (broadcast)" if len(lanes) > 1 else "")
                for b, w, lanes in zip(lay["bank"], lay["word"], lay["lane"])]
        # named by the instruction's number among the warp's (the slider's label): a link names it (url_key)
        frames.append({"name": str(step.index + 1), "traces": [0, 2, 3, 4, 5], "data": [
            {"text": [bank_note(label, step, total, what, window)]},
            {"x": wx, "y": wy},
            {"x": [int(b) for b in lay["bank"]], "y": [int(y) for y in lay["layer"]], "marker": {"color": colors},
             "customdata": info},
            highlight(view, step.line), listing.frame_text(windows, view)]})
    for t, d in zip(frames[0]["traces"], frames[0]["data"]):
        fig.data[t].update(d)
    apply_style(fig, st)
    names = [f["name"] for f in frames]
    return with_frames(fig, frames, controls(names, names, duration, st, False, plot_px, url_key))


def bank_note(label: str, step: Step, total: int, what: str = "shared instruction", window: str = "") -> str:
    """window: which of the `total` the animation holds, where it does not hold them all (" (animation:
    161–256)"), as the Coalescing headline says it."""
    w = step.wavefronts
    extra = w - step.ideal
    verdict = "no conflict" if extra <= 0 else f"{extra} bank conflict{'s' if extra > 1 else ''}"
    head = (f"<b>{label}</b> · {what} {step.index + 1:,} of {total:,}{window} · line {step.line}, {step.op} "
            f"{step.array}<br>")
    if step.width > 1:   # served a group of lanes at a time: "n-way" would not say what it costs
        first = np.full((1, 32), -1, dtype=np.int64)
        first[0, step.lanes] = step.offsets // 4
        group = int(served_lanes(first, step.width, step.op == "load")[0])
        return (head + f"{style.count(len(step.lanes), 'lane')} × {4 * step.width} bytes, "
                f"{style.count(group, 'lane')} at a time → <b>{style.count(w, 'wavefront')}</b> "
                f"(at best {step.ideal}): <b>{verdict}</b>")
    return head + (f"{style.count(len(step.lanes), 'lane')} → <b>{w}-way</b>: {style.count(w, 'wavefront')}, "
                   f"<b>{verdict}</b>")


def ways_histogram(kernel: SharedKernel, presenter: bool = False) -> go.Figure:
    """Shared-load instructions by wavefronts each: as written and, if nvcc merged loads, as compiled."""
    st = style.sizes(presenter)
    fig = go.Figure()
    fig.add_bar(x=list(kernel.as_written), y=list(kernel.as_written.values()), name="as written (32-bit reads)")
    if kernel.as_compiled:
        # Not "LDS.128": only the loads nvcc merged are wider; the rest stay the 32-bit reads they were.
        fig.add_bar(x=list(kernel.as_compiled), y=list(kernel.as_compiled.values()),
                    name="as compiled (nvcc's merges counted)")
    fig.update_xaxes(type="category")
    # The legend one entry a row in a top margin of its own (container units): placed in paper units
    # above the plot it wrapped to two rows in the page's narrow column and stood on the bars' tops.
    # The axis title on two lines: on one it ran past the right edge of that column.
    row_px = 1.5 * st.base + 6
    rows = len(fig.data)
    return style.apply(fig, st.base, barmode="group", height=320 * st.scale + rows * row_px,
                       margin={"t": round(rows * row_px + 12)},
                       xaxis_title="wavefronts per warp-level shared load<br>(1 = no conflict)",
                       yaxis_title="instructions",
                       legend={"orientation": "v", "yref": "container", "y": 1, "yanchor": "top", "x": 0,
                               "xanchor": "left"})


def every_few(rows: int, most: int = 12) -> list[str]:
    """Row labels 1..rows for an axis with room for about `most`: every few rows and the last, whose
    neighbour gives way when they would stand on each other (a 32-way conflict drew "31" over "32")."""
    step = max(1, rows // most)
    shown = [i for i in range(rows) if i % step == 0]
    if shown[-1] != rows - 1:
        if rows - 1 - shown[-1] < step:
            shown.pop()
        shown.append(rows - 1)
    return [str(i + 1) if i in shown else "" for i in range(rows)]
