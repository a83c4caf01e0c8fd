"""C integer expressions, parsed and evaluated in Python without eval: what a kernel's contract block
(engine/kernels/declared.py) and its shared arrays' sizes (engine/kernels/sources.py) are written in.

Integers, names, + - * / % << >> & | ^ ~ !, comparisons, && || ?: and parentheses, CDIV/MIN/MAX (as
cuda/contract.cuh defines them) and sizeof of an element type; C's precedence, truncating division
and remainder, 0/1 for comparisons, && and || that skip their right side. A division by zero raises
ZeroDivisionError, a name the caller does not know whatever the caller's lookup raises.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

# The element types sizeof knows, with their size in bytes (sources.ELEMENT_TYPES: the types a traced
# array may have).
ELEMENT_SIZES = {"float": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "double": 8, "__half": 2, "half": 2,
                 "__nv_bfloat16": 2, "nv_bfloat16": 2}

_TOKEN_RE = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_]\w*)|"
                       r"(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^!~?:(),]))")
# Binary operators by C precedence, loosest first (?: is looser still, and handled on its own).
_LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"),
           ("+", "-"), ("*", "/", "%"))
_FUNCTIONS = {"CDIV": 2, "MIN": 2, "MAX": 2}

Env = Callable[[str], int]   # a name's value


def _tokens(text: str) -> list[tuple[str, str]]:
    out, at = [], 0
    text = text.rstrip()
    while at < len(text):
        m = _TOKEN_RE.match(text, at)
        if not m or m.end() == at:
            raise ValueError(f"cannot read {text[at:].strip()[:20]!r}")
        number, name, op = m.groups()
        out.append(("num", number) if number else ("name", name) if name else ("op", op))
        at = m.end()
    return out


def _div(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _mod(a: int, b: int) -> int:
    return a - b * _div(a, b)


# C's integers end at 64 bits, and so do these: a Playground contract is evaluated in the server, where
# Python's integers would grow without bound (1 << 16000000000 took 2 GB and 5 s there).
_BITS = 64


def _fit(value: int) -> int:
    if not -(1 << (_BITS - 1)) <= value < 1 << _BITS:
        raise ValueError(f"a value past {_BITS} bits, where C's integers end")
    return value


def _shift(a: int, b: int, left: bool) -> int:
    if not 0 <= b < _BITS:
        raise ValueError(f"a shift by {b} (C shifts a {_BITS}-bit integer by 0 to {_BITS - 1})")
    return _fit(a << b) if left else a >> b


_BINARY = {
    "*": lambda a, b: _fit(a * b), "/": _div, "%": _mod, "+": lambda a, b: _fit(a + b), "-": lambda a, b: _fit(a - b),
    "<<": lambda a, b: _shift(a, b, True), ">>": lambda a, b: _shift(a, b, False),
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "&": lambda a, b: _fit(a & b), "^": lambda a, b: _fit(a ^ b), "|": lambda a, b: _fit(a | b),
}
_UNARY = {"-": lambda a: _fit(-a), "+": lambda a: a, "!": lambda a: int(not a), "~": lambda a: _fit(~a)}
_TOO_DEEP = "it is nested too deeply to read"   # past Python's recursion limit, in parsing or evaluating


def _cdiv(a: int, b: int) -> int:
    """((a) + (b) - 1) / (b), as contract.cuh defines CDIV, with b computed once by the caller: twice,
    CDIV(1, CDIV(1, ...)) 60 deep (541 bytes of a student's contract) took 2^60 evaluations."""
    return _div(_fit(a + b - 1), b)


def quoted(text: str, most: int = 60) -> str:
    """An expression as a message quotes it: cut where long, so the reason after it stays on the line."""
    text = text.strip()
    return text if len(text) <= most else text[:most - 3] + "..."


@dataclass(frozen=True)
class Expr:
    """A parsed C expression: its text, the names it reads, and a function of their values."""
    text: str
    names: frozenset[str]
    run: Callable[[Env], int]

    def __call__(self, env: Env) -> int:
        try:
            return self.run(env)
        except RecursionError:   # a chain of thousands of operators, or of names defined by names
            raise ValueError(_TOO_DEEP) from None


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.at = 0
        self.names: set[str] = set()

    def peek(self) -> str | None:
        return self.toks[self.at][1] if self.at < len(self.toks) else None

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.toks):
            raise ValueError("the expression ends too early")
        tok = self.toks[self.at]
        if want is not None and tok[1] != want:
            raise ValueError(f"expected {want!r}, found {tok[1]!r}")
        self.at += 1
        return tok

    def whole(self):
        fn = self.conditional()
        if self.at != len(self.toks):
            raise ValueError(f"unexpected {self.toks[self.at][1]!r}")
        return fn

    def conditional(self):
        cond = self.binary(0)
        if self.peek() != "?":
            return cond
        self.take("?")
        yes = self.conditional()
        self.take(":")
        no = self.conditional()
        return lambda env: yes(env) if cond(env) else no(env)

    def binary(self, level: int):
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in _LEVELS[level] and self.toks[self.at][0] == "op":
            op = self.take()[1]
            right = self.binary(level + 1)
            left = self._combine(op, left, right)
        return left

    @staticmethod
    def _combine(op, left, right):
        if op == "&&":
            return lambda env: int(bool(left(env)) and bool(right(env)))
        if op == "||":
            return lambda env: int(bool(left(env)) or bool(right(env)))
        f = _BINARY[op]
        return lambda env: f(left(env), right(env))

    def unary(self):
        if self.peek() in _UNARY and self.toks[self.at][0] == "op":
            f = _UNARY[self.take()[1]]
            arg = self.unary()
            return lambda env: f(arg(env))
        return self.primary()

    def primary(self):
        kind, text = self.take()
        if kind == "num":
            if len(text) > 20:   # past 64 bits whatever its base; int() would refuse 4,300 digits in its own words
                raise ValueError(f"a value past {_BITS} bits, where C's integers end")
            value = _fit(int(text, 0))
            return lambda env: value
        if text == "(":
            inner = self.conditional()
            self.take(")")
            return inner
        if kind != "name":
            raise ValueError(f"unexpected {text!r}")
        if text == "sizeof":
            self.take("(")
            words = []
            while self.peek() not in (")", None):
                words.append(self.take()[1])
            self.take(")")
            ctype = " ".join(words)
            if ctype not in ELEMENT_SIZES:
                raise ValueError(f"sizeof({ctype}) is not of an element type ({', '.join(ELEMENT_SIZES)})")
            size = ELEMENT_SIZES[ctype]
            return lambda env: size
        if text in _FUNCTIONS:
            self.take("(")
            args = [self.conditional()]
            while self.peek() == ",":
                self.take(",")
                args.append(self.conditional())
            self.take(")")
            if len(args) != _FUNCTIONS[text]:
                raise ValueError(f"{text} takes {_FUNCTIONS[text]} arguments, not {len(args)}")
            a, b = args
            if text == "CDIV":
                return lambda env: _cdiv(a(env), b(env))
            pick = min if text == "MIN" else max
            return lambda env: pick(a(env), b(env))
        if self.peek() == "(":
            raise ValueError(f"{text}(...) is not a function the engine knows (CDIV, MIN, MAX, sizeof)")
        self.names.add(text)
        return lambda env: env(text)


@lru_cache(maxsize=4096)
def parse(text: str) -> Expr:
    """A C integer expression; ValueError saying what is wrong with it."""
    p = _Parser(text)
    if not p.toks:
        raise ValueError("the expression is empty")
    try:
        run = p.whole()   # first: parsing is what collects the names
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None
    return Expr(text.strip(), frozenset(p.names), run)


def evaluate(text: str, values: Mapping[str, int]) -> int:
    """One expression over named values; ValueError for a name it lacks or a division by zero."""
    expr = parse(text)

    def env(name: str) -> int:
        if name not in values:
            raise ValueError(f"{name} is not defined")
        return values[name]
    try:
        return expr(env)
    except ZeroDivisionError:
        raise ValueError(f"division by zero in {expr.text}") from None
