"""Compiles a kernel source: cubins with nvcc (GPU), shared libraries with the host C++ compiler (CPU).

Each build is named by a hash of everything that goes into it (sources, defines, the compiler and
its version) and kept in the compile cache (engine/kernels/cache.py), so several sessions or
processes can ask for the same build at once. Builds happen when a view needs them (`Build.make`,
which the pages call under a "compiling ..." message) or, at the lowest priority, in the
background (engine/kernels/warmup.py). Every compiler runs in a process group of its own, so that
a hung one is killed with what it started, and `stop()` kills them all when the app stops.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path

from engine.errors import EngineError
from engine.kernels import cache, sources

GPU_ARCH = os.environ.get("MATMUL_EXPLORER_ARCH", "sm_90")
# Each CUDA thread runs on a fiber stack of 64 KB (cuda/cpu_shim.h CPU_FIBER_STACK). A function whose
# locals (a thread's local arrays) take more than CPU_FRAME_BYTES of it is refused when it is built,
# at its line, rather than overflowing the stack when it runs (the rest is left to the calls it
# makes, printf's among them); what gets past (deep calls) faults in the guard page below each stack
# (cuda/cpu_entry.h), which -fstack-clash-protection keeps a large frame from stepping over.
CPU_FIBER_STACK_KB = 64
CPU_FRAME_BYTES = 48 * 1024
CPU_FLAGS = ("-O2", "-std=c++17", "-shared", "-fPIC", "-Wno-unknown-pragmas",
             f"-Werror=frame-larger-than={CPU_FRAME_BYTES}", "-fstack-clash-protection")
_FRAME_RE = re.compile(r"error: the frame size of (\d+) bytes is larger than \d+ bytes \[-Werror=frame-larger-than=\]")
COMPILE_TIMEOUT = 300   # seconds; a compiler that takes longer is killed


ENGINE_HEADERS = ("trace.cuh", "contract.cuh", "cpu_shim.h", "cpu_entry.h")   # cuda/'s own: in every key


def _inputs_hash(*parts: str) -> str:
    h = hashlib.sha256()
    for name in ENGINE_HEADERS:
        h.update((sources.CUDA_DIR / name).read_bytes())
    for p in parts:
        h.update(p.encode())
    return h.hexdigest()[:cache.KEY_LENGTH]


def local_headers(src: sources.KernelSource) -> str:
    """The text of each header a source includes by name (`#include "wgmma.cuh"`: beside the file
    that includes it, or in cuda/, as the compilers look), and of the headers those include, beyond
    cuda/'s ENGINE_HEADERS (every key has those): part of its build's key, so that editing a header two
    kernels share rebuilds both, also where a kernel reaches it through another header
    (wgmma_epilogue.cu -> wgmma_persistent.cuh -> wgmma.cuh). A copy of an engine header beside a
    source elsewhere (tests/benchmarks/source_ab.py's versions) counts as any header."""
    texts: list[str] = []
    seen: set[Path] = set()
    cuda = sources.CUDA_DIR.resolve()

    def visit(text: str, here: Path) -> None:
        for name in re.findall(r'^\s*#include\s+"([^"]+)"', text, re.M):
            path = next((d / name for d in (here, sources.CUDA_DIR) if (d / name).is_file()), None)
            if path is None or path.resolve() in seen:   # a header included twice (#pragma once) counts once
                continue
            if name in ENGINE_HEADERS and path.resolve().parent == cuda:
                continue
            seen.add(path.resolve())
            header = path.read_text()
            texts.append(header)
            visit(header, path.parent)

    visit(src.text, src.path.parent)
    return "".join(texts)


@functools.lru_cache(maxsize=None)
def compiler_version(compiler: str) -> str:
    """`compiler --version`, asked once per process: an upgraded compiler gets new cache entries."""
    return _run([compiler, "--version"], f"asking {Path(compiler).name} for its version")


# Builds the background makes (warmup.py) run at the lowest priority: on a 2-core laptop the
# pages' own requests come first.
BACKGROUND = threading.local()
_RUNNING: set[subprocess.Popen] = set()
_RUNNING_LOCK = threading.Lock()
_STOPPING = threading.Event()


def _run(cmd: list[str], what: str, scratch: Path | None = None) -> str:
    """Runs a compiler; its stdout, or a one-line EngineError (not found, failed, hung or stopped).
    scratch: a folder for the compiler's temporary files (nvcc's tmpxft_*, g++'s cc*.s), given as
    its TMPDIR. A compiler killed at a stop or a timeout leaves them behind; in the build's own
    folder they go with it (the cache removes that folder, at shutdown too), not into /tmp for good."""
    nice = (lambda: os.nice(19)) if getattr(BACKGROUND, "on", False) and hasattr(os, "nice") else None
    env = {**os.environ, "TMPDIR": str(scratch)} if scratch else None
    with _RUNNING_LOCK:
        if _STOPPING.is_set():
            raise EngineError(f"{what} was not started: the app is stopping")
        try:
            # A session of its own, so that a hung compiler is killed with the processes it started
            # (nvcc and g++ run cc1plus, ptxas, ... as children), and a Ctrl-C in the terminal
            # reaches the app, which stops it, rather than the compiler halfway through a file.
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    preexec_fn=nice, start_new_session=True, env=env)
        except FileNotFoundError:
            raise EngineError(f"{cmd[0]} was not found; it is needed to {what}") from None
        except OSError as exc:
            raise EngineError(f"{cmd[0]} could not be started ({exc.strerror or exc}); it is needed to {what}") from None
        _RUNNING.add(proc)
    try:
        out, err = proc.communicate(timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.communicate()
        raise EngineError(f"{what} took longer than {COMPILE_TIMEOUT} s and was stopped") from None
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(proc)
    if _STOPPING.is_set():
        raise EngineError(f"{what} was stopped: the app is stopping")
    if proc.returncode:
        lines = (err or out).strip().splitlines()
        # "error:", not "error": a folder of the path may be named so, on the compiler's context lines too
        first = next((l for l in lines if "error:" in l), lines[0] if lines else "no message")
        raise EngineError(f"{what} failed: {_at_the_source(first.strip(), lines)}")
    return out


# g++'s and nvcc's words for where in the kernel's own source (.cu) an error inside a header was reached from.
_HEADER_ERROR_RE = re.compile(r"(\S+?\.(?:cuh|h|hpp)):(\d+):(?:\d+:)? error: (.*)")
_REACHED_FROM_RE = re.compile(r"^\s*(\S+?\.cu):(\d+)(?::\d+)?:\s+(?:required from here|note: in expansion of macro)")


def _at_the_source(first: str, lines: list[str]) -> str:
    """An error the compiler reports inside a header (trace.cuh, for an access macro given what it
    cannot store) said where the kernel's own line reached it, "kernel.cu:27: error: ... (in
    trace.cuh:334)": the Playground then marks the student's line, not a line of ours."""
    header = _HEADER_ERROR_RE.match(first)
    here = next((m for m in map(_REACHED_FROM_RE.match, lines) if m), None) if header else None
    if not here:
        return first
    return f"{here.group(1)}:{here.group(2)}: error: {header.group(3)} (in {Path(header.group(1)).name}:{header.group(2)})"


# Who is told that a view waits for a compiler: the app sets ANNOUNCE.fn, for its script threads,
# to a function of the words ("Compiling warptile for the CPU") that returns a context manager held
# while it waits (a page's spinner). Threads without one (the background, the workers) compile quietly.
ANNOUNCE = threading.local()


@contextmanager
def _announced(what: str):
    fn = getattr(ANNOUNCE, "fn", None)
    with fn(what) if fn else nullcontext():
        yield


def _built(target: Path, make, what: str) -> Path:
    """target from the cache, or built by make(path) while saying `what`."""
    if cache.is_built(target):
        return target
    with _announced(what):
        return cache.atomic_build(target, make, background=getattr(BACKGROUND, "on", False))


def key_source(target: Path, device: bool) -> str:
    """The definition that puts the build's key into the artefact (cache.key_marker), which the cache
    checks before it hands the bytes to a loader: an exported global (a __device__ one in a cubin,
    which keeps every global the host could ask for by name), so no compiler drops it unused."""
    marker = cache.key_marker(cache.build_key(target))[:-1].decode()
    return f'{"__device__ " if device else ""}char matmul_build_key[] = "{marker}";\n'


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop() -> None:
    """Kills every compiler this process started and refuses new ones, and removes their unfinished
    build folders: for an app that is stopping (a compile can take seconds; nobody will read it)."""
    with _RUNNING_LOCK:
        _STOPPING.set()
        running = list(_RUNNING)
    for proc in running:
        _kill(proc)
    for proc in running:
        try:
            proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
    cache.discard_in_flight()


def nvcc() -> str | None:
    return shutil.which("nvcc") or (shutil.which("nvcc", path="/usr/local/cuda/bin"))


def nvcc_release() -> str:
    """nvcc's release line ("Cuda compilation tools, release 13.0, V13.0.88"), '' without nvcc: which
    compiler a reference's builds came from (engine/metrics/ncu/)."""
    compiler = nvcc()
    text = compiler_version(compiler) if compiler else ""
    return next((line.strip() for line in text.splitlines() if "release" in line), "")


def build_cubin(file: str, params: Mapping[str, int], traced: bool, arch: str | None = None) -> Path:
    """nvcc -cubin for GPU_ARCH (or the arch a kernel needs: sm_90a for wgmma); traced=True is the
    instrumented build. -lineinfo maps SASS to lines."""
    src = sources.load(file)
    arch = arch or GPU_ARCH
    if traced and not src.traced:
        raise EngineError(f"{file} is not traced (it does not include trace.cuh): the hardware addresses its loads")
    compiler = nvcc()
    if not compiler:
        raise EngineError("nvcc was not found: it is needed to build kernels for the GPU")
    defs = [f"-D{k}={v}" for k, v in used_defines(src, params).items()]
    # The traced build keeps more values live; capping registers at 64 lets 1024-thread blocks
    # (TILE 32) still launch. Spills, if any, change speed, never what the kernel computes.
    defs += ["-DMATMUL_TRACE", "-maxrregcount=64"] if traced else []
    # The trace's numbering of arrays and sites goes in a header of its own: nvcc would split a -D
    # value at its commas (TRACE_SITE_OF(l,a,o) has some).
    header = _trace_header(src) if traced else ""
    key = _inputs_hash(src.text, local_headers(src), arch, compiler_version(compiler), *defs, header)
    target = cache.build_path(src.name, "trace" if traced else "plain", key)

    def build(out: Path) -> None:
        # The key is derived from the inputs, so it is not one of them: a header of its own, beside
        # the trace's numbering.
        out.with_suffix(".key.h").write_text(key_source(target, device=True))
        include = ["-include", str(out.with_suffix(".key.h"))]
        if header:
            out.with_suffix(".h").write_text(header)
            include += ["-include", str(out.with_suffix(".h"))]
        _run([compiler, "-cubin", f"-arch={arch}", "-O3", "-lineinfo", *defs, *include,
              f"-I{sources.CUDA_DIR}", "-o", str(out), str(src.path)], f"nvcc on {file}", scratch=out.parent)

    return _built(target, build, f"Compiling {src.name} for the GPU" if traced else
                  f"Compiling {src.name} with nvcc for its SASS listing")


def used_defines(src: sources.KernelSource, params: Mapping[str, int]) -> dict[str, int]:
    """The parameters the source names, in name order: one build, and one cache entry, for every
    choice of the others (transpose_b.cu is one build whatever the pipeline's other launch takes)."""
    return {k: params[k] for k in sorted(params) if src.uses(k)}


def _trace_header(src: sources.KernelSource) -> str:
    return "".join(f"#define {k} {v}\n" for k, v in src.trace_defines().items())


def host_compiler() -> str | None:
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _kernel_call(src: sources.KernelSource) -> str:
    """The C call of the kernel with its arguments from cpu_args: pointers first-come, ints likewise."""
    args, n_ptr, n_int = [], 0, 0
    for ctype, _name in src.params:
        if "*" in ctype:
            args.append(f"({ctype})cpu_args.ptrs[{n_ptr}]")
            n_ptr += 1
        else:
            args.append(f"({ctype})cpu_args.ints[{n_int}]")
            n_int += 1
    return f"{src.name}({', '.join(args)})"


def _cpu_dynamic_shared(src: sources.KernelSource, params: Mapping[str, int]) -> list[str]:
    """On the GPU the launch sizes the dynamic shared memory; on the CPU it is a per-thread static
    buffer of the same size, which the kernel's `extern __shared__` declaration then names (a block's
    threads run as fibers on one host thread, so they share it as a block's threads do)."""
    if not src.dynamic:
        return []
    size = max(src.dynamic_shared_bytes(params), 1)
    return [f"thread_local __attribute__((aligned(128))) unsigned char {src.dynamic}[{size}];"]


def build_cpu_library(file: str, params: Mapping[str, int]) -> Path:
    """The kernel's own source, compiled for the host with cuda/cpu_shim.h: the CPU trace source."""
    src = sources.load(file)
    compiler = host_compiler()
    if not compiler:
        raise EngineError("CPU trace mode runs the kernel source on the CPU and needs a C++ compiler "
                          "(g++ or clang++); none was found on PATH")
    cuda = sources.CUDA_DIR
    defines = used_defines(src, params)
    unit = "\n".join([
        "#define MATMUL_CPU 1", "#define MATMUL_TRACE 1",
        *(f"#define {k} {v}" for k, v in defines.items()),
        _trace_header(src),
        f'#include "{cuda / "cpu_shim.h"}"',
        *_cpu_dynamic_shared(src, params),
        f'#include "{src.path}"',
        f"#define CPU_KERNEL_CALL {_kernel_call(src)}",
        f'#include "{cuda / "cpu_entry.h"}"', ""])
    key = _inputs_hash(src.text, local_headers(src), unit, compiler, compiler_version(compiler), *CPU_FLAGS)
    target = cache.build_path(src.name, "cpu", key)

    def build(out: Path) -> None:
        unit_file = out.with_suffix(".cpp")
        unit_file.write_text(unit + key_source(target, device=False))
        try:
            _run([compiler, *CPU_FLAGS, f"-I{cuda}", "-o", str(out), str(unit_file)], f"the C++ compiler on {file}",
                 scratch=out.parent)
        except EngineError as exc:
            # g++'s words are about frames; the student's are local arrays and threads. The line (the
            # function's closing brace) stays, so that the Playground shows it there.
            found = _FRAME_RE.search(str(exc))
            if not found:
                raise
            raise EngineError(_FRAME_RE.sub(
                f"error: this function's local variables (its local arrays) take {int(found.group(1)):,} bytes "
                f"of a thread's stack, more than the CPU tracer gives them ({CPU_FRAME_BYTES // 1024} KB of the "
                f"{CPU_FIBER_STACK_KB} KB each emulated thread has): make them smaller", str(exc))) from None

    return _built(target, build, f"Compiling {src.name} for the CPU")
