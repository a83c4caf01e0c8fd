"""A workaround for how Streamlit routes a page's link before app.py has run once (private API)."""
from __future__ import annotations

import threading

import streamlit as st

# Set by app.py just before it runs the chosen page, read (and cleared) by setup_page: a page run
# without it was routed by Streamlit itself (see routed_by_app). Script runs happen on the session's
# script thread, so a thread-local value belongs to the run in progress.
ROUTED = threading.local()


def routed_by_app() -> None:
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


