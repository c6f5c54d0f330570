"""Vectorised evaluation of a query's atomic predicates into per-event bit vectors.

CORE (spec §4, item 1) evaluates every atomic predicate of a query once per
event and runs the automaton on the resulting bit vector.  kleene does the
same over a whole columnar batch at a time: each predicate is compiled once,
in :class:`PredicateTable`'s constructor, into a small tree of nodes whose
evaluation is a handful of numpy / pyarrow.compute kernels over whole
columns.  This is the first stage of the hot path, so Python only loops over
*distinct* values (``LIKE``) or over rows that are genuinely exceptional
(int64 overflow, integers beyond 2**53 in a true division).

Semantics — those of the reference oracle (:mod:`kleene.reference.predicates`):

* ``+ - *`` and ``%`` on two integers give an integer (exact, as in Python:
  results beyond int64 are kept as Python ints); ``/`` is true division and
  always gives a float; an integer mixed with a float gives a float.  ``%``
  is Python's (the result has the sign of the divisor).
* Numbers compare by value, exactly, even int64 against float64 (large
  integers are not rounded).  Strings compare by code point.  Booleans are
  not numbers; they compare with each other (``False < True``, as Python).
  Values of different kinds are never equal *and* never unequal: such a
  comparison is false, also for ``!=``.
* ``x LIKE 're'`` is a *full* match of an RE2 regular expression (linear
  time: no catastrophic backtracking).  ``x IN {..}`` is membership by value,
  ``x IN RANGE(lo, hi)`` is ``lo <= x <= hi``.
* A value is *undefined* on a row when the column is missing, the value is
  null or NaN (read or computed, e.g. ``inf - inf``), a division or ``%`` is
  by zero, or arithmetic meets a non-number.  An atom (comparison, ``LIKE``,
  ``IN``, ``IN RANGE``) reading an undefined value is **false**, and so is
  its negated form (``NOT IN``, ``NOT IN RANGE``).  ``NOT``/``AND``/``OR`` are
  ordinary two-valued logic over atoms, so ``NOT (x > 1)`` is *true* where
  ``x`` is null.  The engine reports such rows as bad input separately
  (:mod:`kleene.automata.conform`).

The predicates are typed leniently: a kind conflict (``x LIKE 'a' AND x > 1``)
just makes some atoms false at run time; rejecting such queries is the job of
the query checker, which knows the stream's schema.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import re2

from kleene.language import ast
from kleene.language.errors import KleeneError, QueryError

Kind = Literal["number", "string", "boolean"]

MAX_WIDTH = 64
"""Bit vectors are uint64: one bit per event type and per predicate."""

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_TWO_63 = float(2**63)
_EXACT_FLOAT_INT = 2**53
"""Integers of at most this magnitude convert to float64 without rounding."""
_LONG_DOUBLE_EXACT = np.finfo(np.longdouble).nmant >= 63
"""Whether long double holds every int64 exactly (x86-64 Linux: yes)."""


class TooManyPredicatesError(KleeneError):
    """The query needs more than 64 bits (event types + distinct predicates)."""


# --------------------------------------------------------------------------
# Kind inference (for conform: which kind must each attribute have?)
# --------------------------------------------------------------------------


def _const_kind(value: object) -> Kind:
    # bool is a subclass of int: test it first, so True is never a number.
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"


_Term = tuple[Literal["kind", "attr"], str]
"""A statically known kind (``("kind", "number")``) or an attribute name."""


class _KindInference:
    """Union-find over attributes: attributes compared with each other share a kind.

    So ``x == y AND y > 3`` infers that both ``x`` and ``y`` are numbers.  On a
    conflict the first use wins; the query checker reports conflicts.
    """

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.kind: dict[str, Kind] = {}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        root = name
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[name] != root:
            self.parent[name], name = root, self.parent[name]
        return root

    def unify(self, a: _Term, b: _Term) -> None:
        if a[0] == "kind":
            a, b = b, a
        if a[0] == "kind":
            return
        root = self.find(a[1])
        if b[0] == "kind":
            self.kind.setdefault(root, b[1])  # type: ignore[arg-type]
            return
        other = self.find(b[1])
        if other != root:
            self.parent[other] = root
            if root not in self.kind and other in self.kind:
                self.kind[root] = self.kind[other]

    def expr(self, e: ast.Expr) -> _Term:
        if isinstance(e, ast.Const):
            return ("kind", _const_kind(e.value))
        if isinstance(e, ast.Attr | ast.VarAttr):
            # `a.price` reads the same column as `price`, on another event.
            self.find(e.name)
            return ("attr", e.name)
        if isinstance(e, ast.Neg):
            self.unify(self.expr(e.operand), ("kind", "number"))
        elif isinstance(e, ast.BinOp):
            self.unify(self.expr(e.left), ("kind", "number"))
            self.unify(self.expr(e.right), ("kind", "number"))
        else:
            raise TypeError(f"not an expression: {e!r}")
        return ("kind", "number")

    def pred(self, p: ast.Pred) -> None:
        if isinstance(p, ast.Compare):
            self.unify(self.expr(p.left), self.expr(p.right))
        elif isinstance(p, ast.Like):
            self.unify(self.expr(p.operand), ("kind", "string"))
        elif isinstance(p, ast.InSet):
            operand = self.expr(p.operand)
            for v in p.values:
                self.unify(operand, ("kind", _const_kind(v.value)))
        elif isinstance(p, ast.InRange):
            operand = self.expr(p.operand)
            self.unify(operand, self.expr(p.low))
            self.unify(operand, self.expr(p.high))
        elif isinstance(p, ast.PNot):
            self.pred(p.operand)
        elif isinstance(p, ast.PAnd | ast.POr):
            self.pred(p.left)
            self.pred(p.right)
        else:
            raise TypeError(f"not a predicate: {p!r}")


def infer_kinds(preds: Iterable[ast.Pred], names: Iterable[str]) -> dict[str, str]:
    """The kind each attribute in ``names`` must have, from its uses in ``preds``.

    Also for n-ary predicates (``price > a.price`` makes ``price`` one column
    of one kind), which the register engine evaluates outside the table.
    """
    inference = _KindInference()
    for p in preds:
        inference.pred(p)
    out: dict[str, str] = {}
    for name in names:
        kind = inference.kind.get(inference.find(name))
        if kind is not None:
            out[name] = kind
    return out


# --------------------------------------------------------------------------
# Runtime values
# --------------------------------------------------------------------------

# Runtime kinds: 'int' (int64 array, or an object array of Python ints once a
# result leaves int64), 'float' (float64, NaN always marked invalid), 'str'
# (a pyarrow string array), 'bool' (numpy bool) and 'null' (undefined on
# every row: missing column, unsupported type, a constant 1/0 ...).
_RKind = Literal["int", "float", "str", "bool", "null"]
_NUMS = ("int", "float")


def _dict_parts(arr: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
    """(distinct values, per-row index into them, row validity) of a string array.

    Dictionary-encoded input is used as is; plain strings are encoded here, so
    that per-value work (a regex, a set lookup) runs once per distinct value
    and is broadcast back with a numpy ``take``.
    """
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    indices = arr.indices
    valid = _arrow_valid(indices)
    if valid is not None:
        indices = indices.fill_null(0)
    idx = np.asarray(indices).astype(np.intp, copy=False)
    dictionary = arr.dictionary
    if dictionary.null_count:  # a dictionary may itself hold nulls
        valid = _and_valid(valid, np.asarray(dictionary.is_valid())[idx])
    return dictionary, idx, valid


@dataclass(slots=True)
class _Vec:
    """An expression's value on every row of a batch, or one constant value.

    ``valid`` is None when every row is valid — the common case, which lets
    the hot path skip all mask arithmetic.
    """

    kind: _RKind
    data: Any
    valid: np.ndarray | None = None
    scalar: bool = False
    parts: tuple[pa.Array, np.ndarray, np.ndarray | None] | None = None
    """Cached :func:`_dict_parts` of a string column, shared by LIKE/IN/==."""
    shared: bool = False
    """A column several predicates read: comparisons go through its distinct values."""

    def dict_parts(self) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
        if self.parts is None:
            self.parts = _dict_parts(self.data)
        return self.parts

    def is_object(self) -> bool:
        """An int column holding Python ints beyond int64 (the exact slow path)."""
        return not self.scalar and self.kind == "int" and self.data.dtype == object


_NULL_SCALAR = _Vec("null", None, None, True)


def _null(n: int) -> _Vec:
    return _Vec("null", None, np.zeros(n, bool))


def _and_valid(*masks: np.ndarray | None) -> np.ndarray | None:
    out: np.ndarray | None = None
    for m in masks:
        if m is not None:
            out = m if out is None else out & m
    return out


def _invalidate(valid: np.ndarray | None, bad: np.ndarray) -> np.ndarray | None:
    if not bad.any():
        return valid
    return ~bad if valid is None else valid & ~bad


def _row_valid(v: _Vec) -> np.ndarray | None:
    return None if v.scalar else v.valid


def _scalar(value: object) -> _Vec:
    if isinstance(value, bool):
        return _Vec("bool", value, None, True)
    if isinstance(value, int):
        return _Vec("int", value, None, True)
    if isinstance(value, float):
        return _NULL_SCALAR if value != value else _Vec("float", value, None, True)
    if isinstance(value, str):
        return _Vec("str", value, None, True)
    return _NULL_SCALAR


def _arrow_valid(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid())


def _read_column(arr: pa.Array | pa.ChunkedArray) -> _Vec:
    """Convert a batch column to the runtime representation of its kind."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_dictionary(t):
        if pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type):
            parts = _dict_parts(arr)
            return _Vec("str", arr, parts[2], parts=parts)
        return _read_column(arr.dictionary_decode())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _Vec("str", arr, _arrow_valid(arr))
    if pa.types.is_string_view(t):
        return _Vec("str", arr.cast(pa.large_string()), _arrow_valid(arr))
    if pa.types.is_boolean(t):
        valid = _arrow_valid(arr)
        return _Vec("bool", np.asarray(arr.fill_null(False) if valid is not None else arr), valid)
    kind: _RKind
    if pa.types.is_integer(t) or pa.types.is_temporal(t):
        kind = "int"
        try:
            if not pa.types.is_int64(t):
                arr = arr.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            if not pa.types.is_uint64(t):
                return _null(len(arr))
            valid = _arrow_valid(arr)  # uint64 beyond int64: exact Python ints
            data = np.array(arr.fill_null(0).to_pylist(), dtype=object)
            return _Vec("int", data, valid)
    elif pa.types.is_floating(t) or pa.types.is_decimal(t):
        kind = "float"
        try:
            if not pa.types.is_float64(t):
                arr = arr.cast(pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return _null(len(arr))
    else:
        return _null(len(arr))
    valid = _arrow_valid(arr)
    data = np.asarray(arr.fill_null(0) if valid is not None else arr)
    if kind == "float":
        valid = _invalidate(valid, np.isnan(data))
    return _Vec(kind, data, valid)


# --------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------

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


def _rowwise(op: str, a: _Vec, b: _Vec, n: int, result: _RKind) -> _Vec:
    """Exact arithmetic row by row: only for Python ints beyond int64."""
    xs = [a.data] * n if a.scalar else a.data.tolist()
    ys = [b.data] * n if b.scalar else b.data.tolist()
    valid = _and_valid(_row_valid(a), _row_valid(b))
    ok = np.ones(n, bool) if valid is None else valid.copy()
    out: list[Any] = [0] * n
    for i in np.flatnonzero(ok):
        r = _py_value(op, xs[i], ys[i])
        if r is None:
            ok[i] = False
        else:
            out[i] = r
    if result == "float":
        return _Vec("float", np.array(out, dtype=np.float64), None if ok.all() else ok)
    return _Vec("int", _narrow(np.array(out, dtype=object)), None if ok.all() else ok)


def _narrow(obj: np.ndarray) -> np.ndarray:
    """Back to int64 when every Python int fits again (keeps later ops fast)."""
    try:
        return obj.astype(np.int64)
    except OverflowError:
        return obj


def _as_float(v: _Vec) -> Any:
    if v.scalar:
        return float(v.data)
    return v.data.astype(np.float64) if v.kind == "int" else v.data


def _arith(op: str, a: _Vec, b: _Vec, n: int) -> _Vec:
    if a.kind not in _NUMS or b.kind not in _NUMS:
        return _NULL_SCALAR if a.scalar and b.scalar else _null(n)
    if a.scalar and b.scalar:
        return _scalar(_py_value(op, a.data, b.data))
    result: _RKind = "int" if a.kind == b.kind == "int" and op != "/" else "float"
    big = [
        v for v in (a, b) if v.is_object() or (v.scalar and v.kind == "int" and not _fits(v.data))
    ]
    if big:
        return _rowwise(op, a, b, n, result)
    valid = _and_valid(_row_valid(a), _row_valid(b))
    if op in ("/", "%"):
        if b.scalar:
            if b.data == 0:
                return _null(n)
        else:
            valid = _invalidate(valid, b.data == 0)
    with np.errstate(all="ignore"):
        if result == "int":
            return _int_arith(op, a, b, n, valid)
        r = _ARITH[op](_as_float(a), _as_float(b))
        if op == "/" and a.kind == b.kind == "int":
            r = _fix_int_division(a, b, r, n)
    r = np.broadcast_to(r, (n,))
    return _Vec("float", r, _invalidate(valid, np.isnan(r)))


def _fits(value: int) -> bool:
    return _INT64_MIN <= value <= _INT64_MAX


def _int_arith(op: str, a: _Vec, b: _Vec, n: int, valid: np.ndarray | None) -> _Vec:
    """int64 arithmetic; rows that overflow are recomputed exactly in Python."""
    x = np.int64(a.data) if a.scalar else a.data
    y = np.int64(b.data) if b.scalar else b.data
    if op == "%":
        if not b.scalar:
            y = np.where(y == 0, 1, y)  # those rows are already invalid
        return _Vec("int", np.broadcast_to(np.remainder(x, y), (n,)), valid)
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
        return _Vec("int", r, valid)
    xs, ys = np.broadcast_to(x, (n,)), np.broadcast_to(y, (n,))
    exact = r.astype(object)
    for i in np.flatnonzero(over):
        exact[i] = _ARITH[op](int(xs[i]), int(ys[i]))
    return _Vec("int", _narrow(exact), valid)


def _fix_int_division(a: _Vec, b: _Vec, r: Any, n: int) -> Any:
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


def _neg(a: _Vec, n: int) -> _Vec:
    if a.kind not in _NUMS:
        return _NULL_SCALAR if a.scalar else _null(n)
    if a.scalar:
        return _scalar(-a.data)
    if a.kind == "float" or a.is_object():
        return _Vec(a.kind, np.negative(a.data), a.valid)
    over = a.data == _INT64_MIN
    if a.valid is not None:
        over &= a.valid
    if over.any():  # -(-2**63) leaves int64
        return _Vec("int", _narrow(np.negative(a.data.astype(object))), a.valid)
    return _Vec("int", np.negative(a.data), a.valid)


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

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


def _cmp_int_float(op: str, i: _Vec, f: _Vec, n: int) -> Any:
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


def _scalar_np(v: _Vec) -> Any:
    """A constant as a numpy scalar, so numpy does not upcast columns for it."""
    if not v.scalar:
        return v.data
    if v.kind == "float":
        return np.float64(v.data)
    if v.kind == "bool":
        return np.bool_(v.data)
    if v.kind == "int" and _fits(v.data):
        return np.int64(v.data)
    return v.data  # a Python int beyond int64: numpy compares it exactly


def _compare(op: str, a: _Vec, b: _Vec, n: int) -> np.ndarray:
    """Rows where ``a op b`` is true (false where undefined or kinds differ)."""
    if a.scalar and b.scalar:
        same = (a.kind in _NUMS and b.kind in _NUMS) or (a.kind == b.kind != "null")
        return np.full(n, bool(same and _CMP[op](a.data, b.data)))
    if a.kind in _NUMS and b.kind in _NUMS:
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
    valid = _and_valid(_row_valid(a), _row_valid(b))
    return val if valid is None else val & valid


def _rows(val: Any, n: int) -> np.ndarray:
    """A comparison result as a bool array of one value per row."""
    if type(val) is np.ndarray and val.dtype == np.bool_ and val.shape == (n,):
        return val
    return np.broadcast_to(np.asarray(val, dtype=bool), (n,))


def _str_compare(op: str, a: _Vec, b: _Vec, n: int) -> np.ndarray:
    if a.scalar or b.scalar:
        if a.scalar:
            a, b, op = b, a, _FLIP[op]
        arr = a.data
        if a.shared or pa.types.is_dictionary(arr.type):  # compare the distinct values only
            dictionary, idx, _ = a.dict_parts()
            per_value = _bool_numpy(_PC_CMP[op](dictionary, b.data))
            return per_value[idx] if len(per_value) else np.zeros(n, bool)
        return _bool_numpy(_PC_CMP[op](arr, b.data))
    x, y = _plain_strings(a.data), _plain_strings(b.data)
    if x.type != y.type:
        x, y = x.cast(pa.large_string()), y.cast(pa.large_string())
    return _bool_numpy(_PC_CMP[op](x, y))


def _plain_strings(arr: pa.Array) -> pa.Array:
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def _bool_numpy(arr: pa.Array) -> np.ndarray:
    """Arrow booleans (nulls = false) as a numpy bool array."""
    if arr.null_count:
        arr = arr.fill_null(False)
    return np.asarray(arr)


# --------------------------------------------------------------------------
# Compiled nodes
# --------------------------------------------------------------------------


class _Ctx:
    """Per-batch memo: one slot per distinct (sub)expression and predicate.

    Nothing outlives the batch, so nothing can go stale.
    """

    __slots__ = ("batch", "n", "memo", "columns")

    def __init__(self, batch: pa.RecordBatch, slots: int) -> None:
        self.batch = batch
        self.n: int = batch.num_rows
        self.memo: list[Any] = [None] * slots
        self.columns: dict[str, int] | None = None


class _Node:
    """An expression node computes a :class:`_Vec`, a predicate node a bool array."""

    slot: int = -1

    def get(self, ctx: _Ctx) -> Any:
        out = ctx.memo[self.slot]
        if out is None:
            out = ctx.memo[self.slot] = self.compute(ctx)
        return out

    def compute(self, ctx: _Ctx) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class _ConstE(_Node):
    def __init__(self, value: _Vec) -> None:
        self.value = value

    def get(self, ctx: _Ctx) -> _Vec:
        return self.value


class _AttrE(_Node):
    def __init__(self, name: str) -> None:
        self.name = name
        self.uses = 0
        """How many expressions of the table read the column (set by the compiler)."""

    def compute(self, ctx: _Ctx) -> _Vec:
        if ctx.columns is None:
            ctx.columns = {}
            for index, name in enumerate(ctx.batch.schema.names):
                ctx.columns.setdefault(name, index)  # a duplicated name: the first wins
        i = ctx.columns.get(self.name)
        if i is None:
            return _null(ctx.n)
        v = _read_column(ctx.batch.column(i))
        if self.uses > 1 and v.kind == "str":
            # Encoding once (one hash pass) and comparing the few distinct
            # values beats one full string comparison per predicate.
            v.shared = True
        return v


class _ArithE(_Node):
    def __init__(self, op: str, left: _Node, right: _Node) -> None:
        self.op, self.left, self.right = op, left, right

    def compute(self, ctx: _Ctx) -> _Vec:
        return _arith(self.op, self.left.get(ctx), self.right.get(ctx), ctx.n)


class _NegE(_Node):
    def __init__(self, operand: _Node) -> None:
        self.operand = operand

    def compute(self, ctx: _Ctx) -> _Vec:
        return _neg(self.operand.get(ctx), ctx.n)


class _CompareP(_Node):
    def __init__(self, op: str, left: _Node, right: _Node) -> None:
        self.op, self.left, self.right = op, left, right

    def compute(self, ctx: _Ctx) -> np.ndarray:
        return _compare(self.op, self.left.get(ctx), self.right.get(ctx), ctx.n)


class _LikeP(_Node):
    def __init__(self, operand: _Node, node: ast.Like) -> None:
        self.operand = operand
        try:
            self.regex = re2.compile(node.pattern)
        except re2.error as exc:
            span = node.span
            raise QueryError(
                f"invalid regular expression {node.pattern!r}: {exc}", span.line, span.column
            ) from None

    def compute(self, ctx: _Ctx) -> np.ndarray:
        v = self.operand.get(ctx)
        n = ctx.n
        if v.kind != "str":
            return np.zeros(n, bool)
        fullmatch = self.regex.fullmatch
        if v.scalar:
            return np.full(n, fullmatch(v.data) is not None)
        dictionary, idx, valid = v.dict_parts()
        per_value = np.fromiter(
            (s is not None and fullmatch(s) is not None for s in dictionary.to_pylist()),
            dtype=bool,
            count=len(dictionary),
        )
        val = per_value[idx] if len(per_value) else np.zeros(n, bool)
        return val if valid is None else val & valid


class _InSetP(_Node):
    def __init__(self, operand: _Node, values: Sequence[object], negated: bool) -> None:
        self.operand = operand
        self.negated = negated
        nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        nums = [v for v in nums if v == v]  # a NaN member matches nothing
        self.py_nums = frozenset(nums)
        self.py_strs = frozenset(v for v in values if isinstance(v, str))
        self.py_bools = frozenset(v for v in values if isinstance(v, bool))
        # An int64 operand can only equal integral members within int64 ...
        ints = {int(v) for v in nums if float(v).is_integer() and _fits(int(v))}
        self.int_set = np.array(sorted(ints), dtype=np.int64)
        # ... and a float64 operand only members that float64 holds exactly.
        floats = {float(v) for v in nums if abs(v) < 2**1000 and float(v) == v}
        self.float_set = np.array(sorted(floats), dtype=np.float64)
        self.str_set = pa.array(sorted(self.py_strs), pa.string())
        self.bool_set = np.array(sorted(self.py_bools), dtype=bool)

    def _members(self, kind: str) -> frozenset[Any]:
        if kind in _NUMS:
            return self.py_nums
        return self.py_strs if kind == "str" else self.py_bools

    def compute(self, ctx: _Ctx) -> np.ndarray:
        v = self.operand.get(ctx)
        n = ctx.n
        if v.kind == "null":
            return np.zeros(n, bool)
        if v.scalar:
            return np.full(n, (v.data in self._members(v.kind)) != self.negated)
        if v.kind == "int":
            if v.is_object():
                members = self.py_nums
                val = np.fromiter((x in members for x in v.data.tolist()), bool, count=n)
            else:
                val = np.isin(v.data, self.int_set)
        elif v.kind == "float":
            val = np.isin(v.data, self.float_set)
        elif v.kind == "bool":
            val = np.isin(v.data, self.bool_set)
        else:
            arr = v.data
            if pa.types.is_dictionary(arr.type):
                dictionary, idx, _ = v.dict_parts()
                per_value = _bool_numpy(pc.is_in(dictionary, value_set=self.str_set))
                val = per_value[idx] if len(per_value) else np.zeros(n, bool)
            else:
                val = _bool_numpy(pc.is_in(arr, value_set=self.str_set))
        if self.negated:
            val = ~val
        return val if v.valid is None else val & v.valid


class _InRangeP(_Node):
    def __init__(self, operand: _Node, low: _Node, high: _Node, negated: bool) -> None:
        self.operand, self.low, self.high, self.negated = operand, low, high, negated

    def compute(self, ctx: _Ctx) -> np.ndarray:
        x, lo, hi, n = self.operand.get(ctx), self.low.get(ctx), self.high.get(ctx), ctx.n
        # Comparable kinds (as the oracle: all three the same kind).
        kinds = {"number" if v.kind in _NUMS else v.kind for v in (x, lo, hi)}
        if len(kinds) != 1 or "null" in kinds:
            return np.zeros(n, bool)
        inside = _compare("<=", lo, x, n) & _compare("<=", x, hi, n)
        if not self.negated:
            return inside
        valid = _and_valid(_row_valid(x), _row_valid(lo), _row_valid(hi))
        return ~inside if valid is None else ~inside & valid


class _NotP(_Node):
    def __init__(self, operand: _Node) -> None:
        self.operand = operand

    def compute(self, ctx: _Ctx) -> np.ndarray:
        return ~self.operand.get(ctx)


class _AndP(_Node):
    def __init__(self, left: _Node, right: _Node) -> None:
        self.left, self.right = left, right

    def compute(self, ctx: _Ctx) -> np.ndarray:
        return self.left.get(ctx) & self.right.get(ctx)


class _OrP(_Node):
    def __init__(self, left: _Node, right: _Node) -> None:
        self.left, self.right = left, right

    def compute(self, ctx: _Ctx) -> np.ndarray:
        return self.left.get(ctx) | self.right.get(ctx)


def structural_key(node: Any) -> Any:
    """A structural key for sharing equal subtrees.

    AST equality is not enough: ``Const(True) == Const(1) == Const(1.0)`` in
    Python, yet ``b == true`` and ``b == 1`` are different predicates.  The
    key records each constant's type; spans are left out.
    """
    if isinstance(node, ast.Const):
        return ("Const", type(node.value).__name__, node.value)
    if isinstance(node, tuple):
        return tuple(structural_key(x) for x in node)
    if dataclasses.is_dataclass(node):
        return (type(node).__name__,) + tuple(
            structural_key(getattr(node, f.name))
            for f in dataclasses.fields(node)
            if f.name != "span"
        )
    return node


class _Compiler:
    """Turns AST nodes into evaluation nodes, sharing equal subtrees.

    ``price`` read by three predicates is one node and one column conversion
    per batch (see :func:`_key`); constant subexpressions are folded here, once.
    """

    def __init__(self) -> None:
        self.nodes: dict[Any, _Node] = {}
        self.slots = 0

    def _intern(self, tree: Any, make: Callable[[], _Node]) -> _Node:
        key = structural_key(tree)
        node = self.nodes.get(key)
        if node is None:
            node = make()
            node.slot = self.slots
            self.slots += 1
            self.nodes[key] = node
        return node

    def expr(self, e: ast.Expr) -> _Node:
        if isinstance(e, ast.Const):
            return _ConstE(_scalar(e.value))
        if isinstance(e, ast.Attr):
            node = self._intern(e, lambda: _AttrE(e.name))
            assert isinstance(node, _AttrE)
            node.uses += 1
            return node
        if isinstance(e, ast.Neg):
            inner = self.expr(e.operand)
            if isinstance(inner, _ConstE):
                return _ConstE(_neg(inner.value, 1))
            return self._intern(e, lambda: _NegE(inner))
        if isinstance(e, ast.BinOp):
            left, right = self.expr(e.left), self.expr(e.right)
            if isinstance(left, _ConstE) and isinstance(right, _ConstE):
                return _ConstE(_arith(e.op, left.value, right.value, 1))
            return self._intern(e, lambda: _ArithE(e.op, left, right))
        raise TypeError(f"not an expression: {e!r}")

    def pred(self, p: ast.Pred) -> _Node:
        if isinstance(p, ast.Compare):
            left, right = self.expr(p.left), self.expr(p.right)
            return self._intern(p, lambda: _CompareP(p.op, left, right))
        if isinstance(p, ast.Like):
            operand = self.expr(p.operand)
            return self._intern(p, lambda: _LikeP(operand, p))
        if isinstance(p, ast.InSet):
            operand = self.expr(p.operand)
            values = [v.value for v in p.values]
            return self._intern(p, lambda: _InSetP(operand, values, p.negated))
        if isinstance(p, ast.InRange):
            x, lo, hi = self.expr(p.operand), self.expr(p.low), self.expr(p.high)
            return self._intern(p, lambda: _InRangeP(x, lo, hi, p.negated))
        if isinstance(p, ast.PNot):
            inner = self.pred(p.operand)
            return self._intern(p, lambda: _NotP(inner))
        if isinstance(p, ast.PAnd):
            a, b = self.pred(p.left), self.pred(p.right)
            return self._intern(p, lambda: _AndP(a, b))
        if isinstance(p, ast.POr):
            a, b = self.pred(p.left), self.pred(p.right)
            return self._intern(p, lambda: _OrP(a, b))
        raise TypeError(f"not a predicate: {p!r}")


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


def _attr_names(preds: Iterable[ast.Pred]) -> list[str]:
    seen: dict[str, None] = {}

    def expr(e: ast.Expr) -> None:
        if isinstance(e, ast.Attr):
            seen.setdefault(e.name, None)
        elif isinstance(e, ast.Neg):
            expr(e.operand)
        elif isinstance(e, ast.BinOp):
            expr(e.left)
            expr(e.right)

    def pred(p: ast.Pred) -> None:
        if isinstance(p, ast.Compare):
            expr(p.left)
            expr(p.right)
        elif isinstance(p, ast.Like | ast.InSet):
            expr(p.operand)
        elif isinstance(p, ast.InRange):
            expr(p.operand)
            expr(p.low)
            expr(p.high)
        elif isinstance(p, ast.PNot):
            pred(p.operand)
        elif isinstance(p, ast.PAnd | ast.POr):
            pred(p.left)
            pred(p.right)

    for p in preds:
        pred(p)
    return list(seen)


class _NameBits:
    """Bits set by the value of one string column: the event type, or the stream.

    ``names[i]`` sets bit ``offset + i``; a name listed twice sets both bits;
    any other value, a null or a missing column sets none.
    """

    def __init__(self, column: str, names: Sequence[str], offset: int) -> None:
        self.column = column
        masks: dict[str, int] = {}
        for i, name in enumerate(names):
            masks[name] = masks.get(name, 0) | (1 << (offset + i))
        self.mask_of = masks
        self.names = pa.array(list(masks), pa.string())
        # The extra last entry (0) is where unknown and null names land.
        self.masks = np.array([*masks.values(), 0], dtype=np.uint64)

    def evaluate(self, batch: pa.RecordBatch) -> np.ndarray:
        n = batch.num_rows
        if not self.mask_of:
            return np.zeros(n, np.uint64)
        i = batch.schema.get_field_index(self.column)
        if i < 0:  # missing, or a duplicated name: take the first
            names = batch.schema.names
            if self.column not in names:
                return np.zeros(n, np.uint64)
            i = names.index(self.column)
        col = batch.column(i)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        none = len(self.masks) - 1
        if n == 1:  # a single pushed event: skip the kernels
            name = col[0].as_py()
            if name is not None and not isinstance(name, str):
                name = pa.scalar(name).cast(pa.string()).as_py()
            return np.array([self.mask_of.get(name, 0) if name is not None else 0], np.uint64)
        if pa.types.is_dictionary(col.type):  # look up the distinct names only
            dictionary = col.dictionary
            if not _is_string(dictionary.type):
                dictionary = dictionary.cast(pa.string())
            pos = pc.index_in(dictionary, value_set=self.names).fill_null(none)  # a null entry: none
            per_value = self.masks[np.asarray(pos).astype(np.intp)]
            if not col.null_count and len(per_value) and (per_value == per_value[0]).all():
                return np.full(n, per_value[0], np.uint64)  # one name (or names of one meaning)
            _, idx, valid = _dict_parts(col)
            out = per_value[idx] if len(per_value) else np.zeros(n, np.uint64)
            if valid is not None:
                out[~valid] = 0
            return out
        if not _is_string(col.type):
            try:
                col = col.cast(pa.string())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return np.zeros(n, np.uint64)
        pos = pc.index_in(col, value_set=self.names).fill_null(none)
        return self.masks[np.asarray(pos).astype(np.intp)]


class PredicateTable:
    """The atomic predicates of one query (or of several together), one bit each.

    Bit ``i`` (``0 <= i < len(event_types)``) means "the event's type is
    ``event_types[i]``"; bit ``len(event_types) + k`` means "``preds[k]``
    holds on the event"; the bits after those mean "the event comes from
    stream ``streams[j]``" (read from ``stream_column``).  Everything that
    does not depend on the data — regex compilation, sharing of common
    subexpressions, constant folding, the type lookup — is done here once,
    so that :meth:`evaluate` on a 1-row batch (how single pushed events are
    evaluated) stays cheap.
    """

    evaluations = 0
    """How many batches this table evaluated (per instance once it has evaluated)."""

    def __init__(
        self,
        event_types: Sequence[str],
        preds: Sequence[ast.Pred],
        *,
        type_column: str = "type",
        streams: Sequence[str] = (),
        stream_column: str | None = None,
    ) -> None:
        self.event_types: tuple[str, ...] = tuple(event_types)
        self.preds: tuple[ast.Pred, ...] = tuple(preds)
        self.streams: tuple[str, ...] = tuple(streams)
        self.type_column = type_column
        self.stream_column = stream_column
        if self.streams and stream_column is None:
            raise ValueError("stream bits need a stream column")
        self.width: int = len(self.event_types) + len(self.preds) + len(self.streams)
        if self.width > MAX_WIDTH:
            raise TooManyPredicatesError(
                f"query has too many distinct predicates: {len(self.event_types)} event "
                f"types, {len(self.preds)} predicates and {len(self.streams)} streams need "
                f"{self.width} bits, but at most {MAX_WIDTH} are supported"
            )

        inference = _KindInference()
        for p in self.preds:
            inference.pred(p)
        self.read_attributes: tuple[str, ...] = tuple(_attr_names(self.preds))
        """Every attribute some predicate reads, in order of first use."""
        self._kinds: dict[str, str] = {}
        for name in self.read_attributes:
            kind = inference.kind.get(inference.find(name))
            if kind is not None:
                self._kinds[name] = kind

        compiler = _Compiler()
        self._roots = [compiler.pred(p) for p in self.preds]
        self._slots = compiler.slots
        self._shifts = [np.uint64(len(self.event_types) + k) for k in range(len(self.preds))]
        # Predicates by the attributes they read: on string columns they are
        # evaluated once per distinct combination of values (see _per_value).
        self._by_columns: dict[tuple[str, ...], list[int]] = {}
        self._seen: dict[str, _SeenValues | None] = {}
        """Per string column, the values seen so far (None: too many to number)."""
        self._tables: dict[tuple[str, ...], tuple[list[int], np.ndarray]] = {}
        """Per group of columns, the bits of every combination of their values seen so far
        (and how many values each column had then)."""
        for k, p in enumerate(self.preds):
            names = tuple(_attr_names([p]))
            if names:
                self._by_columns.setdefault(names, []).append(k)
        self._types = _NameBits(type_column, self.event_types, 0)
        self._streams = (
            None
            if stream_column is None or not self.streams
            else _NameBits(stream_column, self.streams, len(self.event_types) + len(self.preds))
        )

    def _per_value(self, batch: pa.RecordBatch, out: np.ndarray) -> set[int]:
        """Set the bits of the predicates on string columns from their distinct values.

        Such a predicate's value on a row depends on the row's values of its
        columns only.  So the predicates reading the same string columns are
        evaluated on a small batch of the distinct combinations of those
        columns' values (a null is one more value), their bits are combined
        per combination, and one gather spreads them over the rows: one pass
        over the batch for all of them, instead of several passes each.
        Only when the combinations are few (:data:`PER_VALUE_COMBINATIONS`).
        The values are numbered across batches (:class:`_SeenValues`), so the
        bits of every combination are computed once, and again only when a
        new value appears: each Parquet row group (and each CSV batch) brings
        its own dictionary, mostly of the same values in another order.
        Returns the predicates done here.
        """
        done: set[int] = set()
        n = batch.num_rows
        numbered: dict[str, np.ndarray | None] = {}  # per column, its dictionary's value numbers
        encoded: dict[str, tuple[pa.Array, np.ndarray, np.ndarray | None]] = {}

        def parts(name: str, col: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
            if name not in encoded:
                encoded[name] = _dict_parts(col)
            return encoded[name]

        def entries(name: str, col: pa.Array) -> np.ndarray | None:
            if name not in numbered:
                seen = self._seen[name] if name in self._seen else _SeenValues.empty()
                dictionary = col.dictionary if pa.types.is_dictionary(col.type) else parts(name, col)[0]
                numbered[name] = None if seen is None else seen.entries(dictionary)
                self._seen[name] = None if numbered[name] is None else seen
            return numbered[name]

        for names, ks in self._by_columns.items():
            cols = [_per_value_column(batch, name, len(ks) > 1 or len(names) > 1) for name in names]
            if any(c is None for c in cols):
                continue
            dictionaries = all(pa.types.is_dictionary(c.type) for c in cols)  # type: ignore[union-attr]
            if len(ks) < PER_VALUE_GROUP and len(names) > 1 and not dictionaries:
                continue  # a few predicates on plain strings: comparing each column is cheaper
            if len(names) == 1 and dictionaries and len(cols[0].dictionary) > 2 * n + 64:  # type: ignore[union-attr]
                continue  # more values than rows: compare the rows
            numbers = [entries(name, c) for name, c in zip(names, cols)]
            if all(e is not None for e in numbers):
                seen = [self._seen[name] for name in names]
                sizes = [len(v.values) + 1 for v in seen]  # type: ignore[union-attr]
                if math.prod(sizes) <= min(PER_VALUE_COMBINATIONS, 4 * n):
                    # Every combination of the values seen so far, kept for later batches.
                    cached = self._tables.get(names)
                    if cached is None or cached[0] != sizes:
                        columns = [v.column() for v in seen]  # type: ignore[union-attr]
                        cached = self._tables[names] = (sizes, self._bits_of(names, ks, columns, np.arange(math.prod(sizes))))
                    out |= _spread(cached[1], sizes, names, cols, numbers, parts, n)  # type: ignore[arg-type]
                    done.update(ks)
                    continue
            # Only the combinations present in this batch.
            split = [parts(name, c) for name, c in zip(names, cols)]
            sizes = [len(d) + 1 for d, _, _ in split]  # + 1: the null slot
            if math.prod(sizes) > PER_VALUE_COMBINATIONS:
                continue
            combined = _combine(
                [idx if valid is None else np.where(valid, idx, len(d)) for d, idx, valid in split], sizes
            )
            present = np.flatnonzero(np.bincount(combined, minlength=math.prod(sizes)))
            lut = np.zeros(math.prod(sizes), dtype=np.intp)
            lut[present] = np.arange(len(present))
            values = [pa.concat_arrays([d.cast(pa.large_string()), pa.nulls(1, pa.large_string())]) for d, _, _ in split]
            out |= self._bits_of(names, ks, values, present)[lut[combined]]
            done.update(ks)
        return done

    def _bits_of(
        self, names: tuple[str, ...], ks: list[int], values: list[pa.Array], combinations: np.ndarray
    ) -> np.ndarray:
        """The bits of predicates ``ks`` on the given combinations of the columns' ``values``.

        A combination is a number in the mixed radix of the value counts (the
        last column varies fastest); each column's last value is its null.
        """
        rows, rest = [], combinations
        for column in values[::-1]:
            rows.append(rest % len(column))
            rest = rest // len(column)
        rows.reverse()
        # Dictionary columns over the values: the predicates compare each
        # distinct value once, as they do on a dictionary-encoded batch.
        mini = [pa.DictionaryArray.from_arrays(pa.array(r, pa.int32()), v) for r, v in zip(rows, values)]
        ctx = _Ctx(pa.record_batch(mini, names=list(names)), self._slots)
        table = np.zeros(len(combinations), np.uint64)
        for k in ks:
            table |= self._roots[k].get(ctx).astype(np.uint64) << self._shifts[k]
        return table

    def attributes(self) -> dict[str, str]:
        """Attribute -> the kind (``'number'``, ``'string'``, ``'boolean'``) its use implies.

        Kinds flow through comparisons between attributes (``x == y AND y > 1``
        makes both numbers).  An attribute only ever compared with attributes
        of unknown kind has no inferable kind and is left out; it is still in
        :attr:`read_attributes`, and compares by its column's runtime type.
        """
        return dict(self._kinds)

    def evaluate(self, batch: pa.RecordBatch) -> np.ndarray:
        """One uint64 bit vector per row of ``batch``."""
        self.evaluations += 1
        out = self._types.evaluate(batch)
        if self._roots:
            done = self._per_value(batch, out) if self._by_columns else ()
            ctx = _Ctx(batch, self._slots)
            for k, (root, shift) in enumerate(zip(self._roots, self._shifts, strict=True)):
                if k not in done:
                    out |= root.get(ctx).astype(np.uint64) << shift
        if self._streams is not None:
            out |= self._streams.evaluate(batch)
        return out


PER_VALUE_COMBINATIONS = 1 << 16
"""At most this many combinations of distinct values (nulls included) are evaluated per batch."""

PER_VALUE_GROUP = 4
"""Predicates reading several plain string columns go per combination when at least this many
do (dictionary-encoded columns always do: numbering their rows costs one gather per column)."""


def _spread(
    table: np.ndarray,
    sizes: list[int],
    names: tuple[str, ...],
    cols: list[pa.Array],
    numbers: list[np.ndarray],
    parts: Callable[[str, pa.Array], tuple[pa.Array, np.ndarray, np.ndarray | None]],
    n: int,
) -> np.ndarray:
    """Each row's bits from ``table`` (bits per combination of value numbers, radix ``sizes``).

    Dictionary columns without nulls go through a small table over the
    combinations of their dictionaries' entries, indexed by the rows' raw
    dictionary indices: one gather per row instead of one per column and row.
    """
    if all(pa.types.is_dictionary(c.type) and not c.null_count and not c.dictionary.null_count for c in cols):
        lens = [len(c.dictionary) for c in cols]
        if math.prod(lens) <= 4 * n:
            grid = numbers[0][: lens[0]]
            for size, e, k in zip(sizes[1:], numbers[1:], lens[1:]):
                grid = (grid[:, None] * size + e[None, :k]).reshape(-1)
            raw = [np.asarray(c.indices) for c in cols]
            return table[grid][_combine(raw, lens)]
    codes = []
    for name, c, e in zip(names, cols, numbers):  # per row: its entry's number (the null's if invalid)
        _, idx, valid = parts(name, c)
        codes.append(e[idx if valid is None else np.where(valid, idx, len(e) - 1)])
    return table[_combine(codes, sizes)]


def _combine(codes: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """Per row, the number of its combination of column codes (mixed radix ``sizes``)."""
    combined = codes[0]
    for size, c in zip(sizes[1:], codes[1:]):
        combined = combined * size + c
    return combined


@dataclass(slots=True)
class _SeenValues:
    """The distinct values seen in one string column, numbered in order of appearance.

    Batches number a column's values differently (a Parquet row group, a CSV
    batch: each has its own dictionary); mapping each batch's dictionary onto
    these numbers (a lookup of its few entries) lets the bits computed for
    every combination of values (``PredicateTable._tables``) serve every
    batch.  A null is numbered after the values.
    """

    values: pa.Array
    """The values seen (large strings), in order of first appearance."""
    last: tuple[pa.Array, np.ndarray] | None = None
    """The latest dictionary and the numbers of its entries: batches of one Parquet row group
    share a dictionary."""

    @classmethod
    def empty(cls) -> _SeenValues:
        return cls(pa.array([], pa.large_string()))

    def column(self) -> pa.Array:
        """The values, then the null."""
        return pa.concat_arrays([self.values, pa.nulls(1, pa.large_string())])

    def entries(self, d: pa.Array) -> np.ndarray | None:
        """The number of each entry of dictionary ``d``, then the null's; new values are numbered
        first.  None when the values would pass :data:`PER_VALUE_COMBINATIONS`."""
        last = self.last
        if last is not None and (last[0] is d or last[0].equals(d)):
            return last[1]
        large = d.cast(pa.large_string())
        pos = pc.index_in(large, value_set=self.values)
        if pos.null_count > large.null_count:  # values not seen before
            new = pc.unique(large.filter(pc.and_(pos.is_null(), large.is_valid())))
            self.values = pa.concat_arrays([self.values, new])
            if len(self.values) >= PER_VALUE_COMBINATIONS:
                return None
            pos = pc.index_in(large, value_set=self.values)
        null = len(self.values)
        number = np.append(np.asarray(pos.fill_null(null)).astype(np.intp), null)
        self.last = (d, number)
        return number


def _per_value_column(batch: pa.RecordBatch, name: str, several: bool) -> pa.Array | None:
    """The string column ``name`` if it pays to evaluate its predicates per distinct value."""
    i = batch.schema.get_field_index(name)
    if i < 0:
        return None
    col = batch.column(i)
    t = col.type
    if pa.types.is_dictionary(t):
        return col if _is_string(t.value_type) else None
    return col if several and _is_string(t) else None


def _is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))
