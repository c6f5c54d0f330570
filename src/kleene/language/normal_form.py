"""A FILTER's OR distributed over its pattern where a side names an enclosing variable.

The CEL thesis's LP normal form (Thm 5.3) puts each unary condition on the
variable it filters: it lifts a condition naming an enclosing pattern's
variable to that pattern (kleene does this step in
:mod:`kleene.language.scopes`), after unfolding the filters (step 2):
``φ FILTER (θ1 OR θ2)`` becomes ``(φ FILTER θ1) OR (φ FILTER θ2)``.  That is
CORE's own reading of an OR of conditions (the paper's footnote 1), so the
rewrite changes no result; it lets each side's atoms be lifted on their own.
Without it an atom naming an outer variable under an OR of conditions was
refused ("one side of an OR of conditions; write the OR as an OR of
patterns"): ``A AS a ; (B AS b FILTER a[v > 4] OR b[w > 1]) ; C`` now runs as
``A AS a ; ((B AS b FILTER a[v > 4]) OR (B AS b FILTER b[w > 1])) ; C``.

When such a FILTER comes before a variable it names, the unfolded OR is then
distributed over the sequence that binds that variable (:func:`_distribute`:
``(X OR Y) ; Z`` is ``X ; Z OR Y ; Z``), so that each branch binds, in every
match, the variable its condition is moved off (kleene.language.conditions).

Only FILTERs with such an atom under an OR are rewritten (an OR of local
conditions stays one FILTER, evaluated in one place); each unfolding doubles
the FILTER's pattern, so ``k`` such ORs in one FILTER give ``2^k`` copies
(the thesis's exponential bound), which the parser's limits keep small.
"""

from __future__ import annotations

import dataclasses

from kleene.language import ast
from kleene.language.conditions import atom_names, atoms, outer_names
from kleene.language.negation import rewrite_negations
from kleene.language.variables import bound_variables

__all__ = ["unfold_outer_ors"]


def unfold_outer_ors(query: ast.Query) -> ast.Query:
    """``query`` with ``NOT(...)`` and UNLESS's right side reading an enclosing variable
    rewritten (:mod:`kleene.language.negation`), every FILTER whose OR names an enclosing variable unfolded, and every OR
    one of whose sides names a variable bound later distributed over the sequence that binds
    it (the same object when there is none)."""
    written = query.where
    # NOT(...) and UNLESS's right side reading an enclosing variable first (negation.py).
    query = rewrite_negations(query)
    where = _unfold(query.where)
    if where is not written:
        where = _distribute(where)
    return query if where is query.where else dataclasses.replace(query, where=where)


def _distribute(p: ast.Pattern) -> ast.Pattern:
    """``(X OR Y) ; Z`` as ``X ; Z OR Y ; Z`` where a FILTER of ``X`` or ``Y`` names a variable
    bound in ``Z`` (thesis Thm 5.3: disjunctions go to the top): each side then binds the
    variables its conditions read in every match, so they can be moved onto the later one
    (kleene.language.conditions).  ``Z ; (X OR Y)`` is distributed too when a side names a
    variable bound neither in it nor in ``Z`` (bound further out, later).  ``;`` and ``:``
    distribute over OR (the thesis reads both sides of ``(X OR Y) ; Z`` from the same
    position), so no result changes."""
    changes = {
        name: new
        for name in ("pattern", "left", "right")
        if isinstance(old := getattr(p, name, None), ast.Pattern)
        and (new := _distribute(old)) is not old
    }
    if changes:
        p = dataclasses.replace(p, **changes)  # type: ignore[arg-type]
    if not isinstance(p, ast.Seq):
        return p
    left, right = p.left, p.right
    if isinstance(left, ast.Or) and (outer_names(left.left) | outer_names(left.right)) & bound_variables(right):
        return ast.Or(
            _distribute(dataclasses.replace(p, left=left.left)),
            _distribute(dataclasses.replace(p, left=left.right)),
            p.span,
        )
    if isinstance(right, ast.Or) and (
        (outer_names(right.left) | outer_names(right.right)) - bound_variables(left)
    ):
        return ast.Or(
            _distribute(dataclasses.replace(p, right=right.left)),
            _distribute(dataclasses.replace(p, right=right.right)),
            p.span,
        )
    return p


def _unfold(p: ast.Pattern) -> ast.Pattern:
    changes = {
        name: new
        for name in ("pattern", "left", "right")
        if isinstance(old := getattr(p, name, None), ast.Pattern)
        and (new := _unfold(old)) is not old
    }
    if changes:
        p = dataclasses.replace(p, **changes)  # type: ignore[arg-type]
    if not isinstance(p, ast.Filter):
        return p
    inner = bound_variables(p.pattern)
    parts = _conjuncts(p.condition)
    for k, part in enumerate(parts):
        if isinstance(part, ast.FilterOr) and any(
            not atom_names(atom) <= inner for atom in atoms(part)
        ):
            rest = parts[:k] + parts[k + 1 :]
            sides = [
                _unfold(ast.Filter(p.pattern, _and([*rest, side]), p.span))
                for side in (part.left, part.right)
            ]
            return ast.Or(sides[0], sides[1], p.span)
    return p


def _conjuncts(cond: ast.FilterExpr) -> list[ast.FilterExpr]:
    if isinstance(cond, ast.FilterAnd):
        return _conjuncts(cond.left) + _conjuncts(cond.right)
    return [cond]


def _and(parts: list[ast.FilterExpr]) -> ast.FilterExpr:
    out = parts[0]
    for part in parts[1:]:
        out = ast.FilterAnd(out, part, out.span)
    return out


