"""The real pages in headless Chromium: every page renders with its figure; 20 sessions at once.

Screenshots go to $MATMUL_EXPLORER_SCREENSHOTS (CI: screenshots/) to be looked at.
"""
import pytest

from tests import browser

pytestmark = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
PAGES = [("home", 0), ("coalescing", 1), ("tile_phases", 2), ("bank_conflicts", 2), ("benchmarks", 1)]


@pytest.mark.parametrize("name, charts", PAGES, ids=[p[0] for p in PAGES])
def test_page_renders_in_chromium(server, shots, name, charts):
    with browser.chromium() as b:
        page = b.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{server}/{'' if name == 'home' else name}")   # Home is the default page, at /
        page.wait_for_selector("h1", timeout=60000)
        if charts:
            browser.wait_for_chart(page, charts)
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        assert page.locator("[data-testid='stException']").count() == 0
        assert page.get_by_text("Page not found").count() == 0
        body = page.inner_text("body")
        assert "CPU mode" in body or "GPU mode" in body


def test_twenty_sessions_at_once_each_get_their_own_pictures(server):
    """20 tabs (20 sessions of one server) opened together, each with its own view."""
    sizes = [16 + 4 * i for i in range(20)]
    with browser.chromium() as b:
        context = b.new_context()
        pages = []
        for size in sizes:   # start all loads before waiting for any
            page = context.new_page()
            page.goto(f"{server}/coalescing?kernel=naive_x_cols&compare=(none)&m={size}&n=32&k=8&block=32x8",
                      wait_until="commit")
            pages.append(page)
        for size, page in zip(sizes, pages):
            browser.wait_for_chart(page, timeout_ms=180000)
            joined = " ".join(browser.figure_texts(page))
            assert f"A ({size}x8)" in joined, joined[:300]
            browser.wait_for_headline(page)
            assert any("1 sector in" in h for h in browser.shown(page)["heads"]), browser.shown(page)["heads"]
            assert page.locator("[data-testid='stException']").count() == 0
