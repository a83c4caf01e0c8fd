"""What a page's run sends of its query (pages/lib/query.py), with Streamlit's query and session
stood in for: the browser writes a query it is sent into the address it shows when it arrives, so a
run's query must not be sent after a move away, and must be sent again on the page moved to."""
from __future__ import annotations

import types

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

from pages.lib import query

TILE_PHASES, COALESCING = "hash-tile-phases", "hash-coalescing"
PATHS = {TILE_PHASES: "tile_phases", COALESCING: "coalescing"}


class FakeQuery:
    """st.query_params as a run sees it: what the browser's request brought, and each message sent."""

    def __init__(self, params: dict):
        self.params, self.sent, self.stopped = dict(params), [], False

    def to_dict(self) -> dict:
        return dict(self.params)

    def from_dict(self, params: dict) -> None:
        if self.stopped:   # a message after st.stop: the run ends there
            raise StopException()
        self.params = dict(params)
        self.sent.append(dict(params))


class FakeStreamlit:
    """The st that query.py reads: session state, and the query of the run in progress."""

    def __init__(self, session):
        self.session_state, self._session = session.state, session

    @property
    def query_params(self) -> FakeQuery:
        return self._session.query

    def stop(self) -> None:
        """As Streamlit's: the stop asked for, every message after it refused (StopException)."""
        self._session.query.stopped = True
        raise StopException()


@pytest.fixture
def session(monkeypatch):
    """A session whose runs are on the page `session.page`, with the query `session.query`."""
    state = types.SimpleNamespace(page=TILE_PHASES, query=FakeQuery({}), state={})
    monkeypatch.setattr(query, "st", FakeStreamlit(state))
    monkeypatch.setattr(query, "get_script_run_ctx", lambda: types.SimpleNamespace(page_script_hash=state.page))
    # the session's first write, by a script on the page: marked so in what was sent
    monkeypatch.setattr(query, "_replace_address", lambda params, path: state.query.sent.append(("script", path, params)))
    return state


def run(session, page: str, brought: dict, writes: dict, cut: RerunData | None = None) -> list:
    """One run of `page`, its request bringing `brought`, writing `writes`, cut short by `cut` if
    given; what it sent (a message's query, or ("script", path, query) for the first write)."""
    session.page, session.query = page, FakeQuery(brought)
    try:
        with query.written_once(PATHS[page]) as draft:
            draft.update(writes)
            if cut is not None:
                raise RerunException(cut)
    except RerunException:
        pass
    return session.query.sent


def test_a_run_sends_its_query_once_and_only_when_it_changed(session):
    run(session, TILE_PHASES, {}, {})
    assert run(session, TILE_PHASES, {"m": "40"}, {"m": "64"}) == [{"m": "64"}]
    assert run(session, TILE_PHASES, {"m": "64"}, {"m": "64"}) == []


def test_a_sessions_first_write_is_a_script_replacing_the_address(session):
    """By a message, the browser's Streamlit pushes a history entry, and history.js (which makes it a
    replacement) may not be in place yet on a session's first run: the address as opened stayed
    behind as an entry, and Forward into it from outside the app lost the entries after it."""
    assert run(session, TILE_PHASES, {}, {"m": "64"}) == [("script", "tile_phases", {"m": "64"})]
    assert run(session, TILE_PHASES, {"m": "64"}, {"m": "40"}) == [{"m": "40"}]   # then messages


def test_a_sessions_first_run_writes_nothing_unchanged(session):
    """A fresh visit whose address already names the view leaves it as it came (an address with a name
    twice, say, is not rewritten)."""
    assert run(session, COALESCING, {"kernel": "naive_x_rows"}, {}) == []


def test_a_run_cut_short_by_a_control_of_its_page_still_sends_its_query(session):
    run(session, TILE_PHASES, {}, {})
    assert run(session, TILE_PHASES, {"m": "40"}, {"m": "64"}, RerunData(page_script_hash=TILE_PHASES)) == [{"m": "64"}]


@pytest.mark.parametrize("cut", [
    RerunData(page_script_hash=COALESCING, is_history_navigation=True),    # Back to another page
    RerunData(page_script_hash=TILE_PHASES, is_history_navigation=True),   # Back to an entry of this page
    RerunData(page_script_hash=COALESCING),                                # the sidebar's link
], ids=["back-to-another-page", "back-on-this-page", "sidebar"])
def test_a_run_cut_short_by_a_move_away_sends_nothing(session, cut):
    """Back from Tile phases while its run was still going: the run's query, sent as it ended, was
    written into Coalescing's address (/coalescing?kernel=tiled_guarded&m=40&TILE=16...)."""
    run(session, TILE_PHASES, {}, {})
    assert run(session, TILE_PHASES, {"m": "40"}, {"m": "64", "TILE": "16"}, cut) == []


def test_the_first_run_on_a_page_moved_to_sends_its_query_even_unchanged(session):
    """A query the last page sent just before the move can arrive after it, into the next page's
    address; the server, which has the next page's query from the browser's request, saw nothing to
    send, and the address kept the other page's settings."""
    run(session, TILE_PHASES, {}, {"m": "64"})
    assert run(session, COALESCING, {"kernel": "naive_x_rows"}, {}) == [{"kernel": "naive_x_rows"}]
    assert run(session, COALESCING, {"kernel": "naive_x_rows"}, {}) == []   # not again on the same page


def test_a_page_stopped_on_its_first_run_after_a_move_sends_its_query_even_unchanged(session):
    """A page that stops (a refusal) sends its query before st.stop, as written_once would at the end;
    the repair a page's first run after a move makes was left out there, so a query the last page had
    sent just before the move stayed in this page's address."""
    run(session, TILE_PHASES, {}, {"m": "64"})
    session.page, session.query = COALESCING, FakeQuery({"kernel": "naive_x_rows"})
    with pytest.raises(StopException):
        with query.written_once(PATHS[COALESCING]):
            query.stop()
    assert session.query.sent == [{"kernel": "naive_x_rows"}]


def test_a_sessions_first_address_keeps_the_embedding_names_and_is_this_pages():
    """The script that writes the first address, in a real run (AppTest): ?embed=true (which Streamlit's
    to_dict leaves out, and the browser's Streamlit reads from the address) is kept, and the script
    writes only on this page's path."""
    from streamlit.testing.v1 import AppTest

    from tests.test_pages import APP, TIMEOUT
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["embed"] = "true"
    at.query_params["m"] = "40"
    at.switch_page("pages/tile_phases.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["embed"] == "true" and at.query_params["kernel"] == "tiled_guarded"
    script = next(h.proto.body for h in at.get("html") if "const [want, page, search]" in h.proto.body)
    assert '["/tile_phases", "tile_phases", "?embed=true&m=40&kernel=tiled_guarded&n=40&' in script, script
