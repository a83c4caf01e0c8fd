"""The Tensor cores page in headless Chromium at a projector's 1280x720: the fragment map's headline at
several frames of its animation (opened on a lane, stepped, scrubbed) against the recorded map, the
tables' cells against the engine's numbers, and a shared link reloaded. Screenshots go to
$MATMUL_EXPLORER_SCREENSHOTS."""
import pytest

from engine.metrics import recorded_fragments
from engine.plots.tensor_figures import fragment_headline
from tests import browser

pytestmark = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
FRAGMENT = 2   # the page's third chart: the document kernel's source, hierarchy, fragment map, banks, speeds
BANKS = 3


def ready(page) -> None:
    page.wait_for_function("Array.from(document.querySelectorAll('h3')).some(h => h.textContent.includes('Who holds'))",
                           timeout=120000)
    browser.wait_for_chart(page, 5, 120000)
    browser.wait_idle(page)


def headline(page, timeout_ms: int = 30000) -> str:
    """The fragment figure's headline as drawn now, once one is drawn: read once, right after the page
    looked idle, it gave None on CI (its five charts drawn, the third without its headline at that
    instant; what was redrawing it was not found, and it did not happen here in 3 runs)."""
    found = page.wait_for_function("""(i) => { const gd = document.querySelectorAll('.js-plotly-plot')[i];
        return gd && Array.from(gd.querySelectorAll('.scatterlayer .textpoint text')).map(t => t.textContent)
            .find(t => /^lane \\d+ of 32/.test(t)); }""", arg=FRAGMENT, timeout=timeout_ms)
    return found.json_value()


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
    """The headline as drawn: its lines' text run together."""
    return fragment_headline(operand, lane, recorded_fragments.recorded_map(operand)[lane]).replace("<br>", "")


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

    errors, seed, instructions, banks = tables(page)
    assert [row[1:4] for row in errors] == [["5.7%", "5.7%", "136%"], ["2.9%", "2.9%", "137%"], ["2.0%", "—", "—"]]
    assert [(row[0], row[-1]) for row in instructions] == [("wmma_warp", "2"), ("mma_ldmatrix", "1"), ("wgmma_tma", "1")]
    assert [row[1] for row in seed] == ["8,192 / 256 = 32", "131,072 / 4,096 = 32", "524,288 / 16,384 = 32"]
    assert banks == [["mma_ldmatrix", "256", "6,144", "6,144", "5,120"], ["mma_swizzled", "256", "1,024", "1,024", "0"]]
    page.locator("h3", has_text="rows on the banks").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "tensor-banks-1280x720.png"))
    assert "4 wavefronts per matrix" in " ".join(browser.figure_texts(page))
    # The banks chart's titles stay inside their half of the page (one line ran past it).
    inside = page.evaluate("""(i) => { const gd = document.querySelectorAll('.js-plotly-plot')[i];
        const box = gd.getBoundingClientRect();
        return Array.from(gd.querySelectorAll('.annotation-text')).map(t => t.getBoundingClientRect())
            .every(r => r.left >= box.left && r.right <= box.right); }""", BANKS)
    assert inside

    # The link follows the lane the map was left on: a reload opens there.
    link_on(page, 31)
    page.reload()
    ready(page)
    assert "operand=mma_a" in page.url and "lane=31" in page.url and "rung=mma_ldmatrix" in page.url
    assert headline(page) == want("mma_a", 31)
    assert not page.errors, page.errors


def link_on(page, lane: int) -> None:
    """Until the page's link names `lane` (the player updates it a few times a second)."""
    page.wait_for_function(f"() => new URL(window.location.href).searchParams.get('lane') === '{lane}'", timeout=5000)


def register_cells(page) -> list[str]:
    """The texts of the fragment map's filled cells as drawn (a cell's lines run together)."""
    return page.evaluate("""(i) => Array.from(document.querySelectorAll('.js-plotly-plot')[i]
        .querySelectorAll('.scatterlayer .textpoint text')).map(t => t.textContent).filter(t => /^x\\d/.test(t))""",
                         FRAGMENT)


def test_wmma_cells_name_both_registers_that_hold_an_element(server, page, shots):
    page.goto(f"{server}/tensor_cores?operand=wmma_a&lane=20")
    ready(page)
    assert headline(page) == want("wmma_a", 20)
    assert "each of them in two of its 16 registers (x0 and x8, x1 and x9, ...)" in headline(page)
    # WMMA's A holds each of a lane's 8 elements in two registers: 8 cells, both names legible in each.
    assert sorted(register_cells(page), key=lambda t: int(t[1:].split("x")[0])) == [f"x{e}x{e + 8}" for e in range(8)]
    page.locator(".js-plotly-plot").nth(FRAGMENT).scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "tensor-fragment-wmma-a-lane20-1280x720.png"))
    assert not page.errors, page.errors


def test_a_wmma_operand_says_its_layout_is_undocumented(server, page, shots):
    page.goto(f"{server}/tensor_cores?operand=wmma_c&lane=0&rung=wgmma_tma")
    ready(page)
    assert headline(page) == want("wmma_c", 0)
    assert page.get_by_text("not documented", exact=True).count() == 1
    page.screenshot(path=str(shots / "tensor-top-1280x720.png"))
    page.locator("h3", has_text="Block →").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "tensor-hierarchy-1280x720.png"))
    page.locator("h3", has_text="TFLOP/s").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "tensor-speed-1280x720.png"))
    assert any("TFLOP/s at 4,096³" in t for t in browser.figure_texts(page))
    assert not page.errors, page.errors


def test_presenter_mode_enlarges_the_tables_and_the_speed_chart_note(server, page, shots):
    page.goto(f"{server}/tensor_cores?presenter=1&operand=wmma_b&lane=3")
    ready(page)
    sizes = page.evaluate("""() => Array.from(document.querySelectorAll("[data-testid='stTable'] td"))
        .map(td => parseFloat(getComputedStyle(td).fontSize))""")
    assert sizes and min(sizes) >= 18, sizes   # the app's 14 px is too small at the back of a room
    assert headline(page) == want("wmma_b", 3)
    page.locator(".js-plotly-plot").nth(FRAGMENT).scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "tensor-fragment-presenter-1280x720.png"))
    page.locator("h3", has_text="TFLOP/s").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "tensor-speed-presenter-1280x720.png"))
    assert not page.errors, page.errors


def test_the_document_kernel_shows_its_source_with_the_two_faulty_lines_and_its_warps_on_one_tile(server, page, shots):
    page.goto(f"{server}/tensor_cores?rung=wmma_as_written")
    ready(page)
    assert page.get_by_text("the same kernel is off by", exact=False).count() == 1
    page.locator("h3", has_text="as written").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "tensor-seed-errors-1280x720.png"))
    source = page.locator(".js-plotly-plot").nth(0)
    source.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "tensor-seed-source-1280x720.png"))
    texts = browser.figure_texts(page)
    assert any(t.startswith("<b>① B's fragment layout</b>") for t in texts)
    assert any(t.startswith("<b>② the warp index</b>") for t in texts)
    # The names sit right of the code, inside the figure, on the rows of the lines they name.
    drawn = page.evaluate("""() => { const gd = document.querySelectorAll('.js-plotly-plot')[0];
        const box = gd.getBoundingClientRect();
        const code = Array.from(gd.querySelectorAll('.textpoint text')).filter(t => /warpM =|col_major>/.test(t.textContent))
            .map(t => t.getBoundingClientRect());
        const names = Array.from(gd.querySelectorAll('.annotation-text')).map(t => t.getBoundingClientRect());
        return {inside: names.every(r => r.left >= box.left && r.right <= box.right),
                right: names.every(n => code.every(c => n.left > c.right)), code: code.length, names: names.length}; }""")
    assert drawn == {"inside": True, "right": True, "code": 2, "names": 2}, drawn
    page.locator("h3", has_text="Block →").evaluate("h => h.scrollIntoView()")
    page.screenshot(path=str(shots / "tensor-seed-hierarchy-1280x720.png"))
    assert "1 warp tile<br>of 16 × 16,<br>computed 4 times:<br>all 4 warps on it" in browser.figure_texts(page)
    page.locator("h3", has_text="TFLOP/s").evaluate("h => h.scrollIntoView()")
    page.get_by_text("Why mma_ldmatrix and mma_swizzled can run below wmma_block").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "tensor-speed-steps-1280x720.png"))
    assert not page.errors, page.errors


def lane_shown(page) -> int:
    return int(headline(page).split()[1])


def lane_box(page) -> str:
    return page.locator("[data-testid='stNumberInput'] input").first.input_value()


def test_play_continues_from_the_lane_a_link_opened_on(server, page):
    """Plotly's Play starts after the last frame it animated itself: a figure opened on lane 20 had none."""
    page.goto(f"{server}/tensor_cores?operand=mma_a&lane=20&speed=fast")
    ready(page)
    assert lane_shown(page) == 20
    browser.click_button(page, "▶ Play", FRAGMENT)
    seen = []
    for _ in range(12):   # 250 ms a frame: 11 frames to the end
        page.wait_for_timeout(120)
        seen.append(lane_shown(page))
    assert seen == sorted(seen) and min(seen) >= 20 and seen[-1] > 20, seen
    for _ in range(40):
        if lane_shown(page) == 31:
            break
        page.wait_for_timeout(150)
    assert headline(page) == want("mma_a", 31)
    assert not page.errors, page.errors


def test_the_link_follows_the_figure_and_a_quick_scrub_after_a_step_is_kept(server, page):
    """Step, then scrub at once: the address follows both (no rerun redraws the figure under the
    scrub, as committing the lane to the Lane box did), and a reload opens on the lane shown."""
    page.goto(f"{server}/tensor_cores?operand=mma_b&lane=5")
    ready(page)
    browser.click_button(page, "Step ▶", FRAGMENT)
    assert settled(page) == want("mma_b", 6)
    link_on(page, 6)
    assert lane_box(page) == "5"   # the box says where the map opened; the page did not rerun
    browser.click_button(page, "Step ▶", FRAGMENT)
    browser.scrub(page, 0.5, FRAGMENT)
    lane = int(settled(page).split()[1])
    page.wait_for_timeout(1500)   # long enough for a rerun, had one been started
    assert lane_shown(page) == lane and lane not in (5, 6, 7)
    link_on(page, lane)
    page.reload()
    ready(page)
    assert lane_shown(page) == lane and lane_box(page) == str(lane)
    assert not page.errors, page.errors


def test_the_cliff_chart_shows_cublas_and_the_padded_rung_at_every_recorded_size(server, page, shots):
    """Section 6 as drawn: a bar label for every size, wgmma_tma's times where the shipped run has them
    (refusals where it has none) and wgmma_padded's speed over cuBLAS FP16 at 4,095³ (from the
    shipped file), every label inside the chart."""
    import json

    from engine.bench import benchmark
    rows = {(r["kernel"], r["m"]): r for r in json.loads(benchmark.any_size_run().read_text())["results"]}
    padded, cublas = (rows[k, 4095]["gflops"] / 1000 for k in ("wgmma_padded", "cublas_gemm_fp16"))
    page.goto(f"{server}/tensor_cores")
    ready(page)
    browser.wait_for_chart(page, 5, 120000)
    page.locator("h3", has_text="not multiples of 8").evaluate("h => h.scrollIntoView()")
    browser.wait_idle(page)
    page.screenshot(path=str(shots / "tensor-cliff-1280x720.png"))
    page.locator(".js-plotly-plot").nth(4).scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "tensor-cliff-chart-1280x720.png"))
    drawn = page.evaluate("""() => { const gd = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => ((d.layout.title || {}).text || '').includes('wgmma_padded over cuBLAS FP16'));
        const box = gd.getBoundingClientRect();
        const texts = Array.from(gd.querySelectorAll('.bartext')).map(t => [t.textContent, t.getBoundingClientRect()]);
        return {texts: texts.map(t => t[0]),
                inside: texts.every(([_, r]) => r.top >= box.top && r.bottom <= box.bottom && r.right <= box.right),
                ticks: Array.from(gd.querySelectorAll('.xtick text')).map(t => t.textContent)}; }""")
    assert f"{padded:,.0f}" in drawn["texts"] and f"<b>{padded / cublas:.1f}×</b>" in browser.figure_texts(page)
    tma = [rows[k]["gflops"] / 1000 for k in rows if k[0] == "wgmma_tma" and rows[k]["status"] == "ok"]
    assert all(f"{t:,.0f}" in drawn["texts"] for t in tma) and len(tma) == len(drawn["ticks"])
    assert drawn["texts"].count("refused") == 0
    assert drawn["inside"], drawn["texts"]
    assert not page.errors, page.errors


@pytest.mark.parametrize("rung", ["wgmma_tma", "mma_tma", "wmma_as_written", "mma_pipelined"])
@pytest.mark.parametrize("presenter", ["", "&presenter=1"])
def test_the_hierarchy_labels_stay_inside_their_figure(server, page, rung, presenter):
    """At 1280 x 720 with the sidebar open each panel is about 240 px wide: wgmma's instruction label
    (wgmma.m64n256k16, A 64 × 16 · B 16 × 256 → C 64 × 256) ran past the figure's right edge."""
    page.goto(f"{server}/tensor_cores?rung={rung}{presenter}")
    ready(page)
    page.locator("h3", has_text="Block →").evaluate("h => h.scrollIntoView()")
    outside = page.evaluate("""() => {
        const plot = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.textContent.includes('one instruction'));
        const box = plot.getBoundingClientRect();
        return [...plot.querySelectorAll('.annotation-text')].map(t => [t.textContent, t.getBoundingClientRect()])
            .filter(([, r]) => r.left < box.left - 1 || r.right > box.right + 1 || r.bottom > box.bottom + 1)
            .map(([t]) => t); }""")
    assert outside == []
    assert not page.errors, page.errors


@pytest.mark.parametrize("presenter", ["", "&presenter=1"])
def test_what_mma_pipelineds_costs_are_is_drawn_with_every_label_inside(server, page, shots, presenter):
    """Section 5's last chart as drawn at 1280x720, in both modes: each variant's TFLOP/s and share of cuBLAS
    FP16 from the shipped run of tests/benchmarks/mma_costs.py over its bar, every label inside the figure,
    the six variants named under the bars."""
    import json

    from engine.bench import benchmark, speeds
    costs = speeds.mma_costs(json.loads(benchmark.costs_run().read_text()))
    page.goto(f"{server}/tensor_cores?{presenter.lstrip('&')}")
    ready(page)
    page.get_by_text("Where mma_pipelined's time goes").first.scroll_into_view_if_needed()
    gd = page.locator(".js-plotly-plot", has_text="three costs taken out")
    gd.scroll_into_view_if_needed()
    browser.wait_idle(page)
    page.screenshot(path=str(shots / f"tensor-costs{'-presenter' if presenter else ''}-1280x720.png"))
    drawn = gd.evaluate("""gd => { const box = gd.getBoundingClientRect();
        const texts = Array.from(gd.querySelectorAll('.bartext')).map(t => [t.textContent, t.getBoundingClientRect()]);
        return {texts: texts.map(t => t[0]),
                inside: texts.every(([_, r]) => r.top >= box.top && r.bottom <= box.bottom && r.left >= box.left && r.right <= box.right),
                ticks: Array.from(gd.querySelectorAll('.xtick text')).map(t => t.textContent)}; }""")
    want = [f"{v:,.0f}{p:.0f}%" for v, p in zip(costs.table["tflops"], costs.table["pct"])]   # the <br> drawn as two lines
    assert sorted(drawn["texts"]) == sorted(want), drawn["texts"]
    assert drawn["ticks"] == list(speeds.COST_VARIANTS)
    assert drawn["inside"], drawn["texts"]
    assert not page.errors, page.errors


@pytest.mark.parametrize("presenter", ["", "&presenter=1"])
def test_where_mma_pipelineds_warps_wait_is_drawn_with_every_label_inside(server, page, shots, presenter):
    """Section 5's warp-stall chart as drawn at 1280x720, in both modes: one bar per kernel of the shipped
    run of tests/benchmarks/mma_stalls.py, named at its left, its total cycles per issued instruction at
    its end, every label inside the figure, and the story above it naming the instructions. The names
    stand over their bars (as tick labels at the left they narrowed the plot, and the legend, wrapped at
    its width, scrolled), and every reason of the legend shows."""
    from engine.bench import benchmark
    from engine.metrics import stalls
    s = stalls.load(benchmark.stalls_run())
    page.goto(f"{server}/tensor_cores?{presenter.lstrip('&')}")
    ready(page)
    gd = page.locator(".js-plotly-plot", has_text="warps wait")
    gd.scroll_into_view_if_needed()
    browser.wait_idle(page)
    page.screenshot(path=str(shots / f"tensor-stalls{'-presenter' if presenter else ''}-1280x720.png"))
    drawn = gd.evaluate("""gd => { const box = gd.getBoundingClientRect();
        const texts = Array.from(gd.querySelectorAll('.textpoint text, .annotation-text, .legendtext'))
            .map(t => [t.textContent.trim(), t.getBoundingClientRect()]);
        return {totals: Array.from(gd.querySelectorAll('.textpoint text')).map(t => t.textContent.trim()),
                ticks: Array.from(gd.querySelectorAll('.annotation-text')).map(t => t.textContent),
                legend: Array.from(gd.querySelectorAll('.legendtext')).map(t => t.textContent),
                scrolls: gd.querySelectorAll('.scrollbar').length > 0 &&
                         Array.from(gd.querySelectorAll('.scrollbar')).some(b => b.getBoundingClientRect().height > 0),
                outside: texts.filter(([_, r]) => r.top < box.top || r.bottom > box.bottom || r.left < box.left - 1
                                                  || r.right > box.right + 1).map(t => t[0])}; }""")
    totals = {k["label"]: sum(k["stalls"].values()) for k in s.kernels}
    assert sorted(drawn["ticks"]) == sorted(totals)
    assert sorted(drawn["totals"]) == sorted(f"{v:.2f}" for v in totals.values())
    assert drawn["outside"] == [], drawn["outside"]
    assert len(drawn["legend"]) >= 9 and not drawn["scrolls"]
    text = page.locator("[data-testid='stMarkdownContainer']", has_text="Where its warps wait.").first.inner_text()
    for t in (t for k in s.kernels if k["name"] == "as written" for t in k["top"] if t.get("copy_reading")):
        assert t["sass"] in text and t["copy_reading"] in text
    assert not page.errors, page.errors


def test_a_rerun_keeps_the_lane_the_player_was_left_on(server, page):
    """Stepped from lane 5 to 8, then another control changed (the speed): the page reran and drew the
    map anew on the Lane box's 5, and the map jumped back to lane 5, the link with it."""
    page.goto(f"{server}/tensor_cores?operand=mma_a&lane=5&speed=normal")
    ready(page)
    for lane in (6, 7, 8):
        browser.click_button(page, "Step ▶", FRAGMENT)
        assert settled(page) == want("mma_a", lane)
    link_on(page, 8)
    page.get_by_role("slider", name="Speed").first.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => new URL(location.href).searchParams.get('speed') === 'fast'", timeout=30000)
    browser.wait_idle(page)
    page.wait_for_timeout(1000)
    assert settled(page) == want("mma_a", 8)
    link_on(page, 8)
    # The map was drawn anew opening on lane 8, and the box says so: it had kept 5, and typing 5
    # into a box that said 5 changed nothing while the map stood on 8.
    assert lane_box(page) == "8"
    # A lane typed in the box is where the map opens then, whatever the player was left on.
    page.locator("[data-testid='stNumberInput'] input").first.fill("12")
    page.keyboard.press("Enter")
    page.wait_for_function("() => new URL(location.href).searchParams.get('lane') === '12'", timeout=30000)
    browser.wait_idle(page)
    page.wait_for_timeout(1000)
    assert settled(page) == want("mma_a", 12)
    assert not page.errors, page.errors


def test_after_a_rerun_the_lane_box_says_the_lane_shown_and_typing_the_first_lane_goes_back(server, page):
    """Step twice from lane 0, then another control (the Fragment): the map stood on lane 2 and the box
    said 0, and typing 0 did nothing (the box already said 0), so a student could not go back to lane 0
    from the box."""
    page.goto(f"{server}/tensor_cores?operand=mma_a&lane=0")
    ready(page)
    for lane in (1, 2):
        browser.click_button(page, "Step ▶", FRAGMENT)
        assert settled(page) == want("mma_a", lane)
    link_on(page, 2)
    browser.choose(page, "Fragment", "mma.sync B", exact=False)
    page.wait_for_function("() => new URL(location.href).searchParams.get('operand') === 'mma_b'", timeout=30000)
    browser.wait_idle(page)
    page.wait_for_timeout(1000)
    assert settled(page) == want("mma_b", 2) and lane_box(page) == "2"
    page.locator("[data-testid='stNumberInput'] input").first.fill("0")
    page.keyboard.press("Enter")
    page.wait_for_function("() => new URL(location.href).searchParams.get('lane') === '0'", timeout=30000)
    browser.wait_idle(page)
    page.wait_for_timeout(1000)
    assert settled(page) == want("mma_b", 0) and lane_box(page) == "0"
    assert not page.errors, page.errors


def owner_labels(page) -> int:
    """The fragment map's grey cells drawn with their owners' lane numbers (the second trace's texts)."""
    return page.evaluate("""(i) => { const gd = document.querySelectorAll('.js-plotly-plot')[i];
        const trace = gd.querySelectorAll('.scatterlayer .trace')[1];
        return Array.from(trace.querySelectorAll('.textpoint text')).filter(t => /^\\d/.test(t.textContent)).length; }""",
                         FRAGMENT)


@pytest.mark.parametrize("how", ["step", "play"])
def test_every_grey_cell_keeps_its_lane_number_while_the_map_moves(server, page, how):
    """A frame blanks the numbers under the lane's own cells and shows the others: stepped or played, a
    cell the previous lane had blanked is numbered again (blanked with an empty text, Plotly removed the
    text element, and an animation without redraw never put it back: 8 cells blank after two steps)."""
    page.goto(f"{server}/tensor_cores?operand=mma_a&lane=0&speed=fast")
    ready(page)
    assert settled(page) == want("mma_a", 0)
    cells, held = 16 * 16, len(recorded_fragments.recorded_map("mma_a")[0])
    assert owner_labels(page) == cells - held
    if how == "step":
        for _ in range(3):
            browser.click_button(page, "Step ▶", FRAGMENT)
            settled(page)
            assert owner_labels(page) == cells - held, lane_shown(page)
    else:
        browser.click_button(page, "▶ Play", FRAGMENT)
        for _ in range(6):
            page.wait_for_timeout(300)
            lane = lane_shown(page)
            assert owner_labels(page) == cells - len(recorded_fragments.recorded_map("mma_a")[lane]), lane
    assert not page.errors, page.errors


def test_the_speed_charts_labels_are_drawn_at_one_size(server, page):
    """A share shown to a tenth ("769 / 99.7%", a whole percent would read as a tie) was wider than its
    bar, and Plotly drew it shrunk beside its neighbours' full-size labels."""
    page.goto(f"{server}/tensor_cores")
    ready(page)
    scales = page.evaluate("""() => { const gd = Array.from(document.querySelectorAll('.js-plotly-plot'))
            .find(d => ((d.layout.title || {}).text || '').includes('TFLOP/s at '));
        return Array.from(gd.querySelectorAll('.bartext')).map(t => {
            const m = /scale\\(([\\d.]+)/.exec(t.getAttribute('transform') || ''); return m ? parseFloat(m[1]) : 1; }); }""")
    assert len(scales) >= 10 and set(scales) == {1}, scales
    assert not page.errors, page.errors
