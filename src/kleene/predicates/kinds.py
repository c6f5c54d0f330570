"""Kind inference: which kind (number, string, boolean) each attribute a query reads must have.

The predicates are typed leniently (see :mod:`kleene.predicates.table`), but the
input conformer (:mod:`kleene.predicates.conform`) must know what to cast each
column to and which values to report as bad; :func:`infer_kinds` derives that
from how the predicates use each attribute.  It is static: it looks at the
query only, never at data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from kleene.language import ast

Kind = Literal["number", "string", "boolean"]


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

