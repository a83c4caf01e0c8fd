"""How long presenter mode takes to switch on and off on every page, in headless Chromium at 1280x720
against a real app server (CPU mode): from the click on the sidebar's toggle to the page redrawn (its
title at the presenter size, or back, nothing stale and the script finished). Target: <= 1 s. Each
page is opened and toggled once first (its traces and figures then are in the server's caches, as
for a class that has the page open), then timed. Prints its figures.

    python3 tests/benchmarks/presenter_toggle.py [--repeat N] [--pages benchmarks ladder ...]
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests import browser  # noqa: E402

PAGES = ["", "coalescing", "tile_phases", "bank_conflicts", "ladder", "tensor_cores", "benchmarks"]
# The title's size in each mode (pages/lib/ui.py: 2.2rem, 1.7rem presenting)
TITLE_PX = {False: 35.2, True: 27.2}


def redrawn(page, presenter: bool) -> None:
    page.wait_for_function(
        "(px) => { const h = document.querySelector('h1'); return h && Math.abs(parseFloat(getComputedStyle(h).fontSize) - px) < 0.5"
        " && !document.querySelector('[data-testid=stStatusWidget]') && !document.querySelector('[data-stale=\"true\"]'); }",
        arg=TITLE_PX[presenter], timeout=120000, polling=20)


def toggle(page, presenter: bool) -> float:
    bar = page.locator("[data-testid='stSidebar']")
    if bar.get_attribute("data-collapsed") == "true":
        page.locator("[data-testid='stExpandSidebarButton']").first.click()
        page.wait_for_timeout(600)
    switch = page.get_by_text("Presenter mode (projector)")
    started = time.perf_counter()
    switch.click()
    redrawn(page, presenter)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pages", nargs="*", default=PAGES, help="some of the pages only (home is '')")
    args = parser.parse_args()
    worst = 0.0
    with browser.app_server({"MATMUL_EXPLORER_GPU": "0"}) as url, browser.chromium() as chrome:
        context = chrome.new_context(viewport=browser.VIEW)
        page = context.new_page()
        print(f"presenter mode on and off, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        for name in args.pages:
            page.goto(f"{url}/{name}?presenter=0")
            page.wait_for_selector("h1", timeout=60000)
            browser.wait_idle(page, 180000)
            toggle(page, True)
            toggle(page, False)   # warm: the page's figures are in the server's caches in both sizes
            on, off = [], []
            for _ in range(args.repeat):
                on.append(toggle(page, True))
                off.append(toggle(page, False))
            worst = max(worst, *on, *off)
            print(f"  {name or 'home':15} on {statistics.median(on):.2f} s (worst {max(on):.2f})  "
                  f"off {statistics.median(off):.2f} s (worst {max(off):.2f})")
        context.close()
    print(f"worst {worst:.2f} s: target <= 1 s {'met' if worst <= 1 else 'MISSED'}; load average "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
