"""Playground: edit a kernel, build it, and see what its threads do: traced, animated and counted like
the catalog's kernels, compiled and run in a sandbox."""
import statistics

import streamlit as st
from code_editor import code_editor

from engine import animations, playground
from engine.bench import benchmark, schema
from engine.errors import EngineError
from engine.kernels import registry
from engine.metrics import views
from engine.plots import bank_figures, coalescing_figures, tile_phase_figures
from pages.lib import cached, query, ui, view_state

WINDOW = animations.WINDOW   # long traces are windowed, never sent whole

ui.setup_page("playground", "Playground", "Start from any traced kernel of the catalog, or a blank one, change it, "
              "and build: compile errors at their lines, the result checked against float64, and the same "
              "animations and counts the catalog's kernels get, from a trace of your kernel.")

on, why = playground.status()
if not on:
    st.info(why, icon=":material/lock:")
    if query.params().get("src"):   # a shared kernel: said, not dropped without a word (the address keeps it)
        st.warning("This link carries a kernel of its own: it opens on a server whose Playground is on, from "
                   "the same address.", icon=":material/link:")
    query.stop()

starters = playground.starters()
EDITOR = "playground_editor"
BUILT = view_state.page_key("built")       # the source last built (what the results below are of)
FAILED = view_state.page_key("failed")     # (what was asked, the message) of the last build that failed
ORIGIN = view_state.page_key("origin")     # the starter and file the source came from, as last seen

with ui.controls():
    c0, c1 = st.columns([2, 1])
    start = c0.selectbox("Start from", starters, key=view_state.state("start", "tiled_guarded", starters),
                         format_func=lambda s: "A blank kernel" if s == playground.BLANK else ui.kernel_label(s),
                         help="switching throws away your edits (download them first)")
    # (max_upload_size is in whole megabytes, the least 1: the file's own limit is said in the help
    # and checked by playground.text_of)
    uploaded = c1.file_uploader("Or open a .cu file", type=["cu"], max_upload_size=1,
                                help=f"up to {playground.MAX_SOURCE_BYTES // 1024} KB of text")

# The source: on this page's first view in the session, a share link's (?src=...) or the starter's;
# after that, a newly chosen starter's or uploaded file's, else what was built last. Each new source
# starts a new editor (its key), so the editor shows that text and not the old edits.
last = st.session_state.get(ORIGIN)
view_state.uses("src")
token = query.params().get("src") if st.session_state.get("_url_seeds") else None
file_id = uploaded.file_id if uploaded is not None else None
text = None
if last is None and token:
    try:
        text = playground.source_from_token(token)
    except EngineError as exc:
        st.error(f"The link's kernel could not be opened: {exc}. Showing {start} instead.", icon=":material/error:")
if uploaded is not None and (last is None or file_id != last["file"]):
    try:
        text = playground.text_of(uploaded.getvalue())
    except EngineError as exc:
        st.error(f"{uploaded.name}: {exc}", icon=":material/error:")
if text is None and (last is None or start != last["start"]):
    text = playground.starter_source(start)
st.session_state[ORIGIN] = {"start": start, "file": file_id}
if text is not None:
    st.session_state[BUILT] = text
    st.session_state[EDITOR + "_n"] = st.session_state.get(EDITOR + "_n", 0) + 1

built = st.session_state[BUILT]
# Read before the editor is drawn, refused after it: a source that could not be read (no extern "C"
# kernel, a name or size it refuses) had stopped the page before the editor, and the student's edit
# was gone with it, the address still holding the build before.
try:
    saved, unread = playground.save(built), None
except EngineError as exc:
    saved, unread = None, str(exc)
# The lines messages are about (the source reader's rules, this source's last failed build), passed
# to the editor's gutter; Ace drops them where the component sets its text after they came, so the
# messages under the editor name the line too.
failed = st.session_state.get(FAILED)
built_errors = playground.diagnostics(failed[1]) if saved and failed and failed[0][0] == saved.digest else []
marks = [{"row": d.line - 1, "column": 0, "type": "error", "text": d.message}
         for d in (saved.problems if saved else []) + built_errors if d.line]
answer = code_editor(built, lang="c_cpp", height=[14, 22], key=f"{EDITOR}_{st.session_state[EDITOR + '_n']}",
                     buttons=[{"name": "Build (Ctrl+Enter)", "feather": "Play", "primary": True, "hasText": True,
                               "showWithIcon": True, "commands": ["submit"], "alwaysOn": True,
                               "style": {"bottom": "0.4rem", "right": "0.4rem"}}],
                     props={"annotations": marks}, options={"showLineNumbers": True, "tabSize": 4})
if answer and answer.get("type") == "submit" and answer.get("text") is not None and answer["text"] != built:
    st.session_state[BUILT] = answer["text"]
    # A new editor with what was built: the component put its first text back when its marks changed,
    # so a student's edit seemed lost after a build that failed (its error named a line not on screen).
    st.session_state[EDITOR + "_n"] += 1
    st.rerun()

if playground.shareable(built):   # (not a lone surrogate, nor past the size the Playground takes)
    query.params()["src"] = playground.share_token(built)
    d0, d1 = st.columns([1, 3])
    d0.download_button("Download the .cu", built, f"{saved.kernel if saved else 'kernel'}.cu", "text/plain",
                       on_click="ignore")
    d1.caption("This page's address now carries your kernel: copy it from the address bar to share it.")
if saved is None:
    view_state.refuse(schema.plain(unread))

for problem in saved.problems:   # the student's source quoted: plain text, not Markdown
    st.error(schema.plain(str(problem)), icon=":material/error:")
if saved.problems:
    query.stop()

spec = ui.or_stop("Reading your kernel's contract", playground.spec_of, saved, plain=True)
with ui.controls("Sizes and parameters"):
    cols = st.columns(3 + len(spec.params))
    # Sizes up to 256: a whole trace of a naive kernel at 256^3 is 33 M records, over the cap.
    m, n, k = (int(col.number_input(name.upper(), 1, 256, key=view_state.state(name, d, lo=1, hi=256, what="size")))
               for col, name, d in zip(cols, "mnk", (64, 64, 64)))
    params = {}
    for col, (name, allowed) in zip(cols[3:], spec.params.items()):
        params[name] = col.selectbox(name, allowed, key=view_state.state(name, spec.default_params()[name], allowed))
    view_state.remember(start=start, m=m, n=n, k=k, **params)
problem = ui.or_stop("Checking your kernel's contract", playground.problem_for, spec, m, n, k, params, plain=True)
grid = spec.launches[-1].grid(problem)   # (at least one block each way: problem_for checked the launch)

e0, e1, e2, e3, e4 = st.columns([1, 1, 1, 1.3, 1.6])
bx = e0.number_input("Block x", 0, grid[0] - 1, key=view_state.state("bx", 0, lo=0, hi=grid[0] - 1))
by = e1.number_input("Block y", 0, grid[1] - 1, key=view_state.state("by", 0, lo=0, hi=grid[1] - 1))
# A build or run that failed is kept for this session with what it was of, so the rerun that puts
# its lines in the editor does not build it again.
asked = (saved.digest, m, n, k, tuple(params.items()), bx, by)
failed = st.session_state.get(FAILED)
if failed and failed[0] == asked:
    for line in playground.diagnostics(failed[1]) or [playground.Diagnostic(0, failed[1])]:
        st.error(schema.plain(str(line)), icon=":material/error:")
    query.stop()
try:
    with st.spinner(f"Building and tracing block ({bx}, {by}) of {saved.kernel} at {m}x{n}x{k} in the sandbox..."):
        trace, inst, whole = cached.playground_trace(saved, spec, problem, ((bx, by),))
except EngineError as exc:
    # A compiler's message or a fault, at its line of the student's source where it names one.
    st.session_state[FAILED] = (asked, str(exc))
    st.rerun()
warps = views.warps_of(trace, bx, by) or [0]
warp = e2.selectbox("Warp", warps, key=view_state.state("warp", warps[0], warps))
shows = ["global memory", "shared memory", "tile phases", "counts and SASS"]
show = e3.selectbox("Show", shows, key=view_state.state("show", shows[0], shows))
view_state.remember(bx=bx, by=by, warp=warp, show=show)
# The block's trace checks the outputs it stored; all of C, after every block ran, shows what no block
# wrote. A fault in another block is said here: the block shown was traced, and its views still draw.
if isinstance(whole, str):
    whole_good, whole_said = False, f"All of C: running every block failed: {whole}"
else:
    whole_good, whole_said = (whole.written == whole.total and whole.rel_error <= spec.tolerance,
                              playground.whole_summary(whole, grid, spec.tolerance))
good, said = playground.block_summary(trace, bx, by, spec.tolerance)
(st.success if good and whole_good else st.error)(
    schema.plain(f"{said} {len(trace):,} accesses traced on the CPU, in the sandbox.") + "  \n" + schema.plain(whole_said),
    icon=":material/check:" if good and whole_good else ":material/error:")



def first_shown(space: str) -> int:
    """The first of the warp's `space` instructions the animation shows (0-based): a kernel's later
    ones are reached WINDOW at a time, as on Coalescing and Bank conflicts, where there are more."""
    total = views.count_steps(trace, inst, bx, by, warp, space)
    view_state.uses("from")   # (a link's ?from= is this view's, whether or not the warp needs windows)
    return view_state.window_start(st.columns([1, 3])[0], total, WINDOW) if total > WINDOW else 0


config = {"displaylogo": False, "displayModeBar": False}
if show == "global memory":
    duration = view_state.speed_control(e4, animations.SPEEDS["coalescing"])
    panel = views.warp_panel(trace, inst, bx, by, warp, first_shown("global"), WINDOW)
    if panel.steps:
        st.plotly_chart(coalescing_figures.coalescing_figure([panel], view_state.presenter(), duration), width="stretch",
                        config=config, key="playground-coalescing")
    else:
        st.warning(f"Warp {warp} of block ({bx}, {by}) makes no global access at this size.")
elif show == "shared memory":
    duration = view_state.speed_control(e4, animations.SPEEDS["bank_conflicts"])
    shown = views.bank_steps(trace, inst, bx, by, warp, loads_only=False, start=first_shown("shared"), limit=WINDOW)
    if shown.steps:
        st.plotly_chart(bank_figures.bank_figure(shown, f"{saved.kernel}, warp {warp}", view_state.presenter(), duration),
                        width="stretch", config=config, key="playground-banks")
    else:
        st.warning(f"Warp {warp} of block ({bx}, {by}) makes no shared-memory access.")
elif show == "tile phases":
    duration = view_state.speed_control(e4, animations.SPEEDS["tile_phases"])
    try:
        view = views.tile_view(trace, bx, by)
    except (EngineError, ValueError, KeyError, IndexError) as exc:
        st.warning(f"No tile phases to show: {exc}")
    else:
        st.plotly_chart(tile_phase_figures.tile_phase_figure(view, view_state.presenter(), duration), width="stretch",
                        config=config, key="playground-phases")
else:
    summary, shared, listing = ui.or_stop(f"Tracing the whole of {saved.kernel} and reading its SASS",
                                          cached.playground_counts, saved, spec, problem)
    ui.table(views.global_accesses({saved.kernel: summary}), hide_index=True, width="stretch")
    if len(shared.table):
        ui.fitting_table(shared.table, hide_index=True, width="stretch")
    for note in shared.notes:
        st.info(note, icon=":material/memory:")
    st.caption("Per access site of your source: requests, and sectors (global) or wavefronts and bank conflicts "
               "(shared), defined as Nsight Compute defines them; 'as compiled' reads the SASS nvcc made of it: "
               + listing["note"] + ".")
    if listing.get("available"):
        lines = saved.text.splitlines()
        ui.table([{"line": ln, "source": lines[ln - 1].strip() if 0 < ln <= len(lines) else "",
                   "SASS memory instructions": ", ".join(f"{n} x {op}" for op, n in ops.items())}
                  for ln, ops in listing["by_line"].items()], hide_index=True, width="stretch")

# On a GPU machine: its time against cuBLAS and the kernel it started from, timed as the Benchmarks
# page times the catalog's (the student's in a sandbox of its own, with the GPU's device files).
status = ui.device_status()
if status.available:
    st.subheader(f"On this {status.name}")
    # The catalog's kernel it started from, under the same name or not: "yours (x)" beside "x".
    others = [name for name in (start if start != playground.BLANK else None,
                                "cublas_gemm_fp16" if spec.inputs is registry.Precision.FP16 else "cublas_sgemm") if name]
    if st.button(f"Time it at {m}x{n}x{k} against {' and '.join(others)}"):
        with st.spinner("Timing on the GPU..."):
            try:
                mine = playground.time_on_gpu(saved, problem)
            except EngineError as exc:
                st.error(schema.plain(str(exc)), icon=":material/error:")
                query.stop()
            settings = benchmark.Settings()
            rows = [benchmark.measure(name, m, n, k, settings) for name in others]
        st.session_state[view_state.page_key("timed")] = (asked, mine, rows)
    timed = st.session_state.get(view_state.page_key("timed"))
    if timed and timed[0] == asked:
        _, mine, rows = timed
        flops = 2.0 * m * n * k
        table = [{"kernel": f"yours ({saved.kernel})", "median (ms)": statistics.median(mine["times_ms"]),
                  "correct": mine["correct"]}]
        table += [{"kernel": r["kernel"], "median (ms)": r.get("median_ms"), "correct": r.get("status") == "ok"}
                  for r in rows]
        for row in table:
            row["GFLOP/s"] = flops / row["median (ms)"] / 1e6 if row["median (ms)"] else None
        ui.table(table, hide_index=True, width="stretch")

view_state.leave_out_unknown()   # what the link named and the page did not read: said in one line, left out
