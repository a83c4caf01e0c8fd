"""Animations for slides (engine/plots/movie.py, engine/animations.py, `python -m engine animate`): the GIF
and the MP4 have the figure's frames, at 1280x720 and the page's frame rate, each the frame the HTML
player shows at that step; the HTML player plays offline, its Step buttons included."""
import io
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from engine import animations
from engine.errors import EngineError
from engine.plots import movie
from tests import browser

ROOT = browser.ROOT
needs_browser = pytest.mark.skipif(browser.available() is not None, reason=str(browser.available()))


def png(colour, size=movie.SCREEN) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


def gif_frames(data: bytes) -> tuple[list[np.ndarray], list[int]]:
    g = Image.open(io.BytesIO(data))
    frames, durations = [], []
    for i in range(g.n_frames):
        g.seek(i)
        frames.append(np.asarray(g.convert("RGB"), dtype=np.int16))
        durations.append(g.info["duration"])
    return frames, durations


def mp4_frames(data: bytes):
    import av
    with av.open(io.BytesIO(data)) as c:
        s = c.streams.video[0]
        frames = [np.asarray(f.to_image(), dtype=np.int16) for f in c.decode(video=0)]
        return frames, s.codec_context.name, s.average_rate, (s.width, s.height)


# ------------------------------------------------------------------------------ encoders

def test_gif_has_every_frame_at_the_pages_duration_and_loops():
    colours = [(255, 0, 0), (0, 128, 255), (30, 30, 30), (255, 200, 0)]
    data = movie.gif([png(c) for c in colours], 300)
    frames, durations = gif_frames(data)
    assert len(frames) == 4 and durations == [300] * 4
    assert Image.open(io.BytesIO(data)).info["loop"] == 0
    for frame, colour in zip(frames, colours):   # flat colours come out exact
        assert frame.shape == (720, 1280, 3) and (frame == colour).all()


def test_mp4_is_h264_at_the_pages_frame_rate():
    colours = [(255, 0, 0), (0, 0, 255), (0, 160, 0)]
    frames, codec, rate, size = mp4_frames(movie.mp4([png(c) for c in colours], 300))
    assert codec == "h264" and size == (1280, 720) and rate == pytest.approx(1000 / 300)
    assert len(frames) == 3
    for frame, colour in zip(frames, colours):
        assert np.abs(frame.mean(axis=(0, 1)) - colour).max() < 12


def test_the_frame_rate_is_the_play_buttons():
    fig, _ = animations.tensor_cores(speed="fast")
    assert movie.frame_ms(fig) == animations.SPEEDS["tensor_cores"]["fast"] == 250
    assert len(movie.frame_names(fig)) == 32


def test_a_figure_without_frames_is_refused_in_one_line():
    import plotly.graph_objects as go
    with pytest.raises(EngineError, match="not an animation"):
        movie.export(go.Figure(), "gif", "x")
    fig, _ = animations.tensor_cores()
    with pytest.raises(EngineError, match="gif, mp4, html"):
        movie.export(fig, "avi", "x")


def test_the_pages_speed_controls_are_the_exports_frame_rates():
    """Each animated page's Speed control reads its milliseconds from engine/animations.py, so an
    export at that speed plays at the page's rate."""
    for view in animations.VIEWS:
        text = (ROOT / "pages" / f"{view}.py").read_text()
        assert f'animations.SPEEDS["{view}"]' in text, view


def test_the_cli_defaults_are_the_pages():
    """The CLI's figure for a page's defaults is the page's figure (the same headlines, frames and rate)."""
    from pages import bank_conflicts  # noqa: F401 - only that it exists; the page runs under Streamlit
    fig, title = animations.bank_conflicts()
    d = fig.to_dict()
    assert "shared_bank_conflicts, TILE 32, PAD 0, warp 0" in title and movie.frame_ms(fig) == 400
    assert "32-way" in d["frames"][0]["data"][0]["text"][0]


# ------------------------------------------------------------------------------ in Chromium

def capture_page(chrome, fig, tmp_path):
    """(context, page): the HTML player of fig opened in capture mode, as the export opens it, ready."""
    page_file = tmp_path / "player.html"
    page_file.write_text(movie.player_html(fig, "reference"))
    context = chrome.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(page_file.as_uri() + "#capture")
    page.wait_for_function("() => window.__ready && document.querySelector('.js-plotly-plot')")
    page.evaluate("() => window.__ready")
    return context, page


def player_shots(chrome, fig, tmp_path) -> list[np.ndarray]:
    """What the HTML player shows at each frame in capture mode, stepped with Plotly.animate, as
    Playwright sees it: the reference the video frames are checked against."""
    context, page = capture_page(chrome, fig, tmp_path)
    shots = []
    for name in movie.frame_names(fig):
        page.evaluate("(n) => Plotly.animate('figure', [n], {frame: {duration: 0, redraw: false}, "
                      "transition: {duration: 0}, mode: 'immediate'})", name)
        page.wait_for_timeout(50)
        shots.append(np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("RGB"), dtype=np.int16))
    context.close()
    return shots


@needs_browser
def test_gif_and_mp4_are_frame_for_frame_what_the_player_plays(chrome, tmp_path, shots):
    fig, title = animations.tile_phases(speed="fast")   # 6 phases: load, compute, three times
    names = movie.frame_names(fig)
    assert len(names) == 6
    reference = player_shots(chrome, fig, tmp_path)
    gif, durations = gif_frames(movie.export(fig, "gif", "reference"))
    mp4, codec, rate, size = mp4_frames(movie.export(fig, "mp4", "reference"))
    assert durations == [300] * 6 and rate == pytest.approx(1000 / 300) and size == (1280, 720)
    assert len(gif) == len(mp4) == 6
    for i in range(len(reference)):
        Image.fromarray(gif[i].astype(np.uint8)).save(shots / f"export-tile-phases-gif-{i}.png")
        for frames, what in ((gif, "gif"), (mp4, "mp4")):
            diffs = [np.abs(frames[i] - other).mean() for other in reference]
            # frame i is the player's frame i, not its neighbour's
            assert int(np.argmin(diffs)) == i, (what, i, diffs)
            assert diffs[i] < 2.0, (what, i, diffs)


@needs_browser
def test_each_captured_frame_has_the_sliders_knob_on_its_own_tick(chrome, tmp_path):
    """A capture takes its screenshot as soon as Plotly.animate has drawn the frame. The slider's knob
    glided to its tick for 150 ms (Plotly's default slider transition), so the GIF's knob lagged its
    headline ('instruction 8' with the knob at 7.7) and, dealt out to windows in turn, stepped backwards."""
    fig, _ = animations.coalescing(speed="fast", m=20, n=24, k=8)
    context, page = capture_page(chrome, fig, tmp_path)
    names = movie.frame_names(fig)
    assert len(names) > 3
    for i, name in enumerate(names):
        # as the capture steps (engine/plots/movie.py), then one painted frame
        off = page.evaluate("""async (n) => {
            await Plotly.animate('figure', [n], {frame: {duration: 0, redraw: false},
                                                 transition: {duration: 0}, mode: 'immediate'});
            await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
            const mid = (e) => { const b = e.getBoundingClientRect(); return b.left + b.width / 2; };
            const gd = document.querySelector('.js-plotly-plot');
            const ticks = Array.from(gd.querySelectorAll('.slider-tick-rect')).map(mid);
            return mid(gd.querySelector('.slider-grip-rect')) - ticks[gd._fullLayout.sliders[0].active]; }""", name)
        assert abs(off) < 1.5, (i, name, off)
    context.close()


@needs_browser
def test_the_html_player_plays_and_steps_offline(chrome, tmp_path):
    fig, _ = animations.bank_conflicts(speed="fast", size=32)
    heads = [re.sub(r"<[^>]+>", "", f["data"][0]["text"][0]) for f in fig.to_dict()["frames"]]   # as drawn
    page_file = tmp_path / "bank.html"
    page_file.write_bytes(movie.export(fig, "html", "Bank conflicts"))
    context = chrome.new_context(viewport=browser.VIEW)
    page = context.new_page()
    outside, errors = [], []
    page.on("request", lambda r: r.url.startswith("file:") or outside.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_file.as_uri())
    page.wait_for_selector(".updatemenu-button")
    assert browser.shown(page)["heads"] == [heads[0]]
    browser.click_button(page, "Step ▶")
    browser.click_button(page, "Step ▶")
    s = browser.wait_settled(page)
    assert s["active"] == 2 and s["heads"] == [heads[2]], s
    browser.click_button(page, "▶ Play")
    page.wait_for_timeout(800)
    browser.click_button(page, "❚❚ Pause")
    s = browser.wait_settled(page)
    assert s["active"] > 3 and s["heads"] == [heads[s["active"]]], s
    assert not outside and not errors, (outside, errors)
    context.close()


@needs_browser
def test_cli_writes_each_format_and_refuses_what_it_did_not_write(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "engine", "animate", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
    out = tmp_path / "tiles.gif"
    r = run("tile_phases", "--speed", "slow", "--out", str(out))
    assert r.returncode == 0, r.stderr
    frames, durations = gif_frames(out.read_bytes())
    assert len(frames) == 6 and durations == [1600] * 6 and frames[0].shape == (720, 1280, 3)
    assert "6 frames at 1600 ms" in r.stdout
    html = tmp_path / "tiles.html"
    assert run("tile_phases", "--out", str(html)).returncode == 0
    assert b"Tile phases: tiled_guarded" in html.read_bytes()
    r = run("tile_phases", "--out", str(html))   # its own file: replaced
    assert r.returncode == 0, r.stderr
    notes = tmp_path / "notes.mp4"
    notes.write_text("my lecture notes")
    r = run("coalescing", "--out", str(notes))
    assert r.returncode == 2 and "is not replaced" in r.stderr and notes.read_text() == "my lecture notes"
    r = run("coalescing", "--out", str(tmp_path / "x.avi"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and ".gif, .mp4, .html" in r.stderr
    r = run("tile_phases", "--bx", "9", "--out", str(tmp_path / "y.gif"))
    assert r.returncode == 2 and "block x must be 0 to 2" in r.stderr, r.stderr


@pytest.mark.parametrize("start, message", [("0", "the first instruction is numbered 1; got 0"),
                                            ("-5", "the first instruction is numbered 1; got -5"),
                                            ("100000", "instruction 100000 is past its last")])
@pytest.mark.parametrize("view", ["coalescing", "bank_conflicts"])
def test_the_first_instruction_out_of_range_is_one_line(capsys, tmp_path, start, message, view):
    """--from 0 had drawn one frame of "instruction 0 of 33" and -5 the last five instructions (Python's
    negative indexing); 100000 had said the warp had no active lanes. (Bank conflicts takes --from too:
    its animation had held a warp's first 160 shared loads and no more.)"""
    from engine.cli import main
    assert main(["animate", view, "--from", start, "--source", "cpu", "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("args", [["tile_phases", "--kernel", "cublas_sgemm"], ["coalescing", "--kernel", "torch_mm_fp16"],
                                  ["coalescing", "--compare", "cublas_sgemm"], ["coalescing", "--kernel", "cpu_reference"]])
def test_a_kernel_without_a_source_of_ours_is_one_line(capsys, tmp_path, args):
    """cuBLAS, torch.mm and the CPU reference have no launch of ours to draw: an IndexError before."""
    from engine.cli import main
    assert main(["animate", *args, "--source", "cpu", "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not one of the explorer's CUDA sources" in err, err
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["coalescing", "--kernel", "naive_x_cols", "--pad", "1"], "coalescing has no --pad (it takes --kernel"),
    (["coalescing", "--kernel", "naive_x_cols", "--compare", "naive_x_rows", "--tile", "32"],
     "naive_x_cols and naive_x_rows have no parameter TILE"),
    (["coalescing", "--kernel", "naive_x_cols", "--tile", "32"], "naive_x_cols has no parameter TILE"),
    (["bank_conflicts", "--m", "8", "--compare", "naive_x_rows"], "bank_conflicts has no --compare, --m (it takes"),
    (["bank_conflicts", "--kernel", "blocktile_2d", "--pad", "1"], "blocktile_2d has no parameter PAD"),
    (["tile_phases", "--stores"], "tile_phases has no --stores"),
    (["tensor_cores", "--tile", "8", "--warp", "3", "--from", "4"], "tensor_cores has no --tile, --warp, --from, --source"),
    (["coalescing", "--kernel", "tiled_guarded", "--compare", "(none)", "--block", "8x4"],
     "tiled_guarded: the block follows from the parameters"),
])
def test_an_option_the_view_does_not_draw_with_is_refused(capsys, tmp_path, args, message):
    """These had drawn something else than asked and exited 0: bank_conflicts at its default size 64
    whatever --m said, coalescing's naive kernels with --tile 32 and --pad 1 dropped."""
    from engine.cli import main
    assert main(["animate", *args, "--source", "cpu", "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "x.html").exists()


def test_the_options_a_view_draws_with_still_set_it(tmp_path):
    """Given, each option reaches the figure (the defaults now come from the view, not the parser)."""
    from engine.cli import main
    assert main(["animate", "bank_conflicts", "--size", "32", "--tile", "16", "--pad", "1", "--warp", "1", "--stores",
                 "--from", "2", "--source", "cpu", "--out", str(tmp_path / "b.html")]) == 0
    html = (tmp_path / "b.html").read_text()
    assert "TILE 16, PAD 1, warp 1, M = N = K = 32" in html
    assert main(["animate", "coalescing", "--kernel", "naive_x_rows", "--compare", "tiled_guarded", "--block", "16x16",
                 "--m", "40", "--source", "cpu", "--out", str(tmp_path / "c.html")]) == 0
    assert "Coalescing: naive_x_rows beside tiled_guarded at 40x32x16, block 16x16, warp 0" in (tmp_path / "c.html").read_text()
    # a kernel whose block follows from its parameters: no block named (it had said "block 32x32")
    assert main(["animate", "coalescing", "--kernel", "tiled_guarded", "--compare", "(none)", "--source", "cpu",
                 "--out", str(tmp_path / "t.html")]) == 0
    assert "Coalescing: tiled_guarded at 32x32x16, warp 0" in (tmp_path / "t.html").read_text()


@pytest.mark.parametrize("fmt", ["gif", "mp4"])
@pytest.mark.parametrize("after", [0, 2])
def test_an_export_stopped_while_it_captures_ends_at_once(monkeypatch, fmt, after):
    """A Ctrl-C before the first frame was taken hung `animate --out x.gif` for good: the encoder, failing
    on no frames after it had read the end of them, then waited for an end that had come already."""
    import threading
    fig, _ = animations.tensor_cores(speed="fast")

    def stopped(fig, title, each, progress):
        for i in range(after):
            each(png((10 * i, 0, 0)))
        time.sleep(0.5)   # the encoder has read them and waits for the next
        raise KeyboardInterrupt
    monkeypatch.setattr(movie, "capture", stopped)
    finished, real = [], getattr(movie, fmt)

    def encoder(pngs, ms):   # the real one, noting whether it got to the end of its file
        data = real(pngs, ms)
        finished.append(True)
        return data
    monkeypatch.setattr(movie, fmt, encoder)
    raised = []

    def run():
        try:
            movie.export(fig, fmt, "x")
        except BaseException as exc:   # noqa: BLE001 - what the export raised, for the assertion
            raised.append(exc)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and len(raised) == 1 and isinstance(raised[0], KeyboardInterrupt)
    assert not finished   # a stopped export does not go on to encode the frames it had
