"""Nsight Compute on the tensor-core rungs: ldmatrix's shared wavefronts and bank conflicts without
and with the swizzle, the tensor-core instructions one WMMA mma_sync and one mma.sync become, and the
kernel cuBLAS runs for FP16 (asked of torch.mm where PyTorch is installed: it calls cuBLAS). Its output
is shipped as engine/bench/recorded/ncu/ncu_tensor_h200.json: the Tensor cores page reads it and
tests/test_tensor_rungs.py checks the CPU trace against it.

    python3 tests/benchmarks/ncu_tensor.py OUT.json
"""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.ncu_compare import ncu_path  # noqa: E402

METRICS = ["smsp__inst_executed_op_ldsm.sum", "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
           "sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
           "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum",
           "smsp__inst_executed.sum", "gpu__time_duration.sum", "launch__registers_per_thread",
           "launch__block_size", "launch__grid_size"]
CASES = [("mma_ldmatrix", 128, 128, 128), ("mma_swizzled", 128, 128, 128), ("mma_pipelined", 128, 128, 128),
         ("wmma_warp", 128, 128, 128), ("wmma_as_written", 128, 128, 128), ("wgmma_tma", 256, 256, 256)]
TORCH = ("import torch; a = torch.rand(4096, 4096, device='cuda').half(); b = torch.rand(4096, 4096, "
         "device='cuda').half(); torch.mm(a, b); torch.cuda.synchronize()")


def profile(target: list[str], kernel_regex: str) -> list[dict]:
    cmd = [ncu_path(), "--clock-control", "none", "--target-processes", "all", "-k", f"regex:{kernel_regex}",
           "--launch-count", "1", "--metrics", ",".join(METRICS), "--csv", *target]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    rows = [line for line in done.stdout.splitlines() if line.startswith('"')]
    if not rows:
        print(f"ncu gave no CSV:\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}", file=sys.stderr)
    out: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        entry = out.setdefault(row["Kernel Name"], {"kernel_name": row["Kernel Name"]})
        value = row["Metric Value"].replace(",", "")
        if value != "n/a":
            entry[row["Metric Name"]] = float(value)
    return list(out.values())


def main() -> None:
    result = {"ncu": "--clock-control none", "cases": {}}
    for kernel, m, n, k in CASES:
        function = "matmul_wmma" if kernel == "wmma_as_written" else kernel
        rows = profile([sys.executable, "tests/benchmarks/ncu_target.py", kernel, str(m), str(n), str(k),
                        "16", "0", "16", "16"], f"^{function}$")
        result["cases"][f"{kernel} {m}x{n}x{k}"] = rows[0] if rows else {}
        print(kernel, json.dumps(rows[0] if rows else {}), flush=True)
    torch = profile([sys.executable, "-c", TORCH], "gemm|sm90|xmma|cutlass")
    result["torch_mm_fp16_4096"] = torch
    print("torch.mm fp16 4096:", json.dumps(torch), flush=True)
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
