"""Each page's own view state: seeded from the URL (a shared link opens that exact view), kept for
the page across navigation, and written back to the URL as it changes."""
from __future__ import annotations

import json
import re
import threading

import streamlit as st

from engine.kernels import registry
from pages.lib import query

SPEEDS = ["slow", "normal", "fast"]
# Where this script run's messages about its link go (notes_here()): each session's script runs in a
# thread of its own.
_NOTES = threading.local()


def presenter() -> bool:
    """Presenter (projector) mode: set by its toggle or by presenter=1 in the URL (ui.setup_page)."""
    return st.session_state.get("presenter_mode", False)


def page_name() -> str:
    """The page this run draws (ui.setup_page): the last part of its address."""
    return st.session_state.get("_page", "")


def page_key(name: str) -> str:
    return f"{page_name()}.{name}"


def state(name: str, default, choices=None, lo=None, hi=None, scope: str = "", what: str = "value",
          url: bool = True) -> str:
    """The widget key of this page's control `name`. Its first value comes from the URL (so a shared
    link opens that exact view), else from what this page showed last in this session (so leaving
    and coming back keeps the view), else `default`. A URL value the control cannot take (not a
    number, not one of its choices, outside lo..hi) is not replaced without a word: the page shows
    a one-line message naming it and the value shown instead, until the user changes that control.
    Values kept from this session are brought within range silently: the range moved under them
    (a smaller grid), not the user's link. Keyed widgets keep their identity across reruns, so
    nothing the user types is lost to a remount. scope: part of the widget key and of what the page
    keeps (keep()), not of the URL name (warptile's BK and blocktile_1d's are separate controls, both
    ?BK= in the URL). url: False where the URL holds another control's value by that name."""
    key = page_key(f"{scope}.{name}" if scope else name)
    if url:
        uses(name)
    saved = st.session_state.setdefault(page_key("_saved"), {})
    notes = st.session_state.setdefault(page_key("_url_notes"), {})
    if key not in st.session_state:
        raw = query.params().get(name) if url and st.session_state.get("_url_seeds") else None
        if raw is not None and choices is not None and raw not in choices:
            raw = registry.FORMER_NAMES.get(raw, raw)   # a kernel renamed since the link was made
        fallback = saved.get(f"{scope}.{name}" if scope else name, default)
        if raw is None:
            st.session_state[key] = fallback
        else:
            value, why = parse(raw, default, choices, lo, hi, what)
            if why:
                value = _within(fallback, default, choices, lo, hi)
                older = st.session_state.get("_older_size")
                # m, n and k read from an older link's ?size=: one line for the three, in the place of
                # the line that said how it was read (?size=70000 had given four)
                notes[key] = ((f"?size={quoted(raw)} (an older link's name for m, n and k) {why}; showing", name, value)
                              if older == raw and name in ("m", "n", "k") else
                              f"?{name}={quoted(raw)} {why}; showing {name}={_text(value)}",
                              value)
            st.session_state[key] = value
    else:
        redrawn(key)
    kept = _within(st.session_state[key], default, choices, lo, hi)
    if kept != st.session_state[key]:
        st.session_state[key] = kept
    if key in notes:
        message, shown = notes[key]
        if st.session_state[key] != shown:   # the user has chosen a value of their own: the link's is no longer the question
            del notes[key]
        elif isinstance(message, tuple):
            _size_note(*message)
        else:
            url_note(message)
    return key


def _size_note(text: str, name: str, value) -> None:
    """The line about an older link's ?size= (read_older_names), rewritten to say which of m, n and k
    it could not set and what each shows instead."""
    shown = getattr(_NOTES, "size_shown", None)
    if shown is None:
        shown = _NOTES.size_shown = {}
    shown[name] = value
    line = f"{text} {', '.join(f'{n}={_text(v)}' for n, v in shown.items())}"
    slot = getattr(_NOTES, "size_slot", None)
    if slot is None:
        _NOTES.size_slot = url_note(line)
    else:
        slot.warning(line, icon=":material/link_off:")


def restart_past(name: str, hi: int, start) -> None:
    """Before state(name, ...): a value this page kept (this session's, not a link's) that is past hi
    goes back to `start`, where state() would bring it to hi (a start past the end of what is shown)."""
    key, saved = page_key(name), st.session_state.get(page_key("_saved"), {})
    if key in st.session_state and st.session_state[key] > hi:
        st.session_state[key] = start
    elif key not in st.session_state and saved.get(name, start) > hi:   # coming back to the page
        saved[name] = start


def window_of(frame_name: str, start_name: str, width: int, total: int) -> None:
    """Before state(start_name, ...), for an animation shown `width` frames at a time from a start the
    page's control sets: a link that names a frame (?step=200) past the first window and no start
    opens on the window holding it, as if it had said ?from=161. Before, it opened on the first
    window and said instruction 200 was not a frame of it."""
    raw = query.params().get(frame_name)
    if (not st.session_state.get("_url_seeds") or page_key(start_name) in st.session_state
            or start_name in query.params() or raw is None or not re.fullmatch(r"[0-9]{1,9}", raw)):
        return
    if width < int(raw) <= total:
        query.params()[start_name] = str((int(raw) - 1) // width * width + 1)


def names_state(name: str, choices: list[str], default: list[str], what: str) -> str:
    """The widget key of a multiselect of names, as state() is of one value: from the URL (the names
    comma-separated), else what this page showed last, else `default`; names the URL gives that are
    not among the choices are said in one line and left out."""
    key = page_key(name)
    uses(name)
    if key not in st.session_state:
        raw = query.params().get(name) if st.session_state.get("_url_seeds") else None
        kept = st.session_state.get(page_key("_saved"), {}).get(name)
        asked = [n for n in (raw if raw is not None else kept if kept is not None else ",".join(default)).split(",") if n]
        unknown = [n for n in asked if n not in choices]
        known = list(dict.fromkeys(n for n in asked if n in choices))
        if raw is not None and unknown:
            known = known or [n for n in default if n in choices]   # none it knows: the page's own opening
            st.session_state.setdefault(page_key("_url_notes"), {})[key] = (
                f"?{name}= names {quoted(', '.join(unknown))}, not {what}: left out", known)
        st.session_state[key] = known
    else:
        redrawn(key)
    notes = st.session_state.get(page_key("_url_notes"), {})
    if key in notes:
        if st.session_state[key] == notes[key][1] and st.session_state.get("_url_seeds"):
            url_note(notes[key][0])
        else:   # the user's own choice now, not the link's (as state() does)
            del notes[key]
    return key


def redrawn(key: str) -> None:
    """After a run that stopped (a refused setting: query.stop), a control's kept value set again, so the
    browser shows it. Streamlit keeps the state of the controls a stopped run did not draw, and the
    browser, which dropped them, draws them anew at their defaults: Tile phases refusing M = 17, then
    given M = 64, showed Block x 0, Block y 0 and Speed slow while it drew block (1, 1) fast, and the
    next change took the 0, 0 and slow the browser showed. A value set by the page is sent with its control."""
    if st.session_state.get(query.AFTER_STOP):
        st.session_state[key] = st.session_state[key]


def _within(value, default, choices, lo, hi):
    if choices is not None and value not in choices:
        return default if default in choices else choices[0]
    if lo is not None and value < lo:
        return lo
    if hi is not None and value > hi:
        return hi
    return value


def _text(value) -> str:
    return str(int(value) if isinstance(value, bool) else value)


def parse(raw: str, default, choices=None, lo=None, hi=None, what: str = "value"):
    """(value, None) for a URL value the control takes, or (None, why not) in words, after "?name=raw"."""
    if isinstance(default, bool):
        if raw in ("1", "true", "True", "0", "false", "False"):
            return raw in ("1", "true", "True"), None
        return None, "is not on or off (1 or 0)"
    # A whole number as a link writes one, in ASCII digits: int() also takes "1_000", "١٢" and "６４"
    # (a link's ?m=1_0 read as m=10 without a word, and ?m=1_000 was said to be too large)
    if isinstance(default, int) and not re.fullmatch(r"[+-]?[0-9]+", raw):
        return None, "is not a whole number"
    try:
        value = type(default)(raw)
    except ValueError:
        return None, f"is not a {'whole number' if isinstance(default, int) else what}"
    if choices is not None and value not in choices:
        return None, f"is not one of the choices ({', '.join(map(_text, choices))})"
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        return None, f"is not a {what} this page takes ({lo if lo is not None else '…'} to {hi if hi is not None else '…'})"
    return value, None


def notes_here() -> None:
    """Messages about the page's link go here (under the title, ui.setup_page): wherever its controls
    are, folded away in presenter mode included, the message is on the first screen."""
    _NOTES.box = st.container()
    _NOTES.size_slot, _NOTES.size_shown, _NOTES.older_slots = None, None, {}
    _NOTES.used = {"presenter"}


def uses(*names: str) -> None:
    """This run's page reads (or writes) these URL names: what no page run reads is not a setting of
    the page (leave_out_unknown)."""
    used = getattr(_NOTES, "used", None)
    if used is not None:
        used.update(names)


# A compile-time parameter's name (TILE, BM): pages/lib/settings.py says what the kernels shown lack.
PARAMETER = re.compile(r"[A-Z][A-Z0-9_]*")


def leave_out_unknown() -> None:
    """Last on a page with a view (Home has none: a link's names wait there for the page opened next):
    a name in the link it opened on that the page did not read
    (?foo=bar, a typo such as ?sise=64, or ?block= where no kernel shown has a block to choose) is
    taken out of the URL and said in one line, while the link's view is shown. Before, the URL
    kept it without a word, and a class handed a mistyped link saw the defaults."""
    used = getattr(_NOTES, "used", None)
    if used is None or not st.session_state.get("_url_seeds"):
        return
    unread = [n for n in query.params() if n not in used and not PARAMETER.fullmatch(n)]
    said = st.session_state.get(page_key("_unknown_notes"))
    if said is None:   # the page's first run: its link's names
        said = [f"?{quoted(name)}={quoted(query.params().get(name))} is not a setting of this view: left out"
                for name in unread]
        st.session_state[page_key("_unknown_notes")] = said
    # Later, names the page wrote itself and no longer reads (?block= once both kernels shown are tiled)
    # go without a word: left in, a link copied from the address bar named them as a stranger's mistakes.
    for name in unread:
        del query.params()[name]
    for message in said:
        url_note(message)


def read_older_names(parameters: list[str]) -> list[str]:
    """An older link's names, read as the pages name them now: a compile-time parameter in lower case
    (?tile=8 is ?TILE=8) and one square size (?size=128 is ?m=128&n=128&k=128). The URL is rewritten
    before any control reads it; a name the link also gives the new way keeps the new one. Returns
    a one-line message for each."""
    said = []
    for old in list(query.params()):
        raw = query.params()[old]
        new = {old.upper(): raw} if old.upper() in parameters and old != old.upper() else \
            {"m": raw, "n": raw, "k": raw} if old == "size" else None
        if new is None:
            continue
        del query.params()[old]
        if old == "size":   # state() says in this line's place if m, n and k cannot take it (_size_note)
            st.session_state["_older_size"] = raw
        if old == "size" and not (raw.isdigit() and int(raw) >= 1):   # one line, not one more for each of m, n, k
            said.append(f"?size={quoted(raw)} (an older link's name for m, n and k) is not a whole number of at least 1: "
                        "left out")
            continue
        taken = {name: value for name, value in new.items() if name not in query.params()}
        query.params().update(taken)
        if old != "size" and taken:   # its line is the one said again where no kernel shown has the parameter
            st.session_state.setdefault("_older_params", {})[old.upper()] = (old, raw)
        said.append(f"?{old}={quoted(raw)} is an older link's name: read as "
                    + ("&".join(f"{name}={quoted(value)}" for name, value in taken.items()) or "nothing (the link also gives "
                       + ", ".join(new) + ")"))
    return said


# What a link's value could make of a Markdown line (st.warning draws Markdown): a link, an image, a
# colour or icon directive, code, LaTeX, HTML. Escaped, it shows as the characters the link holds.
_MARKUP = re.compile(r"([\\\[\]()<>!`*$:#|~{}])")


def quoted(raw) -> str:
    """A link's value (or name) as a one-line message quotes it: at most 40 characters (a 5,000-digit
    ?step= had been quoted whole), every character shown as itself (?warp=[answers](https://...) had
    been drawn as a link), and a bare address not made a link (a word joiner after "www" and in "://").
    A value that is empty, holds a space, or a character that is not ASCII or does not print is quoted
    in JSON's escapes: shown bare, ?m=%20%2064 read "?m=64 is not a whole number", full-width digits
    read as 64, and a NUL byte was a box."""
    raw = str(raw)
    text = raw
    if not raw or not raw.isascii() or not raw.isprintable() or any(c.isspace() for c in raw):
        # (JSON escapes every character past ASCII, a zero-width space and a right-to-left override,
        # which turned the message around, among them, and ASCII's controls but DEL)
        text = json.dumps(raw).replace("\x7f", "\\u007f")
    text = text if len(text) <= 40 else text[:40] + "…"
    return _MARKUP.sub(r"\\\1", text).replace("\\://", "\\:\u2060//").replace("www.", "www\u2060.")


def refuse(message: str):
    """A setting the engine refuses: its one line under the title, with the link's notes, and the run
    ends there (its address sent: query.stop). Where it was raised, among the controls, presenter mode
    folds it away, and a refusing link opened in presenter mode showed an empty page."""
    box = getattr(_NOTES, "box", None)
    (box if box is not None else st).error(message, icon=":material/error:")
    query.stop()


def url_note(message: str):
    """A one-line message about the page's link: a value a control cannot take, a parameter the
    kernel does not have. Returns its slot: an older ?size= line is rewritten there (_size_note)."""
    box = getattr(_NOTES, "box", None)
    slot = (box if box is not None else st).empty()
    slot.warning(message, icon=":material/link_off:")
    if message.startswith(f"?size={quoted(st.session_state.get('_older_size', ''))} is an older link's name"):
        _NOTES.size_slot = slot
    for name, (old, raw) in st.session_state.get("_older_params", {}).items():
        if message.startswith(f"?{quoted(old)}={quoted(raw)} is an older link's name"):
            _NOTES.older_slots[name] = slot
    return slot


def ignored_note(name: str, raw, why: str) -> None:
    """A link's parameter that no kernel shown has: one line. Where the link gave it by an older name
    (?tile=8), that name's line becomes this one: "read as TILE=8" and then "no parameter TILE;
    ignored" had been two lines about one value."""
    # Only while that line is on the page (the link this session opened on), and of this value: a later
    # link's ?TILE=5 is not the first one's ?tile=8.
    slot = getattr(_NOTES, "older_slots", {}).get(name)
    old, given = st.session_state.get("_older_params", {}).get(name, (None, None))
    older = slot is not None and given == raw
    said = f"?{quoted(old)}={quoted(raw)} (an older link's name for {name})" if older else f"?{quoted(name)}={quoted(raw)}"
    if older:
        slot.warning(f"{said}: {why}", icon=":material/link_off:")
    else:
        url_note(f"{said}: {why}")


def remember(**values) -> None:
    """Puts the view's state in the URL, so a teacher can hand out a link to this exact view, and
    keeps it for this page, so coming back to the page restores it."""
    saved = st.session_state.setdefault(page_key("_saved"), {})
    uses(*values)
    for k, v in values.items():
        saved[k] = v
        query.params()[k] = str(int(v) if isinstance(v, bool) else v)


def keep(**values) -> None:
    """Keeps values for this page without putting them in the URL (a scoped control's own: keep(**{"warptile.BM": 64})),
    so coming back to the page restores them."""
    st.session_state.setdefault(page_key("_saved"), {}).update(values)


# The frame each animation stands on, from the browser to this session. The player
# (engine/plots/player.js) writes it, as {page: {url_key: frame}}, into a hidden text input that
# app.py draws for every page, whenever a figure stands still and just before a control outside the
# figure is touched. The input commits without a rerun (on_change="ignore"): what it holds rides with
# the next rerun, whichever control asks for it, and with a move to another page (app.py's own
# widgets are not dropped there, a page's are). The address the player also rewrites (replaceState)
# serves a reload or a copied link, not a rerun: Streamlit's frontend sends its own copy of the query
# string with a widget's rerun, so the server had never seen the frame stepped to, drew the figure
# anew on the last frame it had opened, and the link went back with it. A widget that reran by itself
# for each report would have cost a rerun per step, and one in a fragment joins the batch of any
# widget changed in the same instant, which then reruns the fragment alone (Streamlit 1.67): the
# control's change reached the server and the page was not run with it.
FRAMES_KEY = "_frames_shown"
_PAGE_NAME = re.compile(r"[a-z_]{1,32}")
_FRAME_NAME = re.compile(r"[a-z_]{1,16}")


def frame_channel() -> None:
    """The hidden input the player reports frames into (app.py, before the page runs)."""
    st.sidebar.text_input("Frames shown", key=FRAMES_KEY, on_change="ignore", live="0ms",
                          label_visibility="collapsed", max_chars=4000)
    st.html(f"<style>.st-key-{FRAMES_KEY} {{display: none !important;}}</style>")


def take_frames_shown() -> None:
    """Each page's frames as the browser last reported them become the pages' kept frames (frame()).
    What a browser sends is anyone's: only short strings, by short lower-case page and frame names,
    are kept, and frame() opens only on one of the animation's own frame names."""
    text = st.session_state.get(FRAMES_KEY) or "{}"
    if not isinstance(text, str) or len(text) > 4000:   # the input's max_chars, which only the browser holds to
        return
    try:
        shown = json.loads(text)
    except (ValueError, RecursionError):   # [[[[... 2,000 deep is 4,000 characters
        return
    for page, frames in (shown.items() if isinstance(shown, dict) else ()):
        if not (_PAGE_NAME.fullmatch(page) and isinstance(frames, dict)):
            continue
        for name, value in frames.items():
            if _FRAME_NAME.fullmatch(name) and isinstance(value, str) and len(value) <= 64:
                st.session_state[f"{page}._frame.{name}"] = value


def frame(name: str, names: list[str]) -> str | None:
    """Which of an animation's frames (names) the page opens it on. A link's ?name= on the page's
    first view in this session (a reload, a copied link); after that the frame the browser last
    reported it standing on (take_frames_shown), so a rerun (another control changed) and coming back to
    the page open where it stood. A frame that is not one of names (a window or kernel chosen
    since, a link's typo) opens on the first; only the link's own is said, once, in one line.
    None: the first frame."""
    uses(name)
    seen, kept = page_key(f"_frame_seen.{name}"), page_key(f"_frame.{name}")
    raw = query.params().get(name)
    from_link = raw is not None and seen not in st.session_state and st.session_state.get("_url_seeds")
    st.session_state[seen] = True
    if not from_link and kept in st.session_state:
        raw = st.session_state[kept]
    if raw in names:
        st.session_state[kept] = query.params()[name] = raw
        return raw
    if from_link and names:
        url_note(f"?{name}={quoted(raw)} is not a frame of this animation ({names[0]} to {names[-1]}): "
                 f"opening on {names[0]}")
    return None


def control_follows_frame(name: str, key: str, values) -> None:
    """Before the control of frame_or_control is made: on a run where the user left it as it was, it
    takes the frame the player was left on, which the figure is then drawn opening on. The box had
    kept the lane it last opened on (0) beside a map redrawn on lane 2, and typing 0 then changed
    nothing: the box already said 0, so the map stayed on 2. Between a Step and the next run the box
    still says where the map opened (the player reports its frame without a rerun, which would
    redraw the map under a student's scrub), and typing that same lane then changes nothing."""
    seen, kept = page_key(f"_control.{name}"), page_key(f"_frame.{name}")
    shown, now = st.session_state.get(kept), st.session_state.get(key)
    if now is None or now != st.session_state.get(seen):
        return   # the page's first run, or the user changed the control: theirs
    frame = next((v for v in values if str(v) == shown), None)   # what a browser sends is anyone's
    if frame is not None and frame != now:
        st.session_state[key] = st.session_state[seen] = frame


def frame_or_control(name: str, value: int, names: list[str]) -> int:
    """For an animation both a control and its player move (Tensor cores' Lane box and the map's
    Play/Step): the control's value on a run where it has changed (the user typed a lane), else the
    frame the browser last reported the player standing on (take_frames_shown), so a rerun by
    another control (the speed) does not send the map back to the box's lane."""
    seen, kept = page_key(f"_control.{name}"), page_key(f"_frame.{name}")
    if st.session_state.get(seen) != value:
        st.session_state[seen] = value
        st.session_state[kept] = str(value)
    shown = st.session_state.get(kept)
    return int(shown) if shown in names else value


def window_start(where, total: int, width: int) -> int:
    """The "From instruction" control of an animation of `total` instructions shown `width` at a time
    (Coalescing, Bank conflicts, the Playground), in `where`: the first one shown, 0-based. A start kept
    from another kernel or size past the last goes back to the first (brought within range it had been
    the last, an animation of one frame); a link's ?step= alone opens the window that holds it; a click
    moves a window's width where there is more than one (else one: a click had jumped to the end)."""
    restart_past("from", max(total, 1), 1)
    window_of("step", "from", width, total)
    first = where.number_input("From instruction", 1, max(total, 1), step=width if total > width else 1,
                               key=state("from", 1, lo=1, hi=max(total, 1)),
                               help=f"the animation shows up to {width} instructions at a time") - 1
    remember(**{"from": first + 1})
    return first


def speed_control(where, durations: dict[str, int]) -> int:
    """The animation speed select, returning milliseconds per frame."""
    speed = where.select_slider("Speed", SPEEDS, key=state("speed", "normal", SPEEDS))
    remember(speed=speed)
    return durations[speed]




def saved() -> tuple:
    """The view this page put in the URL (remember()), as a cache key."""
    return tuple(sorted(st.session_state.get(page_key("_saved"), {}).items()))
