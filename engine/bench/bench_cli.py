"""`python -m engine bench`: a sweep on the GPU (or a recorded run re-rendered), written as files."""
from __future__ import annotations

import sys
from pathlib import Path

from engine.bench import benchmark, export, schema
from engine.devices import gpu_client
from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import add_param_options, block_given, params_given


def register(sub) -> None:
    b = sub.add_parser("bench", help="time kernels against cuBLAS and write CSV/JSON/PNG/SVG/HTML")
    b.add_argument("--kernels", default="naive_x_rows,naive_x_cols,tiled_guarded,cublas_sgemm,cublas_sgemm_tf32",
                   help="comma-separated catalog names (python -m engine kernels)")
    b.add_argument("--sizes", default="256,512,1024,2048,4096", help="N or MxNxK, comma-separated")
    add_param_options(b, registry.parameter_names())   # for the kernels that declare them; default: each one's own
    b.add_argument("--block", help="launch block of the naive kernels, e.g. 32x32 (default: each kernel's own)")
    b.add_argument("--reps", type=int, default=20)
    b.add_argument("--warmup", type=int, default=2)
    b.add_argument("--flush-l2", action="store_true", help="flush L2 before every timed repetition")
    b.add_argument("--formats", default=",".join(export.FORMATS))
    b.add_argument("--from", dest="source", help="re-render a results.json instead of measuring (no GPU needed; "
                   f"a regular file of at most {schema.MAX_MB} MB)")
    b.add_argument("--out", required=True,
                   help="folder for the files, made if missing (in a folder that exists); each file is written "
                        "whole through a temporary file, and a file of the same name is replaced only if bench "
                        "wrote it (anything else there is refused, never overwritten)")
    b.set_defaults(fn=cmd_bench)


def read_export(path: Path) -> schema.Document:
    """An export to re-render, checked like an upload; a missing, damaged or oversized file, or one
    that is not a regular file (a FIFO, /dev/zero), is one line naming it."""
    data = schema.read_bounded(path)
    try:
        doc = schema.read(data)
    except schema.BadDocument as exc:
        raise EngineError(f"{path}: {exc}") from None
    if doc.left_out:
        print(f"warning: {path}: {doc.left_out:,} of {len(doc.raw):,} rows left out: " + "; ".join(doc.skipped),
              file=sys.stderr)
    return doc


def cmd_bench(args) -> int:
    formats = [f for f in args.formats.split(",") if f]
    bad = set(formats) - set(export.FORMATS)
    if bad:
        raise EngineError(f"formats are {', '.join(export.FORMATS)}; not {', '.join(sorted(bad))}")
    if not formats:   # --formats , had written nothing and said nothing
        raise EngineError(f"--formats names none of {', '.join(export.FORMATS)}")
    out = Path(args.out)
    export.check_out(out)   # before the work: a sweep takes minutes, and its results would be lost
    if args.source:
        doc = read_export(Path(args.source))
        rows, prov = doc.rows, doc.prov
    else:
        kernels = [k for k in args.kernels.split(",") if k]
        if not kernels:   # had gone on to ask for a GPU, to time nothing
            raise EngineError("--kernels names no kernel (python -m engine kernels lists them)")
        for k in kernels:
            if not registry.get(k).timed:
                raise EngineError(f"{k} cannot be timed on the GPU")
        params = params_given(args, registry.parameter_names())
        benchmark.check_params(kernels, params)
        settings = benchmark.Settings(args.warmup, args.reps, args.flush_l2)   # checked before any GPU is asked
        sizes = benchmark.parse_sizes(args.sizes)
        # A block for the kernels that take one; refused where none of them does.
        takes = [k for k in kernels if registry.get(k).block_shapes]
        blocks = {k: block_given(registry.get(k), args.block) for k in takes or kernels[:1]} if args.block else None
        status = gpu_client.status()
        if not status.available:
            raise EngineError(f"no GPU to time on ({status.reason}); use --from a recorded results.json")
        prov = benchmark.provenance(status.info, settings)
        rows = []
        for row in benchmark.sweep(kernels, sizes, settings, params, blocks):
            rows.append(row)
            shape = f"{row['m']}x{row['n']}x{row['k']}"
            if row["status"] == "ok":
                print(f"{row['kernel']:22} {shape:>16} {row['gflops']:>11,.0f} GFLOP/s  median {row['median_ms']:.3f} ms"
                      f"  spread {100 * row['spread']:.1f}%  n={row['reps']}", flush=True)
            else:
                print(f"{row['kernel']:22} {shape:>16}  {row['status']}: {row.get('error', '')}", flush=True)
    written, skipped = export.write_all(rows, prov, out, formats)
    for path in written:
        print(f"wrote {path}")
    for line in skipped:
        print(f"skipped {line}")
    return 0
