"""wgmma_beyond.py's --rounds: each configuration's median round, wrong rows left out."""
from tests.benchmarks.wgmma_beyond import median_rows, medians


def _row(kernel, gflops, status="ok", **params):
    return {"kernel": kernel, "gflops": gflops, "status": status, "params": params}


def test_rounds_give_each_configuration_its_median_and_range():
    rows = [_row("wgmma_epilogue", g, STAGE_IN_RING=1, BN=256) for g in (773e3, 775e3, 774e3)]
    rows += [_row("wgmma_epilogue", g, BN=256, STAGE_IN_RING=0) for g in (772e3, 771e3)]   # keys in another order
    rows += [_row("wgmma_epilogue", 900e3, "wrong result", BN=256, STAGE_IN_RING=0)]        # never counted
    rows += [_row("cublas_gemm_fp16", g) for g in (776e3, 778e3, 777e3)]
    got = medians(rows)
    assert got[("wgmma_epilogue", (("BN", 256), ("STAGE_IN_RING", 1)))] == (774e3, (773e3, 775e3))
    assert got[("wgmma_epilogue", (("BN", 256), ("STAGE_IN_RING", 0)))] == (771e3, (771e3, 772e3))   # the lower middle
    assert got[("cublas_gemm_fp16", ())] == (777e3, (776e3, 778e3))
    assert len(got) == 3


def test_the_export_keeps_each_configurations_median_round():
    rows = [_row("wgmma_epilogue", g, STAGE_IN_RING=1) for g in (773e3, 775e3, 774e3)]
    rows += [_row("mma_tma", 0.0, "error")]   # timed in no round: its row stays, to say why
    kept = median_rows(rows)
    assert [(r["kernel"], r["gflops"]) for r in kept] == [("wgmma_epilogue", 774e3), ("mma_tma", 0.0)]
