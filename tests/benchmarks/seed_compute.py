"""What the Tensor cores page's computed evidence on the document's WMMA kernel costs on the CPU:
the kernel worked out from its source at each recorded size (tensor_evidence.seed_compute), the whole
error table on both inputs (seed_errors, computed once per process), and the page's server time with
and without it computed. Prints its figures.

    python3 tests/benchmarks/seed_compute.py
"""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from streamlit.testing.v1 import AppTest  # noqa: E402

from engine.kernels.problem import make_inputs  # noqa: E402
from engine.metrics import tensor_evidence as te  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def page_once() -> float:
    start = time.perf_counter()
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/tensor_cores.py")
    at.run()
    assert not at.exception, at.exception
    return time.perf_counter() - start


def main() -> int:
    for n in (256, 1024, 2048):
        p = te._seed_problem(n)
        a, b = make_inputs(p)
        times = []
        for _ in range(3):
            t = time.perf_counter()
            te.seed_compute(a, b, p)
            times.append(time.perf_counter() - t)
        print(f"seed_compute at {n}³: median {statistics.median(times):.3f} s over 3 (warps worked out, fragments read, FP32 product)")
    t = time.perf_counter()
    errors = te.seed_errors()
    print(f"seed_errors, cold (sizes up to {te.COMPUTED_MAX} x 2 inputs, with the float64 references): "
          f"{time.perf_counter() - t:.2f} s")
    print(errors.to_string(index=False))
    print(f"Tensor cores page, server time per load (AppTest, seed_errors cached): "
          f"{statistics.median(page_once() for _ in range(3)):.2f} s (median of 3)")
    te.seed_errors.cache_clear()
    print(f"Tensor cores page, first load computing seed_errors: {page_once():.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
