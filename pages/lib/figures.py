"""Plotly figures for the pages, from the engine's plain data (engine/views.py). Nothing here runs a kernel.

Animations are Plotly frames: they play, pause, step and scrub in the browser with no round trip
to the server. Each figure draws the kernel source too, so the highlighted line moves in step.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.views import Step

LANE_SCALE = "Turbo"
MAX_CODE_CHARS = 92


def _fonts(presenter: bool) -> dict:
    return {"base": 20 if presenter else 12, "code": 15 if presenter else 10, "marker": 1.6 if presenter else 1.0}


def code_start(lines: list[str]) -> int:
    """First line worth showing: the header comment is on the page already, the code is what moves."""
    for n, line in enumerate(lines, start=1):
        if line.startswith("#include"):
            return n + 1
    return 1


def _code_trace(lines: list[str], font: int) -> go.Scatter:
    first = code_start(lines)
    text = [f"{n:3d}  {lines[n - 1][:MAX_CODE_CHARS]}" for n in range(first, len(lines) + 1)]
    return go.Scatter(x=[0] * len(text), y=list(range(first, len(lines) + 1)), mode="text", text=text,
                      textposition="middle right", textfont={"family": "monospace", "size": font},
                      hoverinfo="skip", showlegend=False, cliponaxis=False)


def _highlight(line: int) -> go.Scatter:
    return go.Scatter(x=[0, 1, 1, 0, 0], y=[line - .5, line - .5, line + .5, line + .5, line - .5], fill="toself",
                      fillcolor="rgba(255, 200, 0, 0.45)", line={"width": 0}, mode="lines", hoverinfo="skip",
                      showlegend=False)


def _rects(boxes: list[tuple[float, float, float, float]]) -> tuple[list, list]:
    xs, ys = [], []
    for x0, x1, y0, y1 in boxes:
        xs += [x0, x1, x1, x0, x0, None]
        ys += [y0, y0, y1, y1, y0, None]
    return xs, ys


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


def _controls(n_frames: int, labels: list[str], duration: int, font: int) -> dict:
    frame_args = lambda d: {"frame": {"duration": d, "redraw": False}, "mode": "immediate",  # noqa: E731
                            "transition": {"duration": 0}}
    return {
        "updatemenus": [{"type": "buttons", "direction": "left", "x": 0, "y": -0.08, "xanchor": "left",
                         "yanchor": "top", "showactive": False, "font": {"size": font},
                         "buttons": [{"label": "▶ Play", "method": "animate", "args": [None, {**frame_args(duration),
                                                                                              "fromcurrent": True}]},
                                     {"label": "❚❚ Pause", "method": "animate",
                                      "args": [[None], frame_args(0)]}]}],
        "sliders": [{"active": 0, "x": 0.16, "len": 0.84, "y": -0.04, "yanchor": "top",
                     "currentvalue": {"prefix": "step ", "font": {"size": font}},
                     "font": {"size": max(font - 4, 8)},
                     "steps": [{"label": labels[i], "method": "animate",
                                "args": [[str(i)], frame_args(0)]} for i in range(n_frames)]}],
    }


def _with_frames(fig: go.Figure, frames: list[dict]) -> dict:
    """The figure as a dict with its frames attached unvalidated: the base figure was checked once,
    and validating hundreds of frames property by property would cost seconds per redraw."""
    out = fig.to_dict()
    out["frames"] = frames
    return out


# --------------------------------------------------------------------------- coalescing

def coalescing_figure(panels: list[dict], presenter: bool = False, duration: int = 300) -> dict:
    """panels: [{label, arrays: {name: (rows, cols)}, steps: [Step], total, source: [str]}] drawn in step.

    Per panel: its matrices side by side (the active lanes' elements, coloured by lane, with the
    32-byte sectors they fall in outlined), a strip of just the touched sectors (8 floats each) to
    count them, and the source with the current line highlighted. The matrices share one axis, so
    a frame updates two traces per panel, not two per matrix: that keeps playback smooth.
    """
    f = _fonts(presenter)
    n_rows = len(panels)
    fig = make_subplots(rows=n_rows, cols=3, column_widths=[3.0, 1.2, 2.4], horizontal_spacing=0.04,
                        vertical_spacing=0.12, subplot_titles=["", "touched 32-byte sectors", "source"] * n_rows)
    dynamic, titles = [], []
    for r, p in enumerate(panels, start=1):
        offsets, x = {}, 0
        for name, (rows, cols) in p["arrays"].items():
            offsets[name] = x
            fig.add_trace(go.Heatmap(z=np.zeros((rows, cols)), x0=x, dx=1, colorscale=[[0, "#f0f0f0"], [1, "#f0f0f0"]],
                                     showscale=False, hoverinfo="skip", xgap=1, ygap=1), row=r, col=1)
            titles.append((r, x + cols / 2, f"{name} ({rows}x{cols})"))
            x += cols + max(2, x // 12 + 2)
        height = max(rows for rows, _ in p["arrays"].values())
        fig.update_xaxes(range=[-1, x - 1], visible=False, row=r, col=1)
        fig.update_yaxes(range=[height - .5, -.5], visible=False, scaleanchor=f"x{'' if r == 1 else 3 * (r - 1) + 1}",
                         row=r, col=1)
        # Marker side in pixels: about one drawn cell (the matrices fill ~560 px wide, ~280 px high).
        size = 0.9 * min(560 / max(x, 1), 280 / max(height, 1)) * f["marker"]
        fig.add_trace(go.Scatter(mode="markers", showlegend=False, marker={"symbol": "square", "size": size, "color": [],
                                 "colorscale": LANE_SCALE, "cmin": 0, "cmax": 31},
                                 hovertemplate="lane %{marker.color}<br>%{customdata}<extra></extra>"), row=r, col=1)
        dynamic.append((len(fig.data) - 1, _lanes_on(offsets, size)))
        fig.add_trace(go.Scatter(mode="lines", line={"color": "#d62728", "width": 1.5}, hoverinfo="skip",
                                 showlegend=False), row=r, col=1)
        dynamic.append((len(fig.data) - 1, _sectors_on(offsets, p["arrays"])))
        fig.add_trace(go.Scatter(mode="lines", line={"color": "#d62728", "width": 1.5}, hoverinfo="skip",
                                 showlegend=False), row=r, col=2)
        dynamic.append((len(fig.data) - 1, _strip_boxes))
        fig.add_trace(go.Scatter(mode="markers", showlegend=False, marker={"symbol": "square", "size": 9 * f["marker"],
                      "color": [], "colorscale": LANE_SCALE, "cmin": 0, "cmax": 31},
                      hovertemplate="lane %{marker.color}<br>%{customdata}<extra></extra>"), row=r, col=2)
        dynamic.append((len(fig.data) - 1, _strip_lanes))
        fig.update_xaxes(visible=False, row=r, col=2)
        fig.update_yaxes(visible=False, range=[8.5, -1.5], row=r, col=2)
        fig.add_trace(_highlight(p["steps"][0].line if p["steps"] else 0), row=r, col=3)
        dynamic.append((len(fig.data) - 1, _code_line))
        fig.add_trace(_code_trace(p["source"], f["code"]), row=r, col=3)
        fig.update_xaxes(visible=False, range=[0, 1], row=r, col=3)
        fig.update_yaxes(visible=False, range=[len(p["source"]) + .5, code_start(p["source"]) - .5], row=r, col=3)
    for r, x, text in titles:   # matrix names above each picture
        axis = "" if r == 1 else str(3 * (r - 1) + 1)
        fig.add_annotation(x=x, y=-.5, xref=f"x{axis}", yref=f"y{axis}", text=text, showarrow=False, yanchor="bottom",
                           font={"size": f["base"] - 1})

    n_frames = max(len(p["steps"]) for p in panels)
    per_panel = len(dynamic) // n_rows
    frames, labels = [], []
    for i in range(n_frames):
        data, idx, notes = [], [], []
        for r, p in enumerate(panels):
            step = p["steps"][min(i, len(p["steps"]) - 1)]
            for t, fn in dynamic[r * per_panel:(r + 1) * per_panel]:
                data.append(fn(step))
                idx.append(t)
            notes.append(_step_note(p["label"], step, p.get("total", len(p["steps"]))))
        frames.append({"name": str(i), "data": data, "traces": idx,
                       "layout": {"annotations": _annotations(fig, notes, n_rows, f["base"])}})
        labels.append(str(i))
    first = frames[0]
    for t, d in zip(first["traces"], first["data"]):
        fig.data[t].update(d)
    fig.update_layout(height=(400 if n_rows == 1 else 760) * (1.35 if presenter else 1), margin={"t": 90, "b": 110},
                      font={"size": f["base"]}, plot_bgcolor="white", annotations=first["layout"]["annotations"],
                      **_controls(n_frames, labels, duration, f["base"]))
    return _with_frames(fig, frames)


def _lanes_on(offsets: dict[str, int], size: float):
    def fn(step: Step) -> dict:
        where = [f"{step.array}[{r}][{c}], byte {o:,}" for r, c, o in zip(step.rows, step.cols, step.offsets)]
        return {"x": (step.cols + offsets[step.array]).tolist(), "y": step.rows.tolist(),
                "marker": {"color": step.lanes.tolist(), "size": size}, "customdata": where}
    return fn


def _sectors_on(offsets: dict[str, int], arrays: dict[str, tuple[int, int]]):
    def fn(step: Step) -> dict:
        boxes = [(x0 + offsets[step.array], x1 + offsets[step.array], y0, y1)
                 for x0, x1, y0, y1 in _sector_boxes(step.sector_ids, arrays[step.array][1])]
        xs, ys = _rects(boxes)
        return {"x": xs, "y": ys}
    return fn


def _strip_layout(step: Step):
    sectors = np.unique(step.sector_ids)
    pos = {int(s): j for j, s in enumerate(sectors)}
    per_row = 4   # sectors drawn per strip row: 4 sectors = one 128-byte line
    return sectors, pos, per_row


def _strip_boxes(step: Step) -> dict:
    sectors, pos, per_row = _strip_layout(step)
    boxes = []
    for s, j in pos.items():
        row, col = divmod(j, per_row)
        boxes.append((col * 9 - .5, col * 9 + 7.5, row - .4, row + .4))
    xs, ys = _rects(boxes)
    return {"x": xs, "y": ys}


def _strip_lanes(step: Step) -> dict:
    sectors, pos, per_row = _strip_layout(step)
    xs, ys, info = [], [], []
    for lane, off in zip(step.lanes, step.offsets):
        row, col = divmod(pos[int(off // 32)], per_row)
        xs.append(col * 9 + int(off % 32) // 4)
        ys.append(row)
        info.append(f"byte {int(off):,} of {step.array}<br>sector {int(off // 32)}")
    return {"x": xs, "y": ys, "marker": {"color": step.lanes.tolist()}, "customdata": info}


def _code_line(step: Step) -> dict:
    return {"y": [step.line - .5, step.line - .5, step.line + .5, step.line + .5, step.line - .5]}


def _step_note(label: str, step: Step, total: int) -> str:
    what = f"{step.op} {step.array}"
    if step.space == "global":
        verdict = "coalesced" if step.sectors <= 4 * max(1, len(step.lanes) // 32) else "uncoalesced"
        return (f"<b>{label}</b>: instruction {step.index + 1} of {total}, line {step.line}, {what}: "
                f"{len(step.lanes)} lanes, <b>{step.sectors} sector{'s' if step.sectors != 1 else ''}</b> "
                f"({step.lines} line{'s' if step.lines != 1 else ''} of 128 B), {verdict}")
    return (f"<b>{label}</b>: instruction {step.index + 1} of {total}, line {step.line}, {what}: "
            f"{len(step.lanes)} lanes, <b>{step.wavefronts} wavefront{'s' if step.wavefronts != 1 else ''}</b>")


def _annotations(fig: go.Figure, notes: list[str], n_rows: int, font: int) -> list[dict]:
    titles = [a.to_plotly_json() for a in fig.layout.annotations if a.text and "<b>" not in a.text]
    for a in titles:
        a.setdefault("font", {})["size"] = font - 1
    ys = [1.1, 0.5] if n_rows == 2 else [1.18]
    return titles + [{"text": n, "xref": "paper", "yref": "paper", "x": 0, "y": ys[i] if i < len(ys) else 1,
                      "xanchor": "left", "showarrow": False, "font": {"size": font + 3}} for i, n in enumerate(notes)]


# --------------------------------------------------------------------------- bank conflicts

def bank_figure(steps: list[Step], layers: list, source: list[str], presenter: bool = False,
                duration: int = 400, label: str = "") -> go.Figure:
    """Lanes (top) wired to the banks (bottom) holding their words; a bank's second, third ... word
    stacks below it: each layer is one more wavefront. layers[i] is engine.views.bank_layers(steps[i])."""
    f = _fonts(presenter)
    fig = make_subplots(rows=1, cols=2, column_widths=[2.2, 1.4], horizontal_spacing=0.04,
                        subplot_titles=["32 lanes (top) and the 32 banks of 4-byte words (bottom)", "source"])
    fig.add_trace(go.Scatter(x=list(range(32)), y=[-2] * 32, mode="markers+text", text=[str(i) for i in range(32)],
                             textposition="top center", marker={"size": 12 * f["marker"], "color": list(range(32)),
                             "colorscale": LANE_SCALE}, hoverinfo="skip", showlegend=False), row=1, col=1)
    fig.add_trace(go.Scatter(mode="lines", line={"width": 1, "color": "rgba(80,80,80,0.5)"}, hoverinfo="skip",
                             showlegend=False), row=1, col=1)
    fig.add_trace(go.Scatter(mode="markers", marker={"symbol": "square", "size": 16 * f["marker"]},
                             hovertemplate="%{customdata}<extra></extra>", showlegend=False), row=1, col=1)
    fig.add_trace(_highlight(steps[0].line), row=1, col=2)
    fig.add_trace(_code_trace(source, f["code"]), row=1, col=2)
    max_layer = max(int(max(l["layer"])) for l in layers) if layers else 0
    fig.update_xaxes(range=[-1, 32], title={"text": "bank (word address mod 32)"}, dtick=4, row=1, col=1)
    fig.update_yaxes(range=[max_layer + 1, -3], title={"text": "wavefront"}, tickvals=list(range(max_layer + 1)),
                     ticktext=[str(i + 1) for i in range(max_layer + 1)], row=1, col=1)
    fig.update_xaxes(visible=False, range=[0, 1], row=1, col=2)
    fig.update_yaxes(visible=False, range=[len(source) + .5, code_start(source) - .5], row=1, col=2)
    frames = []
    for i, (step, lay) in enumerate(zip(steps, layers)):
        pos = {}
        for b, y, lanes in zip(lay["bank"], lay["layer"], lay["lane"]):
            for lane in lanes:
                pos[lane] = (int(b), int(y))
        wx, wy = [], []
        for lane in step.lanes.tolist():
            b, y = pos[lane]
            wx += [lane, b, None]
            wy += [-2, y, None]
        colors = ["#2ca02c" if l == 0 else "#d62728" for l in lay["layer"]]
        info = [f"bank {b}, word {w}<br>lanes {', '.join(map(str, lanes))}" + (" (broadcast)" if len(lanes) > 1 else "")
                for b, w, lanes in zip(lay["bank"], lay["word"], lay["lane"])]
        note = (f"<b>{label}</b> shared instruction {i + 1} of {len(steps)}: line {step.line}, {step.op} {step.array}: "
                f"<b>{step.wavefronts}-way</b>: {step.wavefronts} wavefront{'s' if step.wavefronts != 1 else ''}"
                + ("" if step.wavefronts <= 1 else f", {step.wavefronts - 1} of them bank conflicts"))
        frames.append({"name": str(i), "traces": [1, 2, 3], "data": [
            {"x": wx, "y": wy},
            {"x": [int(b) for b in lay["bank"]], "y": [int(y) for y in lay["layer"]], "marker": {"color": colors},
             "customdata": info},
            _code_line(step)], "layout": {"title": {"text": note}}})
    for t, d in zip(frames[0]["traces"], frames[0]["data"]):
        fig.data[t].update(d)
    fig.update_layout(height=(460 + 18 * max_layer) * (1.3 if presenter else 1), font={"size": f["base"]},
                      title={"text": frames[0]["layout"]["title"]["text"], "font": {"size": f["base"]}},
                      margin={"t": 90, "b": 110}, plot_bgcolor="white",
                      **_controls(len(frames), [str(i) for i in range(len(frames))], duration, f["base"]))
    return _with_frames(fig, frames)


def ways_histogram(source_counts: dict[int, int], compiled_counts: dict[int, int] | None, presenter: bool = False):
    """Shared-load instructions by wavefronts each: source-level view and, if nvcc merged loads, as compiled."""
    f = _fonts(presenter)
    fig = go.Figure()
    fig.add_bar(x=list(source_counts), y=list(source_counts.values()), name="as written (32-bit reads)")
    if compiled_counts:
        fig.add_bar(x=list(compiled_counts), y=list(compiled_counts.values()), name="as compiled (LDS.128)")
    fig.update_layout(barmode="group", xaxis_title="wavefronts per warp-level shared load (1 = no conflict)",
                      yaxis_title="instructions", height=320 * (1.3 if presenter else 1), font={"size": f["base"]},
                      margin={"t": 30}, legend={"orientation": "h", "y": 1.12})
    fig.update_xaxes(type="category")
    return fig


# --------------------------------------------------------------------------- tile phases

def tile_phase_figure(shape_a, shape_b, shape_c, phases, partials, c_rows, c_cols, source: list[str],
                      load_line: int, compute_line: int, presenter: bool = False, duration: int = 900) -> go.Figure:
    """A, B and C with the block's tiles per phase: load (tiles outlined, zero-filled overhang
    hatched red), barrier, compute (the block's C tile fills with its partial sums)."""
    f = _fonts(presenter)
    (m, k), (_, n) = shape_a, shape_b
    tile = phases[0].a_cols[1] - phases[0].a_cols[0]
    span = lambda size: -(-size // tile) * tile  # noqa: E731 - the tiles reach this far, overhang included
    fig = make_subplots(rows=1, cols=4, column_widths=[span(k), span(n), span(n), max(k, n) * 1.4],
                        horizontal_spacing=0.05,
                        subplot_titles=[f"A ({m}x{k})", f"B ({k}x{n})", f"C ({m}x{n}): the block's partial sums", "source"])
    for col, (rows, cols) in ((1, shape_a), (2, shape_b), (3, shape_c)):
        fig.add_trace(go.Heatmap(z=np.zeros((rows, cols)), colorscale=[[0, "#eeeeee"], [1, "#eeeeee"]],
                                 showscale=False, hoverinfo="skip", xgap=1, ygap=1), row=1, col=col)
        fig.update_xaxes(range=[-.5, span(cols) - .5], row=1, col=col, showgrid=False, zeroline=False)
        fig.update_yaxes(range=[span(rows) - .5, -.5], row=1, col=col, showgrid=False, zeroline=False)
    final = partials[-1]
    vmax = float(final.max()) if final.size else 1.0
    fig.add_trace(go.Heatmap(z=np.full((m, n), np.nan), zmin=0, zmax=vmax, colorscale="Blues",
                             colorbar={"title": "sum", "len": .8},
                             hovertemplate="C[%{y}][%{x}] = %{z:.3f}<extra></extra>", xgap=1, ygap=1), row=1, col=3)
    c_trace = len(fig.data) - 1
    fig.add_trace(_highlight(load_line), row=1, col=4)
    fig.add_trace(_code_trace(source, f["code"]), row=1, col=4)
    fig.update_xaxes(visible=False, range=[0, 1], row=1, col=4)
    fig.update_yaxes(visible=False, range=[len(source) + .5, code_start(source) - .5], row=1, col=4)
    frames = []
    r0, r1 = c_rows
    c0, c1 = c_cols
    for ph, part in zip(phases, partials):
        for stage in ("load", "compute"):
            shapes = []
            for ref, (rr, cc), (rows, cols) in (("x", (ph.a_rows, ph.a_cols), shape_a), ("x2", (ph.b_rows, ph.b_cols), shape_b)):
                yref = "y" if ref == "x" else "y2"
                shapes.append({"type": "rect", "xref": ref, "yref": yref, "x0": cc[0] - .5, "x1": cc[1] - .5,
                               "y0": rr[0] - .5, "y1": rr[1] - .5, "line": {"color": "#1f77b4", "width": 3},
                               "fillcolor": "rgba(31,119,180,0.25)" if stage == "load" else "rgba(0,0,0,0)"})
                if rr[1] > rows or cc[1] > cols:   # the tile overhangs the matrix: those are zero-filled
                    for x0, x1, y0, y1 in ((max(cc[0], cols), cc[1], rr[0], rr[1]), (cc[0], cc[1], max(rr[0], rows), rr[1])):
                        if x1 > x0 and y1 > y0:
                            shapes.append({"type": "rect", "xref": ref, "yref": yref, "x0": x0 - .5, "x1": x1 - .5,
                                           "y0": y0 - .5, "y1": y1 - .5, "line": {"color": "#d62728", "dash": "dot"},
                                           "fillcolor": "rgba(214,39,40,0.25)"})
            shapes.append({"type": "rect", "xref": "x3", "yref": "y3", "x0": c0 - .5, "x1": min(c1, n) - .5,
                           "y0": r0 - .5, "y1": min(r1, m) - .5, "line": {"color": "#1f77b4", "width": 3}})
            zc = np.full((m, n), np.nan)
            if stage == "compute":
                zc[r0:r0 + part.shape[0], c0:c0 + part.shape[1]] = part
            elif ph.phase > 0:
                prev = partials[ph.phase - 1]
                zc[r0:r0 + prev.shape[0], c0:c0 + prev.shape[1]] = prev
            title = (f"phase {ph.phase + 1} of {len(phases)} · " +
                     (f"<b>load</b>: the block reads {ph.a_loaded} elements of A and {ph.b_loaded} of B into shared "
                      f"memory" + (f", stores {ph.zero_filled} zeros for the overhang" if ph.zero_filled else "") +
                      ", then waits at __syncthreads()" if stage == "load" else
                      f"<b>compute</b>: every thread adds {phase_width(ph)} products from shared memory to its sum"))
            frames.append({"name": f"{ph.phase}-{stage}", "traces": [c_trace, c_trace + 1],
                           "data": [{"type": "heatmap", "z": np.where(np.isnan(zc), None, zc).tolist()},
                                    _code_line_at(load_line if stage == "load" else compute_line)],
                           "layout": {"shapes": shapes, "title": {"text": title}}})
    fig.data[c_trace].update(z=frames[0]["data"][0]["z"])
    fig.update_layout(shapes=frames[0]["layout"]["shapes"],
                      title={"text": frames[0]["layout"]["title"]["text"], "font": {"size": f["base"]}},
                      height=520 * (1.3 if presenter else 1), font={"size": f["base"]}, plot_bgcolor="white",
                      margin={"t": 100, "b": 110})
    controls = _controls(len(frames), [fr["name"] for fr in frames], duration, f["base"])
    for step in controls["sliders"][0]["steps"]:
        step["args"][1]["frame"]["redraw"] = True   # heatmaps and shapes need a redraw
    controls["updatemenus"][0]["buttons"][0]["args"][1]["frame"]["redraw"] = True
    fig.update_layout(**controls)
    return _with_frames(fig, frames)


def phase_width(ph) -> int:
    return ph.a_cols[1] - ph.a_cols[0]


def _code_line_at(line: int) -> dict:
    return {"y": [line - .5, line - .5, line + .5, line + .5, line - .5]}


def reads_bar(counts: dict[str, int], presenter: bool = False) -> go.Figure:
    f = _fonts(presenter)
    fig = go.Figure(go.Bar(x=list(counts), y=list(counts.values()), text=[f"{v:,}" for v in counts.values()],
                           textposition="outside"))
    fig.update_layout(yaxis_title="global loads (element reads)", height=300 * (1.3 if presenter else 1),
                      font={"size": f["base"]}, margin={"t": 30})
    return fig
