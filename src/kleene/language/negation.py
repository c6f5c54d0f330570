"""Conditions inside ``NOT(...)`` and on UNLESS's right side that read an enclosing variable.

``A AS a ; NOT(C AS c FILTER c[v > a.v]) ; B AS b`` (issue 18): ``NOT(ψ)`` is one event on
which ψ does not hold, ψ read with the valuation around it (the oracle,
:mod:`kleene.reference.patterns`, checks it there).  Two rewrites give the engines forms
they already run, applied before the other normal-form steps
(:func:`kleene.language.normal_form.unfold_outer_ors`):

* **Thm 5.3's lift** (CEL thesis, step 1) of a *unary* atom on an outer variable,
  ``x[P]`` reading only ``x``'s own event, inside ``NOT(...)`` or on the right of UNLESS:
  the lowest pattern ``φx`` around it that binds ``x`` becomes
  ``(φx^t FILTER x[P]) OR (φx^f FILTER x[NOT P])``, ``φx^t``/``φx^f`` being ``φx`` with
  the atom replaced by TRUE/FALSE (a FALSE filter matches nothing, ``NOT`` of nothing is
  any event ``_``, ``X UNLESS`` nothing is ``X``).  Done when ``x`` binds exactly one event
  in every match of ``φx`` (then ``x[P]`` and ``x[NOT P]`` split the matches), and the path
  crosses no ``*``, counted repetition or selector; so the query may stay on the tECS engine.
* **Negation pushed to the predicates** (Thm 5.3's step 0) for the atoms left, conditions
  between events: ψ is single-event, so it is an OR of alternatives "an event of type ``T``
  satisfying ``C``"; ``NOT(ψ)`` is an event of a type ψ does not name (``NOT(T1 OR ... OR
  Tm)``), or of a named type ``T`` failing every alternative of ``T``:
  ``T AS f FILTER f[NOT(C1 OR C2 ...)]``, ``f`` a fresh variable.  On the register engine
  that is one transition per type with the guard ``¬(C1 ∨ C2 ...)`` reading the outer
  registers, bounded per run.  The atom on ``f`` is then an ordinary condition naming an
  enclosing variable (lifted, and moved onto the later variable: a variable bound *after*
  the NOT is read when it arrives, the NOT's event kept in ``f``'s register, the OR
  distributed over the sequence binding it, kleene.language.normal_form).  ``T`` binds the
  NOT's event too, so the rewrite is not made when the query reads or selects ``T``
  elsewhere, nor for stream-qualified types or ``prev(...)`` (those stay refused).

The right side of UNLESS with a condition *between* its events and the left side's is not
rewritten: its matches depend on each left match, so the register engine runs it once per left
start (a seeded monitor, :mod:`kleene.registers.runtime`; :mod:`kleene.language.scopes` checks
when that applies).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from kleene.language import ast
from kleene.language.conditions import (
    atom_names,
    atoms,
    binding_count,
    outer_names,
    read_on_event,
    var_attrs,
)
from kleene.language.variables import WILDCARD, bound_variables, children, fresh_names

__all__ = ["rewrite_negations"]

_FALSE = ast.EventType("\x00nothing")
"""A pattern that matches nothing (only while rewriting; simplified away)."""


def rewrite_negations(query: ast.Query) -> ast.Query:
    """``query`` with the two rewrites of the module docstring (the same object if none)."""
    where = _lift_unary(query.where)
    where = _negate(where, _used_names(query, where))
    return query if where is query.where else dataclasses.replace(query, where=where)


# ------------------------------------------------------------- Thm 5.3's lift


def _unary_outer(atom: ast.FilterAtom, inner: frozenset[str]) -> bool:
    """``x[P]`` with ``x`` not bound by the FILTER's pattern and ``P`` reading ``x`` only."""
    return atom.var not in inner and all(
        r.var == atom.var and not r.prev for r in var_attrs(atom.pred)
    )


def _find_lift(p: ast.Pattern, path: list[ast.Pattern]) -> tuple[ast.Filter, ast.FilterAtom, ast.Pattern] | None:
    """The first unary outer atom inside NOT or UNLESS's right side that can be lifted: its
    FILTER, the atom and ``φx``."""
    if isinstance(p, ast.Filter):
        inner = bound_variables(p.pattern)
        for atom in _top(p.condition):
            if not _unary_outer(atom, inner):
                continue
            negated = False
            child: ast.Pattern = p
            for node in reversed(path):
                if isinstance(node, ast.NotEvent) or (
                    isinstance(node, ast.Unless) and child is node.right
                ):
                    negated = True
                if isinstance(node, ast.Star | ast.Repeat | ast.Selector):
                    break
                binds = bound_variables(
                    node.left if isinstance(node, ast.Unless) else node
                ) if not isinstance(node, ast.NotEvent) else frozenset()
                if atom.var in binds:
                    if negated and binding_count(node, atom.var) == 1:
                        return p, atom, node
                    break
                child = node
    for c in children(p):
        found = _find_lift(c, [*path, p])
        if found is not None:
            return found
    return None


def _top(cond: ast.FilterExpr) -> Iterator[ast.FilterAtom]:
    if isinstance(cond, ast.FilterAnd):
        yield from _top(cond.left)
        yield from _top(cond.right)
    elif isinstance(cond, ast.FilterAtom):
        yield cond


def _lift_unary(p: ast.Pattern) -> ast.Pattern:
    for _ in range(16):  # each lift removes one atom; the parser's limits keep them few
        found = _find_lift(p, [])
        if found is None:
            return p
        where, atom, scope = found
        kept = _without(where.condition, atom)
        when_true = _replace(scope, where, where.pattern if kept is None else
                             dataclasses.replace(where, condition=kept))
        when_false = _simplify(_replace(scope, where, _FALSE))
        pos = ast.Filter(when_true, atom, atom.span)
        negated = ast.FilterAtom(atom.var, ast.PNot(atom.pred, atom.span), atom.span)
        alternatives: ast.Pattern = pos
        if when_false is not _FALSE:
            alternatives = ast.Or(pos, ast.Filter(when_false, negated, atom.span), scope.span)
        p = _replace(p, scope, alternatives)
    return p


def _without(cond: ast.FilterExpr, atom: ast.FilterAtom) -> ast.FilterExpr | None:
    if cond is atom:
        return None
    if isinstance(cond, ast.FilterAnd):
        left, right = _without(cond.left, atom), _without(cond.right, atom)
        if left is None or right is None:
            return left or right
        return dataclasses.replace(cond, left=left, right=right)
    return cond


def _replace(p: ast.Pattern, old: ast.Pattern, new: ast.Pattern) -> ast.Pattern:
    """``p`` with the node ``old`` (by identity) replaced by ``new``."""
    if p is old:
        return new
    changes: dict[str, Any] = {}
    for name in ("pattern", "left", "right"):
        child = getattr(p, name, None)
        if isinstance(child, ast.Pattern) and (made := _replace(child, old, new)) is not child:
            changes[name] = made
    return dataclasses.replace(p, **changes) if changes else p


def _simplify(p: ast.Pattern) -> ast.Pattern:
    """``p`` with the FALSE pattern propagated: the result is ``_FALSE`` or free of it."""
    if p is _FALSE or isinstance(p, ast.EventType):
        return p
    kids: dict[str, Any] = {n: _simplify(getattr(p, n)) for n in ("pattern", "left", "right")
            if isinstance(getattr(p, n, None), ast.Pattern)}
    if isinstance(p, ast.Or):
        if kids["left"] is _FALSE:
            return kids["right"]
        if kids["right"] is _FALSE:
            return kids["left"]
    elif isinstance(p, ast.Unless):
        if kids["left"] is _FALSE:
            return _FALSE
        if kids["right"] is _FALSE:
            return kids["left"]
    elif isinstance(p, ast.NotEvent):
        if kids["pattern"] is _FALSE:
            return ast.EventType(WILDCARD, None, p.span)  # NOT of nothing: every event
    elif any(k is _FALSE for k in kids.values()):
        return _FALSE  # ;, AND, ALL, +, AS, FILTER of nothing match nothing
    return dataclasses.replace(p, **kids) if kids else p


# ------------------------------------------------------- negation to predicates


@dataclasses.dataclass(frozen=True)
class _Alt:
    """One alternative of a single-event pattern: an event of ``type`` satisfying ``conds``."""

    type: str
    names: frozenset[str]
    conds: tuple[ast.Pred, ...]


def _used_names(query: ast.Query, where: ast.Pattern) -> frozenset[str]:
    """Variables the query selects or its FILTERs outside ``NOT(...)`` read or filter (one
    inside a NOT is about the NOT's own event)."""
    used = {i.var for i in query.select.items or ()}
    todo = [where]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.NotEvent):
            continue
        if isinstance(node, ast.Filter):
            for atom in atoms(node.condition):
                used |= atom_names(atom)
        todo.extend(children(node))
    return frozenset(used)


def _alternatives(p: ast.Pattern, local: frozenset[str]) -> list[_Alt] | None:
    """ψ as an OR of alternatives, or None when the rewrite does not cover it."""
    if isinstance(p, ast.EventType):
        if p.stream is not None:
            return None
        return [_Alt(p.name, frozenset() if p.name == WILDCARD else frozenset({p.name}), ())]
    if isinstance(p, ast.As):
        inner = _alternatives(p.pattern, local)
        return None if inner is None else [
            dataclasses.replace(a, names=a.names | {p.var}) for a in inner
        ]
    if isinstance(p, ast.Or):
        left, right = _alternatives(p.left, local), _alternatives(p.right, local)
        return None if left is None or right is None else left + right
    if isinstance(p, ast.Filter):
        base = _alternatives(p.pattern, local)
        if base is None:
            return None
        return _filtered(base, p.condition, bound_variables(p.pattern), local)
    return None


def _filtered(
    alts: list[_Alt], cond: ast.FilterExpr, inner: frozenset[str], local: frozenset[str]
) -> list[_Alt] | None:
    if isinstance(cond, ast.FilterOr):  # (ψ FILTER θ1) OR (ψ FILTER θ2)
        left = _filtered(alts, cond.left, inner, local)
        right = _filtered(alts, cond.right, inner, local)
        return None if left is None or right is None else left + right
    if isinstance(cond, ast.FilterAnd):
        first = _filtered(alts, cond.left, inner, local)
        return None if first is None else _filtered(first, cond.right, inner, local)
    out = []
    for alt in alts:
        if any(r.prev for r in var_attrs(cond.pred)):
            return None
        if cond.var not in inner and cond.var in local:
            return None  # bound by a pattern around the FILTER inside ψ
        if cond.var in inner and cond.var not in alt.names:
            out.append(alt)  # this alternative binds no event to it: vacuously true
            continue
        if any(r.var in local and r.var not in alt.names for r in var_attrs(cond.pred)):
            return None
        pred = read_on_event(cond.pred, cond.var if cond.var not in alt.names else None, alt.names)
        out.append(dataclasses.replace(alt, conds=(*alt.conds, pred)))
    return out


def _any(preds: list[ast.Pred]) -> ast.Pred:
    out = preds[0]
    for pred in preds[1:]:
        out = ast.POr(out, pred)
    return out


def _negate(p: ast.Pattern, used: frozenset[str]) -> ast.Pattern:
    fresh = fresh_names("not", set(bound_variables(p)) | set(used))

    def walk(node: ast.Pattern) -> ast.Pattern:
        if isinstance(node, ast.NotEvent):
            made = _positive(node, used, fresh) if outer_names(node.pattern) else None
            return node if made is None else made
        changes: dict[str, Any] = {n: walk(c) for n in ("pattern", "left", "right")
                   if isinstance(c := getattr(node, n, None), ast.Pattern)}
        changes = {n: c for n, c in changes.items() if c is not getattr(node, n)}
        return dataclasses.replace(node, **changes) if changes else node

    return walk(p)


def _positive(
    node: ast.NotEvent, used: frozenset[str], fresh: Callable[[], str]
) -> ast.Pattern | None:
    """``NOT(ψ)`` as an OR of single events (module docstring), or None if not covered."""
    alts = _alternatives(node.pattern, bound_variables(node.pattern))
    if alts is None:
        return None
    span = node.span
    named = sorted({a.type for a in alts if a.type != WILDCARD})
    if set(named) & used:
        return None  # the type's variable would bind the NOT's event
    anywhere = [a.conds for a in alts if a.type == WILDCARD]
    branches: list[ast.Pattern] = []
    for t in named:
        conds = [a.conds for a in alts if a.type == t] + anywhere
        if any(not c for c in conds):
            continue  # every event of type t matches ψ
        f = fresh()
        fails = ast.PNot(_any([_all(c) for c in conds]), span)
        branches.append(ast.Filter(ast.As(ast.EventType(t, None, span), f, span),
                                   ast.FilterAtom(f, fails, span), span))
    if not any(not c for c in anywhere):
        others: ast.Pattern = ast.EventType(WILDCARD, None, span)
        if named:
            types: ast.Pattern = ast.EventType(named[0], None, span)
            for t in named[1:]:
                types = ast.Or(types, ast.EventType(t, None, span), span)
            others = ast.NotEvent(types, span)
        if anywhere:
            f = fresh()
            fails = ast.PNot(_any([_all(c) for c in anywhere]), span)
            others = ast.Filter(ast.As(others, f, span), ast.FilterAtom(f, fails, span), span)
        branches.insert(0, others)
    if not branches:
        return ast.NotEvent(ast.EventType(WILDCARD, None, span), span)  # ψ is every event
    out = branches[0]
    for b in branches[1:]:
        out = ast.Or(out, b, span)
    return out


def _all(preds: tuple[ast.Pred, ...]) -> ast.Pred:
    out = preds[0]
    for pred in preds[1:]:
        out = ast.PAnd(out, pred)
    return out
