"""The frame an animation stands on is part of the page's link (?step= on Coalescing and Bank conflicts,
?phase= on Tile phases): a link opens the figure there, reruns and coming back to the page keep it,
and a link's frame the animation lacks is said in one line. The player keeps the address at the frame
shown (engine/plots/player.js; tests/test_browser_frames.py drives that part in Chromium)."""
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
    # The player rewrites the address as the figure is stepped; the next rerun (another control) reads it.
    at.query_params[key] = names[2]
    at.run()
    assert shows(figures(at)[0], names[2])


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
