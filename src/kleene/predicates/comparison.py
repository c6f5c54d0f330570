"""Comparisons (``< <= > >= == !=``) of runtime values, exact across int64 and float64.

Numbers compare by value (an int64 against a float64 without rounding),
strings by code point (through their distinct values when a column is
dictionary-encoded or read by several predicates), booleans with each other;
values of different kinds, and undefined values, compare false.  The
semantics are listed in :mod:`kleene.predicates.table`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.predicates.values import NUMS, Vec, and_valid, fits, row_valid

_TWO_63 = float(2**63)

_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_PC_CMP = {
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
    "==": pc.equal,
    "!=": pc.not_equal,
}


def _cmp_int_float(op: str, i: Vec, f: Vec, n: int) -> Any:
    """``i op f`` for an int ``i`` and a float64 ``f``, exactly.

    Converting an int to float64 rounds above 2**53, but rounding is
    monotone, so the float comparison is right except where ``float(i) ==
    f``; only those ties are re-decided with integer arithmetic.
    """
    fn = _CMP[op]
    if i.is_object():  # Python ints vs floats compare exactly, elementwise
        with np.errstate(invalid="ignore"):  # NaN rows are masked by the caller
            return fn(i.data, f.data)
    if i.scalar:
        c: int = i.data
        fi = float(c) if abs(c) < 2**1000 else (np.inf if c > 0 else -np.inf)
        r = fn(fi, f.data)
        if fi != c:  # |c| > 2**53: fix rows where f equals the rounded c
            ties = f.data == fi
            if ties.any():
                r = np.array(r)
                r[ties] = fn(c, fi)
        return r
    if f.scalar:
        cf: float = f.data
        if not -_TWO_63 <= cf < _TWO_63:  # beyond every int64, or infinite
            return np.full(n, fn(0, 1) if cf > 0 else fn(1, 0))
        if cf.is_integer():
            return fn(i.data, np.int64(int(cf)))
        return fn(i.data.astype(np.float64), cf)  # no int rounds to a fraction
    fi_arr = i.data.astype(np.float64)
    r = fn(fi_arr, f.data)
    ties = fi_arr == f.data
    if ties.any():
        ft = f.data[ties]
        over = ft >= _TWO_63
        exact = fn(i.data[ties], np.where(over, 0.0, ft).astype(np.int64))
        exact[over] = fn(0, 1)
        r[ties] = exact
    return r


def _scalar_np(v: Vec) -> Any:
    """A constant as a numpy scalar, so numpy does not upcast columns for it."""
    if not v.scalar:
        return v.data
    if v.kind == "float":
        return np.float64(v.data)
    if v.kind == "bool":
        return np.bool_(v.data)
    if v.kind == "int" and fits(v.data):
        return np.int64(v.data)
    return v.data  # a Python int beyond int64: numpy compares it exactly


def compare(op: str, a: Vec, b: Vec, n: int) -> np.ndarray:
    """Rows where ``a op b`` is true (false where undefined or kinds differ)."""
    if a.scalar and b.scalar:
        same = (a.kind in NUMS and b.kind in NUMS) or (a.kind == b.kind != "null")
        return np.full(n, bool(same and _CMP[op](a.data, b.data)))
    if a.kind in NUMS and b.kind in NUMS:
        if a.kind == b.kind:
            val = _CMP[op](_scalar_np(a), _scalar_np(b))
        elif a.kind == "int":
            val = _cmp_int_float(op, a, b, n)
        else:
            val = _cmp_int_float(_FLIP[op], b, a, n)
    elif a.kind == b.kind == "str":
        val = _str_compare(op, a, b, n)
    elif a.kind == b.kind == "bool":
        val = _CMP[op](_scalar_np(a), _scalar_np(b))
    else:
        return np.zeros(n, bool)
    val = _rows(val, n)
    valid = and_valid(row_valid(a), row_valid(b))
    return val if valid is None else val & valid


def _rows(val: Any, n: int) -> np.ndarray:
    """A comparison result as a bool array of one value per row."""
    if type(val) is np.ndarray and val.dtype == np.bool_ and val.shape == (n,):
        return val
    return np.broadcast_to(np.asarray(val, dtype=bool), (n,))


def _str_compare(op: str, a: Vec, b: Vec, n: int) -> np.ndarray:
    if a.scalar or b.scalar:
        if a.scalar:
            a, b, op = b, a, _FLIP[op]
        arr = a.data
        if a.shared or pa.types.is_dictionary(arr.type):  # compare the distinct values only
            dictionary, idx, _ = a.dict_parts()
            per_value = bool_numpy(_PC_CMP[op](dictionary, b.data))
            return per_value[idx] if len(per_value) else np.zeros(n, bool)
        return bool_numpy(_PC_CMP[op](arr, b.data))
    x, y = _plain_strings(a.data), _plain_strings(b.data)
    if x.type != y.type:
        x, y = x.cast(pa.large_string()), y.cast(pa.large_string())
    return bool_numpy(_PC_CMP[op](x, y))


def _plain_strings(arr: pa.Array) -> pa.Array:
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def bool_numpy(arr: pa.Array) -> np.ndarray:
    """Arrow booleans (nulls = false) as a numpy bool array."""
    if arr.null_count:
        arr = arr.fill_null(False)
    return np.asarray(arr)

