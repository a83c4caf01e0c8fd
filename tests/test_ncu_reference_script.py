"""tests/benchmarks/ncu_reference.py's bookkeeping, without a GPU (its counters are the device's)."""
from engine.kernels import registry
from engine.kernels.problem import make_problem
from engine.metrics import ncu_reference
from tests.benchmarks import ncu_reference as script


def _key(kernel, params, size=(256, 256, 256)):
    spec = registry.get(kernel)
    bound = registry.bind(spec, make_problem(*size, block=spec.default_block, params=params)).params
    return ncu_reference.case_key(kernel, size, bound, spec.default_block)


def test_measuring_a_kernel_again_drops_its_cases_that_no_group_generates_any_more():
    """A kernel whose default moved is measured again with --onto: its cases at the old default and
    around it, two choices away from the new one, were kept beside the new ones, never measured again."""
    spec = registry.get("prefetched")
    default = spec.defaults
    moved = next(dict(c) for c in spec.combinations() if sum(dict(c)[k] != v for k, v in default.items()) == 2)
    neighbour = dict(script.one_at_a_time(spec)[0])
    earlier = {_key("prefetched", moved): "old default", _key("prefetched", neighbour): "a neighbour",
               _key("prefetched", {}): "the default", _key("double_buffered", moved): "another kernel's"}
    kept = script.kept_from(earlier, {"prefetched"})
    assert sorted(kept.values()) == ["a neighbour", "another kernel's", "the default"]
    assert script.kept_from(earlier, set()) == earlier   # nothing measured again: every case stays
