"""rocprof-compute's metric expression language, evaluated without eval().

The analysis configs write each metric as a Python-like expression over counter names
(`SQ_LDS_BANK_CONFLICT`, per-instance `TCC_HIT[3]`), numbers, `$variables` (the machine's figures
from sysinfo.csv, and the tool's built-ins such as `$GRBM_GUI_ACTIVE_PER_XCD`), the aggregations
AVG/MIN/MAX/MEDIAN over dispatches, ROUND/TO_INT/MOD/CONCAT, `a if cond else b`, comparisons and
None. rocprof-compute turns it into pandas code and evals it (src/utils/parser.py); here the same
text is parsed by `ast.parse` into a tree and walked by a small interpreter that knows only those
node kinds: anything else is reported as "cannot evaluate", never run.

Values are what rocprof-compute computes with: a counter is its column over the dispatches (one
value per dispatch), the arithmetic is element-wise, `a if c else b` is `a.where(c, b)` (None: no
value for that dispatch), and AVG/MIN/MAX/MEDIAN reduce the column skipping the dispatches without
a value (pandas' mean, min, max, median). A ratio is thus the mean of the per-dispatch ratios, as
the vendor reports it. Given one number per counter (a mean), the same code gives that number.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

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
    direct, built_in, variables = _split_inputs(expr)
    return set(direct | built_in), set(variables)


# A vendor table's few hundred expressions are read for every kernel of every import: each is
# analysed once (a whole-folder import spent a third of its time here)
@lru_cache(maxsize=4096)
def _split_inputs(expr: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The counters the expression names itself, those its built-ins read, and the machine variables."""
    direct: set[str] = set()
    built_in: set[str] = set()
    variables: set[str] = set()
    _inputs(parse(expr), direct, built_in, variables, 0)
    return frozenset(direct), frozenset(built_in), frozenset(variables)


def _inputs(tree: ast.AST, direct: set[str], built_in: set[str], variables: set[str], depth: int) -> None:
    callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    indexed = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}  # `x[...]`: x is no counter
    counters = built_in if depth else direct
    for node in ast.walk(tree):
        if id(node) in callees:
            continue
        if _instance(node):
            counters.add(_instance(node) or "")
        elif isinstance(node, ast.Name):
            if node.id.startswith(VAR_PREFIX):
                name = node.id[len(VAR_PREFIX) :]
                if name in BUILT_INS and depth < 4:
                    _inputs(parse(BUILT_INS[name]), direct, built_in, variables, depth + 1)
                else:
                    variables.add(name)
            elif id(node) not in indexed:
                counters.add(node.id)


def _instance(node: ast.AST) -> str | None:
    """`TCC_HIT[3]`: one instance of a counter, named as the profiler's columns name it."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
        return f"{node.value.id}[{node.slice.value}]"
    return None


Value = Any  # a number (numpy float64), a column of numbers (one per dispatch), a bool or bool column, a label (CONCAT) or None


def _number(v: Value) -> Value:
    """Python numbers as numpy's, so that x/0 gives inf or nan as it does in rocprof-compute's pandas, never an exception."""
    if isinstance(v, bool | np.bool_):
        return v
    if isinstance(v, int | float):
        return np.float64(v)
    return v


def _column(v: Value) -> bool:
    return isinstance(v, np.ndarray) and v.ndim == 1


def _reduce(column_fn: Callable, one_fn: Callable | None = None) -> Callable:
    """AVG/MIN/MAX/MEDIAN: over a column, skipping the dispatches without a value (NaN) as pandas does;
    all without one (or none at all): no value. On a number: that number."""

    def apply(a):
        if a is None:
            return None
        if _column(a):
            finite = a[~np.isnan(a)]
            return np.float64(column_fn(finite)) if finite.size else np.float64("nan")
        return np.float64(a) if one_fn is None else one_fn(a)

    return apply


def _min_max(pick: Callable, elementwise: Callable) -> Callable:
    one = _reduce(lambda c: pick(c))

    def apply(*args):
        if len(args) == 1:
            return one(args[0])
        if any(a is None for a in args):
            return None  # rocprof-compute: min(None, x) raises TypeError, and the metric has no value
        if any(_column(a) for a in args):
            out = args[0]
            for a in args[1:]:
                out = elementwise(out, a)
            return out
        return pick(args)  # Python's min/max of numbers, as the vendor's to_min/to_max call them

    return apply


def _round(a, b=0):
    return None if a is None else np.round(a, int(b))


def _to_int(a):
    if a is None:
        return None
    if _column(a):
        # pandas' astype("Int64") refuses a fraction; rocprof-compute then gives no value
        return a if bool(np.all(np.isnan(a) | (a == np.trunc(a)))) else None
    return None if not np.isfinite(a) else np.float64(int(a))


def _mod(a, b):
    return None if a is None or b is None else np.mod(a, b)


def _concat(a, b):
    return f"{a}{b}"


FUNCTIONS: dict[str, Callable] = {
    "AVG": _reduce(np.mean),
    "MEDIAN": _reduce(np.median),
    "MIN": _min_max(min, np.minimum),
    "MAX": _min_max(max, np.maximum),
    "ROUND": _round,
    "TO_INT": _to_int,
    "MOD": _mod,
    "CONCAT": _concat,
}
BINARY = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.true_divide,
    ast.Mod: np.mod,
}
COMPARE = {
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
}


class _Missing(Exception):
    pass


def evaluate(expr: str, counters: Mapping[str, Any], variables: Mapping[str, float], base: Mapping[str, Any] | None = None) -> Outcome:
    """The value of `expr` for one kernel. `counters`: each counter's value per dispatch (an array)
    or one number; `base`: the columns the built-ins ($GRBM_GUI_ACTIVE_PER_XCD, $numActiveCUs) read,
    rocprof-compute's pmc_perf, when `counters` is another of its tables (a metric's coll_level);
    by default `counters`. None where the vendor's expression yields none (its `... if x != 0 else
    None` for every dispatch) or divides by zero. Missing inputs are named, all of them."""
    base = counters if base is None else base
    try:
        direct, built_in, needed_vars = _split_inputs(expr)
    except CannotEvaluate as exc:
        return Outcome(None, error=f"cannot evaluate: {exc}")
    missing = sorted({c for c in direct if c not in counters} | {c for c in built_in if c not in base})
    missing_vars = sorted(v for v in needed_vars if v not in variables)
    if missing or missing_vars:
        return Outcome(None, missing, missing_vars)
    try:
        with np.errstate(all="ignore"):
            value = _Interpreter(counters, variables, base).run(parse(expr).body)
    except CannotEvaluate as exc:
        return Outcome(None, error=f"cannot evaluate: {exc}")
    except (TypeError, ValueError, OverflowError) as exc:  # e.g. arithmetic on a CONCAT string
        return Outcome(None, error=f"cannot evaluate: {exc}")
    if isinstance(value, str) or value is None:
        return Outcome(value)
    array = np.asarray(value, dtype="float64")
    if array.size != 1:
        return Outcome(None, error=f"cannot evaluate: the expression gives one value per dispatch ({array.size}), not one figure")
    number = float(array.reshape(-1)[0])
    return Outcome(number if math.isfinite(number) else None)


class _Interpreter:
    def __init__(self, counters: Mapping[str, Any], variables: Mapping[str, float], base: Mapping[str, Any]):
        self.counters, self.variables, self.base = counters, variables, base
        self.depth = 0

    def _counter(self, name: str) -> Value:
        source = self.base if self.depth else self.counters  # inside a built-in: rocprof-compute's pmc_perf
        if name not in source:
            raise _Missing(name)  # inputs() named every counter first: not reached for a checked expression
        value = source[name]
        return np.asarray(value, dtype="float64") if isinstance(value, np.ndarray | list) else _number(value)

    def run(self, node: ast.AST) -> Value:
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, str):
                return node.value
            if isinstance(node.value, int | float):
                return _number(node.value)
            raise CannotEvaluate(f"constant {node.value!r}")
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if _instance(node):
            return self._counter(_instance(node) or "")
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
            a, b = self.run(node.left), self.run(node.right)
            return None if a is None or b is None else BINARY[type(node.op)](a, b)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            a = self.run(node.operand)
            return None if a is None else (np.negative(a) if isinstance(node.op, ast.USub) else a)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE:
            a, b = self.run(node.left), self.run(node.comparators[0])
            if a is None or b is None:  # pandas compares None as unequal to everything
                return isinstance(node.ops[0], ast.NotEq) and not (a is None and b is None)
            return COMPARE[type(node.ops[0])](a, b)
        if isinstance(node, ast.IfExp):
            return self._where(node)
        if isinstance(node, ast.BoolOp):
            values = [self.run(v) for v in node.values]
            combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            out = values[0]
            for v in values[1:]:
                out = combine(out, v)
            return out
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            fn = FUNCTIONS.get(node.func.id)
            if fn is None:
                raise CannotEvaluate(f"function {node.func.id}() is not in rocprof-compute's set this reader knows")
            return fn(*[self.run(a) for a in node.args])
        raise CannotEvaluate(f"{type(node).__name__} in {ast.unparse(node)[:80]}")

    def _where(self, node: ast.IfExp) -> Value:
        """`body if test else orelse` as rocprof-compute rewrites it: body.where(test, orelse), per dispatch."""
        test = self.run(node.test)
        if not _column(test):  # one condition for all: only the branch it picks is computed
            return self.run(node.body) if bool(test) else self.run(node.orelse)
        body, orelse = self.run(node.body), self.run(node.orelse)
        if isinstance(body, str) or isinstance(orelse, str):
            raise CannotEvaluate("a label in a per-dispatch condition")
        nan = np.float64("nan")
        return np.where(test, nan if body is None else body, nan if orelse is None else orelse).astype("float64")

    def _name(self, name: str) -> Value:
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
            return _number(self.variables[var])
        return self._counter(name)


def unit_text(unit: str) -> str:
    """`(Instr + $normUnit)` as rocprof-compute prints it under its default per-kernel normalisation."""
    return re.sub(r"\((\w*)\s+\+\s+\$normUnit\)", lambda m: f"{m.group(1)} {NORM_UNIT}".strip(), unit).replace("$normUnit", NORM_UNIT)
