"""The Playground page (pages/playground.py) with Streamlit's AppTest, in CPU mode: off unless switched
on, and, on, a kernel from a share link built and traced in the sandbox, its errors at their lines.
(The editor itself is a browser component: tests/test_browser_playground.py types in it.)"""
import re

import pytest

from engine import playground, sandbox
from tests.test_pages import figures, notes, open_page

pytestmark = [pytest.mark.usefixtures("cpu_mode"),
              pytest.mark.skipif(sandbox.unavailable() is not None, reason=str(sandbox.unavailable()))]
PAGE = "pages/playground.py"


@pytest.fixture
def switched_on(monkeypatch, tmp_path):
    monkeypatch.setenv(sandbox.SWITCH_ENV, "1")
    monkeypatch.setenv("MATMUL_EXPLORER_CACHE", str(tmp_path))


def texts(at, kind: str) -> list[str]:
    """The messages as a browser shows them: the Playground's quote a student's source as plain text,
    each Markdown character escaped (schema.plain), which the browser draws as itself."""
    return [re.sub(r"\\(.)", r"\1", str(e.value)) for e in getattr(at, kind)]


def test_off_unless_the_server_turns_it_on(monkeypatch):
    monkeypatch.delenv(sandbox.SWITCH_ENV, raising=False)
    at = open_page(PAGE)
    assert any("--playground" in t and "off" in t for t in texts(at, "info"))
    assert not figures(at) and not at.get("download_button")
    assert not at.warning


def test_a_shared_kernel_on_a_server_with_the_playground_off_is_said(monkeypatch):
    """?src=... opened on a server with the Playground off had been dropped without a word."""
    monkeypatch.delenv(sandbox.SWITCH_ENV, raising=False)
    at = open_page(PAGE, {"src": playground.share_token(playground.starter_source("tiled_guarded"))})
    assert any("--playground" in t for t in texts(at, "info"))
    assert texts(at, "warning") == ["This link carries a kernel of its own: it opens on a server whose Playground "
                                    "is on, from the same address."]
    assert at.query_params["src"].startswith(playground.SHARE_PREFIX)   # kept, for the server that has it on


def test_the_default_kernel_is_built_traced_and_checked(switched_on):
    at = open_page(PAGE)
    assert any("relative error" in t and "within" in t for t in texts(at, "success")), texts(at, "success")
    assert "tiled_guarded" in notes(figures(at)[0]) or "tiled_guarded" in str(figures(at)[0]["data"])
    assert at.query_params["src"].startswith(playground.SHARE_PREFIX)


def test_a_shared_link_brings_the_edited_kernel_back_and_its_error_shows(switched_on):
    edited = playground.starter_source("tiled_guarded").replace("sum += a * b;", "sum += 2.0f * a * b;")
    at = open_page(PAGE, {"src": playground.share_token(edited)})
    # its result is twice A·B: the check against float64 says so
    assert any("relative error" in t and "over" in t for t in texts(at, "error")), texts(at, "error")
    assert at.query_params["src"] == playground.share_token(edited)


def test_a_damaged_link_says_so_and_opens_the_starter(switched_on):
    token = playground.share_token(playground.starter_source("tiled_guarded"))[:-7]
    at = open_page(PAGE, {"src": token})
    assert any("could not be opened" in t and "damaged" in t for t in texts(at, "error"))
    assert any("relative error" in t for t in texts(at, "success"))


def test_a_broken_tracing_rule_is_named_at_its_line(switched_on):
    text = playground.starter_source("tiled_guarded").replace("LDS(Bs, k, tx)", "Bs[k][tx]")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "Bs[k][tx]" in t)
    at = open_page(PAGE, {"src": playground.share_token(text)})
    assert any(t.startswith(f"line {line}:") and "LDS/STS" in t for t in texts(at, "error")), texts(at, "error")
    assert not figures(at)


def test_a_compile_error_is_named_at_its_line(switched_on):
    text = playground.starter_source(playground.BLANK).replace("float sum = 0.0f;", "float sum = 0.0f\n        int x = 1;")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "int x = 1;" in t)
    at = open_page(PAGE, {"src": playground.share_token(text)})
    assert any(t.startswith(f"line {line}: error:") for t in texts(at, "error")), texts(at, "error")


def test_a_contract_the_kernel_cannot_take_says_why(switched_on):
    at = open_page(PAGE, {"start": playground.BLANK, "BX": "32", "BY": "32"})
    assert not [t for t in texts(at, "error") if "Traceback" in t]
    at.selectbox(key=next(s.key for s in at.selectbox if s.label == "BY")).set_value(32).run()
    assert any("relative error" in t for t in texts(at, "success"))


def test_counts_and_sass_of_the_whole_kernel(switched_on):
    at = open_page(PAGE, {"m": "32", "n": "32", "k": "32", "show": "counts and SASS"})
    tables = [t.value for t in at.dataframe]
    assert tables and "sectors" in " ".join(map(str, tables[0].columns))


def test_a_long_kernels_later_accesses_are_reached_a_window_at_a_time(switched_on):
    """The global and shared views showed a warp's first 160 instructions and no more: a naive kernel at
    K = 256 makes 513 global accesses a warp."""
    at = open_page(PAGE, {"start": "naive_x_cols", "k": "256"})
    assert "instruction 1 of 513 (animation: 1–160)" in notes(figures(at)[0], 0), notes(figures(at)[0], 0)
    at.number_input(key="playground.from").set_value(481).run()
    fig = figures(at)[0]
    assert len(fig["frames"]) == 33 and "instruction 513 of 513 (animation: 481–513)" in notes(fig, 32), notes(fig, 32)
    assert at.query_params["from"] == "481"


@pytest.mark.parametrize(("start", "show", "said"), [
    (playground.BLANK, "tile phases", "does not store tiles in shared memory: there are no tile phases to draw"),
    ("naive_x_rows", "tile phases", "does not store tiles in shared memory"),
    ("blocktile_1d", "tile phases", "tile phases are drawn for TILE x TILE tiles, and blocktile_1d has no TILE parameter"),
    (playground.BLANK, "counts and SASS", None)])
def test_a_kernel_without_tiles_in_shared_memory_is_said_not_crashed(switched_on, start, show, said):
    """The blank kernel (the page's own template) crashed two of its four views: a StopIteration from
    tile phases, a KeyError 'wavefronts' from counts and SASS; a starter without TILE said "No tile
    phases to show: 'TILE'"."""
    at = open_page(PAGE, {"start": start, "m": "32", "n": "32", "k": "32", "show": show})
    assert not at.exception, [e.value for e in at.exception]
    if said:
        assert any(said in t for t in texts(at, "warning")), texts(at, "warning")
    else:   # the global sites counted; no shared table
        assert [t.value for t in at.dataframe] and not any("wavefronts" in " ".join(map(str, t.value.columns))
                                                           for t in at.dataframe)


@pytest.mark.parametrize(("stored", "said"), [
    ("if (row < M && col < N && threadIdx.x == 0 && threadIdx.y == 0) {",
     "All of C: 1,020 of its 1,024 elements are written by none of the grid's 4 blocks"),
    ("if (row < M && col < N && !(row == 5 && col == 7)) {",
     "All of C: 1 of its 1,024 elements is written by none of the grid's 4 blocks")])
def test_outputs_no_block_writes_are_said_whichever_block_is_shown(switched_on, stored, said):
    """The check read only the outputs the traced block stored: a kernel writing 1 of its block's 256
    was green ("1 outputs checked ... within 1e-04"), and one missing an element of another block
    was green in every block but that one."""
    blank = playground.starter_source(playground.BLANK)
    assert "if (row < M && col < N) {" in blank
    source = blank.replace("if (row < M && col < N) {", stored)
    at = open_page(PAGE, {"src": playground.share_token(source), "m": "32", "n": "32", "k": "8"})
    assert not at.exception, [e.value for e in at.exception]
    assert not texts(at, "success"), texts(at, "success")
    assert any(said in t for t in texts(at, "error")), texts(at, "error")
    # As written, every element: green, and said so.
    at = open_page(PAGE, {"src": playground.share_token(blank), "m": "32", "n": "32", "k": "8"})
    assert any("All of C: its 1,024 elements written by the grid's 4 blocks, relative error" in t
               for t in texts(at, "success")), texts(at, "success")


def test_a_fault_in_a_block_not_shown_is_said_and_the_shown_block_still_draws(switched_on):
    """The run of every block (the check of all of C) had stopped the page on a fault in another
    block: the block shown, traced and right, drew nothing."""
    blank = playground.starter_source(playground.BLANK)
    source = blank.replace("STG(C, row * N + col, sum);",
                           "STG(C, row * N + col, sum);\n        if (blockIdx.x == 1) STG(C, M * N + col, sum);")
    line = 1 + next(i for i, t in enumerate(source.splitlines()) if "blockIdx.x == 1" in t)
    at = open_page(PAGE, {"src": playground.share_token(source), "m": "32", "n": "64", "k": "8"})
    assert not at.exception, [e.value for e in at.exception]
    assert any("Block (0, 0): 256 outputs checked" in t and f"All of C: running every block failed: my_kernel.cu:{line}: "
               "my_kernel accessed C outside its bounds (thread (0, 0) of block (1, 0))" in t
               for t in texts(at, "error")), texts(at, "error")
    assert figures(at)


def test_a_block_that_stores_nothing_says_so(switched_on):
    blank = playground.starter_source(playground.BLANK)
    source = blank.replace("if (row < M && col < N) {", "if (row < M && col < N && blockIdx.x == 0) {")
    at = open_page(PAGE, {"src": playground.share_token(source), "m": "32", "n": "64", "k": "8", "bx": "1"})
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.startswith("Block (1, 0) stores none of C.") and "1,024 of its 2,048 elements are written by none"
               in t for t in texts(at, "error")), texts(at, "error")


def test_a_grid_of_no_blocks_is_one_line(switched_on):
    """LAUNCH_GRID(..., CDIV(M - 64, BY)) at M = 64 is a grid of 0 rows: the block pickers had crashed
    the page (min_value 0 > max_value -1), and its share link carried the crash."""
    source = playground.starter_source(playground.BLANK).replace("LAUNCH_GRID(CDIV(N, BX), CDIV(M, BY));",
                                                                  "LAUNCH_GRID(CDIV(N, BX), CDIV(M - 64, BY));")
    at = open_page(PAGE, {"src": playground.share_token(source), "m": "64"})
    assert not at.exception, [e.value for e in at.exception]
    assert any("launches a grid of 2 x 0 blocks at 64x64x64" in t for t in texts(at, "error")), texts(at, "error")


@pytest.mark.parametrize(("change", "said"), [
    (("LAUNCH_BLOCK(BX, BY);", "LAUNCH_BLOCK(0, 0);"), "my_kernel's LAUNCH_BLOCK is 0 x 0 threads at these parameters"),
    (("LAUNCH_BLOCK(BX, BY);", "LAUNCH_BLOCK(2048, 1);"), "my_kernel's LAUNCH_BLOCK is 2048 x 1 threads"),
    (("int M, int N, int K)", "int M, int N, int K, int Z)"),
     "line 19: the kernel's parameter int Z is none the engine passes: its whole numbers are M, N, K")])
def test_a_launch_or_signature_the_engine_cannot_run_is_one_line(switched_on, change, said):
    """LAUNCH_BLOCK(0, 0) had said "cannot reshape array of size 0 into shape (0,4)"; 2048 threads (a
    block no GPU launches) had been traced and shown green; an int parameter the engine does not pass
    had failed in the sandbox, "KeyError: 'Z'"."""
    source = playground.starter_source(playground.BLANK).replace(*change)
    at = open_page(PAGE, {"src": playground.share_token(source), "m": "32", "n": "32", "k": "32"})
    assert not at.exception, [e.value for e in at.exception]
    assert any(said in t for t in texts(at, "error")), texts(at, "error")
    assert not texts(at, "success")
