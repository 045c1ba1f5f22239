"""rocprof-compute's metric expression language, evaluated without eval().

The analysis configs write each metric as a Python-like expression over counter names
(`SQ_LDS_BANK_CONFLICT`, per-instance `TCC_HIT[3]`), numbers, `$variables` (the machine's figures
from sysinfo.csv, and the tool's built-ins such as `$GRBM_GUI_ACTIVE_PER_XCD`), the aggregations
AVG/MIN/MAX/MEDIAN over dispatches, ROUND/TO_INT/MOD/CONCAT, `a if cond else b`, comparisons and
None. rocprof-compute turns it into pandas code and evals it (src/utils/parser.py); here the same
text is parsed by `ast.parse` into a tree and walked by a small interpreter that knows only those
node kinds: anything else is reported as "cannot evaluate", never run.

Values are scalars: a kernel's counters are the mean over its dispatches, so AVG/MIN/MAX/MEDIAN of
one value is that value. rocprof-compute averages the per-dispatch ratios instead; the two agree
for a kernel of one dispatch (its analyses are per dispatch or per kernel).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

VAR_PREFIX = "var__"  # `$name` is not Python; rocprof-compute swaps `$` for a prefix the same way

# rocprof-compute's built-in variables (src/utils/parser.py `build_in_vars` and `supported_denom`,
# the same commit as the metric data); $denom is per_kernel, the tool's default normalisation
BUILT_INS = {
    "GRBM_GUI_ACTIVE_PER_XCD": "(GRBM_GUI_ACTIVE / $num_xcd)",
    "GRBM_COUNT_PER_XCD": "(GRBM_COUNT / $num_xcd)",
    "GRBM_SPI_BUSY_PER_XCD": "(GRBM_SPI_BUSY / $num_xcd)",
    "numActiveCUs": "TO_INT(MIN((((ROUND(AVG(((4 * SQ_BUSY_CU_CYCLES) / $GRBM_GUI_ACTIVE_PER_XCD)), 0) / $max_waves_per_cu) * 8) + "
    "MIN(MOD(ROUND(AVG(((4 * SQ_BUSY_CU_CYCLES) / $GRBM_GUI_ACTIVE_PER_XCD)), 0), $max_waves_per_cu), 8)), $cu_per_gpu))",
    "kernelBusyCycles": "ROUND(AVG((((End_Timestamp - Start_Timestamp) / 1000) * $max_sclk)), 0)",
    "hbmBandwidth": "($max_mclk / 1000 * 32 * $num_hbm_channels)",
    "denom": "1",
}
NORM_UNIT = "per kernel"


class CannotEvaluate(Exception):
    """The expression uses something this interpreter does not know (a function, a syntax)."""


@dataclass
class Outcome:
    value: float | str | None
    missing_counters: list[str] = field(default_factory=list)
    missing_vars: list[str] = field(default_factory=list)
    error: str | None = None  # "cannot evaluate: ..."


# the syntax the vendor's expressions use; a tree holding anything else is refused before any value is read
ALLOWED_NODES = (
    ast.Expression,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Subscript,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.IfExp,
    ast.BoolOp,
    ast.Call,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
)


def parse(expr: str) -> ast.Expression:
    try:
        tree = ast.parse(re.sub(r"\$", VAR_PREFIX, expr), mode="eval")
    except SyntaxError as exc:
        raise CannotEvaluate(f"not an expression ({exc.msg})") from None
    for node in ast.walk(tree):
        if not isinstance(node, ALLOWED_NODES):
            raise CannotEvaluate(f"{type(node).__name__} is not in rocprof-compute's expression language")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords):
            name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)[:40]
            raise CannotEvaluate(f"function {name}() is not in rocprof-compute's set this reader knows")
    return tree


def inputs(expr: str) -> tuple[set[str], set[str]]:
    """The counters and the machine variables an expression reads, built-ins expanded."""
    counters: set[str] = set()
    variables: set[str] = set()
    _inputs(parse(expr), counters, variables, 0)
    return counters, variables


def _inputs(tree: ast.AST, counters: set[str], variables: set[str], depth: int) -> None:
    callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if id(node) in callees:
            continue
        if _instance(node):
            counters.add(_instance(node) or "")
        elif isinstance(node, ast.Name):
            if node.id.startswith(VAR_PREFIX):
                name = node.id[len(VAR_PREFIX) :]
                if name in BUILT_INS and depth < 4:
                    _inputs(parse(BUILT_INS[name]), counters, variables, depth + 1)
                else:
                    variables.add(name)
            elif not _is_indexed(tree, node):
                counters.add(node.id)


def _instance(node: ast.AST) -> str | None:
    """`TCC_HIT[3]`: one instance of a counter, named as the profiler's columns name it."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
        return f"{node.value.id}[{node.slice.value}]"
    return None


def _is_indexed(tree: ast.AST, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Subscript) and n.value is name for n in ast.walk(tree))


def _one_or_many(fn: Callable) -> Callable:
    def apply(*args):
        if any(a is None for a in args):
            return None
        return args[0] if len(args) == 1 else fn(*args)

    return apply


def _round(a, b=0):
    return None if a is None else round(a, int(b))


def _to_int(a):
    return None if a is None else int(a)


def _mod(a, b):
    return None if a is None or b is None or b == 0 else a % b


def _concat(a, b):
    return f"{a}{b}"


FUNCTIONS: dict[str, Callable] = {
    "AVG": _one_or_many(lambda *a: sum(a) / len(a)),
    "MEDIAN": _one_or_many(lambda *a: sorted(a)[len(a) // 2]),
    "MIN": _one_or_many(min),
    "MAX": _one_or_many(max),
    "ROUND": _round,
    "TO_INT": _to_int,
    "MOD": _mod,
    "CONCAT": _concat,
}
BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: None if b == 0 else a / b,
    ast.Mod: lambda a, b: None if b == 0 else a % b,
}
COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


class _Missing(Exception):
    pass


def evaluate(expr: str, counters: dict[str, float], variables: dict[str, float]) -> Outcome:
    """The value of `expr` for one kernel; None where the vendor's expression yields None (its
    `... if x != 0 else None`) or divides by zero. Missing inputs are named, all of them."""
    try:
        needed_counters, needed_vars = inputs(expr)
    except CannotEvaluate as exc:
        return Outcome(None, error=f"cannot evaluate: {exc}")
    missing = sorted(c for c in needed_counters if c not in counters)
    missing_vars = sorted(v for v in needed_vars if v not in variables)
    if missing or missing_vars:
        return Outcome(None, missing, missing_vars)
    try:
        value = _Interpreter(counters, variables).run(parse(expr).body)
    except CannotEvaluate as exc:
        return Outcome(None, error=f"cannot evaluate: {exc}")
    except (TypeError, ValueError, OverflowError) as exc:  # e.g. arithmetic on a CONCAT string
        return Outcome(None, error=f"cannot evaluate: {exc}")
    if isinstance(value, bool):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        value = None
    return Outcome(value)


class _Interpreter:
    def __init__(self, counters: dict[str, float], variables: dict[str, float]):
        self.counters, self.variables = counters, variables
        self.depth = 0

    def run(self, node: ast.AST):
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, (int, float, str)):
                return node.value
            raise CannotEvaluate(f"constant {node.value!r}")
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if _instance(node):
            return self.counters[_instance(node) or ""]
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
            a, b = self.run(node.left), self.run(node.right)
            return None if a is None or b is None else BINARY[type(node.op)](a, b)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            a = self.run(node.operand)
            return None if a is None else (-a if isinstance(node.op, ast.USub) else a)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE:
            a, b = self.run(node.left), self.run(node.comparators[0])
            return False if a is None or b is None else COMPARE[type(node.ops[0])](a, b)
        if isinstance(node, ast.IfExp):
            return self.run(node.body) if self.run(node.test) else self.run(node.orelse)
        if isinstance(node, ast.BoolOp):
            values = [self.run(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            fn = FUNCTIONS.get(node.func.id)
            if fn is None:
                raise CannotEvaluate(f"function {node.func.id}() is not in rocprof-compute's set this reader knows")
            return fn(*[self.run(a) for a in node.args])
        raise CannotEvaluate(f"{type(node).__name__} in {ast.unparse(node)[:80]}")

    def _name(self, name: str):
        if name.startswith(VAR_PREFIX):
            var = name[len(VAR_PREFIX) :]
            if var in BUILT_INS:
                self.depth += 1
                if self.depth > 8:
                    raise CannotEvaluate(f"${var} refers to itself")
                try:
                    return self.run(parse(BUILT_INS[var]).body)
                finally:
                    self.depth -= 1
            return self.variables[var]
        if name in self.counters:
            return self.counters[name]
        raise _Missing(name)  # inputs() named every counter first: not reached for a checked expression


def unit_text(unit: str) -> str:
    """`(Instr + $normUnit)` as rocprof-compute prints it under its default per-kernel normalisation."""
    return re.sub(r"\((\w*)\s+\+\s+\$normUnit\)", lambda m: f"{m.group(1)} {NORM_UNIT}".strip(), unit).replace("$normUnit", NORM_UNIT)
