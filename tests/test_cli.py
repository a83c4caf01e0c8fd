import json

from engine.cli import main


def test_kernels_lists_the_catalog(capsys):
    assert main(["kernels"]) == 0
    out = capsys.readouterr().out
    for name in ("naive_x_rows", "tiled_unguarded", "shared_bank_conflicts", "cublas_sgemm", "cpu_reference"):
        assert name in out


def test_trace_prints_json_metrics_and_writes_the_trace(capsys, tmp_path):
    out = tmp_path / "t.npz"
    assert main(["trace", "shared_bank_conflicts", "--m", "32", "--n", "32", "--k", "32", "--tile", "32",
                 "--source", "cpu", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["source"] == "cpu" and summary["records"] > 0 and summary["relative_error"] < 1e-6
    ncu = summary["ncu"]["shared_bank_conflicts"]
    assert ncu["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 32 * 32 * (32 + 1)  # 32 warps x 32 p: 32-way + broadcast
    import numpy as np
    assert len(np.load(out)["records"]) == summary["records"]


def test_bad_input_is_one_line_on_stderr(capsys):
    assert main(["trace", "naive_x_rows", "--m", "-1", "--n", "4", "--k", "4", "--source", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: M must be at least 1") and err.count("\n") == 1


def test_over_the_cap_says_cap_and_size(capsys):
    assert main(["trace", "naive_x_cols", "--m", "4096", "--n", "4096", "--k", "4096", "--source", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "137,455,730,688 records" in err and "cap of 10,000,000" in err


def test_one_block_of_a_big_product_is_cheap(capsys):
    assert main(["trace", "naive_x_cols", "--m", "4096", "--n", "4096", "--k", "1024", "--blocks", "255,255",
                 "--source", "cpu"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 256 * (2 * 1024 + 1) and summary["traced_blocks"] == 1
