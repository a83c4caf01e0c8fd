"""Benchmark charts (Plotly), shared by the Benchmarks page and `python -m engine bench`.

A plotting module: it draws rows of engine/benchmark.py and imports no Streamlit.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go


def _label(r) -> str:
    return f"{r['kernel']}" + (f" T{int(r['tile'])}" if pd.notna(r.get("tile")) else "") + \
        (f" pad{int(r['pad'])}" if pd.notna(r.get("pad")) and r.get("pad") else "")


def _series(df: pd.DataFrame):
    ok = df[df["status"] == "ok"].copy()
    if ok.empty:
        return ok
    ok["size"] = np.cbrt(ok["m"].astype(float) * ok["n"] * ok["k"])
    ok["label"] = ok.apply(_label, axis=1)
    if "gpu" in ok and ok["gpu"].nunique() > 1:
        ok["label"] = ok["label"] + " · " + ok["gpu"]
    return ok.sort_values("size")


PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#e377c2", "#7f7f7f", "#bcbd22",
           "#8c564b"]


def _curves(fig: go.Figure, ok: pd.DataFrame, y: str, hover: str) -> None:
    """Per label: a line through the square power-of-two sizes; odd and non-square sizes as separate
    diamonds of the same colour (power-of-two strides behave differently, and that should show)."""
    for i, (label, part) in enumerate(ok.groupby("label", sort=False)):
        color = PALETTE[i % len(PALETTE)]
        m = part["m"].astype(int)
        square = part[(part["m"] == part["n"]) & (part["n"] == part["k"]) & ((m & (m - 1)) == 0)]
        other = part.drop(square.index)
        for sub, mode, symbol, show in ((square, "lines+markers", "circle", True), (other, "markers", "diamond", square.empty)):
            if sub.empty:
                continue
            fig.add_scatter(x=sub["size"], y=sub[y], mode=mode, name=label, legendgroup=label, showlegend=show,
                            line={"color": color}, marker={"color": color, "symbol": symbol, "size": 8},
                            text=sub.apply(_shape, axis=1), hovertemplate="%{text}: " + hover + f"<extra>{label}</extra>")


def _shape(r) -> str:
    return f"{r['m']}" if r["m"] == r["n"] == r["k"] else f"{r['m']}x{r['n']}x{r['k']}"


def _layout(fig: go.Figure, title: str, font: int) -> go.Figure:
    fig.update_layout(title={"text": title}, font={"size": font}, template="plotly_white", height=480,
                      legend={"font": {"size": font - 2}}, margin={"t": 60})
    return fig


def gflops_vs_size(df: pd.DataFrame, font: int = 13) -> go.Figure:
    ok = _series(df)
    fig = go.Figure()
    _curves(fig, ok, "gflops", "%{y:,.0f} GFLOP/s")
    fig.update_xaxes(type="log", title="(M·N·K)^(1/3) · lines: powers of two · ◆ other sizes")
    fig.update_yaxes(type="log", title="GFLOP/s")
    return _layout(fig, "Throughput against size", font)


def pct_of_cublas(df: pd.DataFrame, font: int = 13) -> go.Figure:
    ok = _series(df)
    ok = ok[ok["pct_cublas"].notna() & ~ok["kernel"].str.startswith("cublas")] if "pct_cublas" in ok else ok.iloc[:0]
    fig = go.Figure()
    _curves(fig, ok, "pct_cublas", "%{y:.1f}% of cuBLAS")
    fig.update_xaxes(type="log", title="size: (M·N·K)^(1/3)")
    fig.update_yaxes(title="% of cuBLAS at the same precision", rangemode="tozero")
    return _layout(fig, "Share of cuBLAS", font)


def roofline(df: pd.DataFrame, peaks: dict, font: int = 13) -> go.Figure:
    """GFLOP/s against arithmetic intensity (FLOP per byte of minimal traffic) under the device's roofs."""
    ok = _series(df)
    fig = go.Figure()
    ai = np.logspace(-1, 4, 200)
    bw = peaks["bandwidth_gbs"]
    fig.add_scatter(x=ai, y=np.minimum(ai * bw, peaks["fp32_gflops"]), mode="lines", name=f"FP32 roof "
                    f"({peaks['fp32_gflops'] / 1e3:.1f} TFLOP/s, {bw / 1e3:.2f} TB/s)", line={"color": "black"})
    if peaks.get("tf32_gflops_datasheet"):
        fig.add_scatter(x=ai, y=np.minimum(ai * bw, peaks["tf32_gflops_datasheet"]), mode="lines",
                        name=f"TF32 tensor roof (datasheet {peaks['tf32_gflops_datasheet'] / 1e3:.0f} TFLOP/s)",
                        line={"color": "gray", "dash": "dash"})
    for label, part in ok.groupby("label", sort=False):
        fig.add_scatter(x=part["intensity"], y=part["gflops"], mode="markers", name=label, marker={"size": 9},
                        text=part.apply(_shape, axis=1), hovertemplate="%{text}: %{y:,.0f} GFLOP/s at %{x:.0f} FLOP/B")
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOP per byte, each matrix moved once)")
    fig.update_yaxes(type="log", title="GFLOP/s")
    return _layout(fig, "Roofline", font)


def telemetry(df: pd.DataFrame, font: int = 13) -> go.Figure:
    """Clock, power and temperature after each point, in measurement order: throttling shows here."""
    fig = go.Figure()
    have = [c for c in ("sm_clock_mhz", "power_w", "temperature_c") if c in df]
    idx = list(range(1, len(df) + 1))
    names = {"sm_clock_mhz": "SM clock (MHz)", "power_w": "power (W)", "temperature_c": "temperature (°C)"}
    for i, col in enumerate(have):
        fig.add_scatter(x=idx, y=df[col], mode="lines+markers", name=names[col], yaxis="y" if i == 0 else f"y{i + 1}")
    fig.update_layout(xaxis={"title": "point, in measurement order"},
                      yaxis={"title": names.get(have[0], "") if have else ""},
                      yaxis2={"overlaying": "y", "side": "right", "title": "W / °C", "showgrid": False})
    if len(have) > 2:
        fig.update_traces(yaxis="y2", selector={"name": names["temperature_c"]})
    return _layout(fig, "GPU telemetry during the sweep", font)


def all_charts(df: pd.DataFrame, peaks: dict, font: int = 13) -> dict[str, go.Figure]:
    charts = {"gflops_vs_size": gflops_vs_size(df, font), "percent_of_cublas": pct_of_cublas(df, font),
              "roofline": roofline(df, peaks, font)}
    if "sm_clock_mhz" in df:
        charts["telemetry"] = telemetry(df, font)
    return charts
