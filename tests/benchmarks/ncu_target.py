"""One launch of a catalog kernel's plain (timing) build, through the GPU worker: ncu's target.

    ncu ... python3 tests/benchmarks/ncu_target.py KERNEL M N K TILE PAD BX BY [SOURCE]

SOURCE, a .cu file, replaces the kernel's source with the catalog kernel's launch geometry (the
test kernels of tests/cuda/, measured by tests/benchmarks/ncu_vector.py).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.devices import gpu_client  # noqa: E402
from engine.kernels import registry  # noqa: E402
from engine.kernels.problem import make_problem  # noqa: E402


def main() -> None:
    kernel, m, n, k, tile, pad, bx, by = sys.argv[1], *map(int, sys.argv[2:9])
    # TILE and PAD go only to a kernel that declares them (registry: a kernel's parameters).
    p = make_problem(m, n, k, block=(bx, by), params=registry.get(kernel).takes({"TILE": tile, "PAD": pad}))
    source = sys.argv[9] if len(sys.argv) > 9 else None
    out = gpu_client.call("bench", {"kernel": kernel, "problem": p, "warmup": 0, "reps": 0, "source_override": source})
    print(f"{kernel}: correct={out['correct']} rel_error={out['rel_error']:.2e}")
    gpu_client.shutdown()


if __name__ == "__main__":  # the GPU worker is spawned: this module is re-imported in it
    main()
