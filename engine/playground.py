"""The Playground's engine side: a student's own kernel, from the editor's text to what the catalog's
kernels get (compile errors at their lines, a trace checked against float64, its counts as written
and as compiled, its SASS, and on a GPU machine its time), with every step that compiles or runs the
student's code inside the sandbox (engine/sandbox.py), never in the server or its shared workers.

A student's source is an ordinary kernel source: it includes trace.cuh, declares its contract (its
parameters, launch and rules, which engine/kernels/declared.py reads) and reads and writes through
the access macros. It is kept under the cache folder by digest: a share link, a reload and ten
students building the same text all name one file.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import shutil
import threading
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from engine import sandbox
from engine.errors import EngineError
from engine.kernels import cache, declared, registry, sources
from engine.kernels.contract import KernelSpec
from engine.kernels.problem import Problem, make_problem
from engine.sandbox import runs
from engine.tracing.execute import WholeResult
from engine.tracing.plan import check_fits_host, check_geometry, plan_for
from engine.tracing.records import Trace
from engine.tracing.tracer import assemble

# A source larger than this is refused before anything reads it (the catalog's largest is 12 KB).
MAX_SOURCE_BYTES = 64 * 1024
MAX_NAME_CHARS = 100      # a kernel's name: its source file's and its builds' names begin with it
MAX_MESSAGE_CHARS = 400   # a diagnostic's, on the page
# Students' sources and their CPU libraries (about 20 KB a build) are kept within this many MB, the
# least recently used going first; a source used in the last minute stays (it may be building).
BUDGET_ENV = "MATMUL_EXPLORER_PLAYGROUND_CACHE_MB"
DEFAULT_BUDGET_MB = 100
_RECENT_S = 60.0
_EVICT_LOCK = threading.Lock()
# Share links carry the source compressed; this marks the format, so a later one can be told apart.
SHARE_PREFIX = "v1."
BLANK = "blank"
BLANK_FILE = sources.CUDA_DIR / "playground" / "blank.cu"
# "file.cu:12: message" (the source reader's rules) and "file.cu(12): error: message" (nvcc) or
# "file.cu:12:5: error: message" (g++): the line a message is about.
_AT_LINE_RE = re.compile(r"(?:^|\s)[^:\s]*?\.cu(?::(\d+)(?::\d+)?|\((\d+)\)):\s*(.*)$")


def starters() -> list[str]:
    """What a student can start from: the blank template, then every traced kernel of the catalog
    that is one launch (a kernel with a preparation launch is two sources, not one editor)."""
    return [BLANK] + [k.name for k in registry.CATALOG if k.traceable and len(k.launches) == 1]


def starter_source(name: str) -> str:
    if name == BLANK:
        return BLANK_FILE.read_text()
    spec = registry.get(name)
    if name not in starters():
        raise EngineError(f"{name} is not a kernel the Playground starts from")
    return sources.load(spec.launches[0].file).path.read_text()


def share_token(text: str) -> str:
    """The source as a URL-safe token: zlib, then base64 (a 5 KB kernel is about 2 KB of URL)."""
    return SHARE_PREFIX + base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")


def shareable(text: str) -> bool:
    """Whether a source can travel as a share link and a download: UTF-8 text (a browser's JSON can
    carry a lone surrogate) no larger than the Playground takes."""
    try:
        return len(text.encode("utf-8")) <= MAX_SOURCE_BYTES
    except UnicodeEncodeError:
        return False


def source_from_token(token: str) -> str:
    """The source a share link carries; a damaged or oversized one is a one-line error. The
    decompressed size is bounded before it is reached, so a small token cannot inflate into gigabytes."""
    if not token.startswith(SHARE_PREFIX):
        raise EngineError("this share link's kernel is not in a format this version reads")
    body = token[len(SHARE_PREFIX):]
    try:
        packed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflate = zlib.decompressobj()
        data = inflate.decompress(packed, MAX_SOURCE_BYTES + 1)
        whole = inflate.eof and not inflate.unconsumed_tail
    except (binascii.Error, ValueError, zlib.error):
        raise EngineError("this share link's kernel is damaged (cut short when it was copied?)") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise EngineError(f"this share link's kernel is over {MAX_SOURCE_BYTES // 1024} KB")
    if not whole:
        raise EngineError("this share link's kernel is damaged (cut short when it was copied?)")
    return _text(data)


def text_of(data: bytes) -> str:
    """An uploaded file's text, or a one-line reason it is not a kernel source."""
    if len(data) > MAX_SOURCE_BYTES:
        raise EngineError(f"the file is {len(data) // 1024} KB; the Playground takes up to "
                          f"{MAX_SOURCE_BYTES // 1024} KB")
    return _text(data)


def _text(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise EngineError("the kernel is not UTF-8 text") from None
    if "\0" in text:
        raise EngineError("the kernel contains a NUL character")
    return text


@dataclass(frozen=True)
class Diagnostic:
    """One message about the student's source: its line (0: not about one line) and what it says."""
    line: int
    message: str

    def __post_init__(self):
        # The reader quotes the line it objects to, and a student's line may be 60 KB long.
        if len(self.message) > MAX_MESSAGE_CHARS:
            object.__setattr__(self, "message", self.message[:MAX_MESSAGE_CHARS - 3] + "...")

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


def diagnostics(text: str) -> list[Diagnostic]:
    """Messages from a compiler or the source reader, each at its line where it names one (a
    message may start with what failed: "the C++ compiler on k.cu failed: k.cu:24:9: error: ...")."""
    at_lines = [Diagnostic(int(m.group(1) or m.group(2)), m.group(3).strip())
                for m in map(_AT_LINE_RE.search, map(str.strip, text.splitlines())) if m]
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return at_lines or ([Diagnostic(0, first)] if first else [])


@dataclass
class Saved:
    """A student's source kept on disk: what the reader, the sandbox and a share link all name."""
    digest: str
    kernel: str          # the name of its extern "C" __global__ function (= the file's stem)
    path: Path
    text: str
    problems: list[Diagnostic] = field(default_factory=list)   # tracing rules it breaks, at their lines


def root() -> Path:
    return cache.cache_dir() / "playground"


def save(text: str) -> Saved:
    """Keeps the source under its digest and reads it as the engine reads the catalog's sources
    (signature, traced arrays, access sites, the tracing rules): nothing is compiled or run here."""
    try:
        data = text.encode("utf-8", errors="strict")
    except UnicodeEncodeError:   # a lone surrogate (U+D800..U+DFFF), which JSON from a browser can carry
        raise EngineError("the kernel is not UTF-8 text (it holds a lone surrogate, U+D800 to U+DFFF)") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise EngineError(f"the kernel is {len(data) // 1024} KB; the Playground takes up to "
                          f"{MAX_SOURCE_BYTES // 1024} KB")
    text = _text(data)
    name = sources.kernel_name(text)
    if not name:
        raise EngineError('no kernel found: declare it as extern "C" __global__ void name(...)')
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):   # \w took kérnel, which no build may be named
        raise EngineError(f"the kernel's name {name!r} is not made of ASCII letters, digits and _ (starting with "
                          "a letter or _)")
    if len(name) > MAX_NAME_CHARS:   # the name is a file's (and its builds'): past 255 bytes no file system takes it
        raise EngineError(f"the kernel's name is {len(name)} characters; the Playground takes names of up to "
                          f"{MAX_NAME_CHARS}")
    digest = hashlib.sha256(data).hexdigest()[:20]
    folder = root() / digest
    path = folder / f"{name}.cu"
    if not path.exists() or path.read_bytes() != data:
        folder.mkdir(parents=True, exist_ok=True)
        cache.write_atomic(path, data)
        # Readable by the sandbox's own user (write_atomic's temporary file is private to the server).
        path.chmod(0o644)
        evict()
    else:
        _used(path)
    saved = Saved(digest, name, path, text)
    try:
        sources.load(str(path))
    except ValueError as exc:
        saved.problems = diagnostics(str(exc)) or [Diagnostic(0, str(exc))]
    return saved


def _used(path: Path) -> None:
    """Marks a student's source as just used: the budget keeps what is used, drops what is not."""
    try:
        os.utime(path.parent)
    except OSError:
        pass


def _folder_bytes(folder: Path) -> int:
    total = 0
    for base, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(base, f)).st_size
            except OSError:
                pass
    return total


def evict(budget: int | None = None) -> int:
    """Removes students' sources (each with its libraries) until the Playground's folder is within its
    budget, least recently used first; one used in the last minute stays. Returns the bytes freed."""
    budget = cache.budget_bytes(BUDGET_ENV, DEFAULT_BUDGET_MB) if budget is None else budget
    with _EVICT_LOCK:
        try:
            folders = [Path(e.path) for e in os.scandir(root()) if e.is_dir(follow_symlinks=False)]
        except OSError:
            return 0
        found = []
        for folder in folders:
            try:
                found.append((folder.stat().st_mtime, _folder_bytes(folder), folder))
            except OSError:
                continue
        found.sort()
        total, freed, now = sum(size for _, size, _ in found), 0, time.time()
        for used, size, folder in found:
            if total - freed <= budget:
                break
            if now - used < _RECENT_S:
                continue
            shutil.rmtree(folder, ignore_errors=True)
            freed += size - (_folder_bytes(folder) if folder.exists() else 0)
        return freed


def spec_of(saved: Saved) -> KernelSpec:
    """The student's kernel as a catalog entry, read from its own contract block the way the
    catalog's are (engine/kernels/declared.py); a contract the engine cannot read is a one-line
    error at its line."""
    if not sources.load(str(saved.path)).traced:
        raise EngineError('the Playground traces kernels that #include "trace.cuh" and read and write through its '
                          "access macros (LDG, STG, LDS, STS)")
    try:
        return declared.spec_from_source(saved.path, name=saved.kernel, title=f"your {saved.kernel}",
                                         lesson="your kernel, from the Playground")
    except (EngineError, ValueError) as exc:
        found = diagnostics(str(exc))
        raise EngineError(str(found[0]) if found else str(exc)) from None


def problem_for(spec: KernelSpec, m: int, n: int, k: int, params: dict[str, int]) -> Problem:
    """The problem bound to the kernel's contract: what it cannot take, a launch no GPU makes among
    them (plan.check_geometry), is a one-line reason."""
    problem = registry.bind(spec, make_problem(m, n, k, block=spec.default_block, params=params))
    check_geometry(spec, problem)
    return problem


def shown(message: str, saved: Saved) -> str:
    """A message from the compiler or the sandbox with the server's paths left out: the student's
    file by its name, the engine's headers (cuda/trace.cuh) by theirs."""
    return message.replace(str(saved.path), saved.path.name).replace(str(sources.CUDA_DIR) + os.sep, "")


@contextmanager
def _names_not_paths(saved: Saved):
    try:
        yield
    except EngineError as exc:
        raise EngineError(shown(str(exc), saved)) from None


def trace(saved: Saved, spec: KernelSpec, problem: Problem, blocks: list[tuple[int, int]] | None = None,
          whole: bool = False):
    """The kernel's trace (of the given blocks, or all), built and run in a sandbox: the same Trace
    the catalog's kernels give, so every view of the app draws it. whole: (trace, all of C after every
    block ran, checked against float64 in the same sandbox: a WholeResult, or why that run failed).
    A block's trace checks only the outputs it stored, so a kernel that wrote one of them had passed."""
    try:
        plan = plan_for(spec, problem, blocks)
    except ValueError as exc:   # a shared array's size the reader cannot compute (sources.shared_shape)
        raise EngineError(str(exc)) from None
    check_fits_host(plan)
    _used(saved.path)
    with _names_not_paths(saved):
        raw = runs.trace(plan, whole=whole)
    try:
        t = assemble(plan, raw, "cpu")
        return (t, raw.whole if isinstance(raw.whole, WholeResult) else shown(str(raw.whole), saved)) if whole else t
    except (IndexError, ValueError, KeyError, TypeError):
        # Records the kernel wrote over (its own memory is its own to corrupt): its trace only.
        raise EngineError("your kernel's trace is not readable: did it write over its own records (out of "
                          "bounds through a pointer the access macros do not see)?") from None


def block_summary(trace: Trace, bx: int, by: int, tolerance: float) -> tuple[bool, str]:
    """(right, in a sentence) of the outputs a block's trace stored, against float64."""
    if not trace.checked_outputs:   # "0 outputs checked ..., relative error nan (over 1e-04)" had read as a wrong sum
        return True, f"Block ({bx}, {by}) stores none of C."
    good = trace.rel_error <= tolerance
    return good, (f"Block ({bx}, {by}): {trace.checked_outputs:,} outputs checked against float64 numpy, relative "
                  f"error {trace.rel_error:.1e} ({'within' if good else 'over'} {tolerance:.0e}).")


def whole_summary(whole: WholeResult, grid: tuple[int, int], tolerance: float) -> str:
    """trace(..., whole=True)'s check of all of C in a sentence."""
    blocks = f"the grid's {grid[0] * grid[1]:,} block{'s' if grid[0] * grid[1] != 1 else ''}"
    if whole.written < whole.total:
        left = whole.total - whole.written
        return (f"All of C: {left:,} of its {whole.total:,} elements {'is' if left == 1 else 'are'} written by none of "
                f"{blocks} (C starts as NaN here: a GPU's new memory holds whatever was there, so a kernel "
                "writes every element).")
    said = "within" if whole.rel_error <= tolerance else "over"
    return (f"All of C: its {whole.total:,} elements written by {blocks}, relative error {whole.rel_error:.1e} "
            f"({said} {tolerance:.0e}).")


def listing(saved: Saved, problem: Problem) -> dict:
    """Its SASS memory instructions per source line (what the as-compiled counts read), compiled and
    listed in a sandbox."""
    with _names_not_paths(saved):
        return runs.listing(saved.path, problem.params)


def time_on_gpu(saved: Saved, problem: Problem) -> dict:
    """Its median time on the GPU, timed as the Benchmarks page times the catalog's kernels, in a
    sandbox of its own (a GPU machine only): {'gpu', 'times_ms', 'correct', 'rel_error', 'worst_error',
    'tolerance'}. A wrong result is an EngineError saying how wrong: the gate times nothing then, and
    the page had taken the median of no times."""
    with _names_not_paths(saved):
        out = runs.time_on_gpu(saved.path, saved.kernel, problem)
    if not out["correct"]:
        raise EngineError(f"its result on the {out['gpu']} is wrong (relative error {out['rel_error']:.1e}, "
                          f"worst element off by {out['worst_error']:.1e} × max |C|; the tolerance is "
                          f"{out['tolerance']:.0e}), so it was not timed")
    return out


def status() -> tuple[bool, str]:
    return sandbox.status()
