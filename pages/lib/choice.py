"""The size sweeps' choice per size (engine/bench/selection.py), drawn the same on every page that
shows it: the GPU swept on, the table (its reasons beside the size, kernel and share at 1280 px), and
what it is in words. A sweep file that cannot be read is said in one line."""
from __future__ import annotations

import streamlit as st

from engine.bench import schema, selection
from engine.errors import EngineError
from pages.lib import cached, ui, view_state

FORMATS = {"TFLOP/s": "%.1f", "cuBLAS TFLOP/s": "%.1f", "% of cuBLAS": "%.0f"}


def _tables(family: str) -> dict:
    """Per GPU swept for the family, its table: read once per version of the sweep files."""
    files = tuple(v for p in selection.sweeps() for v in cached.file_version(p))
    return cached.page_part(("size-choice", family, files), lambda: {
        gpu: t for gpu in selection.gpus() if len(t := selection.table(gpu=gpu, family=family))})


def size_choice(family: str, key: str, beside: str | None = None) -> None:
    """The family's table ("fp32" or "tensor") on the GPU chosen (key: the page's name for the widgets).
    beside: the GPU of the run the page shows next to it, which the table opens on where that GPU was
    swept (else this machine's GPU, else the first swept): opened on the first by name, the H100's
    choices had sat under the H200's speed chart."""
    try:
        tables = _tables(family)
    except EngineError as exc:
        st.warning(str(exc), icon=":material/warning:")
        return
    if not tables:
        st.info("No size sweep of this family recorded yet (tests/benchmarks/size_sweep.py, kept in "
                "engine/bench/recorded/selection/).", icon=":material/tune:")
        return
    gpus = list(tables)
    if len(gpus) > 1:   # kept in the URL (?swept=), so a shared link opens on the same GPU's sweeps
        here = ui.device_status()
        first = next((g for g in (beside, here.name if here.available else None) if g in gpus), gpus[0])
        widget = view_state.state("swept", first, gpus, scope=key)
        # A run of another GPU chosen above takes the table to that GPU's sweeps (the H200's choices had
        # stayed under an H100 run's chart); otherwise what the user or their link chose stays.
        shown_beside = view_state.page_key(f"{key}.beside")
        if st.session_state.get(shown_beside, beside) != beside and beside in gpus:
            st.session_state[widget] = beside
        st.session_state[shown_beside] = beside
        gpu = st.selectbox("Sizes swept on", gpus, key=widget)
        view_state.remember(swept=gpu)
        view_state.keep(**{f"{key}.swept": gpu})   # a scoped control's own, so coming back to the page keeps it
    else:
        gpu = gpus[0]
    table = tables[gpu]
    lead = ("size", "kernel", "% of cuBLAS", "why")
    # Each lead column as wide as its own text: switched from the FP32 table to the tensor one, the grid had
    # kept the FP32 widths and cut the longest reason off ("...; pad"); a key of its own per table did not
    # change that, widths said outright do.
    widths = {c: round(ui.column_px(table, c)) for c in lead}
    config = {c: st.column_config.TextColumn(c, width=widths[c]) for c in ("size", "kernel", "why")}
    config |= {c: st.column_config.NumberColumn(c, format=f, width=widths.get(c)) for c, f in FORMATS.items()}
    ui.fitting_table(table, lead, hide_index=True, width="stretch", column_config=config)
    st.caption(schema.plain(f"From the recorded size sweeps on the {gpu} ({table['SMs'].iloc[0]} SMs): at each size "
                            f"the fastest of {selection.CHOICE_WORDS[family]}"))
