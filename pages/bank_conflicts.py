"""Bank conflicts: each shared-memory instruction's 32 lanes mapped onto the 32 banks."""
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from engine.kernels import registry
from engine.metrics import views
from engine.plots import traces
from pages.lib import claims, ui

ui.setup_page("bank_conflicts", "Bank conflicts", "Shared memory serves a warp from 32 banks of 4-byte words. Lanes "
              "reading different words of one bank are served one after another: each extra word is one more "
              "wavefront.")

shared = registry.showing("bank_conflicts")
with ui.controls():
    c0, c1, c2, c3 = st.columns([2.2, 1, 1, 1])
    kernel = c0.selectbox("Kernel", shared, key=ui.state("kernel", "shared_bank_conflicts", shared),
                          format_func=ui.kernel_label)
    spec = registry.get(kernel)
    tiles = spec.params["TILE"]
    tile = c1.selectbox("TILE", tiles, key=ui.state("tile", 32, tiles))
    padded = "PAD" in spec.params
    if not padded:   # a kernel without padding: the toggle shows it off, not a stale "on"
        st.session_state[ui.state("pad", False)] = False
    pad = int(c2.toggle("Pad rows by one word", disabled=not padded, key=ui.state("pad", False),
                        help="tile_A[TILE][TILE + 1]: each row starts one bank later"))
    params = spec.takes({"TILE": tile, "PAD": pad})
    size = c3.number_input("M = N = K", tile, 128, step=tile, key=ui.state("size", 64, lo=tile, hi=128))
    ui.remember(kernel=kernel, tile=tile, pad=pad, size=size)
    # The animation shows block (0, 0): tracing that block alone draws it quickly.
    trace, inst = ui.trace_or_stop(kernel, size, size, size, params, spec.default_block, ((0, 0),))
    d1, d2, d3 = st.columns([1, 1, 2])
    warps = views.warps_of(trace, 0, 0)
    warp = d1.selectbox("Warp of block (0, 0)", warps, key=ui.state("warp", 0, warps))
    shows = ["loads", "loads and stores"]
    kinds = d2.radio("Show", shows, horizontal=True, key=ui.state("show", "loads", shows))
    duration = ui.speed_control(d3, {"slow": 900, "normal": 400, "fast": 80})
    ui.remember(warp=warp, show=kinds)

steps, total = views.warp_steps(trace, inst, 0, 0, warp, "shared", 0, 160)
what = "shared instruction"
if kinds == "loads":   # numbered among the loads, so the headline's count and the slider agree
    steps = [replace(s, index=i) for i, s in enumerate(s for s in steps if s.op == "load")]
    total, what = views.count_steps(trace, inst, 0, 0, warp, "shared", "load"), "shared load"
if steps:
    label = f"{kernel}, TILE {tile}" + (f", PAD {pad}" if padded else "") + f", warp {warp}"
    fig = ui.cached_figure(lambda: traces.bank_figure(
        steps, [views.bank_layers(s) for s in steps], ui.source_lines(trace.launches[-1].file), ui.presenter(),
        duration, label, total, what))
    st.plotly_chart(fig, width="stretch", config={"displaylogo": False, "displayModeBar": False}, key="bank-figure")
    st.caption("Top row: the warp's 32 lanes, wired to the bank (column) holding the word each reads. Green: the "
               "first word a bank serves; red: every further word of the same bank, one more wavefront each. "
               "Lanes wired to one square read the same word: a broadcast, served together.")

st.subheader("The whole kernel")
summary, sass_info, (hw, notes, per_site) = ui.or_stop(
    "Counting wavefronts as written and as compiled", ui.cached_summary, kernel, size, size, size, params,
    spec.default_block)
loads = summary[(summary["space"] == "shared") & (summary["op"] == "load")]
source_ways = pd.Series(inst["wavefronts"][np.isin(inst["site"], loads["site"].to_numpy())]).value_counts().sort_index()
compiled = None
if per_site:
    merged = np.concatenate(list(per_site.values()))
    others = inst["wavefronts"][np.isin(inst["site"], [s for s in loads["site"] if s not in per_site])]
    compiled = pd.Series(np.concatenate([merged, others])).value_counts().sort_index().to_dict()
left, right = st.columns([1.3, 1])
left.plotly_chart(traces.ways_histogram(source_ways.to_dict(), compiled, ui.presenter()), width="stretch")
rows = []
for (_, r), (_, h) in zip(summary.iterrows(), hw.iterrows()):
    if r["space"] != "shared":
        continue
    rows.append({"line": r["line"], "access": f"{r['op']} {r['array']}", "requests": r["requests"],
                 "wavefronts": int(r["wavefronts"]), "bank conflicts": int(r["bank_conflicts"]),
                 "as compiled: instructions": int(h["requests"]), "wavefronts ": int(h["wavefronts"]),
                 "conflicts ": int(h["bank_conflicts"])})
right.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
right.caption("Left block: as written (one 32-bit read per access). Right block: as compiled, what "
              "`ncu --metrics smsp__inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,"
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum` reads.")
for note in notes:
    right.info(note, icon=":material/memory:")
if sass_info.get("available") is False:
    right.caption(sass_info["note"])

st.subheader("What the source documents say, and what measurement shows")
for claim, verdict in claims.CLAIMS["banks"]:
    st.markdown(f"- *{claim}*  \n  {verdict}")
