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
  const gd = document.querySelector('.js-plotly-plot');
  let frames = 0; gd.on('plotly_animatingframe', () => frames++);
  const buttons = Array.from(document.querySelectorAll('.updatemenu-button'));
  buttons[0].dispatchEvent(new MouseEvent('click', {bubbles: true}));
  await new Promise(r => setTimeout(r, ms));
  return frames * 1000 / ms;
}"""


def in_browser():
    reason = browser.available()
    if reason:
        print(f"--- browser: skipped ({reason})")
        return
    print("--- headless Chromium, CPU mode")
    with browser.app_server() as url, browser.chromium() as b:
        page = b.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(url)
        page.wait_for_selector("h1")
        for name in PAGES:
            t = time.perf_counter()
            page.goto(f"{url}/{name}")
            browser.wait_for_chart(page)
            print(f"{name:16} first load to drawn figure: {time.perf_counter() - t:.2f} s")
        page.goto(f"{url}/coalescing?m=32&n=32&k=16")
        browser.wait_for_chart(page)
        times = []
        for value in ("40", "48", "64"):
            box = page.get_by_label("M (rows of A and C)")
            t = time.perf_counter()
            box.fill(value)
            box.press("Enter")
            drawn = ("() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(d => d.layout &&"
                     f" (d.layout.annotations || []).some(a => (a.text || '').startsWith('A ({value}x')))")
            while not page.evaluate(drawn):
                if time.perf_counter() - t > 30:
                    raise TimeoutError(f"redraw not seen: {drawn} -> {page.evaluate(drawn)}; {browser.figure_texts(page)[:3]}")
                time.sleep(0.02)
            times.append(time.perf_counter() - t)
        print(f"coalescing: M changed -> new figure drawn: median {statistics.median(times):.2f} s, "
              f"max {max(times):.2f} s")
        for name, query in (("coalescing", "?m=64&n=64&k=64&speed=fast"), ("bank_conflicts", "?size=64")):
            page.goto(f"{url}/{name}{query}")
            browser.wait_for_chart(page)
            frames = page.evaluate("() => document.querySelector('.js-plotly-plot')._transitionData ? "
                                   "document.querySelector('.js-plotly-plot')._transitionData._frames.length : 0")
            # Frame rate at the fastest setting: the frame duration is the only limit we set.
            page.evaluate("() => { const gd = document.querySelector('.js-plotly-plot');"
                          " gd.layout.updatemenus[0].buttons[0].args[1].frame.duration = 20; }")
            fps = page.evaluate(FPS_JS, 3000)
            print(f"{name:16} animation: {frames} frames sent to the browser; played at {fps:.1f} frames/s "
                  "(target >= 20)")


if __name__ == "__main__":
    server_side()
    in_browser()
