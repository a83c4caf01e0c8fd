"""Bank conflicts: each shared-memory instruction's 32 lanes mapped onto the 32 banks."""
import streamlit as st

from engine import animations
from engine.kernels import registry
from engine.metrics import analysis, views
from engine.plots import bank_figures
from pages.lib import cached, claim_texts, server, settings, ui, view_state

ui.setup_page("bank_conflicts", "Bank conflicts", "Shared memory serves a warp from 32 banks of 4-byte words. Lanes "
              "reading different words of one bank are served one after another: each extra word is one more "
              "wavefront.")

WINDOW = animations.WINDOW   # long traces are windowed, never sent whole
shared = registry.showing("bank_conflicts")
# Opens on the first kernel that can pad its rows: the conflicts and what removes them.
padded_first = next((name for name in shared if "PAD" in registry.get(name).params), shared[0])
top = ui.figure_first()
with ui.controls():
    # the kernel on a row of its own: beside TILE and the padding its name and 'Pad rows by one word' were cut
    kernel = st.selectbox("Kernel", shared, key=view_state.state("kernel", padded_first, shared),
                          format_func=ui.kernel_label)
    spec = registry.get(kernel)
    view_state.remember(kernel=kernel)
    # TILE 32 first: a warp's 32 lanes in one bank, the 32-way conflict that padding removes.
    shown = settings.kernel_settings([kernel], (64, 64, 64), hi=128, opening={"TILE": 32})
    m, n, k, params = shown.m, shown.n, shown.k, shown.of(kernel)
    tile, pad, padded = params.get("TILE"), params.get("PAD", 0), "PAD" in params
    # The animation shows block (0, 0): tracing that block alone draws it quickly.
    trace, inst = ui.trace_or_stop(kernel, m, n, k, params, spec.default_block, ((0, 0),))
    # The other kernels, TILEs and padding, compiled ahead (with the SASS their as-compiled counts read).
    server.offer(shared, {"TILE": registry.TILES, "PAD": (0, 1)}, listing=True)
    d1, d2, d3, d4 = st.columns([1, 1.3, 1, 1.4])
    warps = views.warps_of(trace, 0, 0)
    warp = d1.selectbox("Warp of block (0, 0)", warps, key=view_state.state("warp", 0, warps))
    shows = ["loads", "loads and stores"]
    kinds = d2.radio("Show", shows, horizontal=True, key=view_state.state("show", "loads", shows))
    total = views.count_steps(trace, inst, 0, 0, warp, "shared", op="load" if kinds == "loads" else None)
    # A long kernel's instructions WINDOW at a time, as on Coalescing (at 128^3 a warp issues 256 shared
    # loads: the animation had stopped at 160 with no way to the others)
    first_step = view_state.window_start(d3, total, WINDOW)
    duration = view_state.speed_control(d4, animations.SPEEDS["bank_conflicts"])
    view_state.remember(warp=warp, show=kinds)

shown = views.bank_steps(trace, inst, 0, 0, warp, loads_only=kinds == "loads", start=first_step, limit=WINDOW)
if shown.steps:
    label = ", ".join([kernel] + [f"{name} {value}" for name, value in params.items()]) + f", warp {warp}"
    fig = cached.figure(lambda: bank_figures.bank_figure(shown, label, view_state.presenter(), duration, "step"))
    # on the instruction the link names (?step=, which the player keeps at the one shown)
    top.plotly_chart(fig.opened_at(view_state.frame("step", fig.frame_names())).on_page(view_state.page_name()), width="stretch",
                     config={"displaylogo": False, "displayModeBar": False}, key="bank-figure")
    top.caption("Top row: the warp's 32 lanes, wired to the bank (column) holding the word each reads. Green: the "
               "first word a bank serves; red: every further word of the same bank, one more wavefront each. "
               "Lanes wired to one square read the same word: a broadcast, served together. A 128-bit access (the "
               "ladder's float4 rungs) wires each lane to 4 consecutive words and is served 128 bytes of lanes at a "
               "time: lanes 0-7's wavefronts, then 8-15's, and so on (16 lanes at a time for a load whose lanes read "
               "in pairs, lane n what lane n ^ 1 or n ^ 2 reads; a 64-bit access: 16 lanes, or 32); red then marks "
               "those beyond the fewest its words need. Measured pattern by pattern against Nsight Compute.")
    ui.animation_exports(lambda: bank_figures.bank_figure(shown, label, True, duration),
                         f"Bank conflicts: {label}, {m}x{n}x{k}")
    # The picture is the source's accesses; where nvcc merged them, the hardware's differ: say so here.
    listing = cached.sass_listing(trace.launches[-1].file, trace.problem.params)
    merged = sorted(set(analysis.merged_sites(trace, listing).values()))
    if merged:
        top.info(f"This picture shows {kernel}'s shared loads as written, one 32-bit read per access. nvcc compiled "
                f"them into {', '.join(merged)}: each thread's reads of neighbouring words are one instruction, served "
                "as the table below counts them (\"as compiled\"), which is what Nsight Compute measures.",
                icon=":material/memory:")

st.subheader("The whole kernel")
whole = ui.or_stop("Counting wavefronts as written and as compiled", cached.shared_kernel, kernel, m, n,
                   k, params, spec.default_block)
left, right = st.columns([1.3, 1])
left.plotly_chart(bank_figures.ways_histogram(whole, view_state.presenter()), width="stretch")
# The table under them, at full width: in a column beside the chart it lost its last columns
ui.fitting_table(whole.table, hide_index=True, width="stretch")
right.caption("As written: one 32-bit read per access. As compiled: what `" +
              views.ncu_command("shared", "load", ("requests", "wavefronts", "bank_conflicts")) + "` reads.")
for note in whole.notes:
    right.info(note, icon=":material/memory:")
if whole.sass_note:
    right.caption(whole.sass_note)
ui.nsight_view(ui.or_stop(f"Counting the whole of {kernel}", cached.side_by_side, kernel, m, n, k, params,
                          spec.default_block), kernel)

st.subheader("What the source documents say, and what measurement shows")
for claim, verdict in claim_texts.claims("banks"):
    st.markdown(f"- *{claim}*  \n  {verdict}")

view_state.leave_out_unknown()   # what the link named and the page did not read: said in one line, left out
