"""The kernel registry: what the rest of the engine, the pages and the tests ask about kernels —
an entry by name (get), the kernels a view lists (showing), the traceable ones, a rung's
predecessor on the ladder, and a problem bound to a kernel's parameters (bind) — answered from
the catalog (engine/kernels/catalog.py).

It also hands on the catalog's lists and the contract's types under their own names
(registry.CATALOG, registry.LADDER_RUNGS, registry.KernelSpec, registry.Precision, ...), so that
callers import one module whatever they ask.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace

from engine.errors import EngineError, lookup
from engine.kernels.catalog import (
    CATALOG,
    FP32_RUNGS,
    LADDER,
    LADDER_RUNGS,
    SWEEP_DEFAULT,
    TENSOR_K,
    TENSOR_LADDER,
    TENSOR_RUNGS,
    TILES,
    TMA_RUNGS,
)
from engine.kernels.contract import (
    INPUT_TYPES,
    NAIVE_BLOCKS,
    TOLERANCE,
    TRACED_VIEWS,
    VIEWS,
    KernelSpec,
    Kind,
    Launch,
    Precision,
    check,
)
from engine.kernels.problem import Problem

__all__ = [
    # the queries
    "get", "showing", "traceable", "previous_rung", "registered", "bind",
    # the catalog's lists
    "CATALOG", "LADDER", "LADDER_RUNGS", "FP32_RUNGS", "TENSOR_LADDER", "TENSOR_RUNGS", "SWEEP_DEFAULT", "NAIVE_BLOCKS", "TILES",
    "TENSOR_K", "TMA_RUNGS",
    # the contract's types and tables
    "KernelSpec", "Launch", "Kind", "Precision", "INPUT_TYPES", "TOLERANCE", "VIEWS", "TRACED_VIEWS",
]

# By name: CATALOG, and while registered() runs, the kernels a test adds.
_BY_NAME = {k.name: k for k in CATALOG}


def previous_rung(name: str) -> str | None:
    """The rung before this one on the ladder (None for the first)."""
    i = LADDER_RUNGS.index(name)
    return LADDER_RUNGS[i - 1] if i else None


# Kernels renamed since links were shared: an older link's name, read as the kernel's name now.
# (wmma_seed: named after where it came from; it is the document's WMMA kernel as written.)
FORMER_NAMES = {"wmma_seed": "wmma_as_written"}


def get(name: str) -> KernelSpec:
    return lookup(_BY_NAME, name, "kernel")


def parameter_names() -> list[str]:
    """Every compile-time parameter a kernel of the catalog declares (BK, PAD, TILE, ...), sorted."""
    return sorted({name for spec in CATALOG for name in spec.params})


def traceable() -> list[KernelSpec]:
    return [k for k in _BY_NAME.values() if k.traceable]


def showing(view: str) -> list[str]:
    """The kernels a view lists, in catalog order."""
    if view not in VIEWS:
        raise ValueError(f"{view!r} is not a view ({', '.join(VIEWS)})")
    return [k.name for k in _BY_NAME.values() if view in k.shows]


@contextmanager
def registered(spec: KernelSpec):
    """A kernel outside CATALOG, known by name while the block runs (tests): checked like the rest."""
    check(spec)
    if spec.name in _BY_NAME:
        raise ValueError(f"a kernel named {spec.name} is already registered")
    _BY_NAME[spec.name] = spec
    try:
        yield spec
    finally:
        del _BY_NAME[spec.name]


def bind(spec: KernelSpec, problem: Problem) -> Problem:
    """The problem with every parameter of the kernel set (defaults where not asked for), after checking
    what was asked for against the declaration; what the kernel cannot take gets a one-line reason."""
    for name, value in problem.params.items():
        if name not in spec.params:
            takes = ", ".join(spec.params) or "no compile-time parameters"
            raise EngineError(f"{spec.name} has no parameter {name} (it takes {takes})")
        if value not in spec.params[name]:
            raise EngineError(f"{spec.name} takes {name} {', '.join(map(str, spec.params[name]))}, not {value}")
    bound = replace(problem, params={**spec.default_params(), **problem.params})
    for rule in spec.rules:
        reason = rule.check(bound)
        if reason:
            raise EngineError(f"{spec.name} {reason}")
    return bound
