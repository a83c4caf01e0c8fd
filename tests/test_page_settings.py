"""Every page's kernel settings (pages/lib/settings.py): each compile-time parameter of the kernel on
screen and M, N, K apart, in the URL and back, kept per page, checked against the kernel's rules as
they change; and a URL value a page cannot take named in one line, never replaced without a word
(pages/lib/view_state.py). AppTest, CPU mode."""
import json

import pytest

from engine.kernels import registry, sass
from engine.kernels.problem import make_problem
from engine.metrics import analysis, rung_counts, tensor_tiles
from engine.tracing import tracer
from tests.test_pages import figures, notes, open_page

pytestmark = pytest.mark.usefixtures("cpu_mode")


def _select(at, label: str):
    return next(s for s in at.selectbox if s.label == label)


def _said(at) -> list[str]:
    return [str(w.value) for w in at.warning]


def _errors(at) -> list[str]:
    return [str(e.value) for e in at.error]


# ---------------------------------------------------------------- a URL value the page cannot take

HOSTILE = "[answers](https://example.com/x)" + "9" * 100


@pytest.mark.parametrize("page, params", [
    ("pages/coalescing.py", {"warp": HOSTILE}),   # state(): a value the control cannot take
    ("pages/coalescing.py", {"m": HOSTILE}),
    ("pages/coalescing.py", {"nonsense" + "x" * 60: HOSTILE}),   # leave_out_unknown: name and value
    ("pages/bank_conflicts.py", {"BM" + "X" * 60: HOSTILE}),   # settings: a parameter the kernel lacks
    ("pages/benchmarks.py", {"runs": HOSTILE}),   # names_state
    ("pages/tile_phases.py", {"presenter": HOSTILE}),
    ("pages/coalescing.py", {"size": HOSTILE}),   # an older link's name
])
def test_a_link_value_is_quoted_short_and_as_the_characters_it_holds(page, params):
    """A long value had been quoted whole (only ?step= was cut), and st.warning draws Markdown: a link's
    ?warp=[answers](https://...) was drawn as a link in the page's own warning."""
    said = [w for w in _said(open_page(page, params)) if "answers" in w]
    assert said
    for line in said:
        assert len(line) < 240 and "9" * 41 not in line and "X" * 41 not in line and "x" * 41 not in line
        assert "\\[answers\\]\\(https\\:\u2060//example.com/x\\)" in line, line


@pytest.mark.parametrize("raw, why", [("0", "is not a size this page takes (1 to 128)"),
                                      ("-5", "is not a size this page takes (1 to 128)"),
                                      ("99999999", "is not a size this page takes (1 to 128)"),
                                      ("abc", "is not a whole number"),
                                      ("12.5", "is not a whole number"),
                                      # Python's int() reads these: a link's digits are ASCII
                                      ("1_0", "is not a whole number"), ("1_000", "is not a whole number"),
                                      ("\u0663", "is not a whole number"), ("\uff16\uff14", "is not a whole number")])
def test_a_bad_size_in_the_url_is_named_with_the_size_shown_instead(raw, why):
    """?m=0 became 1 without a word (and the headline then read '1 lanes -> 1 sector ... coalesced')."""
    at = open_page("pages/coalescing.py", {"m": raw, "n": "24", "k": "8"})
    raw = raw if raw.isascii() else json.dumps(raw).replace("\\", "\\\\")   # quoted in escapes (Markdown's too)
    assert f"?m={raw} {why}; showing m=32" in _said(at)
    assert at.number_input(key="coalescing.m").value == 32 and at.number_input(key="coalescing.n").value == 24
    assert at.query_params["m"] == "32"
    # the message stays while the value it names is shown, and goes once the user picks their own
    at.number_input(key="coalescing.k").set_value(9).run()
    assert f"?m={raw} {why}; showing m=32" in _said(at)
    at.number_input(key="coalescing.m").set_value(40).run()
    assert not any(w.startswith(f"?m={raw}") for w in _said(at))


@pytest.mark.parametrize("raw, shown", [(" 64", '" 64"'), ("64 ", '"64 "'), ("64\x00", '"64\\\\u0000"'),
                                        ("6\t4", '"6\\\\t4"'), ("64\u200b", '"64\\\\u200b"'),
                                        ("\u202e46", '"\\\\u202e46"'), ("64\x7f", '"64\\\\u007f"'), ("", '""'),
                                        ("6 4", '"6 4"'), ("\uff16\uff14", '"\\\\uff16\\\\uff14"')])
def test_a_value_with_spaces_or_unprintable_characters_is_quoted_as_it_is(raw, shown):
    """Quoted bare, ?m=%20%2064 read '?m=64 is not a whole number; showing m=32', a message that
    contradicts itself, and a NUL byte showed as a box."""
    said = _said(open_page("pages/coalescing.py", {"m": raw}))
    assert f"?m={shown} is not a whole number; showing m=32" in said, said


@pytest.mark.parametrize("page, key, hi", [("pages/coalescing.py", "coalescing.m", 128),
                                           ("pages/ladder.py", "ladder.k", None)])
def test_a_size_fields_help_names_the_sizes_the_page_takes(page, key, hi):
    """A size typed outside the range only turned the field red: the range was said nowhere but in
    the tooltip of a small icon on the field."""
    at = open_page(page)
    field = at.number_input(key=key)
    assert field.help.endswith(f"{int(field.min):,} to {int(field.max):,} on this page"), field.help
    assert hi is None or field.max == hi


def test_a_value_not_among_the_choices_is_named():
    """?tile=7 became 16 silently; now TILE is the parameter's own name, and 7 is not one of its values."""
    at = open_page("pages/tile_phases.py", {"TILE": "7"})
    assert "?TILE=7 is not one of the choices (8, 16, 32); showing TILE=16" in _said(at)
    assert _select(at, "TILE").value == 16
    at = open_page("pages/tensor_cores.py", {"lane": "99"})
    assert "?lane=99 is not a value this page takes (0 to 31); showing lane=0" in _said(at)
    assert at.number_input(key="tensor_cores.lane").value == 0
    at = open_page("pages/coalescing.py", {"kernel": "no_such_kernel"})
    assert any(w.startswith("?kernel=no_such_kernel is not one of the choices (naive_x_rows, ") for w in _said(at))


def test_an_older_links_names_are_read_as_the_new_ones_and_said_so():
    """?tile=8 and ?size=40 (the pages' names before every parameter had its own) were ignored without
    a word: the page showed TILE 16 at its default size."""
    at = open_page("pages/tile_phases.py", {"tile": "8", "size": "40"})
    assert _select(at, "TILE").value == 8
    assert [at.number_input(key=f"tile_phases.{d}").value for d in "mnk"] == [40, 40, 40]
    assert "?tile=8 is an older link's name: read as TILE=8" in _said(at)
    assert "?size=40 is an older link's name: read as m=40&n=40&k=40" in _said(at)
    assert "tile" not in at.query_params and at.query_params["TILE"] == "8"
    # Given both ways, the new name wins, and the message says the old one was not read.
    at = open_page("pages/tile_phases.py", {"tile": "8", "TILE": "32"})
    assert _select(at, "TILE").value == 32
    assert "?tile=8 is an older link's name: read as nothing (the link also gives TILE)" in _said(at)


def test_an_older_name_for_a_parameter_no_kernel_shown_has_is_one_line():
    """/ladder?tile=8 said "?tile=8 is an older link's name: read as TILE=8" and then "?TILE=8: blocktile_1d
    has no parameter TILE ...; ignored": two lines about one value, the first of them saying it was read."""
    at = open_page("pages/ladder.py", {"size": "17", "tile": "8"})
    said = _said(at)
    assert [w for w in said if "TILE" in w] == [
        "?tile=8 (an older link's name for TILE): blocktile_1d has no parameter TILE (takes BM, BN, BK, TM); ignored"]
    assert "?size=17 is an older link's name: read as m=17&n=17&k=17" in said
    at.number_input(key="ladder.m").set_value(20).run()   # and so on every later run
    assert [w for w in _said(at) if "TILE" in w] == [
        "?tile=8 (an older link's name for TILE): blocktile_1d has no parameter TILE (takes BM, BN, BK, TM); ignored"]


def test_a_parameter_the_kernel_does_not_have_is_named():
    """?BM=7 on a page whose kernels have no BM was ignored without a word."""
    at = open_page("pages/coalescing.py", {"BM": "7"})
    assert ("?BM=7: naive_x_rows and naive_x_cols have no parameter BM (takes no compile-time parameters); "
            "ignored") in _said(at)
    at = open_page("pages/ladder.py", {"rung": "blocktile_1d", "TN": "4", "m": "128", "n": "128", "k": "128"})
    assert "?TN=4: blocktile_1d has no parameter TN (takes BM, BN, BK, TM); ignored" in _said(at)
    # a parameter the page wrote for the kernel shown before is not the link's: dropped, not reported
    at = open_page("pages/bank_conflicts.py", {"kernel": "warptile", "m": "64", "n": "64", "k": "64"})
    at.selectbox(key="bank_conflicts.kernel").set_value("blocktile_2d").run()
    assert not _said(at) and "WM" not in at.query_params
    assert at.query_params["BM"] == "64"   # blocktile_2d's own default, not warptile's 128


# ---------------------------------------------------------------- each page's settings

def test_coalescing_takes_the_tiled_kernels_tile_and_non_square_sizes_from_its_link():
    at = open_page("pages/coalescing.py", {"kernel": "tiled_guarded", "compare": "naive_x_cols", "TILE": "8",
                                           "m": "40", "n": "24", "k": "16", "block": "16x16"})
    assert _select(at, "TILE").value == 8 and _select(at, "Block").value == "16x16"
    assert [at.number_input(key=f"coalescing.{d}").value for d in "mnk"] == [40, 24, 16]
    assert "Kernel parameters: block 16x16, TILE 8" in [e.label for e in at.expander]   # said when folded too
    assert "tiled_guarded" in notes(figures(at)[0], 0)
    _select(at, "TILE").set_value(32).run()
    assert at.query_params["TILE"] == "32" and not _errors(at)
    table = at.dataframe[0].value
    assert set(table["kernel"]) == {"tiled_guarded", "naive_x_cols"}


def test_tile_phases_and_bank_conflicts_write_every_setting_to_the_url():
    at = open_page("pages/tile_phases.py", {"m": "48", "n": "32", "k": "24"})
    _select(at, "TILE").set_value(8).run()
    assert {k: at.query_params[k] for k in ("TILE", "m", "n", "k")} == {"TILE": "8", "m": "48", "n": "32", "k": "24"}
    at = open_page("pages/bank_conflicts.py", {"kernel": "warptile", "m": "64", "n": "32", "k": "32"})
    assert [_select(at, p).value for p in registry.get("warptile").params] == list(
        registry.get("warptile").default_params().values())
    _select(at, "BK").set_value(16).run()
    assert at.query_params["BK"] == "16" and not _errors(at)
    assert "warptile, BM 128, BN 128, BK 16" in notes(figures(at)[0], 0)


def test_a_rule_the_kernel_breaks_is_said_at_once_and_nothing_is_drawn():
    """warptile with BM 32 and WM 64: no warp tile fits the block; the engine's one line, no figure."""
    at = open_page("pages/bank_conflicts.py", {"kernel": "warptile", "m": "64", "n": "64", "k": "64"})
    assert figures(at)
    _select(at, "BM").set_value(32).run()
    _select(at, "WM").set_value(64).run()
    assert not at.exception
    assert _errors(at) == [registry_reason("warptile", 64, 64, 64, BM=32, WM=64)]
    assert not figures(at) and at.query_params["BM"] == "32"     # the URL still says what was asked
    _select(at, "WM").set_value(32).run()
    assert not _errors(at) and figures(at)


def registry_reason(kernel, m, n, k, **params) -> str:
    try:
        registry.bind(registry.get(kernel), make_problem(m, n, k, params=params))
    except Exception as exc:   # noqa: BLE001 - the reason is what is compared
        return str(exc)
    raise AssertionError(f"{kernel} takes {params}")


def test_the_ladder_counts_the_chosen_rung_with_the_parameters_shown_at_non_square_sizes():
    at = open_page("pages/ladder.py", {"rung": "warptile", "m": "256", "n": "128", "k": "64", "BK": "16",
                                       "TM": "8"})
    assert [at.number_input(key=f"ladder.{d}").value for d in "mnk"] == [256, 128, 64]
    assert _select(at, "BK").value == 16 and _select(at, "TM").value == 8
    assert at.subheader[1].value == "What one block's trace counts, at 256 x 128 x 64"
    t = tracer.trace("warptile", make_problem(256, 128, 64, params={"BK": 16, "TM": 8}), [(0, 0)], "cpu")
    listing = sass.memory_instructions("warptile.cu", t.problem.params)
    want = rung_counts.metrics_table({"warptile": rung_counts.rung_counts(t, analysis.warp_instructions(t), (0, 0),
                                                                          listing)})
    assert at.table[0].value["warptile"].tolist() == want["warptile"].tolist()
    words = "BM 128, BN 128, BK 16, WM 32, WN 64, WNITER 2, TM 8, TN 4"
    assert any(f"Per block, warptile with {words} (the parameters above)" in c.value for c in at.caption)


def test_a_pages_settings_are_kept_across_navigation_each_kernel_its_own():
    """Another rung gets its own parameters, not the last rung's (warptile's BM 64 on double_buffered
    broke its rules); each rung's are kept, on leaving the page too."""
    at = open_page("pages/ladder.py", {"rung": "warptile", "m": "128", "n": "128", "k": "128"})
    _select(at, "BK").set_value(8).run()
    _select(at, "BM").set_value(64).run()
    at.number_input(key="ladder.n").set_value(256).run()
    at.selectbox(key="ladder.rung").set_value("double_buffered").run()
    assert not _errors(at) and _select(at, "BM").value == 128 and at.query_params["BM"] == "128"
    at.selectbox(key="ladder.rung").set_value("warptile").run()
    assert _select(at, "BM").value == 64 and _select(at, "BK").value == 8
    at.switch_page("pages/bank_conflicts.py").run()
    assert not at.exception and "BK" not in at.query_params
    at.switch_page("pages/ladder.py").run()
    assert _select(at, "BK").value == 8 and at.number_input(key="ladder.n").value == 256
    assert at.query_params["BK"] == "8" and at.query_params["n"] == "256"


def test_the_tensor_page_draws_the_rungs_tiles_from_the_parameters_shown():
    at = open_page("pages/tensor_cores.py", {"rung": "mma_swizzled", "BM": "64", "BN": "64", "WM": "64", "WN": "32"})
    h = tensor_tiles.hierarchy("mma_swizzled", {"BM": 64, "BN": 64, "WM": 64, "WN": 32})
    assert (h.block, h.warp) == ((64, 64), (64, 32)) and not _errors(at)
    assert any("Tiles of the parameters chosen above (BM 64, BN 64, WM 64, WN 32)" in c.value for c in at.caption)
    _select(at, "BN").set_value(256).run()
    assert at.query_params["BN"] == "256"
    # TMA rungs take any size (A and B padded first where K or N is not a multiple of 8); the WMMA rung
    # that loads whole fragments from global memory does not.
    at = open_page("pages/tensor_cores.py", {"rung": "wgmma_tma", "m": "4096", "n": "4100", "k": "4096"})
    assert not _errors(at)
    at = open_page("pages/tensor_cores.py", {"rung": "wmma_warp", "m": "4096", "n": "4100", "k": "4096"})
    assert _errors(at) == [registry_reason("wmma_warp", 4096, 4100, 4096)]


def test_the_live_sweep_offers_one_kernels_parameters_and_refuses_what_it_cannot_take(monkeypatch):
    """The Benchmarks page's live sweep (GPU mode, stood in for): the parameters of one chosen kernel,
    a combination its rules refuse said before anything runs, and the Start button off."""
    from engine.devices.gpu_client import GpuStatus
    from pages.lib import ui
    info = {"name": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132, "sm_clock_mhz": 1980,
            "memory_clock_mhz": 3201, "memory_bus_bits": 6144, "driver": 13000, "cuda": "13.0.0", "l2_bytes": 2**26,
            "total_bytes": 2**37}
    monkeypatch.setattr(ui, "device_status", lambda: GpuStatus(True, "NVIDIA H200", info=info))
    at = open_page("pages/benchmarks.py")
    at.multiselect[0].select("warptile").run()
    _select(at, "Parameters of").set_value("warptile").run()
    _select(at, "BM").set_value(32).run()
    _select(at, "WM").set_value(64).run()
    assert at.query_params["tuned"] == "warptile" and at.query_params["BM"] == "32"
    assert registry_reason("warptile", 1024, 1024, 1024, BM=32, WM=64) in _errors(at)
    assert next(b for b in at.button if b.label == "Start sweep").disabled
    _select(at, "WM").set_value(32).run()
    assert not _errors(at) and not next(b for b in at.button if b.label == "Start sweep").disabled


@pytest.mark.parametrize("page", ["pages/coalescing.py", "pages/home.py"])
def test_a_presenter_value_that_is_not_on_or_off_is_named(page):
    """?presenter=banana turned presenter mode off without a word; ?presenter=true was off too."""
    at = open_page(page, {"presenter": "banana"})
    assert "?presenter=banana is not on or off (1 or 0); showing presenter=0" in _said(at)
    assert at.toggle(key="_presenter_widget").value is False and at.query_params["presenter"] == "0"
    at.toggle(key="_presenter_widget").set_value(True).run()   # the user's own choice: the link is no longer the question
    assert not any(w.startswith("?presenter=") for w in _said(at)) and at.query_params["presenter"] == "1"
    at = open_page(page, {"presenter": "true"})
    assert at.toggle(key="_presenter_widget").value is True and not _said(at)


def test_a_start_past_the_new_kernels_last_instruction_goes_back_to_the_first():
    """From instruction 200 of naive_x_rows at K = 128, then the tiled kernel (17 global instructions for
    that warp): the start was brought to 17, the last, and the animation was one frame."""
    at = open_page("pages/coalescing.py", {"m": "32", "n": "32", "k": "128", "compare": "(none)", "from": "200"})
    assert at.number_input(key="coalescing.from").value == 200
    _select(at, "Kernel").set_value("tiled_guarded").run()
    assert at.number_input(key="coalescing.from").value == 1 and at.query_params["from"] == "1"
    fig = figures(at)[0]
    assert len(fig["frames"]) > 1


@pytest.mark.parametrize("page", ["pages/coalescing.py", "pages/tile_phases.py"])
def test_a_bad_older_size_is_one_line(page):
    """?size=abc was read as m=abc&n=abc&k=abc: four warnings, and the Play button pushed off a 720-line screen."""
    at = open_page(page, {"size": "abc"})
    assert _said(at) == ["?size=abc (an older link's name for m, n and k) is not a whole number of at least 1: left out"]


@pytest.mark.parametrize("page, hi", [("pages/coalescing.py", 128), ("pages/tile_phases.py", 128)])
def test_an_older_size_past_the_pages_sizes_is_one_line(page, hi):
    """?size=70000 was read as m, n and k and said so, then each of the three said it could not take it:
    four warnings over the first screen."""
    at = open_page(page, {"size": "70000"})
    said = _said(at)
    assert len(said) == 1, said
    assert said[0].startswith(f"?size=70000 (an older link's name for m, n and k) is not a size this page takes (1 to {hi})")
    assert all(f"{d}=" in said[0] for d in "mnk"), said
    # Changed by the user, the line goes.
    box = at.number_input(key=f"{page.split('/')[1][:-3]}.m")
    box.set_value(box.value + 8).run()
    said = _said(at)
    assert len(said) == 1 and "m=" not in said[0].split("showing")[1] and "n=" in said[0], said


@pytest.mark.parametrize("page", ["pages/coalescing.py", "pages/tensor_cores.py", "pages/benchmarks.py", "pages/ladder.py"])
def test_a_name_the_page_does_not_read_is_said_and_left_out(page):
    """?foo=bar (or a typo, ?sise=64) stayed in the URL without a word: a class handed the link saw the
    page's defaults and no reason why."""
    at = open_page(page, {"foo": "bar", "presenter": "0"})
    assert "?foo=bar is not a setting of this view: left out" in _said(at), _said(at)
    assert "foo" not in at.query_params and at.query_params["presenter"] == "0"


def test_a_block_no_kernel_shown_takes_is_said_and_left_out():
    """Two tiled kernels have no block to choose: ?block=1x1 stayed in the URL, unread and unsaid."""
    at = open_page("pages/coalescing.py", {"kernel": "tiled_guarded", "compare": "tiled_unguarded", "block": "1x1"})
    assert "?block=1x1 is not a setting of this view: left out" in _said(at), _said(at)
    assert "block" not in at.query_params and at.query_params["kernel"] == "tiled_guarded"


def test_a_name_the_page_wrote_and_no_longer_reads_leaves_the_url_without_a_word():
    """?block= written for naive kernels stayed after both were switched to tiled ones, and a link
    copied then named it as a mistake to whoever opened it."""
    at = open_page("pages/coalescing.py", {"kernel": "naive_x_rows", "compare": "naive_x_cols"})
    assert "block" in at.query_params
    _select(at, "Kernel").set_value("tiled_guarded").run()
    _select(at, "Side by side with").set_value("tiled_unguarded").run()
    assert "block" not in at.query_params and not any("block" in s for s in _said(at)), _said(at)
