"""Run on the GPU machine: records the GPU traces of tests/golden/cases.py into one compressed file.

    python tests/golden/record_golden.py OUT.npz [--only SUBSTRING ...] [--onto golden_traces.npz]

--only records just the cases whose name holds one of the substrings (a change to some kernels
re-records theirs); --onto keeps every other case of an earlier file as it was recorded.

    python tests/golden/record_golden.py OUT.npz --from PART.npz --onto golden_traces.npz

puts the cases of PART.npz (recorded on the GPU machine with --only and no --onto) onto the earlier
file, with no GPU: the whole file is larger than what comes back from the GPU machine at once.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, trace_case  # noqa: E402


def _read(path: str) -> tuple[dict, dict]:
    """A golden file's meta and its arrays."""
    with np.load(path) as f:
        return json.loads(str(f["meta"])), {name: f[name] for name in f.files if name != "meta"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", nargs="*", default=None, help="record only the cases whose name holds one of these")
    ap.add_argument("--onto", help="an earlier golden file whose other cases are kept")
    ap.add_argument("--from", dest="part", help="take the cases recorded in this file instead of recording them")
    args = ap.parse_args()
    meta, arrays = _read(args.onto) if args.onto else ({}, {})
    if args.part:
        part_meta, part_arrays = _read(args.part)
        arrays = {name: v for name, v in arrays.items() if name.split("/")[0] not in part_meta}
        meta, arrays = {**meta, **part_meta}, {**arrays, **part_arrays}
    for case in CASES if not args.part else ():
        if args.only is not None and not any(s in case[0] for s in args.only):
            continue
        t = trace_case(case, "gpu")
        arrays = {name: v for name, v in arrays.items() if not name.startswith(f"{case[0]}/")}
        for field, column in t.columns.items():
            arrays[f"{case[0]}/{field}"] = column
        # The array column numbers t.arrays: kept, so the file is read by names.
        # issued: each site's warp instructions, all-off ones included (Trace.issued), which no record shows.
        meta[case[0]] = {"device": t.device, "records": len(t), "rel_error": t.rel_error, "arrays": list(t.arrays),
                         "issued": {str(site): n for site, n in t.issued.items()}}
        print(f"{case[0]:32} {len(t):>9,} records  rel_error {t.rel_error:.2e}  on {t.device}")
    meta = {c[0]: meta[c[0]] for c in CASES if c[0] in meta}   # cases no longer listed are dropped
    arrays = {name: v for name, v in arrays.items() if name.split("/")[0] in meta}
    np.savez_compressed(args.out, meta=np.array(json.dumps(meta)), **arrays)


if __name__ == "__main__":
    main()
