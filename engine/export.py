"""Benchmark exports: data as CSV and JSON with provenance, every chart as PNG, SVG and HTML."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from . import charts
from .benchmark import to_document

FORMATS = ("csv", "json", "html", "png", "svg")
PROVENANCE_COLUMNS = ("gpu", "driver_cuda_version", "cuda", "date", "engine_commit")


def results_csv(rows: list[dict], prov: dict) -> str:
    """One row per point, each carrying the provenance, so a CSV alone still says where it came from."""
    df = pd.DataFrame(rows)
    for key in PROVENANCE_COLUMNS:
        df[key] = prov.get(key)
    settings = prov.get("settings", {})
    df["settings"] = json.dumps(settings, sort_keys=True)
    return df.to_csv(index=False)


def image(fig, fmt: str, width: int = 1200, height: int = 700, scale: float = 1.0) -> bytes:
    """PNG or SVG through kaleido, which drives a local Chrome or Chromium."""
    return fig.to_image(format=fmt, width=width, height=height, scale=scale)


def write_all(rows: list[dict], prov: dict, out: Path, formats=FORMATS, width: int = 1200,
              height: int = 700) -> tuple[list[Path], list[str]]:
    """Writes the exports into `out`; returns the files written and what could not be (one line each)."""
    out.mkdir(parents=True, exist_ok=True)
    written, skipped = [], []
    if "csv" in formats:
        (out / "results.csv").write_text(results_csv(rows, prov))
        written.append(out / "results.csv")
    if "json" in formats:
        (out / "results.json").write_text(json.dumps(to_document(rows, prov), indent=1, default=float))
        written.append(out / "results.json")
    from .benchmark import derive  # noqa: PLC0415
    df = derive(pd.DataFrame(rows).assign(gpu=prov.get("gpu")), prov["peaks"])
    figs = charts.all_charts(df, prov["peaks"]) if len(df) else {}
    for name, fig in figs.items():
        fig.update_layout(title={"text": f"{fig.layout.title.text} · {prov.get('gpu')} · {prov.get('date', '')[:10]}"})
        if "html" in formats:
            path = out / f"{name}.html"
            fig.write_html(path, include_plotlyjs="cdn")
            written.append(path)
        for fmt in ("png", "svg"):
            if fmt not in formats:
                continue
            try:
                (out / f"{name}.{fmt}").write_bytes(image(fig, fmt, width, height))
                written.append(out / f"{name}.{fmt}")
            except Exception as exc:   # no kaleido or no Chrome/Chromium on this machine
                skipped.append(f"{name}.{fmt}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    return written, skipped
