"""The size sweeps' choice per size (engine/bench/selection.py), drawn the same on every page that
shows it: the GPU swept on, the table (its reasons beside the size, kernel and share at 1280 px), and
what it is in words. A sweep file that cannot be read is said in one line."""
from __future__ import annotations

import streamlit as st

from engine.bench import schema, selection
from engine.errors import EngineError
from pages.lib import cached, ui

FORMATS = {"TFLOP/s": "%.1f", "cuBLAS TFLOP/s": "%.1f", "% of cuBLAS": "%.0f"}


def _tables(family: str) -> dict:
    """Per GPU swept for the family, its table: read once per version of the sweep files."""
    files = tuple(v for p in selection.sweeps() for v in cached.file_version(p))
    return cached.page_part(("size-choice", family, files), lambda: {
        gpu: t for gpu in selection.gpus() if len(t := selection.table(gpu=gpu, family=family))})


def size_choice(family: str, key: str) -> None:
    """The family's table ("fp32" or "tensor") on the GPU chosen (widget key: key)."""
    try:
        tables = _tables(family)
    except EngineError as exc:
        st.warning(str(exc), icon=":material/warning:")
        return
    if not tables:
        st.info("No size sweep of this family recorded yet (tests/benchmarks/size_sweep.py, kept in "
                "engine/bench/recorded/selection/).", icon=":material/tune:")
        return
    gpu = st.selectbox("Sizes swept on", list(tables), key=key) if len(tables) > 1 else next(iter(tables))
    table = tables[gpu]
    ui.fitting_table(table, ("size", "kernel", "% of cuBLAS", "why"), hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(c, format=f) for c, f in FORMATS.items()})
    st.caption(schema.plain(f"From the recorded size sweeps on the {gpu} ({table['SMs'].iloc[0]} SMs): at each size "
                            f"the fastest of {selection.CHOICE_WORDS[family]}"))
