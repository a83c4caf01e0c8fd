"""The Ladder page in headless Chromium at a projector's 1280x720: what is displayed (the rung's
title, the table's cells against the engine's numbers, the diff's highlighted lines), a shared link
reloaded, the rung changed from its select. Screenshots go to $MATMUL_EXPLORER_SCREENSHOTS."""
import pytest

from engine.kernels import registry, sass
from engine.kernels.problem import make_problem
from engine.metrics import analysis, rung_counts, rung_diff
from engine.plots import style
from engine.tracing import tracer
from tests import browser

pytestmark = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
VIEW = browser.VIEW   # `chrome` and `page` (a fresh page of this size per test): tests/conftest.py


def ready(page, rung: str) -> None:
    """Until the rung's title, the table and both charts are drawn and the script has finished."""
    title = registry.get(rung).title
    page.wait_for_function(f"Array.from(document.querySelectorAll('h3')).some(h => h.textContent.includes({title!r}))",
                           timeout=120000)
    page.wait_for_selector("[data-testid='stTable'] table", timeout=120000)
    browser.wait_for_chart(page, 2, 120000)
    browser.wait_idle(page)


def shown_table(page) -> dict[str, dict[str, str]]:
    """The metrics table as displayed: {rung: {metric: cell}}."""
    head, rows = page.evaluate("""() => {
        const t = document.querySelector("[data-testid='stTable'] table");
        const head = Array.from(t.querySelectorAll('thead tr:last-child th')).map(th => th.textContent.trim());
        const rows = Array.from(t.querySelectorAll('tbody tr')).map(tr => Array.from(tr.children).map(c => c.textContent.trim()));
        return [head, rows];
    }""")
    rungs = head[-len(registry.LADDER_RUNGS):]
    return {r: {row[0]: row[1 + i] for row in rows} for i, r in enumerate(rungs)}


def engine_column(rung: str, size: int | tuple[int, int, int], params: dict[str, int] | None = None) -> dict[str, str]:
    """The rung's column of the metrics table, from the engine: at size³ (or M x N x K), with params."""
    m, n, k = (size,) * 3 if isinstance(size, int) else size
    t = tracer.trace(rung, make_problem(m, n, k, block=registry.get(rung).default_block, params=params or {}),
                     [(0, 0)], "cpu")
    listing = sass.memory_instructions(registry.get(rung).launches[-1].file, t.problem.params)
    return rung_counts.metrics_table({rung: rung_counts.rung_counts(t, analysis.warp_instructions(t), (0, 0),
                                                                    listing)})[rung].to_dict()


def listing(page) -> dict:
    return page.evaluate("""() => {
        const rows = Array.from(document.querySelectorAll('.ladder-source tr.changed'));
        return {changed: rows.map(r => parseInt(r.dataset.line)),
                fill: rows.length ? getComputedStyle(rows[0]).backgroundColor : '',
                summary: (document.querySelector('.ladder-changes') || {}).textContent || '',
                box: (() => { const r = document.querySelector('.ladder-source').getBoundingClientRect();
                              return {left: r.left, right: r.right}; })()};
    }""")


def test_the_ladder_shows_the_rung_its_diff_and_the_engines_counts_and_survives_a_reload(server, page, shots):
    page.goto(f"{server}/ladder?rung=warptile&m=256&n=256&k=256")
    ready(page, "warptile")
    assert page.locator("h3", has_text=f"Rung 5 of {len(registry.LADDER_RUNGS)}: Warp tiling").count() == 1
    page.screenshot(path=str(shots / "ladder-warptile-1280x720.png"))

    src = rung_diff.rung_source("warptile")
    code = sorted(n for n in src.changed if n > src.header_lines)
    shown = listing(page)
    assert shown["changed"] == code
    assert shown["fill"].replace(" ", "") == style.HIGHLIGHT.replace(" ", "")   # the one highlight colour
    assert "Changed from vectorized.cu" in shown["summary"]
    assert shown["box"]["right"] <= VIEW["width"]

    table = shown_table(page)
    for rung in ("blocktile_2d", "warptile"):
        want = engine_column(rung, 256)
        assert table[rung] == want, rung
    # Its lesson, as the hardware has it: no bank conflicts in its loads, 3 wavefronts each on average
    # (8 lanes at a time for B's fragments), and its transposed stores conflict.
    assert table["warptile"]["bank conflicts per shared load, as compiled"] == "0"
    assert table["warptile"]["wavefronts per shared load, as compiled"] == "3"
    assert float(table["warptile"]["bank conflicts per shared store"]) > 1
    # blocktile_2d: its loads conflict as written, not as compiled (nvcc merged them into LDS.128).
    assert table["blocktile_2d"]["bank conflicts per shared load, as written"] == "1"
    assert table["blocktile_2d"]["bank conflicts per shared load, as compiled"] == "0"
    page.locator("[data-testid='stTable']").first.scroll_into_view_if_needed()   # the metrics table, not the Nsight view's
    page.screenshot(path=str(shots / "ladder-table-1280x720.png"))

    page.reload()
    ready(page, "warptile")
    assert "rung=warptile" in page.url and all(f"{d}=256" in page.url for d in "mnk")
    assert page.get_by_role("combobox", name="Rung", exact=True).first.input_value().startswith("5. warptile")
    assert listing(page)["changed"] == code
    assert not page.errors, page.errors


def test_choosing_a_rung_redraws_the_page_and_the_link(server, page, shots):
    page.goto(f"{server}/ladder?m=256&n=256&k=256")
    ready(page, "blocktile_1d")
    browser.choose(page, "Rung", "6. double_buffered", exact=False)
    ready(page, "double_buffered")
    page.wait_for_function("() => location.href.includes('rung=double_buffered')", timeout=10000)
    texts = browser.figure_texts(page)
    # 8 of its 16 intervals drawn: the title counts those, and the run's in all
    assert any("double_buffered</b>, warp 0: " in t and "multiply intervals drawn also load the next tile (15 of 16 "
               "in all)" in t for t in texts), texts
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "ladder-intervals-1280x720.png"))
    assert not page.errors, page.errors


@pytest.mark.parametrize("presenter", ["0", "1"])
def test_the_speed_chart_names_every_rung_level_and_inside_its_figure(server, page, shots, presenter):
    """The rungs' names stood upright under their bars with no margin made for them: "tiled_guarded"
    and "double_buffered" ran off the figure's foot. Now level, broken after their underscores, each
    inside the figure and under its own bar, with the sidebar open (the narrowest the chart is drawn)."""
    from tests.test_browser_layout import sidebar_open
    page.goto(f"{server}/ladder?presenter={presenter}&rung=blocktile_2d")
    ready(page, "blocktile_2d")
    sidebar_open(page, True)
    page.wait_for_function("Array.from(document.querySelectorAll('.js-plotly-plot .gtitle'))"
                           ".some(t => t.textContent.startsWith('Measured GFLOP/s'))", timeout=60000)
    drawn = page.evaluate("""() => { const gd = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => (d.querySelector('.gtitle') || {}).textContent?.startsWith('Measured GFLOP/s'));
        gd.scrollIntoView();
        const box = gd.getBoundingClientRect();
        const ticks = Array.from(gd.querySelectorAll('.xtick text')).map(t => { const r = t.getBoundingClientRect();
            return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                    turned: (t.getAttribute('transform') || '').includes('rotate')}; });
        return {box: {left: box.left, right: box.right, top: box.top, bottom: box.bottom}, ticks}; }""")
    page.screenshot(path=str(shots / f"ladder-speed-names-presenter{presenter}.png"))
    ticks, box = drawn["ticks"], drawn["box"]
    assert [t["text"].replace(" ", "") for t in ticks] == list(registry.LADDER_RUNGS)   # a tick's lines run together
    assert not any(t["turned"] for t in ticks), ticks
    assert all(box["left"] <= t["left"] and t["right"] <= box["right"] and t["bottom"] <= box["bottom"] for t in ticks), drawn
    assert all(a["right"] < b["left"] for a, b in zip(ticks, ticks[1:])), ticks   # none on its neighbour
