"""Run on the GPU machine: records the GPU traces of tests/golden/cases.py into one compressed file.

    python tests/golden/record_golden.py OUT.npz
"""
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, trace_case  # noqa: E402


def main(out: str) -> None:
    arrays, meta = {}, {}
    for case in CASES:
        t = trace_case(case, "gpu")
        for field, column in t.columns.items():
            arrays[f"{case[0]}/{field}"] = column
        # The array column numbers t.arrays: kept, so the file is read by names.
        meta[case[0]] = {"device": t.device, "records": len(t), "rel_error": t.rel_error, "arrays": list(t.arrays)}
        print(f"{case[0]:32} {len(t):>9,} records  rel_error {t.rel_error:.2e}  on {t.device}")
    np.savez_compressed(out, meta=np.array(json.dumps(meta)), **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
