"""Syntax walks over the MATCH_RECOGNIZE AST, the reference evaluator's own.

The engine uses the static checker's walks (:mod:`kleene.language.match_recognize.checks`);
the reference keeps its own, written separately, so that a bug in one walk cannot hide
from the property tests that compare the two (as the CEQL oracle does,
``tests/api/test_architecture.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

from kleene.language.match_recognize import ast

__all__ = ["pattern_variables", "referenced_variables", "sub_expressions"]


def pattern_variables(pattern: ast.Pattern) -> list[str]:
    """The primary variables of ``pattern``, in order of first appearance."""
    seen: list[str] = []
    todo: list[ast.Pattern] = [pattern]
    while todo:
        p = todo.pop()
        if isinstance(p, ast.Var):
            if p.name not in seen:
                seen.append(p.name)
        elif isinstance(p, ast.Concat | ast.Alternation | ast.Permute):
            todo.extend(reversed(p.items))
        elif isinstance(p, ast.Exclude | ast.Quantified):
            todo.append(p.body)
    return seen


def sub_expressions(e: ast.Expr) -> Iterator[ast.Expr]:
    """``e`` and every expression inside it."""
    yield e
    inner: list[ast.Expr | None] = []
    if isinstance(e, ast.Nav):
        inner = [e.arg]
    elif isinstance(e, ast.Aggregate):
        inner = [e.arg]
    elif isinstance(e, ast.Func):
        inner = list(e.args)
    elif isinstance(e, ast.BinOp):
        inner = [e.left, e.right]
    elif isinstance(e, ast.Not | ast.IsNull):
        inner = [e.operand]
    elif isinstance(e, ast.Between):
        inner = [e.operand, e.low, e.high]
    elif isinstance(e, ast.InList):
        inner = [e.operand, *e.items]
    elif isinstance(e, ast.Case):
        for cond, value in e.whens:
            inner += [cond, value]
        inner.append(e.default)
    for x in inner:
        if x is not None:
            yield from sub_expressions(x)


def referenced_variables(e: ast.Expr) -> set[str | None]:
    """The qualifiers of the column references and CLASSIFIER calls in ``e``."""
    return {x.var for x in sub_expressions(e) if isinstance(x, ast.Column | ast.Classifier)}
