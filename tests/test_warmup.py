"""Compiles on demand: a view builds what it needs when it needs it, and says so; the background
compiles only what the pages offer one click away, at the lowest priority, and stops when asked.

Before: the first page view started compiling every parameter combination the registry allows
(6,310 builds, about an hour of a laptop's core), invisible in the page.
"""
import os
import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.kernels import build, cache, registry, warmup
from engine.kernels.problem import make_problem
from engine.tracing import tracer
from pages.lib import cached, server

pytestmark = pytest.mark.skipif(build.host_compiler() is None, reason="no C++ compiler")
APP = str(server.__file__).replace("pages/lib/server.py", "app.py")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_background_work_is_every_page_default_and_no_more():
    jobs = server.default_jobs()
    # every kernel a tracing page lists, at its defaults: one build per source (and listing)
    for view in registry.TRACED_VIEWS:
        for kernel in registry.showing(view):
            spec = registry.get(kernel)
            for launch in spec.launches:
                assert any(j.file == launch.file and j.what == "cpu" and
                           dict(j.params) == build.used_defines(__import__("engine.kernels.sources", fromlist=["x"])
                                                                .load(launch.file), spec.default_params())
                           for j in jobs), (view, kernel)
    cpu = {j for j in jobs if j.what == "cpu"}
    assert len(cpu) == len({(j.file, j.params) for j in cpu})
    # bounded: the old prebuild queued every allowed combination (thousands)
    every = sum(len(registry.get(k).combinations()) for k in {k for v in registry.TRACED_VIEWS
                                                              for k in registry.showing(v)})
    assert len(set(jobs)) < 60 < every


def test_a_page_offers_only_combinations_its_kernels_take():
    jobs = warmup.jobs("shared_bank_conflicts", warmup.choices_of({"TILE": (8, 16, 32), "PAD": (0, 1)}), "cpu", True)
    assert {(j.what, dict(j.params)["TILE"], dict(j.params)["PAD"]) for j in jobs} == {
        (w, t, p) for w in ("cpu", "sass") for t in (8, 16, 32) for p in (0, 1)}
    # tiled_guarded takes TILE, not PAD: three builds whatever PAD offers
    jobs = warmup.jobs("tiled_guarded", warmup.choices_of({"TILE": (8, 16, 32), "PAD": (0, 1)}), "cpu")
    assert len(set(jobs)) == 3
    # a kernel without TILE: its defaults, once
    assert len(set(warmup.jobs("warptile", warmup.choices_of({"TILE": (8, 16, 32)}), "cpu"))) == 1
    assert warmup.jobs("wgmma_tma", [{}], "gpu") == []        # not traced: nothing to build for a trace


def test_the_queue_builds_nearby_first_and_each_once(fresh_cache):
    q = warmup.Warmup()
    far = warmup.jobs("tiled_guarded", [{"TILE": 8}], "cpu")
    near = warmup.jobs("naive_x_cols", [{}], "cpu")
    order = []
    real = warmup.Job.make
    gate = threading.Event()

    def make(job):
        gate.wait(30)
        order.append(job.file)
        real(job)

    try:
        warmup.Job.make = make
        assert q.ask(far, warmup.DEFAULTS) == 1
        assert q.ask(near + near + far, warmup.NEARBY) == 1     # each job once
        gate.set()
        assert q.wait(120)
    finally:
        warmup.Job.make = real
    # the first job may have been taken before the nearby one arrived; after that, nearby first
    assert order in (["tiled_guarded.cu", "naive_x_cols.cu"], ["naive_x_cols.cu", "tiled_guarded.cu"])
    assert all(isinstance(v, float) for v in q.done.values())
    assert cache.is_built(build.build_cpu_library("naive_x_cols.cu", {}))


def test_the_queue_is_bounded_and_stops():
    q = warmup.Warmup(limit=2)
    jobs = warmup.jobs("shared_bank_conflicts", warmup.choices_of({"TILE": (8, 16, 32), "PAD": (0, 1)}), "cpu")
    q.stop()
    assert q.ask(jobs) == 0                     # stopped: nothing more is taken
    q = warmup.Warmup(limit=2)
    q._stop.set()                               # not started: the thread would build
    q._stop.clear()
    assert q.ask([]) == 0 and q._thread is None


def test_background_compilers_run_at_the_lowest_priority(fresh_cache, monkeypatch):
    seen = []
    real = build.subprocess.Popen

    def popen(cmd, **kw):
        proc = real(cmd, **kw)
        if cmd[-1] != "--version":
            seen.append(os.getpriority(os.PRIO_PROCESS, proc.pid))
        return proc

    monkeypatch.setattr(build.subprocess, "Popen", popen)
    q = warmup.Warmup()
    q.ask(warmup.jobs("naive_x_rows", [{}], "cpu"))
    assert q.wait(120)
    build.build_cpu_library("tiled_guarded.cu", {"TILE": 8})     # a view's own build: normal priority
    assert seen[0] == 19 and seen[-1] == os.getpriority(os.PRIO_PROCESS, 0)


def test_a_view_that_waits_for_a_compiler_says_which(fresh_cache):
    said = []

    class Spinner:
        def __init__(self, what):
            said.append(what)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    build.ANNOUNCE.fn = Spinner
    try:
        tracer.trace("warptile", make_problem(128, 128, 128, block=registry.get("warptile").default_block),
                     [(0, 0)], "cpu")
        tracer.trace("warptile", make_problem(128, 128, 128, block=registry.get("warptile").default_block),
                     [(0, 0)], "cpu")
    finally:
        build.ANNOUNCE.fn = None
    assert said == ["Compiling warptile for the CPU"]       # once: the second view finds it built


def test_the_page_shows_the_compile_it_waits_for(fresh_cache, monkeypatch):
    """The spinner's words reach the page (AppTest records the spinner elements it drew)."""
    said = []
    real = build._announced

    def spy(what):
        said.append(what)
        return real(what)

    monkeypatch.setattr(build, "_announced", spy)
    for memo in (cached.TRACES, cached.RESULTS, cached.FIGURES):   # earlier tests' views, traced already
        memo.clear()
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/tile_phases.py")
    at.run()
    assert not at.exception
    assert "Compiling tiled_guarded for the CPU" in said


def test_the_server_hands_the_interpreter_round_quickly_and_keeps_what_it_loaded_from_the_collector():
    """pages/lib/server.start_once: a 1 ms switch interval (the event loop, which gives up the lock at
    every socket write, waited up to 5 ms each time behind a computing page script: quiet views took
    a median 0.45 s in load_room.py's room, 0.27 s after), and what the server has loaded frozen out
    of the collector (each full collection walked it, 0.1 to 0.2 s with the interpreter locked)."""
    import subprocess
    import sys
    code = ("import gc, sys\nfrom pages.lib import server\nbefore = gc.get_freeze_count()\nserver.start_once()\n"
            "print(sys.getswitchinterval(), before, gc.get_freeze_count())")
    env = {**os.environ, "MATMUL_EXPLORER_WARMUP": "0", "MATMUL_EXPLORER_GPU": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=Path(__file__).resolve().parents[1], check=True).stdout.split()
    interval, before, frozen = float(out[0]), int(out[1]), int(out[2])
    assert interval == 0.001 and before == 0 and frozen > 50_000


def test_one_choice_is_checked_without_listing_every_combination():
    """warmup.jobs asked every kernel for all its combinations to check one choice: 10,176 choices
    through every rule, 1.5 s of the first page view of a fresh server. accepts() asks of the one."""
    for kernel in {k for v in registry.TRACED_VIEWS for k in registry.showing(v)}:
        spec = registry.get(kernel)
        every = spec.combinations()
        assert spec.accepts(spec.default_params())
        for choice in every[:50]:
            assert spec.accepts(choice)
        if spec.params:
            name, allowed = next(iter(spec.params.items()))
            assert not spec.accepts({**spec.default_params(), name: max(allowed) + 1})   # not an allowed value
            assert not spec.accepts({k: v for k, v in spec.default_params().items() if k != name})  # one missing
    refused = registry.get("warptile")
    values = [dict(zip(refused.params, v)) for v in __import__("itertools").product(*refused.params.values())]
    assert [v for v in values if refused.accepts(v)] == refused.combinations() and len(values) > len(refused.combinations())


def test_background_builds_wait_while_page_views_are_drawn(monkeypatch):
    """The first views of a fresh server took 5.2 s with the background compiles on against 2.9 s
    without: their Python side shared the interpreter lock with the page. A build waits while a page
    script runs or waits for its slot, for YIELD_S at most."""
    q = warmup.Warmup()
    busy, made = threading.Event(), threading.Event()
    busy.set()
    q.pages_busy = busy.is_set
    monkeypatch.setattr(warmup.Job, "make", lambda job: made.set())
    q.ask(warmup.jobs("naive_x_cols", [{}], "cpu"))
    assert not made.wait(0.5)             # the page is being drawn: nothing built
    busy.clear()
    assert made.wait(5)
    q.stop()
    monkeypatch.setattr(warmup, "YIELD_S", 0.2)   # a room that never stops drawing still gets its builds
    q, made = warmup.Warmup(), threading.Event()
    q.pages_busy = lambda: True
    q.ask(warmup.jobs("naive_x_rows", [{}], "cpu"))
    assert made.wait(5)
    q.stop()
