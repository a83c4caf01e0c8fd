"""The shared results cache: bounded in bytes, one computation per key, out of clients' reach."""
import threading
import time

import numpy as np
import pytest
import streamlit as st

from engine.devices import memo
from engine.tracing import tracer
from pages.lib import cached


def _mb(n):
    return np.ones(n * 2**20 // 8)


def _at_once(n: int, ask, go: threading.Event) -> None:
    """n threads ask while the computation waits for `go`: all of them arrive before it finishes."""
    threads = [threading.Thread(target=ask) for _ in range(n)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    go.set()
    for t in threads:
        t.join(5)


def test_entries_are_weighed_in_bytes_and_the_least_recent_go_first():
    cache = memo.Memo("t", 10 * 2**20)
    for key in "abc":
        cache.get(key, lambda: {"x": _mb(3)})
    cache.get("a", lambda: pytest.fail("a is cached"))        # a is now the most recent
    cache.get("d", lambda: (_mb(3), "label"))                  # over 10 MB: b goes, not a
    assert cache.bytes <= 10 * 2**20 and len(cache) == 3
    cache.get("a", lambda: pytest.fail("a was dropped"))
    again = []
    cache.get("b", lambda: again.append(1) or _mb(1))
    assert again == [1]


def test_a_result_over_the_whole_budget_is_returned_not_kept():
    cache = memo.Memo("t", 2**20)
    assert cache.get("big", lambda: _mb(4)).nbytes == 4 * 2**20
    assert len(cache) == 0 and cache.bytes == 0


def test_sessions_asking_at_once_share_one_computation():
    cache, calls, results = memo.Memo("t", 2**30), [], []
    go = threading.Event()

    def slow():
        calls.append(1)
        go.wait(5)
        return _mb(1)

    _at_once(8, lambda: results.append(cache.get("k", slow)), go)
    assert calls == [1] and len(results) == 8 and all(r is results[0] for r in results)
    assert cache.shared == 7


def test_a_failure_reaches_every_waiter_and_is_not_kept():
    cache = memo.Memo("t", 2**30)
    with pytest.raises(ValueError):
        cache.get("k", lambda: (_ for _ in ()).throw(ValueError("bad")))
    assert cache.get("k", lambda: 5) == 5


def test_a_trace_is_weighed_by_its_arrays():
    from engine.kernels.problem import make_problem
    t = tracer.trace("naive_x_cols", make_problem(32, 32, 16), source="cpu")
    columns = sum(v.nbytes for v in t.columns.values())
    assert columns <= memo.nbytes(t) <= columns + 2**20


def test_a_clients_clear_cache_does_not_clear_the_shared_traces(monkeypatch):
    args = ("naive_x_cols", 24, 24, 8, {}, (16, 16), None, "cpu")
    cached.trace(*args)
    # What Streamlit does with the "clear_cache" message any browser may send (AppSession).
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setattr(tracer, "trace", lambda *a, **k: pytest.fail("traced again after a client cleared caches"))
    cached.trace(*args)


def test_a_result_the_caller_does_not_keep_is_asked_for_again():
    cache, calls = memo.Memo("t", 2**20), []
    for _ in range(2):
        cache.get("sass", lambda: calls.append(1) or {"available": False}, keep=lambda v: v["available"])
    assert len(calls) == 2 and len(cache) == 0


def test_a_failure_after_the_computation_still_reaches_the_waiters_and_frees_the_key():
    def weigh_fails(value):
        raise MemoryError("no memory to weigh it")

    cache, results = memo.Memo("t", 2**30, weigh_fails), []
    go = threading.Event()

    def slow():
        go.wait(5)
        return 1

    def ask():
        try:
            results.append(cache.get("k", slow))
        except MemoryError as exc:
            results.append(exc)

    _at_once(4, ask, go)
    assert len(results) == 4 and all(isinstance(r, MemoryError) for r in results)
    cache.weigh = lambda v: 8
    assert cache.get("k", lambda: 2) == 2          # not stuck on the failed computation


@pytest.mark.parametrize("value", ["inf", "nan", "1e400", "-5", "abc", "1e300"])
def test_a_cache_size_setting_it_cannot_take_is_one_warning_and_the_default(monkeypatch, capsys, value):
    """Read as every page imports pages/lib/cached.py: inf and 1e400 raised OverflowError and nan
    ValueError there (every page down); abc fell back and -5 turned the cache off without a word."""
    monkeypatch.setenv("MATMUL_EXPLORER_TRACE_CACHE_MB", value)
    assert memo.budget("MATMUL_EXPLORER_TRACE_CACHE_MB", 400) == 400 * 2**20
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MATMUL_EXPLORER_TRACE_CACHE_MB" in err and "using 400" in err


@pytest.mark.parametrize("value, mb", [("0", 0), ("2.5", 2.5), ("", 400)])
def test_a_cache_size_setting_it_takes_is_quiet(monkeypatch, capsys, value, mb):
    monkeypatch.setenv("MATMUL_EXPLORER_TRACE_CACHE_MB", value)
    assert memo.budget("MATMUL_EXPLORER_TRACE_CACHE_MB", 400) == int(mb * 2**20)
    assert capsys.readouterr().err == ""
