"""`python -m engine ...`: the same API the pages use, from a shell."""
from __future__ import annotations

import argparse
import errno
import json
import math
import os
import select
import sys
from pathlib import Path

import numpy as np

from engine import outputs
from engine.devices import gpu_client
from engine.errors import EngineError
from engine.kernels import cache, documents, registry, sass
from engine.kernels.problem import add_param_options, block_given, make_problem, params_given
from engine.metrics import analysis
from engine.tracing import tracer
from engine.tracing.plan import DEFAULT_RECORD_CAP, parse_blocks, parse_cap
from engine.tracing.records import TRACE_DTYPE


def parameters(k: registry.KernelSpec) -> list[str]:
    """What a kernel lets you choose, in words."""
    params = [f"{name} " + "/".join(map(str, allowed)) for name, allowed in k.params.items()]
    if k.block_shapes:
        params.append("block shape")
    return params + list(dict.fromkeys(rule.says for rule in k.rules))   # one rule per size may say the same


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
        types = f"{k.inputs} inputs, {k.compute} multiply, {k.accumulate} accumulate"
        print(f"{k.name:24} {k.kind:9} {'; '.join(parameters(k))}\n    {k.lesson}\n    {types}; "
              f"shown in: {', '.join(v for v in registry.VIEWS if v in k.shows) or 'none'}\n    from {k.source_titles}")
        for note in k.notes:
            print(f"    note: {note}")
    return 0


def strict_json(obj) -> str:
    """JSON that strict parsers (and Node's JSON.parse) accept: json.dumps writes NaN and infinities
    bare, which is not JSON; they become null."""
    return json.dumps(_finite(obj), indent=2, allow_nan=False, default=str)


def _finite(obj):
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _finite(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def cmd_info(args) -> int:
    st = gpu_client.status()
    print(strict_json({"mode": st.mode, "name": st.name, "reason": st.reason, **st.info}))
    return 0


TRACE_FORMATS = (".npz", ".csv")


# What a trace file this tool wrote begins with: a zip whose first member is records.npy (numpy's
# savez), or the trace table's header line. An existing --out is replaced only if it begins so.
_TRACE_CSV = (",".join(TRACE_DTYPE.names) + "\n").encode()
TRACE_OURS = {".npz": lambda head: head.startswith(b"PK\x03\x04") and b"records.npy" in head[:80],
              ".csv": lambda head: head.replace(b"\r\n", b"\n").startswith(_TRACE_CSV)}


def trace_destination(out: str) -> tuple[Path, Path]:
    """Checks --out before any work is done (a trace can take minutes): the format, the directory,
    that a file can be made there and that what has the name already, if anything, is a trace this
    tool wrote (engine/outputs.py). Returns the destination and the temporary file next to it that
    the trace is written to, then renamed, so that no reader ever sees half a file."""
    path = Path(out)
    if path.suffix not in TRACE_FORMATS:
        raise EngineError(f"--out {out}: a trace is written as {' or '.join(TRACE_FORMATS)}, "
                          f"not {path.suffix or 'a name without a suffix'}")
    outputs.check_folder(path.parent, "--out", out)
    outputs.check_replaceable(path, TRACE_OURS[path.suffix], f"a {path.suffix} trace")
    try:
        return path, outputs.temporary(path)
    except OSError as exc:
        raise EngineError(f"--out {out}: cannot write in {path.parent} ({exc.strerror or exc})") from None


def save_trace(trace, out: Path, tmp: Path) -> None:
    """Writes the trace to tmp (from trace_destination) and renames it to out."""
    try:
        if out.suffix == ".csv":
            trace.to_dataframe().to_csv(tmp, index=False)
        else:
            meta = json.dumps({"kernel": trace.kernel, "source": trace.source, "device": trace.device,
                               "arrays": list(trace.arrays), "sites": [s.label for s in trace.sites]})
            with open(tmp, "wb") as f:   # a file object: given a name, numpy would append .npz
                np.savez_compressed(f, records=trace.records, meta=np.array(meta))
        outputs.replace(tmp, out)
    except OSError as exc:
        raise EngineError(f"could not write the trace to {out} ({exc.strerror or exc})") from None


def cmd_trace(args) -> int:
    spec = registry.get(args.kernel)
    block = block_given(spec, args.block) or spec.default_block
    problem = make_problem(args.m, args.n, args.k, block=block, params=params_given(args, registry.parameter_names()))
    blocks = parse_blocks(args.blocks)
    out, tmp = trace_destination(args.out) if args.out else (None, None)
    try:
        trace = tracer.trace(args.kernel, problem, blocks, args.source, args.cap)
        sass_info = sass.memory_instructions(spec.launches[-1].file, trace.problem.params)
        summary = analysis.summarize(trace, sass_info, sass.earlier_listings(spec.launches, trace.problem.params))
        summary["sass"] = sass_info
        if out:
            save_trace(trace, out, tmp)
            summary["trace_file"] = args.out
    finally:
        if tmp:
            tmp.unlink(missing_ok=True)
    print(strict_json(summary))
    return 0


def cmd_cache(args) -> int:
    """The compile cache: where it is, how big against its budget, and `--clear` to empty it."""
    path = cache.cache_root()
    if not path.exists():   # said, not made: looking at the cache had created it
        print(f"{path}: no builds yet (it is made at the first build)")
        return 0
    path = cache.cache_dir()
    if args.clear:
        nbytes, count = cache.clear(path)
        print(f"cleared {cache.builds_text(count)} ({nbytes / 2**20:.1f} MB) from {path}")
        return 0
    nbytes, count = cache.usage(path)
    print(f"{path}: {cache.builds_text(count)}, {nbytes / 2**20:.1f} MB of {cache.budget_bytes() / 2**20:.0f} MB "
          f"(${cache.BUDGET_ENV}; the least recently used go first)")
    return 0


def _parser() -> argparse.ArgumentParser:
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
    add_param_options(t, registry.parameter_names())   # default: the kernel's own
    t.add_argument("--block", help="launch block of the naive kernels, e.g. 32x8")
    t.add_argument("--blocks", help="which blocks to trace: 'x,y x,y ...' (default: all)")
    t.add_argument("--source", choices=("gpu", "cpu", "auto"), default="auto")
    t.add_argument("--cap", type=parse_cap, default=DEFAULT_RECORD_CAP,
                   help="most records a trace may hold (default: $MATMUL_EXPLORER_RECORD_CAP, else 30,000,000)")
    t.add_argument("--out", help="write the full trace: .npz (compressed) or .csv, in a folder that exists; written "
                                 "whole through a temporary file, and a file of that name is replaced only if it is "
                                 "a trace this tool wrote (anything else is refused, never overwritten)")
    t.set_defaults(fn=cmd_trace)
    c = sub.add_parser("cache", help="the compile cache: its size, or --clear to empty it")
    c.add_argument("--clear", action="store_true", help="remove every build (they are made again when needed)")
    c.set_defaults(fn=cmd_cache)
    from engine.bench import bench_cli  # noqa: PLC0415 - registers `bench`
    bench_cli.register(sub)
    from engine import animate_cli  # noqa: PLC0415 - registers `animate`
    animate_cli.register(sub)
    return parser


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe nobody reads any more. Flushing it again was the test, but the write
    that failed had emptied the buffer, so that flush passed: `kernels | head -c 0` printed
    "error: [Errno 32] Broken pipe" and exit code 2. poll() says it of the pipe itself (POLLERR)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        # Linux says POLLERR of a pipe whose reader is gone; other systems say POLLHUP
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):   # no real file behind stdout (captured, closed)
        return False


# What writing the output meets on a full disk or quota, or a file grown past its limit.
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def main(argv=None) -> int:
    try:   # from the first step: a Ctrl-C while the subcommands' modules import (seconds) is stopped too
        args = _parser().parse_args(argv)
        return args.fn(args)
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:   # Ctrl-C: stopped as asked, in one line, not a traceback
        print("stopped", file=sys.stderr)
        return 130
    except BrokenPipeError as exc:
        if _stdout_reader_gone():   # `... | head`: the reader has what it wanted; no traceback, and none at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        print(f"error: {exc}", file=sys.stderr)   # another pipe (a browser's that died), not stdout's
        return 2
    except OSError as exc:
        if exc.errno not in _FULL:   # anything else is not the output's: as it was, with its traceback
            raise
        # Output that cannot be written (`> /dev/full`, a full disk or quota): one line. What stdout still
        # buffers would fail again as Python exits, with a message of its own.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (AttributeError, OSError, ValueError):   # no real file behind stdout (captured, closed)
            pass
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        gpu_client.shutdown()
