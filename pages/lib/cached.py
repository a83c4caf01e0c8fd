"""The engine calls the pages make, cached for every session of this server.

Shared by all sessions: one computation per distinct request however many sessions ask at once,
bounded in bytes, and out of reach of Streamlit's "clear cache" (which any client may send). Heavy
work (a whole kernel's trace and the tables below a figure, a large block's trace, a run's chart
files) waits its turn in the server's line with its bytes reserved (pages/lib/slots.py), and a
session waiting for it, or for another session's identical request, holds no page slot.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from engine import parallel, playground
from engine.bench import benchmark, export, schema
from engine.devices import host_memory, memo
from engine.errors import EngineError
from engine.kernels import registry, sass
from engine.kernels.problem import make_problem
from engine.metrics import analysis, long_k, ncu_reference, rung_counts, views
from engine.plots import movie
from engine.tracing import plan, tracer
from pages.lib import view_state
from pages.lib.slots import LINE, below_page_views, heavy, off_page_slot, shared_wait

# A whole-kernel trace at 128^3 is ~4-5 M records (~150 MB with its warp
# instructions): the default keeps two or three. MATMUL_EXPLORER_TRACE_CACHE_MB changes it.
host_memory.keep_large_blocks_separate()
TRACES = memo.Memo("traces", memo.budget("MATMUL_EXPLORER_TRACE_CACHE_MB", 400))
RESULTS = memo.Memo("results", memo.budget("MATMUL_EXPLORER_RESULT_CACHE_MB", 100))


# A block's trace estimated at this many host bytes or more is heavy (the Ladder page's rungs from
# about 1024^3): it waits in the line like a whole kernel's.
HEAVY_BYTES = 128 * 2**20
# A run's chart files (about 4.5 MB of HTML a chart, and its pictures): a few runs' worth.
EXPORTS = memo.Memo("exports", memo.budget("MATMUL_EXPLORER_EXPORT_CACHE_MB", 100))
_RUNTIME: list[int] = []


def _held() -> int:
    """What the server holds besides the heavy requests running: the interpreter and its worker
    processes (measured once, when the first heavy request comes) and what the caches keep."""
    if not _RUNTIME:
        _RUNTIME.append(host_memory.tree_rss())
    return _RUNTIME[0] + sum(m.bytes for m in (TRACES, RESULTS, FIGURES, EXPORTS))


def _heavy_get(cache: memo.Memo, key, compute, kind: str, need, what: str, number: int | None = None, **keep):
    """cache.get(key, compute) with compute in the line, reserving need() bytes; off the page slot
    throughout, also while waiting for another session computing the same key. number: its place in
    line, taken earlier (slots.heavy)."""
    def in_line():
        with heavy(kind, need(), what, number):
            return below_page_views(compute)
    with off_page_slot(), shared_wait(cache.computing(key), what):
        return cache.get(key, in_line, **keep)


def _whole_need(kernel, m, n, k, params, block):
    return lambda: plan.host_need(kernel, make_problem(m, n, k, block=block, params=params))


def _params_key(params: dict[str, int]) -> tuple:
    """Every compile-time parameter, in name order: part of each cache key below."""
    return tuple(sorted(params.items()))


def trace(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int],
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
    return _heavy_get(TRACES, key, compute, "trace", _whole_need(kernel, m, n, k, params, block),
                      f"Tracing the whole of {kernel} at {m}x{n}x{k}")


# A figure is weighed by the dict it hands out (its plotly objects share validators and templates
# with every other figure, which are not its to free). Also the parts of a page drawn from files
# alone (page_part).
FIGURES = memo.Memo("figures", memo.budget("MATMUL_EXPLORER_FIGURE_CACHE_MB", 100), lambda f: _weigh_part(f))


def figure(build, by_mode: bool = True):
    """The page's animated figure for the view it shows, built once for every session showing that
    view (a room opening one link builds it once, not thirty times over). The view is what the page
    put in the URL (remember()), with the mode and presenter setting, which is everything a figure
    is drawn from; a page must remember() every control its figure depends on. by_mode=False: a
    figure drawn the same in both modes (at a projector's sizes), which a toggle does not build again."""
    key = (st.session_state.get("_page"), view_state.saved(), view_state.presenter() if by_mode else None,
           tracer.resolve_source("auto"))
    return FIGURES.get(key, lambda: build().freeze())


def sass_listing(file: str, params: dict[str, int]) -> dict:
    return RESULTS.get(("sass", file, _params_key(params)), lambda: sass.memory_instructions(file, params),
                       keep=lambda listing: listing["available"])


def site_summary(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]):
    """analysis.site_summary of the whole-kernel trace (the pages' Nsight-style tables)."""
    def compute():
        return analysis.site_summary(*trace(kernel, m, n, k, params, block, None, "auto"))
    return _heavy_get(RESULTS, ("site_summary", kernel, m, n, k, _params_key(params), tuple(block)), compute,
                      "trace", _whole_need(kernel, m, n, k, params, block), f"Counting the whole of {kernel}")


def shared_kernel(kernel: str, m: int, n: int, k: int, params: dict[str, int],
                         block: tuple[int, int]) -> views.SharedKernel:
    """views.shared_kernel of the whole-kernel trace: computed once per trace, not again when only the
    warp, speed or view changes."""
    def compute():
        t, inst = trace(kernel, m, n, k, params, block, None, "auto")
        summary = site_summary(kernel, m, n, k, params, block)
        return views.shared_kernel(t, inst, summary, sass_listing(t.launches[-1].file, t.problem.params))
    return _heavy_get(RESULTS, ("shared_kernel", kernel, m, n, k, _params_key(params), tuple(block)), compute,
                      "trace", _whole_need(kernel, m, n, k, params, block), f"Counting the whole of {kernel}")


def global_reads(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]) -> int:
    """Global loads of a whole kernel, counted in its trace (no per-warp analysis needed)."""
    return _heavy_get(RESULTS, ("global_reads", kernel, m, n, k, _params_key(params), tuple(block)),
                      lambda: analysis.global_reads(tracer.trace(kernel, make_problem(m, n, k, block=block, params=params))),
                      "trace", _whole_need(kernel, m, n, k, params, block), f"Counting the loads of {kernel}")


def reads_against_naive(kernel: str, m: int, n: int, k: int, params: dict[str, int]) -> dict[str, int]:
    """Global loads of the whole kernel and of the naive baseline (views.NAIVE_BASELINE) at the same
    sizes, by label, the baseline first; each kernel's count is kept on its own (one naive count
    serves every tiled kernel and TILE)."""
    naive = views.NAIVE_BASELINE
    spec = registry.get(kernel)
    tiled = ", ".join([kernel] + [f"{name} {value}" for name, value in params.items()])
    return {f"naive ({naive.name})": global_reads(naive.name, m, n, k, {}, naive.default_block),
            tiled: global_reads(kernel, m, n, k, params, spec.default_block)}


def rung(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]) -> rung_counts.RungCounts | str:
    """long_k.block_counts of one block of a ladder rung with these parameters (what it does not
    name at its defaults) at m x n x k, or the engine's one-line reason it cannot be traced (over
    the record cap). Only the counts are kept: the trace of one block is millions of records at the
    larger sizes, and the page shows six."""
    return _counted_rung(kernel, m, n, k, _rung_problem(kernel, m, n, k, params, block), block)


def _rung_problem(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]):
    """The rung's problem, bound (its default parameters and the ones named are one cache entry), and
    the host bytes its counting reserves; or the engine's one-line reason it cannot take them."""
    try:
        spec = registry.get(kernel)
        problem = registry.bind(spec, make_problem(m, n, k, block=spec.default_block, params=params))
        return problem, long_k.host_need(kernel, problem, tuple(block))
    except EngineError as exc:
        return str(exc)


def _counted_rung(kernel: str, m: int, n: int, k: int, bound, block: tuple[int, int]) -> rung_counts.RungCounts | str:
    """rung() from its bound problem and reserved bytes (_rung_problem's answer)."""
    if isinstance(bound, str):
        return bound
    problem, need = bound
    try:
        def compute():
            return long_k.block_counts(kernel, problem, tuple(block), "auto", sass_listing)
        key = ("rung", kernel, m, n, k, _params_key(problem.params), tuple(block), tracer.resolve_source("auto"))
        if need < HEAVY_BYTES:
            return RESULTS.get(key, compute)
        return _heavy_get(RESULTS, key, compute, "rung", lambda: need,
                          f"Tracing block {block} of {kernel} at {m}x{n}x{k}")
    except EngineError as exc:
        return str(exc)


def rungs(kernels: list[str], m: int, n: int, k: int, params: dict[str, dict[str, int]],
          blocks: dict[str, tuple[int, int]]) -> dict[str, rung_counts.RungCounts | str]:
    """rung() of each kernel, with its parameters and block. The light ones (the page's own work) side
    by side on the engine's threads: one rung's trace runs in a worker process while another's counts
    are made here. A heavy one waits its turn in the line, on this thread."""
    bound = {r: _rung_problem(r, m, n, k, params[r], blocks[r]) for r in kernels}
    light = [r for r in kernels if isinstance(bound[r], str) or bound[r][1] < HEAVY_BYTES]
    done = dict(zip(light, parallel.each(lambda r: _counted_rung(r, m, n, k, bound[r], blocks[r]), light)))
    return {r: done[r] if r in done else _counted_rung(r, m, n, k, bound[r], blocks[r]) for r in kernels}


def chart_files(rows: list[dict], prov: dict, formats: tuple[str, ...], progress, number: int | None = None):
    """export.chart_files of a run, made once for every session asking for the same run in the same
    formats, in the line (Chrome and the pictures are seconds of a core each), at the place number
    (taken when the button was clicked). Files made without their pictures (no Chrome here) are not
    kept: installing it is tried again next time."""
    key = ("chart_files", export.run_digest(rows, prov), tuple(formats))
    return _heavy_get(EXPORTS, key, lambda: export.chart_files(rows, prov, formats, progress), "export",
                      lambda: export.CHART_FILES_BYTES, "Making the chart files", number, keep=lambda made: not made[1])


def file_version(path: Path) -> tuple:
    """A file as it is now: a file written again (another size or time) is read again."""
    stat = path.stat()
    return str(path), stat.st_mtime_ns, stat.st_size


# A recorded run, read and checked (schema.read) once for every session and every rerun: the
# Benchmarks page reads each of its files on every view, 0.7 s of one core's pandas a view, and a
# room opening it held the interpreter lock that every other page view waits for.
def recorded(path: Path):
    """benchmark.load_document of a recorded file: (rows, provenance), shared, read-only."""
    return RESULTS.get(("recorded", *file_version(path)), lambda: benchmark.load_document(schema.read_bounded(path)))


def readable(paths) -> list[tuple]:
    """(path, rows, provenance) of each recorded file that reads (recorded); one refused since it was
    listed (a value schema.read does not take, in a file of the right shape) is said in one line and
    left out, and the page goes on with the others."""
    out = []
    for path in paths:
        try:
            out.append((path, *recorded(path)))
        except (OSError, EngineError) as exc:
            st.warning(schema.plain(f"{path.name} is left out: {exc}"), icon=":material/warning:")   # the values it quotes, as text
    return out


def recorded_document(path: Path) -> schema.Document:
    """schema.read of a recorded file (its rows as written, for its exports), shared, read-only."""
    return RESULTS.get(("recorded_document", *file_version(path)), lambda: schema.read(schema.read_bounded(path)))


def page_part(key: tuple, build):
    """What a page draws from files alone (the same for every session showing the same files: their
    versions are in key), built once and shared read-only: frames, tables and figures."""
    return FIGURES.get(("page_part", *key), build)


def recorded_part(key: str, path: Path, load, figure):
    """A recorded file's data and its figure (figure(data, note)), built once per version of the file
    (page_part); None, said in one line on the page, where the file cannot be read."""
    try:
        return page_part((key, *file_version(path)), lambda: (
            (data := load(path)), figure(data, f"recorded ({path.name}), not measured now")))
    except EngineError as exc:
        st.warning(str(exc), icon=":material/warning:")
        return None


def _weigh_part(value) -> int:
    """A plotly figure by the dict it hands out, anything else by memo.nbytes."""
    if hasattr(value, "to_plotly_json"):
        return memo.nbytes(value.to_dict())
    if isinstance(value, (list, tuple)):
        return sum(map(_weigh_part, value))
    if isinstance(value, dict):
        return sum(map(_weigh_part, value.values()))
    return memo.nbytes(value)


def animation_file(fmt: str, build, title: str, progress, number: int | None = None) -> bytes:
    """The page's animation as a file (engine/plots/movie.py), made once for every session asking for
    the same view in the same format; the GIF and MP4 in the line (Chromium and the encoding are
    seconds of both cores), at number, the place the click took in it. build() makes the figure, in
    presenter sizing."""
    key = ("animation", st.session_state.get("_page"), view_state.saved(), fmt, tracer.resolve_source("auto"))
    if fmt == "html":   # no browser, no encoding: the figure and plotly.js written out
        return EXPORTS.get(key, lambda: movie.export(build(), fmt, title))
    return _heavy_get(EXPORTS, key, lambda: movie.export(build(), fmt, title, progress), "export",
                      lambda: movie.EXPORT_BYTES, f"Making the {fmt.upper()}", number)


LINE.held = _held




def rung_side_by_side(kernel: str, m: int, n: int, k: int, params: dict[str, int],
                      counts: rung_counts.RungCounts) -> ncu_reference.SideBySide | None:
    """The Nsight Compute view of a ladder rung from one block's counts: the whole launch when the block
    is the whole grid, or when every block is a full tile like it (sizes that are multiples of 256, the
    largest tile) and the launch is the block's counts times the grid; None otherwise."""
    spec = registry.get(kernel)
    problem = registry.bind(spec, make_problem(m, n, k, block=spec.default_block, params=params))
    gx, gy = spec.launches[-1].grid(problem)
    if not counts.compiled_totals or (gx * gy > 1 and any(size % 256 for size in (m, n, k))):
        return None
    scope = "the whole launch" if gx * gy == 1 else f"one block, times the {gx * gy:,} blocks of the grid"
    key = ("rung_side_by_side", kernel, m, n, k, _params_key(problem.params), counts.block)
    return RESULTS.get(key, lambda: ncu_reference.side_by_side(
        kernel, (m, n, k), problem.params, spec.default_block, counts.compiled_totals, gx * gy, scope))


def side_by_side(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]):
    """ncu_reference.side_by_side of the whole kernel's trace, as compiled: the Nsight Compute view."""
    def compute():
        t, _ = trace(kernel, m, n, k, params, block, None, "auto")
        info = sass_listing(t.launches[-1].file, t.problem.params)
        earlier = {launch.kernel: sass_listing(launch.file, t.problem.params) for launch in t.launches[:-1]}
        totals, _ = analysis.compiled_totals(t, site_summary(kernel, m, n, k, params, block), info, earlier)
        return ncu_reference.side_by_side(kernel, (m, n, k), t.problem.params, block, totals)
    return _heavy_get(RESULTS, ("side_by_side", kernel, m, n, k, _params_key(params), tuple(block)), compute,
                      "trace", _whole_need(kernel, m, n, k, params, block), f"Counting the whole of {kernel}")


# ------------------------------------------------------------------ the Playground
# A student's kernel is named by its source's digest: every session building the same text shares
# its traces and listing, like the catalog's kernels. Each build and run is a sandbox of its own
# (engine/sandbox), so it waits its turn in the line like any heavy request.
def _playground_need(spec, problem, blocks):
    return lambda: plan.host_need_of(plan.plan_for(spec, problem, list(blocks) if blocks else None))


def playground_trace(saved, spec, problem, blocks: tuple | None):
    """(trace, warp instructions, all of C) of a Playground kernel, of the given blocks or all. All of C:
    with blocks, after every block ran (a WholeResult, or why that run failed), from the same sandbox
    job; None for a trace of all blocks (its own check is of all of C)."""
    def compute():
        got = playground.trace(saved, spec, problem, list(blocks) if blocks else None, whole=bool(blocks))
        t, whole = got if blocks else (got, None)
        return t, analysis.warp_instructions(t), whole
    key = ("playground", saved.digest, problem.m, problem.n, problem.k, _params_key(problem.params),
           blocks and tuple(blocks))
    return _heavy_get(TRACES, key, compute, "playground", _playground_need(spec, problem, blocks),
                      f"Building and tracing {saved.kernel} in the sandbox")


def playground_listing(saved, problem) -> dict:
    key = ("playground-sass", saved.digest, _params_key(problem.params))
    return _heavy_get(RESULTS, key, lambda: playground.listing(saved, problem), "playground-sass", lambda: 0,
                      f"Compiling {saved.kernel} with nvcc in the sandbox for its SASS")


def playground_counts(saved, spec, problem) -> tuple:
    """The whole kernel's counts per access site as written and as compiled (site summary, the
    shared-memory table)."""
    def compute():
        t, inst, _ = playground_trace(saved, spec, problem, None)
        summary = analysis.site_summary(t, inst)
        listing = playground_listing(saved, problem) if sass.nvdisasm() else sass.unavailable(
            "SASS not inspected: nvcc or nvdisasm not found")
        return summary, views.shared_kernel(t, inst, summary, listing), listing
    key = ("playground-counts", saved.digest, problem.m, problem.n, problem.k, _params_key(problem.params))
    return RESULTS.get(key, compute)
