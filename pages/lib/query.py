"""The page's URL query, written to the browser once per script run.

Every write to st.query_params is a message of its own, and the browser's Streamlit pushes a
history entry for each that changes the address: a page's first run wrote its settings one by one
(presenter, kernel, m, n, k, each parameter, the block, ...), nine or ten entries before history.js
(which turns a same-page push into a replace) had been drawn, so Back took up to ten presses to
leave a page opened from a link. Here a run reads and writes a draft of the query (params()), and
app.py sends it once, when the page's script ends (written_once()): one entry at most, made a
replacement by history.js (and no entry at all for a session's first write: see below).

The browser's Streamlit writes a query it is sent into the address it shows when it arrives, whatever
page that is (document.location.pathname). So a run's query is never sent once the person has moved
on: a run cut short by a move to another page, or by Back or Forward, sends nothing (its query had
been written into the next page's address: Back from Tile phases to Coalescing left
/coalescing?kernel=tiled_guarded&m=40&TILE=16...). And the first run on a page after a move sends its
query even when the server thinks it unchanged: one the last page sent just before the move may
have arrived after it (the browser leaves a write of the address it already shows undone).

A session's first run writes its address itself, by a script drawn on the page, as a replacement of
the address it came with: the message the browser's Streamlit acts on pushes a history entry, and
history.js, which turns that push into a replacement, is drawn by the same run, so on a busy machine
it was in place too late. The address as opened then stayed behind as an entry of its own: Forward
from outside the app reopened it, at the page's defaults, and the page's write there cut off every
entry after it (the view a student had set, and the pages visited after it)."""
from __future__ import annotations

import json
import threading
from collections import UserDict
from contextlib import contextmanager
from urllib.parse import urlencode

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException
from streamlit.runtime.state.session_state_proxy import get_session_state

# The run in progress's draft: each session's script runs in a thread of its own.
_RUN = threading.local()


class Draft(UserDict):
    """The query as the run has it so far: names to values (strings, as the URL holds them), for the
    page at `path` whose script's hash is `page`; moved_in: the page's first run after a move."""

    def __init__(self, params: dict, path: str = "", page: str = ""):
        super().__init__(params)
        self.path, self.page, self.moved_in = path, page, False

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
def written_once(path: str = ""):
    """Around a page's run (`path`: the page's URL path, "" for Home): the query it leaves is sent
    once, when the run ends, also when it ends early (stop() sends it before st.stop; a rerun, a click
    that interrupts it); nothing is sent if it is unchanged, or if the run was cut short by a move
    away (see the module's docstring)."""
    here = _page_here()
    draft = _RUN.draft = Draft(st.query_params.to_dict(), path, here)
    draft.moved_in = st.session_state.get(_SENT_ON, here) != here
    away = False
    try:
        yield draft
        # A run that ended (not stopped, not cut short by a rerun) drew every control of the page
        st.session_state.pop(STOPPED, None)
    except RerunException as cut:
        away = moves_away(cut.rerun_data, here)
        raise
    finally:
        _RUN.draft = None
        st.session_state[LEFT] = draft.to_dict()
        if not away:
            _send(draft, always=draft.moved_in)


# The page (its script's hash) whose run last sent its query or found it unchanged (_send): to tell a
# page's first run after a move, and the session's first write (none yet).
_SENT_ON = "_query_sent_on"


def _page_here() -> str:
    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else ""


def moves_away(rerun, here: str) -> bool:
    """Whether the rerun that cut a run short takes the browser to another address than the run's: Back
    or Forward (the address is then one the browser already holds, even on the same page) or another
    page. A rerun on the same page (a control changed) names this page's script."""
    return rerun.is_history_navigation or rerun.page_script_hash not in ("", here)


def _send(draft: Draft, always: bool = False) -> None:
    """The draft sent where it changed (always: also unchanged), by a message, or by a script on the
    session's first write."""
    if not (always or draft.data != st.query_params.to_dict()):
        st.session_state[_SENT_ON] = draft.page
        return
    if _SENT_ON in st.session_state:
        st.query_params.from_dict(draft.data)
    else:   # the session's first run (see the module's docstring)
        _replace_address(draft.data, draft.path)
    st.session_state[_SENT_ON] = draft.page   # not where the send raised (a run stopped meanwhile): tried again


def _replace_address(params: dict[str, str], path: str) -> None:
    """The address written by a script on the page, in place of the one the browser shows. The script
    writes only while the browser still shows this page: drawn after a move, it leaves that address
    alone. On the server the query is set without a message, for the rest of this run and the run's
    client state (which AppTest reads); the browser's Streamlit keeps its own copy of the address as
    opened and sends that with the next rerun, whose run then writes the address again by a message,
    a no-op for an address that already says it."""
    with get_session_state().query_params() as kept:
        kept.clear_with_no_forward_msg(preserve_embed=True)   # ?embed= and ?embed_options= stay
        for name, value in params.items():
            kept.set_with_no_forward_msg(name, value)
        # as Streamlit encodes it (QueryParams._send_query_param_msg), the embedding names with it:
        # to_dict() leaves them out, and the browser's Streamlit reads them from the address
        query = urlencode(kept._query_params, doseq=True)
    ctx = get_script_run_ctx()
    if ctx is not None:
        ctx.query_string = query
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    want = "".join(f"/{part}" for part in (base, path) if part)
    args = ", ".join(json.dumps(a) for a in (want, path, "?" + query if query else ""))
    st.sidebar.html(f"<script>{ADDRESS_JS % args}</script>", unsafe_allow_javascript=True)


# want: the page's whole path (under server.baseUrlPath) without a trailing slash; page: its own part,
# which is enough behind a proxy that serves the app under a prefix of its own; search: "?query" or "".
ADDRESS_JS = r"""(() => {
  const [want, page, search] = [%s];
  const here = decodeURI(location.pathname).replace(/\/+$/, "");
  if (!(here === want || (page && here.endsWith("/" + page))) || location.search === search) return;
  history.replaceState(history.state, "", location.pathname + search + location.hash);
})();"""


def stop():
    """st.stop(), the run's query sent first. After st.stop every message of the run is refused, the
    query's too: a page that stopped (a refused setting, the Playground switched off) had left the
    address as it came, without its settings or presenter=1, so a reload or a copied link showed
    another view."""
    draft = getattr(_RUN, "draft", None)
    if draft is not None:
        _send(draft, always=draft.moved_in)
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
