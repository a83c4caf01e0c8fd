"""Bank conflicts: each shared-memory instruction's 32 lanes mapped onto the 32 banks."""
import streamlit as st

from engine import animations
from engine.kernels import registry
from engine.metrics import analysis, views
from engine.plots import bank_figures
from pages.lib import cached, claim_texts, server, ui, view_state

ui.setup_page("bank_conflicts", "Bank conflicts", "Shared memory serves a warp from 32 banks of 4-byte words. Lanes "
              "reading different words of one bank are served one after another: each extra word is one more "
              "wavefront.")

shared = registry.showing("bank_conflicts")
# Opens on the first kernel that can pad its rows: the conflicts and what removes them.
padded_first = next((name for name in shared if "PAD" in registry.get(name).params), shared[0])
top = ui.figure_first()
with ui.controls():
    # the kernel on a row of its own: beside TILE and the padding its name and 'Pad rows by one word' were cut
    kernel = st.selectbox("Kernel", shared, key=view_state.state("kernel", padded_first, shared),
                          format_func=ui.kernel_label)
    spec = registry.get(kernel)
    c1, c2, c3 = st.columns(3)
    tiles = spec.params.get("TILE", registry.TILES)
    # A ladder rung has no TILE: it runs with its own tile shape (its defaults), the select stays put.
    tile = c1.selectbox("TILE", tiles, key=view_state.state("tile", 32, tiles), disabled="TILE" not in spec.params,
                        help=None if "TILE" in spec.params else f"{kernel} runs with its own tile shape: "
                        + ", ".join(f"{k} {v}" for k, v in spec.default_params().items()))
    padded = "PAD" in spec.params
    if not padded:   # a kernel without padding: the toggle shows it off, not a stale "on"
        st.session_state[view_state.state("pad", False)] = False
    pad = int(c2.toggle("Pad rows by one word", disabled=not padded, key=view_state.state("pad", False),
                        help="tile_A[TILE][TILE + 1]: each row starts one bank later"))
    params = spec.takes({"TILE": tile, "PAD": pad})
    step = tile if "TILE" in spec.params else 32
    size = c3.number_input("M = N = K", step, 128, step=step, key=view_state.state("size", 64, lo=step, hi=128))
    view_state.remember(kernel=kernel, tile=tile, pad=pad, size=size)
    # The animation shows block (0, 0): tracing that block alone draws it quickly.
    trace, inst = ui.trace_or_stop(kernel, size, size, size, params, spec.default_block, ((0, 0),))
    # The other kernels, TILEs and padding, compiled ahead (with the SASS their as-compiled counts read).
    server.offer(shared, {"TILE": registry.TILES, "PAD": (0, 1)}, listing=True)
    d1, d2, d3 = st.columns([1, 1, 2])
    warps = views.warps_of(trace, 0, 0)
    warp = d1.selectbox("Warp of block (0, 0)", warps, key=view_state.state("warp", 0, warps))
    shows = ["loads", "loads and stores"]
    kinds = d2.radio("Show", shows, horizontal=True, key=view_state.state("show", "loads", shows))
    duration = view_state.speed_control(d3, animations.SPEEDS["bank_conflicts"])
    view_state.remember(warp=warp, show=kinds)

shown = views.bank_steps(trace, inst, 0, 0, warp, loads_only=kinds == "loads")
if shown.steps:
    label = kernel + (f", TILE {tile}" if "TILE" in spec.params else "") + (f", PAD {pad}" if padded else "") + f", warp {warp}"
    fig = cached.figure(lambda: bank_figures.bank_figure(shown, label, view_state.presenter(), duration))
    top.plotly_chart(fig, width="stretch", config={"displaylogo": False, "displayModeBar": False}, key="bank-figure")
    top.caption("Top row: the warp's 32 lanes, wired to the bank (column) holding the word each reads. Green: the "
               "first word a bank serves; red: every further word of the same bank, one more wavefront each. "
               "Lanes wired to one square read the same word: a broadcast, served together. A 128-bit access (the "
               "ladder's float4 rungs) wires each lane to 4 consecutive words and is served 128 bytes of lanes at a "
               "time: lanes 0-7's wavefronts, then 8-15's, and so on (16 lanes at a time for a load whose lanes read "
               "in pairs, lane n what lane n ^ 1 or n ^ 2 reads; a 64-bit access: 16 lanes, or 32); red then marks "
               "those beyond the fewest its words need. Measured pattern by pattern against Nsight Compute.")
    ui.animation_exports(lambda: bank_figures.bank_figure(shown, label, True, duration),
                         f"Bank conflicts: {label}, M = N = K = {size}")
    # The picture is the source's accesses; where nvcc merged them, the hardware's differ: say so here.
    listing = cached.sass_listing(trace.launches[-1].file, trace.problem.params)
    merged = sorted(set(analysis.merged_sites(trace, listing).values()))
    if merged:
        top.info(f"This picture shows {kernel}'s shared loads as written, one 32-bit read per access. nvcc compiled "
                f"them into {', '.join(merged)}: each thread's reads of neighbouring words are one instruction, served "
                "as the table below counts them (\"as compiled\"), which is what Nsight Compute measures.",
                icon=":material/memory:")

st.subheader("The whole kernel")
whole = ui.or_stop("Counting wavefronts as written and as compiled", cached.shared_kernel, kernel, size, size,
                   size, params, spec.default_block)
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
ui.nsight_view(ui.or_stop(f"Counting the whole of {kernel}", cached.side_by_side, kernel, size, size, size, params,
                          spec.default_block), kernel)

st.subheader("What the source documents say, and what measurement shows")
for claim, verdict in claim_texts.claims("banks"):
    st.markdown(f"- *{claim}*  \n  {verdict}")
