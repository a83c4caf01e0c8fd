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

CUDA_DIR = Path(__file__).resolve().parent.parent / "cuda"

_MACROS = {"LDG": ("global", "load"), "STG": ("global", "store"),
           "LDS": ("shared", "load"), "STS": ("shared", "store")}
_SITE_RE = re.compile(r"\b(LDG|STG|LDS|STS)\(\s*(\w+)")
_SIG_RE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)', re.S)
_SHARED_RE = re.compile(r"__shared__\s+float\s+(\w+)\s*\[([^\]]+)\]\s*\[([^\]]+)\]")


@dataclass(frozen=True)
class Site:
    line: int       # 1-based line in the .cu file
    array: str
    space: str      # "global" or "shared"
    op: str         # "load" or "store"
    text: str       # the source line, stripped


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
        """Whether the source names the macro: a parameter it does not name cannot change its build."""
        return re.search(rf"\b{name}\b", self.text) is not None

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
        for macro, array in _SITE_RE.findall(_strip_comment(line)):
            if array not in known:
                raise ValueError(f"{file}:{number}: array {array} is not in trace.cuh's TRACE_ARRAYS")
            space, op = _MACROS[macro]
            sites.append(Site(number, array, space, op, line.strip()))
    keys = [(s.line, s.array, s.op) for s in sites]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{file}: two accesses of one array on one line cannot be told apart in a trace")
    slots = [site_slot(s.line, trace_arrays().index(s.array), s.op == "store") for s in sites]
    if len(set(slots)) != len(slots):
        raise ValueError(f"{file}: two access sites share an ordinal counter (TRACE_SITE_HASH); "
                         "move one of them to another line")
    shared = {m.group(1): (m.group(2), m.group(3)) for m in _SHARED_RE.finditer(text)}
    return KernelSource(sig.group(1), path, text, tuple(params), tuple(sites), shared)
