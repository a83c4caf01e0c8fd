"""A real app server and headless Chromium (Debian's, driven by Playwright), for tests and benchmarks."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def available() -> str | None:
    """None when a browser test can run, else why not."""
    if not CHROMIUM:
        return "Debian's chromium is not installed"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def app_server(env: dict | None = None):
    """`streamlit run app.py` on a free loopback port; yields its base URL."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
                             "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.25)
        else:
            raise RuntimeError("the app server did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@contextmanager
def chromium():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def wait_for_chart(page, count: int = 1, timeout_ms: int = 60000) -> None:
    """Until `count` Plotly charts have drawn (their div carries the figure)."""
    page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length >= {count}", timeout=timeout_ms)
    page.wait_for_function("Array.from(document.querySelectorAll('.js-plotly-plot')).every(d => d.data)",
                           timeout=timeout_ms)


def figure_texts(page) -> list[str]:
    """Titles and annotations of every drawn Plotly chart on the page."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(d =>
        [((d.layout.title || {}).text || '')].concat((d.layout.annotations || []).map(a => a.text)))""")
