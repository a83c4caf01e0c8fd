"""What every page shares: the mode banner, presenter (projector) mode, each page's own view state
(seeded from the URL), the animation player script, cached engine calls.

Pages stay thin: controls -> an engine call through here (its caches) -> a figure from engine/plots/.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from engine.bench import benchmark, schema, speeds
from engine.devices import gpu_client, memo
from engine.errors import EngineError
from engine.kernels import build, registry, sass
from engine.kernels.problem import make_problem
from engine.metrics import analysis, rung_counts, views
from engine.tracing import tracer

PLAYER_JS = Path(__file__).with_name("player.js").read_text()
# Streamlit fetches its Plotly module only once a chart arrives, after the page's script has traced
# and drawn: on a browser's first visit that is seconds of JavaScript left until last. The player
# starts fetching it at once, in parallel with the server's work (same file, so loaded once).
_PLOTLY_MODULE = next((f.name for f in (Path(st.__file__).parent / "static" / "static" / "js").glob("PlotlyChart.*.js")),
                      "")
SPEEDS = ["slow", "normal", "fast"]


def device_status():
    """Asked once per server (gpu_client keeps the answer): starts the GPU worker if PyCUDA is installed."""
    return gpu_client.status()


_PREBUILD = []
_PREBUILD_LOCK = threading.Lock()


def prebuild():
    """Once per server, in the background: compiles every kernel variant the pages can ask for, so a
    control change (a new TILE, padding on) does not wait for a compiler. MATMUL_EXPLORER_PREBUILD=0
    turns it off (the tests do, to keep their timings their own). Module state, not a Streamlit
    cache: a client's "clear cache" must not start it again."""
    with _PREBUILD_LOCK:
        if not _PREBUILD:
            if tracer.resolve_source("auto") == "cpu":
                tracer.CPU_WORKERS.warm()   # the first trace of a fresh server does not wait for them
            if os.environ.get("MATMUL_EXPLORER_PREBUILD", "1") != "0":
                _PREBUILD.append(build.prebuild(background=True))
            _PREBUILD.append(True)


def presenter() -> bool:
    return st.session_state.get("presenter_mode", False)


# Page scripts that may compute at once in this server. The server's event loop (every browser's
# messages, health checks) needs Python's interpreter lock between its steps, and waits its turn
# behind every thread that is computing: with a room of 30 sessions computing at once it got a turn
# every ~150 ms and answered nothing for seconds. Scripts beyond these slots wait without taking
# the lock; the kernels themselves run in worker processes.
PAGE_SLOTS = threading.Semaphore(max(2, 2 * (os.cpu_count() or 1)))
# Whole-kernel work (the tables below a figure) gives its page slot up and queues here instead, so
# that it never holds back another session's figure and leaves a core (and a CPU trace worker) to
# the figures. A thread that holds a slot keeps it for the work nested in its work.
WHOLE_KERNEL_SLOTS = threading.Semaphore(max(1, (os.cpu_count() or 1) - 1))
_SLOTS = threading.local()


@contextmanager
def page_slot():
    """Held by app.py while a page's script runs."""
    with PAGE_SLOTS:
        _SLOTS.page = True
        try:
            yield
        finally:
            _SLOTS.page = False


@contextmanager
def _whole_kernel_slot():
    if getattr(_SLOTS, "whole", False):
        yield
        return
    gave_up = getattr(_SLOTS, "page", False)
    if gave_up:
        PAGE_SLOTS.release()
        _SLOTS.page = False
    try:
        with WHOLE_KERNEL_SLOTS:
            _SLOTS.whole = True
            try:
                yield
            finally:
                _SLOTS.whole = False
    finally:
        if gave_up:
            PAGE_SLOTS.acquire()
            _SLOTS.page = True


# Set by app.py just before it runs the chosen page, read (and cleared) by setup_page: a page run
# without it was routed by Streamlit itself (see _routed_by_app). Script runs happen on the session's
# script thread, so a thread-local value belongs to the run in progress.
ROUTED = threading.local()


def _routed_by_app() -> None:
    """Opening a page's link straight after the server starts runs the page script the old way (the
    `pages/` folder routing of Streamlit's first multipage API), before app.py has ever called
    st.navigation: the sidebar then lists file names and app.py's layout is skipped. Streamlit
    switches to app.py's navigation for good once st.navigation has run, so switch and, on a
    session's first run, run again: the rerun routes the same URL through app.py. (A later run, a
    click, is not rerun: that would lose the click.)"""
    via_app, ROUTED.by_app = getattr(ROUTED, "by_app", False), False
    if via_app:
        return
    from streamlit.runtime.pages_manager import PagesManager  # noqa: PLC0415
    PagesManager.uses_pages_directory = False
    if not st.session_state.get("_ran"):   # set by setup_page once a run of this session got past here
        st.rerun()


def setup_page(page: str, title: str, intro: str, has_view: bool = True) -> None:
    """Title, presenter toggle, mode banner, player script. Call first on every page; `page` names
    the page's own state, so no widget value or URL parameter leaks from one page into another.
    A page without view state in the URL (Home) passes has_view=False."""
    _routed_by_app()
    st.session_state["_ran"] = True
    prebuild()
    came_from = st.session_state.get("_page")
    if has_view:
        st.session_state["_page"] = page
    # The URL describes the page the session opened on (a shared link): it seeds that page's
    # controls. Once the user moves to another page, parameters left in the URL belong to the page
    # they came from, so they are dropped and each page restores its own last view instead.
    if came_from is None:
        st.session_state["_url_seeds"] = True
    elif came_from != page and has_view:
        st.session_state["_url_seeds"] = False
        st.query_params.clear()
    # A plain session value, not widget state: widget state does not follow the user across pages.
    st.session_state.setdefault("presenter_mode", st.query_params.get("presenter", "0") == "1")
    on = presenter()
    # Projector: the sidebar folds away (its arrow, top left, brings it back).
    st.set_page_config(page_title=f"{title} · CUDA Matmul Explorer", layout="wide",
                       initial_sidebar_state="collapsed" if on else "expanded")
    with st.sidebar:
        st.session_state["_presenter_widget"] = on
        st.toggle("Presenter mode (projector)", key="_presenter_widget", on_change=_flip_presenter,
                  help="For a projector at 1280x720: sidebar and controls folded away, bigger text, "
                       "figures sized to fit the screen with the Play button in view.")
        mode_banner()
    st.query_params["presenter"] = "1" if on else "0"
    st.html(f"<script>window.__matmulPlotlyModule = {_PLOTLY_MODULE!r};\n{PLAYER_JS}</script>",
            unsafe_allow_javascript=True)
    # A dashboard, not a document: less empty space above the title, so more of the figure shows.
    st.html("<style>.block-container {padding-top: 3.2rem !important; padding-bottom: 1rem !important;}"
            + ("h1 {font-size: 1.7rem !important; padding: 0 0 .2rem 0 !important;}"
               ".stMarkdown p, .stMarkdown li {font-size: 1.3rem !important;}"
               ".stCode code {font-size: 1.2rem !important;}"
               # st.table's cells and captions stay at the app's 14 px otherwise: too small on a projector
               "[data-testid='stTable'] td, [data-testid='stTable'] th {font-size: 1.15rem !important;}"
               "[data-testid='stCaptionContainer'] {font-size: 1.05rem !important;}" if on else
               "h1 {font-size: 2.2rem !important; padding: 0 0 .3rem 0 !important;}") + "</style>")
    st.title(title)
    if not on:   # in presenter mode the figure's own headline says it, in bigger letters
        st.caption(intro)


def _flip_presenter() -> None:
    st.session_state["presenter_mode"] = st.session_state["_presenter_widget"]


def controls(label: str = "Controls"):
    """Where a page puts its controls: on screen normally, folded into an expander for a projector,
    so the headline, the figure and its Play button fit on one 1280x720 screen."""
    return st.expander(label, expanded=False) if presenter() else st.container()


def mode_banner() -> None:
    st_ = device_status()
    if st_.available:
        st.success(f"**GPU mode** · {st_.name} · traces are recorded live by the instrumented kernels on "
                   "this GPU.", icon=":material/memory:")
    else:
        st.info(f"**CPU mode** · no NVIDIA GPU here ({st_.reason}). Traces come from the same kernel "
                "sources run on the CPU; tests check them against traces recorded on an H200.",
                icon=":material/memory:")


def _key(name: str) -> str:
    return f"{st.session_state.get('_page', '')}.{name}"


def state(name: str, default, choices=None, lo=None, hi=None) -> str:
    """The widget key of this page's control `name`. Its first value comes from the URL (so a shared
    link opens that exact view), else from what this page showed last in this session (so leaving
    and coming back keeps the view), else `default`; it is kept within its choices or range. Keyed
    widgets keep their identity across reruns, so nothing the user types is lost to a remount."""
    key = _key(name)
    saved = st.session_state.setdefault(_key("_saved"), {})
    if key not in st.session_state:
        raw = st.query_params.get(name) if st.session_state.get("_url_seeds") else None
        value = _parse(raw, default) if raw is not None else saved.get(name, default)
        st.session_state[key] = value
    value = st.session_state[key]
    if choices is not None and value not in choices:
        st.session_state[key] = default if default in choices else choices[0]
    if lo is not None and value < lo:
        st.session_state[key] = lo
    if hi is not None and value > hi:
        st.session_state[key] = hi
    return key


def _parse(raw: str, default):
    if isinstance(default, bool):
        return raw in ("1", "true", "True")
    try:
        return type(default)(raw)
    except ValueError:
        return default


def remember(**values) -> None:
    """Puts the view's state in the URL, so a teacher can hand out a link to this exact view, and
    keeps it for this page, so coming back to the page restores it."""
    saved = st.session_state.setdefault(_key("_saved"), {})
    for k, v in values.items():
        saved[k] = v
        st.query_params[k] = str(int(v) if isinstance(v, bool) else v)


def speed_control(where, durations: dict[str, int]) -> int:
    """The animation speed select, returning milliseconds per frame."""
    speed = where.select_slider("Speed", SPEEDS, key=state("speed", "normal", SPEEDS))
    remember(speed=speed)
    return durations[speed]


# Shared by every session of this server: one computation per distinct request however many
# sessions ask at once, bounded in bytes, and out of reach of Streamlit's "clear cache" (which
# any client may send). A whole-kernel trace at 128^3 is ~4-5 M records (~150 MB with its warp
# instructions): the default keeps two or three. MATMUL_EXPLORER_TRACE_CACHE_MB changes it.
memo.keep_large_blocks_separate()
TRACES = memo.Memo("traces", memo.budget("MATMUL_EXPLORER_TRACE_CACHE_MB", 400))
RESULTS = memo.Memo("results", memo.budget("MATMUL_EXPLORER_RESULT_CACHE_MB", 100))


def _params_key(params: dict[str, int]) -> tuple:
    """Every compile-time parameter, in name order: part of each cache key below."""
    return tuple(sorted(params.items()))


def cached_trace(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int],
                 blocks: tuple | None, source: str):
    """One trace per distinct view, shared by all sessions (read-only), with its warp instructions.
    params: the kernel's compile-time parameters (what it does not declare is an error)."""
    def compute():
        p = make_problem(m, n, k, block=block, params=params)
        t = tracer.trace(kernel, p, list(blocks) if blocks else None, source)
        return t, analysis.warp_instructions(t)
    source = tracer.resolve_source(source)   # "auto" and what it resolves to are one trace
    key = ("trace", kernel, m, n, k, _params_key(params), tuple(block), blocks and tuple(blocks), source)
    if blocks:   # the block a figure shows: the page's own work
        return TRACES.get(key, compute)
    with _whole_kernel_slot():
        return TRACES.get(key, compute)


# A figure is weighed by the dict it hands out (its plotly objects share validators and templates
# with every other figure, which are not its to free).
FIGURES = memo.Memo("figures", memo.budget("MATMUL_EXPLORER_FIGURE_CACHE_MB", 100), lambda f: memo.nbytes(f.to_dict()))


def cached_figure(build):
    """The page's animated figure for the view it shows, built once for every session showing that
    view (a room opening one link builds it once, not thirty times over). The view is what the page
    put in the URL (remember()), with the mode and presenter setting, which is everything a figure
    is drawn from; a page must remember() every control its figure depends on."""
    view = tuple(sorted(st.session_state.get(_key("_saved"), {}).items()))
    key = (st.session_state.get("_page"), view, presenter(), tracer.resolve_source("auto"))
    return FIGURES.get(key, lambda: build().freeze())


def cached_sass(file: str, params: dict[str, int]) -> dict:
    return RESULTS.get(("sass", file, _params_key(params)), lambda: sass.memory_instructions(file, params),
                       keep=lambda listing: listing["available"])


def cached_site_summary(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]):
    """analysis.site_summary of the whole-kernel trace (the pages' Nsight-style tables)."""
    def compute():
        return analysis.site_summary(*cached_trace(kernel, m, n, k, params, block, None, "auto"))
    with _whole_kernel_slot():
        return RESULTS.get(("site_summary", kernel, m, n, k, _params_key(params), tuple(block)), compute)


def cached_shared_kernel(kernel: str, m: int, n: int, k: int, params: dict[str, int],
                         block: tuple[int, int]) -> views.SharedKernel:
    """views.shared_kernel of the whole-kernel trace: computed once per trace, not again when only the
    warp, speed or view changes."""
    def compute():
        trace, inst = cached_trace(kernel, m, n, k, params, block, None, "auto")
        summary = cached_site_summary(kernel, m, n, k, params, block)
        return views.shared_kernel(trace, inst, summary, cached_sass(trace.launches[-1].file, trace.problem.params))
    with _whole_kernel_slot():
        return RESULTS.get(("shared_kernel", kernel, m, n, k, _params_key(params), tuple(block)), compute)


def cached_global_reads(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]) -> int:
    """Global loads of a whole kernel, counted in its trace (no per-warp analysis needed)."""
    with _whole_kernel_slot():
        return RESULTS.get(("global_reads", kernel, m, n, k, _params_key(params), tuple(block)),
                           lambda: analysis.global_reads(
                               tracer.trace(kernel, make_problem(m, n, k, block=block, params=params))))


def cached_reads_against_naive(kernel: str, m: int, n: int, k: int, params: dict[str, int]) -> dict[str, int]:
    """Global loads of the whole kernel and of the naive baseline (views.NAIVE_BASELINE) at the same
    sizes, by label, the baseline first; each kernel's count is kept on its own (one naive count
    serves every tiled kernel and TILE)."""
    naive = views.NAIVE_BASELINE
    spec = registry.get(kernel)
    tiled = ", ".join([kernel] + [f"{name} {value}" for name, value in params.items()])
    return {f"naive ({naive.name})": cached_global_reads(naive.name, m, n, k, {}, naive.default_block),
            tiled: cached_global_reads(kernel, m, n, k, params, spec.default_block)}


def cached_rung(kernel: str, size: int, block: tuple[int, int]) -> rung_counts.RungCounts | str:
    """rung_counts.rung_counts of one block of a ladder rung (its default parameters) at size^3, or the
    engine's one-line reason it cannot be traced (over the record cap). Only the counts are kept:
    the trace of one block is millions of records at the larger sizes, and the page shows six."""
    def compute():
        spec = registry.get(kernel)
        trace = tracer.trace(kernel, make_problem(size, size, size, block=spec.default_block), [block], "auto")
        return rung_counts.rung_counts(trace, analysis.warp_instructions(trace), block,
                                       cached_sass(trace.launches[-1].file, trace.problem.params))
    try:
        return RESULTS.get(("rung", kernel, size, tuple(block), tracer.resolve_source("auto")), compute)
    except EngineError as exc:
        return str(exc)


def or_stop(what: str, fn, *args):
    """fn(*args), saying what is being computed while it runs (a new size or tile can take a second
    or more), or a one-line message in the page and nothing else drawn."""
    try:
        with st.spinner(f"{what}..."):
            return fn(*args)
    except EngineError as exc:
        st.error(str(exc), icon=":material/error:")
        st.stop()


def grid_of(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]) -> tuple[int, int]:
    """The blocks of the kernel's main launch, from its geometry in the registry (nothing runs)."""
    try:
        spec = registry.get(kernel)
        return spec.launches[-1].grid(registry.bind(spec, make_problem(m, n, k, block=block, params=params)))
    except EngineError as exc:
        st.error(str(exc), icon=":material/error:")
        st.stop()


def trace_or_stop(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int],
                  blocks: tuple | None = None, source: str = "auto"):
    """The trace (of the given blocks of the main launch, or of all), or a one-line message in the
    page (and nothing else drawn). The animations need one block: tracing just that block draws
    them in a fraction of the time; the whole-kernel tables below them then trace everything."""
    where = f", block {blocks[0]}" if blocks and len(blocks) == 1 else ""
    what = (f"Tracing {kernel} at {m}x{n}x{k}" + "".join(f", {name} {value}" for name, value in params.items())
            + where + f" ({'CPU' if tracer.resolve_source(source) == 'cpu' else 'GPU'})")
    return or_stop(what, cached_trace, kernel, m, n, k, params, block, blocks, source)


def kernel_label(name: str) -> str:
    spec = registry.get(name)
    return f"{spec.title} — from {spec.source_titles}"


def speed_run(rungs: list[str], baselines: list[str], size: int, what: str, key: str):
    """The run a speed section draws: timed now (a button, where there is a GPU: the rungs and their
    baselines at size³) or recorded (a choice among the shipped runs that hold one of the rungs, the
    newest first chosen). (rows as benchmark.derive gives them, provenance, label, live) or None, said
    on the page, where no run of them ships. what: the button's words for what it times."""
    status = device_status()
    if status.available and st.button(f"Time {what} now at {size:,}³ on this {status.name}"):
        settings = benchmark.Settings()
        with st.spinner("Timing"):
            rows = list(benchmark.sweep(rungs + baselines, [(size, size, size)], settings))
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
    chosen = st.selectbox("Recorded run", names, key=state("run", names[-1], names)) if len(names) > 1 else names[0]
    df, prov = benchmark.load_document((benchmark.RECORDED / chosen).read_text())
    return df, prov, speeds.run_label(prov, False), False
