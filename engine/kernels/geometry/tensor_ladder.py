"""Launch geometry of the tensor-core ladder (cuda/wmma_seed.cu ... wgmma_padded.cu): FP16 inputs,
FP32 accumulate. A fragment, and an mma, is a whole 16-wide tile: the document's kernel and wmma_warp,
which load fragments straight from global memory, need M, N and K multiples of 16. From wmma_block
on, a block of warps owns a BM x BN tile of C and each warp a WM x WN piece of it, copied through
shared memory: tiles that overhang A, B or C are zero-filled there and not stored, so those rungs
take any M, N and K. wgmma_tma's TMA copies need 16-byte row strides (K and N multiples of 8);
wgmma_padded first copies A and B into rows padded to 64 halves, and takes any size.
"""
from __future__ import annotations

from engine.kernels import sources
from engine.kernels.geometry import SHARED_LIMIT, block_tile_grid, cdiv
from engine.kernels.problem import Problem

TENSOR_K = 32            # the K step of mma_ldmatrix's and mma_swizzled's shared tiles (kBK in their sources)
WGMMA_K = 64             # wgmma_tma's: one 128-byte swizzle row of halves
SHARED_LIMIT_DYNAMIC = 227 * 1024   # per block on sm_90, with the opt-in attribute
SEED_WMMA_MAX = 2048

grid = block_tile_grid


def tma_strides(p: Problem) -> str | None:
    """TMA reads rows whose byte stride is a multiple of 16: K and N multiples of 8 halves."""
    bad = [f"{n}={v}" for n, v in (("K", p.k), ("N", p.n)) if v % 8]
    if not bad:
        return None
    return (f"needs K and N to be multiples of 8 ({', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not): TMA "
            "copies rows whose stride is a multiple of 16 bytes (wgmma_padded takes any size)")


def multiples_of_16(p: Problem) -> str | None:
    bad = [f"{n}={v}" for n, v in (("M", p.m), ("N", p.n), ("K", p.k)) if v % 16]
    if not bad:
        return None
    return (f"needs M, N and K to be multiples of 16 ({', '.join(bad)} {'is' if len(bad) == 1 else 'are'} not): a "
            "tensor-core fragment is a whole 16 x 16 tile")


# wmma_seed, as the document launches it: blocks of 32 x 4 threads and 8 x M / 16 blocks in y, so
# that warpM reaches every row tile (32 warps then share each tile).
def seed_grid(p: Problem) -> tuple[int, int]:
    return (cdiv(p.n, 16), 8 * cdiv(p.m, 16))


def seed_block(p: Problem) -> tuple[int, int]:
    return (32, 4)


def seed_sizes(p: Problem) -> str | None:
    if max(p.m, p.n) > SEED_WMMA_MAX:
        return (f"is refused above {SEED_WMMA_MAX} (M={p.m}, N={p.n}): it computes every tile of C 32 times, so a "
                "larger run would take the GPU for seconds per call")
    return None


# wmma_warp: a block of 4 warps side by side, each owning one 16 x 16 tile of C.
def warp_grid(p: Problem) -> tuple[int, int]:
    return (cdiv(p.n, 64), cdiv(p.m, 16))


def warp_block(p: Problem) -> tuple[int, int]:
    return (128, 1)


def warps(p: Problem) -> int:
    """The warps of a block: one per WM x WN piece of its BM x BN tile."""
    q = p.params
    return (q["BM"] // q["WM"]) * (q["BN"] // q["WN"])


def block(p: Problem) -> tuple[int, int]:
    return (32 * warps(p), 1)


def warp_shapes(p: Problem) -> str | None:
    q = p.params
    if q["BM"] % q["WM"] or q["BN"] % q["WN"]:
        return "needs warp tiles (WM x WN) that divide the block's tile (BM x BN)"
    if not 1 <= warps(p) <= 16:
        return f"would run {warps(p)} warps per block (1 to 16 fit)"
    return None


def mma_shared(p: Problem) -> str | None:
    q = p.params
    need = 2 * TENSOR_K * (q["BM"] + q["BN"])
    return f"needs {need // 1024} KB of shared memory (48 KB is the static limit)" if need > SHARED_LIMIT else None


def ring_bytes(p: Problem) -> int:
    """mma_pipelined's dynamic shared memory: what its source's views of it add up to."""
    return sources.load("mma_pipelined.cu").dynamic_shared_bytes(p.params)


def ring_fits(p: Problem) -> str | None:
    need = ring_bytes(p)
    return (f"needs {need // 1024} KB of shared memory ({SHARED_LIMIT_DYNAMIC // 1024} KB is a block's most)"
            if need > SHARED_LIMIT_DYNAMIC else None)


def copy_passes(p: Problem) -> str | None:
    """mma_pipelined's copies: each thread takes one 16-byte column of the A and B tiles, every
    pass of all the block's threads covering whole rows; A's passes must be a multiple of 8 rows
    apart (so the swizzle is the same in each) and divide BM, and B's divide BK."""
    q, threads = p.params, 32 * warps(p)
    rows_a, rows_b = threads // (q["BK"] // 8), threads // (q["BN"] // 8)
    if rows_a % 8 or q["BM"] % rows_a or q["BK"] % rows_b:
        return (f"needs its {threads} threads to copy whole rows per pass ({rows_a} rows of A, {rows_b} of B, "
                f"for tiles of {q['BM']} x {q['BK']} and {q['BK']} x {q['BN']})")
    return None


def mma_records(p: Problem) -> int:
    """Per thread at most: per K tile its 16-byte copies of A's and B's tiles (two records each: a
    load and a store, or a cp.async's pair; nine where the matrix's rows are not 16-byte aligned
    and a copy goes half by half), its lane's ldmatrix rows (BK / 16 k steps of 16), then its
    outputs (per 16 x 8 tile two float2 stores, or four floats where N is odd)."""
    q = p.params
    threads, bk = 32 * warps(p), q.get("BK", TENSOR_K)
    tiles_m, tiles_n = q["WM"] // 16, q["WN"] // 8
    per_a, per_b = (2 if side % 8 == 0 else 9 for side in (p.k, p.n))
    copies = per_a * cdiv(q["BM"] * bk // 8, threads) + per_b * cdiv(bk * q["BN"] // 8, threads)
    stores = 2 if p.n % 2 == 0 else 4
    return cdiv(p.k, bk) * (copies + bk // 16 * (tiles_m + tiles_n // 2)) + stores * tiles_m * tiles_n


# wgmma_tma: one producer warpgroup (128 threads) and a consumer warpgroup per 64 rows of BM.
def wgmma_block(p: Problem) -> tuple[int, int]:
    return (128 * (p.params["BM"] // 64 + 1), 1)


def wgmma_boxes(p: Problem) -> dict[str, tuple[int, int]]:
    """The box one TMA copy moves, (columns, rows), for A's and B's tensor maps."""
    return {"A": (WGMMA_K, p.params["BM"]), "B": (64, WGMMA_K)}


def padded_boxes(p: Problem) -> dict[str, tuple[int, int]]:
    """wgmma_padded's boxes: wgmma_tma's, on the padded copies AP and BP."""
    return {f"{name}P": box for name, box in wgmma_boxes(p).items()}


# pad_ab (wgmma_padded's first launch): one thread per 16-byte chunk of AP (M x Kp), then of BP
# (K x Np), in blocks of PAD_THREADS.
PAD_THREADS = 256


def pad_grid(p: Problem) -> tuple[int, int]:
    chunks = p.m * cdiv(p.k, 64) * 8 + p.k * cdiv(p.n, 64) * 8
    return (cdiv(chunks, PAD_THREADS), 1)


def pad_block(p: Problem) -> tuple[int, int]:
    return (PAD_THREADS, 1)


def wgmma_shared(p: Problem) -> int:
    q = p.params
    stage = 2 * WGMMA_K * (q["BM"] + q["BN"])
    return q["STAGES"] * (stage + 16) + 1024   # the ring, its mbarriers, and room to align it to 1 KB


def wgmma_fits(p: Problem) -> str | None:
    need = wgmma_shared(p)
    return (f"needs {need // 1024} KB of shared memory ({SHARED_LIMIT_DYNAMIC // 1024} KB is a block's most)"
            if need > SHARED_LIMIT_DYNAMIC else None)
