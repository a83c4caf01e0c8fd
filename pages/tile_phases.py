"""Tile phases: what one block of C loads into shared memory, phase by phase, from its trace."""
import streamlit as st

from engine import animations
from engine.kernels import registry
from engine.metrics import views
from engine.plots import tile_phase_figures
from pages.lib import cached, claim_texts, server, settings, ui, view_state

ui.setup_page("tile_phases", "Tile phases", "A tiled kernel computes its block of C in phases: the block's threads "
              "load one tile of A and one of B into shared memory, wait at a barrier, multiply them, wait again, "
              "and move on.")

tiled = registry.showing("tile_phases")
top = ui.figure_first()
with ui.controls():
    # the kernel on a row of its own: beside the sizes its name was cut
    kernel = st.selectbox("Kernel", tiled, key=view_state.state("kernel", tiled[0], tiled),
                          format_func=ui.kernel_label)
    spec = registry.get(kernel)
    view_state.remember(kernel=kernel)
    shown = settings.kernel_settings([kernel], (40, 40, 40), hi=128)
    m, n, k, params = shown.m, shown.n, shown.k, shown.of(kernel)
    tile = params["TILE"]   # the phase picture steps through K by TILE (contract.VIEW_NEEDS)
    grid = ui.grid_of(kernel, m, n, k, params, spec.default_block)
    d1, d2, d3 = st.columns([1, 1, 2])
    # The last block by default: it overhangs the matrices when sizes are not multiples of TILE.
    bx = d1.number_input("Block x", 0, grid[0] - 1, key=view_state.state("bx", grid[0] - 1, lo=0, hi=grid[0] - 1))
    by = d2.number_input("Block y", 0, grid[1] - 1, key=view_state.state("by", grid[1] - 1, lo=0, hi=grid[1] - 1))
    duration = view_state.speed_control(d3, animations.SPEEDS["tile_phases"])
    view_state.remember(bx=bx, by=by)
    trace, _ = ui.trace_or_stop(kernel, m, n, k, params, spec.default_block, ((bx, by),))   # the block shown
    server.offer(tiled, {"TILE": spec.params["TILE"]})   # the other kernel and TILEs, compiled ahead

view = views.tile_view(trace, bx, by)
fig = cached.figure(lambda: tile_phase_figures.tile_phase_figure(view, view_state.presenter(), duration, "phase"))
# on the phase the link names (?phase=2-load, which the player keeps at the one shown)
top.plotly_chart(fig.opened_at(view_state.frame("phase", fig.frame_names())).on_page(view_state.page_name()), width="stretch",
                 config={"displaylogo": False, "displayModeBar": False}, key="tile-figure")
(r0, r1), (c0, c1) = view.rows, view.cols
top.caption(f"Block ({bx}, {by}) owns rows {r0}-{min(r1, m) - 1} and columns {c0}-{min(c1, n) - 1} of C. "
           "Blue: the tiles it loads in this phase. " +
           ("Red, dotted: the part of a tile past the edge of the matrix, which the guards fill with zeros "
            "so the products there add nothing." if view.zero_filled else
            "This block's tiles lie inside the matrices: pick the last block to see zero-filled edges."))
ui.animation_exports(lambda: tile_phase_figures.tile_phase_figure(view, True, duration),
                     f"Tile phases: {kernel} at {m}x{n}x{k}, TILE {tile}, block ({bx}, {by})")

st.subheader("Global reads: tiled against naive, counted in the traces")
reads = ui.or_stop(f"Counting the global reads of {kernel} and of the naive kernel at {m}x{n}x{k}",
                   cached.reads_against_naive, kernel, m, n, k, params)
reads_naive, reads_tiled = reads.values()
a, b = st.columns([1, 1.4])
a.plotly_chart(tile_phase_figures.reads_bar(reads, view_state.presenter()), width="stretch")
b.markdown(f"The naive kernel issues **{reads_naive:,}** global loads for this {m}x{n}x{k} product (2·M·N·K); the "
           f"tiled kernel **{reads_tiled:,}**: **{reads_naive / max(reads_tiled, 1):.1f}x fewer** "
           f"(TILE = {tile}). Each element a block loads is used {tile} times from shared memory. "
           "Sizes that are not multiples of TILE lose a little of that: the edge tiles are part zeros.")
b.caption(f"Traced in {trace.source.upper()} mode on {trace.device}.")
ui.nsight_view(ui.or_stop(f"Counting the whole of {kernel}", cached.side_by_side, kernel, m, n, k, params,
                          spec.default_block), kernel)

st.subheader("What the source documents say, and what measurement shows")
for claim, verdict in claim_texts.claims("tiling"):
    st.markdown(f"- *{claim}*  \n  {verdict}")

view_state.leave_out_unknown()   # what the link named and the page did not read: said in one line, left out
