"""Every catalog kernel's launch geometry, shared memory, trace bound and accepted parameters, as
recorded before the contracts moved from Python into the kernels' sources (tests/data/
declared_geometry.json.gz): reading them from the sources must not change one of them.

Regenerate only on purpose (a kernel's geometry really changed): python -m tests.test_declared_geometry
"""
import gzip
import itertools
import json
from pathlib import Path

import pytest

from engine.errors import EngineError
from engine.kernels import registry
from engine.kernels.problem import make_problem

RECORDED = Path(__file__).parent / "data" / "declared_geometry.json.gz"
# Sizes that meet and break each size rule: multiples of 16 and not, K and N multiples of 8 and not,
# wmma_as_written's 2048 limit, a size no tile divides.
SIZES = ((96, 96, 96), (37, 45, 29), (4096, 4088, 4095), (2064, 1040, 48))


def _launched(spec) -> list[registry.KernelSpec]:
    return [k for k in spec if k.launches]


def observe(spec: registry.KernelSpec) -> dict[str, object]:
    """What the kernel's contract says, for every choice of its parameters (accepted or not) and,
    where accepted, at every size and launch block shape."""
    out = {}
    names = list(spec.params)
    blocks = spec.block_shapes or (spec.default_block,)
    for values in itertools.product(*(spec.params[n] for n in names)):
        chosen = dict(zip(names, values))
        key = ",".join(f"{n}={v}" for n, v in chosen.items()) or "-"
        for size, block in itertools.product(SIZES, blocks):
            try:
                p = registry.bind(spec, make_problem(*size, block=block, params=chosen))
            except EngineError:
                out[f"{key} {size} {block}"] = "refused"
                continue
            out[f"{key} {size} {block}"] = [
                [list(l.grid(p)), list(l.block(p)), l.shared_bytes(p), l.records_per_thread(p)]
                for l in spec.launches_for(p)]
    return out


def record() -> None:
    text = json.dumps({k.name: observe(k) for k in _launched(registry.CATALOG)}, separators=(",", ":"))
    RECORDED.write_bytes(gzip.compress(text.encode(), 9, mtime=0))


@pytest.mark.parametrize("spec", _launched(registry.CATALOG), ids=lambda s: s.name)
def test_declared_geometry_is_what_it_was(spec):
    want = json.loads(gzip.decompress(RECORDED.read_bytes()))[spec.name]
    got = observe(spec)
    assert got.keys() == want.keys()
    differ = [k for k in want if json.loads(json.dumps(got[k])) != want[k]]
    assert not differ, f"{len(differ)} differ, e.g. {differ[0]}: {got[differ[0]]} != {want[differ[0]]}"


if __name__ == "__main__":
    record()
