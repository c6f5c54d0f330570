"""Arithmetic (``+ - * / %``, unary ``-``) on runtime values, exact as Python's.

Whole columns go through numpy in int64 or float64; only exceptional rows
(int64 overflow, integers beyond 2**53 in a true division, Python ints beyond
int64) are recomputed exactly in Python.  The semantics are listed in
:mod:`kleene.predicates.table`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from kleene.predicates.values import (
    INT64_MIN,
    NULL_SCALAR,
    NUMS,
    RKind,
    Vec,
    and_valid,
    fits,
    invalidate,
    null,
    row_valid,
    scalar,
)

_EXACT_FLOAT_INT = 2**53
"""Integers of at most this magnitude convert to float64 without rounding."""
_LONG_DOUBLE_EXACT = np.finfo(np.longdouble).nmant >= 63
"""Whether long double holds every int64 exactly (x86-64 Linux: yes)."""

_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "%": operator.mod,
}


def _py_value(op: str, a: Any, b: Any) -> Any:
    """One row's arithmetic in plain Python; None when undefined."""
    try:
        r = _ARITH[op](a, b)
    except (ZeroDivisionError, OverflowError):
        return None
    if isinstance(r, float) and r != r:
        return None
    return r


def _rowwise(op: str, a: Vec, b: Vec, n: int, result: RKind) -> Vec:
    """Exact arithmetic row by row: only for Python ints beyond int64."""
    xs = [a.data] * n if a.scalar else a.data.tolist()
    ys = [b.data] * n if b.scalar else b.data.tolist()
    valid = and_valid(row_valid(a), row_valid(b))
    ok = np.ones(n, bool) if valid is None else valid.copy()
    out: list[Any] = [0] * n
    for i in np.flatnonzero(ok):
        r = _py_value(op, xs[i], ys[i])
        if r is None:
            ok[i] = False
        else:
            out[i] = r
    if result == "float":
        return Vec("float", np.array(out, dtype=np.float64), None if ok.all() else ok)
    return Vec("int", _narrow(np.array(out, dtype=object)), None if ok.all() else ok)


def _narrow(obj: np.ndarray) -> np.ndarray:
    """Back to int64 when every Python int fits again (keeps later ops fast)."""
    try:
        return obj.astype(np.int64)
    except OverflowError:
        return obj


def _as_float(v: Vec) -> Any:
    if v.scalar:
        return float(v.data)
    return v.data.astype(np.float64) if v.kind == "int" else v.data


def arith(op: str, a: Vec, b: Vec, n: int) -> Vec:
    if a.kind not in NUMS or b.kind not in NUMS:
        return NULL_SCALAR if a.scalar and b.scalar else null(n)
    if a.scalar and b.scalar:
        return scalar(_py_value(op, a.data, b.data))
    result: RKind = "int" if a.kind == b.kind == "int" and op != "/" else "float"
    big = [
        v for v in (a, b) if v.is_object() or (v.scalar and v.kind == "int" and not fits(v.data))
    ]
    if big:
        return _rowwise(op, a, b, n, result)
    valid = and_valid(row_valid(a), row_valid(b))
    if op in ("/", "%"):
        if b.scalar:
            if b.data == 0:
                return null(n)
        else:
            valid = invalidate(valid, b.data == 0)
    with np.errstate(all="ignore"):
        if result == "int":
            return _int_arith(op, a, b, n, valid)
        r = _ARITH[op](_as_float(a), _as_float(b))
        if op == "/" and a.kind == b.kind == "int":
            r = _fix_int_division(a, b, r, n)
    r = np.broadcast_to(r, (n,))
    return Vec("float", r, invalidate(valid, np.isnan(r)))


def _int_arith(op: str, a: Vec, b: Vec, n: int, valid: np.ndarray | None) -> Vec:
    """int64 arithmetic; rows that overflow are recomputed exactly in Python."""
    x = np.int64(a.data) if a.scalar else a.data
    y = np.int64(b.data) if b.scalar else b.data
    if op == "%":
        if not b.scalar:
            y = np.where(y == 0, 1, y)  # those rows are already invalid
        return Vec("int", np.broadcast_to(np.remainder(x, y), (n,)), valid)
    r = _ARITH[op](x, y)
    if op == "+":
        over = ((x ^ r) & (y ^ r)) < 0
    elif op == "-":
        over = ((x ^ y) & (x ^ r)) < 0
    else:
        approx = np.abs(np.multiply(np.float64(x) if a.scalar else x.astype(np.float64), y))
        over = approx >= 2.0**62  # suspects; confirmed exactly below
    r, over = np.broadcast_to(r, (n,)), np.broadcast_to(over, (n,))
    if valid is not None:
        over = over & valid
    if not over.any():
        return Vec("int", r, valid)
    xs, ys = np.broadcast_to(x, (n,)), np.broadcast_to(y, (n,))
    exact = r.astype(object)
    for i in np.flatnonzero(over):
        exact[i] = _ARITH[op](int(xs[i]), int(ys[i]))
    return Vec("int", _narrow(exact), valid)


def _fix_int_division(a: Vec, b: Vec, r: Any, n: int) -> Any:
    """Make int / int correctly rounded, as Python's is.

    float(a) / float(b) rounds twice once an operand exceeds 2**53 (think of
    nanosecond timestamps).  Those rows are divided again in 80-bit long
    double, where every int64 is exact; rounding that to float64 is correct
    unless the long double quotient sits exactly halfway between two floats —
    rare rows, which Python then divides exactly.
    """
    xs = np.broadcast_to(np.int64(a.data) if a.scalar else a.data, (n,))
    ys = np.broadcast_to(np.int64(b.data) if b.scalar else b.data, (n,))
    # (as floats, |x| >= 2**53 catches every int beyond 2**53 and cannot overflow)
    big = (np.abs(xs.astype(np.float64)) >= _EXACT_FLOAT_INT) | (
        np.abs(ys.astype(np.float64)) >= _EXACT_FLOAT_INT
    )
    big &= ys != 0
    if not big.any():
        return r
    r = np.array(np.broadcast_to(r, (n,)), dtype=np.float64)
    rows = np.flatnonzero(big)
    exact = rows
    if _LONG_DOUBLE_EXACT:
        q = xs[rows].astype(np.longdouble) / ys[rows].astype(np.longdouble)
        d = q.astype(np.float64)
        off = np.abs(q - d)  # exact; halfway is half the gap to the float beyond
        gap = np.abs(np.spacing(d))  # (or half of it, below a power of two)
        r[rows] = d
        exact = rows[(off == gap / 2) | (off == gap / 4)]
    for i in exact:
        r[i] = int(xs[i]) / int(ys[i])
    return r


def neg(a: Vec, n: int) -> Vec:
    if a.kind not in NUMS:
        return NULL_SCALAR if a.scalar else null(n)
    if a.scalar:
        return scalar(-a.data)
    if a.kind == "float" or a.is_object():
        return Vec(a.kind, np.negative(a.data), a.valid)
    over = a.data == INT64_MIN
    if a.valid is not None:
        over &= a.valid
    if over.any():  # -(-2**63) leaves int64
        return Vec("int", _narrow(np.negative(a.data.astype(object))), a.valid)
    return Vec("int", np.negative(a.data), a.valid)

