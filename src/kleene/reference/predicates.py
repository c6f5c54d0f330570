"""Reference evaluation of unary predicates on one event, in plain Python.

This module is the predicate half of the reference oracle
(:mod:`kleene.reference.oracle`).  It is deliberately naive: it walks the AST
for every event, so that its behaviour can be read off the code and used to
check the real engine's compiled predicates.

Conventions (decisions, documented so that the engine can match them):

* A value is *undefined* when an attribute is missing or ``None``, when
  ``/`` or ``%`` divides by zero, or when arithmetic is applied to something
  that is not a number.  An atom (comparison, ``LIKE``, ``IN``,
  ``IN RANGE``) that reads an undefined value is **false**, and so is its
  negated form (``NOT IN``, ``NOT IN RANGE``).  ``NOT``/``AND``/``OR`` are
  ordinary two-valued logic over atoms, so ``NOT (v / w > 1)`` holds when
  ``w = 0``.
* ``/`` is true division (always a float), ``%`` is Python's floored modulo.
* Numbers compare by value across int and float (``1 == 1.0``); booleans are
  not numbers here (``True`` is not ``1``); a comparison between values of
  different kinds (number vs string, ...) is false, also for ``!=``.
* ``LIKE`` is a full match of the regular expression (RE2 syntax when the
  ``re2`` module is installed, Python ``re`` otherwise).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from kleene.language import ast

try:  # google-re2 is a project dependency; fall back so the oracle never breaks.
    import re2 as _regex_module
except ImportError:  # pragma: no cover - depends on the environment
    import re as _regex_module

Value = int | float | str | bool

Others = Mapping[tuple[str, bool], Mapping[str, Any]]
"""The other events an n-ary predicate reads: ``(var, prev) -> event``.

``(a, False)`` is the event bound to ``a`` (``a.attr``), ``(x, True)`` the
event bound to ``x`` just before the current one (``prev(x).attr``).
"""


class Undefined(Exception):
    """Raised internally when an expression has no value on an event."""


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


def _kind(v: Value) -> str:
    """Kind used to decide whether two values are comparable at all."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    return "string"


def _number(v: Value) -> int | float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise Undefined(f"not a number: {v!r}")
    return v


def value(expr: ast.Expr, event: Mapping[str, Any], others: Others | None = None) -> Value:
    """The value of ``expr`` on ``event``; raises :class:`Undefined` if it has none.

    ``others`` gives the events that ``a.attr`` and ``prev(x).attr`` read; a
    reference to an event not given there has no value.
    """
    if isinstance(expr, ast.Const):
        return expr.value
    if isinstance(expr, ast.VarAttr):
        other = (others or {}).get((expr.var, expr.prev))
        if other is None:
            raise Undefined(f"no event for {expr.var!r}")
        return value(ast.Attr(expr.name), other)
    if isinstance(expr, ast.Attr):
        v = event.get(expr.name)
        if v is None:
            raise Undefined(f"attribute {expr.name!r} missing")
        if not isinstance(v, int | float | str | bool):
            raise Undefined(f"attribute {expr.name!r} has unsupported value {v!r}")
        if isinstance(v, float) and math.isnan(v):
            raise Undefined(f"attribute {expr.name!r} is NaN")
        return v
    if isinstance(expr, ast.Neg):
        return -_number(value(expr.operand, event, others))
    if isinstance(expr, ast.BinOp):
        left = _number(value(expr.left, event, others))
        right = _number(value(expr.right, event, others))
        if expr.op == "+":
            return left + right
        if expr.op == "-":
            return left - right
        if expr.op == "*":
            return left * right
        if right == 0:
            raise Undefined("division by zero")
        if expr.op == "/":
            return left / right
        return left % right
    raise TypeError(f"not an expression: {expr!r}")


def _equal(a: Value, b: Value) -> bool:
    return _kind(a) == _kind(b) and a == b


def _compare(op: str, a: Value, b: Value) -> bool:
    if _kind(a) != _kind(b):
        return False
    return _COMPARE[op](a, b)


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    return _regex_module.compile(pattern)


def _atom(pred: ast.Pred, event: Mapping[str, Any], others: Others | None) -> bool:
    if isinstance(pred, ast.Compare):
        return _compare(
            pred.op, value(pred.left, event, others), value(pred.right, event, others)
        )
    if isinstance(pred, ast.Like):
        s = value(pred.operand, event, others)
        if not isinstance(s, str):
            return False
        return _compiled(pred.pattern).fullmatch(s) is not None
    if isinstance(pred, ast.InSet):
        v = value(pred.operand, event, others)
        member = any(_equal(v, c.value) for c in pred.values)
        return member != pred.negated
    if isinstance(pred, ast.InRange):
        v = value(pred.operand, event, others)
        low = value(pred.low, event, others)
        high = value(pred.high, event, others)
        if not (_kind(v) == _kind(low) == _kind(high)):
            return False
        inside: bool = low <= v <= high  # type: ignore[operator]
        return inside != pred.negated
    raise TypeError(f"not a predicate: {pred!r}")


def holds(pred: ast.Pred, event: Mapping[str, Any], others: Others | None = None) -> bool:
    """Whether ``event`` satisfies ``pred`` (reading ``others`` for ``a.attr``, ``prev(x).attr``)."""
    if isinstance(pred, ast.PNot):
        return not holds(pred.operand, event, others)
    if isinstance(pred, ast.PAnd):
        return holds(pred.left, event, others) and holds(pred.right, event, others)
    if isinstance(pred, ast.POr):
        return holds(pred.left, event, others) or holds(pred.right, event, others)
    try:
        return _atom(pred, event, others)
    except Undefined:
        return False
