"""The Playground in headless Chromium at 1280x720, used as a student does: edit the kernel in the
editor, build with Ctrl+Enter, read the error at its line (the edit still in the editor), fix it,
play the animation of the edited kernel, reload the page's link and find the edit again; presenter
mode; and the page when the server has not turned the Playground on. Screenshots go to
$MATMUL_EXPLORER_SCREENSHOTS."""
import re

import pytest

from engine import sandbox
from tests import browser
from tests.test_browser_pages import page_ready

pytestmark = [pytest.mark.skipif(browser.available() is not None, reason=str(browser.available())),
              pytest.mark.skipif(sandbox.unavailable() is not None, reason=str(sandbox.unavailable()))]


@pytest.fixture(scope="module")
def playground_server(tmp_path_factory):
    with browser.app_server({"MATMUL_EXPLORER_GPU": "0", sandbox.SWITCH_ENV: "1",
                             "MATMUL_EXPLORER_CACHE": str(tmp_path_factory.mktemp("cache"))}) as url:
        yield url


def editor(page):
    """The editor's frame (a Streamlit component in an iframe) once Ace is up in it."""
    page.wait_for_selector("iframe[title*='code_editor']", timeout=30000)
    frame = next(f for f in page.frames if "code_editor" in f.url)
    frame.wait_for_selector(".ace_editor", timeout=30000)
    return frame


def editor_text(page) -> str:
    return editor(page).evaluate("document.querySelector('.ace_editor').env.editor.getValue()")


def edit_and_build(page, old: str, new: str) -> None:
    """Replaces text in the editor as typing would (through Ace), then Ctrl+Enter, as a student builds."""
    frame = editor(page)
    frame.evaluate("""([o, n]) => { const e = document.querySelector('.ace_editor').env.editor;
                        const r = e.find(o, {caseSensitive: true, wholeWord: false, regExp: false});
                        if (!r) throw new Error('not in the editor: ' + o); e.session.replace(r, n); e.focus(); }""",
                   [old, new])
    frame.locator(".ace_text-input").press("Control+Enter")
    page.wait_for_timeout(500)
    browser.wait_idle(page)


def errors(page) -> list[str]:
    """The error messages shown (each without its icon's name, which the browser draws as a glyph)."""
    return [t.strip().splitlines()[-1] for t in page.locator("[data-testid='stAlertContentError']").all_inner_texts()]


def test_edit_break_fix_play_share_and_reload(playground_server, page, shots):
    page.goto(f"{playground_server}/playground")
    page_ready(page)
    assert "tiled_guarded" in editor_text(page)
    assert "relative error" in page.locator("[data-testid='stAlertContentSuccess']").first.inner_text()

    # A read that bypasses the access macros: refused at its line; the editor keeps the edit (it used to
    # put its first text back when the error came).
    edit_and_build(page, "float b = LDS(Bs, k, tx);", "float b = Bs[k][tx];")
    page.wait_for_function("document.querySelectorAll(\"[data-testid='stAlertContentError']\").length > 0", timeout=60000)
    shown = editor_text(page)
    line = next((i for i, t in enumerate(shown.splitlines(), 1) if "Bs[k][tx]" in t), None)
    assert line, (errors(page), shown[:3000])
    assert any(e.startswith(f"line {line}:") and "LDS/STS" in e for e in errors(page)), errors(page)
    page.screenshot(path=str(shots / "playground-rule.png"))

    # Fixed, and changed: the sum doubled. It builds, runs, and the check against float64 says it is wrong.
    edit_and_build(page, "float b = Bs[k][tx];", "float b = 2.0f * LDS(Bs, k, tx);")
    page_ready(page)
    assert not [e for e in errors(page) if e.startswith("line")]
    assert any("relative error" in e and "over" in e for e in errors(page)), errors(page)
    # The animation plays the edited kernel: its frames move and the source beside it is the edit.
    first = browser.shown(page)
    browser.click_button(page, "Step ▶")
    after = browser.wait_settled(page)
    assert after["active"] == first["active"] + 1 and after["heads"] != first["heads"]
    texts = page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot .textpoint text'))"
                          ".map(t => t.textContent).join(' ')")
    assert "2.0f * LDS(Bs, k, tx)" in texts
    page.screenshot(path=str(shots / "playground-edited.png"))

    # The link carries the edit: a reload (or a classmate opening it) brings it back.
    assert re.search(r"[?&]src=v1\.", page.url)
    link = page.url
    page.goto(link)
    page_ready(page)
    assert "2.0f * LDS(Bs, k, tx)" in editor_text(page)
    assert not page.errors


def test_presenter_mode_at_1280x720(playground_server, page, shots):
    page.goto(f"{playground_server}/playground?presenter=1")
    page_ready(page)
    plot = page.locator(".js-plotly-plot").first
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    assert box["width"] > 900    # the sidebar folded away: the figure has the screen's width
    page.screenshot(path=str(shots / "playground-presenter.png"))


def test_off_unless_the_server_turns_it_on(server, page, shots):
    page.goto(f"{server}/playground")
    page.wait_for_selector("h1", timeout=60000)
    browser.wait_idle(page)
    text = page.locator("[data-testid='stAlertContentInfo']").all_inner_texts()
    assert any("--playground" in t for t in text), text
    assert not [f for f in page.frames if "code_editor" in f.url]
    page.screenshot(path=str(shots / "playground-off.png"))


def test_a_source_it_cannot_read_keeps_the_editor_and_the_edit(playground_server, page, shots):
    """Without `extern "C"` the page stopped before the editor: the student's edit was gone, the address
    still held the build before, and the message drew `__global__` as a bold "global"."""
    page.goto(f"{playground_server}/playground?start=blank")
    page_ready(page)
    edit_and_build(page, 'extern "C" __global__', "__global__")
    page.wait_for_function("document.querySelectorAll(\"[data-testid='stAlertContentError']\").length > 0", timeout=60000)
    page.screenshot(path=str(shots / "playground-unreadable.png"))
    said = page.locator("[data-testid='stAlertContentError']").first.inner_text()
    assert 'extern "C" __global__ void' in said, said
    shown = editor_text(page)
    assert "__global__ void my_kernel" in shown and 'extern "C"' not in shown
    assert page.get_by_text("Download the .cu").count() == 1
    page.goto(page.url)   # the address carries the edit too
    page.wait_for_function("document.querySelectorAll(\"[data-testid='stAlertContentError']\").length > 0", timeout=60000)
    assert 'extern "C"' not in editor_text(page)
    assert not page.errors, page.errors


def test_a_refused_build_leaves_the_sizes_and_speed_as_they_were(playground_server, page):
    """A build the tracing rules refused stopped the page before its size controls: fixed and built
    again, the Playground showed M, N and K at 1 and Speed slow, and the next build ran at 1x1x1."""
    page.goto(f"{playground_server}/playground?start=blank&m=48&speed=fast")
    page_ready(page)
    edit_and_build(page, "STG(C, row * N + col, sum);", "C[row * N + col] = sum;")
    page.wait_for_function("document.querySelectorAll(\"[data-testid='stAlertContentError']\").length > 0", timeout=60000)
    edit_and_build(page, "C[row * N + col] = sum;", "STG(C, row * N + col, sum);")
    page_ready(page)
    speed = page.locator("[data-testid='stSlider']", has_text="Speed").locator("[data-testid='stSliderThumbValue']")
    shown = [page.get_by_label(name, exact=True).first.input_value() for name in ("M", "N", "K")]
    assert (shown, speed.inner_text()) == (["48", "64", "64"], "fast")
    assert "m=48" in page.url and "speed=fast" in page.url, page.url
    assert not page.errors, page.errors
