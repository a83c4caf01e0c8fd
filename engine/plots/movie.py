"""Animations for slides: an animated figure (engine/plots/animation.py) as an animated GIF, an MP4 and a
self-contained HTML player, at a projector's 1280x720 and at the frame rate its Play button plays.

The frames are not redrawn here: one headless Chromium page holds the HTML player (the figure, its
frames, plotly.js and player.js), and each frame is what Plotly.animate shows after stepping to it,
exactly as the page's Step button does, captured as a PNG of the 1280x720 screen. Pillow writes the
GIF, PyAV (FFmpeg's libraries) the MP4. One Chromium page costs ~2 s to open; each frame then ~0.1 s
(~0.05 s taking the picture, once Chromium no longer waits for a display's vsync to draw it),
where kaleido's per-picture export redraws the whole figure from scratch (~0.3 s a frame).
"""
from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import queue
import shutil
import tempfile
import threading
from fractions import Fraction
from pathlib import Path
from typing import Callable, Iterable

import plotly.io as pio
from plotly.offline import get_plotlyjs

from engine import lifecycle
from engine.errors import EngineError
from engine.plots import style
from engine.plots.animation import PLAYER_JS

FORMATS = {"gif": "image/gif", "mp4": "video/mp4", "html": "text/html"}
SCREEN = (1280, 720)   # a projector's: every export is this size
# What making one export holds (engine/devices/line.py): Chromium (~250 MB resident, and a page per
# window), the frames as
# PNG (~0.1 MB each) and decoded while encoding (one 1280x720 RGB frame at a time).
EXPORT_BYTES = 600 * 2**20
# Chromium windows taking frames at once: one per core, two at most (a window's page costs ~150 MB)
WINDOWS = max(1, min(2, os.cpu_count() or 1))
NO_CHROME = ("animation export needs Chrome or Chromium: install one (`apt install chromium`)")
NO_CODECS = "animation export needs Pillow and PyAV: python3 -m pip install -r requirements.txt"
# The HTML player: the figure centred on the screen under a title line, as presenter mode shows it.
# In a capture (#capture) the Play, Pause and Step buttons are hidden (a video cannot press them);
# the slider stays, so the frames say how far the animation has gone.
_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
html, body {{margin: 0; background: {page}; font-family: {font};}}
body {{min-height: 100vh; display: flex; flex-direction: column; align-items: center; justify-content: center;}}
h1 {{font-size: 26px; font-weight: 600; color: {ink}; margin: 0 0 6px 0; width: {width}px;}}
body.capture {{overflow: hidden;}}
body.capture .updatemenu-container {{display: none;}}
</style></head>
<body><h1>{title}</h1><div id="figure"></div>
<script>if (location.hash === "#capture") document.body.classList.add("capture");</script>
{plotly}
<script>{player}</script>
<script>
window.__figure = JSON.parse({figure});
window.__ready = Plotly.newPlot("figure", window.__figure.data, window.__figure.layout,
    {{displayModeBar: false, responsive: false}}).then((gd) => Plotly.addFrames(gd, window.__figure.frames))
  .then(() => {{
    // a frame of a video is the screen: a figure taller than it is shown whole, smaller
    const over = document.body.scrollHeight / window.innerHeight;
    if (document.body.classList.contains("capture") && over > 1) document.body.style.zoom = 1 / over;
  }});
</script></body></html>
"""


def figure_dict(fig) -> dict:
    """The figure as the page sends it (frames and player included)."""
    return fig if isinstance(fig, dict) else fig.to_dict()


def frame_names(fig) -> list[str]:
    return [f["name"] for f in figure_dict(fig).get("frames", [])]


def _play(fig) -> dict:
    """The Play button's animation options: its frame duration is the page's frame rate."""
    menus = figure_dict(fig)["layout"].get("updatemenus") or []
    for button in (menus[0].get("buttons", []) if menus else []):
        if "Play" in button.get("label", ""):
            return button["args"][1]
    raise EngineError("this figure has no Play button: it is not an animation")


def frame_ms(fig) -> int:
    """Milliseconds per frame, as the page plays it."""
    return int(_play(fig)["frame"]["duration"])


def player_html(fig, title: str, plotly_src: str | None = None) -> str:
    """A self-contained page (plotly.js embedded, about 4.5 MB): the figure with its frames, Play,
    Pause, Step and the slider, opening offline. `title` heads it. With plotly_src, the page loads
    plotly.js from that file beside it instead (the capture's own copy: Chromium compiles a script
    file while the page loads, an embedded one only when the parser reaches it)."""
    d = figure_dict(fig)
    if not d.get("frames"):
        raise EngineError("this figure has no frames: it is not an animation")
    width = int(d["layout"].get("width") or style.PRESENTER.width)
    d = {"data": d["data"], "layout": {**d["layout"], "width": width, "autosize": False}, "frames": d["frames"]}
    safe = lambda text: text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")   # noqa: E731
    # The figure as a JSON string that the page parses (JSON.parse reads a large figure faster than
    # a script's object literal); "</" inside a script ends it: written "<\\/", it is the same data
    data = json.dumps(pio.to_json(d, validate=False, remove_uids=False)).replace("</", "<\\/")
    plotly = (f'<script src="{plotly_src}"></script>' if plotly_src else f"<script>{get_plotlyjs()}</script>")
    return _PAGE.format(title=safe(title), page=style.PAGE_BACKGROUND, font=style.FONT_FAMILY.replace('"', "'"), ink=style.INK, width=width,
                        plotly=plotly, player=PLAYER_JS, figure=data)


_PLOTLY_FILE = "plotly.min.js"   # beside the capture's page


def chromium_path() -> str:
    """The Chrome or Chromium the export drives, found as kaleido finds it; a one-line EngineError if none."""
    try:
        from choreographer.browsers.chromium import Chromium  # noqa: PLC0415 - choreographer's own lookup
        path = Chromium.find_browser(skip_local=False)
    except ImportError:
        raise EngineError(NO_CODECS) from None
    path = path or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path or not Path(path).is_file():
        raise EngineError(NO_CHROME)
    return str(path)


def capture(fig, title: str, each: Callable[[bytes], None],
            progress: Callable[[int, int], None] = lambda done, total: None) -> None:
    """Every frame of the figure as the HTML player shows it, a 1280x720 PNG each, handed to each()
    in order as it is taken; progress(done, total) after each."""
    html = player_html(fig, title, _PLOTLY_FILE)
    path = chromium_path()
    names = frame_names(fig)
    redraw = bool(_play(fig)["frame"].get("redraw", False))
    with tempfile.TemporaryDirectory(prefix="matmul-movie-") as tmp:
        page = Path(tmp) / "player.html"
        page.write_text(html, encoding="utf-8")
        (Path(tmp) / _PLOTLY_FILE).write_text(get_plotlyjs(), encoding="utf-8")
        _in_own_loop(_capture(path, page.as_uri() + "#capture", names, redraw, each, progress))


def _in_own_loop(work) -> None:
    """Runs the coroutine to its end in a thread of its own: the caller's thread may already run an
    event loop (Playwright's sync API does), where asyncio.run would refuse or wait for ever."""
    failed: list[BaseException] = []

    def run():
        try:
            asyncio.run(work)
        except BaseException as exc:   # noqa: BLE001 - raised again in the caller's thread
            failed.append(exc)
    thread = threading.Thread(target=run, name="animation-capture", daemon=True)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]


async def _capture(path: str, url: str, names: list[str], redraw: bool, each, progress) -> None:
    import choreographer  # noqa: PLC0415 - needed only here

    def ok(response: dict) -> dict:
        if "error" in response:
            raise EngineError(f"animation export: Chromium said {response['error'].get('message', response['error'])}")
        return response["result"]

    async def evaluate(tab, expression: str):
        result = ok(await tab.send_command("Runtime.evaluate", params={
            "expression": expression, "awaitPromise": True, "returnByValue": True}))
        if "exceptionDetails" in result:
            raise EngineError(f"animation export: the player failed ({result['exceptionDetails'].get('text', '')})")
        return result["result"].get("value")

    width, height = SCREEN
    options = json.dumps({"frame": {"duration": 0, "redraw": redraw}, "transition": {"duration": 0},
                          "mode": "immediate"})

    async def open_window(browser):
        # a window each, not a tab: Chromium draws only a window's front tab
        tab = await browser.create_tab("", window=True)
        ok(await tab.send_command("Emulation.setDeviceMetricsOverride", params={
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}))
        ok(await tab.send_command("Page.enable"))
        loaded = tab.subscribe_once("Page.loadEventFired")
        ok(await tab.send_command("Page.navigate", params={"url": url}))
        await asyncio.wait_for(loaded, 60)
        await evaluate(tab, "window.__ready.then(() => document.fonts.ready).then(() => true)")
        return tab

    taken: dict[int, bytes] = {}
    handed = 0

    async def take(tab, which):
        nonlocal handed
        for i in which:
            # Plotly.animate resolves once the frame is drawn; the screenshot waits for it to be painted.
            await evaluate(tab, f"Plotly.animate('figure', [{json.dumps(names[i])}], {options}).then(() => true)")
            shot = ok(await tab.send_command("Page.captureScreenshot", params={"format": "png",
                                                                               "optimizeForSpeed": True}))
            taken[i] = base64.b64decode(shot["data"])
            while handed in taken:   # in order, whichever window took it
                each(taken.pop(handed))
                handed += 1
                progress(handed, len(names))

    with lifecycle.browser_profile("matmul-movie-profile-") as profile:
        async with choreographer.Browser(path=path, headless=True, browser_cls=_unpaced(), tmp_dir=profile) as browser:
            lifecycle.browser_started(profile)
            windows = await asyncio.gather(*[open_window(browser) for _ in range(WINDOWS)])
            lifecycle.browser_started(profile)   # where the link came after the first look
            # the frames dealt out in turn: each window steps through every WINDOWS-th frame
            await asyncio.gather(*[take(tab, range(w, len(names), len(windows))) for w, tab in enumerate(windows)])


# Chromium draws at most 60 frames a second, each when the (emulated) display's vsync says: a
# screenshot waited for that tick, ~40 ms of each frame's ~85. The page is drawn the same without
# the pacing; only when is changed, not what.
UNPACED = ("--disable-frame-rate-limit", "--disable-gpu-vsync")


def _unpaced():
    """choreographer's Chromium, started with UNPACED too (it takes no flags of the caller's)."""
    from choreographer.browsers.chromium import Chromium  # noqa: PLC0415 - needed only here

    class Unpaced(Chromium):
        def get_cli(self):
            return [*super().get_cli(), *UNPACED]
    return Unpaced


def _images(pngs: Iterable[bytes]):
    try:
        from PIL import Image  # noqa: PLC0415
    except ImportError:
        raise EngineError(NO_CODECS) from None
    for png in pngs:
        yield Image.open(io.BytesIO(png)).convert("RGB")


def gif(pngs: Iterable[bytes], ms: int) -> bytes:
    """An animated GIF, looping, each frame shown `ms` milliseconds (GIF counts in hundredths: the
    pages' durations are all whole hundredths). Each frame has its own palette of its 256 commonest
    colours: a figure's flat fills and lane colours are far fewer, so they come out exact, and only
    the edges of anti-aliased text lose a shade."""
    from PIL import Image  # noqa: PLC0415
    frames = [image.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
              for image in _images(pngs)]
    if not frames:
        raise EngineError("an animation with no frames has nothing to export")
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=ms, loop=0,
                   optimize=False, disposal=1)
    return out.getvalue()


def mp4(pngs: Iterable[bytes], ms: int) -> bytes:
    """An H.264 MP4 (yuv420p, which every player and slide tool plays) at 1000/ms frames a second."""
    try:
        import av  # noqa: PLC0415
    except ImportError:
        raise EngineError(NO_CODECS) from None
    # faststart (the index first, so a web page or an LMS plays it while it loads) rewrites the
    # file at its end: a real file, not a buffer
    with tempfile.TemporaryDirectory(prefix="matmul-movie-") as tmp:
        path = Path(tmp) / "animation.mp4"
        _encode_mp4(av, path, pngs, ms)
        return path.read_bytes()


def _encode_mp4(av, path: Path, pngs: Iterable[bytes], ms: int) -> None:
    with av.open(str(path), mode="w", format="mp4", options={"movflags": "+faststart"}) as container:
        stream = container.add_stream("libx264", rate=Fraction(1000, ms))
        stream.width, stream.height = SCREEN
        stream.pix_fmt = "yuv420p"
        # crf 18: the figures' thin outlines and small text stay sharp; ultrafast encodes a frame in ~8 ms
        # (veryfast took 30, beside Chromium on two cores), its larger file no matter for a slide
        stream.options = {"crf": "18", "preset": "ultrafast"}
        for image in _images(pngs):
            for packet in stream.encode(av.VideoFrame.from_image(image)):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def export(fig, fmt: str, title: str, progress: Callable[[int, int], None] = lambda done, total: None) -> bytes:
    """The figure's animation as `fmt` (gif, mp4 or html), at 1280x720 and the page's frame rate.
    The frames are encoded in a thread as Chromium takes them: the two overlap on a small machine."""
    if fmt not in FORMATS:
        raise EngineError(f"an animation exports as {', '.join(FORMATS)}, not {fmt!r}")
    if fmt == "html":
        return player_html(fig, title).encode()
    encode, ms = (gif if fmt == "gif" else mp4), frame_ms(fig)
    frames: queue.Queue = queue.Queue()
    done: dict = {}
    ended, abandoned = threading.Event(), threading.Event()

    def taken():   # the frames as capture hands them over, up to the None it puts last
        while (png := frames.get()) is not None:
            if abandoned.is_set():
                raise EngineError("the export was stopped")
            yield png
        ended.set()
        if abandoned.is_set():   # the None of a capture that failed or was stopped: no file to finish
            raise EngineError("the export was stopped")

    def encoder():
        try:
            done["data"] = encode(taken(), ms)
        except BaseException as exc:   # noqa: BLE001 - handed to the caller below
            done["error"] = exc
            # Let capture finish without piling up frames, up to its None: unless the encoder had
            # read it already (no frames at all), where waiting for it had hung the export for good.
            while not ended.is_set() and frames.get() is not None:
                pass
    thread = threading.Thread(target=encoder, name=f"encode-{fmt}", daemon=True)
    thread.start()
    try:
        capture(fig, title, frames.put, progress)
    except BaseException:
        abandoned.set()   # a Ctrl-C or a failure: the frames taken so far are not encoded first
        raise
    finally:
        frames.put(None)
        thread.join()
    if "error" in done:
        raise done["error"]
    return done["data"]
