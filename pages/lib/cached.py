"""The engine calls the pages make, cached for every session of this server.

Shared by all sessions: one computation per distinct request however many sessions ask at once,
bounded in bytes, and out of reach of Streamlit's "clear cache" (which any client may send). Work
on a whole kernel (the tables below a figure) waits for its own slots (pages/lib/slots.py).
"""
from __future__ import annotations

import streamlit as st

from engine.devices import host_memory, memo
from engine.errors import EngineError
from engine.kernels import registry, sass
from engine.kernels.problem import make_problem
from engine.metrics import analysis, rung_counts, views
from engine.tracing import tracer
from pages.lib import view_state
from pages.lib.slots import whole_kernel_slot

# A whole-kernel trace at 128^3 is ~4-5 M records (~150 MB with its warp
# instructions): the default keeps two or three. MATMUL_EXPLORER_TRACE_CACHE_MB changes it.
host_memory.keep_large_blocks_separate()
TRACES = memo.Memo("traces", memo.budget("MATMUL_EXPLORER_TRACE_CACHE_MB", 400))
RESULTS = memo.Memo("results", memo.budget("MATMUL_EXPLORER_RESULT_CACHE_MB", 100))


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
    with whole_kernel_slot():
        return TRACES.get(key, compute)


# A figure is weighed by the dict it hands out (its plotly objects share validators and templates
# with every other figure, which are not its to free).
FIGURES = memo.Memo("figures", memo.budget("MATMUL_EXPLORER_FIGURE_CACHE_MB", 100), lambda f: memo.nbytes(f.to_dict()))


def figure(build):
    """The page's animated figure for the view it shows, built once for every session showing that
    view (a room opening one link builds it once, not thirty times over). The view is what the page
    put in the URL (remember()), with the mode and presenter setting, which is everything a figure
    is drawn from; a page must remember() every control its figure depends on."""
    key = (st.session_state.get("_page"), view_state.saved(), view_state.presenter(),
           tracer.resolve_source("auto"))
    return FIGURES.get(key, lambda: build().freeze())


def sass_listing(file: str, params: dict[str, int]) -> dict:
    return RESULTS.get(("sass", file, _params_key(params)), lambda: sass.memory_instructions(file, params),
                       keep=lambda listing: listing["available"])


def site_summary(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]):
    """analysis.site_summary of the whole-kernel trace (the pages' Nsight-style tables)."""
    def compute():
        return analysis.site_summary(*trace(kernel, m, n, k, params, block, None, "auto"))
    with whole_kernel_slot():
        return RESULTS.get(("site_summary", kernel, m, n, k, _params_key(params), tuple(block)), compute)


def shared_kernel(kernel: str, m: int, n: int, k: int, params: dict[str, int],
                         block: tuple[int, int]) -> views.SharedKernel:
    """views.shared_kernel of the whole-kernel trace: computed once per trace, not again when only the
    warp, speed or view changes."""
    def compute():
        t, inst = trace(kernel, m, n, k, params, block, None, "auto")
        summary = site_summary(kernel, m, n, k, params, block)
        return views.shared_kernel(t, inst, summary, sass_listing(t.launches[-1].file, t.problem.params))
    with whole_kernel_slot():
        return RESULTS.get(("shared_kernel", kernel, m, n, k, _params_key(params), tuple(block)), compute)


def global_reads(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]) -> int:
    """Global loads of a whole kernel, counted in its trace (no per-warp analysis needed)."""
    with whole_kernel_slot():
        return RESULTS.get(("global_reads", kernel, m, n, k, _params_key(params), tuple(block)),
                           lambda: analysis.global_reads(
                               tracer.trace(kernel, make_problem(m, n, k, block=block, params=params))))


def reads_against_naive(kernel: str, m: int, n: int, k: int, params: dict[str, int]) -> dict[str, int]:
    """Global loads of the whole kernel and of the naive baseline (views.NAIVE_BASELINE) at the same
    sizes, by label, the baseline first; each kernel's count is kept on its own (one naive count
    serves every tiled kernel and TILE)."""
    naive = views.NAIVE_BASELINE
    spec = registry.get(kernel)
    tiled = ", ".join([kernel] + [f"{name} {value}" for name, value in params.items()])
    return {f"naive ({naive.name})": global_reads(naive.name, m, n, k, {}, naive.default_block),
            tiled: global_reads(kernel, m, n, k, params, spec.default_block)}


def rung(kernel: str, size: int, block: tuple[int, int]) -> rung_counts.RungCounts | str:
    """rung_counts.rung_counts of one block of a ladder rung (its default parameters) at size^3, or the
    engine's one-line reason it cannot be traced (over the record cap). Only the counts are kept:
    the trace of one block is millions of records at the larger sizes, and the page shows six."""
    def compute():
        spec = registry.get(kernel)
        trace = tracer.trace(kernel, make_problem(size, size, size, block=spec.default_block), [block], "auto")
        return rung_counts.rung_counts(trace, analysis.warp_instructions(trace), block,
                                       sass_listing(trace.launches[-1].file, trace.problem.params))
    try:
        return RESULTS.get(("rung", kernel, size, tuple(block), tracer.resolve_source("auto")), compute)
    except EngineError as exc:
        return str(exc)


