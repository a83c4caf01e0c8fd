"""Reads the kernel sources in cuda/: signature, access sites and shared arrays.

An access site is one use of an access macro (LDG, STG, LDS, STS from cuda/trace.cuh) in the
source. A trace record names its site by (source line, array, load/store), which the macro
records; this module gives every site an id and the text of its line, for the pages to show.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CUDA_DIR = Path(__file__).resolve().parents[2] / "cuda"

_MACROS = {"LDG": ("global", "load"), "STG": ("global", "store"),
           "LDS": ("shared", "load"), "STS": ("shared", "store")}
_SITE_RE = re.compile(r"\b(LDG|STG|LDS|STS)(4?)\(\s*(\w+)")
# cp.async: CP_ASYNC4(dst, r, c, src, i) reads src (global) and writes dst (shared), 16 bytes each.
_COPY_RE = re.compile(r"\bCP_ASYNC4\(\s*(\w+)\s*,[^,]*,[^,]*,\s*(\w+)\s*,")
_SIG_RE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)', re.S)
_SHARED_RE = re.compile(r"__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?float\s+(\w+)\s*\[([^\]]+)\]\s*\[([^\]]+)\]")


@dataclass(frozen=True)
class Site:
    line: int       # 1-based line in the .cu file
    array: str
    space: str      # "global" or "shared"
    op: str         # "load" or "store"
    text: str       # the source line, stripped
    width: int = 1  # elements per access: 4 for the 128-bit macros (LDG4, STS4, ...)
    copy: bool = False   # one side of an asynchronous global -> shared copy (CP_ASYNC4: cp.async)


SITE_SLOTS = 32  # cuda/trace.cuh TRACE_SITE_SLOTS


def site_slot(line: int, array_id: int, op: int) -> int:
    """cuda/trace.cuh's TRACE_SITE_HASH: which per-thread counter counts a site's executions."""
    return (line * 2 + op + array_id * 17) & (SITE_SLOTS - 1)


@dataclass(frozen=True)
class KernelSource:
    name: str                                   # the extern "C" kernel name
    path: Path
    text: str
    params: tuple[tuple[str, str], ...]          # (C type, name), in order
    sites: tuple[Site, ...]
    shared: dict[str, tuple[str, str]]          # array -> (rows expr, cols expr) in its parameters

    def uses(self, name: str) -> bool:
        """Whether the code names the macro (comments aside): a parameter it does not name cannot
        change its build."""
        return any(re.search(rf"\b{name}\b", line) for line in _code_lines(self.text))

    def shared_shape(self, array: str, params: Mapping[str, int]) -> tuple[int, int]:
        rows, cols = self.shared[array]
        return _eval_int(rows, params), _eval_int(cols, params)


def _eval_int(expr: str, env: Mapping[str, int]) -> int:
    # The shapes are written in parameter names, integers and + - * ( ): check that, then evaluate.
    names = set(re.findall(r"[A-Za-z_]\w*", expr))
    if not re.fullmatch(r"[\w\s+\-*()]+", expr) or names - set(env):
        raise ValueError(f"shared array size {expr!r} is not an expression in {', '.join(env) or 'no parameters'}")
    return int(eval(expr, {"__builtins__": {}}, dict(env)))  # noqa: S307 - checked above


def _strip_comment(line: str) -> str:
    return line.split("//", 1)[0]


@lru_cache(maxsize=None)
def trace_arrays() -> tuple[str, ...]:
    """The array names of cuda/trace.cuh's TRACE_ARRAYS list, in id order."""
    text = (CUDA_DIR / "trace.cuh").read_text()
    line = next(l for l in text.splitlines() if l.startswith("#define TRACE_ARRAYS(X)"))
    return tuple(re.findall(r"X\((\w+)\)", line.split(")", 1)[1]))


@lru_cache(maxsize=None)
def load(file: str) -> KernelSource:
    path = CUDA_DIR / file
    text = path.read_text()
    sig = _SIG_RE.search(text)
    if not sig:
        raise ValueError(f"{file}: no extern \"C\" __global__ kernel found")
    params = []
    for p in sig.group(2).split(","):
        words = p.replace("*", " * ").split()
        params.append((" ".join(words[:-1]), words[-1]))
    known = set(trace_arrays())
    sites = []
    for number, line in enumerate(text.splitlines(), start=1):
        for macro, wide, array in _SITE_RE.findall(_strip_comment(line)):
            if array not in known:
                raise ValueError(f"{file}:{number}: array {array} is not in trace.cuh's TRACE_ARRAYS")
            space, op = _MACROS[macro]
            sites.append(Site(number, array, space, op, line.strip(), 4 if wide else 1))
        for dst, src in _COPY_RE.findall(_strip_comment(line)):
            for array in (src, dst):
                if array not in known:
                    raise ValueError(f"{file}:{number}: array {array} is not in trace.cuh's TRACE_ARRAYS")
            sites.append(Site(number, src, "global", "load", line.strip(), 4, copy=True))
            sites.append(Site(number, dst, "shared", "store", line.strip(), 4, copy=True))
    keys = [(s.line, s.array, s.op) for s in sites]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{file}: two accesses of one array on one line cannot be told apart in a trace")
    slots = [site_slot(s.line, trace_arrays().index(s.array), s.op == "store") for s in sites]
    if len(set(slots)) != len(slots):
        raise ValueError(f"{file}: two access sites share an ordinal counter (TRACE_SITE_HASH); "
                         "move one of them to another line")
    shared = {m.group(1): (m.group(2), m.group(3)) for m in _SHARED_RE.finditer(text)}
    _check_traced_arrays(file, text, [n for t, n in params if "*" in t and n in known], list(shared))
    return KernelSource(sig.group(1), path, text, tuple(params), tuple(sites), shared)


# Any function's parameter list (a kernel's, a __device__ helper's), however many lines it spans.
_FUNCTION_RE = re.compile(r"(?:__global__|__device__)[^;{}()]*\(([^()]*)\)\s*\{", re.S)
# An access macro's array argument(s): what is left of a traced array's name once these are blanked
# is a use the trace does not see.
_MACRO_ARRAY_RE = re.compile(r"\b(?:LDG|STG|LDS|STS)4?\(\s*(\w+)|\bCP_ASYNC4\(\s*(\w+)\s*,[^,]*,[^,]*,\s*(\w+)")


@lru_cache(maxsize=64)   # build.used_defines asks of a source on every build lookup
def _code_lines(text: str) -> tuple[str, ...]:
    """The kernel's statements, line by line: comments, string literals and function parameter lists
    (however many lines they span) blanked out, line numbers kept."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))   # noqa: E731
    text = "\n".join(_strip_comment(line) for line in re.sub(r"/\*.*?\*/", blank, text, flags=re.S).splitlines())
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"', blank, text)

    def params_blanked(m):
        head, params, tail = m.group(0).partition(m.group(1))
        return head + re.sub(r"[^\n]", " ", params) + tail
    return tuple(_FUNCTION_RE.sub(params_blanked, text).splitlines())


def _check_traced_arrays(file: str, text: str, pointers: list[str], shared: list[str]) -> None:
    """The rules a kernel must follow for its trace to be the truth, checked when it is loaded.
    A record names its element by the array it was made through and an index from that array's
    start, so:
      - a traced array is touched only through the access macros (a plain A[i] or *A is an
        access nobody records);
      - a global array parameter is never moved (A += row * K; LDG(A, k) computes the right product
        while every record says row 0) nor copied into another pointer (accesses through the copy
        would not be recorded at all): index from the original, LDG(A, row * K + k)."""
    names = [*pointers, *shared]
    if not names:
        return
    alt = "|".join(map(re.escape, names))
    rules = []
    if pointers:   # first: a copy made with &A[i] is a copy, not an access
        ptr = "|".join(map(re.escape, pointers))
        rules += [
            (re.compile(rf"\b({ptr})\s*(\+=|-=|\+\+|--|=(?!=))|(?:\+\+|--)\s*({ptr})\b"),
             "is moved; records would count from the moved pointer, not from the array's start: index from "
             "the original pointer instead (LDG(A, row * K + k))"),
            (re.compile(rf"[=(,]\s*&?\s*\(?\s*({ptr})\s*[+\-\[]"),
             "is copied into another pointer; accesses through the copy are not recorded: index from the "
             "original pointer instead"),
        ]
    rules += [
        (re.compile(rf"\b({alt})\s*\["), "is indexed directly; use LDG/STG (global) or LDS/STS (shared) so the "
                                          "access is recorded"),
        (re.compile(rf"\*\s*\(?\s*({alt})\b"), "is dereferenced directly; use the access macros so the access "
                                               "is recorded"),
    ]
    anywhere = re.compile(rf"\b({alt})\b")
    for number, line in enumerate(_code_lines(text), start=1):
        if _SHARED_RE.search(line):
            if line.count("[") > 2 * len(_SHARED_RE.findall(line)):
                raise ValueError(f"{file}:{number}: declare one __shared__ array per statement, so each "
                                 f"gets its own size: {line.strip()}")
            continue   # a declaration, not an access
        for rule, why in rules:
            m = rule.search(line)
            if m:
                name = next(g for g in m.groups() if g in names)
                raise ValueError(f"{file}:{number}: {name} {why}: {line.strip()}")
        # Whatever else names a traced array outside an access macro (a cast, a plain copy, a
        # pointer to a shared array) is a use the trace would not see.
        rest = _MACRO_ARRAY_RE.sub(lambda m: re.sub(r"\w", " ", m.group(0)), line)
        m = anywhere.search(rest)
        if m:
            raise ValueError(f"{file}:{number}: {m.group(1)} is used outside the access macros (LDG/STG, "
                             f"LDS/STS, their 128-bit forms, CP_ASYNC4), where the trace cannot see it: "
                             f"{line.strip()}")
