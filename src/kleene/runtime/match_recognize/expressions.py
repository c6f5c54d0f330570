"""MEASURES and DEFINE expressions compiled to Python closures over a match summary.

``compile_expr(e, layout, column)`` returns ``f(ctx, at)``: ``ctx`` is a
:class:`Context` (the partition's columns, the running summary, the FINAL
context, the match number, the labels), ``at`` the row a column reference reads
inside a navigation or an aggregate (None: the last row of its variable, from
the summary).  SQL's rules: three-valued logic, NULL in gives NULL out, integer
``/`` truncates toward zero, ``MOD`` takes the dividend's sign, ``ROUND``
rounds half away from zero.  Errors of the data (``1 + 'x'``) surface as
Python exceptions that the caller turns into a ``DataError`` naming the row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from kleene.language.match_recognize import ast
from kleene.runtime.match_recognize.summary import Layout, Summary, var_of

__all__ = ["Compiled", "Context", "compile_expr"]

Compiled = Callable[["Context", int | None], Any]


class Context:
    """What an expression reads: ``cols`` (column name -> the partition's values), ``n``
    rows, ``s`` the running summary, ``final`` the context of the whole match (FINAL),
    ``number`` the MATCH_NUMBER, ``labels`` a function from a row to its label (None when
    the row is not visible)."""

    __slots__ = ("cols", "final", "labels", "layout", "limit", "n", "number", "s")

    def __init__(self, cols: dict[str, Sequence[Any]], n: int, layout: Layout, s: Summary,
                 number: int | None, labels: Callable[[int], str | None]) -> None:
        self.cols = cols
        self.n = n
        self.layout = layout
        self.s = s
        self.number = number
        self.labels = labels
        self.final: Context = self
        self.limit: list[int] = [0]  # how many rows of the match are visible (output)

    def last(self, set_index: int, k: int = 0) -> int | None:
        window = self.s[2][set_index]
        return window[-1 - k][0] if k < len(window) else None

    def first(self, set_index: int, k: int) -> int | None:
        window = self.s[1][set_index]
        return window[k][0] if k < len(window) else None


def compile_expr(e: ast.Expr, layout: Layout, column: Callable[[ast.Column], str]) -> Compiled:
    """``e`` as a closure; ``layout`` must have been given ``e`` (``Layout.add``)."""
    return _Compiler(layout, column).expr(e)


class _Compiler:
    def __init__(self, layout: Layout, column: Callable[[ast.Column], str]) -> None:
        self.layout = layout
        self.column = column

    def expr(self, e: ast.Expr) -> Compiled:  # noqa: C901 - one case per node kind
        if isinstance(e, ast.Literal):
            value = e.value
            return lambda ctx, at: value
        if isinstance(e, ast.Column):
            name = self.column(e)
            si = self.layout.set_index(e.var)

            def column(ctx: Context, at: int | None) -> Any:
                row = at if at is not None else ctx.last(si)
                return None if row is None else ctx.cols[name][row]
            return column
        if isinstance(e, ast.Classifier):
            si = self.layout.set_index(e.var)

            def classifier(ctx: Context, at: int | None) -> Any:
                if at is not None:
                    return ctx.labels(at)
                window = ctx.s[2][si]
                return window[-1][1] if window else None
            return classifier
        if isinstance(e, ast.MatchNumber):
            return lambda ctx, at: ctx.number
        if isinstance(e, ast.Nav):
            return self.nav(e)
        if isinstance(e, ast.Aggregate):
            return self.aggregate(e)
        if isinstance(e, ast.BinOp):
            return self.binop(e)
        if isinstance(e, ast.Not):
            operand = self.expr(e.operand)
            if e.negate:
                return lambda ctx, at: _neg(operand(ctx, at))
            return lambda ctx, at: _not(operand(ctx, at))
        if isinstance(e, ast.IsNull):
            operand, negated = self.expr(e.operand), e.negated
            return lambda ctx, at: (operand(ctx, at) is None) != negated
        if isinstance(e, ast.Between):
            return self.between(e)
        if isinstance(e, ast.InList):
            return self.in_list(e)
        if isinstance(e, ast.Case):
            return self.case(e)
        if isinstance(e, ast.Func):
            args = [self.expr(a) for a in e.args]
            fn = _FUNCTIONS[e.name]
            return lambda ctx, at: fn([a(ctx, at) for a in args])
        raise AssertionError(f"unknown expression {e!r}")  # pragma: no cover

    def logical(self, e: ast.Nav) -> Callable[[Context], tuple[int | None, Context]]:
        si = self.layout.set_index(var_of(e.arg))
        final, k, first = e.semantics == "FINAL", e.steps, e.kind == "FIRST"

        def row(ctx: Context) -> tuple[int | None, Context]:
            c = ctx.final if final else ctx
            return (c.first(si, k) if first else c.last(si, k)), c
        return row

    def nav(self, e: ast.Nav) -> Compiled:
        if not e.physical:
            where = self.logical(e)
            arg = self.expr(e.arg)

            def logical(ctx: Context, at: int | None) -> Any:
                row, c = where(ctx)
                return None if row is None else arg(c, row)
            return logical
        inner = e.arg
        step = -e.steps if e.kind == "PREV" else e.steps
        if isinstance(inner, ast.Nav):
            where = self.logical(inner)
            arg = self.expr(inner.arg)

            def nested(ctx: Context, at: int | None) -> Any:
                base, c = where(ctx)
                if base is None:
                    return None
                target = base + step
                return arg(c.final, target) if 0 <= target < c.n else None
            return nested
        si = self.layout.set_index(var_of(inner))
        arg = self.expr(inner)

        def physical(ctx: Context, at: int | None) -> Any:
            base = ctx.last(si)
            if base is None:
                return None
            target = base + step
            # the target row as the match labelled it: in MEASURES the whole match (so
            # NEXT(CLASSIFIER()) sees the next row's label under RUNNING too, as Trino); in
            # DEFINE no label exists past the current row anyway (ctx.final is ctx there)
            return arg(ctx.final, target) if 0 <= target < ctx.n else None
        return physical

    def aggregate(self, e: ast.Aggregate) -> Compiled:
        index = self.layout.agg_index[id(e)]
        spec = self.layout.aggregates[index]
        if e.arg is not None and spec.arg is None:
            spec.arg = self.expr(e.arg)
        final, layout = e.semantics == "FINAL", self.layout
        return lambda ctx, at: layout.value((ctx.final if final else ctx).s, index)

    def binop(self, e: ast.BinOp) -> Compiled:
        left, right = self.expr(e.left), self.expr(e.right)
        if e.op == "AND":
            return lambda ctx, at: _and(_truth(left(ctx, at)), _truth(right(ctx, at)))
        if e.op == "OR":
            return lambda ctx, at: _or(_truth(left(ctx, at)), _truth(right(ctx, at)))
        op = _OPERATORS[e.op]

        def binop(ctx: Context, at: int | None) -> Any:
            a = left(ctx, at)
            b = right(ctx, at)
            return None if a is None or b is None else op(a, b)
        return binop

    def between(self, e: ast.Between) -> Compiled:
        v_, lo_, hi_, negated = self.expr(e.operand), self.expr(e.low), self.expr(e.high), e.negated

        def between(ctx: Context, at: int | None) -> Any:
            v, lo, hi = v_(ctx, at), lo_(ctx, at), hi_(ctx, at)
            result = _and(None if v is None or lo is None else v >= lo,
                          None if v is None or hi is None else v <= hi)
            return result if result is None or not negated else not result
        return between

    def in_list(self, e: ast.InList) -> Compiled:
        v_, items_, negated = self.expr(e.operand), [self.expr(x) for x in e.items], e.negated

        def in_list(ctx: Context, at: int | None) -> Any:
            v = v_(ctx, at)
            items = [i(ctx, at) for i in items_]
            if v is None:
                return None
            if any(i is not None and i == v for i in items):
                found: bool | None = True
            else:
                found = None if any(i is None for i in items) else False
            return found if found is None or not negated else not found
        return in_list

    def case(self, e: ast.Case) -> Compiled:
        whens = [(self.expr(c), self.expr(v)) for c, v in e.whens]
        default = None if e.default is None else self.expr(e.default)

        def case(ctx: Context, at: int | None) -> Any:
            for cond, value in whens:
                if cond(ctx, at) is True:
                    return value(ctx, at)
            return None if default is None else default(ctx, at)
        return case


def _neg(v: Any) -> Any:
    return None if v is None else -v


def _not(v: Any) -> Any:
    return None if v is None else not v


def _truth(v: Any) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    raise TypeError(f"AND/OR/NOT need booleans, not {v!r}")


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _divide(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("division by zero")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def sql_mod(a: Any, b: Any) -> Any:
    """MOD with the dividend's sign."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("MOD by zero")
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    return math.fmod(a, b)


_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _divide,
    "%": sql_mod,
    "=": lambda a, b: bool(a == b),
    "<>": lambda a, b: bool(a != b),
    "<": lambda a, b: bool(a < b),
    "<=": lambda a, b: bool(a <= b),
    ">": lambda a, b: bool(a > b),
    ">=": lambda a, b: bool(a >= b),
}


def _round(args: list[Any]) -> Any:
    if any(a is None for a in args):
        return None
    digits = int(args[1]) if len(args) > 1 else 0
    scaled = args[0] * 10**digits
    rounded = math.floor(abs(scaled) + 0.5) * (1 if scaled >= 0 else -1)
    return rounded / 10**digits if digits else int(rounded)


def _strict(fn: Callable[..., Any]) -> Callable[[list[Any]], Any]:
    return lambda args: None if any(a is None for a in args) else fn(*args)


_FUNCTIONS: dict[str, Callable[[list[Any]], Any]] = {
    "COALESCE": lambda args: next((a for a in args if a is not None), None),
    "ABS": _strict(abs),
    "MOD": _strict(sql_mod),
    "LOWER": _strict(lambda s: str(s).lower()),
    "UPPER": _strict(lambda s: str(s).upper()),
    "ROUND": _round,
}
