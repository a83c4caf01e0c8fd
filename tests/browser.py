"""A real app server and headless Chromium (Debian's, driven by Playwright), for tests and benchmarks."""
from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path

from tests import server

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:   # no browser tests then (available() says why)
    PlaywrightTimeout = TimeoutError

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
VIEW = {"width": 1280, "height": 720}   # a projector's screen: what the browser tests look at
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


@contextmanager
def app_server(env: dict | None = None):
    """`streamlit run app.py` on a free loopback port; yields its base URL."""
    port = server.free_port()
    proc = server.start(port, env)
    try:
        yield f"http://127.0.0.1:{port}"
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


# ---------------------------------------------------------------- what an animated figure displays
# These read the drawn SVG (text nodes, bounding boxes), not the figure data the server sent, so they
# see what a person sees while the animation moves.

HEADLINE = r"/(instruction|load|store) [\d,]+ of|phase \d+ of/"
SHOWN_JS = """(i) => {
  const HEADLINE = """ + HEADLINE + """;
  const gd = document.querySelectorAll('.js-plotly-plot')[i];
  if (!gd || !gd._fullLayout || !gd._transitionData) return null;   // between a rerun's charts
  const texts = Array.from(gd.querySelectorAll('.scatterlayer .textpoint text'));
  const heads = texts.map(t => t.textContent).filter(t => HEADLINE.test(t));
  const box = (el) => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  // The source highlight is the band filled yellow (engine/plots/style.py HIGHLIGHT); other fills are tiles.
  const bands = Array.from(gd.querySelectorAll('.scatterlayer path.js-fill'))
    .filter(p => /255,\\s*200,\\s*0/.test(p.style.fill || '')).map(box).filter(b => b.bottom - b.top > 2);
  const code = texts.filter(t => /^\\s*\\d+  /.test(t.textContent)).map(t => ({line: parseInt(t.textContent), ...box(t)}));
  const lit = bands.map(b => code.filter(c => (c.top + c.bottom) / 2 > b.top && (c.top + c.bottom) / 2 < b.bottom)
                                 .map(c => c.line)[0]);
  const slider = (gd._fullLayout.sliders || [])[0];
  return {heads, lit, active: slider ? slider.active : null, shapes: gd.querySelectorAll('.shapelayer path').length,
          plot: box(gd), codeRight: Math.max(0, ...code.map(c => c.right)), frames: (gd._transitionData._frames || []).length};
}"""


def shown(page, index: int = 0, timeout_ms: int = 30000) -> dict:
    """The headlines, the highlighted source line of each panel, the slider position and the number
    of drawn layout shapes of the index-th figure, as displayed now. A rerun replaces its charts a
    moment after the last run's are gone (a page opened by Back had none for an instant, and the
    read failed on it): then it waits for the figure to be drawn again."""
    for _ in range(timeout_ms // 100):
        found = page.evaluate(SHOWN_JS, index)
        if found is not None:
            return found
        page.wait_for_timeout(100)
    raise AssertionError(f"figure {index} was not drawn within {timeout_ms} ms")


def wait_for_headline(page, timeout_ms: int = 60000) -> None:
    """Until an animated figure's headline has been drawn."""
    page.wait_for_function("() => Array.from(document.querySelectorAll('.textpoint text')).some(t => "
                           + HEADLINE + ".test(t.textContent))", timeout=timeout_ms)


def wait_idle(page, timeout_ms: int = 120000) -> None:
    """Until the page's script has finished (Streamlit's running indicator gone): the tables below a
    figure are still being computed after it is drawn, and what they add moves the page about.
    The running indicator shows only after a moment, so a rerun that has begun (a new title drawn)
    can look idle while the last run's charts are still on the page: those carry data-stale="true"
    until the new run replaces them, so both are waited for."""
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')"
                           " && !document.querySelector('[data-stale=\"true\"]')", timeout=timeout_ms)


def click_button(page, label: str, index: int = 0) -> None:
    """Clicks one of a figure's animation buttons (▶ Play, ❚❚ Pause, ◀ Step, Step ▶) like a person."""
    plot = page.locator(".js-plotly-plot").nth(index)
    plot.locator(".updatemenu-button", has_text=label).click()


def scrub(page, fraction: float, index: int = 0) -> None:
    """Clicks the slider's rail at `fraction` of its length, as a person scrubbing does."""
    rail = page.locator(".js-plotly-plot").nth(index).locator(".slider-rail-rect")
    rail.scroll_into_view_if_needed()
    box = rail.bounding_box()
    page.mouse.click(box["x"] + 8 + fraction * (box["width"] - 16), box["y"] + box["height"] / 2)


def wait_settled(page, index: int = 0, timeout_ms: int = 5000) -> dict:
    """Until two reads 150 ms apart agree (an animation step has finished drawing)."""
    last = shown(page, index)
    for _ in range(timeout_ms // 150):
        page.wait_for_timeout(150)
        now = shown(page, index)
        if now == last:
            return now
        last = now
    return last


def choose(page, label: str, option: str, exact: bool = True, unfold: str | None = None, tries: int = 6) -> None:
    """Picks `option` in the select labelled `label` as a person does: opens its list, clicks the option.
    `unfold`: the text of the folded group holding the select, clicked open first. A list opened while
    that group is still unfolding, or while a rerun redraws the controls (which may fold the group
    again), closes at once: seen on a loaded 2-core CI machine. So each step is retried until the
    option shows."""
    box = page.get_by_role("combobox", name=label, exact=True).first
    want = page.get_by_role("option", name=option, exact=exact).first
    for _ in range(tries):
        try:
            if unfold is not None and not box.is_visible():
                page.get_by_text(unfold).first.click()
            box.wait_for(state="visible", timeout=5000)
            if not want.is_visible():
                box.click(timeout=5000)
            want.wait_for(state="visible", timeout=3000)
            want.click(timeout=3000)
            return
        except PlaywrightTimeout:   # folded or closed again by a rerun: once more
            continue
    raise AssertionError(f"the option {option!r} of {label!r} never showed in {tries} tries")
