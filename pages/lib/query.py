"""The page's URL query, written to the browser once per script run.

Every write to st.query_params is a message of its own, and the browser's Streamlit pushes a
history entry for each that changes the address: a page's first run wrote its settings one by one
(presenter, kernel, m, n, k, each parameter, the block, ...), nine or ten entries before history.js
(which turns a same-page push into a replace) had been drawn, so Back took up to ten presses to
leave a page opened from a link. Here a run reads and writes a draft of the query (params()), and
app.py sends it once, when the page's script ends (written_once()): one entry at most, and by then
history.js is in place."""
from __future__ import annotations

import threading
from collections import UserDict
from contextlib import contextmanager

import streamlit as st

# The run in progress's draft: each session's script runs in a thread of its own.
_RUN = threading.local()


class Draft(UserDict):
    """The query as the run has it so far: names to values (strings, as the URL holds them)."""

    def __setitem__(self, name: str, value) -> None:
        super().__setitem__(name, str(value))

    def __iter__(self):
        return iter(list(self.data))   # a copy: callers delete names while they walk them

    def to_dict(self) -> dict[str, str]:
        return dict(self.data)


def params():
    """The query to read and write: the run's draft under app.py, else st.query_params itself (a
    page's script run on its own, as some tests do, writes straight through)."""
    draft = getattr(_RUN, "draft", None)
    return draft if draft is not None else st.query_params


@contextmanager
def written_once():
    """Around a page's run: the query it leaves is sent in one message, also when the run ends early
    (st.stop after a refusal, a rerun, a click that interrupts it); nothing is sent if it is unchanged."""
    draft = _RUN.draft = Draft(st.query_params.to_dict())
    try:
        yield draft
        # A run that ended (not stopped, not cut short by a rerun) drew every control of the page
        st.session_state.pop(STOPPED, None)
    finally:
        _RUN.draft = None
        st.session_state[LEFT] = draft.to_dict()
        _send(draft)


def _send(draft: Draft) -> None:
    if draft.data != st.query_params.to_dict():
        st.query_params.from_dict(draft.data)


def stop():
    """st.stop(), the run's query sent first. After st.stop every message of the run is refused, the
    query's too: a page that stopped (a refused setting, the Playground switched off) had left the
    address as it came, without its settings or presenter=1, so a reload or a copied link showed
    another view."""
    draft = getattr(_RUN, "draft", None)
    if draft is not None:
        _send(draft)
    st.session_state[STOPPED] = True   # the runs after it send each control's kept value again (view_state.redrawn)
    st.stop()


# Set by a run that stopped (stop()) until a run ends whole (written_once): a run cut short by a rerun
# (a quick second change) may not reach the controls either. Each run reads it at its start (ui.setup_page
# copies it to AFTER_STOP).
STOPPED, AFTER_STOP = "_run_stopped", "_after_stop"


# The query the session's last run left: a page switch that keeps it (Streamlit's st.switch_page, and
# AppTest's) hands the next page the last page's settings, where Back or Forward hands it its own.
LEFT = "_query_left"


def carried_over() -> bool:
    """Whether the query now is the one the last run left (not one the browser brought with it). A page
    run on its own (no draft: some tests switch pages so) cannot tell, and takes it as carried over."""
    draft = getattr(_RUN, "draft", None)
    return draft is None or draft.to_dict() == st.session_state.get(LEFT)
