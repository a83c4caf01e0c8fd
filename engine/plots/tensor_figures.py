"""The Tensor cores page's figures, from the plain data of engine/metrics/tensor_evidence.py,
tensor_tiles.py, recorded_fragments.py, ldmatrix_banks.py and engine/bench/speeds.py: the document's
WMMA kernel's evidence as a table, the tile hierarchy of a rung, the fragment map animated lane by
lane, ldmatrix's rows on the banks without and with the swizzle, and the rungs' speeds. Fonts, colours
and sizes are engine/plots/style.py's, the player controls engine/plots/animation.py's; no Streamlit here.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.bench.speeds import BASELINES, CLIFF, REFERENCE, Costs, TensorSpeeds
from engine.metrics import stalls
from engine.metrics.ldmatrix_banks import LdmatrixRows
from engine.metrics.ncu_reference import short_gpu
from engine.metrics.recorded_fragments import OPERANDS
from engine.metrics.stalls import Stalls
from engine.metrics.tensor_evidence import RECORDED_INPUTS, ZERO_MEAN_INPUTS, SeedEvidence, SeedFault
from engine.metrics.tensor_tiles import Hierarchy
from engine.plots import listing, style
from engine.plots.animation import CONTROLS_PX, AnimatedFigure, axis, controls, headline_trace, rects, with_frames

# --------------------------------------------------------------------------- 1. the document's kernel

def seed_error_table(ev: SeedEvidence, errors: pd.DataFrame) -> pd.DataFrame:
    """The kernel's error against A·B, one row per size, each column naming its inputs and where it
    comes from: recorded on the GPU, or computed here from the source (tensor_evidence.seed_errors)."""
    t = ev.table
    return pd.DataFrame({
        "M = N = K": [f"{n:,}" for n in t["M = N = K"]],
        f"vs A·B, inputs {RECORDED_INPUTS}: recorded on the {ev.device}": [f"{e:.1%}" for e in t["error vs A·B"]],
        "the same, computed here": ["—" if np.isnan(e) else f"{e:.1%}" for e in errors["computed"]],
        f"vs A·B, inputs {ZERO_MEAN_INPUTS}: computed here": ["—" if np.isnan(e) else f"{e:.0%}" for e in errors["zero-mean"]],
        "vs A·B' (B's 16×16 blocks transposed), recorded": [f"{e:.0e}" for e in t["error vs A·(B, 16x16 blocks transposed)"]],
    })


def seed_table(ev: SeedEvidence) -> pd.DataFrame:
    """The work the launch does, one row per size, as displayed (numbers formatted)."""
    t = ev.table
    return pd.DataFrame({
        "M = N = K": [f"{n:,}" for n in t["M = N = K"]],
        "warps launched / tiles of C": [f"{w:,} / {n:,} = {w // n}" for w, n in zip(t["warps launched"], t["tiles of C"])],
        # three significant figures: at two decimals 0.06 / 0.02 stood beside "2.7×", which a student
        # checking by hand could not get back
        "time (ms)": [_three_figures(v) for v in t["time (ms)"]],
        "wmma_warp (ms)": [_three_figures(v) for v in t["wmma_warp time (ms)"]],
        "slower by": [f"{v:.1f}×" for v in t["slower by"]],
    })


def _three_figures(v: float) -> str:
    """0.0564, 2.34, 18.2, 1,234: three significant figures, never in powers of ten."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def source_figure(lines: list[str], faults: list[SeedFault], presenter: bool = False) -> go.Figure:
    """The document's kernel as written, from its `__global__` line, each faulty line on a band and
    numbered at the right with its name (① the warp index, ...)."""
    st = style.sizes(presenter)
    font = st.code + 1
    # Of the width, the code's share: the rest holds the faults' names (bold, about 0.6 em a character),
    # planned at the figure's narrowest (presenter mode with the sidebar open), where a projector's
    # names ran past the figure's edge and the code under them.
    names_px = max((len(f"{FAULT_MARKS[i]} {f.name} (line {f.line})") for i, f in enumerate(faults)), default=0) \
        * 0.6 * st.base + 16
    code_share = min(0.74, 1 - names_px / st.narrowest)
    view = listing.code_view(lines, listing.chars_fitting(st.narrowest * code_share, font))
    fig = go.Figure()
    for i, f in enumerate(faults):
        band = listing.highlight(view, f.line)
        fig.add_trace(go.Scatter(**band, fill="toself", fillcolor=style.HIGHLIGHT, line={"width": 0}, mode="lines",
                                 hoverinfo="skip", showlegend=False))
        if band["y"]:
            fig.add_annotation(x=code_share + 0.01, y=(band["y"][0] + band["y"][2]) / 2, xanchor="left", showarrow=False,
                               text=f"<b>{FAULT_MARKS[i]} {f.name}</b> (line {f.line})",
                               font={"size": st.base, "color": style.RED})
    trace = listing.code_trace(view, "x", "y", font)
    fig.add_trace(trace)
    row_px = font * 1.45
    fig.update_xaxes(visible=False, range=[0, 1], fixedrange=True)
    fig.update_yaxes(visible=False, range=[view.n_rows - 0.5, -0.5], fixedrange=True)
    return style.apply(fig, st.base, height=round(view.n_rows * row_px + 16), margin={"t": 8, "b": 8, "l": 8, "r": 8},
                       showlegend=False, dragmode=False)


FAULT_MARKS = "①②③④"


def instruction_table(t: pd.DataFrame) -> pd.DataFrame:
    """tensor_instructions() as displayed: counts with thousands separators, the ratio as 'N per warp'."""
    out = t.copy()
    for col in ("operations", "tensor instructions (ncu)"):
        out[col] = out[col].map(lambda v: f"{v:,}")
    out["per operation, per warp"] = out["per operation, per warp"].map(lambda v: f"{v:g}")
    return out


# --------------------------------------------------------------------------- 2. the hierarchy

def _tiles(n: int, what: str) -> str:
    return f"{n} {what}" + ("s" if n != 1 else "")


def hierarchy_figure(h: Hierarchy, presenter: bool = False) -> go.Figure:
    """Three panels, left to right: the block's tile of C split into warp tiles, one warp tile split
    into instruction tiles, one instruction M x N x K; each drawn to its own scale, labelled. The
    figure is as tall as its most upright panel needs, so a wide tile leaves no blank band below."""
    st = style.sizes(presenter)
    # Each panel's title on two lines: on one, the block's ran past the figure's left edge in a
    # projector's size with the sidebar open (a panel is then about 240 px wide)
    fig = make_subplots(1, 3, horizontal_spacing=0.06, subplot_titles=(
        f"block: {h.block[0]} × {h.block[1]} of C,<br>"
        + (f"{h.threads // 32} warps" if h.warps_per_tile > 1 else f"{h.threads} threads"),
        f"one {h.unit}:<br>{h.warp[0]} × {h.warp[1]}",
        f"one instruction:<br>{h.mma[0]} × {h.mma[1]} × {h.mma[2]}"))
    aspects = []
    panel_px = st.width * 0.29   # a third of the planned width, less the spacing

    def grid(col, rows, cols, tile_r, tile_c, fill, label, pad=1.0):
        for i in range(rows // tile_r):
            for j in range(cols // tile_c):
                fig.add_shape(type="rect", x0=j * tile_c, x1=(j + 1) * tile_c, y0=i * tile_r, y1=(i + 1) * tile_r,
                              line={"color": style.CELL_LINE, "width": 1.5}, fillcolor=fill, row=1, col=col)
        # Below the tile, its label's lines, in the panel's units. Each line is kept short: a panel is
        # about 240 px wide at 1280 x 720 with the sidebar open, and a longer line ran past the figure.
        label_px = (label.count("<br>") + 1) * st.base * 1.4 + 6
        room = label_px * (cols + 2) / panel_px
        fig.add_annotation(x=cols / 2, y=rows + room * 0.1, text=label, showarrow=False, yanchor="top",
                           font={"size": st.base}, row=1, col=col)
        fig.update_xaxes(range=[-1, cols + pad], row=1, col=col)
        fig.update_yaxes(range=[rows + room, -pad], scaleanchor=f"x{'' if col == 1 else col}", row=1, col=col)
        aspects.append((rows + room + pad) / (cols + 1 + pad))

    br, bc = h.block
    wr, wc = h.warp
    mr, mc, mk = h.mma
    tiles = _tiles((br // wr) * (bc // wc), h.unit + " tile") + f"<br>of {wr} × {wc}"
    step = 0.05 * max(br, bc)   # how far each copy of a tile computed again sits behind the one before
    if h.warps_per_tile > 1:   # every warp of the block on the same tile: a stack of that many sheets
        for i in range(h.warps_per_tile - 1, -1, -1):   # back to front, each hiding the one behind
            step_i = step * i
            fig.add_shape(type="rect", x0=step_i, x1=wc + step_i, y0=-step_i, y1=wr - step_i,
                          line={"color": style.RED, "width": 1.5}, fillcolor=style.MATRIX_FILL, row=1, col=1)
        tiles += f",<br>computed {h.warps_per_tile} times:<br>all {h.warps_per_tile} {h.unit}s on it"
    grid(1, br, bc, wr, wc, style.BLUE_FILL, tiles, 1 + step * (h.warps_per_tile - 1))
    grid(2, wr, wc, mr, mc, style.RED_FILL, f"{_tiles((wr // mr) * (wc // mc), 'instruction tile')} of {mr} × {mc},"
                                            f"<br>K in steps of {mk}")
    instruction = h.instruction.replace(" (", "<br>(")   # wmma m16n16k16<br>(2 × HMMA.16816)
    product = f"A {mr} × {mk} · B {mk} × {mc} → C {mr} × {mc}"
    if len(product) > 32:   # wgmma's 64 × 256 ran past the figure; mma.sync's 16 × 8 fits on one line
        product = product.replace(" → ", "<br>→ ")
    grid(3, mr, mc, mr, mc, style.GREEN_FILL, f"{instruction}<br>{product}")
    fig.update_xaxes(visible=False, fixedrange=True)
    fig.update_yaxes(visible=False, fixedrange=True)
    for a in fig.layout.annotations[:3]:
        a.font = {"size": st.headline, "color": style.INK}
    top, bottom = 16 + round(2 * st.headline * 1.3), 8   # the titles' two lines
    height = top + bottom + panel_px * min(max(aspects), 1.3)
    return style.apply(fig, st.base, height=round(height), margin={"t": top, "b": bottom, "l": 8, "r": 8},
                       showlegend=False, dragmode=False)


# --------------------------------------------------------------------------- 3. fragment maps

def fragment_headline(operand: str, lane: int, held: np.ndarray) -> str:
    rows = sorted({int(r) for r, _ in held})
    cols = sorted({int(c) for _, c in held})
    distinct = len({(int(r), int(c)) for r, c in held})
    pairs = [label.replace("<br>", " and ") for label in cell_registers(held)[2][:2]]
    twice = (f"<br>each of them in two of its {len(held)} registers ({', '.join(pairs)}, ...)"
             if len(held) > distinct else "")
    return (f"lane {lane} of 32 holds {distinct} elements of {OPERANDS[operand].label.split(' (')[0]}: "
            f"rows {', '.join(map(str, rows))} × columns {', '.join(map(str, cols))}{twice}")


def cell_registers(held: np.ndarray) -> tuple[list[int], list[int], list[str]]:
    """One lane's registers grouped by the cell they hold: x, y and a label per distinct cell ("x0" or,
    where WMMA's fragment holds an element twice, "x0<br>x8"), in the order of the first register."""
    cells: dict[tuple[int, int], list[int]] = {}
    for e, (r, c) in enumerate(held):
        cells.setdefault((int(r), int(c)), []).append(e)
    return ([c for _, c in cells], [r for r, _ in cells],
            ["<br>".join(f"x{e}" for e in regs) for regs in cells.values()])


def fragment_figure(operand: str, recorded: np.ndarray, owners: np.ndarray, lane: int = 0, presenter: bool = False,
                    duration: int = 600, url_key: str = "") -> AnimatedFigure:
    """The operand's tile, every cell labelled with the lane(s) that hold it (as recorded on the GPU);
    one frame per lane, that lane's cells filled and labelled with its element order (x0, x1, ...)."""
    st = style.sizes(presenter)
    rows, cols = OPERANDS[operand].shape
    # Cells big enough to read across a room: 16 rows of 30 px fill most of a 720 px screen's height
    # with the headline, the column numbers and the player (34 px presenting pushed Play off it),
    # with room for two register names in a cell.
    twice = len(recorded[0]) > len({(int(r), int(c)) for r, c in recorded[0]})   # WMMA's A and B: a second line
    head_px, tick_px, cell = (64 if twice else 40), 24, 30
    body_px = rows * cell + 8
    plot_px = head_px + tick_px + body_px
    fig = AnimatedFigure()
    frac = head_px / plot_px
    hx, hy = axis(fig, 1, (0, 1), (1 - frac, 1), (0, 1), (0, 1))
    # Square cells, left-aligned after the row numbers: the tile's width in px is cols * cell, of the
    # figure's planned width.
    left = tick_px / st.width
    width = cols * cell / st.width
    gx, gy = axis(fig, 2, (left, min(1.0, left + width * 1.02)), (0, 1 - (head_px + tick_px) / plot_px),
                  (-0.5, cols - 0.5), (rows - 0.5, -0.5))
    ticks = {"visible": True, "showgrid": False, "zeroline": False, "showline": False, "ticks": "",
             "tickmode": "linear", "tick0": 0, "dtick": 1, "tickfont": {"size": max(st.base - 1, st.least), "color": style.NOTE_INK}}
    fig.layout[gx.replace("x", "xaxis")].update(side="top", **ticks)
    fig.layout[gy.replace("y", "yaxis")].update(**ticks)
    fig.add_trace(headline_trace("", hx, hy, st.headline))
    yy, xx = np.mgrid[0:rows, 0:cols]
    label = max(st.base - 2, 10)
    fig.add_trace(go.Scatter(x=xx.ravel(), y=yy.ravel(), xaxis=gx, yaxis=gy, mode="markers+text",
                             text=list(owners.ravel()), textfont={"size": label, "color": style.NOTE_INK},
                             marker={"symbol": "square", "size": cell - 2, "color": style.MATRIX_FILL},
                             customdata=list(owners.ravel()),   # the hover's: the text is blanked under a lane
                             hovertemplate="row %{y}, col %{x}: lane %{customdata}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[], y=[], xaxis=gx, yaxis=gy, mode="markers+text", text=[],
                             textfont={"size": label, "color": style.BAR_TEXT},
                             marker={"symbol": "square", "size": cell - 2, "color": style.BLUE}, hoverinfo="skip"))
    frames = []
    for each in range(32):
        held = recorded[each]
        x, y, text = cell_registers(held)
        # the owners' numbers blank where the lane's register names stand: the filled cell hid the
        # number, but a viewer reading the text (and the layout test) found two labels on one cell.
        # Blank as a space, not "": Plotly removes an empty text's element, and an animation without
        # redraw never makes it again, so the cells the last lanes held stayed blank under later ones.
        others = owners.astype(str)   # a copy
        others[y, x] = " "
        frames.append({"name": str(each), "traces": [0, 1, 2], "data": [
            {"text": [fragment_headline(operand, each, held)]}, {"text": others.ravel().tolist()},
            {"x": x, "y": y, "text": text}]})
    for t, d in zip(frames[lane]["traces"], frames[lane]["data"]):   # opens on the chosen lane
        fig.data[t].update(d)
    style.apply(fig, st.base, margin={"t": 8, "b": CONTROLS_PX, "l": 8, "r": 8}, showlegend=False, dragmode=False,
                height=plot_px + CONTROLS_PX + 8)
    player = controls([f["name"] for f in frames], [f["name"] for f in frames], duration, st, False, plot_px, url_key)
    player["sliders"][0]["active"] = lane
    return with_frames(fig, frames, player)



# --------------------------------------------------------------------------- 4. ldmatrix banks

def banks_figure(panels: list[tuple[str, LdmatrixRows]], presenter: bool = False) -> go.Figure:
    """For each kernel, matrix 0 of one ldmatrix.x4 of A: its 8 rows (lanes 0-7 name them) as 16-byte bars
    over the 32 banks, stacked where rows share banks; the title says the wavefronts per matrix."""
    st = style.sizes(presenter)
    # Titles on two lines: one line ran past the chart's half of a 1280 px page.
    fig = make_subplots(len(panels), 1, vertical_spacing=0.28, subplot_titles=[
        f"<b>{name}</b>, A's ldmatrix.x4:<br>{r.wavefronts()[0]} wavefront{'s' if r.wavefronts()[0] > 1 else ''} "
        f"per matrix, {sum(r.wavefronts())} per instruction" for name, r in panels])
    for i, (_, r) in enumerate(panels, 1):
        depth: dict[int, int] = {}
        boxes, labels = [], []
        for j in range(8):
            b = int(r.bank[j])
            level = depth.get(b // 4, 0)
            depth[b // 4] = level + 1
            boxes.append((b, b + 4, level, level + 0.9))
            labels.append((b + 2, level + 0.45, f"r{int(r.rows[j])}"))
        xs, ys = rects(boxes)
        fig.add_trace(go.Scatter(x=xs, y=ys, fill="toself", fillcolor=style.BLUE_FILL, line={"color": style.BLUE},
                                 mode="lines", hoverinfo="skip"), row=i, col=1)
        fig.add_trace(go.Scatter(x=[a for a, _, _ in labels], y=[b for _, b, _ in labels], mode="text",
                                 text=[t for _, _, t in labels], textfont={"size": max(st.base - 2, 9)},
                                 hoverinfo="skip"), row=i, col=1)
        fig.update_yaxes(range=[-0.2, 4.2], title_text="rows on a bank", tickvals=[0.45, 1.45, 2.45, 3.45],
                         ticktext=["1", "2", "3", "4"], row=i, col=1)
        fig.update_xaxes(range=[0, 32], dtick=4, title_text="bank" if i == len(panels) else None, row=i, col=1)
    for a in fig.layout.annotations:
        a.font = {"size": st.headline, "color": style.INK}
    return style.apply(fig, st.base, height=480 if presenter else 440, margin={"t": 60, "b": 8, "l": 8, "r": 8},
                       showlegend=False, dragmode=False)


# --------------------------------------------------------------------------- 5. speeds

def speed_figure(s: TensorSpeeds, chosen: str, note: str) -> go.Figure:
    """TFLOP/s of each rung and baseline at one size; each rung's share of cuBLAS FP16 (the same
    product) under its figure and on the right axis; the rung the page is on in its own colour, cuBLAS
    FP16 in red, the other baselines grey; a kernel whose row is not a time comes last, marked "not timed"."""
    st = style.PRESENTER   # in both modes: one figure, which switching modes does not redraw (style.Sizes)
    names = list(s.bars["kernel"]) + list(s.failed)
    rows = s.bars.set_index("kernel")
    tflops = [rows["tflops"].get(k) for k in names]
    pct = [rows["pct"].get(k) for k in names]
    rung = [k not in BASELINES for k in names]
    text = ["" if t is None else f"{t:,.0f}" + (f"<br>{style.share(p)}" if r and p is not None and pd.notna(p) else "")
            for t, p, r in zip(tflops, pct, rung)]
    colors = [style.PALETTE[4] if k == chosen else style.RED if k == REFERENCE else style.BLUE if r
              else style.SECOND_ROOF for k, r in zip(names, rung)]
    # constraintext none: Plotly shrinks a label wider than its bar, and "769<br>99.7%" (a share shown
    # to a tenth, where a whole percent would read as a tie) was drawn smaller than its neighbours.
    fig = go.Figure(go.Bar(x=names, y=[t or 0 for t in tflops], marker_color=colors, text=text,
                           textposition="outside", constraintext="none", textfont={"size": st.base - 2},
                           cliponaxis=False, showlegend=False,
                           customdata=np.array([[rows["title"].get(k, ""), rows["params"].get(k, "")] for k in names]),
                           hovertemplate="%{customdata[0]}<br>%{customdata[1]}<br>%{y:,.0f} TFLOP/s<extra></extra>"))
    top = max([t or 0 for t in tflops]) * 1.3 or 1
    ref = rows["tflops"].get(REFERENCE)
    if ref:
        style.percent_axis(fig, top, ref, "% of cuBLAS FP16")
    for k in s.failed:
        fig.add_annotation(x=k, y=0, text="not timed", showarrow=False, yanchor="bottom",
                           font={"color": style.RED, "size": st.base})
    title = style.with_note(f"TFLOP/s at {s.size:,}³ · {s.label}", note, st)   # each note line gets its margin
    return style.apply(fig, st.chart, height=420 * st.scale,
                       title={"text": title, "x": 0, "xanchor": "left"},
                       yaxis={"title": "TFLOP/s", "range": [0, top]}, xaxis={"type": "category", "automargin": True, "tickangle": style.UPRIGHT},
                       margin={"t": 56 + (st.base + 4) * (note.count("<br>") + 1), "b": 8, "l": 8, "r": 8},
                       showlegend=False)


def costs_figure(c: Costs, note: str) -> go.Figure:
    """mma_pipelined as written, without each of its barrier, stores of C and copies, without all three,
    and mma_tma: each as a share of cuBLAS FP16 at its size (bars grouped by size, TFLOP/s and share on
    each), up to cuBLAS FP16's own 100%, drawn as a red line."""
    st = style.PRESENTER   # in both modes, as the speed chart
    fig = go.Figure()
    for i, (size, t) in enumerate(c.table.groupby("size", sort=True)):
        fig.add_trace(go.Bar(x=list(t["variant"]), y=t["pct"].tolist(), name=f"{size:,}³",
                             marker_color=(style.BLUE, style.GREEN, style.PALETTE[3])[i % 3],
                             text=[f"{v:,.0f}<br>{p:.0f}%" for v, p in zip(t["tflops"], t["pct"])],
                             textposition="outside", cliponaxis=False, textfont={"size": st.base - 1},
                             customdata=[[lb, v, 100 * g] for lb, v, g in zip(t["label"], t["tflops"], t["gain"])],
                             hovertemplate=f"{size:,}³<br>%{{customdata[0]}}<br>%{{customdata[1]:,.0f}} TFLOP/s, "
                                           "%{y:.1f}% of cuBLAS FP16<br>%{customdata[2]:+.1f}% over as written<extra></extra>"))
    fig.add_hline(y=100, line={"color": style.RED, "dash": "dash"}, annotation_text="cuBLAS FP16",
                  annotation_position="top left", annotation_font={"color": style.RED, "size": st.base})
    # "H100", not the whole of nvidia-smi's name: one line at 1280 px.
    title = style.with_note(f"mma_pipelined with three costs taken out · TFLOP/s, % of cuBLAS FP16 · {short_gpu(c.gpu)}",
                            note, st)
    font = st.chart
    ticks_px, legend_px = 2 * 1.3 * font + 12, 1.5 * font + 8
    return style.apply(fig, font, height=460 * st.scale + legend_px, barmode="group",
                       title={"text": title, "x": 0, "xanchor": "left"},
                       yaxis={"title": "% of cuBLAS FP16", "range": [0, 112], "ticksuffix": "%", "dtick": 20},
                       xaxis={"type": "category"},
                       legend={"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0, "x": 0},
                       margin={"t": 56 + (st.base + 4) * (note.count("<br>") + 1), "b": round(ticks_px + legend_px),
                               "l": 8, "r": 8})


# Each reason in one colour across the kernels: the ones that differ between them (the long scoreboard,
# the barrier) in the strong colours, the tensor pipe busy in green (the state to want).
STALL_COLORS = {"issuing": style.PALETTE[7], "tensor pipe busy": style.GREEN, "fixed-latency wait": style.PALETTE[5],
                "long scoreboard": style.RED, "barrier": style.PALETTE[4], "another warp issued": style.PALETTE[8],
                "short scoreboard": style.PALETTE[3], "dispatch": style.PALETTE[6], "MIO queue full": style.BLUE,
                "other": style.PALETTE[16]}
BAR_WIDTH = 0.5   # of a kernel's row: the rest is room for its name over the bar


def legend_rows(names: list[str], font: int, width: float) -> int:
    """How many rows a horizontal legend of these entries takes in `width` px: Plotly gives every entry
    the widest one's width (its swatch too) once they do not fit one row."""
    entry = max(len(n) for n in names) * 0.6 * font + 45
    if sum(len(n) * 0.6 * font + 45 for n in names) <= width:
        return 1
    return -(-len(names) // max(1, int(width // entry)))


def stalls_figure(s: Stalls, note: str) -> go.Figure:
    """One horizontal bar per kernel: the cycles between two instructions a warp issues, stacked by the
    reason it was not issuing (Nsight Compute's warp-state sampling), the total at the bar's end."""
    st = style.PRESENTER   # in both modes, as the speed chart
    t = stalls.by_words(s)
    kernels = list(dict.fromkeys(t["label"]))[::-1]   # the first kernel on top
    fig = go.Figure()
    for words in STALL_COLORS:
        part = t[t["words"] == words].set_index("label").reindex(kernels)
        if part["cycles"].fillna(0).max() <= 0:
            continue
        fig.add_trace(go.Bar(y=kernels, x=part["cycles"].fillna(0).tolist(), name=words, orientation="h",
                             marker_color=STALL_COLORS[words], width=BAR_WIDTH,
                             customdata=[[r if isinstance(r, str) else "", 0.0 if pd.isna(f) else 100 * f]
                                         for r, f in zip(part["reasons"], part["share"])],
                             hovertemplate=f"%{{y}}<br>{words} (Nsight Compute: %{{customdata[0]}})<br>%{{x:.2f}} cycles "
                                           "per issued instruction, %{customdata[1]:.1f}% of the bar<extra></extra>"))
    totals = t.groupby("label", sort=False)["cycles"].sum().reindex(kernels)
    fig.add_trace(go.Scatter(y=kernels, x=totals.tolist(), mode="text", text=[f"  {v:.2f}" for v in totals],
                             textposition="middle right", showlegend=False, hoverinfo="skip",
                             textfont={"size": st.base}))
    # Each kernel's name over its bar, not beside it: as tick labels the longest ("mma_pipelined without
    # the copies in the k-loop") took half the width, and the legend, which Plotly wraps at the plot's
    # width, went one entry a row into a box with a scrollbar that hid the last reasons.
    for i, kernel in enumerate(kernels):
        fig.add_annotation(x=0, y=i + BAR_WIDTH / 2, xref="x", yref="y", text=kernel, showarrow=False,
                           xanchor="left", yanchor="bottom", font={"size": st.base})
    title = style.with_note(f"Where mma_pipelined's warps wait · cycles per issued instruction · {s.size:,}³ · "
                            f"{short_gpu(s.gpu)}", note, st)
    font = st.chart
    # The legend's rows at the figure's narrowest (the sidebar open): every reason shows, none scrolls.
    names = [d.name for d in fig.data if d.type == "bar"]
    rows = legend_rows(names, font, st.narrowest - 16)
    legend_px = rows * (1.3 * font + 6) + 12
    return style.apply(fig, font, height=300 * st.scale + legend_px, barmode="stack",
                       title={"text": title, "x": 0, "xanchor": "left"},
                       xaxis={"title": "cycles between two issued instructions, by reason", "range": [0, 1.15 * totals.max()]},
                       yaxis={"type": "category", "showticklabels": False},
                       # In the bars' order, left to right (stacked bars list their legend the other way round).
                       legend={"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0, "x": 0,
                               "traceorder": "normal", "maxheight": 1},
                       margin={"t": 56 + (st.base + 4) * (note.count("<br>") + 1), "b": round(2 * font + 24 + legend_px),
                               "l": 8, "r": 8})


# --------------------------------------------------------------------------- 6. sizes that are not multiples of 8

# The cliff's kernels in their colours: cuBLAS FP16 red as in section 5, the rung that pads in the
# colour section 5 gives the chosen rung, the others blue and green.
CLIFF_COLORS = {REFERENCE: style.RED, "wgmma_tma": style.BLUE, "wgmma_padded": style.PALETTE[4],
                "mma_pipelined": style.GREEN}


def size_label(n: int, multiple_of_8: bool) -> str:
    return f"{n:,}³" + ("" if multiple_of_8 else "<br>not ×8")


def cliff_figure(table: pd.DataFrame, note: str) -> go.Figure:
    """TFLOP/s of cuBLAS FP16 and the rungs at each size of the run, grouped by size; the sizes that
    are not multiples of 8 say so under their label; above each size, wgmma_padded's speed over
    cuBLAS FP16's; a rung with no time at a size says "refused" there (wgmma_tma's, in runs of the
    build that refused rows TMA cannot copy, before it padded them)."""
    st = style.PRESENTER   # in both modes: one figure, which switching modes does not redraw (style.Sizes)
    x = [size_label(int(n), bool(m)) for n, m in zip(table["N"], table["multiple of 8"])]
    fig = go.Figure()
    for kernel in CLIFF:
        y = table[kernel].astype(float)
        fig.add_trace(go.Bar(x=x, y=y.fillna(0), name=kernel, marker_color=CLIFF_COLORS[kernel],
                             text=["refused" if pd.isna(t) else f"{t:,.0f}" for t in y], textposition="outside",
                             textangle=-90, constraintext="none", cliponaxis=False,
                             textfont={"size": st.base - 1, "color": CLIFF_COLORS[kernel]},
                             hovertemplate=f"{kernel}<br>%{{x}}<br>%{{text}} TFLOP/s<extra></extra>"))
    tallest = table[list(CLIFF)].astype(float).max(axis=1)
    over = table["wgmma_padded"].astype(float) / table[REFERENCE].astype(float)
    for xi, top_of, o in zip(x, tallest, over):
        if pd.notna(o):
            fig.add_annotation(x=xi, y=top_of, yshift=st.base * 3.6, text=f"<b>{o:.1f}×</b>", showarrow=False,
                               yanchor="bottom", font={"color": CLIFF_COLORS["wgmma_padded"], "size": st.base})
    top = float(np.nanmax(tallest)) * 1.4
    title = style.with_note("TFLOP/s near 4,096³ and 8,192³ · above each size: wgmma_padded over cuBLAS FP16", note, st)
    font = st.chart
    # The legend at the figure's foot, in a bottom margin of its own below the sizes' two lines: placed
    # under the plot (paper units) it stood on "not ×8" when it fitted one row (the sidebar closed).
    ticks_px, legend_px = 2 * 1.3 * font + 12, 2 * 1.5 * font + 8   # two rows where the figure is narrow
    return style.apply(fig, font, height=500 * st.scale + legend_px, barmode="group",
                       title={"text": title, "x": 0, "xanchor": "left"},
                       yaxis={"title": "TFLOP/s", "range": [0, top]}, xaxis={"type": "category"},
                       legend={"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0, "x": 0},
                       margin={"t": 56 + (st.base + 4) * (note.count("<br>") + 1), "b": round(ticks_px + legend_px),
                               "l": 8, "r": 8})
