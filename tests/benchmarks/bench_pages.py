"""Issue 3's page speed figures: server time per rerun (AppTest), first load and redraw in
headless Chromium, and the animation's frame rate in the browser. Prints its figures.

    python3 tests/benchmarks/bench_pages.py
"""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from streamlit.testing.v1 import AppTest  # noqa: E402

from tests import browser  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = {"coalescing": ("pages/coalescing.py", 0), "tile_phases": ("pages/tile_phases.py", 0),
         "bank_conflicts": ("pages/bank_conflicts.py", None)}


def server_side():
    print("--- server side (AppTest), CPU mode, one process")
    for name, (path, m_input) in PAGES.items():
        start = time.perf_counter()
        at = AppTest.from_file(APP, default_timeout=120)
        at.run()
        at.switch_page(path)
        at.run()
        first = time.perf_counter() - start
        reruns = []
        for value in (48, 56, 64) if m_input is not None else ():
            t = time.perf_counter()
            at.number_input[m_input].set_value(value).run()
            reruns.append(time.perf_counter() - t)
        if name == "bank_conflicts":
            for tile in (16, 32, 16):
                t = time.perf_counter()
                at.selectbox[1].set_value(tile).run()
                reruns.append(time.perf_counter() - t)
        assert not at.exception, at.exception
        print(f"{name:16} first load {first:5.2f} s (target < 3 s); control change -> rerun: "
              f"median {statistics.median(reruns):.2f} s, max {max(reruns):.2f} s (target < 1 s, sizes <= 64)")


FPS_JS = """async (ms) => {
  // Frames drawn per second while the animation plays: from the first frame event to the last one
  // (a short animation ends before `ms` is up; counting over all of `ms` would understate its rate).
  const gd = document.querySelector('.js-plotly-plot');
  const times = []; gd.on('plotly_animatingframe', () => times.push(performance.now()));
  const buttons = Array.from(document.querySelectorAll('.updatemenu-button'));
  buttons[0].dispatchEvent(new MouseEvent('click', {bubbles: true}));
  await new Promise(r => setTimeout(r, ms));
  return times.length > 1 ? (times.length - 1) * 1000 / (times[times.length - 1] - times[0]) : 0;
}"""


def _wait_text(page, text: str, t0: float, limit: float = 60) -> float:
    """Seconds from t0 until some drawn SVG text of a figure contains `text` (each change names text
    that only the new figure shows). The page may still be computing its whole-kernel tables below
    the figure then, with a spinner saying so: _idle() measures that too."""
    js = ("() => Array.from(document.querySelectorAll('.js-plotly-plot text')).some(t => t.textContent.includes("
          + repr(text) + "))")
    while not page.evaluate(js):
        if time.perf_counter() - t0 > limit:
            raise TimeoutError(f"never drawn: {text!r}")
        time.sleep(0.02)
    return time.perf_counter() - t0


def _idle(page, t0: float) -> float:
    """Seconds from t0 until the page's script has finished (Streamlit's running indicator is gone)."""
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=120000)
    return time.perf_counter() - t0


def _number(page, label: str, value: str, shows: str) -> float:
    box = page.get_by_label(label, exact=True).first
    t = time.perf_counter()
    box.fill(value)
    box.press("Enter")
    return _wait_text(page, shows, t)


def _open_expanders(page) -> None:
    """Parameters live in folded expanders (settings.parameter_inputs): opened first, as a person would."""
    opened = False
    for summary in page.locator("details:not([open]) > summary").all():
        if summary.is_visible():
            summary.click()
            opened = True
    if opened:
        page.wait_for_timeout(500)   # the expander's opening, before its controls take a click


def _choose(page, label: str, option: str, shows: str) -> float:
    _open_expanders(page)
    box = page.get_by_role("combobox", name=label, exact=True).first
    box.click()
    choice = page.locator("[role=option]").get_by_text(option, exact=True).first
    try:
        choice.wait_for(timeout=2000)
    except Exception:   # noqa: BLE001 - a click that only focused the select (it happens after a rerun): again
        box.press("ArrowDown")
    t = time.perf_counter()   # from the choice, as a person's change: the list opening is not the page's
    choice.click()
    return _wait_text(page, shows, t)


# Each page's control changes, as a person makes them, and what the redrawn figure then shows.
CHANGES = {
    "coalescing": [lambda p: _number(p, "M", "40", "A (40x16)"), lambda p: _number(p, "M", "64", "A (64x16)"),
                   lambda p: _number(p, "K", "128", "A (64x128)"),
                   lambda p: _choose(p, "Block", "16x16", "block 16x16"),
                   lambda p: _number(p, "N", "128", "B (128x128)")],
    "tile_phases": [lambda p: _choose(p, "TILE", "8", "phase 1 of 5"), lambda p: _number(p, "M", "128", "A (128x40)"),
                    lambda p: _choose(p, "TILE", "32", "phase 1 of 2"), lambda p: _number(p, "K", "128", "phase 1 of 4"),
                    lambda p: _number(p, "N", "128", "B (128x128)")],
    "bank_conflicts": [lambda p: _number(p, "K", "128", "load 1 of 256"),
                       lambda p: _choose(p, "PAD", "1", "TILE 32, PAD 1"),
                       lambda p: _choose(p, "TILE", "16", "TILE 16, PAD 1"),
                       lambda p: _choose(p, "TILE", "8", "TILE 8, PAD 1"),
                       lambda p: _choose(p, "PAD", "0", "TILE 8, PAD 0")],
}


def in_browser():
    reason = browser.available()
    if reason:
        print(f"--- browser: skipped ({reason})")
        return
    print("--- headless Chromium at 1280x720, CPU mode (warm compile cache)")
    with browser.app_server() as url, browser.chromium() as b:
        page = b.new_page(viewport={"width": 1280, "height": 720})
        # As a visitor arrives: Home, read until it has finished loading (its player script starts
        # loading the chart module meanwhile), then the pages.
        page.goto(url, wait_until="networkidle")
        page.wait_for_selector("h1")
        page.wait_for_timeout(1000)
        all_changes = []
        for name, changes in CHANGES.items():
            t = time.perf_counter()
            page.goto(f"{url}/{name}")
            browser.wait_for_chart(page)
            browser.wait_for_headline(page)
            first = time.perf_counter() - t
            times, idle = [], []
            for change in changes:
                t = time.perf_counter()
                times.append(change(page))
                idle.append(_idle(page, t))
            all_changes += times
            print(f"{name:16} first load to drawn figure {first:5.2f} s (target <= 3 s); control change -> redrawn "
                  f"figure: {', '.join(f'{x:.2f}' for x in times)} s (median {statistics.median(times):.2f}, "
                  f"max {max(times):.2f}; targets <= 1 s and <= 3 s); whole page done: median "
                  f"{statistics.median(idle):.2f} s, max {max(idle):.2f} s")
        print(f"all control changes: median {statistics.median(all_changes):.2f} s, max {max(all_changes):.2f} s")
        for name in CHANGES:   # a shared link opened in a browser that has never run the app
            fresh = b.new_context(viewport={"width": 1280, "height": 720})
            cold = fresh.new_page()
            t = time.perf_counter()
            cold.goto(f"{url}/{name}")
            browser.wait_for_chart(cold)
            browser.wait_for_headline(cold)
            print(f"{name:16} direct link in a fresh browser (empty cache) to drawn figure: "
                  f"{time.perf_counter() - t:.2f} s")
            fresh.close()
        for name, query in (("coalescing", "?m=64&n=64&k=64&speed=fast"), ("bank_conflicts", "?m=64&n=64&k=64"),
                            ("tile_phases", "?m=128&n=128&k=128&TILE=8")):
            page.goto(f"{url}/{name}{query}")
            browser.wait_for_chart(page)
            browser.wait_for_headline(page)
            # The page goes on computing its whole-kernel tables after the figure is drawn: measure the
            # frame rate once it is done, so the server does not compete with the browser for the cores.
            page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=120000)
            page.wait_for_timeout(500)
            frames = page.evaluate("() => document.querySelector('.js-plotly-plot')._transitionData._frames.length")
            # Frame rate at the fastest setting: the frame duration is the only limit we set.
            page.evaluate("() => { const gd = document.querySelector('.js-plotly-plot');"
                          " gd.layout.updatemenus[0].buttons[0].args[1].frame.duration = 20; }")
            fps = page.evaluate(FPS_JS, 3000)
            print(f"{name:16} animation: {frames} frames sent to the browser; played at {fps:.1f} frames/s "
                  "(target >= 20)")


if __name__ == "__main__":
    if "--browser-only" not in sys.argv:
        server_side()
    in_browser()
