"""The pages' animated views, built from their controls without Streamlit: what `python -m engine
animate` exports, the same figure the page draws for the same controls (the pages' defaults are these
functions' defaults), in presenter sizing by default, since an export goes on a projector.

Each returns (figure, title); the frame rates are the pages' own (SPEEDS, which the pages' Speed
controls read).
"""
from __future__ import annotations

from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import make_problem
from engine.metrics import analysis, recorded_fragments, views
from engine.plots import bank_figures, coalescing_figures, tensor_figures, tile_phase_figures
from engine.tracing import tracer

# Milliseconds per frame of each page's Speed control.
SPEEDS = {"coalescing": {"slow": 700, "normal": 300, "fast": 60},
          "tile_phases": {"slow": 1600, "normal": 900, "fast": 300},
          "bank_conflicts": {"slow": 900, "normal": 400, "fast": 80},
          "tensor_cores": {"slow": 1200, "normal": 600, "fast": 250}}
VIEWS = tuple(SPEEDS)
WINDOW = 160   # instructions per animation (Coalescing, Bank conflicts, the Playground): long traces are windowed


def ms(view: str, speed: str) -> int:
    speeds = SPEEDS[view]
    if speed not in speeds:
        raise EngineError(f"speed must be one of {', '.join(speeds)}, not {speed!r}")
    return speeds[speed]


def grid(kernel: str, m: int, n: int, k: int, params: dict[str, int], block: tuple[int, int]) -> tuple[int, int]:
    """The blocks of the kernel's main launch, from its geometry in the registry (nothing runs)."""
    spec = registry.get(kernel)
    if not spec.traceable:   # cuBLAS, torch.mm, the CPU reference: no launch of ours (IndexError before)
        raise EngineError(f"{kernel} is not one of the explorer's CUDA sources ({spec.kind}): it has no trace")
    return spec.launches[-1].grid(registry.bind(spec, make_problem(m, n, k, block=block, params=params)))


def _block_trace(kernel: str, m: int, n: int, k: int, params: dict[str, int], block, at, source: str):
    t = tracer.trace(kernel, make_problem(m, n, k, block=block, params=params), [at], source)
    return t, analysis.warp_instructions(t)


def _in_grid(name: str, value: int, size: int) -> int:
    if not 0 <= value < size:
        raise EngineError(f"{name} must be 0 to {size - 1} at these sizes, not {value}")
    return value


def _not_negative(name: str, value: int) -> None:
    if value < 0:   # warp -1 had been "has no active lanes"
        raise EngineError(f"{name} must be 0 or more, not {value}")


def _asked_of(kernels: list[str], asked: dict[str, int | None]) -> None:
    """A parameter asked for (not None) that none of the kernels has is refused: drawn without it, the
    animation would not be the one asked for."""
    kernels = list(dict.fromkeys(kernels))   # a kernel beside itself is named once
    for name, value in asked.items():
        if value is not None and not any(name in registry.get(k).params for k in kernels):
            raise EngineError(f"{' and '.join(kernels)} {'has' if len(kernels) == 1 else 'have'} no parameter {name}")


def coalescing(kernel: str | None = None, compare: str | None = None, m: int = 32, n: int = 32, k: int = 16,
               block: tuple[int, int] | None = None, tile: int | None = None, bx: int = 0, by: int = 0, warp: int = 0,
               start: int = 1, speed: str = "normal", presenter: bool = True, source: str = "auto"):
    """The Coalescing page's figure: kernel (default the catalog's first) beside compare (default the
    second; "(none)" for one panel), from instruction `start` (1-based), WINDOW at most. tile: TILE of
    the kernels that have one (default 16); block: the launch block of those that take one (the naive
    kernels; default 32x32). Either asked for where no kernel shown has it is refused."""
    kernels = registry.showing("coalescing")
    kernel = kernel or kernels[0]
    compare = kernels[1] if compare is None else compare
    chosen = [kernel] + ([compare] if compare != "(none)" else [])
    _asked_of(chosen, {"TILE": tile})
    tile = 16 if tile is None else tile
    blocked = [name for name in dict.fromkeys(chosen) if registry.get(name).block_shapes]
    if block is not None and not blocked:   # drawn with their own blocks, the title had named this one
        raise EngineError(f"{' and '.join(dict.fromkeys(chosen))}: the block follows from the parameters; "
                          "--block sets the launch block of the kernels that take one (the naive kernels)")
    block = (32, 32) if block is None else block
    if start < 1:   # 0 or less had read the last instructions, Python's negative indexing
        raise EngineError(f"the first instruction is numbered 1; got {start}")
    _not_negative("warp", warp)
    panels, most = [], 0
    first_grid = grid(kernel, m, n, k, registry.get(kernel).takes({"TILE": tile}), block)
    _in_grid("block x", bx, first_grid[0])
    _in_grid("block y", by, first_grid[1])
    for name in chosen:
        params = registry.get(name).takes({"TILE": tile})
        g = grid(name, m, n, k, params, block)
        at = (min(bx, g[0] - 1), min(by, g[1] - 1))
        t, inst = _block_trace(name, m, n, k, params, block, at, source)
        panel = views.warp_panel(t, inst, *at, warp, start - 1, WINDOW)
        most = max(most, panel.total)
        if panel.steps:
            panels.append(panel)
    if not panels and start > most > 0:
        raise EngineError(f"warp {warp} of block ({bx}, {by}) issues {most} instructions at {m}x{n}x{k}: "
                          f"instruction {start} is past its last")
    if not panels:
        raise EngineError(f"warp {warp} of block ({bx}, {by}) has no active lanes at {m}x{n}x{k}")
    fig = coalescing_figures.coalescing_figure(panels, presenter, ms("coalescing", speed))
    # the block where some kernel shown launches it (the others' follow from their parameters)
    title = (f"Coalescing: {' beside '.join(p.kernel for p in panels)} at {m}x{n}x{k}"
             + (f", block {block[0]}x{block[1]}" if blocked else "") + f", warp {warp}")
    return fig, title


def tile_phases(kernel: str | None = None, m: int = 40, n: int = 40, k: int = 40, tile: int = 16,
                bx: int | None = None, by: int | None = None, speed: str = "normal", presenter: bool = True,
                source: str = "auto"):
    """The Tile phases page's figure: one block (default the last, which overhangs the matrices when
    the sizes are not multiples of TILE) phase by phase."""
    kernel = kernel or registry.showing("tile_phases")[0]
    spec = registry.get(kernel)
    params = {"TILE": tile}
    g = grid(kernel, m, n, k, params, spec.default_block)
    bx = _in_grid("block x", g[0] - 1 if bx is None else bx, g[0])
    by = _in_grid("block y", g[1] - 1 if by is None else by, g[1])
    t, _ = _block_trace(kernel, m, n, k, params, spec.default_block, (bx, by), source)
    fig = tile_phase_figures.tile_phase_figure(views.tile_view(t, bx, by), presenter, ms("tile_phases", speed))
    return fig, f"Tile phases: {kernel} at {m}x{n}x{k}, TILE {tile}, block ({bx}, {by})"


def bank_conflicts(kernel: str | None = None, tile: int | None = None, pad: int | None = None, size: int = 64, warp: int = 0,
                   loads_only: bool = True, start: int = 1, speed: str = "normal", presenter: bool = True,
                   source: str = "auto"):
    """The Bank conflicts page's figure: one warp of block (0, 0), its shared loads (or all its shared
    instructions) on the 32 banks, from instruction `start` (1-based), WINDOW at most. The default
    kernel is the first that can pad its rows. tile and pad (default 32 and 0) are refused where the
    kernel has no such parameter."""
    if start < 1:
        raise EngineError(f"the first instruction is numbered 1; got {start}")
    _not_negative("warp", warp)
    shared = registry.showing("bank_conflicts")
    kernel = kernel or next((s for s in shared if "PAD" in registry.get(s).params), shared[0])
    spec = registry.get(kernel)
    _asked_of([kernel], {"TILE": tile, "PAD": pad})
    tile, pad = 32 if tile is None else tile, 0 if pad is None else pad
    params = spec.takes({"TILE": tile, "PAD": pad})
    t, inst = _block_trace(kernel, size, size, size, params, spec.default_block, (0, 0), source)
    shown = views.bank_steps(t, inst, 0, 0, warp, loads_only=loads_only, start=start - 1, limit=WINDOW)
    if not shown.steps and start > shown.total > 0:
        raise EngineError(f"warp {warp} of block (0, 0) issues {shown.total} {shown.what}s at {size}³: "
                          f"instruction {start} is past its last")
    if not shown.steps:
        raise EngineError(f"warp {warp} of block (0, 0) has no shared-memory instructions at {size}³")
    label = (kernel + (f", TILE {tile}" if "TILE" in spec.params else "")
             + (f", PAD {pad}" if "PAD" in spec.params else "") + f", warp {warp}")
    fig = bank_figures.bank_figure(shown, label, presenter, ms("bank_conflicts", speed))
    return fig, f"Bank conflicts: {label}, M = N = K = {size}"


def tensor_cores(operand: str = "mma_a", lane: int = 0, speed: str = "normal", presenter: bool = True):
    """The Tensor cores page's fragment map: who holds which element of a fragment, lane by lane."""
    if operand not in recorded_fragments.OPERANDS:
        raise EngineError(f"operand must be one of {', '.join(recorded_fragments.OPERANDS)}, not {operand!r}")
    _in_grid("lane", lane, 32)
    fig = tensor_figures.fragment_figure(operand, recorded_fragments.recorded_map(operand),
                                         recorded_fragments.owners(operand), lane, presenter,
                                         ms("tensor_cores", speed), "lane")
    return fig, f"Tensor cores: who holds what, {recorded_fragments.OPERANDS[operand].label}"
