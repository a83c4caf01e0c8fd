"""Compiles a kernel source: cubins with nvcc (GPU), shared libraries with the host C++ compiler (CPU).

Builds are cached by a hash of everything that goes into them (sources, defines, compiler), under
$MATMUL_EXPLORER_CACHE or ~/.cache/cuda-matmul-explorer, and written atomically, so several
sessions or processes can ask for the same build at once.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import sources
from .errors import EngineError

GPU_ARCH = os.environ.get("MATMUL_EXPLORER_ARCH", "sm_90")
CPU_FLAGS = ("-O2", "-std=c++17", "-shared", "-fPIC", "-Wno-unknown-pragmas")


def cache_dir() -> Path:
    root = os.environ.get("MATMUL_EXPLORER_CACHE") or Path.home() / ".cache" / "cuda-matmul-explorer"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def defines_for(tile: int, pad: int) -> dict[str, int]:
    return {"TILE": tile, "PAD": pad}


def _inputs_hash(*parts: str) -> str:
    h = hashlib.sha256()
    for name in ("trace.cuh", "cpu_shim.h", "cpu_entry.h"):
        h.update((sources.CUDA_DIR / name).read_bytes())
    for p in parts:
        h.update(p.encode())
    return h.hexdigest()[:20]


def _run(cmd: list[str], what: str) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        raise EngineError(f"{cmd[0]} was not found; it is needed to {what}") from None
    if done.returncode:
        lines = (done.stderr or done.stdout).strip().splitlines()
        first = next((l for l in lines if "error" in l), lines[0] if lines else "no message")
        raise EngineError(f"{what} failed: {first.strip()}")


def _atomic_build(target: Path, build) -> Path:
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        build(out)
        os.replace(out, target)
    return target


def nvcc() -> str | None:
    return shutil.which("nvcc") or (shutil.which("nvcc", path="/usr/local/cuda/bin"))


def build_cubin(file: str, tile: int, pad: int, traced: bool) -> Path:
    """nvcc -cubin for GPU_ARCH; traced=True is the instrumented build. -lineinfo maps SASS to lines."""
    src = sources.load(file)
    compiler = nvcc()
    if not compiler:
        raise EngineError("nvcc was not found: it is needed to build kernels for the GPU")
    defs = [f"-D{k}={v}" for k, v in defines_for(tile, pad).items()]
    # The traced build keeps more values live; capping registers at 64 lets 1024-thread blocks
    # (TILE 32) still launch. Spills, if any, change speed, never what the kernel computes.
    defs += ["-DMATMUL_TRACE", "-maxrregcount=64"] if traced else []
    key = _inputs_hash(src.text, GPU_ARCH, *defs)
    target = cache_dir() / f"{src.name}-{'trace' if traced else 'plain'}-{key}.cubin"

    def build(out: Path) -> None:
        _run([compiler, "-cubin", f"-arch={GPU_ARCH}", "-O3", "-lineinfo", *defs,
              f"-I{sources.CUDA_DIR}", "-o", str(out), str(src.path)], f"nvcc on {file}")

    return _atomic_build(target, build)


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


def build_cpu_library(file: str, tile: int, pad: int) -> Path:
    """The kernel's own source, compiled for the host with cuda/cpu_shim.h: the CPU trace source."""
    src = sources.load(file)
    compiler = host_compiler()
    if not compiler:
        raise EngineError("CPU trace mode runs the kernel source on the CPU and needs a C++ compiler "
                          "(g++ or clang++); none was found on PATH")
    cuda = sources.CUDA_DIR
    unit = "\n".join([
        "#define MATMUL_CPU 1", "#define MATMUL_TRACE 1",
        *(f"#define {k} {v}" for k, v in defines_for(tile, pad).items()),
        f'#include "{cuda / "cpu_shim.h"}"',
        f'#include "{src.path}"',
        f"#define CPU_KERNEL_CALL {_kernel_call(src)}",
        f'#include "{cuda / "cpu_entry.h"}"', ""])
    key = _inputs_hash(src.text, unit, compiler, *CPU_FLAGS)
    target = cache_dir() / f"{src.name}-cpu-{key}.so"

    def build(out: Path) -> None:
        unit_file = out.with_suffix(".cpp")
        unit_file.write_text(unit)
        _run([compiler, *CPU_FLAGS, f"-I{cuda}", "-o", str(out), str(unit_file)], f"the C++ compiler on {file}")

    return _atomic_build(target, build)
