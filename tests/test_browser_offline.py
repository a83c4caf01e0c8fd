"""The app works offline: loading any page in headless Chromium sends no request beyond the app's own
server (no font CDN for the tab icon, no usage statistics).

Page errors are printed, not asserted on, here: the page tests own them.
"""
import subprocess
import sys
from urllib.parse import urlparse

import pytest

from tests import browser

PAGES = ["", "coalescing", "tile_phases", "bank_conflicts", "benchmarks"]
LOCAL = {"127.0.0.1", "localhost"}


def test_streamlit_reads_the_repository_config():
    """`streamlit run app.py` gets the offline settings from .streamlit/config.toml (the browser test's
    server is started with usage statistics switched off on its command line, so this checks the file)."""
    code = ("from streamlit import config; "
            "print(config.get_option('browser.gatherUsageStats'), config.get_option('client.toolbarMode'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=browser.ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "viewer"]


@pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
def test_no_page_requests_anything_outside_the_app_server():
    external, errors = {}, {}
    with browser.app_server({"MATMUL_EXPLORER_GPU": "0"}) as url, browser.chromium() as b:
        for name in PAGES:
            page = b.new_page(viewport={"width": 1400, "height": 900})
            hosts = external.setdefault(name or "/", set())
            page.on("request", lambda r, hosts=hosts: urlparse(r.url).hostname not in LOCAL and hosts.add(r.url))
            page.on("pageerror", lambda e, name=name: errors.setdefault(name or "/", []).append(str(e)))
            page.goto(f"{url}/{name}")
            page.wait_for_selector("h1", timeout=60000)
            if name:
                browser.wait_for_chart(page)
            page.wait_for_timeout(1500)   # the tab icon and the usage-statistics call come after the first draw
            page.close()
    for name, errs in errors.items():
        print(f"page errors on {name}: {errs}")
    assert not any(external.values()), {k: sorted(v) for k, v in external.items() if v}
