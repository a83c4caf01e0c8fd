"""The animation framework of the trace figures (engine/plots/coalescing_figures.py,
tile_phase_figures.py, bank_figures.py, tensor.py): Plotly figures that play, pause, step and scrub in the browser with
no round trip to the server, and the parts they are built of (panels on hidden axes, outlines,
the headline, the player).

Animations are Plotly frames. Two rules keep every visible element in step with the frame:
  - everything that changes from frame to frame is a scatter trace (markers, outlines, the
    highlighted source line and the headline itself, drawn as text), because Plotly moves scatter
    traces without a full redraw, while layout parts (annotations, titles) and heatmaps are not
    updated, or vanish, when frames are played without one;
  - what does not change (matrix backgrounds, names, grid lines) is drawn once, as layout shapes,
    annotations or static traces that no frame touches.
Figures are laid out in pixels, sized so that in presenter mode the headline, the figure and its
Play button fit one 1280x720 projector screen. Nothing here imports Streamlit; fonts, colours and
sizes are engine/plots/style.py's, as for every figure.
"""
from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go

from engine.plots import style
from engine.plots.style import Sizes

# Step buttons and arrow keys for every animated figure: the pages add it once (pages/lib/ui.py), the
# exported HTML player carries it (engine/plots/movie.py).
PLAYER_JS = Path(__file__).with_name("player.js").read_text()
CONTROLS_PX = 86          # below the plot: the slider, then Play / Pause / Step buttons


def rects(boxes) -> tuple[list, list]:
    """The outlines of boxes (x0, x1, y0, y1) as one scatter trace's x and y, split by None gaps."""
    xs, ys = [], []
    for x0, x1, y0, y1 in boxes:
        xs += [x0, x1, x1, x0, x0, None]
        ys += [y0, y0, y1, y1, y0, None]
    return xs, ys


def axis(fig: go.Figure, n: int, x_domain, y_domain, x_range, y_range, anchor_square: bool = False) -> tuple[str, str]:
    """One panel of a figure: hidden axis pair n (1-based) at these paper domains; returns its trace refs."""
    sx = sy = "" if n == 1 else str(n)
    clamp = lambda d: [round(min(max(v, 0.0), 1.0), 6) for v in d]   # noqa: E731 - float dust off the ends
    x_domain, y_domain = clamp(x_domain), clamp(y_domain)
    xa = {"domain": list(x_domain), "range": list(x_range), "visible": False, "anchor": f"y{sy}", "fixedrange": True}
    ya = {"domain": list(y_domain), "range": list(y_range), "visible": False, "anchor": f"x{sx}", "fixedrange": True}
    if anchor_square:   # square cells; the picture shrinks inside its domain rather than stretch
        ya.update(scaleanchor=f"x{sx}", scaleratio=1, constrain="domain", constraintoward="top")
        xa.update(constrain="domain", constraintoward="left")
    fig.layout[f"xaxis{sx}"] = xa
    fig.layout[f"yaxis{sy}"] = ya
    return f"x{sx}", f"y{sy}"


def headline_trace(text: str, xref: str, yref: str, size: int) -> go.Scatter:
    """The frame's headline, as a text trace so it moves with the frames (see the module note)."""
    return go.Scatter(x=[0], y=[0.5], xaxis=xref, yaxis=yref, mode="text", text=[text],
                      textposition="middle right", textfont={"size": size, "color": style.INK}, hoverinfo="skip",
                      showlegend=False, cliponaxis=False)



def controls(names: list[str], labels: list[str], duration: int, st: Sizes, redraw: bool,
             plot_px: float, url_key: str = "") -> dict:
    """Play / Pause / one step back / one step on (player.js does the steps), and a slider
    whose steps are the frames themselves, so it follows the animation and scrubs it. url_key: the
    page's query parameter that names the frame shown (frame names are its values), which the player
    keeps at the frame the figure stands still at."""
    args = lambda d: {"frame": {"duration": d, "redraw": redraw}, "mode": "immediate",  # noqa: E731
                      "transition": {"duration": 0}}
    font = st.base
    # The first and last tick labels are centred on the rail's ends: half of each would stand past the
    # figure's edges ('3 comput') without this room (a glyph is about 0.6 em)
    shown = _sparse(labels)
    half = lambda label: round(0.3 * max(font - 3, st.least) * len(label))   # noqa: E731
    ends = {"l": half(shown[0]) if shown else 0, "r": half(next((lab for lab in reversed(shown) if lab), ""))}
    below = lambda px: -px / plot_px   # noqa: E731 - paper coordinates of a point px below the plot
    return {
        # (the buttons sit lower as the fonts grow, so presenter mode's slider labels stay clear of them)
        "updatemenus": [{"type": "buttons", "direction": "left", "x": 0, "y": below(48 + 2 * max(0, font - 12)),
                         "xanchor": "left",
                         "yanchor": "top", "showactive": False, "font": {"size": font}, "pad": {"t": 0, "r": 6},
                         "buttons": [{"label": "▶ Play", "method": "animate",
                                      "args": [None, {**args(duration), "fromcurrent": True}]},
                                     {"label": "❚❚ Pause", "method": "animate", "args": [[None], args(0)]},
                                     {"label": "◀ Step", "method": "skip", "args": []},
                                     {"label": "Step ▶", "method": "skip", "args": []}]}],
        # The knob jumps to its frame's tick: Plotly's default glides it there over 150 ms, behind the frame
        # drawn, and an exported frame's screenshot caught it on the way (a GIF's knob lagged its headline).
        "sliders": [{"active": 0, "x": 0, "len": 1, "y": below(4), "yanchor": "top", "pad": {"t": 0, "b": 0, **ends},
                     "transition": {"duration": 0},
                     "currentvalue": {"visible": False}, "ticklen": 3, "minorticklen": 0,
                     "font": {"size": max(font - 3, st.least)},
                     "steps": [{"label": lab, "method": "animate", "args": [[name], args(0)]}
                               for name, lab in zip(names, shown)]}],
        **({"meta": {"url_key": url_key}} if url_key else {}),
    }


def _sparse(labels: list[str], most: int = 24) -> list[str]:
    """Slider tick labels: every one when few, else every k-th, so they never run together, and the
    last (a slider of 128 instructions ended its labels at 121): the k-th before it gives way where the
    two would stand closer than k."""
    if len(labels) <= most:
        return labels
    k = -(-len(labels) // most)
    shown = [i for i in range(len(labels)) if i % k == 0]
    last = len(labels) - 1
    if shown[-1] != last:
        if last - shown[-1] < k:
            shown.pop()
        shown.append(last)
    keep = set(shown)
    return [lab if i in keep else "" for i, lab in enumerate(labels)]


class AnimatedFigure(go.Figure):
    """A figure whose frames travel as the plain dicts they were built as. Plotly (and st.plotly_chart,
    which re-checks whatever dict it is given) would otherwise validate hundreds of frames property
    by property: about a second per redraw. The base figure is a normal, checked one; the frames
    hold only x, y, text, marker colours and customdata of traces that figure already has."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._plain_frames, self._controls = [], {}   # the slider has a step per frame: unchecked too
        self._frozen: dict | None = None

    def to_dict(self) -> dict:
        if self._frozen is not None:
            return self._frozen
        out = super().to_dict()
        out["layout"].update(self._controls)
        out["frames"] = self._plain_frames
        return out

    def frame_names(self) -> list[str]:
        return [f["name"] for f in self.to_dict()["frames"]]

    def opened_at(self, name: str | None) -> "AnimatedFigure":
        """This figure opening on frame `name` (the frame a page's link names) instead of its first:
        the traces that frame moves hold its values, and the slider stands on it. Anything else
        (None, a name that is no frame, the frame it opens on) is this figure. A frozen figure shared by every
        session is not touched: the copy shares all but the traces the frame moves."""
        names, base = self.frame_names(), self.to_dict()
        if name not in names or names.index(name) == base["layout"]["sliders"][0].get("active", 0):
            return self
        i = names.index(name)
        frame = base["frames"][i]
        data = list(base["data"])
        for t, d in zip(frame["traces"], frame["data"]):
            data[t] = _merged(data[t], d)
        layout = dict(base["layout"])
        layout["sliders"] = [{**layout["sliders"][0], "active": i}, *layout["sliders"][1:]]
        opened = AnimatedFigure()
        opened._frozen = {**base, "data": data, "layout": layout}
        return opened

    def on_page(self, page: str) -> "AnimatedFigure":
        """This figure saying which page it is drawn on (layout.meta.page, beside its url_key): the
        player (player.js) writes the frame it stands on into that page's address only. It had taken
        the page the address showed when the figure was first drawn, and a figure of a run that
        arrived after a move (Back to Tile phases, Forward to the Ladder 0.3 s later) wrote its
        ?phase= into the Ladder's address. A copy, as opened_at's: a frozen figure is shared."""
        base = self.to_dict()
        layout = {**base["layout"], "meta": {**base["layout"].get("meta", {}), "page": page}}
        marked = AnimatedFigure()
        marked._frozen = {**base, "layout": layout}
        return marked

    def freeze(self) -> "AnimatedFigure":
        """Done: to_dict() is computed once and the same dict handed out from then on. A figure
        shared by every session showing its view (pages/lib/ui.py cached_figure) then costs each
        of them the JSON encoding only, not plotly's deep copy of every shape and frame. Nothing may
        change the figure or that dict afterwards (st.plotly_chart only reads it)."""
        self._frozen = self.to_dict()
        return self


def _merged(trace: dict, update: dict) -> dict:
    """trace with a frame's update applied as Plotly.animate applies it: objects (marker) merged key
    by key, everything else (arrays, text) replaced."""
    out = dict(trace)
    for key, value in update.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def with_frames(fig: AnimatedFigure, frames: list[dict], player: dict) -> AnimatedFigure:
    """Gives fig its frames and its player (the layout part controls() returns), unchecked; returns fig."""
    fig._plain_frames, fig._controls = frames, player
    return fig


def apply_style(fig: go.Figure, st: Sizes) -> None:
    """The house style, with room below the plot for the player (controls())."""
    style.apply(fig, st.base, margin={"t": 8, "b": CONTROLS_PX, "l": 8, "r": 8}, showlegend=False, dragmode=False)


def headed_figure(head_px: int, body_px: int, st: Sizes):
    """A figure of a headline band over a body band, in pixels: (figure, plot height in px, a function
    from px to paper fractions)."""
    plot_px = head_px + body_px
    frac = lambda px: px / plot_px   # noqa: E731
    fig = AnimatedFigure()
    hx, hy = axis(fig, 1, (0, 1), (1 - frac(head_px), 1), (0, 1), (0, 1))
    fig.add_trace(headline_trace("", hx, hy, st.headline))
    fig.layout.height = plot_px + CONTROLS_PX + 8
    return fig, plot_px, frac

