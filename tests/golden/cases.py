"""The configurations whose GPU traces are kept under tests/golden/ and compared with CPU traces.

Sizes are non-square and, where the kernel allows, not multiples of the tile, so guards and
zero-filled edges are covered. record_golden.py (run on the device) writes golden_traces.npz,
one array per case and field ("case/field"): columns compress far better than packed records.
"""
CASES = [
    # (case name, kernel, M, N, K, tile, pad, block, blocks[, parameters pinned])
    ("naive_x_rows_16x16", "naive_x_rows", 37, 45, 29, 16, 0, (16, 16), None),
    ("naive_x_rows_32x8", "naive_x_rows", 64, 40, 33, 16, 0, (32, 8), None),
    ("naive_x_cols_16x16", "naive_x_cols", 37, 45, 29, 16, 0, (16, 16), None),
    ("naive_x_cols_32x32", "naive_x_cols", 40, 72, 17, 16, 0, (32, 32), None),
    ("naive_transposed_b_32x32", "naive_transposed_b", 37, 45, 29, 16, 0, (32, 32), None),
    ("naive_transposed_b_one_block", "naive_transposed_b", 96, 80, 48, 16, 0, (32, 32), [(1, 2)]),
    ("tiled_guarded_t8", "tiled_guarded", 37, 45, 29, 8, 0, (16, 16), None),
    ("tiled_guarded_t16", "tiled_guarded", 37, 45, 29, 16, 0, (16, 16), None),
    ("tiled_guarded_t32", "tiled_guarded", 37, 45, 29, 32, 0, (16, 16), None),
    ("tiled_unguarded_t16", "tiled_unguarded", 32, 48, 64, 16, 0, (16, 16), None),
    ("tiled_unguarded_t32", "tiled_unguarded", 64, 32, 96, 32, 0, (16, 16), None),
    ("bank_t16_pad0", "shared_bank_conflicts", 37, 45, 29, 16, 0, (16, 16), None),
    ("bank_t16_pad1", "shared_bank_conflicts", 37, 45, 29, 16, 1, (16, 16), None),
    ("bank_t32_pad0", "shared_bank_conflicts", 40, 33, 20, 32, 0, (16, 16), None),
    ("bank_t32_pad1", "shared_bank_conflicts", 40, 33, 20, 32, 1, (16, 16), None),
    ("naive_x_cols_big_two_blocks", "naive_x_cols", 1024, 1024, 300, 16, 0, (16, 16), [(63, 63), (5, 17)]),
    ("tiled_guarded_big_one_block", "tiled_guarded", 2000, 3000, 300, 16, 0, (16, 16), [(187, 124)]),
    # The FP32 ladder, with its default (tuned) parameters: sizes not multiples of 4 (the scalar
    # fallbacks) and multiples of 4 with partial tiles (the float4 and cp.async paths and their edges).
    *[case for rung in ("blocktile_1d", "blocktile_2d", "vectorized", "warptile", "double_buffered", "prefetched")
      for case in ((f"{rung}_odd", rung, 150, 135, 37, 16, 0, (16, 16), None),
                   (f"{rung}_float4", rung, 136, 260, 72, 16, 0, (16, 16), None))],
    # prefetched's blocks wholly inside C (K a multiple of BK) run its tile loop without edge guards.
    ("prefetched_interior", "prefetched", 256, 512, 64, 16, 0, (16, 16), [(1, 1)]),
    # Split-K: slices ending inside a BK tile and past K (empty), both launches; and one traced sum
    # block, which runs only the split_k blocks whose partials it adds.
    ("split_k_odd", "split_k", 150, 135, 37, 16, 0, (16, 16), None),
    ("split_k_float4", "split_k", 136, 260, 72, 16, 0, (16, 16), None, {"SPLITK": 3}),
    ("split_k_one_sum_block", "split_k", 300, 1100, 200, 16, 0, (16, 16), [(1, 7)]),
    # Its padded rows: the copy's zero tails, float4s of AP and BP at any K and N.
    ("split_k_padded_odd", "split_k_padded", 150, 135, 37, 16, 0, (16, 16), None),
    ("split_k_padded_one_sum_block", "split_k_padded", 130, 1029, 67, 16, 0, (16, 16), [(1, 100)],
     {"SPLITK": 3}),
    # The traced tensor-core rungs (FP16 in, FP32 out): multiples of 16 with partial block tiles, so
    # the zero-filled copies and the unstored overhang are covered. mma_pipelined at pinned
    # parameters (a tuned default may move): its old 48 KB ring, and a 192 KB one in dynamic shared
    # memory, each with its copies where they were when recorded (COPY_AT 0); then at its defaults
    # (the copies behind the first k step's multiplies).
    ("mma_ldmatrix_partial", "mma_ldmatrix", 208, 144, 272, 16, 0, (16, 16), None),
    ("mma_swizzled_partial", "mma_swizzled", 208, 144, 272, 16, 0, (16, 16), None),
    ("mma_pipelined_48k", "mma_pipelined", 208, 144, 272, 16, 0, (16, 16), None,
     {"BM": 128, "BN": 128, "WM": 64, "WN": 64, "STAGES": 3, "BK": 32, "COPY_AT": 0}),
    ("mma_pipelined_dynamic", "mma_pipelined", 144, 272, 208, 16, 0, (16, 16), None,
     {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "STAGES": 4, "BK": 64, "COPY_AT": 0}),
    ("mma_pipelined_copies_behind", "mma_pipelined", 208, 144, 272, 16, 0, (16, 16), None),
    # At any size: K and N not multiples of 8 (rows off 16-byte boundaries: half-by-half copies, C
    # stored a float at a time where N is odd), one of them only, and a single element.
    ("mma_ldmatrix_odd", "mma_ldmatrix", 150, 135, 37, 16, 0, (16, 16), None),
    ("mma_swizzled_odd", "mma_swizzled", 17, 33, 9, 16, 0, (16, 16), None),
    ("mma_pipelined_odd", "mma_pipelined", 150, 135, 37, 16, 0, (16, 16), None),
    ("mma_pipelined_odd_n", "mma_pipelined", 37, 45, 40, 16, 0, (16, 16), None,
     {"BM": 64, "BN": 64, "WM": 32, "WN": 32, "STAGES": 2, "BK": 32, "COPY_AT": 0}),
    ("mma_pipelined_1x1x1", "mma_pipelined", 1, 1, 1, 16, 0, (16, 16), None),
]


def trace_case(case, source):
    from engine.kernels import problem, registry
    from engine.tracing import tracer
    _, kernel, m, n, k, tile, pad, block, blocks, *pinned = case
    params = {**registry.get(kernel).takes({"TILE": tile, "PAD": pad}), **(pinned[0] if pinned else {})}
    p = problem.make_problem(m, n, k, block=block, params=params)
    return tracer.trace(kernel, p, blocks, source)
