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


def duration(page) -> int:
    """The milliseconds per frame the drawn figure's Play button plays at: the speed the server drew it with."""
    return page.evaluate("() => document.querySelector('.js-plotly-plot').layout.updatemenus[0].buttons[0].args[1]"
                         ".frame.duration")


def test_a_control_changed_straight_after_a_step_opens_on_the_frame_stepped_to(server, page):
    """The server hears of the frame before the control's rerun, however soon after the step it comes.
    Before, the rerun carried the frontend's copy of the query string (the last frame the server had
    opened): the figure was drawn anew there, and the player's restore lost its race in 1 of 5 to 8."""
    open_page(page, f"{server}/coalescing?speed=normal")
    speed = page.get_by_role("slider", name="Speed").first
    for i, pause in enumerate([0, 0.05, 0, 0.2, 0, 0.5, 0, 0.1]):
        browser.click_button(page, "Step ▶")
        page.wait_for_timeout(pause * 1000)
        was = duration(page)
        speed.focus()
        page.keyboard.press("ArrowLeft" if i % 2 else "ArrowRight")
        page.wait_for_function(f"() => document.querySelector('.js-plotly-plot').layout.updatemenus[0].buttons[0]"
                               f".args[1].frame.duration !== {was}", timeout=30000)
        drawn = browser.shown(page)["active"]   # as drawn anew: no frame of another to be corrected later
        browser.wait_idle(page)
        page.wait_for_timeout(400)
        assert drawn == browser.shown(page)["active"] == i + 1 and instruction(page) == i + 2, (i, pause)
        link_on(page, "step", str(i + 2))
    assert not page.errors, page.errors


def test_a_control_changed_while_playing_plays_on_from_where_it_was(server, page):
    """Before, the rerun drew the figure on the last frame it had stood still on, and stopped it. Then
    it played on, but from the frame reported as the control was touched while the old figure had
    played on during the rerun: 12, 8, 10 ... a step back of up to a second. Every frame drawn from the
    touch on is now at or after the one before."""
    open_page(page, f"{server}/coalescing?speed=normal&m=32&n=32&k=64")
    browser.click_button(page, "Play")
    page.wait_for_function("() => document.querySelector('.js-plotly-plot')._fullLayout.sliders[0].active >= 2",
                           timeout=20000)
    was = duration(page)
    page.evaluate("""() => { window.__seen = []; window.__watch = setInterval(() => {
        const gd = document.querySelector('.js-plotly-plot');
        if (gd && gd._fullLayout) window.__seen.push(gd._fullLayout.sliders[0].active); }, 20); }""")
    page.get_by_role("slider", name="Speed").first.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"() => document.querySelector('.js-plotly-plot').layout.updatemenus[0].buttons[0]"
                           f".args[1].frame.duration !== {was}", timeout=30000)
    page.wait_for_timeout(2000)
    seen = page.evaluate("() => { clearInterval(window.__watch); return window.__seen; }")
    assert all(b >= a for a, b in zip(seen, seen[1:])), seen
    assert seen[-1] > seen[0] + 2, seen   # playing on, at the new speed
    assert not page.errors, page.errors


def test_an_arrow_on_a_focused_control_moves_the_control_not_the_figure(server, page):
    """Left/Right on the focused Speed slider is the slider's (here at its end already, slow: nothing
    moves), not a step of the figure the mouse was last over."""
    open_page(page, f"{server}/coalescing?speed=slow")
    page.locator(".js-plotly-plot").first.hover()
    page.keyboard.press("ArrowRight")   # the figure's own step key, with the focus on nothing
    page.wait_for_function("() => document.querySelector('.js-plotly-plot')._fullLayout.sliders[0].active === 1")
    page.get_by_role("slider", name="Speed").first.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_timeout(800)
    assert browser.shown(page)["active"] == 1
    assert link(page, "speed") == "slow"
    assert not page.errors, page.errors


def test_coming_back_by_the_sidebar_draws_the_frame_left_on_from_the_start(server, page):
    """The page is drawn on the frame it was left on, not on the one the server last opened and then moved
    (a flash of 0.2 to 1.4 s before). Left straight after the steps, before any standstill was polled."""
    open_page(page, f"{server}/tile_phases")
    for _ in range(3):
        browser.click_button(page, "Step ▶")
    go_to(page, "Coalescing")
    # every 20 ms from here: which frame the Tile phases figure shows, once it is there
    page.evaluate("""() => { window.__seen = []; window.__watch = setInterval(() => {
        const gd = document.querySelector('.js-plotly-plot');
        if (gd && gd._fullLayout && document.querySelector('h1').textContent.includes('Tile phases'))
            window.__seen.push(gd._fullLayout.sliders[0].active); }, 20); }""")
    go_to(page, "Tile phases")
    page.wait_for_timeout(1500)
    seen = page.evaluate("() => { clearInterval(window.__watch); return window.__seen; }")
    assert seen and set(seen) == {3}, seen
    link_on(page, "phase", "2-compute")
    assert not page.errors, page.errors


def test_a_figure_left_over_from_the_page_before_reports_to_its_own_page(server, page):
    """Between a move to another page (Back) and Streamlit clearing the page left, its figure is still
    there under the next page's address: its frame had been reported as that page's (both name it ?step=)."""
    open_page(page, f"{server}/coalescing")
    for _ in range(2):
        browser.click_button(page, "Step ▶")
    page.wait_for_function("() => (document.querySelector('.st-key-_frames_shown input') || {}).value"
                           " === JSON.stringify({coalescing: {step: '3'}})", timeout=10000)
    # the address of another page, with the Coalescing figure still drawn (no rerun: replaceState)
    page.evaluate("() => history.replaceState(history.state, '', location.pathname.replace('coalescing', "
                  "'bank_conflicts') + location.search)")
    browser.click_button(page, "Step ▶")
    page.wait_for_timeout(1000)
    shown = page.evaluate("() => JSON.parse(document.querySelector('.st-key-_frames_shown input').value)")
    assert shown == {"coalescing": {"step": "4"}}, shown
    assert link(page, "step") == "3"   # nor is the other page's address given this figure's frame
    assert not page.errors, page.errors


def test_leaving_a_page_while_it_plays_and_coming_back_draws_it_still(server, page):
    """Playing on after a redraw is for a control changed mid-play, not for a move to another page and back."""
    open_page(page, f"{server}/coalescing?speed=slow&m=32&n=32&k=64")
    browser.click_button(page, "Play")
    page.wait_for_function("() => document.querySelector('.js-plotly-plot')._fullLayout.sliders[0].active >= 1",
                           timeout=20000)
    go_to(page, "Tile phases")
    go_to(page, "Coalescing")
    first = browser.shown(page)["active"]
    page.wait_for_timeout(2500)   # slow: a frame every 700 ms
    assert browser.shown(page)["active"] == first
    assert not page.errors, page.errors


# The bands' groups before their listings' text in the SVG (Coalescing's two listings share a subplot:
# band, text, band, text), i.e. drawn under it: Plotly draws a subplot's
# traces in their groups' order, and its transitions move the groups a frame updates to the end.
BAND_UNDER_TEXT = """() => Array.from(document.querySelector('.js-plotly-plot').querySelectorAll('.scatterlayer'))
  .map(layer => Array.from(layer.children).map(g => (g.querySelector('.js-fill') || {getAttribute: () => ''})
    .getAttribute('d') ? 'band' : g.querySelectorAll('.textpoint').length > 2 ? 'text' : ''))
  .filter(kinds => kinds.includes('band') && kinds.includes('text'))
  .map(kinds => kinds.lastIndexOf('band') < kinds.lastIndexOf('text'))"""


@pytest.mark.parametrize("address", ["coalescing?presenter=1", "bank_conflicts", "tile_phases?presenter=1"])
def test_the_lit_source_line_stays_under_its_text_while_stepping(server, page, shots, address):
    """From the first Step on, the yellow band was drawn over the listing's text: the line it lit, the
    one the class should read, was the palest on the screen (about 1.9:1 on a projector)."""
    open_page(page, f"{server}/{address}")
    assert page.evaluate(BAND_UNDER_TEXT) and all(page.evaluate(BAND_UNDER_TEXT))
    for _ in range(3):
        browser.click_button(page, "Step ▶")
        browser.wait_settled(page)
        assert all(page.evaluate(BAND_UNDER_TEXT)), page.evaluate(BAND_UNDER_TEXT)
    browser.scrub(page, 0.6)
    browser.wait_settled(page)
    assert all(page.evaluate(BAND_UNDER_TEXT))
    page.screenshot(path=str(shots / f"lit-line-{address.split('?')[0]}.png"))
    assert not page.errors, page.errors


REDRAW_JS = """async () => { const gd = document.querySelector('.js-plotly-plot');
    const layout = JSON.parse(JSON.stringify(gd.layout));   // a new object, as a rerun's figure is
    delete layout.__matmulSeen;
    const frames = gd._transitionData._frames.map(f => ({name: f.name, data: f.data, layout: f.layout}));
    await Plotly.react(gd, {data: JSON.parse(JSON.stringify(gd.data)), layout: layout, frames: frames}); }"""
ACTIVE_JS = "() => document.querySelector('.js-plotly-plot')._fullLayout.sliders[0].active"


def test_a_figure_playing_as_the_page_redraws_it_twice_plays_on(server, page):
    """Streamlit draws a rerun's figure with two or three Plotly.react calls tens of milliseconds apart.
    The player stopped the figure's animation at each and played it on after the first: the next one
    stopped it for good, in 1 rerun in 3 (a play-through: the speed or the warp changed while playing)."""
    open_page(page, f"{server}/bank_conflicts?speed=fast")
    browser.click_button(page, "Play")
    page.wait_for_function(f"() => ({ACTIVE_JS})() >= 1", timeout=20000)
    page.evaluate(REDRAW_JS)
    page.wait_for_function("() => !!document.querySelector('.js-plotly-plot')._transitionData._animationRaf", timeout=5000)
    page.evaluate(REDRAW_JS)   # the second draw, with the figure playing on after the first
    before = page.evaluate(ACTIVE_JS)
    page.wait_for_timeout(2000)
    assert page.evaluate(ACTIVE_JS) > before, "the figure stopped at the second draw of one rerun"
    assert not page.errors, page.errors[:3]


def test_a_figure_drawn_anew_while_it_plays_leaves_no_animation_running(server, page):
    """Streamlit hands a rerun's figure to Plotly.react, which makes the figure's frames anew and leaves
    a playing animation's loop running on the old ones: it drew the old figure's frames over the new
    one, and once Streamlit purged the figure (the element gone) it threw TypeErrors ('_currentFrame'
    of undefined, 'e.emit is not a function') sixty times a second, on every page after it, until a
    reload; each further change while playing added a loop (a play-through: M changed while playing)."""
    open_page(page, f"{server}/bank_conflicts?speed=fast")
    browser.click_button(page, "Play")
    page.wait_for_function("() => document.querySelector('.js-plotly-plot')._fullLayout.sliders[0].active >= 1",
                           timeout=20000)
    playing = page.evaluate("""async () => { const gd = document.querySelector('.js-plotly-plot');
        const playing = !!gd._transitionData._animationRaf;
        const frames = gd._transitionData._frames.map(f => ({name: f.name, data: f.data}));
        await Plotly.react(gd, {data: gd.data, layout: gd.layout, frames: frames});   // as Streamlit does
        const still = gd._fullLayout.sliders[0].active;
        await new Promise(r => setTimeout(r, 500));
        const moved = gd._fullLayout.sliders[0].active !== still;   // the old loop playing on
        Plotly.purge(gd);
        return [playing, moved]; }""")
    assert playing[0], "the figure was not playing"
    page.wait_for_timeout(1000)
    assert not page.errors, page.errors[:3]
    assert not playing[1], "the figure drawn anew went on playing the old figure's frames"
