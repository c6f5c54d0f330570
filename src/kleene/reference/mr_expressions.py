"""Values of MATCH_RECOGNIZE expressions over a (partial) match, for the reference evaluator.

Written plainly from the standard's rules (spec note §2.3-§2.6), independent of
the engine: a :class:`Frame` is the match as far as it is visible (the rows
mapped so far with their labels, cut at ``limit`` for RUNNING semantics), and
:func:`evaluate` reads it.  A bare ``X.col`` is the column on the last row of
``X`` within the visible rows (so in DEFINE, with the current row tentatively
labelled, ``V.col`` and ``col`` read the current row); ``FIRST``/``LAST``
count rows of a variable; ``PREV``/``NEXT`` move over physical rows of the
partition; aggregates run over the visible rows of their variable; SQL's
three-valued logic throughout (NULL is ``None``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kleene.language.errors import DataError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.checks import referenced_variables

__all__ = ["Frame", "evaluate"]


@dataclass(frozen=True)
class Frame:
    """What an expression can see.

    ``rows`` are the partition's rows in ORDER BY order (dicts keyed by the
    input's column names); ``labels`` the match's (row index, variable) pairs in
    order; ``limit`` how many of them are visible (RUNNING: up to the current
    row; FINAL: all); ``variables`` maps a primary or SUBSET name to the primary
    variables it covers; ``column`` maps a column reference to the input column.
    """

    rows: Sequence[dict[str, Any]]
    labels: Sequence[tuple[int, str]]
    limit: int
    match_number: int | None
    variables: dict[str, frozenset[str]]
    column: Callable[[ast.Column], str]
    input_row: Callable[[int], int]

    def members(self, var: str | None) -> frozenset[str] | None:
        """The primary variables of ``var``; None for the universal variable."""
        return None if var is None else self.variables[var]

    def visible(self) -> Sequence[tuple[int, str]]:
        """The mapped rows this frame sees (FINAL frames have ``limit`` = all)."""
        return self.labels[: self.limit]

    def rows_of(self, var: str | None) -> list[int]:
        """The visible rows mapped to ``var`` (None: the universal variable), in order."""
        members = self.members(var)
        return [r for r, v in self.visible() if members is None or v in members]

    def label_of(self, row: int) -> str | None:
        for r, v in self.visible():
            if r == row:
                return v
        return None


def evaluate(e: ast.Expr, frame: Frame, at: int | None = None) -> Any:
    """The value of ``e``; ``at`` is the row that column references read inside a
    navigation or an aggregate (None: the last row of their variable)."""
    try:
        return _eval(e, frame, at)
    except (TypeError, ValueError, ArithmeticError) as err:
        current = frame.labels[frame.limit - 1][0] if frame.limit > 0 else None
        raise DataError(
            f"cannot evaluate the expression at line {e.span.line}, column {e.span.column}: {err}",
            row=None if current is None else frame.input_row(current),
        ) from None


def _var_of(e: ast.Expr) -> str | None:
    found = referenced_variables(e)
    return next(iter(found)) if found else None


def _eval(e: ast.Expr, f: Frame, at: int | None) -> Any:
    if isinstance(e, ast.Literal):
        return e.value
    if isinstance(e, ast.Column):
        row = at if at is not None else _last_row(f, e.var)
        return None if row is None else f.rows[row][f.column(e)]
    if isinstance(e, ast.Classifier):
        if at is not None:
            return f.label_of(at)
        row = _last_row(f, e.var)
        return None if row is None else f.label_of(row)
    if isinstance(e, ast.MatchNumber):
        return f.match_number
    if isinstance(e, ast.Nav):
        return _navigate(e, f)
    if isinstance(e, ast.Aggregate):
        return _aggregate(e, f)
    if isinstance(e, ast.BinOp):
        return _binop(e, f, at)
    if isinstance(e, ast.Not):
        v = _eval(e.operand, f, at)
        if v is None:
            return None
        return -v if e.negate else not v
    if isinstance(e, ast.IsNull):
        return (_eval(e.operand, f, at) is None) != e.negated
    if isinstance(e, ast.Between):
        v, lo, hi = (_eval(x, f, at) for x in (e.operand, e.low, e.high))
        result = _and(None if v is None or lo is None else v >= lo,
                      None if v is None or hi is None else v <= hi)
        return result if result is None or not e.negated else not result
    if isinstance(e, ast.InList):
        v = _eval(e.operand, f, at)
        items = [_eval(x, f, at) for x in e.items]
        if v is None:
            return None
        if any(i is not None and i == v for i in items):
            found: bool | None = True
        else:
            found = None if any(i is None for i in items) else False
        return found if found is None or not e.negated else not found
    if isinstance(e, ast.Case):
        for cond, value in e.whens:
            if _eval(cond, f, at) is True:
                return _eval(value, f, at)
        return None if e.default is None else _eval(e.default, f, at)
    if isinstance(e, ast.Func):
        return _function(e, [_eval(a, f, at) for a in e.args])
    raise AssertionError(f"unknown expression {e!r}")  # pragma: no cover


def _last_row(f: Frame, var: str | None) -> int | None:
    rows = f.rows_of(var)
    return rows[-1] if rows else None


def _logical_row(e: ast.Nav, f: Frame) -> tuple[int | None, Frame]:
    """The row ``FIRST/LAST(e.arg, k)`` lands on, and the frame (FINAL: the whole match)."""
    g = replace(f, limit=len(f.labels)) if e.semantics == "FINAL" else f
    rows = g.rows_of(_var_of(e.arg))
    index = e.steps if e.kind == "FIRST" else len(rows) - 1 - e.steps
    return (rows[index] if 0 <= index < len(rows) else None), g


def _navigate(e: ast.Nav, f: Frame) -> Any:
    if not e.physical:
        row, g = _logical_row(e, f)
        return None if row is None else _eval(e.arg, g, row)
    inner = e.arg
    if isinstance(inner, ast.Nav):  # PREV(LAST(A.x, 1), 3): the logical step first
        base, f = _logical_row(inner, f)
        inner = inner.arg
    else:  # the last row of the argument's variable (unqualified: the current row)
        base = _last_row(f, _var_of(inner))
    if base is None:
        return None
    target = base - e.steps if e.kind == "PREV" else base + e.steps
    if not 0 <= target < len(f.rows):
        return None
    # A physical step reads the target row as the match labelled it: in MEASURES the match is
    # complete, so NEXT(CLASSIFIER()) sees the next row's label even under RUNNING (Trino
    # testClassifierFunctionPastCurrentRow); in DEFINE no label exists past the current row.
    return _eval(inner, replace(f, limit=len(f.labels)), target)


def _aggregate(e: ast.Aggregate, f: Frame) -> Any:
    final = e.semantics == "FINAL"
    g = replace(f, limit=len(f.labels)) if final else f
    var = e.star_var if e.arg is None else _var_of(e.arg)
    rows = g.rows_of(var)
    if e.arg is None:
        return len(rows)
    values = [_eval(e.arg, g, r) for r in rows]
    if e.func == "ARRAY_AGG":
        return values if rows else None
    present = [v for v in values if v is not None]
    if e.func == "COUNT":
        return len(present)
    if not present:
        return None
    if e.func == "SUM":
        return sum(present)
    if e.func == "AVG":
        return sum(present) / len(present)
    return min(present) if e.func == "MIN" else max(present)


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    if a is None or b is None:
        return None
    return False


def _truth(v: Any) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    raise TypeError(f"AND/OR/NOT need booleans, not {v!r}")


def _binop(e: ast.BinOp, f: Frame, at: int | None) -> Any:
    left = _eval(e.left, f, at)
    if e.op in ("AND", "OR"):
        right = _eval(e.right, f, at)
        combine = _and if e.op == "AND" else _or
        return combine(_truth(left), _truth(right))
    right = _eval(e.right, f, at)
    if left is None or right is None:
        return None
    op = e.op
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op == "/":
        if isinstance(left, int) and isinstance(right, int):
            if right == 0:
                raise ZeroDivisionError("division by zero")
            q = abs(left) // abs(right)  # SQL integer division truncates toward zero
            return q if (left >= 0) == (right >= 0) else -q
        return left / right
    if op == "%":
        return _mod(left, right)
    if op == "=":
        return bool(left == right)
    if op == "<>":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _mod(a: Any, b: Any) -> Any:
    """SQL's MOD: the sign of the dividend (Python's % takes the divisor's)."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("MOD by zero")
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    return math.fmod(a, b)


def _function(e: ast.Func, args: list[Any]) -> Any:
    if e.name == "COALESCE":
        return next((a for a in args if a is not None), None)
    if any(a is None for a in args):
        return None
    if e.name == "ABS":
        return abs(args[0])
    if e.name == "MOD":
        return _mod(args[0], args[1])
    if e.name == "LOWER":
        return str(args[0]).lower()
    if e.name == "UPPER":
        return str(args[0]).upper()
    if e.name == "ROUND":
        digits = int(args[1]) if len(args) > 1 else 0
        scaled = args[0] * 10**digits
        rounded = math.floor(abs(scaled) + 0.5) * (1 if scaled >= 0 else -1)  # half away from 0
        return rounded / 10**digits if digits else int(rounded)
    raise AssertionError(f"unknown function {e.name}")  # pragma: no cover
