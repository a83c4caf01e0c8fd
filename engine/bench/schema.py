"""The benchmark export's JSON format, written once: what `to_document` writes, and the one check every
reader puts a file through (the Benchmarks page's uploads, `python -m engine bench --from`, the
recorded runs).

An upload comes from anyone in the room, so `read` trusts nothing in it: a file too big or nested too
deep, a field of the wrong type, a number a chart cannot draw, each becomes a one-line problem naming
the field and what was expected, never an exception. Rows of kernels, precisions or launch shapes
this explorer does not know (an export of a newer version) are left out with a message, and the
rest of the file is kept. Fields the format does not name are dropped: nothing unchecked gets through.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.errors import EngineError
from engine.kernels import registry

FORMAT = "cuda-matmul-explorer benchmark 2"
# Format 1 named TILE and PAD in the fields tile and pad, where format 2 has params (a mapping of every
# compile-time parameter): its files (the recorded runs among them) are read as they always were.
FORMATS = (FORMAT, "cuda-matmul-explorer benchmark 1")
PARAM_FIELDS = {"TILE": "tile", "PAD": "pad"}   # format 1's fields; still what the charts label rows by
# The largest file read. .streamlit/config.toml's server.maxUploadSize is the same number: the browser
# refuses a bigger upload before sending it, counting a megabyte as 1,000,000 bytes (Streamlit's
# FileUploader; only on Windows 2**20), so the engine counts it so too and both refuse the same files.
# A 20,000-row export is about 13 MB.
MAX_MB = 16
MAX_BYTES = MAX_MB * 1_000_000
# JSON does not bound a file's nesting or its integers, and Python's parser pays for both: it recurses
# once per level, and an integer of more than 4,300 digits is a ValueError. An export nests four levels
# and no field of it takes an integer of more than 10 digits; these leave room and refuse the rest.
MAX_DEPTH = 16
MAX_DIGITS = 1_000
MAX_ROWS = 50_000
MAX_MESSAGES = 5          # problems listed per file; the rest are counted
MAX_NAME = 120            # characters of a GPU name and the like: it is in every legend entry
MAX_TEXT = 2_000          # characters of a row's title or error
MAX_PARAMS = 16           # compile-time parameters of one row
_PARAM_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,39}")   # a macro name, as the registry's are
STATUSES = ("ok", "wrong result", "error")

# What a field may hold: the Python types json.loads gives for it, and what a message says was expected.
KINDS = {
    "text": ((str,), "a string"),
    "name": ((str,), f"a string of at most {MAX_NAME} characters"),
    "date": ((str,), 'an ISO date like "2026-11-21T07:44:59+00:00"'),
    "number": ((int, float), "a number"),
    "positive": ((int, float), "a positive number"),
    "count": ((int,), "a whole number, 0 or more"),
    "size": ((int,), "a whole number from 1 to 2,147,483,647"),
    "flag": ((bool,), "true or false"),
    "version": ((int, str), "a number or a string"),
    "object": ((dict,), "an object"),
    "params": ((dict,), 'an object of compile-time parameters, upper-case names to whole numbers, like {"TILE": 16}'),
}
INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Field:
    kind: str
    required: bool = False
    expected: str = ""    # what a message says was expected, where the kind's own words are too vague

    @property
    def wanted(self) -> str:
        return self.expected or KINDS[self.kind][1]


# The precisions whose tensor-core peaks come from NVIDIA's datasheets (engine/bench/benchmark.py).
TENSOR_PRECISIONS = ("tf32", "fp16", "bf16")
PEAKS = {"fp32_gflops": Field("positive", True), "bandwidth_gbs": Field("positive", True),
         **{f"{p}_gflops_datasheet": Field("positive") for p in TENSOR_PRECISIONS}}
SETTINGS = {"warmup": Field("count"), "reps": Field("count"), "flush_l2": Field("flag"),
            "seconds_per_point": Field("number")}
# Nested objects, by name; each of their fields is a scalar, so a valid document nests three deep (a
# row's params, four).
OBJECTS = {"peaks": PEAKS, "settings": SETTINGS}
PROVENANCE = {"gpu": Field("name"), "compute_capability": Field("name"), "sm_count": Field("count"),
              "max_sm_clock_mhz": Field("number"), "driver_cuda_version": Field("version"), "driver": Field("name"),
              "cuda": Field("name"), "toolkit": Field("name"), "cublas_version": Field("version"),
              "date": Field("date", True), "host": Field("name"), "settings": Field("object"),
              "peaks": Field("object", True, "an object with fp32_gflops and bandwidth_gbs"),
              "engine_commit": Field("name")}
ROW = {"kernel": Field("text", True, "a kernel name"), "title": Field("text"), "precision": Field("text", True),
       "m": Field("size", True), "n": Field("size", True), "k": Field("size", True), "params": Field("params"),
       "tile": Field("count"), "pad": Field("count"), "block": Field("text", expected='a block shape like "16x16"'),
       "block_x": Field("size"), "block_y": Field("size"),
       "status": Field("text", True, " or ".join(f'"{s}"' for s in STATUSES)), "error": Field("text"),
       "rel_error": Field("number"), "reps": Field("count"),
       "launches_per_sample": Field("count"), "hold_ms": Field("number"), "retaken_samples": Field("count"),
       "starved_samples": Field("count"),
       "flush_l2": Field("flag"), "sm_clock_mhz": Field("number"),
       "power_w": Field("number"), "temperature_c": Field("number"), "median_ms": Field("number"),
       "min_ms": Field("number"), "max_ms": Field("number"), "spread": Field("number"), "gflops": Field("number"),
       "bandwidth_gbs": Field("number"), "intensity": Field("number")}
# A timed row is drawn at (intensity, gflops) on log axes: both must be there and above zero.
DRAWN = ("gflops", "intensity")


def to_document(rows: list[dict], prov: dict) -> dict:
    return {"format": FORMAT, "provenance": prov, "results": rows}


class BadDocument(EngineError):
    """A file that is not an export this explorer can read; `lines` are its problems, one line each
    (at most MAX_MESSAGES, then how many more)."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("not a benchmark export of this explorer: " + "; ".join(lines))


@dataclass
class Document:
    frame: pd.DataFrame     # the rows kept, with the fields the format names, as a table
    prov: dict
    skipped: list[str]      # why rows were left out, one line each (capped like BadDocument's)
    left_out: int           # how many rows were left out
    raw: list[dict]         # every row as parsed
    kept: np.ndarray        # which of them are kept

    @property
    def rows(self) -> list[dict]:
        """The rows kept, with the fields the format names (to write out again): as the file has them,
        an older file's tile and pad given as params."""
        older = set(PARAM_FIELDS.values())
        return [{**{k: v for k, v in self.raw[i].items() if k in ROW and k not in older}, "params": params}
                for i, params in zip(np.flatnonzero(self.kept), self.frame["params"])]


class _Problems:
    """One line per problem, in file order; only the first MAX_MESSAGES are kept, the rest counted."""

    def __init__(self):
        self.found: list[tuple[int, int, str]] = []   # (row, field order, line)
        self.count = 0

    def add(self, line: str, row: int = -1, order: int = 0) -> None:
        self.count += 1
        self.found.append((row, order, line))

    def lines(self) -> list[str]:
        shown = [line for _, _, line in sorted(self.found)[:MAX_MESSAGES]]
        more = self.count - len(shown)
        return shown + ([f"… and {more:,} more"] if more else [])

    def __bool__(self) -> bool:
        return self.count > 0


def _show(value) -> str:
    """A value as a message quotes it: short, on one line, never the whole of a hostile value."""
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 40 else value[:40] + "…", ensure_ascii=False)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 10**15 else "a number too large"
    if isinstance(value, list):
        return f"a list of {len(value):,}"
    return "an object"


# Numbers a chart and the derived figures can compute with (a JSON integer may have 400 digits).
BOUNDS = {"number": (-1e300, 1e300), "positive": (0, 1e300), "count": (0, INT_MAX), "size": (1, INT_MAX)}
LENGTHS = {"name": MAX_NAME, "text": MAX_TEXT, "date": 64}


def _fits(values: pd.Series, kind: str) -> np.ndarray:
    """Which values (none of them missing) are of a field's kind: a column of 50,000 at a time."""
    ok = values.map(type).isin(KINDS[kind][0]).to_numpy()   # exact types: JSON true is a bool, not 1
    if kind in BOUNDS:
        lo, hi = BOUNDS[kind]
        v = values.where(ok, hi)   # (what failed already is left out of the comparison)
        ok = ok & ((v > lo) if kind == "positive" else (v >= lo)).to_numpy() & (v <= hi).to_numpy()
    if kind in LENGTHS:
        ok = ok & (values.where(ok, "").map(len).to_numpy() <= LENGTHS[kind])
    if kind == "date":
        ok = ok & values.where(ok, "").map(_is_date).to_numpy().astype(bool)
    if kind == "params":
        ok = ok & values.where(ok, None).map(_is_params).to_numpy().astype(bool)
    return ok


def _is_date(text: str) -> bool:
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_params(value) -> bool:
    return isinstance(value, dict) and len(value) <= MAX_PARAMS and all(
        isinstance(name, str) and _PARAM_NAME.fullmatch(name) and type(v) is int and 0 <= v <= INT_MAX
        for name, v in value.items())


# What a number of the right type but outside BOUNDS is told was expected: 1e308 is a number, and
# "expected a number, got 1e+308" read as a contradiction.
_BOUNDED = {"number": "a number from -1e300 to 1e300", "positive": "a number above 0, at most 1e300",
            "count": f"a whole number from 0 to {INT_MAX:,}", "size": KINDS["size"][1]}


def _wanted(field: Field, value) -> str:
    """What a message says `value` should have been: the field's words, or its bounds where it is of
    the right type and only out of them (NaN is outside every bound, and is told it is not a number)."""
    in_type = type(value) in KINDS[field.kind][0] and not (isinstance(value, float) and value != value)
    return _BOUNDED[field.kind] if in_type and field.kind in _BOUNDED and not field.expected else field.wanted


def _valid(value, kind: str) -> bool:
    return bool(_fits(pd.Series([value], dtype=object), kind)[0])


def _check_object(obj, path: str, schema: dict[str, Field], problems: _Problems) -> dict:
    """The fields of one JSON object that the schema names, each checked; a problem for each that fails."""
    out = {}
    for order, (name, field) in enumerate(schema.items()):
        where = f"{path}.{name}" if path else name
        value = obj.get(name)
        if value is None:
            if field.required:
                problems.add(f"{where}: missing; expected {field.wanted}", order=order)
            elif name in obj:
                out[name] = None
        elif field.kind == "object":
            if isinstance(value, dict):
                out[name] = _check_object(value, where, OBJECTS[name], problems)
            else:
                problems.add(f"{where}: expected {field.wanted}, got {_show(value)}", order=order)
        elif _valid(value, field.kind):
            out[name] = " ".join(value.split()) if field.kind == "name" else value   # one line in a label
        else:
            problems.add(f"{where}: expected {_wanted(field, value)}, got {_show(value)}", order=order)
    return out


def too_big(size: int, more: bool = False) -> str:
    """The one line for a file over MAX_BYTES (more: at least size bytes, the rest not read)."""
    # (one decimal that would round to the limit itself, 16,000,001 bytes read "16.0 MB; the limit is 16 MB": bytes)
    shown = f"{size / 1e6:,.1f} MB" if round(size / 1e6, 1) > MAX_MB else f"{size:,} bytes"
    return (f"the file is {'more than ' if more else ''}{shown}; the limit is {MAX_MB} MB ({MAX_BYTES:,} bytes; "
            "a 20,000-row export is about 13 MB)")


def _depth(text: bytes) -> int:
    """How deeply arrays and objects nest in JSON text (UTF-8), counted before it is parsed: brackets
    outside strings, a string's quotes being those not escaped (after an even run of backslashes). A
    pass over the positions of quotes, backslashes and brackets, not over every byte in Python."""
    a = np.frombuffer(text, np.uint8)
    quotes = np.flatnonzero(a == ord('"'))
    slashes = np.flatnonzero(a == ord("\\"))
    if len(slashes) and len(quotes):
        starts = np.ones(len(slashes), bool)
        starts[1:] = np.diff(slashes) != 1
        run_start = slashes[np.maximum.accumulate(np.where(starts, np.arange(len(slashes)), 0))]
        j = np.searchsorted(slashes, quotes) - 1
        jc = np.maximum(j, 0)
        escaped = (j >= 0) & (slashes[jc] == quotes - 1) & ((quotes - run_start[jc]) % 2 == 1)
        quotes = quotes[~escaped]
    opens = (a == ord("[")) | (a == ord("{"))
    brackets = np.flatnonzero(opens | (a == ord("]")) | (a == ord("}")))
    brackets = brackets[np.searchsorted(quotes, brackets) % 2 == 0]   # an even number of quotes before
    steps = np.where(opens[brackets], 1, -1)
    return int(np.cumsum(steps).max(initial=0))


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise BadDocument([f"a number of {len(digits.lstrip('-')):,} digits; no field takes more than "
                           f"{MAX_DIGITS:,}"])
    return int(digits)


def _parse(data: bytes | str):
    """JSON within the limits on size, nesting and integer length; every way it can fail is a
    BadDocument, one line, never the parser's own exception."""
    size = len(data.encode() if isinstance(data, str) else data)
    if size > MAX_BYTES:
        raise BadDocument([too_big(size)])
    if not data.strip():   # (json's own words for it: "Expecting value at line 1, column 1")
        raise BadDocument(["the file is empty" if not data else "the file holds only blank space"])
    try:
        # as json.loads reads bytes (UTF-8, or UTF-16/32 by their first bytes), then counted as UTF-8
        text = data if isinstance(data, str) else data.decode(json.detect_encoding(data))
    except UnicodeDecodeError:
        raise BadDocument(["not JSON: the file is not UTF-8 text"]) from None
    if _depth(text.encode("utf-8", "surrogatepass")) > MAX_DEPTH:
        raise BadDocument([f"nested too deeply to read (arrays or objects within each other more than {MAX_DEPTH} "
                           "levels deep); an export nests four levels"])
    try:
        return json.loads(text, parse_int=_int)
    except RecursionError:   # the count above missed nothing json reads; kept for safety all the same
        raise BadDocument(["nested too deeply to read; an export nests four levels"]) from None
    except json.JSONDecodeError as exc:
        # json's "Unterminated string starting at" ends in the "at" the place follows
        raise BadDocument([f"not JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno}"]) from None
    except ValueError as exc:   # anything else json.loads refuses, in one line
        raise BadDocument([f"not JSON: {' '.join(str(exc).split())[:200]}"]) from None


def _row_types(raw: list, problems: _Problems) -> pd.DataFrame:
    """The rows as a table of the format's fields (Python values as parsed), their types checked a
    column at a time: the file may have 50,000 rows."""
    not_objects = [i for i, r in enumerate(raw) if not isinstance(r, dict)]
    for i in not_objects[:MAX_MESSAGES]:
        problems.add(f"results[{i}]: expected an object, got {_show(raw[i])}", row=i)
    if not_objects:
        problems.count += len(not_objects[MAX_MESSAGES:])
        return pd.DataFrame()
    frame = pd.DataFrame(raw, columns=list(ROW), dtype=object)
    timed = (frame["status"] == "ok").to_numpy()
    for order, (name, field) in enumerate(ROW.items()):
        col = frame[name]
        missing = col.isna().to_numpy()   # absent, null or NaN
        wrong = ~missing & ~_fits(col, field.kind)
        checks = [(wrong, None), (missing & field.required, field.wanted)]
        if name in DRAWN:   # a timed row is drawn on log axes: the value must be there, above zero
            low = timed & ~missing & ~wrong & ~_fits(col, "positive")
            checks.append((timed & (missing | low), "a positive number for a timed row"))
        for rows, wanted in checks:
            for i in np.flatnonzero(rows)[:MAX_MESSAGES]:
                # pandas reads an absent field and a NaN the file gives alike: the file says which
                given = raw[i].get(name) if missing[i] else col.iloc[i]
                got = f", got {_show(given)}" if given is not None else ""
                problems.add(f"results[{i}].{name}: {'' if got else 'missing; '}expected "
                             f"{wanted or _wanted(field, given)}{got}", row=i, order=order)
            problems.count += max(0, int(rows.sum()) - MAX_MESSAGES)
    return frame


def _unknown(frame: pd.DataFrame, problems: _Problems) -> np.ndarray:
    """Rows whose kernel, precision, launch shape or status this explorer does not know (an export of
    a newer version, or a hand-edited one): marked to be left out, each with its problem."""
    specs = _timed()
    precisions = sorted({k.precision for k in specs.values()})
    kernel = frame["kernel"]
    given = frame["block"].notna()
    pair = frame["block_x"].notna() & frame["block_y"].notna()   # the other spelling: block_x, block_y
    values = {"kernel": kernel, "status": frame["status"], "precision": frame["precision"], "tile": frame["tile"],
              "pad": frame["pad"], "block": frame["block"].where(given, (frame["block_x"].astype(str) + "x"
                                                                         + frame["block_y"].astype(str)).where(pair))}
    takes = {"precision": lambda s: [s.precision], "tile": lambda s: list(s.params.get("TILE", ())),
             "pad": lambda s: list(s.params.get("PAD", (0,))), "block": lambda s: [f"{x}x{y}" for x, y in s.block_shapes]}
    bad = {"kernel": ~kernel.isin(list(specs)), "status": ~frame["status"].isin(STATUSES),
           "precision": ~frame["precision"].isin(precisions)}
    for name, allowed in takes.items():
        for spec in specs.values():
            # absent: the kernel's default (tile, pad, block); a precision is always given
            ok = values[name].isin(allowed(spec)) | (values[name].isna() & (name != "precision"))
            bad[name] = bad.get(name, False) | ((kernel == spec.name) & ~ok)

    def wanted(name: str, i: int) -> str:
        if name == "kernel":
            return f"a kernel of this explorer ({', '.join(specs)})"
        if name == "status":
            return ROW["status"].wanted
        if name == "precision" and values[name].iloc[i] not in precisions:
            return " or ".join(precisions)
        return f"{_either(takes[name](specs[kernel.iloc[i]]))} for {kernel.iloc[i]}"

    left_out = np.zeros(len(frame), dtype=bool)
    for order, name in enumerate(("kernel", "precision", "tile", "pad", "block", "status")):
        rows = bad[name].to_numpy()
        left_out |= rows
        for i in np.flatnonzero(rows)[:MAX_MESSAGES]:
            problems.add(f"results[{i}].{name}: expected {wanted(name, i)}, got {_show(values[name].iloc[i])}",
                         row=i, order=order)
        problems.count += max(0, int(rows.sum()) - MAX_MESSAGES)
    return left_out


def _timed() -> dict[str, registry.KernelSpec]:
    return {k.name: k for k in registry.CATALOG if k.timed}


def _either(values) -> str:
    choices = [str(v) for v in values] or ["none"]
    return choices[0] if len(choices) == 1 else ", ".join(choices[:-1]) + " or " + choices[-1]


def _params(frame: pd.DataFrame, problems: _Problems) -> tuple[list[dict | None], np.ndarray]:
    """Each row's compile-time parameters by name: its params, and an older file's tile and pad (those
    its kernel declares). Also which rows name a parameter their kernel does not declare, a value it
    does not allow, or a tile or pad that their params contradict: marked to be left out, each with
    its problem. (Of a kernel this explorer does not know, None: that row is left out already.)"""
    specs = _timed()
    older = {name: (frame[field].to_numpy(), frame[field].notna().to_numpy()) for name, field in PARAM_FIELDS.items()
             if frame[field].notna().any()}   # (none in a file of today's format)
    out, bad = [], []
    for i, (kernel, given) in enumerate(zip(frame["kernel"].to_numpy(), frame["params"].to_numpy())):
        spec = specs.get(kernel)
        if spec is None:
            out.append(None)
            continue
        params = {name: int(values[i]) for name, (values, has) in older.items() if has[i] and name in spec.params}
        for name, value in (given if isinstance(given, dict) else {}).items():
            if name not in spec.params:
                why = f"params: {kernel} has no parameter {name} (it takes {', '.join(spec.params) or 'none'})"
            elif value not in spec.params[name]:
                why = f"params.{name}: expected {_either(spec.params[name])} for {kernel}, got {value}"
            elif params.get(name, value) != value:
                why = f"params.{name}: {value}, but its {PARAM_FIELDS[name]} field says {params[name]}"
            else:
                params[name] = value
                continue
            bad.append((i, why))
            break
        out.append(params)
    for i, why in bad[:MAX_MESSAGES]:
        problems.add(f"results[{i}].{why}", row=i, order=len(ROW))
    problems.count += max(0, len(bad) - MAX_MESSAGES)
    wrong = np.zeros(len(frame), dtype=bool)
    wrong[[i for i, _ in bad]] = True
    return out, wrong


def _label_columns(df: pd.DataFrame) -> pd.DataFrame:
    """The table with each parameter the charts name a row by (TILE, PAD) also in a column of its own,
    the field format 1 had for it (engine/plots/charts.py LABEL_FIELDS); a row without params (one of
    format 1, not read through `read`) keeps what that field says."""
    params = df["params"].to_numpy() if "params" in df else [None] * len(df)
    columns = {}
    for name, field in PARAM_FIELDS.items():
        older = df[field].to_numpy() if field in df else [None] * len(df)
        columns[field] = pd.Series([p.get(name) if isinstance(p, dict) else v for p, v in zip(params, older)],
                                   index=df.index, dtype=float)
    return df.assign(**columns)


def as_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows as measured (engine/bench/benchmark.py measure) as the table the charts draw."""
    return _label_columns(pd.DataFrame(rows))


def read(data: bytes | str) -> Document:
    """A benchmark export, checked: the rows and provenance a chart can trust, or BadDocument."""
    doc = _parse(data)
    problems = _Problems()
    if not isinstance(doc, dict):
        raise BadDocument([f"expected an object with format, provenance and results, got {_show(doc)}"])
    if doc.get("format") not in FORMATS:
        problems.add(f"format: expected {' or '.join(map(json.dumps, FORMATS))}, got {_show(doc.get('format'))}")
    prov = doc.get("provenance")
    if not isinstance(prov, dict):
        problems.add(f"provenance: expected an object, got {_show(prov)}", order=1)
    else:
        prov = _check_object(prov, "provenance", PROVENANCE, problems)
    raw = doc.get("results")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_ROWS:
        got = f"{len(raw):,} rows" if isinstance(raw, list) else _show(raw)
        problems.add(f"results: expected a list of 1 to {MAX_ROWS:,} rows, got {got}", order=2)
    if problems:
        raise BadDocument(problems.lines())
    frame = _row_types(raw, problems)
    if problems:
        raise BadDocument(problems.lines())
    unknown = _Problems()
    left_out = _unknown(frame, unknown)
    params, wrong = _params(frame, unknown)
    left_out |= wrong
    if left_out.all():
        raise BadDocument(unknown.lines())
    # The table as pandas makes it from the rows themselves: a column for each field some row has;
    # then each row's parameters, whichever format gave them, and the charts' columns made from them.
    present = set().union(*raw) - {"params", *PARAM_FIELDS.values()}
    table = frame.loc[~left_out, [c for c in ROW if c in present]].reset_index(drop=True).infer_objects()
    table["params"] = [p for p, out in zip(params, left_out) if not out]
    return Document(_label_columns(table), prov, unknown.lines(), int(left_out.sum()), raw, ~left_out)


# Every ASCII punctuation character: a backslash before any of them makes Markdown show it as itself.
_MARKDOWN = re.compile(r"([!-/:-@\[-`{-~])")
# Markdown's autolinks (GFM) are found in the text after its escapes are undone: a word joiner (U+2060,
# invisible) inside "://", "www." and after "@" keeps a URL or address from becoming a link.
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)
WORD_JOINER = "\u2060"


def plain(text: str) -> str:
    """Text from a file (a GPU's or a file's name, a date, a message quoting a value), for a Markdown
    renderer: on one line, every character shown as itself, so `![x](http://...)` is not an image
    fetched from elsewhere, and no link, heading or HTML either."""
    return _MARKDOWN.sub(r"\\\1", _AUTOLINK.sub(WORD_JOINER, " ".join(str(text).split())))


NOT_REGULAR = "not a regular file (an export is a .json file)"


class Unreadable(EngineError):
    """read_bounded's refusal, naming the file; `reason` says why without it, for a caller that names
    the file its own way (a listing's line, a page's)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def read_bounded(path: Path) -> bytes:
    """A run's file (an export to read back, a recorded run, a sweep): at most MAX_BYTES of a regular
    file, else a one-line Unreadable. Checked before it is opened (opening a FIFO
    nobody writes waits for ever; a device may never end, /dev/zero grew to gigabytes), then opened
    without blocking and checked again, in case the name was swapped in between."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise Unreadable(f"cannot read {path}: {NOT_REGULAR}", NOT_REGULAR)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise Unreadable(f"cannot read {path}: {exc.strerror or exc}", str(exc.strerror or exc)) from None
    with open(fd, "rb") as f:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Unreadable(f"cannot read {path}: {NOT_REGULAR}", NOT_REGULAR)
            data = f.read(MAX_BYTES + 1)
        except OSError as exc:
            raise Unreadable(f"cannot read {path}: {exc.strerror or exc}", str(exc.strerror or exc)) from None
    if len(data) > MAX_BYTES:
        why = too_big(max(st.st_size, len(data)), more=st.st_size < len(data))
        raise Unreadable(f"{path}: {why}", why)
    return data
