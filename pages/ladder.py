"""The FP32 ladder: each rung after the tiled kernel, what its source changed, what one block's trace
counts that explains its speed, and how fast it ran against cuBLAS."""
import math

import streamlit as st

from engine.bench import schema, speeds
from engine.kernels import registry
from engine.metrics import rung_counts, rung_diff
from engine.plots import charts, ladder_figures
from pages.lib import cached, choice, server, settings, speed_runs, ui, view_state

ui.setup_page("ladder", "The FP32 ladder", "From the tiled kernel towards cuBLAS one fix at a time: each rung's "
              "source against the rung before, what one block's trace counts, and the measured speed.")

rungs = list(registry.LADDER_RUNGS)
LARGEST = 4096   # the largest M, N or K a block is counted at here
with ui.controls():
    c0, c2, c3 = st.columns([5, 0.9, 0.9])
    rung = c0.selectbox("Rung", rungs, key=view_state.state("rung", rungs[1], rungs),
                        format_func=lambda r: f"{rungs.index(r) + 1}. {r}: {registry.get(r).title}")
    view_state.remember(rung=rung)
    spec = registry.get(rung)
    # Every rung's one block is traced at these sizes; the rung chosen with the parameters below, the
    # others with their defaults.
    shown = settings.kernel_settings([rung], (512, 512, 512), hi=LARGEST)
    m, n, k, params = shown.m, shown.n, shown.k, shown.of(rung)
    grid = ui.grid_of(rung, m, n, k, params, spec.default_block)
    bx = c2.number_input("Block x", 0, grid[0] - 1, key=view_state.state("bx", 0, lo=0, hi=grid[0] - 1))
    by = c3.number_input("Block y", 0, grid[1] - 1, key=view_state.state("by", 0, lo=0, hi=grid[1] - 1))
    view_state.remember(bx=bx, by=by)
    server.offer(rungs, listing=True)   # every rung is traced below: their builds first in the background
size = m if m == n == k else None   # the measured speeds below are of square products
dims = f"{m:,}³" if size else f"{m:,} x {n:,} x {k:,}"
rung_params = {r: params if r == rung else registry.get(r).default_params() for r in rungs}

# ------------------------------------------------------------------ the rung and what it changed
st.subheader(f"Rung {rungs.index(rung) + 1} of {len(rungs)}: {spec.title}")
st.markdown(f"**{spec.lesson}**")
st.html(ladder_figures.source_html(rung_diff.rung_source(rung), view_state.presenter()))

# ------------------------------------------------------------------ what one block's trace counts
st.subheader(f"What one block's trace counts, at {dims}")
# Each rung's block (bx, by), within its own grid (rungs own tiles of different sizes).
blocks = {r: tuple(min(b, g - 1) for b, g in zip((bx, by), ui.grid_of(r, m, n, k, rung_params[r],
                                                                      registry.get(r).default_block)))
          for r in rungs}
counts = ui.or_stop(f"Tracing one block of each rung at {dims}", cached.rungs, rungs, m, n, k, rung_params, blocks)
st.table(ladder_figures.metrics_styler(rung_counts.metrics_table(counts), rung))
for r, c in counts.items():
    if isinstance(c, str):
        st.warning(f"{r}: {c}", icon=":material/warning:")
st.caption(f"Per block, {rung} with {shown.words(rung)} (the parameters above), each other rung with its defaults. "
           "Loads per FMA count instructions, one thread's each (a "
           "float4, LDG.128 or LDS.128, is one; so is a cp.async); FMAs are the outputs the block writes times K. "
           "Sectors, wavefronts and bank conflicts are per request, one warp's load, as Nsight Compute counts them: a 128-bit load "
           "of 32 lanes is 512 bytes, 16 sectors and, without conflicts, 4 wavefronts (fewer where lanes share "
           "words). \"As compiled\": nvcc merges some scalar shared loads into LDS.64 or LDS.128 (the Bank conflicts page shows "
           "them); \"not modelled\" where it reordered a loop to do so.")

shown_counts = counts[rung]
nsight = None if isinstance(shown_counts, str) else cached.rung_side_by_side(rung, m, n, k, params, shown_counts)
if nsight is not None:
    ui.nsight_view(nsight, f"{rung} at {dims}")
else:
    # The Bank conflicts page traces whole kernels, but offers only some rungs: named only for those.
    st.caption(f"Beside Nsight Compute: at {dims} {rung}'s grid has partial tiles, so one block's counts do not "
               "make the launch's. The view is here at sizes that are multiples of 256, where every block is a "
               "full tile like the one counted, and where the grid is one block"
               + ("; the Bank conflicts page compares whole kernels." if rung in registry.showing("bank_conflicts")
                  else "."))

previous = registry.previous_rung(rung)
traced = [counts[r] for r in (previous, rung) if r and not isinstance(counts[r], str)]
if traced:
    with ui.controls("Warp"):
        warps = list(range(-(-traced[-1].threads // 32)))
        warp = st.columns(4)[0].selectbox("Warp", warps, key=view_state.state("warp", 0, warps),
                                          help="the warp of the block whose barrier intervals are drawn")
        view_state.remember(warp=warp)
    shown = [rung_counts.timeline(c, warp) for c in traced]
    st.plotly_chart(ladder_figures.intervals_figure(shown, view_state.presenter()), width="stretch",
                    config={"displaylogo": False, "displayModeBar": False}, key="ladder-intervals")
    st.caption("Each column is one barrier interval (the trace's epoch: the __syncthreads the warp has passed). Top row: "
               "the warp's global loads of a K tile (for double_buffered, B's cp.async copies, their commit group in "
               "the hover); bottom row: its shared loads, multiplying the newest tile loaded before the barrier. "
               "Yellow: both in one interval, the copy of the next tile in flight during the multiply. "
               + ladder_figures.tiles_drawn(shown))

# ------------------------------------------------------------------ measured speed
st.subheader("Measured speed against cuBLAS SGEMM")
run = speed_runs.speed_run(rungs, ["cublas_sgemm"], size or max(m, n, k), "every rung and cuBLAS", "ladder_live",
                           {rung: params})
if run:
    df, prov, label, live = run
    sizes = speeds.square_sizes(df, rungs)
    if not sizes:
        st.warning(f"This run ({label}) has no row for any rung of the ladder.", icon=":material/warning:")
    else:
        # The size timed nearest the one counted (the same where it was timed), chosen afresh for each size
        # counted (scope): it had stayed at the largest, and the step below then set 8,192³ speeds beside
        # counts at 512³ or 1³.
        near = min(sizes, key=lambda s: abs(math.log(s) - math.log(m * n * k) / 3))
        # A link's ?timed= is for the size it opened on, not for each size the user counts after it.
        link_read = view_state.page_key("_timed_link_read")
        at = st.select_slider("Timed at M = N = K", sizes,
                              key=view_state.state("timed", near, sizes, scope=f"{m}x{n}x{k}",
                                                   url=not st.session_state.get(link_read)))
        st.session_state[link_read] = True
        view_state.remember(timed=at)
        view_state.keep(**{f"{m}x{n}x{k}.timed": at})   # what state() restores for this size on coming back
        timed = speeds.ladder_speeds(df, at)
        st.plotly_chart(ladder_figures.speed_figure(timed, rung, label, charts.notes([prov], df)),
                        width="stretch", config={"displaylogo": False}, key="ladder-speed")
        if timed.missing:
            st.warning(f"No row for {', '.join(timed.missing)} at {at:,}³ in this run ({label}).",
                       icon=":material/warning:")
        for r, why in timed.failed.items():
            st.warning(f"{r} at {at:,}³ was not timed: {schema.plain(why)}", icon=":material/warning:")
        st.caption(f"Speeds: {label}" + ("" if live else ", not measured now") + ". Each rung with the parameters "
                   "it ran with (hover); % of cuBLAS on the right axis reads the same bars against cuBLAS SGEMM (FP32).")
        # The step from the previous rung, speed against counts: up or down, said from the numbers.
        prev = registry.previous_rung(rung)
        if prev and not isinstance(counts.get(prev), str) and not isinstance(counts[rung], str):
            tf = dict(zip(timed.rows["rung"], timed.rows["gflops"] / 1e3))
            table, said = rung_counts.step(counts[prev], counts[rung], tf.get(prev), tf.get(rung))
            # A recorded run timed each rung with its own parameters: where those are not the ones
            # counted (a choice made above), the sentence says so rather than mixing two builds unsaid.
            ran = dict(zip(timed.rows["rung"], timed.rows["params"]))
            other = [f"{r} with " + ", ".join(t.replace("=", " ") for t in ran[r].split()) for r in (prev, rung)
                     if ran.get(r) and set(ran[r].split()) != set(speeds.params_text(counts[r].params).split())]
            if other and tf.get(prev) and tf.get(rung):
                said += (f" The speeds are of the parameters the run timed ({'; '.join(other)}), the counts of those "
                         "chosen above: the run did not time the choice counted.")
            if at != size:   # counts of one size, speeds of another: the table side by side, no verdict from them
                countable = [f"{s:,}" for s in sizes if s <= LARGEST]
                said = ("a block's costs per FMA change with the size (a partial tile's threads outside C do no "
                        "work), so counts and speeds of two sizes are set side by side without a verdict."
                        + (f" This run timed the ladder at {', '.join(countable)} among the sizes counted here: count at "
                           "one of those for the step's reasons." if countable else "")
                        + (said[said.index(" The speeds are of the parameters"):] if " The speeds are of the parameters" in said else ""))
            st.markdown(f"**From {prev} to {rung}** (speeds at {at:,}³, counts of one block at {dims}): {said}")
            ui.table(table, hide_index=True, width="stretch")

# ------------------------------------------------------------------ past the ladder: the choice per size
st.subheader("Past the ladder: which configuration at which size")
choice.size_choice("fp32", "choice", run[1]["gpu"] if run else None)
st.caption("One tile shape cannot serve every size: where C has fewer tiles than the GPU has SMs (132 on the H100 "
           "and H200), split_k gives each tile's K to several blocks and sums their partials in a fixed order; "
           "where N or K is not a multiple of 4, split_k_padded pads the rows first. The Benchmarks page has the "
           "same table, and the tensor cores' beside it.")

view_state.leave_out_unknown()   # what the link named and the page did not read: said in one line, left out
