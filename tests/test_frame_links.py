"""The frame an animation stands on is part of the page's link (?step= on Coalescing and Bank conflicts,
?phase= on Tile phases): a link opens the figure there, reruns and coming back to the page keep it,
and a link's frame the animation lacks is said in one line. The player keeps the address at the frame
shown (engine/plots/player.js; tests/test_browser_frames.py drives that part in Chromium)."""
import json
from pathlib import Path

import pytest

from engine.plots import animation
from tests.test_pages import figures, open_page

pytestmark = pytest.mark.usefixtures("cpu_mode")

PAGES = [("pages/coalescing.py", "step", {}), ("pages/bank_conflicts.py", "step", {"m": "32", "n": "32", "k": "32"}),
         ("pages/tile_phases.py", "phase", {})]


def shows(fig: dict, name: str) -> bool:
    """The figure as sent stands on frame `name`: the slider there, and every trace that frame moves
    holding that frame's values (what Plotly draws before anything is played)."""
    names = [f["name"] for f in fig["frames"]]
    frame = fig["frames"][names.index(name)]
    return fig["layout"]["sliders"][0]["active"] == names.index(name) and all(
        holds(fig["data"][t], d) for t, d in zip(frame["traces"], frame["data"]))


def holds(trace: dict, update: dict) -> bool:
    return all(holds(trace.get(k, {}), v) if isinstance(v, dict) else trace.get(k) == v for k, v in update.items())


def warnings(at) -> list[str]:
    return [w.value for w in at.warning]


@pytest.mark.parametrize("page,key,params", PAGES)
def test_a_link_opens_the_animation_on_the_frame_it_names(page, key, params):
    plain = figures(open_page(page, params))[0]
    names = [f["name"] for f in plain["frames"]]
    assert len(names) >= 4 and shows(plain, names[0])
    at = open_page(page, {**params, key: names[3]})
    fig = figures(at)[0]
    assert shows(fig, names[3]) and not shows(fig, names[0])
    assert fig["layout"]["meta"]["url_key"] == key
    assert at.query_params[key] == names[3] and not warnings(at)
    # The browser reports the frame it was stepped to (view_state.frame_sink); the next rerun (another
    # control changed) opens there. The query string that rerun carries is the frontend's own copy, the
    # one the server last wrote, not the address the player rewrote: it must not win.
    at.session_state[f"{Path(page).stem}._frame.{key}"] = names[2]
    at.query_params[key] = names[3]
    at.run()
    assert shows(figures(at)[0], names[2]) and at.query_params[key] == names[2]


@pytest.mark.parametrize("page,key,params", PAGES)
def test_a_frame_the_animation_lacks_is_one_line_and_opens_on_the_first(page, key, params):
    at = open_page(page, {**params, key: "999-x"})
    fig = figures(at)[0]
    first = fig["frames"][0]["name"]
    assert shows(fig, first)
    said = [w for w in warnings(at) if f"?{key}=999-x" in w]
    assert said == [f"?{key}=999-x is not a frame of this animation ({first} to {fig['frames'][-1]['name']}): "
                    f"opening on {first}"]
    at.run()   # said for the link, once: not again on the page's later runs
    assert not [w for w in warnings(at) if f"?{key}=" in w]


def test_a_long_link_frame_is_cut_in_its_line():
    at = open_page("pages/coalescing.py", {"step": "9" * 5000})
    said = [w for w in warnings(at) if "?step=" in w]
    assert len(said) == 1 and len(said[0]) < 160 and said[0].startswith("?step=" + "9" * 40 + "…")


def test_coming_back_to_the_page_opens_on_the_frame_it_was_left_on():
    at = open_page("pages/coalescing.py", {"step": "7"})
    assert shows(figures(at)[0], "7")
    at.switch_page("pages/tile_phases.py").run()
    assert "step" not in at.query_params
    at.switch_page("pages/coalescing.py").run()
    assert shows(figures(at)[0], "7") and at.query_params["step"] == "7"


def test_a_coalescing_step_outside_the_window_shown_opens_on_the_windows_first():
    """?step= names an instruction of the warp; the figure holds the window from ?from= on."""
    at = open_page("pages/coalescing.py", {"from": "3", "step": "2"})
    fig = figures(at)[0]
    assert fig["frames"][0]["name"] == "3" and shows(fig, "3")
    assert at.query_params["from"] == "3"


@pytest.mark.parametrize("step,start", [("200", "161"), ("161", "161"), ("257", "161"), ("160", "1")])
def test_a_coalescing_step_past_the_first_window_without_a_start_opens_the_window_holding_it(step, start):
    """k=128: 257 instructions, shown 160 at a time. ?step=200 alone had said it was not a frame (1 to 160)."""
    at = open_page("pages/coalescing.py", {"m": "32", "n": "32", "k": "128", "step": step})
    fig = figures(at)[0]
    assert fig["frames"][0]["name"] == start and shows(fig, step)
    assert at.query_params["from"] == start and at.query_params["step"] == step and not warnings(at)


def test_a_coalescing_step_past_the_last_instruction_opens_on_the_first_and_says_so():
    at = open_page("pages/coalescing.py", {"m": "32", "n": "32", "k": "128", "step": "258"})
    fig = figures(at)[0]
    assert fig["frames"][0]["name"] == "1" and shows(fig, "1") and at.query_params["from"] == "1"
    assert [w for w in warnings(at) if "?step=258 is not a frame" in w]


def test_opening_on_a_frame_merges_objects_and_leaves_the_shared_figure_alone():
    """Plotly.animate merges a frame's marker into the trace's (size, colour scale stay); the cached
    figure every session shares is not changed by one session's frame."""
    at = open_page("pages/tile_phases.py")
    fig = figures(at)[0]
    built = animation.AnimatedFigure()
    built.add_scatter(x=[0], y=[0], marker={"symbol": "square", "size": 9, "color": []}, text=["a"])
    built = animation.with_frames(built, [{"name": "a", "traces": [0], "data": [{"text": ["a"]}]},
                                          {"name": "b", "traces": [0], "data": [{"marker": {"color": [3]}, "text": ["b"]}]}],
                                  animation.controls(["a", "b"], ["a", "b"], 100, animation.style.sizes(False), False, 400))
    built.freeze()
    opened = built.opened_at("b").to_dict()
    assert opened["data"][0]["marker"] == {"symbol": "square", "size": 9, "color": [3]} and opened["data"][0]["text"] == ["b"]
    assert opened["layout"]["sliders"][0]["active"] == 1
    assert built.to_dict()["data"][0]["marker"]["color"] == [] and built.to_dict()["layout"]["sliders"][0]["active"] == 0
    assert built.opened_at("a") is built and built.opened_at(None) is built and built.opened_at("zz") is built
    assert fig["frames"][0]["name"] == "1-load"


def test_coalescing_beside_itself_is_one_panel_and_says_so():
    """Kernel and "Side by side with" the same: two identical panels had been drawn without a word."""
    at = open_page("pages/coalescing.py", {"kernel": "naive_x_cols", "compare": "naive_x_cols"})
    fig = figures(at)[0]
    assert len(fig["frames"][0]["data"][0]["text"]) == 1   # one panel's headline
    assert any("Side by side with itself" in c.value for c in at.caption)


def test_coalescing_from_instruction_steps_by_one_when_one_window_holds_them_all():
    """With 33 instructions, + on "From instruction" jumped by 160 (to the last: an animation of one frame)."""
    at = open_page("pages/coalescing.py", {"m": "32", "n": "32", "k": "16"})
    box = next(b for b in at.number_input if b.label == "From instruction")
    assert box.step == 1 and box.max < 160
    box.increment().run()
    assert next(b for b in at.number_input if b.label == "From instruction").value == 2
    long = open_page("pages/coalescing.py", {"m": "32", "n": "32", "k": "128"})
    assert next(b for b in long.number_input if b.label == "From instruction").step == 160


def test_what_a_browser_reports_is_kept_only_as_short_frame_names(monkeypatch):
    """The hidden input's text comes from whoever holds the page: frames by short lower-case page and
    frame names are kept for those pages; anything else (other names, numbers, long strings, not JSON,
    not a dict) is left out, and nothing is raised."""
    from pages.lib import view_state
    text = json.dumps({"bank_conflicts": {"step": "7", "phase": "9" * 65, "Step": "3", "x" * 17: "1", "from": 4},
                       "tile_phases": {"phase": "2-load"}, "Home": {"step": "1"}, "x" * 33: {"step": "1"},
                       "ladder": ["step", "1"]})
    state = {view_state.FRAMES_KEY: text}
    monkeypatch.setattr(view_state.st, "session_state", state)
    view_state.take_frames_shown()
    assert {k: v for k, v in state.items() if k != view_state.FRAMES_KEY} == {
        "bank_conflicts._frame.step": "7", "tile_phases._frame.phase": "2-load"}
    deep = "[" * 2000 + "]" * 2000
    long = json.dumps({"coalescing": {"step": "7"}, "x": "y" * 5000})
    for odd in (None, "", "{", "7", "[1, 2]", '{"coalescing": "7"}', "null", '"x"', deep, long, 7):
        state = {view_state.FRAMES_KEY: odd}
        monkeypatch.setattr(view_state.st, "session_state", state)
        view_state.take_frames_shown()
        assert list(state) == [view_state.FRAMES_KEY]


def test_the_pages_keep_their_frames_by_the_name_their_address_ends_in():
    """The player names a page by its address's last part (engine/plots/player.js, pageName), the
    server by the name the page gives setup_page: they must be one name, or a page's frames go to no
    page. Read from the sources: app.py's st.Page files, each page's setup_page call."""
    import ast

    from streamlit.source_util import page_icon_and_name  # how st.Page names a file's address

    root = Path(__file__).resolve().parent.parent
    files = [node.args[0].value for node in ast.walk(ast.parse((root / "app.py").read_text()))
             if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page"]
    assert len(files) >= 8
    for file in files:
        calls = [node for node in ast.walk(ast.parse((root / file).read_text()))
                 if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "setup_page"]
        named = calls[0].args[0].value
        if named == "home":   # the default page: its address ends in no name, and it has no animation
            continue
        assert page_icon_and_name(root / file)[1] == named, file


@pytest.mark.parametrize("page,key,params", PAGES)
def test_each_animation_names_the_page_whose_address_takes_its_frame(page, key, params):
    """The player wrote a figure's frame into the address of the page shown when the figure was first
    drawn: a figure arriving after a move (Back, then Forward 0.3 s later) wrote Tile phases' ?phase=
    into the Ladder's address. Each figure now names its page."""
    meta = figures(open_page(page, params))[0]["layout"]["meta"]
    assert meta == {"url_key": key, "page": Path(page).stem}



def test_the_tensor_cores_fragment_map_names_its_page_too():
    maps = [f for f in figures(open_page("pages/tensor_cores.py", {})) if f["layout"].get("meta", {}).get("url_key")]
    assert [f["layout"]["meta"] for f in maps] == [{"url_key": "lane", "page": "tensor_cores"}]
