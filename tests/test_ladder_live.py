"""The Ladder page timed live on a real GPU (AppTest). Apart from tests/test_ladder_page.py, whose
tests run in CPU mode on any machine (its cpu_mode fixture switches the GPU off for the module)."""
import pytest

from tests.test_ladder_page import PAGE, _figures
from tests.test_pages import open_page


@pytest.mark.gpu
def test_live_timing_on_the_gpu_draws_every_rung_and_cublas():
    at = open_page(PAGE, {"m": "256", "n": "256", "k": "256"})
    next(b for b in at.button if b.label.startswith("Time every rung")).click().run()
    assert not at.exception, [e.value for e in at.exception]
    fig = next(f for f in _figures(at) if "Measured GFLOP/s" in f["layout"].get("title", {}).get("text", ""))
    assert "live on this" in fig["layout"]["title"]["text"] and all(y > 0 for y in fig["data"][0]["y"])
