"""Coalescing: step through one warp's global loads and stores, two kernels side by side."""
import pandas as pd
import streamlit as st

from engine import analysis, registry, views
from pages.lib import claims, figures, ui

ui.setup_page("Coalescing", "What one warp's 32 lanes read and write in global memory, instruction by instruction: "
              "the 32-byte sectors their addresses fall in decide how many memory transactions one load costs.")

WINDOW = 160   # instructions per animation: long traces are windowed, never sent whole
kernels = [k.name for k in registry.traceable()]
left, right = st.columns(2)
with left:
    first = st.selectbox("Kernel", kernels, key=ui.state("kernel", "naive_x_rows", kernels), format_func=ui.kernel_label)
with right:
    options = ["(none)"] + kernels
    second = st.selectbox("Side by side with", options, key=ui.state("compare", "naive_x_cols", options),
                          format_func=lambda k: k if k == "(none)" else ui.kernel_label(k))
c1, c2, c3, c4, c5 = st.columns(5)
m = c1.number_input("M (rows of A and C)", 1, 128, key=ui.state("m", 32, lo=1, hi=128))
n = c2.number_input("N (columns of B and C)", 1, 128, key=ui.state("n", 32, lo=1, hi=128))
k = c3.number_input("K (columns of A)", 1, 128, key=ui.state("k", 16, lo=1, hi=128))
shapes = [f"{x}x{y}" for x, y in registry.NAIVE_BLOCKS]
block_text = c4.selectbox("Block (naive kernels)", shapes, key=ui.state("block", "16x16", shapes),
                          help="threads per block as x by y; tiled kernels use TILE x TILE")
tile = c5.selectbox("TILE (tiled kernels)", registry.TILES, key=ui.state("tile", 16, registry.TILES))
block = tuple(int(v) for v in block_text.split("x"))
ui.remember(kernel=first, compare=second, m=m, n=n, k=k, block=block_text, tile=tile)

chosen = [first] + ([second] if second != "(none)" else [])
source = "auto"
traced = {name: ui.trace_or_stop(name, m, n, k, tile, 0, block, None, source) for name in chosen}

t0, inst0 = traced[first]
grid = t0.launches[-1].grid
d1, d2, d3, d4, d5 = st.columns(5)
bx = d1.number_input("Block x", 0, grid[0] - 1, key=ui.state("bx", 0, lo=0, hi=grid[0] - 1))
by = d2.number_input("Block y", 0, grid[1] - 1, key=ui.state("by", 0, lo=0, hi=grid[1] - 1))
warps = views.warps_of(t0, bx, by)
warp = d3.selectbox("Warp of that block", warps, key=ui.state("warp", warps[0], warps))
_, total0 = views.warp_steps(t0, inst0, bx, by, warp, "global", 0, 0)
first_step = d4.number_input("From instruction", 1, max(total0, 1), step=WINDOW,
                             key=ui.state("from", 1, lo=1, hi=max(total0, 1)),
                             help=f"the animation shows up to {WINDOW} instructions at a time") - 1
speed = d5.select_slider("Speed", ["slow", "normal", "fast"], key=ui.state("speed", "normal", ["slow", "normal", "fast"]))
ui.remember(bx=bx, by=by, warp=warp, speed=speed, **{"from": first_step + 1})

panels = []
for name in chosen:
    t, inst = traced[name]
    g = t.launches[-1].grid
    steps, total = views.warp_steps(t, inst, min(bx, g[0] - 1), min(by, g[1] - 1), warp, "global",
                                    start=first_step, limit=WINDOW)
    if not steps:
        st.warning(f"{name}: warp {warp} of block ({bx}, {by}) has no active lanes at this size.")
        continue
    arrays = {a: t.shapes[a] for a in dict.fromkeys(s.array for s in steps)}
    panels.append({"label": name, "arrays": arrays, "steps": steps, "total": total,
                   "source": ui.source_lines(t.launches[-1].file)})
    if total > len(steps):
        st.caption(f"{name}: instructions {first_step + 1} to {first_step + len(steps)} of this warp's {total} "
                   "global-memory instructions (move the window with 'From instruction').")

if panels:
    duration = {"slow": 700, "normal": 300, "fast": 60}[speed]
    st.plotly_chart(figures.coalescing_figure(panels, ui.presenter(), duration), width="stretch",
                    config={"displaylogo": False})
    st.caption("Squares: the elements the warp's active lanes touch, coloured by lane. Red outlines: the 32-byte "
               "sectors they fall in. Right: just the touched sectors, 8 floats each, four to a 128-byte line.")

st.subheader("Whole kernel, as Nsight Compute counts it")
rows = []
for name in chosen:
    t, inst = traced[name]
    summary = analysis.site_summary(t, inst)
    g = summary[summary["space"] == "global"]
    for r in g.itertuples():
        rows.append({"kernel": name, "line": r.line, "access": f"{r.op} {r.array}", "requests": r.requests,
                     "sectors": r.sectors, "sectors per request": round(r.sectors_per_request, 2),
                     "ncu metric": analysis.NCU_METRICS[("global", r.op, "sectors")]})
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
st.caption(f"Traced {len(t0):,} accesses of {first} on {t0.device} ({t0.source.upper()} mode); "
           f"result checked against float64 numpy: relative error {t0.rel_error:.1e}. "
           "Check with: ncu --metrics l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,"
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")

st.subheader("What the seeds say, and what the trace shows")
for claim, verdict in claims.CLAIMS["coalescing"]:
    st.markdown(f"- *{claim}*  \n  {verdict}")
