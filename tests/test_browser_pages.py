"""The animated pages in headless Chromium at a projector's 1280x720, used the way a person does:
clicking through the sidebar, pressing Play, Pause and Step, scrubbing the slider, reloading a shared
link, switching presenter mode on. Assertions are on what is displayed (the drawn SVG), at several
frames. Screenshots go to $MATMUL_EXPLORER_SCREENSHOTS (CI: screenshots/) to be looked at.
"""
import re

import pytest

from tests import browser

pytestmark = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))
VIEW = browser.VIEW   # `chrome` and `page` (a fresh page of this size per test): tests/conftest.py


def open_page(page, url: str) -> None:
    page.goto(url)
    page_ready(page)


def page_ready(page) -> None:
    """Until the page's script has finished and its figure is drawn and still (a reload included):
    before that, the controls may still show what a rerun is about to replace."""
    page.wait_for_selector("h1", timeout=60000)
    browser.wait_for_chart(page)
    browser.wait_for_headline(page)
    browser.wait_idle(page)
    browser.wait_settled(page)


def go_to(page, title: str) -> None:
    """Clicks a page's link in the sidebar and waits for its figure."""
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).click()
    page.wait_for_function(f"document.querySelector('h1') && document.querySelector('h1').textContent.includes('{title}')",
                           timeout=60000)
    browser.wait_for_chart(page)
    browser.wait_for_headline(page)
    browser.wait_idle(page)
    browser.wait_settled(page)


def value(page, label: str) -> str:
    return page.get_by_label(label, exact=True).first.input_value()


def selected(page, label: str) -> str:
    return page.get_by_role("combobox", name=label, exact=True).first.input_value()


def parameters(page) -> str:
    """The title of the folded group of the kernel's parameters, as shown ("Kernel parameters: TILE 16")."""
    text = page.locator("[data-testid='stExpander'] summary", has_text="Kernel parameters:").first.inner_text()
    return text[text.index("Kernel parameters:"):].strip()   # after its arrow icon's ligature


def choose_parameter(page, name: str, option: str) -> None:
    """Unfolds the parameter group and picks `option` in the select of parameter `name`."""
    browser.choose(page, name, option, unfold="Kernel parameters:")


def line_of(head: str) -> int:
    return int(re.search(r"line (\d+)", head).group(1))


def check_in_step(s: dict) -> None:
    """Each panel's headline names the frame the slider is on and the line lit in the source."""
    assert s["heads"], s
    for head, lit in zip(s["heads"], s["lit"]):
        if "instruction" in head or "shared load" in head:
            n = int(re.search(r"(?:instruction|load) ([\d,]+) of", head).group(1).replace(",", ""))
            first = int(re.search(r"animation: ([\d,]+)", head).group(1).replace(",", "")) if "animation:" in head else 1
            assert n == first + s["active"], (head, s["active"])
        assert line_of(head) == lit, (head, lit)


# ------------------------------------------------------------------------------ navigation

@pytest.mark.parametrize("order", [["Coalescing", "Tile phases", "Bank conflicts", "Coalescing"],
                                   ["Bank conflicts", "Tile phases", "Coalescing", "Bank conflicts", "Tile phases"]])
def test_each_page_keeps_its_own_controls_whatever_the_order(server, page, order):
    page.goto(server)
    page.wait_for_selector("h1", timeout=60000)
    for title in order:
        go_to(page, title)
        heads = " ".join(browser.shown(page)["heads"])
        if title == "Coalescing":
            assert (value(page, "M"), value(page, "N"), value(page, "K")) == ("32", "32", "16")
            assert "threadIdx.x walks rows" in selected(page, "Kernel")
            assert "block 32x32" in heads and "32 sectors" in heads
        elif title == "Tile phases":
            assert (value(page, "M"), value(page, "N"), value(page, "K")) == ("40", "40", "40")
            assert parameters(page) == "Kernel parameters: TILE 16"
            assert "phase 1 of 3" in heads
        else:
            assert "bank conflicts" in selected(page, "Kernel").lower()
            assert "32-way" in heads, heads
        assert page.locator("[data-testid='stException']").count() == 0
    assert not page.errors


def test_a_changed_view_survives_leaving_the_page_and_a_reload(server, page):
    open_page(page, f"{server}/tile_phases?m=24&n=24&k=24&TILE=8")
    assert value(page, "M") == "24" and parameters(page) == "Kernel parameters: TILE 8"
    go_to(page, "Coalescing")
    assert value(page, "M") == "32"                       # not Tile phases' 24
    go_to(page, "Tile phases")
    assert value(page, "M") == "24" and parameters(page) == "Kernel parameters: TILE 8"
    assert "m=24" in page.url and "TILE=8" in page.url    # the URL is the view: a link to share
    page.reload()
    page_ready(page)
    assert value(page, "M") == "24" and "phase 1 of 3" in " ".join(browser.shown(page)["heads"])


def test_a_shared_link_opened_first_after_start_gets_the_app_navigation(chrome):
    """Straight after the server starts, before anyone opened Home, a page link used to run the page
    the old way: a sidebar of file names ('app', 'bank conflicts') and none of app.py's layout."""
    with browser.app_server({"MATMUL_EXPLORER_GPU": "0"}) as url:
        context = chrome.new_context(viewport=VIEW)
        p = context.new_page()
        p.goto(f"{url}/bank_conflicts?TILE=16&m=32&n=32&k=32")
        p.wait_for_selector("h1", timeout=60000)
        browser.wait_for_chart(p)
        nav = p.locator("[data-testid='stSidebarNav']").inner_text()
        assert "Home" in nav and "Bank conflicts" in nav and "app" not in nav.split(), nav
        assert "8-way" in " ".join(browser.shown(p)["heads"])
        context.close()


# ------------------------------------------------------------------------------ animations

def test_coalescing_headline_source_and_matrices_follow_every_frame(server, page, shots):
    open_page(page, f"{server}/coalescing")
    s = browser.shown(page)
    rows, cols = s["heads"]
    assert "block 32x32" in rows and "32 sectors" in rows and "uncoalesced" in rows      # lanes on rows of A
    assert "1 sector" in cols and "broadcast" in cols                                   # one A word for all
    assert s["active"] == 0 and s["shapes"] == 6                                        # A, B, C twice
    check_in_step(s)
    page.screenshot(path=str(shots / "coalescing-frame0.png"))

    browser.click_button(page, "Step ▶")
    s = browser.wait_settled(page)
    assert s["active"] == 1
    rows, cols = s["heads"]
    assert "load B" in rows and "1 sector" in rows                                      # B[k][j]: one word
    assert "load B" in cols and "4 sectors" in cols and "coalesced" in cols             # 128 contiguous bytes
    check_in_step(s)

    browser.click_button(page, "▶ Play")
    page.wait_for_timeout(1500)
    browser.click_button(page, "❚❚ Pause")
    s = browser.wait_settled(page)
    assert s["active"] > 2, s
    check_in_step(s)
    assert s["shapes"] == 6                                # the matrices stay drawn after playing
    page.screenshot(path=str(shots / "coalescing-after-play.png"))

    browser.scrub(page, 1.0)
    s = browser.wait_settled(page)
    assert s["active"] == 32 and all("store C" in h for h in s["heads"]), s
    check_in_step(s)
    browser.click_button(page, "◀ Step")
    s = browser.wait_settled(page)
    assert s["active"] == 31
    check_in_step(s)
    browser.scrub(page, 0.0)
    s = browser.wait_settled(page)
    assert s["active"] == 0 and s["shapes"] == 6
    check_in_step(s)
    assert not page.errors, page.errors


def test_a_windowed_trace_says_which_instructions_it_shows(server, page):
    open_page(page, f"{server}/coalescing?kernel=naive_x_cols&compare=(none)&m=32&n=32&k=128&from=161")
    head = browser.shown(page)["heads"][0]
    assert "instruction 161 of 257" in head and "animation: 161–257" in head, head
    browser.click_button(page, "Step ▶")
    s = browser.wait_settled(page)
    check_in_step(s)
    assert "instruction 162 of 257" in s["heads"][0]


def test_tile_phases_slider_scrubs_and_follows_play(server, page, shots):
    open_page(page, f"{server}/tile_phases?m=40&n=40&k=40&TILE=16&speed=fast")
    s = browser.shown(page)
    assert s["frames"] == 6 and "phase 1 of 3" in s["heads"][0] and "load" in s["heads"][0]
    check_in_step(s)
    browser.scrub(page, 3 / 5)
    s = browser.wait_settled(page)
    assert s["active"] == 3 and "phase 2 of 3" in s["heads"][0] and "compute" in s["heads"][0], s
    check_in_step(s)
    browser.scrub(page, 0.0)
    browser.wait_settled(page)
    browser.click_button(page, "▶ Play")
    page.wait_for_timeout(700)
    moving = browser.shown(page)
    assert moving["active"] > 0, moving                   # the knob moves while it plays
    page.wait_for_timeout(2500)
    s = browser.wait_settled(page)
    assert s["active"] == 5 and "phase 3 of 3" in s["heads"][0] and "compute" in s["heads"][0]
    check_in_step(s)
    page.screenshot(path=str(shots / "tile-phases-last-frame.png"))
    assert not page.errors, page.errors


def test_bank_conflicts_headline_follows_the_frames(server, page):
    open_page(page, f"{server}/bank_conflicts?TILE=32&PAD=0&m=64&n=64&k=64")
    s = browser.shown(page)
    assert "32-way" in s["heads"][0]
    check_in_step(s)
    for _ in range(3):
        browser.click_button(page, "Step ▶")
    s = browser.wait_settled(page)
    assert s["active"] == 3
    check_in_step(s)
    choose_parameter(page, "PAD", "1")
    browser.wait_for_chart(page)
    page.wait_for_function("() => Array.from(document.querySelectorAll('.textpoint text')).some(t => t.textContent.includes('1-way'))",
                           timeout=60000)
    # The shared link follows in the same run, in a message that may come after the figure's.
    page.wait_for_function("() => location.href.includes('PAD=1')", timeout=10000)


# ------------------------------------------------------------------------------ projector

@pytest.mark.parametrize("name", ["coalescing", "tile_phases", "bank_conflicts"])
def test_presenter_mode_fits_a_1280x720_projector(server, page, shots, name):
    open_page(page, f"{server}/{name}?presenter=1")
    page.screenshot(path=str(shots / f"{name}-presenter-1280x720.png"))
    s = browser.shown(page)
    assert s["heads"]
    heads = page.locator(".js-plotly-plot").first.locator(".textpoint text").filter(has_text=re.compile("instruction|phase|shared load"))
    for i in range(heads.count()):
        box = heads.nth(i).bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= VIEW["height"], box
        assert box["x"] + box["width"] <= VIEW["width"], box
    play = page.locator(".updatemenu-button", has_text="Play").first.bounding_box()
    assert play["y"] + play["height"] <= VIEW["height"], play         # Play in view without scrolling
    assert s["codeRight"] <= s["plot"]["right"] + 1, s                 # source lines wrapped, not cut
    sidebar = page.locator("[data-testid='stSidebar']")
    assert sidebar.get_attribute("aria-expanded") == "false" or not sidebar.is_visible()
    # Controls are folded away, but there.
    assert page.get_by_text("Controls").count() >= 1
    assert not page.errors, page.errors


def test_presenter_figures_are_bigger_not_only_their_text(server, page):
    open_page(page, f"{server}/bank_conflicts?presenter=0&m=32&n=32&k=32")
    normal = page.locator(".js-plotly-plot").first.bounding_box()
    open_page(page, f"{server}/bank_conflicts?presenter=1&m=32&n=32&k=32")
    big = page.locator(".js-plotly-plot").first.bounding_box()
    assert big["width"] > normal["width"] * 1.2


@pytest.mark.parametrize("name, query", [("coalescing", ""), ("tile_phases", ""), ("bank_conflicts", "?PAD=1&TILE=32"),
                                         ("bank_conflicts", "?PAD=0&TILE=16")])
def test_source_listings_are_whole_and_readable_at_1440(server, chrome, name, query):
    """Listings were clipped at the right on every page, and with padding on, Bank conflicts' lines
    overlapped: every drawn code row must end inside its figure and sit below the one before."""
    context = chrome.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    open_page(page, f"{server}/{name}{query}")
    s = browser.shown(page)
    assert s["codeRight"] <= s["plot"]["right"] + 1, s
    rows = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')[0]
        .querySelectorAll('.scatterlayer .textpoint text')).filter(t => /^\\s*\\d+  |^     /.test(t.textContent))
        .map(t => { const r = t.getBoundingClientRect(); return [r.top, r.bottom, r.height]; })""")
    assert len(rows) > 5
    for (_top0, bottom0, h0), (top1, _, h1) in zip(rows, rows[1:]):
        assert top1 >= bottom0 - 0.25 * min(h0, h1), (rows,)
    context.close()


def test_back_leaves_a_page_in_one_press_whatever_its_settings_wrote(server, page):
    """Every setting a page writes back into the URL had been a history entry of its own: Back from a
    page took three or four presses to reach the one before."""
    open_page(page, f"{server}/coalescing")
    go_to(page, "Tile phases")
    go_to(page, "Bank conflicts")
    page.go_back()
    page.wait_for_url(re.compile(r"/tile_phases"), timeout=30000)
    page.go_back()
    page.wait_for_url(re.compile(r"/coalescing"), timeout=30000)
    page_ready(page)
    assert value(page, "M") == "32" and page.locator("[data-testid='stException']").count() == 0


@pytest.mark.parametrize("name", ["coalescing", "tile_phases", "bank_conflicts", "benchmarks"])
def test_back_leaves_a_page_opened_from_its_address_in_one_press(server, page, name):
    """A page's first run wrote its settings into the URL one by one before history.js was in place,
    each a history entry: opened from a typed or bookmarked address, Back took up to ten presses to
    leave it (Tile phases: 10, Benchmarks: 5), each showing the same view."""
    open_page(page, f"{server}/{name}") if name != "benchmarks" else _open_benchmarks(page, f"{server}/{name}")
    page.wait_for_function("() => history.state && history.state.matmulEntry")   # history.js is in place
    page.go_back()   # from the page to the tab's blank start
    page.wait_for_url("about:blank", timeout=10000)


def _open_benchmarks(page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("h1", timeout=60000)
    browser.wait_for_chart(page)
    browser.wait_idle(page)


def test_back_walks_the_pages_visited_each_at_the_address_it_showed(server, page):
    """Home's entry took the next page's first settings (/?kernel=naive_x_rows&...), and Home opened
    from its address pushed a second entry of its own (?presenter=0)."""
    page.goto(f"{server}/")
    page.wait_for_selector("h1", timeout=60000)
    browser.wait_idle(page)
    go_to(page, "Coalescing")
    box = page.get_by_label("M", exact=True).first
    box.fill("33")
    box.press("Enter")
    page.wait_for_function("() => location.href.includes('m=33')", timeout=60000)
    go_to(page, "Tile phases")
    page.go_back()
    page.wait_for_url(re.compile(r"/coalescing\?.*m=33"), timeout=30000)
    page_ready(page)
    assert value(page, "M") == "33"
    page.go_back()
    page.wait_for_url(f"{server}/", timeout=30000)
    page.go_back()
    page.wait_for_url("about:blank", timeout=10000)
    assert not page.errors, page.errors


@pytest.mark.parametrize("presenter", [False, True])
def test_back_after_a_reload_opens_the_page_left_at_its_address(server, page, presenter):
    """A reload starts a new session, which knows nothing of the pages before it: Back then opened
    Coalescing at its defaults (kernel naive_x_rows, instruction 1), though its address named the view."""
    mode = "&presenter=1" if presenter else ""
    open_page(page, f"{server}/coalescing?kernel=naive_transposed_b&m=40&step=14{mode}")
    assert "naive_transposed_b" in " ".join(browser.wait_settled(page)["heads"])
    if presenter:
        page.locator("[data-testid='stExpandSidebarButton']").first.click()
    go_to(page, "Tile phases")
    page.reload()
    page_ready(page)
    page.go_back()
    page.wait_for_url(re.compile(r"/coalescing\?.*step=14"), timeout=30000)
    page_ready(page)
    heads = " ".join(browser.wait_settled(page)["heads"])
    assert "naive_transposed_b" in heads and "instruction 14 of" in heads, heads
    assert re.search(r"[?&]m=40(&|$)", page.url) and "kernel=naive_transposed_b" in page.url, page.url
    assert not page.errors, page.errors



class HeldMessages:
    """The app's websocket, routed through the test: while `held`, the server's messages that `hold`
    picks wait here, in order, and everything else goes on, so a test can make them arrive late on
    purpose. `finished` counts the runs that ended meanwhile."""

    def __init__(self, page, hold):
        self.hold, self.held, self.queue, self.finished = hold, False, [], 0
        page.route_web_socket(re.compile(r"/_stcore/stream"), self._route)

    def _route(self, ws) -> None:
        self.ws = ws
        ws.connect_to_server().on_message(self._from_server)

    def _from_server(self, message) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        msg = None
        if isinstance(message, bytes):
            msg = ForwardMsg()
            msg.ParseFromString(message)
        self.finished += self.held and msg is not None and msg.WhichOneof("type") == "script_finished"
        if self.held and msg is not None and self.hold(msg):
            self.queue.append(message)
        else:
            self.ws.send(message)

    def wait_finished(self, page) -> None:
        for _ in range(600):
            if self.finished:
                return
            page.wait_for_timeout(100)
        raise AssertionError("the run did not finish")

    def release(self) -> None:
        self.held = False
        for message in self.queue:
            self.ws.send(message)
        self.queue.clear()


def queries(msg) -> bool:
    """A run's query write (what the browser's Streamlit writes into the address it shows)."""
    return msg.WhichOneof("type") == "page_info_changed"


class HistoryJsLate:
    """Picks the page's scripts with history.js (ui.setup_page) and every message after them but the
    run's query write: as a busy machine handles them, the query reaching the address before the
    scripts run. (The browser's Streamlit applies a run's elements only in order, so the scripts
    cannot be held alone.)"""

    def __init__(self):
        self.seen = False

    def __call__(self, msg) -> bool:
        element = msg.delta.new_element if msg.WhichOneof("type") == "delta" else None
        self.seen = self.seen or (element is not None and element.WhichOneof("type") == "html"
                                  and "__matmulHistory" in element.html.body)
        return self.seen and not queries(msg)


def test_a_query_arriving_after_back_is_not_left_in_the_address_moved_to(server, page):
    """A Tile phases run ended, its query (M = 64) still on its way, and Back: the browser's Streamlit
    writes a query into the address it shows when it arrives, and Coalescing's address became
    /coalescing?kernel=tiled_guarded&m=64&...&TILE=16; Coalescing's own run, which had the right query
    from the browser's request, saw nothing to change. Made late here on purpose: the server's
    query of the run that M = 64 started held until Back has been pressed."""
    wire = HeldMessages(page, queries)
    open_page(page, f"{server}/coalescing?kernel=naive_transposed_b&m=40&step=14")
    go_to(page, "Tile phases")
    wire.held = True
    box = page.get_by_label("M", exact=True).first
    box.fill("64")
    box.press("Enter")
    wire.wait_finished(page)
    page.go_back()
    page.wait_for_url(re.compile(r"/coalescing\?"), timeout=30000)
    wire.release()
    page_ready(page)
    page.wait_for_timeout(1000)   # anything else on its way
    page_ready(page)
    assert "kernel=naive_transposed_b" in page.url and re.search(r"[?&]m=40(&|$)", page.url), page.url
    assert "TILE=" not in page.url and "step=14" in page.url, page.url
    assert "instruction 14 of" in " ".join(browser.wait_settled(page)["heads"])
    assert not page.errors, page.errors


def open_with_history_js_late(page, url: str) -> None:
    """Opens `url` (from another address) with history.js drawn only after the first run has ended,
    as a busy machine draws it: the run's own messages reach the page first."""
    wire = HeldMessages(page, HistoryJsLate())
    wire.held = True
    page.goto("about:blank")
    page.goto(url)
    wire.wait_finished(page)
    page.wait_for_timeout(500)   # the run's query handled
    wire.release()
    page.wait_for_selector("h1", timeout=60000)
    browser.wait_idle(page)   # (not page_ready: the Ladder's figures have no player headline)


@pytest.mark.parametrize("path", ["bank_conflicts", "ladder", "coalescing?m=17", "tile_phases"])
def test_a_page_opened_from_a_plain_address_adds_no_history_entry(server, page, path):
    """The first run's settings went into the address by a message the browser's Streamlit pushes as
    an entry, and history.js, which makes that push a replacement, came too late on a busy machine:
    the address as opened stayed behind as an entry of its own (history.length 3, not 2)."""
    open_with_history_js_late(page, f"{server}/{path}")
    assert "n=" in page.url   # its settings written
    assert page.evaluate("history.length") == 2, page.url
    assert not page.errors, page.errors


def test_forward_from_outside_the_app_comes_back_to_the_view_left(server, page):
    """Coalescing opened from a plain address, M = 17, Tile phases, Back twice (out of the app),
    Forward twice: the first Forward reopened the address as opened (a new session, at the defaults),
    and its write there cut off the entries after it, so the second did nothing."""
    open_with_history_js_late(page, f"{server}/coalescing")
    page_ready(page)
    box = page.get_by_label("M", exact=True).first
    box.fill("17")
    box.press("Enter")
    page.wait_for_function("() => /[?&]m=17(&|$)/.test(location.search)", timeout=30000)
    page_ready(page)
    go_to(page, "Tile phases")
    page.go_back()
    page.wait_for_url(re.compile(r"/coalescing\?"), timeout=30000)
    page_ready(page)
    page.go_back()
    page.wait_for_url("about:blank", timeout=30000)
    page.go_forward()
    page.wait_for_url(re.compile(r"/coalescing\?"), timeout=30000)
    page_ready(page)
    assert value(page, "M") == "17" and re.search(r"[?&]m=17(&|$)", page.url), page.url
    page.go_forward()
    page.wait_for_url(re.compile(r"/tile_phases\?"), timeout=30000)
    page_ready(page)
    assert not page.errors, page.errors


def test_a_page_that_refuses_a_choice_keeps_it_in_its_address(server, page):
    """After st.stop every message of the run is refused, the query's too: Tile phases refusing the
    unguarded kernel at 40³ left the address naming the guarded one, so a reload showed another view."""
    open_page(page, f"{server}/tile_phases?presenter=1&m=40&n=40&k=40")
    browser.choose(page, "Kernel", "Shared-memory tiled, no guards", exact=False, unfold="Controls")
    page.wait_for_selector("[data-testid='stAlertContentError']", timeout=60000)
    page.wait_for_function("() => location.href.includes('kernel=tiled_unguarded')", timeout=30000)
    said = page.inner_text("[data-testid='stAlertContentError']")
    page.reload()
    page.wait_for_selector("[data-testid='stAlertContentError']", timeout=60000)
    assert page.inner_text("[data-testid='stAlertContentError']") == said and "presenter=1" in page.url
    assert not page.errors, page.errors


def test_controls_a_refusal_left_undrawn_come_back_showing_the_view_kept(server, page):
    """Streamlit keeps the state of the controls a stopped run did not draw, and the browser draws them
    anew at their defaults: after Tile phases refused M = 17, M = 64 showed Block x 0, Block y 0 and
    Speed slow beside a figure of block (1, 1) played fast, and the next change (K) took them."""
    open_page(page, f"{server}/tile_phases?kernel=tiled_unguarded&m=32&n=32&k=32&speed=fast&bx=1&by=1")
    box = page.get_by_label("M", exact=True).first
    box.fill("17")
    box.press("Enter")
    page.wait_for_selector("[data-testid='stAlertContentError']", timeout=60000)
    browser.wait_idle(page)
    box.fill("64")
    box.press("Enter")
    page.wait_for_selector("[data-testid='stAlertContentError']", state="detached", timeout=60000)
    page_ready(page)
    speed = page.locator("[data-testid='stSlider']", has_text="Speed").locator("[data-testid='stSliderThumbValue']")
    assert (value(page, "Block x"), value(page, "Block y"), speed.inner_text()) == ("1", "1", "fast")
    k = page.get_by_label("K", exact=True).first
    k.fill("48")
    k.press("Enter")
    page.wait_for_function("() => location.href.includes('k=48')", timeout=60000)
    page_ready(page)
    assert re.search(r"[?&]bx=1&by=1(&|$)", page.url) and "speed=fast" in page.url, page.url
    assert (value(page, "Block x"), value(page, "Block y"), speed.inner_text()) == ("1", "1", "fast")
    assert not page.errors, page.errors


ARRIVING_JS = """async ([key, page]) => {
  const gd = document.createElement('div');
  document.querySelector("[data-testid='stMain']").appendChild(gd);
  await window.Plotly.newPlot(gd, [{x: [0], y: [0]}], {meta: {url_key: key, page: page},
    sliders: [{active: 0, steps: [{label: '1-load', method: 'animate', args: [['1-load']]}]}]});
  await window.Plotly.addFrames(gd, [{name: '1-load', data: [{x: [0], y: [0]}]}]);
}"""


def test_a_figure_arriving_after_a_move_keeps_its_frame_out_of_the_next_pages_address(server, page):
    """Tile phases playing, the Ladder, Back and, 0.3 s later, Forward: the Tile phases figure of the run
    Back started arrived on the Ladder, and the player took it for the Ladder's (the page shown when it
    was first drawn) and wrote its ?phase= into the Ladder's address (a reload then said "?phase=1-load is
    not a setting of this view"). That arrival, made here at once: a figure naming Tile phases as its
    page, drawn on the Ladder, beside one naming the Ladder (whose frame the address does take)."""
    page.goto(f"{server}/ladder")
    page.wait_for_selector("h1", timeout=60000)
    browser.wait_for_chart(page)
    browser.wait_idle(page)
    page.evaluate(ARRIVING_JS, ["phase", "tile_phases"])
    page.evaluate(ARRIVING_JS, ["probe", "ladder"])
    page.wait_for_function("() => location.href.includes('probe=1-load')", timeout=10000)
    page.wait_for_timeout(1000)   # the player's polls (every 0.3 s) over both
    assert "phase=" not in page.url, page.url
    assert not page.errors, page.errors


def test_the_playground_switched_off_keeps_presenter_mode_in_its_address(server, page):
    open_page(page, f"{server}/coalescing?presenter=1")
    page.locator("[data-testid='stExpandSidebarButton']").first.click()
    page.locator("[data-testid='stSidebarNav'] a", has_text="Playground").click()
    page.wait_for_url(re.compile(r"/playground\?(.*&)?presenter=1(&|$)"), timeout=30000)
    assert "is off on this server" in page.inner_text("body")
    assert not page.errors, page.errors


def sidebar_folded(page) -> bool:
    return page.evaluate("document.querySelector(\"[data-testid='stSidebar']\").dataset.collapsed") == "true"


def wait_folded(page, want: bool = True) -> None:
    page.wait_for_function(f"document.querySelector(\"[data-testid='stSidebar']\").dataset.collapsed === "
                           f"'{str(want).lower()}'", timeout=10000)


def test_presenter_mode_folds_the_sidebar_on_each_page_even_after_it_was_opened(server, page):
    """Streamlit keeps a person's last open or close of the sidebar in the browser and lets it win over
    the page's own "collapsed": once opened in presenter mode, it stayed open on every page after, on
    the toggle turned off and on, and on a fresh presenter link in that browser."""
    open_page(page, f"{server}/coalescing?presenter=1")
    assert sidebar_folded(page)
    page.locator("[data-testid='stExpandSidebarButton']").first.click()   # to move on, as a presenter does
    wait_folded(page, False)
    go_to(page, "Tile phases")
    wait_folded(page)
    page.wait_for_timeout(1500)
    assert sidebar_folded(page)   # and stays folded: the request is carried out once
    # Opened again, it stays open while the presenter uses it (a control of its own, a rerun)...
    page.locator("[data-testid='stExpandSidebarButton']").first.click()
    wait_folded(page, False)
    page.locator("[data-testid='stSidebar'] [data-testid='stCheckbox'], [data-testid='stSidebar'] label",
                 has_text="Presenter mode").first.click()   # off
    page.wait_for_function("new URL(location.href).searchParams.get('presenter') === '0'", timeout=30000)
    browser.wait_idle(page)
    page.wait_for_timeout(1000)
    assert not sidebar_folded(page)
    # ...and turned on again, it folds away.
    page.locator("[data-testid='stSidebar'] label", has_text="Presenter mode").first.click()
    page.wait_for_function("new URL(location.href).searchParams.get('presenter') === '1'", timeout=30000)
    wait_folded(page)
    # A new presenter link in this browser (the open sidebar stored as its choice) opens folded.
    page.locator("[data-testid='stExpandSidebarButton']").first.click()
    wait_folded(page, False)
    open_page(page, f"{server}/bank_conflicts?presenter=1&m=32&n=32&k=32")
    wait_folded(page)
    assert not page.errors, page.errors


def test_a_gif_made_on_the_page_is_offered_for_download(server, page):
    """In a browser, Make GIF ended in Streamlit's error box every time (the frames' progress drawn from
    a thread without the page's script context); the HTML player, drawn without progress, worked."""
    open_page(page, f"{server}/tile_phases?m=16&n=16&k=16&TILE=8")
    page.get_by_text("Export this animation for slides").click()
    page.get_by_role("button", name="Make GIF").click()
    button = page.get_by_role("button", name=re.compile(r"^Download .*\.gif$"))
    button.wait_for(timeout=120000)
    with page.expect_download(timeout=30000) as got:
        button.click()
    assert got.value.suggested_filename.endswith(".gif")
    with open(got.value.path(), "rb") as f:
        assert f.read(6) == b"GIF89a"
    assert page.locator("[data-testid='stException']").count() == 0
    assert not page.errors, page.errors
