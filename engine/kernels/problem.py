"""What a request asks for: sizes and compile-time/launch parameters, validated once, here."""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from engine.errors import EngineError

# Largest side a request may name. Traces store rows and columns as 16-bit numbers (engine/tracing/records.py).
MAX_DIM = 65535
MAX_BLOCK_THREADS = 1024   # a GPU block's most threads (compute capability 9.0, as every other since 2.0)


class Params(dict):
    """Compile-time parameters, name -> value: read-only and hashable, as a Problem is a value (cache
    keys, requests to workers)."""

    def __hash__(self):
        return hash(tuple(sorted(self.items())))

    def _read_only(self, *args, **kwargs):
        raise TypeError("a problem's parameters are read-only")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self):   # pickle would rebuild it item by item, through __setitem__
        return Params, (dict(self),)


@dataclass(frozen=True)
class Problem:
    """C (m x n) = A (m x k) . B (k x n), float32, row-major, with the kernel's compile-time
    parameters by name (checked against the kernel's declaration by registry.bind)."""

    m: int
    n: int
    k: int
    block: tuple[int, int] = (16, 16)
    seed: int = field(default=0, compare=True)
    params: Mapping[str, int] = field(default_factory=Params)

    def __post_init__(self):
        # Checked however it is made (make_problem, a caller of the engine's own, dataclasses.replace):
        # one built by hand with M = 0 had reached the tracer and failed there with a ZeroDivisionError.
        m, n, k, block, params = self.m, self.n, self.k, self.block, self.params
        if (type(m) is int and type(n) is int and type(k) is int and 0 < m <= MAX_DIM and 0 < n <= MAX_DIM
                and 0 < k <= MAX_DIM and type(block) is tuple and len(block) == 2 and type(block[0]) is int
                and type(block[1]) is int and 0 < block[0] and 0 < block[1] and block[0] * block[1] <= MAX_BLOCK_THREADS
                and type(self.seed) is int and self.seed >= 0 and isinstance(params, Mapping)
                and all(type(v) is int for v in params.values())):
            # the usual case, checked in one pass (a kernel's combinations() makes thousands)
            if type(params) is not Params:
                object.__setattr__(self, "params", Params(params))
            return
        for name in ("m", "n", "k"):
            object.__setattr__(self, name, check_size(name.upper(), getattr(self, name)))
        bx, by = check_block(self.block)
        seed = whole("the seed", self.seed)
        if seed < 0:   # numpy's generators take none below 0: the trace worker had died of it
            raise EngineError(f"the seed must be 0 or more, got {_short(seed)}")
        if not isinstance(self.params, Mapping):
            raise EngineError(f"the parameters must be given by name, like {{'TILE': 32}}, got {_short(self.params)}")
        object.__setattr__(self, "block", (bx, by))
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "params", Params({name: whole(name, v) for name, v in self.params.items()}))

    def describe(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


def check_block(block) -> tuple[int, int]:
    """A launch block given by the user (x, y): whole numbers, at most MAX_BLOCK_THREADS threads."""
    bx, by = (check_size(f"block {axis}", v) for axis, v in zip("xy", pair("block", block)))
    if bx * by > MAX_BLOCK_THREADS:
        raise EngineError(f"a block of {bx}x{by} = {bx * by} threads is over CUDA's limit of {MAX_BLOCK_THREADS}")
    return bx, by


def check_size(name: str, value) -> int:
    """Sizes are whole numbers from 1 to MAX_DIM; anything else gets a one-line reason. The bounds are
    checked before a value is written into the message: --m 1e300 is a 301-digit integer."""
    wanted = f"{name} must be an integer from 1 to {MAX_DIM:,}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise EngineError(f"{wanted}, got {_short(value)}")
    if not isinstance(value, numbers.Integral) and not (math.isfinite(float(value)) and float(value).is_integer()):
        raise EngineError(f"{wanted}, got {_short(value)}")   # 1.5, nan, inf
    if value <= 0:
        raise EngineError(f"{name} must be at least 1, got {_short(value)}")
    if value > MAX_DIM:
        raise EngineError(f"{wanted}, got {_short(value)}")
    return int(value)


def _short(value) -> str:
    """A value as a message quotes it: a number as written if it is short, else its magnitude (a
    10**400 neither fits a float nor may Python print it)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if abs(value) < 10**15:
            return str(int(value))
        sign = "a negative" if value < 0 else "an"
        return f"{sign} integer of about {int(int(value).bit_length() * math.log10(2)) + 1} digits"
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            return "a number too large for a float"
        if not math.isfinite(number):
            return repr(number)
        if abs(number) >= 1e15:
            return f"{number:.3g}"
        return str(int(number)) if number.is_integer() else repr(number)   # --m -1 (a float there) is -1, not -1.0
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def make_problem(m, n, k, block=(16, 16), seed=0, params=None) -> Problem:
    """params: compile-time parameters by name. Those not given take the kernel's defaults when the
    problem is bound to a kernel (registry.bind)."""
    return Problem(m, n, k, block, seed, params or {})   # (Problem checks what it is given)


def pair(name: str, value, like: str = "(32, 8)") -> tuple:
    """(x, y) from a pair of any kind (a tuple, a list, an array); a one-line reason for anything else:
    a string "32x8" had been read as its first two characters."""
    try:
        if isinstance(value, (str, bytes)) or len(value) != 2:
            raise TypeError
        return value[0], value[1]
    except (TypeError, KeyError, IndexError):   # no length, or not indexed by position (a dict)
        raise EngineError(f"{name} must be a pair (x, y) like {like}, got {_short(value)}") from None


def whole(name: str, value) -> int:
    """Any whole number (16 or 16.0); whether the kernel allows it is the registry's to say."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not (isinstance(value, numbers.Integral) or float(value).is_integer())):
        raise EngineError(f"{name} must be a whole number, got {_short(value)}")
    return int(value)


def add_param_options(parser, names) -> None:
    """--param NAME=VALUE, and --name VALUE for each of names (the parameters the catalog's kernels
    declare: --tile 32, --bk 16, --stages 3), for a command that takes compile-time parameters."""
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a compile-time parameter by name, e.g. TILE=32 (repeatable; `kernels` lists them)")
    for name in names:
        parser.add_argument(f"--{name.lower()}", type=int, dest=f"param_{name}", metavar=name,
                            help=f"short for --param {name}=...")


def params_given(args, names) -> dict[str, int]:
    """The parameters a command line named, by --param or by --name; one named twice with two values
    is refused."""
    params = dict(map(parse_param, args.param))
    for name in names:
        value = getattr(args, f"param_{name}", None)
        if value is not None:
            if params.get(name, value) != value:   # --tile 32 --param TILE=16: which one?
                raise EngineError(f"{name} is given twice, as {params[name]} and as {value}")
            params[name] = value
    return params


def parse_param(text: str) -> tuple[str, int]:
    """'BS=128' -> ('BS', 128)."""
    name, sep, value = text.partition("=")
    try:
        if sep and name.strip():
            return name.strip(), int(value)
    except ValueError:
        pass
    raise EngineError(f"a parameter is given as NAME=VALUE like TILE=32, got {text!r}")


def parse_block(text: str) -> tuple[int, int]:
    """'32x8' -> (32, 8)."""
    try:
        bx, by = text.lower().split("x")
        return int(bx), int(by)
    except ValueError:
        raise EngineError(f"block shape must look like 32x8, got {text!r}") from None


def block_given(spec, text: str | None) -> tuple[int, int] | None:
    """--block for kernel `spec`: its shape where the kernel takes one at launch (the naive kernels),
    None where none was given. Any other kernel's block follows from its parameters, and a --block
    given to one had been dropped without a word."""
    if not text:
        return None
    if not spec.block_shapes:
        raise EngineError(f"{spec.name}'s block follows from its parameters; --block sets the launch block of "
                          "the kernels that take one (the naive kernels)")
    return check_block(parse_block(text))


def make_inputs(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Random A and B in [0, 1) (never zeros: zeros hide unwritten outputs), the same on every backend."""
    rng = np.random.default_rng(problem.seed)
    a = rng.random((problem.m, problem.k), dtype=np.float32)
    b = rng.random((problem.k, problem.n), dtype=np.float32)
    return a, b
