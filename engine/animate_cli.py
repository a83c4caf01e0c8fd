"""`python -m engine animate VIEW --out FILE`: a page's animation as an animated GIF, an MP4 or an offline
HTML player (by the suffix of --out), at 1280x720 and the page's frame rate; the view's controls as
options, their defaults the page's."""
from __future__ import annotations

import time
from pathlib import Path

from engine import animations, outputs
from engine.errors import EngineError
from engine.kernels.problem import parse_block
from engine.plots import movie

# What each export this tool writes begins with: an existing --out is replaced only if it begins so.
OURS = {".gif": lambda head: head[:6] in (b"GIF87a", b"GIF89a"),
        ".mp4": lambda head: head[4:8] == b"ftyp",
        ".html": lambda head: head.lstrip().lower().startswith(b"<!doctype html>") and b"plotly" in head.lower()}


def register(sub) -> None:
    a = sub.add_parser("animate", help="a page's animation as GIF, MP4 or an offline HTML player (1280x720)")
    a.add_argument("view", choices=animations.VIEWS)
    a.add_argument("--out", required=True, help="the file: .gif, .mp4 or .html (its suffix picks the format), in a "
                   "folder that exists; written whole through a temporary file, and a file of that name is replaced "
                   "only if this tool wrote it")
    a.add_argument("--speed", choices=("slow", "normal", "fast"), default="normal", help="the page's Speed control")
    a.add_argument("--kernel", help="the page's Kernel (default: the page's)")
    a.add_argument("--compare", help="coalescing: the kernel side by side, or (none) (default: the page's)")
    for size in ("m", "n", "k"):
        a.add_argument(f"--{size}", type=int, help=f"{size.upper()} (coalescing, tile_phases; default: the page's)")
    # Options without a default here (None: not given) so that one a view does not use is refused
    # (OPTIONS); build() gives each view its page's defaults.
    a.add_argument("--size", type=int, help="bank_conflicts: M = N = K (default 64)")
    a.add_argument("--block", help="coalescing: threads per block of the naive kernels (default 32x32)")
    a.add_argument("--tile", type=int, help="TILE (default: the page's)")
    a.add_argument("--pad", type=int, help="bank_conflicts: PAD 0 or 1 (default 0)")
    a.add_argument("--bx", type=int, help="block x (default: the page's)")
    a.add_argument("--by", type=int, help="block y (default: the page's)")
    a.add_argument("--warp", type=int, help="coalescing, bank_conflicts: the warp (default 0)")
    a.add_argument("--from", dest="start", type=int,
                   help=f"coalescing, bank_conflicts: the first instruction (1-based, default 1; {animations.WINDOW} at most are shown)")
    a.add_argument("--stores", action="store_true", default=None, help="bank_conflicts: loads and stores (default: loads)")
    a.add_argument("--operand", help="tensor_cores: mma_a, mma_b, mma_c, ... (default mma_a)")
    a.add_argument("--lane", type=int, help="tensor_cores: the lane the map opens on (default 0)")
    a.add_argument("--source", choices=("gpu", "cpu", "auto"),
                   help="coalescing, tile_phases, bank_conflicts: where traces come from (default auto)")
    a.set_defaults(fn=cmd_animate)


# The options each view draws with (beside --out and --speed); any other given is refused.
OPTIONS = {
    "coalescing": ("kernel", "compare", "m", "n", "k", "block", "tile", "bx", "by", "warp", "start", "source"),
    "tile_phases": ("kernel", "m", "n", "k", "tile", "bx", "by", "source"),
    "bank_conflicts": ("kernel", "size", "tile", "pad", "warp", "start", "stores", "source"),
    "tensor_cores": ("operand", "lane"),   # the fragments recorded on a GPU: no trace, so no --source
}


def _flag(name: str) -> str:
    return "--from" if name == "start" else f"--{name}"


def build(args):
    """The view's figure and title from the options (None: the page's default)."""
    own = OPTIONS[args.view]
    stray = [_flag(name) for name in dict.fromkeys(n for opts in OPTIONS.values() for n in opts)
             if name not in own and getattr(args, name) is not None]
    if stray:
        raise EngineError(f"{args.view} has no {', '.join(stray)} (it takes {', '.join(map(_flag, own))})")
    given = {name: getattr(args, name) for name in own if getattr(args, name) is not None}
    if args.view == "coalescing":
        if "block" in given:
            given["block"] = parse_block(given["block"])
        return animations.coalescing(**given, speed=args.speed)
    if args.view == "tile_phases":
        return animations.tile_phases(**given, speed=args.speed)
    if args.view == "bank_conflicts":
        return animations.bank_conflicts(loads_only=not given.pop("stores", False), **given, speed=args.speed)
    return animations.tensor_cores(**given, speed=args.speed)


def cmd_animate(args) -> int:
    out = Path(args.out)
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in movie.FORMATS:
        raise EngineError(f"--out {args.out}: an animation is written as {', '.join('.' + f for f in movie.FORMATS)}, "
                          f"not {out.suffix or 'a name without a suffix'}")
    outputs.check_folder(out.parent, "--out", args.out)
    outputs.check_replaceable(out, OURS[out.suffix.lower()], f"a {fmt} animation")
    started = time.perf_counter()
    fig, title = build(args)
    data = movie.export(fig, fmt, title)
    outputs.write(out, data)
    print(f"{out}: {len(movie.frame_names(fig))} frames at {movie.frame_ms(fig)} ms, {movie.SCREEN[0]}x{movie.SCREEN[1]}, "
          f"{len(data) / 2**20:.1f} MB in {time.perf_counter() - started:.1f} s")
    return 0
