"""Reads the contract a kernel's source declares (cuda/contract.cuh) and evaluates it in Python.

A source declares, in C++ that nvcc compiles standalone:
  #ifndef BM
  #define BM 64        // one of: 32 64 128 256
  #endif                                      a compile-time parameter, its default, what the pages offer
  #define THREADS (BM * BN / (TM * TN))       names for expressions (so does a file-scope
  constexpr int kThreads = ...;               `constexpr int`), usable in every line below
  REQUIRE(cond, "needs ...");                 a rule on the parameters (a static_assert)
  REQUIRE_SIZES(cond, "needs ...");           a rule on the sizes M, N, K too (checked per problem)
  LAUNCH_GRID(x, y);  LAUNCH_BLOCK(x, y);     launch geometry, over M, N, K and the parameters
  LAUNCH_SHARED(bytes);                       dynamic shared memory, where the kernel has any
  LAUNCH_TMA_BOX(A_map, cols, rows);          the box one TMA copy of that tensor map moves
  TRACE_RECORDS(n);                           at most this many records per thread (traced kernels)
BLOCK_X and BLOCK_Y name the launch block shape the user picks (Problem.block), for kernels whose
block is chosen at launch rather than at compile time.

Expressions are C integer expressions: integers, those names, + - * / % << >> & | ^ ~ !, comparisons,
&& || ?: and parentheses, CDIV/MIN/MAX and sizeof of an element type. They are parsed here and
evaluated with C's truncating division, never by Python's eval. A message may quote a value as
{expression}: "needs {SHARED / 1024} KB of shared memory" (nvcc prints the braces as written).

The catalog (engine/kernels/catalog.py) builds each entry's params, defaults, rules and launches from
here; spec_from_source makes a whole entry of a source outside the catalog the same way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engine.errors import EngineError
from engine.kernels import sources
from engine.kernels.cexpr import Env, Expr, evaluate, parse, quoted
from engine.kernels.contract import INPUT_TYPES, NAIVE_BLOCKS, KernelSpec, Kind, Launch, Precision, Rule
from engine.kernels.problem import Problem

# The names a size rule, a launch line and a trace bound may use beside the parameters.
SIZE_NAMES = ("M", "N", "K")
BLOCK_NAMES = ("BLOCK_X", "BLOCK_Y")


class ContractError(EngineError, ValueError):
    """A contract the engine cannot read, or a value it cannot compute: one line, naming the source line."""


# ---- the contract block --------------------------------------------------------------------------

@dataclass(frozen=True)
class Line:
    """Where a declaration is: for messages."""
    file: str
    number: int
    text: str

    def __str__(self) -> str:
        return f"{Path(self.file).name}:{self.number}"

    def error(self, why: str) -> ContractError:
        """why, at this line, quoting it (shortened): one line for a user who edits the source."""
        text = self.text if len(self.text) <= 80 else self.text[:77] + "..."
        return ContractError(f"{self}: {why} (in `{text}`)")


@dataclass(frozen=True)
class Requirement:
    expr: Expr
    message: str
    sizes: bool
    line: Line

    @property
    def says(self) -> str:
        """The rule as the catalog lists it: the message without the values it quotes (a part in
        parentheses that quotes one) and without what follows its first colon."""
        kept, depth, start = [], 0, 0
        for i, ch in enumerate(self.message):
            if ch == "(":
                if depth == 0:
                    kept.append(self.message[start:i])
                    start = i
                depth += 1
            elif ch == ")" and depth:
                depth -= 1
                if depth == 0:
                    part = self.message[start:i + 1]
                    kept.append("" if "{" in part else part)
                    start = i + 1
        text = "".join([*kept, self.message[start:]]).split(": ")[0]
        text = re.sub(r"(\w+)=\{\1\}", r"\1", text)        # "TILE={TILE}": TILE
        return " ".join(re.sub(r"\{([^{}]*)\}", r"\1", text).split())


_PARAM_RE = re.compile(r"#\s*ifndef\s+([A-Z][A-Z0-9_]*)\s*$")
_PARAM_DEFINE_RE = re.compile(r"#\s*define\s+([A-Z][A-Z0-9_]*)\s+(.+?)\s*(?://\s*one of:\s*([-\d\s,]+?)\s*)?(?://.*)?$")
_DEFINE_RE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)(?!\()\s+(.+?)\s*(?://.*)?$")
_CONSTEXPR_RE = re.compile(r"(?:static\s+)?constexpr\s+(?:unsigned\s+|long\s+|int\s+)+(.+);\s*(?://.*)?$")
_STATEMENT_RE = re.compile(r"(REQUIRE_SIZES|REQUIRE|LAUNCH_GRID|LAUNCH_BLOCK|LAUNCH_SHARED|LAUNCH_TMA_BOX|TRACE_RECORDS)"
                           r"\s*\((.*)\)\s*;?\s*(?://.*)?$", re.S)
_STATEMENT_START_RE = re.compile(r"(?:REQUIRE_SIZES|REQUIRE|LAUNCH_GRID|LAUNCH_BLOCK|LAUNCH_SHARED|LAUNCH_TMA_BOX|"
                                 r"TRACE_RECORDS)\s*\(")
_MESSAGE_RE = re.compile(r',\s*((?:"(?:[^"\\]|\\.)*"\s*)+)$', re.S)
_LOCAL_INCLUDE_RE = re.compile(r'#\s*include\s+"([^"]+)"')
_NOT_READ = ("trace.cuh", "contract.cuh", "cpu_shim.h", "cpu_entry.h")


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def _statements(path: Path, main: bool = True, seen: frozenset = frozenset()):
    """(line, text, from the main file) for each line at file scope, with local headers read in
    where they are included and a statement that spans lines joined onto its first."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        start, text = i + 1, lines[i]
        include = _LOCAL_INCLUDE_RE.match(text.strip())
        if include and include.group(1) not in _NOT_READ:
            found = next((d / include.group(1) for d in (path.parent, sources.CUDA_DIR)
                          if (d / include.group(1)).is_file()), None)
            if found and found not in seen:
                yield from _statements(found, False, seen | {found})
        stripped = text.strip()
        if _STATEMENT_START_RE.match(stripped) or stripped.startswith("constexpr"):
            # join until the parentheses balance and the statement ends
            while (text.count("(") > text.count(")") or stripped.startswith("constexpr") and ";" not in text) \
                    and i + 1 < len(lines):
                i += 1
                text += " " + lines[i].strip()
        i += 1
        if text[:1].isspace():   # indented: inside a function, not the file's contract
            continue
        yield Line(str(path), start, " ".join(text.split())), main


@dataclass(frozen=True, repr=False, eq=False)   # one per source (read() keeps it): hashed by identity
class Declared:
    """The contract of one source."""
    file: str
    params: dict[str, tuple[int, ...]]
    defaults: dict[str, int]
    derived: dict[str, tuple[Expr, Line]]
    requires: tuple[Requirement, ...]
    launch: dict[str, tuple[tuple[Expr, ...], Line]]   # GRID, BLOCK, SHARED, RECORDS, BOX <map>
    traced: bool

    def __repr__(self) -> str:   # a Launch's functions are its methods: keep their repr short
        return f"Declared({self.file!r})"

    # -- evaluation
    def _values(self, problem: Problem) -> dict[str, int]:
        return {**self.defaults, **{k: v for k, v in problem.params.items() if k in self.params},
                "M": problem.m, "N": problem.n, "K": problem.k, "BLOCK_X": problem.block[0], "BLOCK_Y": problem.block[1]}

    def _env(self, problem: Problem) -> Env:
        """The value of each name for a problem. The values are shared by every evaluation for that
        problem (_values_of keeps them); the names being computed are this call's own, so that two
        threads (two page sessions) asking at once never take each other's work for a cycle."""
        values = _values_of(self, problem)
        busy: set[str] = set()

        def env(name: str) -> int:
            if name in values:
                return values[name]
            expr, line = self.derived[name]   # names were checked when the source was read
            if name in busy:
                raise line.error(f"{name} is defined in terms of itself")
            busy.add(name)
            value = self._run(expr, env, line)
            values[name] = value   # the same value whichever thread writes it
            busy.discard(name)
            return value
        return env

    @staticmethod
    def _run(expr: Expr, env: Env, line: Line) -> int:
        try:
            return expr(env)
        except ZeroDivisionError:
            raise line.error("division by zero") from None
        except ValueError as exc:
            raise line.error(str(exc)) from None

    def named(self, name: str, problem: Problem | None = None) -> int:
        """A name the source defines (a #define or constexpr such as kBK), for a problem or at its defaults."""
        if name not in self.derived and name not in self.params:
            raise ContractError(f"{Path(self.file).name} defines no {name}")
        return self._env(problem or Problem(1, 1, 1, params=self.defaults))(name)

    def value(self, expr: Expr, problem: Problem, line: Line) -> int:
        return self._run(expr, self._env(problem), line)

    def _pair(self, what: str, problem: Problem) -> tuple[int, int]:
        (x, y), line = self.launch[what]
        env = self._env(problem)
        return (self._run(x, env, line), self._run(y, env, line))

    def grid(self, problem: Problem) -> tuple[int, int]:
        return self._pair("GRID", problem)

    def block(self, problem: Problem) -> tuple[int, int]:
        return self._pair("BLOCK", problem)

    def _one(self, what: str, problem: Problem) -> int:
        if what not in self.launch:
            return 0
        (expr,), line = self.launch[what]
        return self.value(expr, problem, line)

    def shared_bytes(self, problem: Problem) -> int:
        return self._one("SHARED", problem)

    def records_per_thread(self, problem: Problem) -> int:
        return self._one("RECORDS", problem)

    def tensor_maps(self, problem: Problem) -> dict[str, tuple[int, int]]:
        return {key.removeprefix("BOX ").removesuffix("_map"): self._pair(key, problem)
                for key in self.launch if key.startswith("BOX ")}

    def message(self, req: Requirement, problem: Problem) -> str:
        env = self._env(problem)
        return re.sub(r"\{([^{}]*)\}", lambda m: str(self._run(_parse_at(m.group(1), req.line), env, req.line)),
                      req.message)

    def rules(self) -> tuple[Rule, ...]:
        def check(req: Requirement):
            return lambda p: None if self.value(req.expr, p, req.line) else self.message(req, p)
        return tuple(Rule(r.says, check(r), sizes=r.sizes) for r in self.requires)

    def make_launch(self, **extra) -> Launch:
        return Launch(self.file, grid=self.grid, block=self.block, records_per_thread=self.records_per_thread,
                      shared_bytes=self.shared_bytes, tensor_maps=self.tensor_maps, **extra)

    @property
    def block_at_launch(self) -> bool:
        """Its block shape is the user's choice (BLOCK_X, BLOCK_Y), not a function of its parameters."""
        return any(set(BLOCK_NAMES) & self._reads(e) for exprs, _ in self.launch.values() for e in exprs)

    def _reads(self, expr: Expr, seen: frozenset = frozenset()) -> set[str]:
        """Every name an expression reads, through the names it is written in."""
        out = set(expr.names)
        for name in expr.names - seen:
            if name in self.derived:
                out |= self._reads(self.derived[name][0], seen | {name})
        return out


@lru_cache(maxsize=1024)
def _values_of(declared: Declared, problem: Problem) -> dict[str, int]:
    """One problem's values, kept: a request's rules and launch lines read the same derived names
    (kThreads, ...), and combinations() asks every rule of every choice."""
    return declared._values(problem)


def _parse_at(text: str, line: Line) -> Expr:
    try:
        return parse(text)
    except ValueError as exc:
        raise line.error(f"the engine cannot read `{quoted(text)}`: {exc}") from None


def _message(text: str) -> str:
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', text)).replace('\\"', '"')


@lru_cache(maxsize=512)   # bounded: a Playground edit is a new source
def read(file: str) -> Declared:
    """The contract of a source in cuda/ (or at a path), checked: a declaration the engine cannot
    read or compute, a name nothing defines, a parameter without a default or whose default breaks a
    REQUIRE, is refused here with its line, when the kernel is loaded."""
    src = sources.load(file)
    path = src.path
    params: dict[str, tuple[int, ...]] = {}
    defaults: dict[str, int] = {}
    derived: dict[str, tuple[Expr, Line]] = {}
    requires: list[Requirement] = []
    launch: dict[str, tuple[tuple[Expr, ...], Line]] = {}
    pending: Line | None = None   # a parameter's #ifndef, waiting for its #define
    for line, main in _statements(path):
        text = line.text
        if pending is not None:
            m = _PARAM_DEFINE_RE.fullmatch(text)
            name = _PARAM_RE.fullmatch(pending.text).group(1)
            if not m or m.group(1) != name:
                raise pending.error(f"the parameter {name} has no default (#define {name} <value> "
                                    "on the next line)")
            default = _default(m.group(2), pending)
            listed = re.search(r"//\s*one of:(.*?)(?://|$)", text)
            if listed and not m.group(3):   # `one of: 8 16 abc` had been read as no list: the default alone
                raise line.error(f"the values after 'one of:' must be whole numbers, like 'one of: 8 16 32', "
                                 f"got {listed.group(1).strip()!r}")
            allowed = tuple(int(v) for v in re.split(r"[\s,]+", m.group(3).strip())) if m.group(3) else (default,)
            if default not in allowed:
                raise line.error(f"the default {name}={default} is not one of {' '.join(map(str, allowed))}")
            params[name], defaults[name] = allowed, default
            pending = None
            continue
        if main and _PARAM_RE.fullmatch(text) and _PARAM_RE.fullmatch(text).group(1) not in params:
            pending = line
            continue
        if (m := _DEFINE_RE.fullmatch(text)) and m.group(1) not in params and m.group(1) not in derived:
            try:
                derived[m.group(1)] = (parse(m.group(2)), line)
            except ValueError:
                pass   # a macro that is not a number (a type, a code fragment): refused only if a contract line reads it
            continue
        if (m := _CONSTEXPR_RE.fullmatch(text)):
            for part in _split_top(m.group(1)):
                name, eq, expr = part.partition("=")
                name = name.strip().split()[-1] if name.strip() else ""
                if eq and re.fullmatch(r"[A-Za-z_]\w*", name):
                    try:
                        derived.setdefault(name, (parse(expr), line))
                    except ValueError:
                        pass
            continue
        if main and (m := _STATEMENT_RE.fullmatch(text)):
            _statement(m.group(1), m.group(2), line, requires, launch)
    if pending is not None:
        raise pending.error("the parameter has no default (#define on the next line)")
    declared = Declared(str(file), params, defaults, derived, tuple(requires), launch, src.traced)
    _check(declared, src)
    return declared


def _default(text: str, line: Line) -> int:
    try:
        return evaluate(text, {})
    except ValueError as exc:
        raise line.error(f"the default must be a number ({exc})") from None


def _statement(macro: str, body: str, line: Line, requires: list, launch: dict) -> None:
    if macro.startswith("REQUIRE"):
        m = _MESSAGE_RE.search(body)
        if not m:
            raise line.error(f"{macro} needs a condition and a message in quotes")
        message = _message(m.group(1))
        requires.append(Requirement(_parse_at(body[:m.start()], line), message, macro == "REQUIRE_SIZES", line))
        for quoted in re.findall(r"\{([^{}]*)\}", message):
            _parse_at(quoted, line)
        return
    args = _split_top(body)
    key, count = {"LAUNCH_GRID": ("GRID", 2), "LAUNCH_BLOCK": ("BLOCK", 2), "LAUNCH_SHARED": ("SHARED", 1),
                  "TRACE_RECORDS": ("RECORDS", 1), "LAUNCH_TMA_BOX": ("BOX", 3)}[macro]
    if len(args) != count:
        raise line.error(f"{macro} takes {count} argument{'s' * (count > 1)}, not {len(args)}")
    if key == "BOX":
        key, args = f"BOX {args[0].strip()}", args[1:]
    if key in launch:
        raise line.error(f"a second {macro} (the first is on line {launch[key][1].number})")
    launch[key] = (tuple(_parse_at(a, line) for a in args), line)


def _check(d: Declared, src: sources.KernelSource) -> None:
    where = Path(d.file).name
    for what, macro in (("GRID", "LAUNCH_GRID"), ("BLOCK", "LAUNCH_BLOCK")):
        if what not in d.launch:
            raise ContractError(f"{where} declares no {macro}(x, y): the engine cannot launch it")
    if d.traced and "RECORDS" not in d.launch:
        raise ContractError(f"{where} declares no TRACE_RECORDS(n): a traced kernel bounds the records a thread "
                            "makes, so that a trace too big is refused before it runs")
    known = set(d.params) | set(d.derived)
    everywhere = known | set(SIZE_NAMES) | set(BLOCK_NAMES)
    checks = [(r.expr, r.line, everywhere if r.sizes else known) for r in d.requires]
    checks += [(e, line, everywhere) for exprs, line in d.launch.values() for e in exprs]
    for expr, line, allowed in checks:
        for name in sorted(d._reads(expr)):
            if name not in allowed:
                if name in everywhere:
                    raise line.error(f"REQUIRE reads {name}, which is known only per problem: use "
                                        "REQUIRE_SIZES")
                raise line.error(f"{name} is not defined (not a parameter, #define or constexpr of "
                                    "the source)")
    probe = Problem(1024, 1024, 1024, block=(16, 16), params=d.defaults)
    for req in d.requires:
        if not req.sizes and not d.value(req.expr, probe, req.line):
            raise req.line.error(f"the defaults ({', '.join(f'{k}={v}' for k, v in d.defaults.items())}) "
                                f"break it: {d.message(req, probe)}")
    for exprs, line in d.launch.values():
        for e in exprs:
            d.value(e, probe, line)
    if src.dynamic and d.shared_bytes(probe) != src.dynamic_shared_bytes(d.defaults):
        raise ContractError(f"{where}: LAUNCH_SHARED gives {d.shared_bytes(probe)} bytes and its views of the "
                            f"dynamic shared memory need {src.dynamic_shared_bytes(d.defaults)}")


# ---- whole entries -------------------------------------------------------------------------------

def launch(file: str, **extra) -> Launch:
    """The Launch a source declares (extra: what is not the source's to say: prepares, arch)."""
    return read(file).make_launch(**extra)


def entry_fields(*launches: Launch) -> dict:
    """A KernelSpec's params, defaults and rules: its launches' declarations, in order."""
    params, defaults, rules = {}, {}, []
    for lc in launches:
        d = read(lc.file)
        params.update(d.params)
        defaults.update(d.defaults)
        rules += d.rules()
    return {"launches": tuple(launches), "params": params, "defaults": defaults, "rules": tuple(rules)}


def _header(text: str) -> tuple[str, str]:
    """(title, lesson) from a source's opening comment: `// name.cu (note): Title. Lesson ...`; the
    title is its first line up to a full stop, the lesson the first paragraph after the title."""
    rows = []
    for row in text.splitlines():
        if not row.startswith("//") or not row[2:].strip():
            break
        rows.append(row[2:].strip())
    paragraph = re.sub(r"^\S+\.cu\b[^:]*:\s*", "", " ".join(rows))
    title, _, lesson = paragraph.partition(". ")
    title = title.rstrip(".")
    return title[:1].upper() + title[1:], lesson.strip()


def spec_from_source(path: str | Path, name: str | None = None, **fields) -> KernelSpec:
    """A whole entry for a source outside the catalog (a test's kernel, a student's edited one): its
    kind (CUDA if it includes trace.cuh), parameters, rules and launch from its contract block, its
    input precision from what its A stores, its title and lesson from its header comment's first
    line (`// name.cu: title. lesson`). fields overrides any of them (shows, seeds, ...)."""
    file = str(Path(path).resolve()) if Path(path).is_file() else str(path)   # else a name in cuda/
    src = sources.load(file)
    d = read(file)
    title, lesson = _header(src.text)
    element = next((a.element for a in src.arrays if a.name == "A"), "float")
    inputs = next((p for p, types in INPUT_TYPES.items() if element in types), Precision.FP32)
    base = dict(name=name or src.name, title=title or src.name, seeds=(), lesson=lesson or title or src.name,
                kind=Kind.CUDA if src.traced else Kind.OPAQUE, inputs=inputs, compute=inputs,
                shows=frozenset({"coalescing", "benchmarks"} if src.traced else {"benchmarks"}),
                block_shapes=NAIVE_BLOCKS if d.block_at_launch else (),
                **entry_fields(d.make_launch()))
    return KernelSpec(**{**base, **fields})
