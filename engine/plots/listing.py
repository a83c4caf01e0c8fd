"""The kernel's source beside a trace figure: its lines, wrapped and numbered, at the largest font
that fits the column (or a window around the lines the frames light up), and the band that lights
the line the current frame's access comes from.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

import plotly.graph_objects as go

from engine.kernels import sources
from engine.plots import style
from engine.plots.style import HIGHLIGHT, Sizes

# Where the listing beside a trace figure starts, as a share of the figure's width, in presenter mode.
# Its letters are a projector's there but its column is fitted to the figure with the sidebar open
# (style.Sizes.narrowest): at the normal share (about .63) a line held some 30 characters and most of
# a kernel's lines wrapped; the pictures to its left are square-celled and gave up the room unseen.
PRESENTER_CODE_FROM = .55


def source_lines(file: str) -> list[str]:
    """A kernel's source, line by line (for the listing beside a figure)."""
    return sources.load(file).text.splitlines()


@dataclass
class CodeView:
    """The source as shown: the kernel's lines (header comments are on the page already), long
    lines wrapped, and where each source line sits (display rows, top to bottom)."""
    texts: list[str]
    rows_of: dict[int, tuple[int, int]]   # source line -> (first display row, last display row)
    first: int
    last: int

    @property
    def n_rows(self) -> int:
        return len(self.texts)


def code_view(lines: list[str], chars: int, lo: int | None = None, hi: int | None = None,
              compact: bool = False) -> CodeView:
    """lines[lo-1 .. hi-1] (1-based, inclusive; default: from the kernel's `__global__` line to
    the end), each wrapped to `chars` columns with its line number in front. compact (presenter
    mode: a projector's larger letters in the same column) leaves out comments after code, halves the
    indentation and narrows the numbers' gutter: at 4 spaces a level and 5 columns of gutter,
    Tile phases' guarded load (`STS(As, ty, tx, (row < M && a_col < K) ? ...`) took 4 rows of 20
    characters."""
    if lo is None:
        lo = next((n for n, l in enumerate(lines, 1) if "__global__" in l), 1)
    hi = len(lines) if hi is None else min(hi, len(lines))
    while hi > lo and not lines[hi - 1].strip():
        hi -= 1
    digits, gap = (len(str(hi)), 1) if compact else (3, 2)
    gutter = digits + gap
    texts, rows_of = [], {}
    for n in range(lo, hi + 1):
        line = lines[n - 1].rstrip()
        if compact and "//" in line and line.strip() and not line.strip().startswith("//"):
            line = line[:line.index("//")].rstrip()
        indent = len(line) - len(line.lstrip())
        if compact:
            indent //= 2
        # a wrapped line's further rows 2 columns further in, all of them inside `chars`
        body = textwrap.wrap(line.strip(), max(chars - gutter, indent + 2 + 12), initial_indent=" " * indent,
                             subsequent_indent=" " * (indent + 2), break_long_words=True, break_on_hyphens=False) or [""]
        start = len(texts)
        for i, part in enumerate(body):
            texts.append((f"{n:>{digits}}" if i == 0 else " " * digits) + " " * gap + part)
        rows_of[n] = (start, len(texts) - 1)
    return CodeView(texts, rows_of, lo, hi)


def _start(lines: list[str], wanted: set[int]) -> int:
    """Where a listing starts: the kernel's `__global__` line, or above it the signature of a helper
    the kernel calls with a wanted line in it (mma_ldmatrix's copies, whose lit line had been left out
    of the listing): the top-level lines (at column 0, not a brace, comment or directive) its body
    follows, a `template <...>` line included."""
    start = next((n for n, l in enumerate(lines, 1) if "__global__" in l), 1)
    first = min([start, *(w for w in wanted if w >= 1)])
    if first == start:
        return start
    top = lambda n: lines[n - 1][:1] not in ("", " ", "\t", "}", "/", "#")   # noqa: E731
    while first > 1 and not top(first):
        first -= 1
    while first > 1 and top(first - 1):
        first -= 1
    return first


def code_window(lines: list[str], wanted: set[int], max_rows: int, chars: int, compact: bool) -> CodeView:
    """The kernel's source, cut to at most `max_rows` display rows around the lines the frames
    highlight (so a long kernel still reads at a legible size): the window grows from those lines
    outwards while it fits."""
    view = code_view(lines, chars, _start(lines, wanted), compact=compact)
    if view.n_rows <= max_rows or not wanted:
        return view
    first = view.first
    lo, hi = max(min(wanted), first), min(max(wanted), view.last)
    best = code_view(lines, chars, lo, hi, compact)
    grew = True
    while grew:
        grew = False
        for cand in ((lo - 1, hi), (lo, hi + 1)):
            if cand[0] < first or cand[1] > view.last:
                continue
            trial = code_view(lines, chars, *cand, compact)
            if trial.n_rows <= max_rows:
                lo, hi, best, grew = cand[0], cand[1], trial, True
    return best


def fit_code(lines: list[str], wanted: set[int], width_px: float, height_px: float, st: Sizes) -> tuple[CodeView, int]:
    """The largest code font (down to 3 points below the page's, never under st.least) at which the
    whole kernel fits the column; below that, the smallest and a window around the highlighted lines."""
    for font in range(st.code, max(st.code - 4, st.least - 1), -1):
        rows, chars = int(height_px / (font * 1.45)), chars_fitting(width_px, font)
        view = code_view(lines, chars, _start(lines, wanted), compact=st.presenter)
        if view.n_rows <= rows:
            return view, font
    return code_window(lines, wanted, rows, chars, st.presenter), font


def fit_windows(lines: list[str], frame_lines: list[int], width_px: float, height_px: float,
                st: Sizes) -> tuple[list[CodeView], list[int], int]:
    """fit_code for an animation whose frames light up `frame_lines` (one line a frame): the listing's
    windows, each frame's window (an index into them) and the font. Where the lines the frames light
    span more rows than the column holds at the smallest font, there are several windows, down the
    kernel, each frame shown the one that holds its line: one window of them all had rows shorter
    than its letters (Coalescing's warptile: 64 lines of global accesses in the height of 23 rows,
    printed on top of each other)."""
    wanted = set(frame_lines)
    view, font = fit_code(lines, wanted, width_px, height_px, st)
    rows, chars = int(height_px / (font * 1.45)), chars_fitting(width_px, font)
    if view.n_rows <= rows or not wanted:
        return [view], [0] * len(frame_lines), font
    groups: list[list[int]] = []   # the wanted lines, in runs whose rows fit the column
    for line in sorted(wanted):
        if groups and code_view(lines, chars, groups[-1][0], line, st.presenter).n_rows <= rows:
            groups[-1].append(line)
        else:
            groups.append([line])
    window_of = {line: i for i, group in enumerate(groups) for line in group}
    return ([code_window(lines, set(group), rows, chars, st.presenter) for group in groups],
            [window_of[line] for line in frame_lines], font)


def window_text(view: CodeView, x: float = 0, row_y=None) -> dict:
    """What a frame sends the listing's text trace where the listing has several windows (fit_windows):
    its window's rows, at x and row_y(row) (default: the row's number, as code_trace lays them). Sent
    after the band, as TEXT_ABOVE_BAND is."""
    y = row_y or (lambda row: row)
    return {"x": [x] * view.n_rows, "y": [y(r) for r in range(view.n_rows)], "text": view.texts}


def rows_shown(windows: list[CodeView], height_px: float, font: int) -> float:
    """The display rows the column is divided into: the tallest window's, or as many as fit at `font`
    (a short listing keeps its rows the font's height, at the top)."""
    return max(max(w.n_rows for w in windows), height_px / (font * 1.45))


def frame_text(windows: list[CodeView], view: CodeView, x: float = 0, row_y=None) -> dict:
    """What a frame sends the listing's text trace, after its band: its window's rows where the
    listing has several (window_text), else nothing new (TEXT_ABOVE_BAND)."""
    return window_text(view, x, row_y) if len(windows) > 1 else TEXT_ABOVE_BAND


def code_trace(view: CodeView, xref: str, yref: str, font: int) -> go.Scatter:
    """The listing, one display row per unit of the y axis (row 0 on top)."""
    return go.Scatter(x=[0] * view.n_rows, y=list(range(view.n_rows)), xaxis=xref, yaxis=yref, mode="text",
                      text=view.texts, textposition="middle right", hoverinfo="skip", showlegend=False,
                      textfont={"family": style.CODE_FAMILY, "size": font}, cliponaxis=False)


def highlight(view: CodeView, line: int, left: float = 0, row_y=None, half_row: float = .5) -> dict:
    """The band behind source line `line` (all its wrapped rows), from `left` to 1 across; empty if the
    line is not shown. Rows are y units (row 0 on top) unless `row_y` maps a row to its centre's y, for
    a listing laid on another axis (Coalescing's, in pixels), with `half_row` half a row there."""
    if line not in view.rows_of:
        return {"x": [], "y": []}
    r0, r1 = view.rows_of[line]
    y = row_y or (lambda row: row)
    top, bottom = y(r0) - half_row, y(r1) + half_row
    return {"x": [left, 1, 1, left, left], "y": [top, top, bottom, bottom, top]}


# What an animation frame sends the listing's text trace, after its band: Plotly's transition draws
# the traces a frame updates after (above) those it does not, in the frame's order, so a band updated
# alone moved over the text from the first step on, and its translucent yellow paled the very line it
# lit. Updated after the band (with nothing changed), the text stays on top.
TEXT_ABOVE_BAND = {"visible": True}


def highlight_trace(view: CodeView, line: int, xref: str, yref: str) -> go.Scatter:
    return go.Scatter(**highlight(view, line), xaxis=xref, yaxis=yref, fill="toself", fillcolor=HIGHLIGHT,
                      line={"width": 0}, mode="lines", hoverinfo="skip", showlegend=False)


def chars_fitting(px: float, font: int) -> int:
    return int(px / (0.62 * font)) - 1   # monospace glyphs are about 0.6 em wide

