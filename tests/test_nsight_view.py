"""The pages' "Beside Nsight Compute" view: on each page that shows counts, in its default view, every
counter of the configuration on screen stands beside the shipped measurement, and agrees or says why."""
import pytest

from engine.kernels import sass
from tests.test_pages import open_page

pytestmark = [pytest.mark.usefixtures("cpu_mode"),
              pytest.mark.skipif(sass.nvdisasm() is None, reason="nvdisasm needed to read the SASS")]
AGREE = {"equal", "range", "differs: explained"}


@pytest.mark.parametrize("page,params", [("pages/coalescing.py", {}), ("pages/tile_phases.py", {}),
                                         ("pages/bank_conflicts.py", {}), ("pages/ladder.py", {}),
                                         ("pages/bank_conflicts.py", {"kernel": "blocktile_2d"}),
                                         ("pages/ladder.py", {"rung": "warptile", "m": "4096", "n": "4096", "k": "4096"})])
def test_the_default_view_stands_beside_nsight_compute_and_agrees(page, params):
    at = open_page(page, params)
    views = [e for e in at.expander if e.label.startswith("Beside Nsight Compute")]
    assert views, "no Nsight Compute view"
    for view in views:
        tables = [t.value.reset_index() for t in view.table]
        assert tables, f"{view.label}: no measurement shipped for the default view"
        table = tables[0]
        assert len(table) >= 6 and set(table["agree"]) <= AGREE, table[["counter", "agree"]]
        # every difference points at its reason, written out whole under the table
        captions = [c.value for c in view.caption]
        for mark, agree in zip(table["why"], table["agree"]):
            assert (mark != "") == (agree != "equal"), (mark, agree)
            assert not mark or any(c.startswith(mark + " ") for c in captions), mark
        assert any("ncu --clock-control none" in c.value for c in view.code)
        # The note counts counters and GPUs, and names only the outcomes that occur (it had read
        # "20 counters equal, 0 within the range..., 0 unexplained" for 10 counters on two GPUs).
        note = captions[0]
        gpus = table["GPU"].nunique()
        assert f"{len(table) // gpus} counters" in note and f"of {len(table)} equal" in note, note
        assert not any(f" 0 {word}" in note for word in ("within", "different", "not compared")), note


def test_a_configuration_not_measured_says_so_and_gives_the_command():
    at = open_page("pages/tile_phases.py", {"m": "41", "n": "39", "k": "17"})
    view = next(e for e in at.expander if e.label.startswith("Beside Nsight Compute"))
    assert not view.table and any("has not measured" in c.value for c in view.caption)
    assert any("--sizes 41x39x17" in c.value for c in view.code)
