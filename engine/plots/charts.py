"""Benchmark charts (Plotly), shared by the Benchmarks page and `python -m engine bench`.

A plotting module: it draws rows of engine/bench/benchmark.py and imports no Streamlit. Fonts, colours
and the template are engine/plots/style.py's, as for every figure; what is the charts' own: full-width,
a fixed height, the legend below the plot, one colour per kernel label in every chart (and so in every
export), and log axes ticked at readable round values only. `font` is style.sizes(presenter).chart on
a page, style.EXPORT_FONT in an exported picture.
"""
from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.bench import schema
from engine.kernels import registry
from engine.plots import style
from engine.plots.style import EXPORT_FONT, PALETTE

PLOT_HEIGHT = 300   # the plot's own height at the export's font; the margins around it are added
# Above this the % of cuBLAS axis stops: beyond it are only the tiny sizes where cuBLAS is latency bound.
PCT_CAP = 110.0
MAX_VALUE_NOTES = 24   # values written beside the ▲ above PCT_CAP
TINY_NOTE = "▲ above {cap:.0f}%: drawn at the top, real value beside it"
# Said of the points above the cap only where one is this small ((M·N·K)^(1/3)): at 4096 x 4096 x 128,
# or at 4095³ where cuBLAS FP16 collapses, a rung beats cuBLAS for other reasons, and the sentence had
# been drawn beside them all the same. Two lines: it is longer than a projector's chart has room for.
LATENCY_SIZE = 512
LATENCY_WHY = "at tiny sizes cuBLAS is bound by launch latency, not arithmetic,<br>so a simple kernel can beat it there"


LABEL_FIELDS = ("kernel", "block", "block_x", "block_y", "tile", "pad", "params")
# How a label names the ladder's parameters, in this order: the block's tile of C and its step
# through K (BM x BN x BK), the warp tile (w WM x WN), the thread tile (t TM x TN, or t TM) and the
# warp tile's sub-tiles across (i WNITER). A parameter of none of these is named by itself ("SPLIT4").
LADDER_PARTS = ((("BM", "BN", "BK"), ""), (("WM", "WN"), "w"), (("TM", "TN"), "t"), (("WNITER",), "i"))
LABEL_KEY = ("Ladder rows are named by their parameters: block tile BM×BN×BK, w warp tile WM×WN, t thread tile "
             "TM×TN (or TM), i warp sub-tiles across (WNITER).")


def _given(v) -> bool:
    """Not None and not NaN (pd.notna, at a fraction of its cost per value)."""
    return v is not None and not (isinstance(v, float) and v != v)


def _param_parts(params: dict) -> list[str]:
    """The ladder's parameters, compactly (TILE and PAD are named before them, as they always were)."""
    parts, named = [], {"TILE", "PAD"}
    for names, prefix in LADDER_PARTS:
        values = [params[n] for n in names if n in params]
        named.update(names)
        if values:
            parts.append(prefix + "x".join(str(int(v)) for v in values))
    return parts + [f"{name}{int(v)}" for name, v in params.items() if name not in named]


def _label(kernel, block, block_x, block_y, tile, pad, params) -> str:
    params = params if isinstance(params, dict) else {}
    tile, pad = (tile if _given(tile) else params.get("TILE")), (pad if _given(pad) else params.get("PAD"))
    parts = [kernel]
    if isinstance(block, str) and block:   # the launch block as 'XxY', in either field spelling
        parts.append(block)
    elif _given(block_x) and _given(block_y):
        parts.append(f"{int(block_x)}x{int(block_y)}")
    if _given(tile):
        parts.append(f"T{int(tile)}")
    if _given(pad) and pad:
        parts.append(f"pad{int(pad)}")
    return " ".join(parts + _param_parts(params))


def label(r) -> str:
    """A benchmark row's name in every chart and table: kernel with the block shape and every
    compile-time parameter it ran with (TILE and PAD as T16 pad1, the ladder's as LADDER_PARTS says),
    so that two configurations of one kernel never share a name."""
    return _label(*(r.get(f) for f in LABEL_FIELDS))


def _labels_of(df: pd.DataFrame) -> pd.Series:
    """label() of every row, from plain column values: row by row through pandas took seconds for a
    20,000-row upload."""
    columns = [df[f].to_numpy() if f in df else [None] * len(df) for f in LABEL_FIELDS]
    return pd.Series([_label(*values) for values in zip(*columns)], index=df.index, dtype=object)


def labels(df: pd.DataFrame, base: pd.Series | None = None, short: bool = False) -> pd.Series:
    """Row labels; with several GPUs, each followed by its GPU. `base`: the rows' _labels_of, if made.
    short: the GPU's and the run's names cut to NAME_ROOM characters each (a chart's legend)."""
    out = _labels_of(df) if base is None else base
    if "gpu" in df and df["gpu"].nunique() > 1:
        out = out + " · " + _cut(df["gpu"].astype(str), short, gpu=True)
    if runs_apart(df):
        out = out + " · " + _cut(df["run"].astype(str), short, gpu=False)   # a GPU with several runs shown: which run each is
    return out


# A legend entry is drawn on one line and Plotly clips what runs past the figure: an upload's GPU
# name of 50 characters and its run's ("... (uploaded) #2") pushed entries past a 1280 px page's
# figure, and two uploads of one file could not be told apart.
NAME_ROOM = 20


def _cut(names: pd.Series, short: bool, gpu: bool) -> pd.Series:
    """Each name at most NAME_ROOM characters, unless that would make two names one. A GPU's name
    loses the vendor's word all of them start with and then its end ("NVIDIA H100 80GB HBM3" is
    "H100 80GB HBM3": the model, which tells GPUs apart, comes first); a run's its middle (a run's
    "#2" and "(uploaded)" are at its end)."""
    if not short:
        return names
    cut = {n: short_gpu(n) if gpu else short_name(n) for n in names.unique()}
    return names.map(cut) if len(set(cut.values())) == len(cut) else names


VENDOR = "NVIDIA "


def short_gpu(name: str) -> str:
    """A GPU's name in a legend: without the vendor's word, its end given up where it is too long."""
    return short_name(name[len(VENDOR):] if name.startswith(VENDOR) and len(name) > len(VENDOR) else name,
                      keep_end=False)


def short_name(name: str, keep_end: bool = True) -> str:
    """`name` in at most NAME_ROOM characters: its start and (keep_end) its end, an ellipsis for
    what is left out."""
    if len(name) <= NAME_ROOM:
        return name
    head = NAME_ROOM // 2 - 1 if keep_end else NAME_ROOM - 1
    return name[:head] + "…" + (name[-(NAME_ROOM - head - 1):] if keep_end else "")


def runs_apart(df: pd.DataFrame) -> bool:
    """Whether some GPU (or the unnamed one) has several runs among the rows: only then do they need
    their run's name to be told apart."""
    if "run" not in df:
        return False
    gpu = df["gpu"] if "gpu" in df else pd.Series([None] * len(df), index=df.index)
    return pd.DataFrame({"gpu": gpu, "run": df["run"]}).drop_duplicates().shape[0] > gpu.nunique(dropna=False)


def colors(df: pd.DataFrame, base: pd.Series | None = None) -> dict[str, str]:
    """One colour per kernel label (GPUs are told apart by line dash and marker, not colour), from
    every row, not just the ones a chart draws, in catalog order: the same kernel gets the same colour
    in every chart of one result set. `base`: the rows' _labels_of, if made."""
    order = {k.name: i for i, k in enumerate(registry.CATALOG)}
    names = pd.DataFrame({"label": _labels_of(df) if base is None else base,
                          "kernel": df["kernel"] if len(df) else []}).drop_duplicates("label")
    names["rank"] = names["kernel"].map(order).fillna(len(order))
    ranked = names.sort_values(["rank", "label"])["label"]
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(ranked)}


GPU_DASHES = ("solid", "dash", "dot", "dashdot")
GPU_SYMBOLS = ("circle", "square", "x", "cross")


def _series(df: pd.DataFrame):
    """The rows that were timed, with size, label, colour and the GPU's index, sorted for the legend
    (catalog order, then GPU) and, within a label, by size."""
    every = _labels_of(df)
    palette = colors(df, every)
    ok = df[df["status"] == "ok"].copy() if "status" in df else df.iloc[:0].copy()
    if ok.empty or "gflops" not in ok:   # nothing timed (an upload of errors and wrong results only)
        return ok.iloc[:0].assign(size=[], label=[], kernel_label=[], run_label=[], color=[], gpu_i=[], gflops=[],
                                  intensity=[], pct_cublas=[], median_ms=[], spread=[])
    ok["size"] = np.cbrt(ok["m"].astype(float) * ok["n"] * ok["k"])
    base = every.loc[ok.index]
    # Plotly reads some HTML in names (<b>, <a href>); a GPU's name comes from a file: shown as text.
    text = lambda s: html.escape(s, quote=False)   # noqa: E731
    ok["label"] = labels(df, every, short=True).loc[ok.index].map(text)
    # The label's kernel and its run (GPU, run's name: "" where one run is shown), apart, for the legend
    # (_legend_entries)
    ok["kernel_label"] = base.map(text)
    ok["run_label"] = labels(df, pd.Series("", index=df.index), short=True).loc[ok.index].str.removeprefix(" · ").map(text)
    ok["color"] = base.map(palette)
    ok["rank"] = base.map(list(palette).index)
    # A line style per run where runs are named (two of one GPU look apart), else per GPU.
    key = "run" if "run" in df else "gpu" if "gpu" in df else None
    runs = list(dict.fromkeys(df[key])) if key else [None]
    ok["gpu_i"] = ok[key].map(runs.index) if key else 0
    return ok.sort_values(["rank", "gpu_i", "size"])


def _curves(fig: go.Figure, ok: pd.DataFrame, y: str, hover: str, custom: str | None = None) -> None:
    """Per label: a line through the square power-of-two sizes; odd and non-square sizes as separate
    diamonds of the same colour (power-of-two strides behave differently, and that should show)."""
    runs = _several_runs(ok)
    for name, part in ok.groupby("label", sort=False):
        color, dash = part["color"].iloc[0], GPU_DASHES[part["gpu_i"].iloc[0] % len(GPU_DASHES)]
        square = _square(part)
        other = part.drop(square.index)
        for sub, mode, symbol, show in ((square, "lines+markers", "circle", True), (other, "markers", "diamond", square.empty)):
            if sub.empty:
                continue
            fig.add_scatter(x=sub["size"], y=sub[y], mode=mode, name=name, showlegend=show and not runs,
                            legendgroup=part["kernel_label"].iloc[0] if runs else name,
                            line={"color": color, "dash": dash}, marker={"color": color, "symbol": symbol, "size": 8},
                            text=_shapes(sub), customdata=sub[custom] if custom else None,
                            hovertemplate="%{text}: " + hover + f"<extra>{name}</extra>")
    if runs:
        _legend_entries(fig, ok, lines=True)


def _square(part: pd.DataFrame) -> pd.DataFrame:
    """The rows of square power-of-two sizes: the ones a line joins."""
    m = part["m"].astype(int)
    return part[(part["m"] == part["n"]) & (part["n"] == part["k"]) & ((m & (m - 1)) == 0)]


def _several_runs(ok: pd.DataFrame) -> bool:
    """Whether the labels name runs (or GPUs): several are shown."""
    return bool(ok["run_label"].ne("").any())


KEY = "legend2"   # the legend of runs: which line style (or marker) is which GPU or run


def _legend_entries(fig: go.Figure, ok: pd.DataFrame, lines: bool) -> None:
    """With several runs shown, a legend entry per kernel (its colour; a click hides it in every run)
    and a key, a second legend, of the runs' line styles (lines) or markers: one entry per kernel and
    run made two H100 and H200 runs' charts about 2,000 px tall, a column of 40 entries each naming a
    GPU. Entries only: the curves are drawn, and named in full for their hover, by the caller."""
    for kernel, part in ok.groupby("kernel_label", sort=False):
        color, joined = part["color"].iloc[0], lines and not _square(part).empty
        fig.add_scatter(x=[None], y=[None], mode="lines+markers" if joined else "markers", name=kernel, legendgroup=kernel,
                        line={"color": color}, hoverinfo="skip",
                        marker={"color": color, "size": 8 if lines else 9, "symbol": "circle" if joined or not lines else "diamond"})
    for run, part in ok.groupby("run_label", sort=False):
        i = part["gpu_i"].iloc[0]
        fig.add_scatter(x=[None], y=[None], mode="lines" if lines else "markers", name=run, legend=KEY, hoverinfo="skip",
                        line={"color": style.INK, "dash": GPU_DASHES[i % len(GPU_DASHES)]},
                        marker={"color": style.INK, "size": 9, "symbol": GPU_SYMBOLS[i % len(GPU_SYMBOLS)]})


def _shapes(df: pd.DataFrame) -> list[str]:
    """Each row's size as hover text: '1024', or '4096x1024x2048' when not square."""
    # an array, not a list: Plotly checks a list's every element (0.1 s per 20,000)
    return np.array([f"{m}" if m == n == k else f"{m}x{n}x{k}" for m, n, k in zip(df["m"], df["n"], df["k"])])


def _short(v: float) -> str:
    """1, 10, 100, 1k, 10k, 100k, 1M: round values without minor-digit clutter."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def _log_axis(values, kind: str = "decades") -> dict:
    """A log axis ticked only at round values: decades (1, 10, 100, 1k ...) or, for matrix sizes,
    powers of two (256, 512, 1,024 ...), with the range set so no other tick appears."""
    v = np.asarray([x for x in values if pd.notna(x) and x > 0], dtype=float)
    lo, hi = (v.min(), v.max()) if len(v) else (1.0, 10.0)
    if kind == "pow2":
        ticks = [2.0 ** e for e in range(math.floor(math.log2(lo)), math.ceil(math.log2(hi)) + 1)]
        text = [f"{t:,.0f}" for t in ticks]
    else:
        ticks = [10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
        text = [_short(t) for t in ticks]
    pad = 1.25
    return {"type": "log", "tickvals": ticks, "ticktext": text, "minor": {"showgrid": False, "ticks": ""},
            "range": [math.log10(lo / pad), math.log10(hi * pad)]}


def _legend_grid(fig: go.Figure, font: int, legend: str = "legend", mark: int = 24) -> tuple[int, int, int]:
    """The legend's columns, rows and font: as many columns of the widest entry as fit the figure at
    its narrowest (style.Sizes.narrowest, less the margins), drawn as that many at every width
    (_layout). Plotly's own wrapping made as many rows as it liked (one entry a row at a projector's
    font), so the margin under the plot could not be sized for them. An entry is its marker (24 px
    to the name), the name (a character about 0.5 em: Chromium drew the ladder's longest label, 42
    characters at 15 px, 307 px wide) and 16 px before the next column's marker: with 0.98 of the
    plot's width shared out and no gap counted, "double_buffered ... i4" ended 4 px from
    "prefetched ..."'s marker. The font is `font`, or a pixel or two less where that keeps a column
    more (the longest ladder labels: 14 px, two columns). legend: which legend's entries (KEY: the runs',
    whose marks are a line alone, `mark` 40 px to the name: at 24, "H100 80GB HBM3" ran into the next)."""
    names = [html.unescape(t.name) for t in fig.data if t.showlegend is not False and t.name and (t.legend or "legend") == legend]
    longest = max((len(n) for n in names), default=0)
    # the plot at the narrowest: the margins _layout sets, and a little that the y axis's labels may add
    plot = style.SCREEN.narrowest - 100 - 10

    def columns(size: int) -> int:   # (no more than there are entries: a smaller font gains nothing there)
        return min(int(0.98 * plot // (mark + 0.5 * size * longest + 16)), max(1, len(names)))

    # (and a smaller font where only that fits the longest entry in one column: an upload's run and GPU)
    size = next((f for f in (font, font - 1, font - 2) if columns(f) == columns(font - 2) and columns(f) >= 1), font - 2)
    return max(1, columns(size)), max(1, -(-len(names) // max(1, columns(size)))), size


def _note_lines(note: str, font: int) -> list[str]:
    """The provenance note's lines, each broken at its " · " where it would run past the figure at its
    narrowest (a projector's one line of ~110 characters ran ~300 px past the chart's right edge)."""
    room = int((style.SCREEN.narrowest - 100) / (0.55 * font))
    out = []
    for line in note.split("<br>"):
        parts, current = line.split(" · "), ""
        for part in parts:
            if current and len(current) + 3 + len(part) > room:
                out.append(current)
                current = part
            else:
                current = f"{current} · {part}" if current else part
        out.append(current)
    return out


def _layout(fig: go.Figure, title: str, font: int, note: str = "", upright: int = 0) -> go.Figure:
    """Title, and the provenance right above the plot (so a downloaded picture says where it came
    from); legend in rows under the axis's title, in a bottom margin as tall as its rows: placed at a
    share of a plot whose height varied, it stood on the axis's title where it took fewer rows (a wider
    page) and ran past the figure's foot where it took more (a projector's font). `upright`: the
    characters of the longest tick label, where they stand upright (style.UPRIGHT) under the plot."""
    # the note a little smaller than the title and never a projector's chart size: it is a footnote
    note_px = min(font - 2, style.PRESENTER.base - 1)
    lines = _note_lines(note, note_px) if note else []
    if lines:
        fig.add_annotation(text="<br>".join(lines), xref="paper", yref="paper", x=0, y=1, xanchor="left",
                           yanchor="bottom", yshift=6, showarrow=False, align="left",
                           font={"size": note_px, "color": style.NOTE_INK})
    columns, rows, legend_font = _legend_grid(fig, font - 1)
    legend_px = round(rows * (legend_font + 20) + 8)   # a row as the page draws it (its theme spaces them)
    # The runs' key (KEY), where several are shown: its rows right under the axis's title, the kernels' under it
    keyed = any(t.legend == KEY for t in fig.data)
    key_columns, key_rows, key_font = _legend_grid(fig, legend_font, KEY, mark=40) if keyed else (1, 0, legend_font)
    key_px = round(key_rows * (key_font + 20) + 8) if keyed else 0
    # the tick labels and the axis title under the plot (upright labels as tall as they are long)
    axis_px = round((0.6 * upright if upright else 1.3) * font + 1.3 * font + 24)
    plot_px = PLOT_HEIGHT + 10 * (font - EXPORT_FONT)
    # the title at the top of the picture, whatever the number of note lines below it (placed in the
    # middle of the top margin, a tall margin put it among them)
    top = round(12 + 1.3 * font + 6 + len(lines) * 1.35 * note_px + 10) if lines else 50
    legends = {"legend": _legend_box(legend_font, columns, axis_px + key_px, plot_px)}
    if keyed:   # a key to read, not to click: its entries stand for no curve of their own
        legends[KEY] = {**_legend_box(key_font, key_columns, axis_px, plot_px), "itemclick": False, "itemdoubleclick": False}
    return style.apply(fig, font, title={"text": title, "x": 0.01, "xanchor": "left", "yref": "container", "y": 1,
                                         "yanchor": "top", "pad": {"t": 12}},
                       height=top + axis_px + key_px + legend_px + plot_px, **legends,
                       margin={"t": top, "b": axis_px + key_px + legend_px, "l": 70, "r": 30})


def _legend_box(font: int, columns: int, below_px: int, plot_px: int) -> dict:
    """A legend in rows of `columns` entries, its top `below_px` under the plot."""
    # the plot's height is fixed, so that offset is a fixed share of it. The ink named: Streamlit's
    # theme colours the first legend's text only, and the key's was drawn grey, as if switched off.
    return {"font": {"size": font, "color": style.INK}, "orientation": "h", "x": 0, "xanchor": "left", "y": -below_px / plot_px, "yanchor": "top",
            # as many columns as at the narrowest at every width: by the entry's pixels, a wider page
            # (the sidebar closed) drew more columns, so fewer rows than the margin's, and ~250 px of
            # blank under them on a projector
            "entrywidthmode": "fraction", "entrywidth": 0.98 / columns,
            "maxheight": 1}   # never scrolled: Plotly's default is half the figure


def gflops_vs_size(df: pd.DataFrame, font: int = EXPORT_FONT, note: str = "") -> go.Figure:
    ok = _series(df)
    fig = go.Figure()
    _curves(fig, ok, "gflops", "%{y:,.0f} GFLOP/s")
    fig.update_xaxes(title="size (M·N·K)^(1/3) · lines: powers of two · ◆ other sizes", **_log_axis(ok["size"], "pow2"))
    fig.update_yaxes(title="GFLOP/s", **_log_axis(ok["gflops"]))
    return _layout(fig, "Throughput against size", font, note)


def pct_of_cublas(df: pd.DataFrame, font: int = EXPORT_FONT, note: str = "") -> go.Figure:
    """% of cuBLAS, the axis stopped at PCT_CAP: points above it (tiny sizes, where cuBLAS is launch
    bound) sit at the top as ▲ with their value, so they neither vanish nor squash the rest."""
    ok = _series(df)
    ok = ok[ok["pct_cublas"].notna() & ~ok["kernel"].str.startswith("cublas")] if "pct_cublas" in ok else ok.iloc[:0]
    high = ok[ok["pct_cublas"] > PCT_CAP]
    fig = go.Figure()
    # drawn at most at the cap; the hover says the real value
    _curves(fig, ok.assign(pct_shown=ok["pct_cublas"].clip(upper=PCT_CAP)), "pct_shown",
            "%{customdata:.1f}% of cuBLAS", custom="pct_cublas")
    fig.add_hline(y=100, line={"color": style.ROOF, "dash": "dot", "width": 1})
    if len(high):
        fig.add_scatter(x=high["size"], y=[PCT_CAP] * len(high), mode="markers", showlegend=False,
                        marker={"symbol": "triangle-up", "size": 13, "color": high["color"].tolist(),
                                "line": {"color": style.ROOF, "width": 1}}, hoverinfo="skip", cliponaxis=False)
        # the real values, stacked beside their ▲, in their colours: the smallest sizes' first, as many
        # as can be read (each point's hover has its value too)
        written = high.sort_values(["size", "pct_cublas"], ascending=[True, False]).head(MAX_VALUE_NOTES)
        for _, at_size in written.groupby("size"):
            for i, (_, r) in enumerate(at_size.iterrows()):
                fig.add_annotation(x=math.log10(r["size"]), y=PCT_CAP, text=_above_cap(r["pct_cublas"]), showarrow=False,
                                   xanchor="left", xshift=10, yshift=-16 * i, bgcolor=style.NOTE_BACKGROUND,
                                   font={"size": font - 1, "color": r["color"]})
        # With the provenance above the plot, not in it: in the plot's top right corner it had covered
        # the value of a point drawn there (prefetched at 4096 x 4096 x 128).
        why = LATENCY_WHY if (high["size"] <= LATENCY_SIZE).any() else ""
        note = "<br>".join(filter(None, [note, TINY_NOTE.format(cap=PCT_CAP), why]))
    fig.update_xaxes(title="size (M·N·K)^(1/3)", **_log_axis(ok["size"], "pow2"))
    fig.update_yaxes(title="% of cuBLAS at the same precision", range=[0, PCT_CAP + 6], ticksuffix="%")
    return _layout(fig, "Share of cuBLAS (dotted: as fast as cuBLAS)", font, note)


def _above_cap(pct: float) -> str:
    """A value above PCT_CAP with as few decimals as keep it above: 110.04% had read "110%"."""
    digits = next((d for d in range(3) if round(pct, d) > PCT_CAP), 3)
    return f"{pct:.{digits}f}%"


def roofline(df: pd.DataFrame, peaks: dict, font: int = EXPORT_FONT, note: str = "") -> go.Figure:
    """GFLOP/s against arithmetic intensity (FLOP per byte of minimal traffic) under the device's roofs.
    The roofs are named on the lines, not in the legend, which is for kernels."""
    ok = _series(df)
    fig = go.Figure()
    ai = np.logspace(0, 4, 200)
    bw = peaks["bandwidth_gbs"]
    roofs = [(peaks["fp32_gflops"], f"FP32 roof {peaks['fp32_gflops'] / 1e3:.1f} TFLOP/s · {bw / 1e3:.2f} TB/s",
              "solid")]
    # The TF32 tensor roof always; the FP16 and BF16 ones under rows of theirs (one line where equal).
    tensor: dict[float, list[str]] = {}
    for precision in schema.TENSOR_PRECISIONS:
        peak = peaks.get(f"{precision}_gflops_datasheet")
        if peak and (precision == "tf32" or ("precision" in ok and (ok["precision"] == precision).any())):
            tensor.setdefault(peak, []).append(precision.upper())
    roofs += [(peak, f"{'/'.join(names)} tensor roof {peak / 1e3:.0f} TFLOP/s (datasheet)", "dash")
              for peak, names in tensor.items()]
    for peak, name, dash in roofs:
        fig.add_scatter(x=ai, y=np.minimum(ai * bw, peak), mode="lines", name=name, showlegend=False,
                        line={"color": style.ROOF if dash == "solid" else style.SECOND_ROOF, "dash": dash}, hoverinfo="name")
        fig.add_annotation(x=4, y=math.log10(peak), text=name, showarrow=False, xanchor="right", yanchor="bottom",
                           font={"size": font - 2})   # log axes: annotation positions are log10 values
    runs = _several_runs(ok)
    for name, part in ok.groupby("label", sort=False):
        fig.add_scatter(x=part["intensity"], y=part["gflops"], mode="markers", name=name, showlegend=not runs,
                        legendgroup=part["kernel_label"].iloc[0] if runs else name,
                        marker={"size": 9, "color": part["color"].iloc[0],
                                "symbol": GPU_SYMBOLS[part["gpu_i"].iloc[0] % len(GPU_SYMBOLS)]},
                        text=_shapes(part),
                        hovertemplate="%{text}: %{y:,.0f} GFLOP/s at %{x:.0f} FLOP/B" + f"<extra>{name}</extra>")
    if runs:
        _legend_entries(fig, ok, lines=False)
    fig.update_xaxes(title="arithmetic intensity (FLOP per byte, each matrix moved once)", **_log_axis(ai))
    fig.update_yaxes(title="GFLOP/s", **_log_axis(list(ok["gflops"]) + [r[0] * 1.6 for r in roofs]))
    return _layout(fig, "Roofline", font, note)


def telemetry(df: pd.DataFrame, font: int = EXPORT_FONT, note: str = "") -> go.Figure:
    """Clock, power and temperature after each point, in measurement order: throttling shows here."""
    fig = go.Figure()
    have = [c for c in ("sm_clock_mhz", "power_w", "temperature_c") if c in df]
    names = {"sm_clock_mhz": "SM clock (MHz)", "power_w": "power (W)", "temperature_c": "temperature (°C)"}
    # Each run (or GPU) its own series, numbered from its own first point, in a line style of its own:
    # two runs shown together had been drawn as one line running from the first into the second.
    key = "run" if "run" in df else "gpu" if "gpu" in df else None
    groups = [(None, df)] if key is None else list(df.groupby(key, sort=False, dropna=False))
    # Cut as the other charts' legends cut them (labels(short=True)).
    shown = list(_cut(pd.Series([str(group) for group, _ in groups]), True, gpu=key == "gpu"))
    for g, ((_, part), name) in enumerate(zip(groups, shown)):
        tail = f" · {html.escape(name, quote=False)}" if len(groups) > 1 else ""
        for i, col in enumerate(have):
            fig.add_scatter(x=np.arange(1, len(part) + 1), y=part[col], mode="lines+markers", name=names[col] + tail,
                            yaxis="y" if i == 0 else f"y{i + 1}",
                            line={"color": style.PALETTE[i], "dash": GPU_DASHES[g % len(GPU_DASHES)]},
                            marker={"color": style.PALETTE[i], "symbol": GPU_SYMBOLS[g % len(GPU_SYMBOLS)]})
    # Ranges of their own, so each axis picks round ticks: left to itself, Plotly lined the right axis's
    # ticks up with the left's grid (-1, 166, 332 ... W / °C), and a steady 1,980 MHz clock filled the
    # plot with ticks 0.5 MHz apart. The clock from a little under its lowest (a throttle shows as a
    # step down, not as the whole height); watts and degrees from 0.
    first = df[have[0]].dropna() if have else pd.Series(dtype=float)
    low = 0.0 if first.empty or have[0] != "sm_clock_mhz" else 0.8 * first.min()
    high = 1.1 * first.max() if not first.empty else 1.0
    rest = pd.concat([df[c].dropna() for c in have[1:]]) if len(have) > 1 else pd.Series(dtype=float)
    fig.update_layout(xaxis={"title": "point, in measurement order"},
                      yaxis={"title": names.get(have[0], "") if have else "", "tickformat": ",~f",
                             "range": [low, max(high, low + 1)]},
                      yaxis2={"overlaying": "y", "side": "right", "title": "W / °C", "showgrid": False,
                              "tickmode": "auto", "range": [0, 1.1 * rest.max() if not rest.empty else 1],
                              "tickformat": ",~f"})
    if len(have) > 2:
        for trace in fig.data:
            if trace.name.startswith(names["temperature_c"]):
                trace.yaxis = "y2"
    return _layout(fig, "GPU telemetry during the sweep", font, note)


def tuning_sweep(ranked: pd.DataFrame, font: int = EXPORT_FONT, note: str = "", cublas: float | None = None,
                 family: str = "ladder rung", cublas_name: str = "cuBLAS") -> go.Figure:
    """An autotuning sweep (engine/bench/tuning.py ranking): per ladder rung, a strip of its timed
    configurations, fastest on the left; the winner a large star, the registry's default ringed, so
    a default that is not the winner stands apart; cuBLAS at the same size as a dotted line. family names
    the rungs' family (in the title and on the axis), cublas_name the cuBLAS its line is."""
    fig = go.Figure()
    timed = ranked[ranked["rank"].notna()]
    rungs = list(dict.fromkeys(timed["kernel"]))
    catalog = [k.name for k in registry.CATALOG]
    for i, rung in enumerate(rungs):
        part = timed[timed["kernel"] == rung]
        color = PALETTE[catalog.index(rung) % len(PALETTE)]   # a rung's colour in every sweep
        x = i + np.linspace(-0.35, 0.35, len(part)) if len(part) > 1 else np.array([float(i)])
        fig.add_scatter(x=x, y=part["gflops"], mode="markers", name="a configuration", legendgroup="config",
                        showlegend=i == 0, marker={"color": color, "size": 7, "opacity": 0.6},
                        text=_escaped(part["label"]), customdata=part["rank"],
                        hovertemplate="%{text}: %{y:,.0f} GFLOP/s, rank %{customdata:.0f}<extra></extra>")
        for kind, rows, marker in (
                ("the winner", part["winner"].to_numpy(), {"symbol": "star", "size": 20, "color": color,
                                                            "line": {"color": style.ROOF, "width": 1.5}}),
                ("the registry's default", part["default"].to_numpy(), {"symbol": "circle-open", "size": 22,
                                                                        "color": style.ROOF, "line": {"width": 2.5}})):
            if rows.any():
                fig.add_scatter(x=x[rows], y=part["gflops"][rows], mode="markers", name=kind, legendgroup=kind,
                                showlegend=False, marker=marker, text=_escaped(part["label"][rows]),
                                hovertemplate="%{text}: %{y:,.0f} GFLOP/s" + f"<extra>{kind}</extra>")
    for kind, marker in (("the winner", {"symbol": "star", "size": 14, "color": style.INK}),
                         ("the registry's default", {"symbol": "circle-open", "size": 14, "color": style.ROOF})):
        fig.add_scatter(x=[None], y=[None], mode="markers", name=kind, legendgroup=kind, marker=marker)   # legend only
    if cublas:
        fig.add_hline(y=cublas, line={"color": style.ROOF, "dash": "dot", "width": 1})
        # at the left, over the first rungs (the slowest: catalog order climbs the ladder); at the right
        # the fastest rung's winner, up at cuBLAS's line, had covered the number
        fig.add_annotation(x=0, xref="paper", y=cublas, text=f"{cublas_name} {cublas:,.0f} GFLOP/s", showarrow=False,
                           xanchor="left", yanchor="bottom", font={"size": font - 2}, bgcolor=style.NOTE_BACKGROUND)
    fig.update_xaxes(title=f"{family} · its configurations, fastest on the left", tickvals=list(range(len(rungs))),
                     ticktext=rungs, range=[-0.6, len(rungs) - 0.4], showgrid=False, zeroline=False,
                     tickangle=style.UPRIGHT)
    fig.update_yaxes(title="GFLOP/s", rangemode="tozero", tickformat=",~f")
    title = "each rung" if family == "ladder rung" else f"each {family}"
    return _layout(fig, f"Autotuning sweep: the configurations timed for {title}", font, note,
                   max((len(r) for r in rungs), default=0))


def _escaped(texts: pd.Series) -> np.ndarray:
    """Labels as hover text: plain text (Plotly reads some HTML), as an array (a list is checked item by item)."""
    return np.array([html.escape(t, quote=False) for t in texts])


def all_charts(df: pd.DataFrame, peaks: dict, font: int = EXPORT_FONT, provs: Sequence[dict] = (),
               extra: str = "") -> dict[str, go.Figure]:
    """Every chart of the runs `provs` (their rows in `df`), each with the runs' notes (notes()) and
    `extra` under its title."""
    def note(percent: bool) -> str:
        return notes(provs, df, percent=percent) + extra
    charts = {"gflops_vs_size": gflops_vs_size(df, font, note(False)),
              "percent_of_cublas": pct_of_cublas(df, font, note(True)),
              "roofline": roofline(df, peaks, font, note(False))}
    if "sm_clock_mhz" in df:
        charts["telemetry"] = telemetry(df, font, note(False))
    return charts


def provenance_note(prov: dict) -> str:
    """GPU, date, driver and CUDA versions and the timing settings, on one line."""
    driver = prov.get("driver_cuda_version")
    if isinstance(driver, (int, float)) and driver > 1000:   # CUDA's encoding: 13000 -> 13.0
        driver = f"{int(driver) // 1000}.{int(driver) % 1000 // 10}"
    s = prov.get("settings") or {}
    timing = (f"median of {s['reps']} reps after {s.get('warmup', 0)} warm-up, L2 "
              f"{'flushed' if s.get('flush_l2') else 'not flushed'}") if "reps" in s else ""
    parts = [prov.get("gpu"), (prov.get("date") or "")[:10], prov.get("cuda") and f"CUDA {prov['cuda']}",
             driver and f"driver's CUDA {driver}", timing]
    return " · ".join(str(p) for p in parts if p)


NOT_RECORDED = "not recorded"   # what an older file, made before a field existed, says for it


def cublas_text(prov: dict) -> str:
    """The cuBLAS a run's % of cuBLAS is against: cublasGetVersion's number (major * 10000 + minor * 100
    + patch since cuBLAS 11) as a version, 130001 -> 13.0.1; an older number or a string as written."""
    v = prov.get("cublas_version")
    if type(v) is int and v >= 110000:
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    return NOT_RECORDED if v is None or v == "" else str(v)


def toolkit_text(prov: dict) -> str:
    """The toolkit that built the kernels: 'nvcc 13.0.88' from nvcc's version line, else the line."""
    line = prov.get("toolkit")
    if not line:
        return NOT_RECORDED
    found = re.search(r"\bV(\d+\.\d+\.\d+)", line)
    return f"nvcc {found.group(1)}" if found else line


def clock_text(rows: pd.DataFrame | None) -> str:
    """The SM clock the timed rows reported (each right after its point): one value, or the range."""
    ok = rows[rows["status"] == "ok"] if rows is not None and "status" in rows else None
    mhz = ok["sm_clock_mhz"].dropna() if ok is not None and "sm_clock_mhz" in ok else pd.Series([], dtype=float)
    if mhz.empty:
        return f"SM clock {NOT_RECORDED}"
    lo, hi = mhz.min(), mhz.max()
    return f"SM clock {lo:,.0f} MHz" if lo == hi else f"SM clock {lo:,.0f}–{hi:,.0f} MHz (median {mhz.median():,.0f})"


def measured_with(prov: dict, rows: pd.DataFrame | None, percent: bool = True) -> str:
    """What a run's % of cuBLAS depends on beyond the kernels, on one line: the cuBLAS it is against,
    the toolkit that built the kernels, the driver and the SM clock during the run. Every part is
    there, 'not recorded' where the file is older than the field. Under a chart without percentages
    (percent=False) the cuBLAS is named without "100% =", which there named a 100% the chart did not have."""
    # "100% = cuBLAS 13.1.0": what the chart's percentages are of, as a label; "% of cuBLAS 13.1.0 ·
    # toolkit nvcc ..." read as a sentence cut off. No longer than it was: a chart's note keeps it on one line.
    version, toolkit = cublas_text(prov), toolkit_text(prov)
    cublas = f"cuBLAS {version}" if version != NOT_RECORDED else f"cuBLAS (version {NOT_RECORDED})"
    parts = [f"100% = {cublas}" if percent else cublas, toolkit if toolkit.startswith("nvcc ") else f"toolkit {toolkit}"]
    if prov.get("driver"):
        parts.append(f"driver {prov['driver']}")
    return " · ".join(parts + [clock_text(rows)])


def run_rows(df: pd.DataFrame | None, prov: dict) -> pd.DataFrame | None:
    """The rows of `df` that one run measured (engine/bench/benchmark.py of_run marks them with its date)."""
    if df is None or "recorded" not in df:
        return df
    return df[df["recorded"] == prov.get("date")]


def notes(provs: Sequence[dict], df: pd.DataFrame | None = None, percent: bool = True) -> str:
    """The provenance of each run shown, as a chart's note, two lines each: where and how it was
    measured (provenance_note), and what its % of cuBLAS depends on (measured_with; the SM clock
    from its rows in `df`; percent=False for a chart without percentages). Plain text: Plotly reads
    some HTML, and a GPU's name comes from a file."""
    # (dict.fromkeys: two runs alike, as the files of one sweep, are said once)
    runs = list(dict.fromkeys((provenance_note(p), measured_with(p, run_rows(df, p), percent)) for p in provs))
    shared = _said_of_all(runs)
    lines = ([where for where, _ in runs] + [shared]) if shared else [line for run in runs for line in run]
    return "<br>".join(html.escape(line, quote=False) for line in lines)


def _said_of_all(runs: list[tuple[str, str]]) -> str:
    """The measured_with line of several runs that all have the same, said once for them all; "" where
    there is one run or they differ. Deduplicated alone, the line had stood under the first run only,
    as if the second had none."""
    if len(runs) < 2 or len({with_ for _, with_ in runs}) > 1:
        return ""
    return f"{'both' if len(runs) == 2 else f'all {len(runs)}'} runs: {runs[0][1]}"


def measured_lines(provs: Sequence[dict], df: pd.DataFrame | None = None) -> list[str]:
    """What each run's % of cuBLAS depends on (measured_with), for under a chart: once for all the runs
    where they agree, else each named by its GPU and day (the same line twice, unnamed, had said nothing
    of which run was which)."""
    runs = list(dict.fromkeys((p.get("gpu"), p.get("date") or "", measured_with(p, run_rows(df, p))) for p in provs))
    shared = _said_of_all([(f"{gpu} {date}", with_) for gpu, date, with_ in runs])
    if shared or len(runs) < 2:
        return [shared] if shared else [with_ for _, _, with_ in runs]
    # a run by its GPU and day; by the minute where two of one GPU share a day
    days = [(gpu, date[:10]) for gpu, date, _ in runs]
    when = [date[:16].replace("T", " ") if days.count(day) > 1 else day[1] for day, (_, date, _) in zip(days, runs)]
    return [f"{short_gpu(str(gpu))} {at}: {with_}" for (gpu, _, with_), at in zip(runs, when)]
