"""The frame an animation stands on, in the page's link, in headless Chromium at 1280x720: stepped,
scrubbed or played, the figure's frame goes into the address (?step= on Coalescing and Bank
conflicts, ?phase= on Tile phases); a reload, a copied link, a rerun (the speed changed) and a visit
to another page and back open on it. What is checked is what is drawn: the headline's text and the
slider's position. Screenshots go to $MATMUL_EXPLORER_SCREENSHOTS."""
import re

import pytest

from tests import browser
from tests.test_browser_pages import go_to, open_page, page_ready

pytestmark = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))


def link(page, key: str) -> str | None:
    return page.evaluate(f"() => new URL(location.href).searchParams.get('{key}')")


def link_on(page, key: str, value: str) -> None:
    """Until the address names `value` (the player writes it a few times a second once the figure stands still)."""
    page.wait_for_function(f"() => new URL(location.href).searchParams.get('{key}') === '{value}'", timeout=10000)


def instruction(page) -> int:
    """The instruction number the drawn headline names ('... instruction 7 of 33 ...')."""
    heads = " ".join(browser.wait_settled(page)["heads"])
    return int(re.search(r"(?:instruction|load|store) ([\d,]+) of", heads).group(1).replace(",", ""))


def test_coalescing_keeps_the_instruction_shown_in_its_link(server, page, shots):
    open_page(page, f"{server}/coalescing?step=5&speed=fast")
    assert instruction(page) == 5 and browser.shown(page)["active"] == 4
    for _ in range(2):
        browser.click_button(page, "Step ▶")
    assert instruction(page) == 7
    link_on(page, "step", "7")
    page.screenshot(path=str(shots / "coalescing-step7-1280x720.png"))
    page.reload()
    page_ready(page)
    assert instruction(page) == 7 and browser.shown(page)["active"] == 6
    # A rerun (another control changed) draws the figure anew: on the instruction shown, not the first.
    browser.click_button(page, "◀ Step")
    assert instruction(page) == 6
    link_on(page, "step", "6")
    page.get_by_role("slider", name="Speed").first.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => new URL(location.href).searchParams.get('speed') === 'normal'", timeout=30000)
    browser.wait_idle(page)
    page.wait_for_timeout(800)
    assert instruction(page) == 6 and link(page, "step") == "6"
    assert not page.errors, page.errors


def test_tile_phases_in_presenter_mode_keeps_the_phase_scrubbed_to(server, page, shots):
    open_page(page, f"{server}/tile_phases?presenter=1&phase=2-compute")
    drawn = browser.wait_settled(page)
    assert drawn["active"] == 3 and "phase 2 of" in " ".join(drawn["heads"]) and "compute" in " ".join(drawn["heads"])
    browser.scrub(page, 1.0)
    drawn = browser.wait_settled(page)
    last = drawn["frames"] - 1
    assert drawn["active"] == last
    phases = last // 2 + 1
    link_on(page, "phase", f"{phases}-compute")
    page.screenshot(path=str(shots / "tile-phases-last-presenter-1280x720.png"))
    # C's colour bar stays off the slider (it lay across the rail's labels, '2 compute' through its ticks)
    assert page.evaluate("""() => { const gd = document.querySelector('.js-plotly-plot');
        const bar = Array.from(gd.querySelectorAll('.colorbar text, .colorbar .cbfills rect'))
            .map(e => e.getBoundingClientRect()).filter(r => r.height > 0);
        const rail = gd.querySelector('.slider-rail-rect').getBoundingClientRect();
        return bar.length > 0 && Math.max(...bar.map(r => r.bottom)) <= rail.top; }""")
    page.reload()
    page_ready(page)
    drawn = browser.wait_settled(page)
    assert drawn["active"] == last and f"phase {phases} of {phases}" in " ".join(drawn["heads"])
    assert not page.errors, page.errors


def test_bank_conflicts_opens_where_it_was_left_after_another_page(server, page):
    open_page(page, f"{server}/bank_conflicts?m=32&n=32&k=32")
    assert browser.shown(page)["active"] == 0
    for _ in range(3):
        browser.click_button(page, "Step ▶")
    shown = instruction(page)
    assert browser.shown(page)["active"] == 3
    link_on(page, "step", str(shown))
    go_to(page, "Coalescing")
    assert link(page, "step") in (None, "1")   # Coalescing's own frame, not the bank figure's
    go_to(page, "Bank conflicts")
    assert instruction(page) == shown and browser.shown(page)["active"] == 3
    link_on(page, "step", str(shown))
    assert not page.errors, page.errors
