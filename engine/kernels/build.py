"""Compiles a kernel source: cubins with nvcc (GPU), shared libraries with the host C++ compiler (CPU).

Builds are cached by a hash of everything that goes into them (sources, defines, the compiler and
its version), under $MATMUL_EXPLORER_CACHE or ~/.cache/cuda-matmul-explorer, and written atomically,
so several sessions or processes can ask for the same build at once. The server loads and runs what
it finds there, so the cache is guarded: the directory is private to its user (0700), and every
artefact has a digest file (size and sha256, written after it); an artefact whose digest is missing
or does not match (truncated, overwritten, planted) is built again, never loaded.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from engine.errors import EngineError
from engine.kernels import sources

GPU_ARCH = os.environ.get("MATMUL_EXPLORER_ARCH", "sm_90")
CPU_FLAGS = ("-O2", "-std=c++17", "-shared", "-fPIC", "-Wno-unknown-pragmas")


CACHE_ENV = "MATMUL_EXPLORER_CACHE"
COMPILE_TIMEOUT = 300   # seconds; a compiler that takes longer is killed


def cache_dir() -> Path:
    root = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "cuda-matmul-explorer"
    path = Path(root)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        _make_private(path)
    except OSError as exc:
        raise EngineError(f"the compile cache {path} cannot be used ({exc.strerror or exc}); "
                          f"set {CACHE_ENV} to a directory of yours") from None
    return path


def _make_private(path: Path) -> None:
    """What is in the cache gets loaded and run: nobody else may write there."""
    st = path.stat()
    if st.st_uid != os.geteuid():
        raise EngineError(f"the compile cache {path} belongs to another user (uid {st.st_uid}); "
                          f"set {CACHE_ENV} to a directory of yours")
    if st.st_mode & 0o022:
        if st.st_mode & stat.S_ISVTX:   # a shared directory like /tmp: not ours to lock up
            raise EngineError(f"the compile cache {path} is a shared directory; "
                              f"set {CACHE_ENV} to a directory of yours")
        path.chmod(0o700)


def _unwritable(path: Path, exc: OSError) -> EngineError:
    return EngineError(f"the compile cache {path} is not writable ({exc.strerror or exc}); "
                       f"set {CACHE_ENV} to a writable directory")


def _inputs_hash(*parts: str) -> str:
    h = hashlib.sha256()
    for name in ("trace.cuh", "cpu_shim.h", "cpu_entry.h"):
        h.update((sources.CUDA_DIR / name).read_bytes())
    for p in parts:
        h.update(p.encode())
    return h.hexdigest()[:20]


@functools.lru_cache(maxsize=None)
def compiler_version(compiler: str) -> str:
    """`compiler --version`, asked once per process: an upgraded compiler gets new cache entries."""
    return _run([compiler, "--version"], f"asking {Path(compiler).name} for its version")


_BACKGROUND = threading.local()


def _run(cmd: list[str], what: str) -> str:
    """Runs a compiler; its stdout, or a one-line EngineError (not found, failed, or hung)."""
    # Builds started by prebuild() run at low priority: on a 2-core laptop the pages' own requests
    # come first.
    nice = (lambda: os.nice(15)) if getattr(_BACKGROUND, "on", False) and hasattr(os, "nice") else None
    try:
        # A session of its own, so that a hung compiler is killed with the processes it started
        # (nvcc and g++ run cc1plus, ptxas, ... as children).
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=nice, start_new_session=True)
    except FileNotFoundError:
        raise EngineError(f"{cmd[0]} was not found; it is needed to {what}") from None
    except OSError as exc:
        raise EngineError(f"{cmd[0]} could not be started ({exc.strerror or exc}); it is needed to {what}") from None
    try:
        out, err = proc.communicate(timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise EngineError(f"{what} took longer than {COMPILE_TIMEOUT} s and was stopped") from None
    if proc.returncode:
        lines = (err or out).strip().splitlines()
        first = next((l for l in lines if "error" in l), lines[0] if lines else "no message")
        raise EngineError(f"{what} failed: {first.strip()}")
    return out


_TARGET_LOCKS: dict[Path, threading.Lock] = {}
_TARGET_LOCKS_LOCK = threading.Lock()


def _digest_file(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _digest(data: bytes) -> str:
    return f"{len(data)} {hashlib.sha256(data).hexdigest()}"


def verified_bytes(target: Path) -> bytes | None:
    """The artefact's bytes if its digest file vouches for them, else None (missing, damaged,
    or not written by this cache)."""
    try:
        # A digest shows damage, not who wrote the file: whoever can plant an artefact can plant its
        # digest too. So the file must also be ours and writable by nobody else (the cache directory
        # is private, but one that was not before may still hold what others put there).
        for path in (target, _digest_file(target)):
            st = path.stat()
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return None
        data = target.read_bytes()
        return data if _digest_file(target).read_text().strip() == _digest(data) else None
    except (OSError, UnicodeDecodeError):
        return None


def checked_bytes(target: Path) -> bytes:
    """verified_bytes for a loader: what it will run, or a one-line error (the entry changed
    between its build or check and this read; asking again rebuilds it)."""
    data = verified_bytes(target)
    if data is None:
        raise EngineError(f"the compiled kernel {target.name} changed in the compile cache while it was "
                          "being loaded; ask again")
    return data


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_build(target: Path, build) -> Path:
    if verified_bytes(target) is not None:
        return target
    # One compile per target in this process: a request that needs what prebuild() is compiling
    # right now waits for it instead of compiling it a second time (other processes may still race;
    # the renames below keep that safe: the digest is written after its artefact, so a reader sees
    # either a matching pair or a mismatch it rebuilds).
    with _TARGET_LOCKS_LOCK:
        lock = _TARGET_LOCKS.setdefault(target, threading.Lock())
    with lock:
        if verified_bytes(target) is not None:
            return target
        try:
            with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
                out = Path(tmp) / target.name
                build(out)
                data = out.read_bytes()
                os.replace(out, target)
            _write_atomic(_digest_file(target), _digest(data).encode())
        except OSError as exc:   # the compilers' own failures arrive as EngineError
            raise _unwritable(target.parent, exc) from None
    return target


def nvcc() -> str | None:
    return shutil.which("nvcc") or (shutil.which("nvcc", path="/usr/local/cuda/bin"))


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
    key = _inputs_hash(src.text, arch, compiler_version(compiler), *defs, header)
    target = cache_dir() / f"{src.name}-{'trace' if traced else 'plain'}-{key}.cubin"

    def build(out: Path) -> None:
        include = []
        if header:
            out.with_suffix(".h").write_text(header)
            include = ["-include", str(out.with_suffix(".h"))]
        _run([compiler, "-cubin", f"-arch={arch}", "-O3", "-lineinfo", *defs, *include,
              f"-I{sources.CUDA_DIR}", "-o", str(out), str(src.path)], f"nvcc on {file}")

    return _atomic_build(target, build)


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
    key = _inputs_hash(src.text, unit, compiler, compiler_version(compiler), *CPU_FLAGS)
    target = cache_dir() / f"{src.name}-cpu-{key}.so"

    def build(out: Path) -> None:
        unit_file = out.with_suffix(".cpp")
        unit_file.write_text(unit)
        _run([compiler, *CPU_FLAGS, f"-I{cuda}", "-o", str(out), str(unit_file)], f"the C++ compiler on {file}")

    return _atomic_build(target, build)


def variants(kernels: list[str] | None = None) -> list[tuple[str, str, tuple[tuple[str, int], ...]]]:
    """Every build the pages can ask for, as (what, file, the parameters its source uses as (name,
    value) pairs): what is "cpu" (the CPU trace library) or "sass" (the plain cubin and its nvdisasm
    listing, for the kernels of the page that shows them: bank_conflicts)."""
    from engine.kernels import registry
    specs = [registry.get(k) for k in kernels] if kernels else registry.traceable()
    out = {}
    for spec in specs:
        for params in spec.combinations():
            for launch in spec.launches:
                used = tuple(used_defines(sources.load(launch.file), params).items())
                out.setdefault(("cpu", launch.file, used), None)
            if "bank_conflicts" in spec.shows:
                last = spec.launches[-1].file
                out.setdefault(("sass", last, tuple(used_defines(sources.load(last), params).items())), None)
    return sorted(out, key=lambda v: v[0] != "cpu")   # CPU libraries first, else in catalog order


def prebuild(kernels: list[str] | None = None, background: bool = True, sass: bool = True,
             workers: int | None = None):
    """Compiles every CPU trace library and SASS listing the pages can ask for (registry kernels,
    all their allowed parameters), CPU libraries first, so that no page request waits for a
    compiler. background=True returns at once with the started daemon thread; otherwise it
    returns {(what, file, params): seconds, or the error message}. Builds already cached cost
    a file check; failures are only recorded (the page request that needs that build reports it).
    workers: parallel compilers, by default one less than the cores (at least one), leaving a
    core to the requests being served meanwhile. The SASS listings need nvcc and nvdisasm and are
    skipped without them."""
    from engine.kernels import sass as sass_mod
    todo = [v for v in variants(kernels) if v[0] == "cpu" or (sass and sass_mod.nvdisasm() and nvcc())]
    if workers is None:
        workers = max(1, (os.cpu_count() or 1) - 1)

    def one(v):
        what, file, params = v
        _BACKGROUND.on = background
        start = time.perf_counter()
        try:
            if what == "cpu":
                build_cpu_library(file, dict(params))
            else:
                sass_mod.memory_instructions(file, dict(params))
        except Exception as exc:  # noqa: BLE001 - recorded; the request that needs it reports it
            return v, f"{type(exc).__name__}: {exc}"
        return v, time.perf_counter() - start

    def run():
        with ThreadPoolExecutor(workers, thread_name_prefix="prebuild") as pool:
            return dict(pool.map(one, todo))

    if not background:
        return run()
    thread = threading.Thread(target=run, name="matmul-explorer-prebuild", daemon=True)
    thread.start()
    return thread
