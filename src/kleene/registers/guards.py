"""n-ary guards: a predicate over the current event and register contents, as a closure.

The SRT papers' condition ``φ(~, r1, ..., rk)`` (TR Def 10/13): ``~`` is the
event being read, ``ri`` the events stored in registers.  Here an event is a
dict of the attributes the query reads, and a guard is compiled once into
nested Python closures ``(event, registers) -> bool`` so that evaluating it
does not walk the AST.  Events are tuples of the attribute values the query
reads (in the order of ``attrs``): hashable, so that runs holding them can be
deduplicated, and read by index.

Semantics are those of every predicate in kleene (docs/semantics.md, and
:mod:`kleene.predicates`): a value is undefined when the attribute
is missing, null or NaN, on a division or modulo by zero, or on arithmetic
over a non-number; an atom reading an undefined value is false (also its
negated ``NOT IN`` forms); NOT/AND/OR are two-valued over atoms; numbers
compare exactly across int and float, booleans are not numbers, values of
different kinds are neither equal nor unequal.  ``LIKE`` is a full RE2 match.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kleene.language import ast

Event = tuple[Any, ...]
Registers = Sequence[Event | None]
Guard = Callable[[Event, Registers], bool]


class _Undefined(Exception):
    pass


_UNDEF = _Undefined()
_Value = Callable[[Event, Registers], Any]

_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt,
    ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
}


def _kind(v: Any) -> int:
    if isinstance(v, bool):
        return 2
    if isinstance(v, int | float):
        return 1
    return 3 if isinstance(v, str) else 0


def _read(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)) or _kind(v) == 0:
        raise _UNDEF
    return v


def _num(v: Any) -> int | float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _UNDEF
    return v


def _expr(
    e: ast.Expr, target: str, registers: Mapping[tuple[str, bool], int], attrs: Mapping[str, int]
) -> _Value:
    if isinstance(e, ast.Const):
        c = e.value
        return lambda ev, regs: c
    if isinstance(e, ast.Attr) or (isinstance(e, ast.VarAttr) and e.var == target and not e.prev):
        index = attrs[e.name]

        def attr(ev: Event, regs: Registers) -> Any:
            return _read(ev[index])

        return attr
    if isinstance(e, ast.VarAttr):
        slot, index = registers[(e.var, e.prev)], attrs[e.name]

        def reg_attr(ev: Event, regs: Registers) -> Any:
            stored = regs[slot]
            if stored is None:
                raise _UNDEF
            return _read(stored[index])

        return reg_attr
    if isinstance(e, ast.Neg):
        inner = _expr(e.operand, target, registers, attrs)
        return lambda ev, regs: -_num(inner(ev, regs))
    if isinstance(e, ast.BinOp):
        left, right = _expr(e.left, target, registers, attrs), _expr(e.right, target, registers, attrs)
        op = e.op
        if op in ("+", "-", "*"):
            f = {"+": operator.add, "-": operator.sub, "*": operator.mul}[op]
            return lambda ev, regs: f(_num(left(ev, regs)), _num(right(ev, regs)))
        g = operator.truediv if op == "/" else operator.mod

        def divide(ev: Event, regs: Registers) -> Any:
            a, b = _num(left(ev, regs)), _num(right(ev, regs))
            if b == 0:
                raise _UNDEF
            return g(a, b)

        return divide
    raise TypeError(f"not an expression: {e!r}")


def _compare(op: str, left: _Value, right: _Value) -> Guard:
    f = _CMP[op]

    def compare(ev: Event, regs: Registers) -> bool:
        try:
            a, b = left(ev, regs), right(ev, regs)
        except _Undefined:
            return False
        return _kind(a) == _kind(b) and bool(f(a, b))

    return compare


def compile_guard(
    pred: ast.Pred,
    target: str,
    registers: Mapping[tuple[str, bool], int],
    attrs: Mapping[str, int],
) -> Guard:
    """``pred`` on variable ``target`` as a closure.

    ``registers`` maps ``(var, prev)`` to a register slot, ``attrs`` an
    attribute name to its index in event tuples.
    """

    def ex(e: ast.Expr) -> _Value:
        return _expr(e, target, registers, attrs)

    def build(p: ast.Pred) -> Guard:
        if isinstance(p, ast.PAnd):
            a, b = build(p.left), build(p.right)
            return lambda ev, regs: a(ev, regs) and b(ev, regs)
        if isinstance(p, ast.POr):
            a, b = build(p.left), build(p.right)
            return lambda ev, regs: a(ev, regs) or b(ev, regs)
        if isinstance(p, ast.PNot):
            a = build(p.operand)
            return lambda ev, regs: not a(ev, regs)
        if isinstance(p, ast.Compare):
            return _compare(p.op, ex(p.left), ex(p.right))
        if isinstance(p, ast.Like):
            operand = ex(p.operand)
            import re2  # only for LIKE (start-up time of every other query)

            options = re2.Options()
            options.log_errors = False
            regex = re2.compile(p.pattern, options)

            def like(ev: Event, regs: Registers) -> bool:
                try:
                    s = operand(ev, regs)
                except _Undefined:
                    return False
                return isinstance(s, str) and regex.fullmatch(s) is not None

            return like
        if isinstance(p, ast.InSet):
            operand = ex(p.operand)
            values = [c.value for c in p.values]
            negated = p.negated

            def in_set(ev: Event, regs: Registers) -> bool:
                try:
                    v = operand(ev, regs)
                except _Undefined:
                    return False
                member = any(_kind(v) == _kind(c) and v == c for c in values)
                return member != negated

            return in_set
        if isinstance(p, ast.InRange):
            operand = ex(p.operand)
            low, high = ex(p.low), ex(p.high)
            negated_range = p.negated

            def in_range(ev: Event, regs: Registers) -> bool:
                try:
                    v, lo, hi = operand(ev, regs), low(ev, regs), high(ev, regs)
                except _Undefined:
                    return False
                if not (_kind(v) == _kind(lo) == _kind(hi)):
                    return False
                return bool(lo <= v <= hi) != negated_range

            return in_range
        raise TypeError(f"not a predicate: {p!r}")

    return build(pred)


Key = tuple[int, Any]
"""``(kind, value)`` of a defined value: values of different kinds never compare."""


def _key(v: Any) -> Key | None:
    """``(kind, v)``, None when ``v`` is undefined (the fast path of :func:`compile_key`)."""
    t = type(v)
    if t is float:
        return None if v != v else (1, v)
    if t is int:
        return (1, v)
    if t is str:
        return (3, v)
    if t is bool:
        return (2, v)
    try:
        return (_kind(_read(v)), v)
    except _Undefined:
        return None


def compile_key(
    e: ast.Expr, target: str, registers: Mapping[tuple[str, bool], int], attrs: Mapping[str, int]
) -> Callable[[Event, Registers], Key | None]:
    """``e`` as a closure giving ``(kind, value)``, or None where ``e`` is undefined.

    Two keys satisfy a comparison ``op`` exactly when a guard ``left op right``
    over the same values holds (same kind, then Python's exact comparison):
    the run index (kleene.registers.index) orders runs by such keys.
    """
    if isinstance(e, ast.Attr) or (isinstance(e, ast.VarAttr) and e.var == target and not e.prev):
        index = attrs[e.name]

        def event_key(ev: Event, regs: Registers) -> Key | None:
            return _key(ev[index])

        return event_key
    if isinstance(e, ast.VarAttr):
        slot, at = registers[(e.var, e.prev)], attrs[e.name]

        def register_key(ev: Event, regs: Registers) -> Key | None:
            stored = regs[slot]
            return None if stored is None else _key(stored[at])

        return register_key
    value = _expr(e, target, registers, attrs)

    def key(ev: Event, regs: Registers) -> Key | None:
        try:
            v = _read(value(ev, regs))
        except _Undefined:
            return None
        return (_kind(v), v)

    return key


def guard_columns(batch: Any, attributes: Sequence[str]) -> list[list[Any]]:
    """The values of each attribute the guards read, in the layout of their event tuples (an
    attribute the batch lacks reads as undefined: a guard on it is false)."""
    names = batch.schema.names
    n = batch.num_rows
    return [batch.column(a).to_pylist() if a in names else [None] * n for a in attributes]
