"""Coalescing: step through one warp's global loads and stores, two kernels side by side."""
import streamlit as st

from engine import animations
from engine.kernels import registry
from engine.metrics import views
from engine.plots import coalescing_figures
from pages.lib import cached, claim_texts, server, settings, ui, view_state

ui.setup_page("coalescing", "Coalescing", "What one warp's 32 lanes read and write in global memory, instruction by "
              "instruction: the 32-byte sectors their addresses fall in decide how many memory transactions one "
              "load costs.")

WINDOW = animations.WINDOW   # long traces are windowed, never sent whole
kernels = registry.showing("coalescing")
top = ui.figure_first()
with ui.controls():
    # the kernels on a row of their own: beside the sizes their names were cut ('…walks r')
    c0, c1 = st.columns(2)
    # The catalog lists the lanes-on-rows mapping first and the coalesced one second: the lesson, side by side.
    # Each its title alone, the documents it is from under them: with their names a title was cut at
    # half width ("float4 loads, A transposed in shared memory — from “Matrix M…")
    title = lambda k: k if k == "(none)" else registry.get(k).title   # noqa: E731
    first = c0.selectbox("Kernel", kernels, key=view_state.state("kernel", kernels[0], kernels), format_func=title)
    options = ["(none)"] + kernels
    second = c1.selectbox("Side by side with", options, key=view_state.state("compare", kernels[1], options),
                          format_func=title)
    view_state.remember(kernel=first, compare=second)
    chosen = [first] + ([second] if second not in ("(none)", first) else [])
    st.caption("  \n".join(f"{name}: from {registry.get(name).source_titles}" for name in chosen))
    if second == first:   # two identical panels said nothing: one, and why
        st.caption(f"Side by side with itself: {first} is shown once; pick another kernel to compare.")
    # 32x32 by default: a warp is then one row of the block, so lanes-on-rows touches 32 rows of A
    # (32 sectors) while lanes-on-columns reads one 128-byte line of B (4 sectors).
    shown = settings.kernel_settings(chosen, (32, 32, 16), hi=128, block_default=(32, 32))
    m, n, k, block = shown.m, shown.n, shown.k, shown.block
    block_text = f"{block[0]}x{block[1]}"
    params = {name: shown.of(name) for name in chosen}
    grids = {name: ui.grid_of(name, m, n, k, params[name], block) for name in chosen}
    grid = grids[first]
    d1, d2, d3, d4, d5 = st.columns([1, 1, 1, 1, 1.4])
    bx = d1.number_input("Block x", 0, grid[0] - 1, key=view_state.state("bx", 0, lo=0, hi=grid[0] - 1))
    by = d2.number_input("Block y", 0, grid[1] - 1, key=view_state.state("by", 0, lo=0, hi=grid[1] - 1))
    # The animation needs one block of each kernel (the same block index, within each one's grid).
    one = {name: ((min(bx, g[0] - 1), min(by, g[1] - 1)),) for name, g in grids.items()}
    traced = {name: ui.trace_or_stop(name, m, n, k, params[name], block, one[name]) for name in chosen}
    server.offer(kernels, {"TILE": registry.TILES})   # what the selects above lead to, compiled ahead
    t0, inst0 = traced[first]
    warps = views.warps_of(t0, bx, by)
    warp = d3.selectbox("Warp", warps, key=view_state.state("warp", warps[0], warps), help="warp of that block")
    first_step = view_state.window_start(d4, views.count_steps(t0, inst0, bx, by, warp, "global"), WINDOW)
    duration = view_state.speed_control(d5, animations.SPEEDS["coalescing"])
    view_state.remember(bx=bx, by=by, warp=warp)

panels = []
for name in chosen:
    (sx, sy), = one[name]
    panel = views.warp_panel(*traced[name], sx, sy, warp, first_step, WINDOW)
    if panel.steps:
        panels.append(panel)
    elif total := views.count_steps(*traced[name], sx, sy, warp, "global"):
        # Its warp is active: the start set for the first kernel is past this one's last instruction.
        top.warning(f"{name}: warp {warp} of block ({sx}, {sy}) makes {total} global accesses at this size, "
                    f"none from instruction {first_step + 1} on.")
    else:
        top.warning(f"{name}: warp {warp} of block ({sx}, {sy}) has no active lanes at this size.")

if panels:
    def build(presenter: bool):
        return coalescing_figures.coalescing_figure(panels, presenter, duration, "step")
    fig = cached.figure(lambda: build(view_state.presenter()))
    # on the instruction the link names (?step=, which the player keeps at the one shown)
    top.plotly_chart(fig.opened_at(view_state.frame("step", fig.frame_names())).on_page(view_state.page_name()), width="stretch",
                     config={"displaylogo": False, "displayModeBar": False}, key="coalescing-figure")
    top.caption("Squares: the elements the warp's active lanes touch, coloured by lane. Red outlines: the 32-byte "
               "sectors they fall in. Middle: one row per 128-byte line the lanes touch, its four 32-byte sectors "
               "side by side (outlined red where touched), so the sectors and lines of the headline can be counted.")
    ui.animation_exports(lambda: build(True), f"Coalescing: {' beside '.join(p.kernel for p in panels)} at {m}x{n}x{k}, "
                         f"block {block_text}, warp {warp}")

st.subheader("Whole kernel, as Nsight Compute counts it")
whole = {name: ui.trace_or_stop(name, m, n, k, params[name], block) for name in chosen}
ui.table(views.global_accesses({name: cached.site_summary(name, m, n, k, params[name], block)
                                for name in chosen}), hide_index=True, width="stretch")
t0 = whole[first][0]
st.caption(f"Traced {len(t0):,} accesses of {first} on {t0.device} ({t0.source.upper()} mode); "
           f"result checked against float64 numpy: relative error {t0.rel_error:.1e}. "
           f"Check with: {views.ncu_command('global', 'load', ('sectors', 'requests'))}")
for name in chosen:
    ui.nsight_view(cached.side_by_side(name, m, n, k, params[name], block), name)

st.subheader("What the source documents say, and what the trace shows")
for claim, verdict in claim_texts.claims("coalescing"):
    st.markdown(f"- *{claim}*  \n  {verdict}")

view_state.leave_out_unknown()   # what the link named and the page did not read: said in one line, left out
