"""`python -m engine ...`: the same API the pages use, from a shell."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from . import analysis, documents, gpu_client, registry, sass, tracer
from .errors import EngineError
from .plan import DEFAULT_RECORD_CAP, parse_blocks
from .problem import make_problem, parse_block


def parameters(k: registry.KernelSpec) -> list[str]:
    """What a kernel lets you choose, in words."""
    params = []
    if k.tiles:
        params.append("TILE " + "/".join(map(str, k.tiles)))
    if k.pads:
        params.append("PAD " + "/".join(map(str, k.pads)))
    if k.block_shapes:
        params.append("block shape")
    if k.needs_tile_multiple:
        params.append("sizes multiple of TILE")
    return params


def catalog_markdown() -> str:
    """The README's kernel table, from the registry (tests/test_readme.py keeps the README in step)."""
    rows = ["| kernel | source documents | kind | parameters | lesson |", "|---|---|---|---|---|"]
    for k in registry.CATALOG:
        params = parameters(k)
        source = ", ".join(f"`cuda/{l.file}`" for l in k.launches)
        name = f"`{k.name}`" + (f" ({source})" if source else "")
        cited = documents.cite(k.seeds, "*{}*")
        rows.append(f"| {name} | {cited} | {k.kind} | {'; '.join(params) or '-'} | {k.lesson} |")
    return "\n".join(rows)


def cmd_kernels(args) -> int:
    if args.markdown:
        print(catalog_markdown())
        return 0
    for k in registry.CATALOG:
        print(f"{k.name:24} {k.kind:9} {'; '.join(parameters(k))}\n    {k.lesson}\n    from {k.source_titles}")
    return 0


def cmd_info(args) -> int:
    st = gpu_client.status()
    print(json.dumps({"mode": st.mode, "name": st.name, "reason": st.reason, **st.info}, indent=2, default=str))
    return 0


def save_trace(trace, out: Path) -> None:
    if out.suffix == ".csv":
        trace.to_dataframe().to_csv(out, index=False)
        return
    meta = json.dumps({"kernel": trace.kernel, "source": trace.source, "device": trace.device,
                       "arrays": list(trace.arrays), "sites": [s.label for s in trace.sites]})
    np.savez_compressed(out, records=trace.records, meta=np.array(meta))


def cmd_trace(args) -> int:
    spec = registry.get(args.kernel)
    block = parse_block(args.block) if args.block else spec.default_block
    problem = make_problem(args.m, args.n, args.k, tile=args.tile, pad=args.pad, block=block)
    trace = tracer.trace(args.kernel, problem, parse_blocks(args.blocks), args.source, args.cap)
    sass_info = sass.memory_instructions(spec.launches[-1].file, problem.tile, problem.pad)
    summary = analysis.summarize(trace, sass_info)
    summary["sass"] = sass_info
    if args.out:
        save_trace(trace, Path(args.out))
        summary["trace_file"] = args.out
    print(json.dumps(summary, indent=2, default=float))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine", description="CUDA Matmul Explorer engine")
    sub = parser.add_subparsers(dest="command", required=True)
    kernels = sub.add_parser("kernels", help="list the kernel catalog")
    kernels.add_argument("--markdown", action="store_true", help="as the README's table")
    kernels.set_defaults(fn=cmd_kernels)
    sub.add_parser("info", help="GPU or CPU mode, and the device").set_defaults(fn=cmd_info)
    t = sub.add_parser("trace", help="trace a kernel, print its metrics as JSON")
    t.add_argument("kernel")
    t.add_argument("--m", required=True, type=float)
    t.add_argument("--n", required=True, type=float)
    t.add_argument("--k", required=True, type=float)
    t.add_argument("--tile", type=int, default=16)
    t.add_argument("--pad", type=int, default=0)
    t.add_argument("--block", help="launch block of the naive kernels, e.g. 32x8")
    t.add_argument("--blocks", help="which blocks to trace: 'x,y x,y ...' (default: all)")
    t.add_argument("--source", choices=("gpu", "cpu", "auto"), default="auto")
    t.add_argument("--cap", type=int, default=DEFAULT_RECORD_CAP, help="most records a trace may hold")
    t.add_argument("--out", help="write the full trace: .npz (compressed) or .csv")
    t.set_defaults(fn=cmd_trace)
    from . import bench_cli  # noqa: PLC0415 - registers `bench`
    bench_cli.register(sub)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        gpu_client.shutdown()
