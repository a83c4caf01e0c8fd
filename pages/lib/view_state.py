"""Each page's own view state: seeded from the URL (a shared link opens that exact view), kept for
the page across navigation, and written back to the URL as it changes."""
from __future__ import annotations

import streamlit as st

SPEEDS = ["slow", "normal", "fast"]


def presenter() -> bool:
    """Presenter (projector) mode: set by its toggle or by presenter=1 in the URL (ui.setup_page)."""
    return st.session_state.get("presenter_mode", False)


def page_key(name: str) -> str:
    return f"{st.session_state.get('_page', '')}.{name}"


def state(name: str, default, choices=None, lo=None, hi=None) -> str:
    """The widget key of this page's control `name`. Its first value comes from the URL (so a shared
    link opens that exact view), else from what this page showed last in this session (so leaving
    and coming back keeps the view), else `default`; it is kept within its choices or range. Keyed
    widgets keep their identity across reruns, so nothing the user types is lost to a remount."""
    key = page_key(name)
    saved = st.session_state.setdefault(page_key("_saved"), {})
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
    saved = st.session_state.setdefault(page_key("_saved"), {})
    for k, v in values.items():
        saved[k] = v
        st.query_params[k] = str(int(v) if isinstance(v, bool) else v)


def speed_control(where, durations: dict[str, int]) -> int:
    """The animation speed select, returning milliseconds per frame."""
    speed = where.select_slider("Speed", SPEEDS, key=state("speed", "normal", SPEEDS))
    remember(speed=speed)
    return durations[speed]




def saved() -> tuple:
    """The view this page put in the URL (remember()), as a cache key."""
    return tuple(sorted(st.session_state.get(page_key("_saved"), {}).items()))
