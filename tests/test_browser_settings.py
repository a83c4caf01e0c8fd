"""Shared links with a kernel's parameters and non-square sizes, opened in headless Chromium at a
projector's 1280x720 and reloaded: the controls, the folded parameter group's title, the figure and
the table show what the link asks for; a value the page cannot take is named on screen. Screenshots
go to $MATMUL_EXPLORER_SCREENSHOTS (CI: screenshots/) to be looked at."""
import pytest

from tests import browser
from tests.test_browser_ladder import engine_column, ready, shown_table
from tests.test_browser_pages import page_ready, parameters, selected, value

pytestmark = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))

WARPTILE = "BM 128, BN 128, BK 16, WM 32, WN 64, WNITER 2, TM 8, TN 4"


def sizes(page) -> list[str]:
    return [value(page, d) for d in "MNK"]


def test_a_ladder_link_with_parameters_and_non_square_sizes_survives_a_reload(server, page, shots):
    page.goto(f"{server}/ladder?rung=warptile&m=256&n=128&k=64&BK=16&TM=8")
    ready(page, "warptile")
    for attempt in ("opened", "reloaded"):
        assert sizes(page) == ["256", "128", "64"], attempt
        assert parameters(page) == f"Kernel parameters: {WARPTILE}", attempt
        assert page.locator("h3", has_text="What one block's trace counts, at 256 x 128 x 64").count() == 1
        assert page.get_by_text(f"Per block, warptile with {WARPTILE} (the parameters above)").count() == 1
        table = shown_table(page)
        assert table["warptile"] == engine_column("warptile", (256, 128, 64), {"BK": 16, "TM": 8}), attempt
        assert table["blocktile_2d"] == engine_column("blocktile_2d", (256, 128, 64)), attempt   # at its defaults
        if attempt == "opened":
            page.get_by_text("Kernel parameters:").click()   # unfolded: the selects show the link's values
            assert selected(page, "BK").strip() == "16" and selected(page, "TM").strip() == "8"
            page.wait_for_timeout(600)   # the group's unfolding, before the picture
            page.screenshot(path=str(shots / "settings-ladder-warptile-1280x720.png"))
            page.reload()
            ready(page, "warptile")
    assert all(f"{k}={v}" in page.url for k, v in {"m": 256, "n": 128, "k": 64, "BK": 16, "TM": 8}.items())
    assert not page.errors, page.errors


def test_a_bank_conflicts_link_with_a_rungs_parameters_and_a_bad_size_says_so(server, page, shots):
    page.goto(f"{server}/bank_conflicts?kernel=warptile&m=0&n=64&k=32&BK=16&TM=8")
    page_ready(page)
    for attempt in ("opened", "reloaded"):
        assert sizes(page) == ["64", "64", "32"], attempt
        assert parameters(page) == f"Kernel parameters: {WARPTILE}", attempt
        heads = " ".join(browser.shown(page)["heads"])
        assert f"warptile, {WARPTILE}, warp 0" in heads, heads
        if attempt == "opened":
            alert = page.locator("[data-testid='stAlert']", has_text="?m=0")
            assert alert.inner_text().strip().endswith("?m=0 is not a size this page takes (1 to 128); showing m=64")
            page.screenshot(path=str(shots / "settings-bank-warptile-1280x720.png"))
            page.reload()
            page_ready(page)
    # The page wrote the size it shows: the reloaded link is one the page takes, so no message now.
    assert "m=64" in page.url and page.locator("[data-testid='stAlert']", has_text="?m=0").count() == 0
    assert not page.errors, page.errors
