import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# No background compiles in tests (or in the app servers they start): each test's CPU is its own.
# tests/test_warmup.py and tests/test_stop.py turn them on where they are what is tested.
os.environ.setdefault("MATMUL_EXPLORER_WARMUP", "0")


@pytest.fixture(scope="module")
def server():
    """A real app server (`streamlit run app.py` on a loopback port) for a module of browser tests."""
    from tests import browser
    with browser.app_server({"MATMUL_EXPLORER_GPU": os.environ.get("MATMUL_EXPLORER_GPU", "1")}) as url:
        yield url


@pytest.fixture(scope="module")
def cpu_mode():
    """CPU mode for a module of page tests, on any machine: MATMUL_EXPLORER_GPU=0 while it runs.
    gpu_client reads the variable when it first answers status() and keeps that answer, so the
    answer is asked again on the way in and on the way out."""
    from engine.devices import gpu_client
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MATMUL_EXPLORER_GPU", "0")
        assert not gpu_client.status(refresh=True).available
        yield
    gpu_client.status(refresh=True)


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """Where browser tests save screenshots: $MATMUL_EXPLORER_SCREENSHOTS (CI: screenshots/), to be looked at."""
    out = os.environ.get("MATMUL_EXPLORER_SCREENSHOTS")
    path = Path(out) if out else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def chrome():
    """Headless Chromium for a module of browser tests (tests/browser.py)."""
    from tests import browser
    with browser.chromium() as b:
        yield b


@pytest.fixture
def page(chrome):
    """A fresh page at a projector's 1280x720, collecting the page's JavaScript errors in .errors."""
    from tests import browser
    context = chrome.new_context(viewport=browser.VIEW)
    p = context.new_page()
    p.errors = []
    p.on("pageerror", lambda e: p.errors.append(str(e)))
    yield p
    context.close()


FAILING_NVCC = "nvcc fatal   : Unsupported gpu architecture"


@pytest.fixture
def failing_nvcc(tmp_path, monkeypatch):
    """An nvcc that answers --version but fails every build with FAILING_NVCC, and a fresh compile
    cache, so that nothing already compiled hides it."""
    fake = tmp_path / "nvcc"
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "fake nvcc"; exit 0; fi\n'
                    f"echo '{FAILING_NVCC}' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path / "cache"))
    from engine.kernels import build
    monkeypatch.setattr(build, "nvcc", lambda: str(fake))
    return fake


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU and PyCUDA (run on the device)")


def _gpu_available() -> tuple[bool, str]:
    from engine.devices import gpu_client
    st = gpu_client.status()
    return st.available, st.reason


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return
    ok, reason = _gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"no GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    from engine.devices import gpu_client
    gpu_client.shutdown()
