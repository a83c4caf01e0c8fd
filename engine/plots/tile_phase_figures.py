"""The Tile phases page's figures: A, B and C with a block's tiles phase by phase (load, barrier,
compute, the C tile filling with partial sums), and the bar chart of global loads by kernel.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from engine.metrics.views import TileView
from engine.plots import listing, style
from engine.plots.animation import AnimatedFigure, apply_style, axis, controls, headed_figure, rects, with_frames
from engine.plots.listing import PRESENTER_CODE_FROM, code_trace, fit_code, highlight, highlight_trace, source_lines


def tile_phase_figure(tiles: TileView, presenter: bool = False, duration: int = 900,
                      url_key: str = "") -> AnimatedFigure:
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
    fig, plot_px, frac = headed_figure(head_px, body_px, st)
    # The colour bar of C's sums has a band of its own under the pictures: below the plot it lay on
    # the slider's rail and labels ('2 compute' through its ticks).
    bar_px = st.base + 24
    body = (frac(bar_px), 1 - frac(head_px) - frac(st.base + 10))
    widths = [span(k), span(n), span(n)]
    titles = (f"A ({m}x{k})", f"B ({k}x{n})", f"C ({m}x{n})")
    pic_w, gaps = (PRESENTER_CODE_FROM - .04 if presenter else .6), .025
    slots = panel_widths(widths, [title_width(t, st) for t in titles], pic_w - 2 * gaps)
    x0, refs = 0.0, []
    for i, ((rows, cols), slot, title) in enumerate(zip((shape_a, shape_b, shape_c), slots, titles)):
        dom = (x0, x0 + slot)
        xr, yr = axis(fig, 2 + i, dom, body, (-.5, span(cols) - .5), (span(rows) - .5, -.5), anchor_square=True)
        refs.append((xr, yr))
        # the picture in the middle of its slot, under its title, when its title widened the slot
        fig.layout[f"xaxis{2 + i}"].constraintoward = "center"
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
    # The block's whole tile on C, its part past the matrix's edge red and dotted as on A and B: clipped
    # to the matrix, a 1x1 C was a dot beside A's and B's whole tiles.
    xs, ys = rects([(c0 - .5, c1 - .5, r0 - .5, r1 - .5)])
    fig.add_trace(go.Scatter(x=xs, y=ys, xaxis=cx, yaxis=cy, mode="lines", line={"color": style.BLUE, "width": 3},
                             hoverinfo="skip", showlegend=False))
    over = [(x_0, x_1, y_0, y_1) for x_0, x_1, y_0, y_1 in ((max(c0, n), c1, r0, r1), (c0, c1, max(r0, m), r1))
            if x_1 > x_0 and y_1 > y_0]
    if over:
        xs, ys = rects([(x_0 - .5, x_1 - .5, y_0 - .5, y_1 - .5) for x_0, x_1, y_0, y_1 in over])
        fig.add_trace(go.Scatter(x=xs, y=ys, xaxis=cx, yaxis=cy, mode="lines", fill="toself", fillcolor=style.RED_FILL,
                                 line={"color": style.RED, "width": 1.5, "dash": "dot"}, hoverinfo="skip",
                                 showlegend=False))
    final = partials[-1]
    vmax = float(final.max()) if final.size else 1.0
    c_w = slots[2] * st.width
    cell = min(c_w / span(n), (body_px - st.base - 10) / span(m))
    fig.add_trace(go.Scatter(xaxis=cx, yaxis=cy, mode="markers", showlegend=False,
                             marker={"symbol": "square", "size": max(cell * .9, 2), "color": [], "colorscale": "Blues",
                                     "cmin": 0, "cmax": vmax, "showscale": True,
                                     "colorbar": {"title": {"text": "sum", "side": "right"}, "orientation": "h",
                                                  "x": x0 - gaps, "xanchor": "right", "len": .18, "y": frac(bar_px - 4),
                                                  "yanchor": "top", "thickness": 10, "tickfont": {"size": st.base - 2}}},
                             hovertemplate="C[%{y}][%{x}] = %{marker.color:.3f}<extra></extra>"))
    sums = len(fig.data) - 1
    x_code = (PRESENTER_CODE_FROM if presenter else .64, 1)
    view, font = fit_code(source, {load_line, compute_line}, (x_code[1] - x_code[0]) * st.narrowest, body_px, st)
    sx, sy = axis(fig, 5, x_code, (0, 1 - frac(head_px)), (0, 1), (max(view.n_rows, body_px / (font * 1.45)) - .5, -.5))
    fig.add_trace(highlight_trace(view, load_line, sx, sy))
    lit = len(fig.data) - 1
    fig.add_trace(code_trace(view, sx, sy, font))
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
            data += [highlight(view, load_line if stage == "load" else compute_line), listing.TEXT_ABOVE_BAND]
            # "2-load": a link names it (url_key) without an escaped space
            frames.append({"name": f"{ph.phase + 1}-{stage}", "traces": [0, *dynamic, sums, lit, lit + 1], "data": data})
            labels.append(f"{ph.phase + 1} {stage}" if len(phases) <= 6 else f"{ph.phase + 1}{stage[0].upper()}")
    for t, d in zip(frames[0]["traces"], frames[0]["data"]):
        fig.data[t].update(d)
    apply_style(fig, st)
    return with_frames(fig, frames, controls([f["name"] for f in frames], labels, duration, st, False, plot_px, url_key))


def title_width(title: str, st: style.Sizes) -> float:
    """A panel title's width as a fraction of the figure at its narrowest, generously (0.6 em a character)."""
    return (len(title) * .6 * st.base + 6) / (st.narrowest - 16)


def panel_widths(widths: list[int], least: list[float], room: float) -> list[float]:
    """Each picture's share of `room` (paper fractions), in proportion to its width in cells, but none
    narrower than its title (`least`): a 128x7 B beside a 128x7 C drew "B (128xC)(128x7)"."""
    fixed: set[int] = set()
    while True:
        free = sum(w for i, w in enumerate(widths) if i not in fixed)
        scale = (room - sum(least[i] for i in fixed)) / free if free else 0
        grow = {i for i, w in enumerate(widths) if i not in fixed and w * scale < least[i]}
        if not grow:
            return [least[i] if i in fixed else w * scale for i, w in enumerate(widths)]
        fixed |= grow


def tile_note(ph, stage: str, n_phases: int, line: int) -> str:
    # Two lines of about equal length: each fits the figure at its narrowest (style.Sizes.narrowest);
    # the whole sentence on the first ran past its edge ('overhang,then')
    head = f"phase {ph.phase + 1} of {n_phases} · line {line} · "
    if stage == "load":
        zeros = f", stores {style.count(ph.zero_filled, 'zero')} for the overhang" if ph.zero_filled else ""
        return (head + f"<b>load</b>: the block reads {style.count(ph.a_loaded, 'element')} of A and {ph.b_loaded:,} "
                f"of B<br>into shared memory{zeros}, then waits at __syncthreads()")
    return head + (f"<b>compute</b>: every thread adds {style.count(ph.a_cols[1] - ph.a_cols[0], 'product')} from "
                   "shared memory"
                   "<br>to its sum (the C tile shows the block's partial sums after this phase)")


def reads_bar(counts: dict[str, int], presenter: bool = False) -> go.Figure:
    """Global loads by kernel (label -> count), each bar with its count written above it."""
    st = style.sizes(presenter)
    fig = go.Figure(go.Bar(x=list(counts), y=list(counts.values()), text=[f"{v:,}" for v in counts.values()],
                           textposition="outside", cliponaxis=False))
    # The kernels' names on two lines each: in the page's narrower column with the sidebar open, at a
    # projector's size, "naive (naive_x_cols)" and "tiled_guarded, TILE 16" ran into each other.
    fig.update_xaxes(tickvals=list(counts), ticktext=[style.two_lines(name) for name in counts], tickangle=0)
    return style.apply(fig, st.base, yaxis_title="global loads (element reads)", height=300 * st.scale,
                       margin={"t": 30})

