"""What every page shares: the mode banner, presenter mode, view state in the URL, cached engine calls.

Pages stay thin: controls -> an engine call through here -> a figure from pages/figures.py.
"""
from __future__ import annotations

import streamlit as st

from engine import analysis, gpu_client, registry, sass, sources, tracer
from engine.errors import EngineError
from engine.problem import make_problem

@st.cache_resource(show_spinner=False)
def device_status():
    """Asked once per server: starts the GPU worker if PyCUDA is installed."""
    return gpu_client.status()


def presenter() -> bool:
    return st.session_state.get("presenter_mode", False)


def font_size() -> int:
    return 22 if presenter() else 13


def setup_page(title: str, intro: str) -> None:
    """Title, presenter toggle, mode banner. Call first on every page."""
    st.set_page_config(page_title=f"{title} · CUDA Matmul Explorer", layout="wide")
    # A plain session value, not widget state: widget state does not follow the user across pages.
    st.session_state.setdefault("presenter_mode", st.query_params.get("presenter", "0") == "1")
    with st.sidebar:
        on = st.toggle("Presenter mode (big text)", value=st.session_state["presenter_mode"],
                       help="Larger fonts and thicker lines, for the back of a classroom")
        st.session_state["presenter_mode"] = on
        st.query_params["presenter"] = "1" if on else "0"
        mode_banner(sidebar=True)
    if presenter():
        st.markdown("<style>html, body, [class*='css'], .stMarkdown p, .stMarkdown li {font-size: 1.35rem !important;}"
                    " h1 {font-size: 3rem !important;} .stCode code {font-size: 1.2rem !important;}</style>",
                    unsafe_allow_html=True)
    st.title(title)
    st.caption(intro)


def mode_banner(sidebar: bool = False) -> None:
    st_ = device_status()
    box = st.success if st_.available else st.info
    if st_.available:
        text = (f"**GPU mode** · {st_.name} · traces are recorded live by the instrumented kernels "
                f"on this GPU.")
    else:
        text = (f"**CPU mode** · no NVIDIA GPU here ({st_.reason}). Traces come from the same kernel "
                "sources run on the CPU; tests check them against traces recorded on an H200.")
    box(text, icon=":material/memory:")


def state(key: str, default, choices=None, lo=None, hi=None) -> str:
    """A widget key whose first value comes from the URL (so a shared link opens that exact view) and
    whose later values are the widget's own, kept within its choices or range. Keyed widgets keep
    their identity across reruns, so nothing the user types is lost to a remount."""
    if key not in st.session_state:
        raw = st.query_params.get(key)
        try:
            value = type(default)(raw) if raw is not None and not isinstance(default, bool) else \
                (raw in ("1", "true", "True") if raw is not None else default)
        except ValueError:
            value = default
        st.session_state[key] = value
    value = st.session_state[key]
    if choices is not None and value not in choices:
        st.session_state[key] = default if default in choices else choices[0]
    if lo is not None and value < lo:
        st.session_state[key] = lo
    if hi is not None and value > hi:
        st.session_state[key] = hi
    return key


def remember(**values) -> None:
    """Puts the view's state in the URL, so a teacher can hand out a link to this exact view."""
    for k, v in values.items():
        st.query_params[k] = str(v)


@st.cache_resource(max_entries=48, ttl=3600, show_spinner=False)
def cached_trace(kernel: str, m: int, n: int, k: int, tile: int, pad: int, block: tuple[int, int],
                 blocks: tuple | None, source: str):
    """One trace per distinct view, shared by all sessions (read-only)."""
    p = make_problem(m, n, k, tile=tile, pad=pad, block=block)
    t = tracer.trace(kernel, p, list(blocks) if blocks else None, source)
    inst = analysis.warp_instructions(t)
    return t, inst


@st.cache_resource(max_entries=64, show_spinner=False)
def cached_sass(file: str, tile: int, pad: int) -> dict:
    return sass.memory_instructions(file, tile, pad)


def trace_or_stop(*args, **kwargs):
    """The trace, or a one-line message in the page (and nothing else drawn)."""
    try:
        return cached_trace(*args, **kwargs)
    except EngineError as exc:
        st.error(str(exc), icon=":material/error:")
        st.stop()


def kernel_label(name: str) -> str:
    spec = registry.get(name)
    return f"{spec.title} — from {spec.source_titles}"


def source_lines(file: str) -> list[str]:
    return sources.load(file).text.splitlines()
