"""DEFINE conditions: which ones are physical, and their per-row truth, vectorised.

A condition is *physical* when it reads only the current row and its physical
neighbours: unqualified columns, columns of its own variable (or of a SUBSET
containing it, whose last row is the current row too), ``PREV``/``NEXT`` of
those; no aggregate, FIRST/LAST, CLASSIFIER or MATCH_NUMBER.  Its value for a
row does not depend on the path, so it is computed once per row, for all
partitions together, with ``pyarrow.compute`` (a shifted column is masked where
the neighbour lies in another partition), and the automaton runs over these
truth values.  A physical condition that Arrow cannot evaluate exactly as SQL
does here (``/``, ``MOD``, ``CASE``, mixed kinds, an overflow) is evaluated per
row in Python, lazily, so that a data error is raised only for a row the
search actually tries, as in the reference.  The other conditions read the
match so far and are evaluated per thread (:mod:`.threads`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kleene.language.match_recognize import ast
from kleene.language.match_recognize.checks import sub_expressions

__all__ = ["is_physical", "vectorised"]


def is_physical(condition: ast.Expr, var: str, variables: dict[str, frozenset[str]]) -> bool:
    """Whether ``condition`` (the DEFINE of ``var``) reads only physical rows."""
    own = {None, var} | {name for name, members in variables.items() if var in members}
    for x in sub_expressions(condition):
        if isinstance(x, ast.Aggregate | ast.Classifier | ast.MatchNumber):
            return False
        if isinstance(x, ast.Nav) and not x.physical:
            return False
        if isinstance(x, ast.Column) and x.var not in own:
            return False
    return True


class _NotVectorisable(Exception):
    """The condition needs Python's semantics (see the module docstring)."""


_NUMERIC, _STRING, _BOOL = "numeric", "string", "bool"


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return _NUMERIC
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _STRING
    if pa.types.is_boolean(t):
        return _BOOL
    return None


def vectorised(condition: ast.Expr, table: pa.Table, part: pa.Array,
               column: Callable[[ast.Column], str]) -> np.ndarray | None:
    """The truth of a physical ``condition`` on every row of ``table`` (partitions
    contiguous, ``part`` the partition id of each row), NULL counted as false; None when it
    must be evaluated in Python (then or on an Arrow error: overflow, mixed types)."""
    try:
        values, kind = _Vector(table, part, column).expr(condition, 0)
        if kind != _BOOL:
            return None
        if isinstance(values, pa.Scalar):
            truth = values.as_py() is True
            return np.full(table.num_rows, truth, dtype=bool)
        filled = pc.fill_null(values, False)
        return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=bool)
    except (_NotVectorisable, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


class _Vector:
    def __init__(self, table: pa.Table, part: pa.Array,
                 column: Callable[[ast.Column], str]) -> None:
        self.table = table
        self.part = part
        self.column = column
        self.n = table.num_rows

    def shifted(self, values: pa.Array, shift: int) -> pa.Array:
        """``values`` moved so that row i reads row i + shift (NULL across partitions)."""
        if shift == 0:
            return values
        k = abs(shift)
        if k >= self.n:
            return pa.nulls(self.n, values.type)
        pad = pa.nulls(k, values.type)
        if shift < 0:
            moved = pa.concat_arrays([pad, values.slice(0, self.n - k)])
            other = pa.concat_arrays([pa.nulls(k, self.part.type), self.part.slice(0, self.n - k)])
        else:
            moved = pa.concat_arrays([values.slice(k), pad])
            other = pa.concat_arrays([self.part.slice(k), pa.nulls(k, self.part.type)])
        same = pc.fill_null(pc.equal(other, self.part), False)
        return pc.if_else(same, moved, pa.nulls(self.n, values.type))

    def expr(self, e: ast.Expr, shift: int) -> tuple[Any, str]:  # noqa: C901 - one case per kind
        if isinstance(e, ast.Literal):
            v = e.value
            if isinstance(v, bool):
                return pa.scalar(v), _BOOL
            if isinstance(v, int | float):
                return pa.scalar(v), _NUMERIC
            if isinstance(v, str):
                return pa.scalar(v), _STRING
            raise _NotVectorisable  # NULL literals: let Python's rules decide
        if isinstance(e, ast.Column):
            values = self.table.column(self.column(e)).combine_chunks()
            kind = _kind(values.type)
            if kind is None:
                raise _NotVectorisable
            return self.shifted(values, shift), kind
        if isinstance(e, ast.Nav):  # physical (is_physical), never nested in another
            step = -e.steps if e.kind == "PREV" else e.steps
            return self.expr(e.arg, shift + step)
        if isinstance(e, ast.BinOp):
            left, lk = self.expr(e.left, shift)
            right, rk = self.expr(e.right, shift)
            if e.op in ("AND", "OR"):
                if lk != _BOOL or rk != _BOOL:
                    raise _NotVectorisable
                fn = pc.and_kleene if e.op == "AND" else pc.or_kleene
                return fn(left, right), _BOOL
            if lk != rk:
                raise _NotVectorisable
            if e.op in _ARITHMETIC:
                if lk != _NUMERIC:
                    raise _NotVectorisable
                return _ARITHMETIC[e.op](left, right), _NUMERIC
            if e.op in _COMPARISONS:
                return _COMPARISONS[e.op](left, right), _BOOL
            raise _NotVectorisable  # / and %: SQL's integer rules, in Python
        if isinstance(e, ast.Not):
            operand, kind = self.expr(e.operand, shift)
            if e.negate:
                if kind != _NUMERIC:
                    raise _NotVectorisable
                return pc.negate_checked(operand), _NUMERIC
            if kind != _BOOL:
                raise _NotVectorisable
            return pc.invert(operand), _BOOL
        if isinstance(e, ast.IsNull):
            operand, _ = self.expr(e.operand, shift)
            if isinstance(operand, pa.Scalar):
                raise _NotVectorisable
            nulls = pc.is_null(operand)
            return (pc.invert(nulls) if e.negated else nulls), _BOOL
        if isinstance(e, ast.Between):
            v, vk = self.expr(e.operand, shift)
            lo, lok = self.expr(e.low, shift)
            hi, hik = self.expr(e.high, shift)
            if not vk == lok == hik:
                raise _NotVectorisable
            inside = pc.and_kleene(pc.greater_equal(v, lo), pc.less_equal(v, hi))
            return (pc.invert(inside) if e.negated else inside), _BOOL
        if isinstance(e, ast.Func) and e.name == "ABS":
            operand, kind = self.expr(e.args[0], shift)
            if kind != _NUMERIC:
                raise _NotVectorisable
            return pc.abs_checked(operand), _NUMERIC
        raise _NotVectorisable


_ARITHMETIC = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}
_COMPARISONS = {"=": pc.equal, "<>": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
                ">": pc.greater, ">=": pc.greater_equal}
