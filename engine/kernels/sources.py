"""Reads the kernel sources in cuda/: signature, traced arrays, access sites, and the rules a source
must follow for its trace to be the truth (checked here, when a kernel is loaded).

An access site is one use of an access macro (LDG, STG, LDS, STS and their vector forms, CP_ASYNC4,
CP_ASYNC4_ZFILL, LDMATRIX_X1/X2/X4 and their .trans forms LDMATRIX_X1_T/X2_T/X4_T from cuda/trace.cuh) in the source.
A trace record names its site by (source line, array, load/store), which the macro records; this
module gives every site an id and the text of its line, for the pages to show.

A source that does not include trace.cuh is not traced (WMMA, wgmma and TMA kernels: the hardware
addresses their fragment, descriptor and tensor-map loads, no lane names an address): of it only
the signature is read, and none of the rules below apply.

The traced arrays of a kernel are its pointer parameters (global memory) and its __shared__ arrays
(a view of the dynamic shared memory is one: see _VIEW_RE), numbered in that order: the build
passes each number as TRACE_ID_<name>, so a kernel may name its arrays as it likes. Each has an
element type (float, __half, ...): records count elements of it.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engine.kernels import cexpr

CUDA_DIR = Path(__file__).resolve().parents[2] / "cuda"

_MACROS = {"LDG": ("global", "load"), "STG": ("global", "store"),
           "LDS": ("shared", "load"), "STS": ("shared", "store")}
# LDG(A, i), LDG4(A, i) (four consecutive elements, one instruction), LDS(As, i) / LDS(As, r, c), ...
_SITE_RE = re.compile(r"\b(LDG|STG|LDS|STS)([248]?)\(\s*(\w+)")
# cp.async: CP_ASYNC4(dst, r, c, src, i) or CP_ASYNC4(dst, i, src, j) reads src (global) and writes
# dst (shared), 16 bytes each.
_COPY_RE = re.compile(r"\bCP_ASYNC4\(\s*(\w+)\s*,(?:[^,]*,)?[^,]*,\s*(\w+)\s*,")
# cp.async with zero fill: CP_ASYNC4_ZFILL(in, dst, r, c, src, i), the same copy behind a condition
# without commas (where it is false the lane reads nothing and writes zeros).
_ZFILL_RE = re.compile(r"\bCP_ASYNC4_ZFILL\(\s*[^,()]+,\s*(\w+)\s*,(?:[^,]*,)?[^,]*,\s*(\w+)\s*,")
# ldmatrix: LDMATRIX_X4(regs, As, r, c) or LDMATRIX_X4(regs, As, i) reads 16-bit rows of a shared array;
# LDMATRIX_X4_T (.trans) reads the same rows and hands each 8x8 matrix out transposed.
_MATRIX = r"\bLDMATRIX_X([124])(_T)?\("
_MATRIX_RE = re.compile(_MATRIX + r"\s*[^,()]+,\s*(\w+)")
# __launch_bounds__(expression), with one level of parentheses inside: (BM * BN / (TM * TN)).
# __cluster_dims__(x, y, z) (a kernel launched in thread-block clusters) may stand beside it, in
# either order: each is an attribute, not the kernel's name.
_BOUNDS_CALL = r"(?:__launch_bounds__|__cluster_dims__)\s*\((?:[^()]|\([^()]*\))*\)"
_BOUNDS = rf"(?:{_BOUNDS_CALL}\s*)*"
_SIG_RE = re.compile(rf'extern\s+"C"\s+__global__\s+{_BOUNDS}void\s+{_BOUNDS}(\w+)\s*\(([^)]*)\)', re.S)

_KERNEL_RE = re.compile(rf"\b__global__\s+{_BOUNDS}void\s+{_BOUNDS}(\w+)\s*\([^)]*\)\s*\{{")


def _compiled_lines(lines: tuple[str, ...]) -> list[str]:
    """The lines with those inside #if 0 ... #endif (nested #if's counted) blanked, numbering kept."""
    out, depth = [], 0   # depth: inside #if 0, how many #if's deep
    for line in lines:
        directive = re.match(r"\s*#\s*(if|ifdef|ifndef|else|elif|endif)\b(.*)", line)
        if depth:
            if directive and directive.group(1).startswith("if"):
                depth += 1
            elif directive and directive.group(1) == "endif" or (directive and depth == 1 and directive.group(1) in ("else", "elif")):
                depth -= 1
            out.append("")
            continue
        if directive and directive.group(1) == "if" and directive.group(2).strip() == "0":
            depth = 1
        out.append(line)
    return out


def at_line(file: str | Path, line: int) -> str:
    """"file.cu:LINE: ", the lead of a message about that line of a source (what the Playground's
    reader, engine/playground.py diagnostics, puts in its editor's gutter); "" where no line is known."""
    return f"{Path(file).name}:{line}: " if line else ""


def kernel_name(text: str) -> str | None:
    """The name of the extern "C" __global__ kernel a source declares (its file's stem), or None."""
    sig = _SIG_RE.search(text)
    return sig.group(1) if sig else None


_ALIGN = r"(?:__align__\(\s*\d+\s*\)\s+)?"
# __shared__ [__align__(n)] [volatile] TYPE [__align__(n)] name[d1][d2]; extern ones (no size) too,
# to be refused by name.
_SHARED_RE = re.compile(rf"(extern\s+)?__shared__\s+{_ALIGN}(?:volatile\s+)?((?:unsigned\s+)?\w+)\s+{_ALIGN}(\w+)\s*"
                        r"((?:\[[^\]]*\]\s*)+)")
# Dynamic shared memory (sized at launch; a block must use it for more than 48 KB) is one buffer,
#   extern __shared__ __align__(128) unsigned char smem[];
# that the kernel sees only through typed views, each starting where the one before ends:
#   auto &As = *reinterpret_cast<__half (*)[STAGES * BM][BK]>(smem);
#   auto &Bs = *reinterpret_cast<__half (*)[STAGES * BK][BN]>(smem + sizeof(As));
# A view is a reference to an array of known shape, so it is traced as a __shared__ array of that
# shape (records count from its own first element), and the launch's size is the views' sum.
_VIEW_RE = re.compile(r"auto\s*&\s*(\w+)\s*=\s*\*\s*reinterpret_cast<\s*((?:unsigned\s+)?\w+)\s*\(\s*\*\s*\)\s*"
                      r"((?:\[[^\]]*\]\s*)+)>\s*\(\s*(\w+)\s*((?:\+\s*sizeof\s*\(\s*\w+\s*\)\s*)*)\)\s*;")
# A kernel has at most this many access sites: a record's site is one byte (TRACE_DTYPE).
MAX_SITES = 255

# The element types a traced array may have, with their size in bytes.
ELEMENT_TYPES = cexpr.ELEMENT_SIZES
COPY_BYTES = 16   # what one cp.async moves here (CP_ASYNC4)
MATRIX_ROW_BYTES = 16   # what one lane's row of an ldmatrix holds: 8 elements of 16 bits


@dataclass(frozen=True)
class Array:
    """A traced array: a pointer parameter (global) or a __shared__ array of the kernel."""
    name: str
    space: str                  # "global" or "shared"
    element: str                # C type of its elements
    dims: tuple[str, ...] = ()  # shared arrays: each dimension's size, as written (in parameter names)
    dynamic: bool = False       # a view of the dynamic shared memory (_VIEW_RE)

    @property
    def element_bytes(self) -> int:
        return ELEMENT_TYPES[self.element]


@dataclass(frozen=True)
class Site:
    line: int       # 1-based line in the .cu file
    array: str
    space: str      # "global" or "shared"
    op: str         # "load" or "store"
    text: str       # the source line, stripped
    width: int = 1  # elements per access: 2, 4 or 8 for the vector macros (LDG4, STS4, ...)
    copy: bool = False   # one side of an asynchronous global -> shared copy (CP_ASYNC4: cp.async)
    bytes: int = 4  # bytes per lane of one access: width times the element's size
    matrices: int = 0    # ldmatrix (LDMATRIX_X1/X2/X4): the 8x8 matrices one warp instruction loads;
                         # each of lanes 0 .. 8 * matrices - 1 names one 16-byte row
    trans: bool = False  # ldmatrix .trans (LDMATRIX_X4_T, ...): each matrix handed out transposed. Only
                         # which lane receives which element changes, not the rows read: its records,
                         # wavefronts and bank conflicts are those of the plain ldmatrix
    zfill: bool = False  # a copy whose lanes outside zero-fill (CP_ASYNC4_ZFILL): none is predicated off,
                         # so the instruction runs for every warp that issues it, reading or not

@dataclass(frozen=True)
class KernelSource:
    name: str                                   # the extern "C" kernel name
    path: Path
    text: str
    params: tuple[tuple[str, str], ...]          # (C type, name), in order
    sites: tuple[Site, ...]
    arrays: tuple[Array, ...]                   # traced arrays: pointer parameters, then __shared__ arrays
    traced: bool = True                         # includes trace.cuh: its accesses can be recorded
    dynamic: str = ""                           # the dynamic shared memory buffer's name, if it has one

    def uses(self, name: str) -> bool:
        """Whether the code names the macro (comments aside): a parameter it does not name cannot
        change its build."""
        return any(re.search(rf"\b{name}\b", line) for line in code_lines(self.text))

    @property
    def counters(self) -> int:
        """Per-thread execution counters a traced run needs: one a site, and one for a site the
        engine did not find (cuda/trace.cuh TRACE_SITE_COUNT + 1)."""
        return len(self.sites) + 1

    def array(self, name: str) -> Array:
        return next(a for a in self.arrays if a.name == name)

    @property
    def shared(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.arrays if a.space == "shared")

    def shared_shape(self, array: str, params: Mapping[str, int]) -> tuple[int, int]:
        """(rows, cols) of a shared array; a 1-D one is one row."""
        dims = [_eval_int(d, params) for d in self.array(array).dims]
        return (dims[0], dims[1]) if len(dims) == 2 else (1, dims[0])

    def static_shared_bytes(self, params: Mapping[str, int]) -> int:
        """The shared memory its __shared__ arrays of fixed size declare (not the dynamic buffer's views)."""
        return sum(a.element_bytes * _product(a.dims, params) for a in self.arrays if a.space == "shared" and not a.dynamic)

    def dynamic_shared_bytes(self, params: Mapping[str, int]) -> int:
        """The dynamic shared memory a launch must give the block: its views, one after the other."""
        return sum(a.element_bytes * _product(a.dims, params) for a in self.arrays if a.dynamic)

    def trace_defines(self) -> dict[str, int | str]:
        """What a traced build defines (cuda/trace.cuh): each traced array's number and how many
        there are; each access site's number (TRACE_SITE_OF, which folds to a constant in every
        macro) and how many: a thread counts each site's executions in a counter of its own."""
        ids = {a.name: i for i, a in enumerate(self.arrays)}
        site_of = "".join(f"(l)=={s.line}&&(a)=={ids[s.array]}&&(o)=={int(s.op == 'store')}?{i}:"
                          for i, s in enumerate(self.sites))
        return {**{f"TRACE_ID_{name}": i for name, i in ids.items()}, "TRACE_ARRAY_COUNT": len(ids),
                "TRACE_SITE_COUNT": len(self.sites), "TRACE_SITE_OF(l,a,o)": f"({site_of}{len(self.sites)})"}


def _product(dims: tuple[str, ...], params: Mapping[str, int]) -> int:
    n = 1
    for d in dims:
        n *= _eval_int(d, params)
    return n


def _eval_int(expr: str, env: Mapping[str, int]) -> int:
    try:
        return cexpr.evaluate(expr, env)
    except ValueError as exc:
        raise ValueError(f"shared array size {cexpr.quoted(expr)!r}: {exc}") from None


def _element(ctype: str) -> str | None:
    return next((w for w in ctype.replace("*", " ").split() if w in ELEMENT_TYPES), None)


# The kernel's parameters that are not arrays: the sizes M, N and K, by these names (what
# engine/tracing/plan.py's size_arguments passes).
SIZE_PARAMETERS = ("M", "N", "K")


# Bounded: the Playground reads a new source for every edit a student builds (each a few KB read).
@lru_cache(maxsize=512)
def load(file: str) -> KernelSource:
    path = CUDA_DIR / file
    text = path.read_text()
    sig = _SIG_RE.search(text)
    if not sig:
        raise ValueError(f"{file}: no extern \"C\" __global__ kernel found")
    # One kernel a source: of two, the first had been traced without a word about the second.
    # (Any __global__ function defined outside comments and #if 0: code_lines blanks the "C" of extern
    # "C" too; a declaration, ending in ';', is no second kernel.)
    compiled = "\n".join(_compiled_lines(code_lines(text)))
    kernels = list(_KERNEL_RE.finditer(compiled))
    if len(kernels) > 1:
        number = compiled.count("\n", 0, kernels[1].start()) + 1
        raise ValueError(f"{file}:{number}: a second __global__ kernel, {kernels[1].group(1)}: a source holds one "
                         f"kernel, here {kernels[0].group(1)} (make the other a __device__ function)")
    params = []
    for p in sig.group(2).split(","):
        words = p.replace("*", " * ").split()
        params.append((" ".join(words[:-1]), words[-1]))
    arrays = [Array(name, "global", _element(ctype) or "") for ctype, name in params if "*" in ctype]
    for ctype, name in params:   # the engine passes M, N and K (plan.sizes): another had failed in the run, a KeyError
        if "*" not in ctype and "CUtensorMap" not in ctype and name not in SIZE_PARAMETERS:
            number = text.count("\n", 0, sig.start()) + 1   # the signature's line, for the editor's gutter
            raise ValueError(f"{file}:{number}: the kernel's parameter {ctype} {name} is none the engine passes: "
                             f"its whole numbers are {', '.join(SIZE_PARAMETERS)}")
    if not re.search(r'^\s*#include\s+"trace\.cuh"', text, re.M):
        return KernelSource(sig.group(1), path, text, tuple(params), (), tuple(arrays), traced=False)
    code = "\n".join(code_lines(text))
    buffer = ""
    for m in _SHARED_RE.finditer(code):
        extern, element, name = m.group(1), " ".join(m.group(2).split()), m.group(3)
        dims = tuple(d.strip() for d in re.findall(r"\[([^\]]*)\]", m.group(4)))
        if extern and element == "unsigned char" and dims == ("",) and not buffer:
            buffer = name   # the dynamic shared memory, traced through its views
            continue
        if extern or not all(dims):
            raise ValueError(f"{file}: shared array {name} has no size (extern __shared__, dynamic shared memory): "
                             "the trace needs its shape; declare it with one")
        if len(dims) > 2:
            raise ValueError(f"{file}: shared array {name} has {len(dims)} dimensions; traced arrays have 1 or 2")
        arrays.append(Array(name, "shared", element if element in ELEMENT_TYPES else "", dims))
    arrays += _views(file, code, buffer)
    names = [a.name for a in arrays]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{file}: two traced arrays are named {twice[0]}; records name arrays by name, so give "
                         "each its own")
    for a in arrays:
        if not a.element:
            raise ValueError(f"{file}: {a.name} has an element type the trace cannot size; traced arrays hold "
                             f"{', '.join(ELEMENT_TYPES)}")
    spaces = {a.name: a for a in arrays}
    _check_traced_arrays(file, text, [a.name for a in arrays if a.space == "global"],
                         [a.name for a in arrays if a.space == "shared"], buffer)

    def traced(number: int, name: str, space: str) -> Array:
        if name not in spaces:
            raise ValueError(f"{file}:{number}: {name} is not a traced array (a pointer parameter of the kernel "
                             "or a __shared__ array)")
        if spaces[name].space != space:
            raise ValueError(f"{file}:{number}: {name} is in {spaces[name].space} memory; use the "
                             f"{'LDG/STG' if spaces[name].space == 'global' else 'LDS/STS'} macros for it")
        return spaces[name]

    sites = []
    for number, line in enumerate(code_lines(text), start=1):
        shown = text.splitlines()[number - 1].strip()
        for m in re.finditer(rf"\b(?:LDG|STG|LDS|STS)[248]?\(|\bCP_ASYNC4(?:_ZFILL)?\(|{_MATRIX}", line):
            rest = line[m.end():]
            if rest.count(")") - rest.count("(") < 1:   # records carry __LINE__: it must be this one
                raise ValueError(f"{file}:{number}: write each access macro on one line, so its records' "
                                 f"line is its site's: {shown}")
        for macro, wide, name in _SITE_RE.findall(line):
            space, op = _MACROS[macro]
            a = traced(number, name, space)
            width = int(wide or 1)
            size = width * a.element_bytes
            if width > 1 and size not in (4, 8, 16):
                raise ValueError(f"{file}:{number}: {macro}{wide} of {a.element} moves {size} bytes; vector "
                                 "accesses move 4, 8 or 16 bytes")
            sites.append(Site(number, name, space, op, shown, width, bytes=size))
        for zfill, found in ((False, _COPY_RE.findall(line)), (True, _ZFILL_RE.findall(line))):
            for dst, src in found:
                s, d = traced(number, src, "global"), traced(number, dst, "shared")
                sites.append(Site(number, src, "global", "load", shown, COPY_BYTES // s.element_bytes, True, COPY_BYTES,
                                  zfill=zfill))
                sites.append(Site(number, dst, "shared", "store", shown, COPY_BYTES // d.element_bytes, True, COPY_BYTES,
                                  zfill=zfill))
        for dst, src in _SKIP_COPY_RE.findall(line):
            if not any(site.line == number and site.copy and site.array == dst for site in sites) or \
                    not any(site.line == number and site.copy and site.array == src for site in sites):
                raise ValueError(f"{file}:{number}: SKIP_CP_ASYNC({dst}, {src}) is for the lanes that skip this "
                                 f"line's CP_ASYNC4({dst}, ..., {src}, ...), and the line has none: {shown}")
        for matrices, trans, name in _MATRIX_RE.findall(line):
            a = spaces.get(name)
            if a is not None and a.space == "global":
                raise ValueError(f"{file}:{number}: ldmatrix reads shared memory only; {name} is in global memory: "
                                 f"{shown}")
            a = traced(number, name, "shared")
            if a.element_bytes != 2:
                raise ValueError(f"{file}:{number}: ldmatrix loads 16-bit elements (__half, __nv_bfloat16); "
                                 f"{name} holds {a.element}: {shown}")
            sites.append(Site(number, name, "shared", "load", shown, MATRIX_ROW_BYTES // a.element_bytes,
                              bytes=MATRIX_ROW_BYTES, matrices=int(matrices), trans=bool(trans)))
        for macro, name in _SKIP_RE.findall(line):   # a guard's other side: the same line's access of name
            if not any(site.line == number and site.array == name and (site.space, site.op) == _MACROS[macro]
                       and not site.copy for site in sites):
                raise ValueError(f"{file}:{number}: SKIP_{macro}({name}) is for the lanes that skip this line's "
                                 f"{macro}({name}, ...) (or, SKIP_LDS, its ldmatrix), and the line has none: {shown}")
    if len(sites) > MAX_SITES:
        raise ValueError(f"{file}: {len(sites)} access sites; a traced kernel has at most {MAX_SITES}")
    keys = [(s.line, s.array, s.op) for s in sites]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{file}: two accesses of one array on one line cannot be told apart in a trace")
    return KernelSource(sig.group(1), path, text, tuple(params), tuple(sites), tuple(arrays), dynamic=buffer)


def _views(file: str, code: str, buffer: str) -> list[Array]:
    """The typed views of the dynamic shared memory buffer (_VIEW_RE), in order, each checked to start
    where the ones before it end: then the buffer's size is their sum, and no two overlap."""
    views = []
    for m in _VIEW_RE.finditer(code):
        name, element, shape, base, offset = m.groups()
        if base != buffer:
            raise ValueError(f"{file}: view {name} is of {base}, which is not the kernel's dynamic shared memory "
                             "(extern __shared__ __align__(128) unsigned char NAME[];)")
        after = re.findall(r"sizeof\s*\(\s*(\w+)\s*\)", offset)
        if after != [v.name for v in views]:
            want = " + ".join([base] + [f"sizeof({v.name})" for v in views])
            raise ValueError(f"{file}: view {name} must start where the views before it end, at ({want}), so the "
                             "launch's dynamic shared memory is their sum and no two overlap")
        dims = tuple(d.strip() for d in re.findall(r"\[([^\]]*)\]", shape))
        if len(dims) > 2 or not all(dims):
            raise ValueError(f"{file}: view {name} has shape {shape.strip()}; traced arrays have 1 or 2 sized dimensions")
        element = " ".join(element.split())
        views.append(Array(name, "shared", element if element in ELEMENT_TYPES else "", dims, dynamic=True))
    if buffer and not views:
        raise ValueError(f"{file}: the dynamic shared memory {buffer} is used without a typed view (auto &As = "
                         f"*reinterpret_cast<T (*)[rows][cols]>({buffer});), so the trace cannot know its shape")
    return views


# Any function's parameter list (a kernel's, a __device__ helper's), however many lines it spans.
# One level of parentheses inside, for array references: float (&As)[BM * BK].
# A scan from one keyword stops at the next: 60 KB of a student's `__global__ __global__ ...` had
# taken 5 s of the server's time, each keyword's scan running to the end of the text.
_FUNCTION_RE = re.compile(rf"(?:__global__|__device__)(?:(?!__global__|__device__)[^;{{}}()]|{_BOUNDS_CALL})*?"
                          r"\(((?:[^()]|\([^()]*\))*)\)\s*\{", re.S)
# What is not code: string and character literals, block and line comments (in one pass, so a //
# inside a string is a string's and a quote inside a comment is a comment's).
# SKIP_LDG(A) / SKIP_STG(C) / SKIP_LDS(As) / SKIP_STS(As): lanes whose guard skips the line's access
# of that array (SKIP_LDS: its LDS or its ldmatrix); SKIP_CP_ASYNC(As, A) the line's cp.async (cuda/trace.cuh).
_SKIP_RE = re.compile(r"\bSKIP_(LDG|STG|LDS|STS)\(\s*(\w+)\s*\)")
_SKIP_COPY_RE = re.compile(r"\bSKIP_CP_ASYNC\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_NOT_CODE_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|/\*.*?\*/|//[^\n]*', re.S)
# An access macro's array argument(s): what is left of a traced array's name once these are blanked
# is a use the trace does not see.
_MACRO_ARRAY_RE = re.compile(r"\b(?:LDG|STG|LDS|STS)[248]?\(\s*(\w+)|" + _SKIP_RE.pattern + "|" + _SKIP_COPY_RE.pattern
                             + "|" + _COPY_RE.pattern + "|" + _ZFILL_RE.pattern + "|" + _MATRIX_RE.pattern)


@lru_cache(maxsize=64)   # build.used_defines asks of a source on every build lookup
def code_lines(text: str) -> tuple[str, ...]:
    """The kernel's statements, line by line: comments, string literals and function parameter lists
    (however many lines they span) blanked out, line numbers kept."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))   # noqa: E731
    text = _NOT_CODE_RE.sub(blank, text)

    def params_blanked(m):
        if not m.group(1).strip():
            return m.group(0)
        head, params, tail = m.group(0).rpartition(m.group(1))
        return head + re.sub(r"[^\n]", " ", params) + tail
    return tuple(_FUNCTION_RE.sub(params_blanked, text).splitlines())


# A __device__ helper's definition: its name and its parameter list.
_HELPER_RE = re.compile(r"__device__[^;{}()]*?\b(\w+)\s*\(((?:[^()]|\([^()]*\))*)\)\s*\{", re.S)


def _split_arguments(text: str) -> list[str]:
    """text split at its top-level commas (not those inside (), [] or <>)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch in "([<"
        depth -= ch in ")]>"
        current += ch
    return [*parts, current]


def _helpers(text: str) -> dict[str, list[tuple[str, bool]]]:
    """The source's __device__ helpers: name -> each parameter's name, and whether it is a reference
    to an array (const float (&As)[BM * BK])."""
    found = {}
    for m in _HELPER_RE.finditer(_NOT_CODE_RE.sub(" ", text)):
        params = []
        for p in _split_arguments(m.group(2)):
            ref = re.search(r"\(\s*&\s*(\w+)\s*\)", p)
            words = re.findall(r"\w+", p)
            params.append((ref.group(1), True) if ref else (words[-1] if words else "", False))
        found[m.group(1)] = params
    return found


def _passed_to_helpers(file: str, number: int, line: str, helpers: dict, names: dict[str, str], shown: str) -> str:
    """The line with every traced array passed whole to a helper blanked out, after checking the
    helper receives it under the same name (its access macros record by name) and, for a shared
    array, by reference to the array (so it still counts from the array's start)."""
    for m in re.finditer(rf"\b({'|'.join(map(re.escape, helpers)) or '(?!)'})\s*(?:<[^<>()]*>)?\s*\(", line):
        depth, end = 1, m.end()
        while end < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[end], 0)
            end += 1
        if re.match(r"\s*\{", line[end:]) or "__device__" in line[:m.start()]:
            continue   # the helper's own definition, not a call
        params, start = helpers[m.group(1)], m.end()
        args = _split_arguments(line[start:end - 1])
        for i, (param, _) in enumerate(params):   # a helper whose macros record as A must be given A
            if param in names and (i >= len(args) or args[i].strip() != param):
                raise ValueError(f"{file}:{number}: {m.group(1)} records its accesses as {param}'s, so it must be "
                                 f"passed {param} itself: {shown.strip()}")
        for i, arg in enumerate(args):
            name = arg.strip()
            if name in names:
                got = params[i] if i < len(params) else ("", False)
                if got[0] != name or (names[name] == "shared" and not got[1]):
                    want = f"a reference to the array named {name} (&{name})" if names[name] == "shared" \
                        else f"a parameter named {name}"
                    raise ValueError(f"{file}:{number}: {name} is passed to {m.group(1)}, which must take it as "
                                     f"{want}, so its accesses are recorded as {name}'s: {shown.strip()}")
                line = line[:start] + re.sub(rf"\b{name}\b", " " * len(name), line[start:end], count=1) + line[end:]
            start += len(arg) + 1
    return line


def _moves_blanked(line: str, ptr: str) -> str:
    """The line with each move of a pointer parameter along its allocation blanked (its name and
    operator): A += s; A -= s; A++; ++A; as statements of their own or in a for loop's increment.
    A move whose value is used ((A += 1)[t], f(A++)) is left, so the check refuses it."""
    step = rf"(?:\+\+|--)\s*\b(?:{ptr})\b|\b(?:{ptr})\s*(?:\+\+|--)"   # all there is to it
    by = rf"\b(?:{ptr})\s*(?:\+=|-=)"                                     # then an amount
    rhs = r"(?:[^;{}()]|\([^()]*\))*"
    spans = [m.span(1) if m.group(1) else m.span(2)
             for m in re.finditer(rf"(?:^|[;{{}}])\s*({step})(?=\s*;)|(?:^|[;{{}}])\s*({by})(?={rhs};)", line)]
    for m in re.finditer(r"\bfor\s*\(", line):
        depth, end = 1, m.end()
        while end < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[end], 0)
            end += 1
        header = line[m.end():end - 1]
        parts = header.split(";")
        if len(parts) == 3:
            start = m.end() + len(parts[0]) + len(parts[1]) + 2
            for item in _split_arguments(parts[2]):
                hit = re.match(rf"\s*({step})\s*$", item) or re.match(rf"\s*({by})(?:[^,()]|\([^()]*\))*$", item)
                if hit:
                    spans.append((start + hit.start(1), start + hit.end(1)))
                start += len(item) + 1
    for lo, hi in spans:
        line = line[:lo] + " " * (hi - lo) + line[hi:]
    return line


def _check_traced_arrays(file: str, text: str, pointers: list[str], shared: list[str], buffer: str = "") -> None:
    """The rules a kernel must follow for its trace to be the truth, checked when it is loaded.
    A record names its element by the array it was made through and the element's distance from
    the start of that array's allocation, so:
      - a traced array is touched only through the access macros (a plain A[i] or *A is an
        access nobody records);
      - a global array parameter may be moved along its allocation (A += row * K; LDG(A, k) records
        row `row`, as it should), but never pointed elsewhere (A = B) nor copied into another
        pointer (accesses through the copy would not be recorded at all): move the parameter itself;
      - a traced array may be passed whole to a __device__ helper (a template too) that takes it
        under the same name, a shared array as a reference to the array (float (&As)[BM * BK]):
        its macros then record as the caller's would;
      - the dynamic shared memory buffer is named only where its views are declared."""
    names = [*pointers, *shared]
    if not names:
        return
    alt = "|".join(map(re.escape, names))
    rules = []
    if pointers:   # first: a copy made with &A[i] is a copy, not an access
        ptr = "|".join(map(re.escape, pointers))
        rules += [
            (re.compile(rf"\b({ptr})\s*=(?!=)"),
             "is pointed somewhere else; records count from the allocation it was passed with: move it "
             "along that allocation instead (A += row * K)"),
            (re.compile(rf"[=(,]\s*&?\s*\(?\s*({ptr})\s*(?:\[|[+\-](?![=+\-]))"),
             "is copied into another pointer; accesses through the copy are not recorded: move the "
             "parameter itself (A += row * K) or index from it"),
        ]
    if shared:
        sh = "|".join(map(re.escape, shared))
        rules.append((re.compile(rf"\b({sh})\s*(\+=|-=|\+\+|--)|(?:\+\+|--)\s*({sh})\b"),
                      "is a shared array and cannot be moved; index it instead"))
    rules += [
        (re.compile(rf"\b({alt})\s*\["), "is indexed directly; use LDG/STG (global) or LDS/STS (shared) so the "
                                          "access is recorded"),
        (re.compile(rf"\*\s*\(?\s*({alt})\b"), "is dereferenced directly; use the access macros so the access "
                                               "is recorded"),
    ]
    ptr = "|".join(map(re.escape, pointers)) or "(?!)"
    anywhere = re.compile(rf"\b({alt})\b")
    helpers = _helpers(text)
    spaces = {**{n: "global" for n in pointers}, **{n: "shared" for n in shared}}
    for number, line in enumerate(code_lines(text), start=1):
        declared = _SHARED_RE.findall(line)
        if len(re.findall(r"\b__shared__\b", line)) != len(declared) or \
                (declared and line.count("[") > sum(m[3].count("[") for m in declared)):
            raise ValueError(f"{file}:{number}: declare each shared array as __shared__ TYPE name[size] (or "
                             f"[rows][cols]), one per statement, so the trace knows its shape: {line.strip()}")
        line = _SHARED_RE.sub(lambda m: " " * len(m.group(0)), line)   # a declaration, not an access
        line = _VIEW_RE.sub(lambda m: " " * len(m.group(0)), line)     # so is a view's
        if buffer and re.search(rf"\b{re.escape(buffer)}\b", line):
            raise ValueError(f"{file}:{number}: the dynamic shared memory {buffer} is used outside the declarations "
                             f"of its views, where the trace cannot see it: {line.strip()}")
        for rule, why in rules:
            m = rule.search(line)
            if m:
                name = next(g for g in m.groups() if g in names)
                raise ValueError(f"{file}:{number}: {name} {why}: {line.strip()}")
        # Whatever else names a traced array outside an access macro (a cast, a plain copy, a
        # pointer to a shared array) is a use the trace would not see.
        rest = _MACRO_ARRAY_RE.sub(lambda m: re.sub(r"\w", " ", m.group(0)), line)
        rest = _moves_blanked(rest, ptr)
        rest = _passed_to_helpers(file, number, rest, helpers, spaces, line)
        m = anywhere.search(rest)
        if m:
            raise ValueError(f"{file}:{number}: {m.group(1)} is used outside the access macros (LDG/STG, "
                             f"LDS/STS, their vector forms, the SKIP_ forms, CP_ASYNC4, LDMATRIX), where the trace cannot see it: "
                             f"{line.strip()}")
