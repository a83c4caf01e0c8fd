"""The Tensor cores page in headless Chromium at a projector's 1280x720: the fragment map's headline at
several frames of its animation (opened on a lane, stepped, scrubbed) against the recorded map, the
tables' cells against the engine's numbers, and a shared link reloaded. Screenshots go to
$MATMUL_EXPLORER_SCREENSHOTS."""
import pytest

from engine.metrics import tensor
from engine.plots.tensor import fragment_headline
from tests import browser

pytestmark = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
FRAGMENT = 1   # the page's second chart: hierarchy, fragment map, banks, speeds


def ready(page) -> None:
    page.wait_for_function("Array.from(document.querySelectorAll('h3')).some(h => h.textContent.includes('Who holds'))",
                           timeout=120000)
    browser.wait_for_chart(page, 4, 120000)
    browser.wait_idle(page)


def headline(page) -> str:
    """The fragment figure's headline as drawn now."""
    return page.evaluate("""(i) => Array.from(document.querySelectorAll('.js-plotly-plot')[i]
        .querySelectorAll('.scatterlayer .textpoint text')).map(t => t.textContent).find(t => /^lane \\d+ of 32/.test(t))""",
                         FRAGMENT)


def settled(page) -> str:
    last = headline(page)
    for _ in range(30):
        page.wait_for_timeout(150)
        now = headline(page)
        if now == last:
            return now
        last = now
    return last


def tables(page) -> list[list[list[str]]]:
    return page.evaluate("""() => Array.from(document.querySelectorAll("[data-testid='stTable'] table")).map(t =>
        Array.from(t.querySelectorAll('tbody tr')).map(tr => Array.from(tr.children).map(c => c.textContent.trim())))""")


def want(operand: str, lane: int) -> str:
    return fragment_headline(operand, lane, tensor.recorded_map(operand)[lane])


def test_the_fragment_map_steps_lane_by_lane_and_a_link_reopens_its_view(server, page, shots):
    page.goto(f"{server}/tensor_cores?operand=mma_a&lane=5&rung=mma_ldmatrix")
    ready(page)
    assert headline(page) == want("mma_a", 5) == ("lane 5 of 32 holds 8 elements of mma.sync A: rows 1, 9 × "
                                                  "columns 2, 3, 10, 11")
    assert page.get_by_text("equals", exact=True).count() == 1   # the recorded map is the PTX ISA's
    page.locator(".js-plotly-plot").nth(FRAGMENT).scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "tensor-fragment-lane5-1280x720.png"))
    browser.click_button(page, "Step ▶", FRAGMENT)
    assert settled(page) == want("mma_a", 6)
    browser.scrub(page, 1.0, FRAGMENT)
    assert settled(page) == want("mma_a", 31)
    page.screenshot(path=str(shots / "tensor-fragment-lane31-1280x720.png"))

    seed, instructions, banks = tables(page)
    assert [(row[0], row[-1]) for row in instructions] == [("wmma_warp", "2"), ("mma_ldmatrix", "1"), ("wgmma_tma", "1")]
    assert [row[3] for row in seed] == ["8,192 / 256 = 32", "131,072 / 4,096 = 32", "524,288 / 16,384 = 32"]
    assert banks == [["mma_ldmatrix", "256", "6,144", "6,144", "5,120"], ["mma_swizzled", "256", "1,024", "1,024", "0"]]
    page.locator("h3", has_text="rows on the banks").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "tensor-banks-1280x720.png"))
    assert "4 wavefronts per matrix" in " ".join(browser.figure_texts(page))

    page.reload()
    ready(page)
    assert "operand=mma_a" in page.url and "lane=5" in page.url and "rung=mma_ldmatrix" in page.url
    assert headline(page) == want("mma_a", 5)
    assert not page.errors, page.errors


def test_a_wmma_operand_says_its_layout_is_undocumented(server, page, shots):
    page.goto(f"{server}/tensor_cores?operand=wmma_c&lane=0")
    ready(page)
    assert headline(page) == want("wmma_c", 0)
    assert page.get_by_text("not documented", exact=True).count() == 1
    page.screenshot(path=str(shots / "tensor-top-1280x720.png"))
    page.locator("h3", has_text="Grid").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "tensor-hierarchy-1280x720.png"))
    page.locator("h3", has_text="TFLOP/s").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "tensor-speed-1280x720.png"))
    assert any("TFLOP/s at 4,096³" in t for t in browser.figure_texts(page))
    assert not page.errors, page.errors
