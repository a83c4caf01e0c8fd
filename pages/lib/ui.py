"""What every page shares: its frame (title, presenter mode, the mode banner, the animation player
script), where its controls go, and how it stops with a one-line message when the engine refuses.

Pages stay thin: controls (pages/lib/view_state.py) -> an engine call (pages/lib/cached.py) -> a
figure from engine/plots/.
"""
from __future__ import annotations

import re
import secrets
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from engine.bench import schema
from engine.devices import gpu_client
from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import make_problem
from engine.plots import animation, movie
from engine.tracing import tracer
from pages.lib import cached, query, routing, server, slots, view_state
from pages.lib.slots import LINE

# Streamlit fetches its Plotly module only once a chart arrives, after the page's script has traced
# and drawn: on a browser's first visit that is seconds of JavaScript left until last. The player
# starts fetching it at once, in parallel with the server's work (same file, so loaded once).
# Back leaves the page in one press (history.js says why it would not).
_HISTORY_JS = (Path(__file__).parent / "history.js").read_text()
_FOLD_JS = (Path(__file__).parent / "fold_sidebar.js").read_text()
_PLOTLY_MODULE = next((f.name for f in (Path(st.__file__).parent / "static" / "static" / "js").glob("PlotlyChart.*.js")),
                      "")


def device_status():
    """Asked once per server (gpu_client keeps the answer): starts the GPU worker if PyCUDA is installed."""
    return gpu_client.status()


def setup_page(page: str, title: str, intro: str, has_view: bool = True) -> None:
    """Title, presenter toggle, mode banner, player script. Call first on every page; `page` names
    the page's own state, so no widget value or URL parameter leaks from one page into another.
    A page without view state in the URL (Home) passes has_view=False."""
    routing.routed_by_app()
    st.session_state["_ran"] = True
    st.session_state[query.AFTER_STOP] = st.session_state.get(query.STOPPED, False)
    server.start_once()
    server.announce_compiles()
    view_state.take_frames_shown()   # before the page's animation asks which frame it stands on
    came_from = st.session_state.get("_page")
    if has_view:
        st.session_state["_page"] = page
    # The URL describes the page the session opened on (a shared link): it seeds that page's
    # controls. A move to another page by the sidebar comes with no query (the browser's Streamlit
    # drops it) or with the query the last page left (a switch on the server keeps it), and the page
    # restores its own last view. One that comes with another query is Back or Forward to an entry of
    # this page: its address is the view it showed, and it seeds the controls as a link does. It had
    # been dropped too, which only the session's memory of the page made good: after a reload (a new
    # session) Back opened the page at its defaults.
    if came_from is None:
        st.session_state["_url_seeds"] = True
        if "_older_names" not in st.session_state:   # once: the URL is rewritten
            st.session_state["_older_names"] = view_state.read_older_names(registry.parameter_names())
    elif came_from != page and has_view:
        st.session_state["_url_seeds"] = (any(name != "presenter" for name in query.params())
                                          and not query.carried_over())
        if not st.session_state["_url_seeds"]:
            query.params().clear()
    # A plain session value, not widget state: widget state does not follow the user across pages.
    if "presenter_mode" not in st.session_state:
        raw = query.params().get("presenter")
        value, why = (False, None) if raw is None else view_state.parse(raw, False)
        st.session_state["presenter_mode"] = bool(value)
        if why:   # said under the title (below), as any control's value the link gives and it cannot take
            st.session_state["_presenter_note"] = f"?presenter={view_state.quoted(raw)} {why}; showing presenter=0"
    on = view_state.presenter()
    # In presenter mode the sidebar folds away on the way into each page and when the mode is turned on
    # (a presenter opens it to move on, or to change a control of its own). set_page_config's
    # initial_sidebar_state is only the default of a browser that has no choice of its own stored:
    # Streamlit 1.67 keeps the person's last open or close in localStorage, and that wins, so once
    # opened it stayed open on every page after. The browser folds it (_FOLD_JS), once per request.
    last_shown = st.session_state.get("_shown_page")
    st.session_state["_shown_page"] = page
    turned_on = st.session_state.pop("_fold_next", False)
    if on and (last_shown != page or turned_on):
        st.session_state["_fold"] = secrets.token_hex(4)   # a new request: carried out once per tab
    fold = f"window.__matmulFoldSidebar({st.session_state['_fold']!r});" if on and "_fold" in st.session_state else ""
    # Projector: the sidebar folds away (its arrow, top left, brings it back).
    st.set_page_config(page_title=f"{title} · CUDA Matmul Explorer", layout="wide",
                       initial_sidebar_state="collapsed" if on else "expanded")
    with st.sidebar:
        st.session_state["_presenter_widget"] = on
        st.toggle("Presenter mode (projector)", key="_presenter_widget", on_change=_flip_presenter,
                  help="For a projector at 1280x720: sidebar and controls folded away, bigger text, "
                       "figures sized to fit the screen with the Play button in view.")
        mode_banner()
    # Normal mode is what a link without the name opens on, so a fresh visit leaves its address as it
    # came: Home's quick first run had pushed ?presenter=0 as a history entry before history.js was in place.
    if on or "presenter" in query.params():
        query.params()["presenter"] = "1" if on else "0"
    st.html(f"<script>window.__matmulPlotlyModule = {_PLOTLY_MODULE!r};\n{animation.PLAYER_JS}\n{_HISTORY_JS}\n"
            f"{_FOLD_JS}\n{fold}</script>", unsafe_allow_javascript=True)
    # A dashboard, not a document: less empty space above the title, so more of the figure shows.
    st.html("<style>.block-container {padding-top: 3.2rem !important; padding-bottom: 1rem !important;}"
            + ("h1 {font-size: 1.7rem !important; padding: 0 0 .2rem 0 !important;}"
               ".stMarkdown p, .stMarkdown li {font-size: 1.3rem !important;}"
               ".stCode code {font-size: 1.2rem !important;}"
               # st.table's cells and captions stay at the app's 14 px otherwise: too small on a projector
               "[data-testid='stTable'] td, [data-testid='stTable'] th {font-size: 1.15rem !important;}"
               # ...but where the sidebar is opened (a column of 818 px, not presenter mode's ~1120) at normal
               # mode's 14 px, for which the tables' columns were chosen (fitting_table): at 1.15rem they ran
               # past the screen's edge (letting text break anywhere instead split names and numbers mid-word).
               "[data-testid='stMainBlockContainer'] {container-type: inline-size;}"
               "@container (max-width: 1000px) {[data-testid='stTable'] td, [data-testid='stTable'] th "
               "{font-size: 0.875rem !important;}}"
               "[data-testid='stCaptionContainer'] {font-size: 1.05rem !important;}"
               # inline code is drawn smaller than its text (12 px in a caption): not on a projector
               "[data-testid='stMain'] code {font-size: max(0.9em, 14px) !important;}" if on else
               "h1 {font-size: 2.2rem !important; padding: 0 0 .3rem 0 !important;}") + "</style>")
    # The mode on the title's line as well as in the sidebar's banner: folded away in presenter mode (and
    # wherever a person folds it), the sidebar had been the only place that said which mode was on.
    st.title(f"{title} {mode_badge()}")
    if not on:   # in presenter mode the figure's own headline says it, in bigger letters
        st.caption(intro)
    view_state.notes_here()
    if st.session_state.get("_url_seeds"):
        for message in st.session_state.get("_older_names", []):
            view_state.url_note(message)
        if "_presenter_note" in st.session_state:
            view_state.url_note(st.session_state["_presenter_note"])


def _flip_presenter() -> None:
    st.session_state["presenter_mode"] = st.session_state["_presenter_widget"]
    st.session_state["_fold_next"] = st.session_state["presenter_mode"]   # turned on: the sidebar folds away
    st.session_state.pop("_presenter_note", None)   # the user's own choice now, not the link's


# The main column at 1280 px with the sidebar open (818 px), less the table's own margins.
TABLE_PX = 790


def column_px(df, column) -> float:
    """About how wide Streamlit's table draws a column: its longest text at 14 px, and padding."""
    def text(v):
        return f"{v:,.2f}" if isinstance(v, float) else str(v)
    longest = max([len(str(column))] + [len(text(v)) for v in df[column].head(200)])
    return 7.5 * longest + 22


def fitting_table(df, lead: tuple[str, ...] = (), **kwargs) -> None:
    """A table whose columns all show on a 1280 px screen with the sidebar open: the columns named in
    `lead` (those that are there), then the others in order, as many as fit; where some do not, every
    column in an expander under it (there the table scrolls sideways). Drawn whole, the last columns
    were out of sight ('253…', the V100 table's last)."""
    keep, used = [], 0.0
    for column in [c for c in lead if c in df.columns] + [c for c in df.columns if c not in lead]:
        used += column_px(df, column)
        # The lead columns stay whatever their widths (the table scrolls): long labels of two runs of
        # one GPU had pushed % of cuBLAS into the expander.
        if used > TABLE_PX and keep and column not in lead:
            break
        keep.append(column)
    table(df[keep], **kwargs)
    if len(keep) < len(df.columns):
        with st.expander(f"Every column ({len(df.columns)}, {len(df.columns) - len(keep)} more: the table scrolls "
                         "sideways)"):
            st.dataframe(df, **kwargs)   # a grid in either mode: a static table of every column ran off the screen


# In presenter mode a table of more rows than PRESENTER_ROWS stays a grid (sorting, search), and a static
# one of more than SCREEN_ROWS scrolls inside SCREEN_PX, its header kept in view: drawn whole at 1.15rem,
# 31 rows (an autotuning tab) took some 1,200 px and pushed everything under it off a 720 px screen.
PRESENTER_ROWS = 40
SCREEN_ROWS, SCREEN_PX = 12, 500


def table(data, column_config: dict | None = None, hide_index: bool | None = None, **kwargs) -> None:
    """st.dataframe, but in presenter mode a static table of the same values, as the grid formats them:
    the grid draws its text on a canvas at 14 px that no style reaches, too small for a room to read,
    while a static table's cells take presenter mode's size. A static table reads its cells and headers
    as Markdown: text is shown as itself (schema.plain), so an uploaded run's GPU name cannot become an
    image fetched from elsewhere on every screen in the room. column_config: the grid's formats, labels
    and hidden columns (None) are the static table's too; its other settings (widths) are the grid's only."""
    if not view_state.presenter():
        st.dataframe(data, column_config=column_config, hide_index=hide_index, **kwargs)
        return
    df = pd.DataFrame(data)
    if len(df) > PRESENTER_ROWS:
        st.dataframe(data, column_config=column_config, hide_index=hide_index, **kwargs)
        return
    config = column_config or {}
    df = df[[c for c in df.columns if not (c in config and config[c] is None)]]
    formats = {c: (cfg.get("type_config") or {}).get("format") for c, cfg in config.items() if isinstance(cfg, dict)}
    labels = {c: cfg["label"] for c, cfg in config.items() if isinstance(cfg, dict) and cfg.get("label")}

    def kind(c):
        if pd.api.types.is_bool_dtype(df[c]):
            return _tick
        return _printf(formats.get(c)) if pd.api.types.is_numeric_dtype(df[c]) else _text
    cells = [kind(c) for c in df.columns]
    # Headers are Markdown too, and the table reads them from the frame (a Styler's format_index is not sent).
    df = df.set_axis([schema.plain(labels.get(c, c)) for c in df.columns], axis=1)
    styled = df.style.format(dict(zip(df.columns, cells)))
    st.table(styled, hide_index=hide_index, **({"height": SCREEN_PX} if len(df) > SCREEN_ROWS else {}))


def _missing(v) -> bool:
    return v is None or (pd.api.types.is_scalar(v) and pd.isna(v))


def _text(v) -> str:
    """A text cell as itself; empty for no value (None, NaN, NA, NaT), as the grid leaves it."""
    return "" if _missing(v) else schema.plain(v)


def _tick(v) -> str:
    """A yes/no cell, which the grid draws as a checkbox: ✓ or ✗ (a "correct" column's False must show)."""
    return "" if _missing(v) else ("✓" if v else "✗")


# A grid column's printf format as Streamlit takes it (sprintf-js): text around one %-spec, a "," for
# thousands, flags, width, precision, the type.
_PRINTF = re.compile(r"(?P<pre>[^%]*)%(?P<comma>,?)(?P<flags>[-+ 0#]*)(?P<width>\d*)(?P<prec>(?:\.\d+)?)(?P<type>[dfeEgGi])(?P<post>[^%]*)")


def _printf(spec: str | None):
    """A cell formatter for a grid column's printf format ("%.1f", "%,.0f", "%d", "%g", "%.1f ms"), or for
    none, or for one of Streamlit's named formats ("percent", "compact", ...) it does not follow: the grid's
    default (up to four decimals, no thousands separator; tiny values in significant digits). Empty for no
    value. Never raises: a format it cannot apply falls back to the default, not an error in front of a class."""
    m = _PRINTF.fullmatch(spec or "")

    def plain(v) -> str:
        if v and abs(v) < 1e-4:
            return f"{v:.3g}"
        return f"{v:.4f}".rstrip("0").rstrip(".")

    def cell(v) -> str:
        if _missing(v):
            return ""
        if m:
            kind = "d" if m["type"] in "di" else m["type"]
            try:
                value = int(v) if kind == "d" else float(v)   # %d truncates, as sprintf-js's parseInt does
                return m["pre"] + format(value, f"{m['flags']}{m['width']}{m['comma']}{m['prec']}{kind}") + m["post"]
            except (TypeError, ValueError, OverflowError):
                pass
        return plain(v)
    return cell


def figure_first():
    """Where a page's animated figure goes: above its controls (the page fills it once they are read),
    so that the title, the figure and its Play button share the first 1280x720 screen in both modes;
    with the controls above, Play was below it in normal mode."""
    return st.container()


def controls(label: str = "Controls"):
    """Where a page puts its controls: on screen normally, folded into an expander for a projector,
    so the headline, the figure and its Play button fit on one 1280x720 screen."""
    return st.expander(label, expanded=False) if view_state.presenter() else st.container()


def mode_badge() -> str:
    """The mode as a badge (Markdown) for a page's title: CPU mode, or GPU mode and the GPU's name."""
    st_ = device_status()
    return f":green-badge[GPU mode · {_badge_text(st_.name)}]" if st_.available else ":gray-badge[CPU mode]"


def _badge_text(text: str) -> str:
    """Text a badge directive holds as written: its closing bracket and Markdown's marks escaped."""
    return re.sub(r"([\\\[\]*_`~:$<>])", r"\\\1", text)


def mode_banner() -> None:
    st_ = device_status()
    if st_.available:
        st.success(f"**GPU mode** · {st_.name} · traces are recorded live by the instrumented kernels on "
                   "this GPU.", icon=":material/memory:")
    else:
        st.info(f"**CPU mode** · no NVIDIA GPU here ({st_.reason}). Traces come from the same kernel "
                "sources run on the CPU; tests check them against the same traces recorded on an H200 and an H100.",
                icon=":material/memory:")


def or_stop(what: str, fn, *args, plain: bool = False):
    """fn(*args), saying what is being computed while it runs (a new size or tile can take a second
    or more), or a one-line message in the page and nothing else drawn. plain: the message quotes a
    student's source or its compiler (the Playground), shown as the characters it holds: as Markdown,
    `extern "C" __global__` had been drawn as extern "C" **global**."""
    try:
        with st.spinner(f"{what}..."):
            return fn(*args)
    except EngineError as exc:
        view_state.refuse(schema.plain(str(exc)) if plain else str(exc))


def grid_of(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]) -> tuple[int, int]:
    """The blocks of the kernel's main launch, from its geometry in the registry (nothing runs)."""
    try:
        spec = registry.get(kernel)
        return spec.launches[-1].grid(registry.bind(spec, make_problem(m, n, k, block=block, params=params)))
    except EngineError as exc:
        view_state.refuse(str(exc))


def trace_or_stop(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int],
                  blocks: tuple | None = None, source: str = "auto"):
    """The trace (of the given blocks of the main launch, or of all), or a one-line message in the
    page (and nothing else drawn). The animations need one block: tracing just that block draws
    them in a fraction of the time; the whole-kernel tables below them then trace everything."""
    where = f", block {blocks[0]}" if blocks and len(blocks) == 1 else ""
    what = (f"Tracing {kernel} at {m}x{n}x{k}" + "".join(f", {name} {value}" for name, value in params.items())
            + where + f" ({'CPU' if tracer.resolve_source(source) == 'cpu' else 'GPU'})")
    return or_stop(what, cached.trace, kernel, m, n, k, params, block, blocks, source)


def animation_exports(build, title: str) -> None:
    """Under an animated figure: its animation for slides as an animated GIF, an MP4 or an offline
    HTML player, at 1280x720 and the page's speed, frame for frame what the figure plays. build()
    makes the figure in presenter sizing (a slide is a projector's screen)."""
    with st.expander("Export this animation for slides: GIF, MP4 or an offline HTML player"):
        cols = st.columns(3)
        # every button drawn first (a click is one button's, on the rerun it starts)
        # Each click takes its place in the server's line as it arrives (on_click runs before the
        # rerun draws the page), so exports asked for by a room run in the order they were asked.
        asked = [fmt for fmt, col in zip(movie.FORMATS, cols)
                 if col.button(f"Make {EXPORT_NAMES[fmt]}", key=f"animation-{fmt}", on_click=_take_place,
                               args=(f"animation-place-{fmt}",))]
        if not asked:
            return
        fmt = asked[0]
        started = time.perf_counter()
        with st.status(f"Making the {EXPORT_NAMES[fmt]}: Chromium steps through the frames", expanded=False) as box:
            bar = st.progress(0.0)
            try:
                with slots.from_any_thread(lambda done, total: bar.progress(done / total, f"frame {done} of {total}")) \
                        as progress:
                    data = cached.animation_file(fmt, build, title, progress,
                                                 st.session_state.pop(f"animation-place-{fmt}", None))
            except EngineError as exc:
                box.update(label=str(exc), state="error")
                return
            box.update(label=f"Made the {EXPORT_NAMES[fmt]} ({len(data) / 2**20:.1f} MB) in "
                             f"{time.perf_counter() - started:.1f} s", state="complete")
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", title).strip("-.")[:120]
        cols[list(movie.FORMATS).index(fmt)].download_button(
            f"Download {name}.{fmt}", data, f"{name}.{fmt}", movie.FORMATS[fmt], on_click="ignore",
            key=f"animation-download-{fmt}")


EXPORT_NAMES = {"gif": "GIF", "mp4": "MP4", "html": "HTML player"}


def _take_place(name: str) -> None:
    st.session_state[name] = LINE.number()


def kernel_label(name: str) -> str:
    spec = registry.get(name)
    return f"{spec.title} — from {spec.source_titles}"




def nsight_view(view, label: str) -> None:
    """The trace's counts beside Nsight Compute's for the configuration on screen (an
    ncu_reference.SideBySide): the table, what agrees and why the rest differs, and the command that
    measures it again."""
    with st.expander(f"Beside Nsight Compute: {label}", expanded=False):
        st.caption(view.note)
        if view.table is not None:
            # Each reason once, numbered under the table: in a column of its own a sentence was cut
            # at the column's edge on a 1280x720 screen, and the same one repeated row after row.
            reasons = list(dict.fromkeys(r for r in view.table["why"] if r))
            marks = [f"({reasons.index(r) + 1})" if r else "" for r in view.table["why"]]
            # A static table: every row in sight (a scrolling grid hid the second GPU's rows, and its
            # toolbar covered the note above), wrapped rather than cut, and at presenter mode's size.
            st.table(view.table.drop(columns=["metric"]).assign(why=marks).set_index("counter"))
            for i, reason in enumerate(reasons, 1):
                st.caption(f"({i}) {reason}")
            st.caption("Measured with `ncu --clock-control none`, one session per kernel group, each configuration "
                       "launched three times. Metric names: " + ", ".join(f"`{m}`" for m in dict.fromkeys(view.table["metric"])))
        st.caption("To measure it on a GPU machine with Nsight Compute:")
        st.code(view.command, language="bash", wrap_lines=True)
