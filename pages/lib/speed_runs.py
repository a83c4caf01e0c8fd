"""The run a speed section draws: timed now on this GPU (a button), or one of the recorded runs."""
from __future__ import annotations

import streamlit as st

from engine.bench import benchmark, schema, selection, speeds
from engine.kernels import registry
from pages.lib import cached, ui, view_state


def speed_run(rungs: list[str], baselines: list[str], size: int, what: str, key: str,
              params: dict[str, dict[str, int]] | None = None):
    """The run a speed section draws: timed now (a button, where there is a GPU: the rungs and their
    baselines at size³) or recorded (a choice among the shipped runs that hold one of the rungs, the
    newest first chosen). (rows as benchmark.derive gives them, provenance, label, live) or None, said
    on the page, where no run of them ships. what: the button's words for what it times. params: the
    parameters a kernel is timed with now, by kernel (the one on screen; the others: their defaults)."""
    status = ui.device_status()
    if status.available and st.button(f"Time {what} now at {size:,}³ on this {status.name}"):
        settings = benchmark.Settings()
        with st.spinner("Timing"):
            # The kernels at their defaults in one sweep; one set to other parameters on its own, since a
            # sweep's parameters go to every kernel that declares them (the rungs share BM, BN, ...).
            own = own_params(params)
            rows = list(benchmark.sweep([k for k in rungs + baselines if k not in own], [(size, size, size)], settings))
            for kernel, chosen in own.items():
                rows += list(benchmark.sweep([kernel], [(size, size, size)], settings, chosen))
        st.session_state[key] = (rows, benchmark.provenance(status.info, settings))
    live = st.session_state.get(key) if status.available else None
    if live:
        rows, prov = live
        df = benchmark.derive(benchmark.of_run(schema.as_frame(rows), prov), prov["peaks"])
        return df, prov, speeds.run_label(prov, True), True
    names = [p.name for p in benchmark.recorded_runs(rungs)]
    if not names:
        st.info("No recorded benchmark run of these kernels ships with this copy.", icon=":material/history:")
        return None
    chosen = st.selectbox("Recorded run", names, key=view_state.state("run", names[-1], names)) if len(names) > 1 else names[0]
    view_state.remember(run=chosen)   # a shared link, and coming back to the page, open on the same run
    df, prov = cached.recorded(benchmark.RECORDED / chosen)   # read once, not on every rerun
    return df, prov, speeds.run_label(prov, False), False


def own_params(params: dict | None) -> dict:
    """The kernels a live run times on their own, with the parameters on screen: those set away from their
    defaults, and a kernel chosen per size (selection.CHOSEN_PER_SIZE) whatever its settings say, since
    named with no parameters it would run the size sweeps' choice, not the defaults shown."""
    return {k: p for k, p in (params or {}).items()
            if p != registry.get(k).default_params() or k in selection.CHOSEN_PER_SIZE}
