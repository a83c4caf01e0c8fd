"""Nsight Compute's measurements of the traced kernels, shipped for the configurations the pages offer.

tests/benchmarks/ncu_reference.py measures them on a GPU machine (one ncu session per group of
kernels, several launches of each case); the files it writes are kept in engine/metrics/ncu/, one per
GPU. A case is a kernel at one size with every compile-time parameter bound and its block shape.
"""
from __future__ import annotations

from collections.abc import Mapping

from engine.metrics.analysis import NCU_COPY_METRICS, NCU_LDSM_METRICS, NCU_METRICS

# What the trace computes (the three tables of analysis), and the SASS-level counts beside them that
# say what ptxas emitted: instructions executed per kind, whatever their predicate.
METRICS = sorted({*NCU_METRICS.values(), *NCU_COPY_METRICS.values(), *NCU_LDSM_METRICS.values(),
                  "smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum",
                  "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_global_st.sum",
                  "smsp__sass_inst_executed_op_ldsm.sum", "smsp__inst_executed_op_ldgsts.sum",
                  "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
                  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
                  "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum",
                  "smsp__inst_executed.sum", "launch__grid_size", "launch__block_size", "gpu__time_duration.sum"})


def case_key(kernel: str, size: tuple[int, int, int], params: Mapping[str, int], block: tuple[int, int]) -> str:
    """'blocktile_2d 200x136x100 BK=32 BM=64 BN=64 TM=8 TN=4 block 16x16': every parameter bound."""
    m, n, k = size
    bound = " ".join(f"{name}={value}" for name, value in sorted(params.items()))
    return f"{kernel} {m}x{n}x{k}{' ' + bound if bound else ''} block {block[0]}x{block[1]}"
