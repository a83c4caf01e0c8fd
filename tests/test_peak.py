"""The tensor cores' ceilings as recorded (tests/benchmarks/mma_peak.py on an H100) and as the catalog
and the README quote them: every figure said is the file's, rounded as said."""
import json
from pathlib import Path

import pytest

from engine.bench import benchmark
from engine.kernels import catalog, registry

ROOT = Path(__file__).resolve().parent.parent
RUN = json.loads((benchmark.RECORDED / "peak" / "h100-2026-11-26.json").read_text())
README = " ".join((ROOT / "README.md").read_text().split())   # wrapped lines read as one


def _best(prefix: str) -> dict:
    return max((r for r in RUN["rows"] if r["kernel"].startswith(prefix)), key=lambda r: r["tflops"])


@pytest.mark.parametrize("family", ["mma_regs", "mma_smem", "wgmma_smem"])
def test_each_ceiling_is_the_fastest_row_of_its_instruction(family):
    best, row = RUN["best"][family], _best(family)
    assert best["tflops"] == row["tflops"] and best["config"] == row["config"]
    cublas_4096 = max(RUN["cublas_fp16_tflops"]["4096"].values())
    assert best["pct_cublas_4096"] == pytest.approx(100 * row["tflops"] / cublas_4096)
    # A row's TFLOP/s is its own iterations' work over its own time: nothing typed in.
    assert row["tflops"] * 1e12 * row["ms"] * 1e-3 / row["iters"] > 0 and 0 <= row["spread"] < 0.5


def test_the_catalog_and_the_readme_quote_the_recorded_ceilings():
    mma, fed, wgmma = (RUN["best"][k]["tflops"] for k in ("mma_regs", "mma_smem", "wgmma_smem"))
    cublas_4096 = max(RUN["cublas_fp16_tflops"]["4096"].values())
    share = 100 * mma / cublas_4096
    said = catalog.MMA_SYNC_CEILING
    aim = f"65% of cuBLAS FP16 (the aim for an mma.sync rung) is {100 * 65 / share:.0f}%"
    for figure in (f"{mma:.0f} TFLOP/s", f"{fed:.0f} fed by ldmatrix", f"{wgmma:.0f} for wgmma",
                   f"{cublas_4096:.0f} for cuBLAS FP16", f"about {share:.0f}%", aim):
        assert figure in said, figure
    assert registry.get("mma_pipelined").notes == (said,) and said in registry.get("mma_tma").notes
    for figure in (f"mma.sync {mma:.1f} TFLOP/s", f"{fed:.1f} fed by ldmatrix", f"wgmma {wgmma:.1f}",
                   f"cuBLAS FP16 {cublas_4096:.1f} at 4096³", f"about {share:.0f}%", f"is {100 * 65 / share:.0f}% of"):
        assert figure in README, figure


def test_the_power_limit_finding_is_the_runs_own():
    """wgmma at the same rate on 128 SMs as on 132 (the README: power bounds it), mma.sync not."""
    s = RUN["sm_scaling"]
    assert abs(s["wgmma_smem"]["ratio"] - 1) < 0.01 < s["wgmma_smem"]["ratio_if_linear"] - 1
    assert s["mma_regs_4"]["ratio"] > 1.02
    load = RUN["nvidia_smi"]["wgmma_smem"]
    assert load["power_w"] > 0.95 * load["power_limit_w"]
    assert f"at {load['power_w']:.0f} W of the card's {load['power_limit_w']:.0f} W" in README
