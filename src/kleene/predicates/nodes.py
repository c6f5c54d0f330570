"""Compiled predicates: trees of evaluation nodes, equal subtrees shared, values memoised per batch.

Each predicate is compiled once (:class:`Compiler`) into nodes whose
evaluation is a few whole-column kernels; equal subtrees (by
:func:`structural_key`) become one node, so a column read by three
predicates is converted once per batch, and constant subexpressions are
folded at compile time.  A per-batch memo (:class:`Ctx`) holds each node's
value for the batch being evaluated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.language import ast
from kleene.language.errors import QueryError
from kleene.predicates.arithmetic import arith, neg
from kleene.predicates.comparison import bool_numpy, compare
from kleene.predicates.values import (
    NUMS,
    Vec,
    and_valid,
    fits,
    null,
    read_column,
    row_valid,
    scalar,
)


class Ctx:
    """Per-batch memo: one slot per distinct (sub)expression and predicate.

    Nothing outlives the batch, so nothing can go stale.
    """

    __slots__ = ("batch", "n", "memo", "columns")

    def __init__(self, batch: pa.RecordBatch, slots: int) -> None:
        self.batch = batch
        self.n: int = batch.num_rows
        self.memo: list[Any] = [None] * slots
        self.columns: dict[str, int] | None = None


class Node:
    """An expression node computes a :class:`Vec`, a predicate node a bool array."""

    slot: int = -1

    def get(self, ctx: Ctx) -> Any:
        out = ctx.memo[self.slot]
        if out is None:
            out = ctx.memo[self.slot] = self.compute(ctx)
        return out

    def compute(self, ctx: Ctx) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class _ConstE(Node):
    def __init__(self, value: Vec) -> None:
        self.value = value

    def get(self, ctx: Ctx) -> Vec:
        return self.value


class _AttrE(Node):
    def __init__(self, name: str) -> None:
        self.name = name
        self.uses = 0
        """How many expressions of the table read the column (set by the compiler)."""

    def compute(self, ctx: Ctx) -> Vec:
        if ctx.columns is None:
            ctx.columns = {}
            for index, name in enumerate(ctx.batch.schema.names):
                ctx.columns.setdefault(name, index)  # a duplicated name: the first wins
        i = ctx.columns.get(self.name)
        if i is None:
            return null(ctx.n)
        v = read_column(ctx.batch.column(i))
        if self.uses > 1 and v.kind == "str":
            # Encoding once (one hash pass) and comparing the few distinct
            # values beats one full string comparison per predicate.
            v.shared = True
        return v


class _ArithE(Node):
    def __init__(self, op: str, left: Node, right: Node) -> None:
        self.op, self.left, self.right = op, left, right

    def compute(self, ctx: Ctx) -> Vec:
        return arith(self.op, self.left.get(ctx), self.right.get(ctx), ctx.n)


class _NegE(Node):
    def __init__(self, operand: Node) -> None:
        self.operand = operand

    def compute(self, ctx: Ctx) -> Vec:
        return neg(self.operand.get(ctx), ctx.n)


class _CompareP(Node):
    def __init__(self, op: str, left: Node, right: Node) -> None:
        self.op, self.left, self.right = op, left, right

    def compute(self, ctx: Ctx) -> np.ndarray:
        return compare(self.op, self.left.get(ctx), self.right.get(ctx), ctx.n)


class _LikeP(Node):
    def __init__(self, operand: Node, node: ast.Like) -> None:
        self.operand = operand
        import re2  # only for LIKE (start-up time of every other query)

        try:
            self.regex = re2.compile(node.pattern)
        except re2.error as exc:
            span = node.span
            raise QueryError(
                f"invalid regular expression {node.pattern!r}: {exc}", span.line, span.column
            ) from None

    def compute(self, ctx: Ctx) -> np.ndarray:
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


class _InSetP(Node):
    def __init__(self, operand: Node, values: Sequence[object], negated: bool) -> None:
        self.operand = operand
        self.negated = negated
        nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        nums = [v for v in nums if v == v]  # a NaN member matches nothing
        self.py_nums = frozenset(nums)
        self.py_strs = frozenset(v for v in values if isinstance(v, str))
        self.py_bools = frozenset(v for v in values if isinstance(v, bool))
        # An int64 operand can only equal integral members within int64 ...
        ints = {int(v) for v in nums if float(v).is_integer() and fits(int(v))}
        self.int_set = np.array(sorted(ints), dtype=np.int64)
        # ... and a float64 operand only members that float64 holds exactly.
        floats = {float(v) for v in nums if abs(v) < 2**1000 and float(v) == v}
        self.float_set = np.array(sorted(floats), dtype=np.float64)
        self.str_set = pa.array(sorted(self.py_strs), pa.string())
        self.bool_set = np.array(sorted(self.py_bools), dtype=bool)

    def _members(self, kind: str) -> frozenset[Any]:
        if kind in NUMS:
            return self.py_nums
        return self.py_strs if kind == "str" else self.py_bools

    def compute(self, ctx: Ctx) -> np.ndarray:
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
                per_value = bool_numpy(pc.is_in(dictionary, value_set=self.str_set))
                val = per_value[idx] if len(per_value) else np.zeros(n, bool)
            else:
                val = bool_numpy(pc.is_in(arr, value_set=self.str_set))
        if self.negated:
            val = ~val
        return val if v.valid is None else val & v.valid


class _InRangeP(Node):
    def __init__(self, operand: Node, low: Node, high: Node, negated: bool) -> None:
        self.operand, self.low, self.high, self.negated = operand, low, high, negated

    def compute(self, ctx: Ctx) -> np.ndarray:
        x, lo, hi, n = self.operand.get(ctx), self.low.get(ctx), self.high.get(ctx), ctx.n
        # Comparable kinds (as the oracle: all three the same kind).
        kinds = {"number" if v.kind in NUMS else v.kind for v in (x, lo, hi)}
        if len(kinds) != 1 or "null" in kinds:
            return np.zeros(n, bool)
        inside = compare("<=", lo, x, n) & compare("<=", x, hi, n)
        if not self.negated:
            return inside
        valid = and_valid(row_valid(x), row_valid(lo), row_valid(hi))
        return ~inside if valid is None else ~inside & valid


class _NotP(Node):
    def __init__(self, operand: Node) -> None:
        self.operand = operand

    def compute(self, ctx: Ctx) -> np.ndarray:
        return ~self.operand.get(ctx)


class _AndP(Node):
    def __init__(self, left: Node, right: Node) -> None:
        self.left, self.right = left, right

    def compute(self, ctx: Ctx) -> np.ndarray:
        return self.left.get(ctx) & self.right.get(ctx)


class _OrP(Node):
    def __init__(self, left: Node, right: Node) -> None:
        self.left, self.right = left, right

    def compute(self, ctx: Ctx) -> np.ndarray:
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


class Compiler:
    """Turns AST nodes into evaluation nodes, sharing equal subtrees.

    ``price`` read by three predicates is one node and one column conversion
    per batch (see :func:`structural_key`); constant subexpressions are folded here, once.
    """

    def __init__(self) -> None:
        self.nodes: dict[Any, Node] = {}
        self.slots = 0

    def _intern(self, tree: Any, make: Callable[[], Node]) -> Node:
        key = structural_key(tree)
        node = self.nodes.get(key)
        if node is None:
            node = make()
            node.slot = self.slots
            self.slots += 1
            self.nodes[key] = node
        return node

    def expr(self, e: ast.Expr) -> Node:
        if isinstance(e, ast.Const):
            return _ConstE(scalar(e.value))
        if isinstance(e, ast.Attr):
            node = self._intern(e, lambda: _AttrE(e.name))
            assert isinstance(node, _AttrE)
            node.uses += 1
            return node
        if isinstance(e, ast.Neg):
            inner = self.expr(e.operand)
            if isinstance(inner, _ConstE):
                return _ConstE(neg(inner.value, 1))
            return self._intern(e, lambda: _NegE(inner))
        if isinstance(e, ast.BinOp):
            left, right = self.expr(e.left), self.expr(e.right)
            if isinstance(left, _ConstE) and isinstance(right, _ConstE):
                return _ConstE(arith(e.op, left.value, right.value, 1))
            return self._intern(e, lambda: _ArithE(e.op, left, right))
        raise TypeError(f"not an expression: {e!r}")

    def pred(self, p: ast.Pred) -> Node:
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

