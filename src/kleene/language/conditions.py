"""Conditions between events: which filters are n-ary, and when they make sense.

A FILTER atom ``x[P]`` is *unary* when ``P`` reads only the event bound to
``x`` (CORE's CEQL), and *n-ary* when it also reads ``a.attr`` (the event
bound to another variable ``a``) or ``prev(x).attr`` (the event bound to
``x`` just before the current one).  n-ary atoms run on the register engine
(:mod:`kleene.registers`), which stores events in registers as the SRT papers
do; unary ones keep CORE's tECS engine.

The valuation semantics (docs/semantics.md) of ``(φ FILTER x[P])`` is "every
event ``e`` of ``V(x)`` satisfies ``P``", with ``a.attr`` read on *the* event
of ``V(a)`` and ``prev(x).attr`` on the event of ``V(x)`` just before ``e``
(vacuously true for the first).  A register automaton computes exactly that
when, in every match of ``φ``, ``a`` is bound to exactly one event and that
event comes before every event of ``x``: its register is written once, before
any guard reads it (RMA's "bounded" expressions, Definition 2).  The checks
below enforce that; :func:`problem` says what is wrong otherwise.  A condition
over single events may be written on any of its variables:
:func:`on_later_variables` moves it onto the one bound last before compiling.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from kleene.language import ast
from kleene.language.variables import bound_variables, children, single_event

MANY = 2
"""``binding_count`` of a variable bound to several events in some match."""


def var_attrs(node: ast.Pred | ast.Expr) -> Iterator[ast.VarAttr]:
    """Every ``a.attr`` / ``prev(a).attr`` in a predicate or expression."""
    if isinstance(node, ast.VarAttr):
        yield node
        return
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(node, name, None)
        if child is not None:
            yield from var_attrs(child)


def conjuncts(pred: ast.Pred) -> list[ast.Pred]:
    """The top-level conjuncts of a predicate (``P AND Q AND R`` -> ``[P, Q, R]``)."""
    if isinstance(pred, ast.PAnd):
        return conjuncts(pred.left) + conjuncts(pred.right)
    return [pred]


def reads_prev(pred: ast.Pred) -> bool:
    return any(r.prev for r in var_attrs(pred))


def reads_others(pred: ast.Pred, target: str) -> bool:
    """Does ``pred`` (on variable ``target``) read another event than the current one?"""
    return any(r.prev or r.var != target for r in var_attrs(pred))


def is_nary(atom: ast.FilterAtom) -> bool:
    """Does ``atom`` read an event other than the one it filters?"""
    return reads_others(atom.pred, atom.var)


def atoms(cond: ast.FilterExpr) -> Iterator[ast.FilterAtom]:
    if isinstance(cond, ast.FilterAtom):
        yield cond
    else:
        yield from atoms(cond.left)
        yield from atoms(cond.right)


def atom_names(atom: ast.FilterAtom) -> frozenset[str]:
    """The variables an atom needs bound: its own and those it reads (``prev`` is its own)."""
    return frozenset({atom.var} | {r.var for r in var_attrs(atom.pred) if not r.prev})


def outer_names(p: ast.Pattern) -> frozenset[str]:
    """The variables FILTERs inside ``p`` name (``prev`` aside) that ``p`` does not bind."""
    found: set[str] = set()
    todo = [p]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Filter):
            for atom in atoms(node.condition):
                found |= atom_names(atom)
        todo.extend(children(node))
    return frozenset(found) - bound_variables(p)


def nary_filters(p: ast.Pattern) -> Iterator[tuple[ast.Filter, ast.FilterAtom]]:
    """Every n-ary FILTER atom of a pattern, with the FILTER node it belongs to."""
    if isinstance(p, ast.Filter):
        for atom in atoms(p.condition):
            if is_nary(atom):
                yield p, atom
    if isinstance(p, ast.EventType):
        return
    if isinstance(p, ast.As | ast.Filter | ast.Iter | ast.Star | ast.Repeat | ast.NotEvent | ast.Selector):
        yield from nary_filters(p.pattern)
    else:
        yield from nary_filters(p.left)
        yield from nary_filters(p.right)


def has_conditions(p: ast.Pattern) -> bool:
    """Whether some FILTER of the pattern relates two events (register engine)."""
    return next(nary_filters(p), None) is not None


def binding_count(p: ast.Pattern, var: str) -> int | None:
    """How many events ``var`` is bound to in a match of ``p``: 0, 1 or MANY.

    None when it differs between matches (bound on one side of an OR only).
    """
    if isinstance(p, ast.EventType):
        return 1 if p.name == var else 0
    if isinstance(p, ast.As):
        if p.var == var:
            return 1 if single_event(p.pattern) else MANY
        return binding_count(p.pattern, var)
    if isinstance(p, ast.Filter | ast.Selector):
        return binding_count(p.pattern, var)
    if isinstance(p, ast.Unless):
        return binding_count(p.left, var)  # the right side binds nothing outside
    if isinstance(p, ast.Repeat):
        # As if written out with ';': p{1} is p; p{0,m} may bind nothing (like *).
        inner = binding_count(p.pattern, var)
        if inner == 0:
            return 0
        if p.low == 0 or inner is None:
            return None
        return inner if p.high == 1 else MANY
    if isinstance(p, ast.Iter | ast.Star):
        inner = binding_count(p.pattern, var)
        if inner == 0:
            return 0
        return None if isinstance(p, ast.Star) or inner is None else MANY
    if isinstance(p, ast.NotEvent):
        return 0
    if isinstance(p, ast.Or):
        left, right = binding_count(p.left, var), binding_count(p.right, var)
        return left if left == right else None
    left, right = binding_count(p.left, var), binding_count(p.right, var)
    if left is None or right is None:
        return None
    return min(MANY, left + right)


def precedes(p: ast.Pattern, first: str, then: str) -> bool:
    """In every match of ``p``, is the event of ``first`` before every event of ``then``?

    ``first`` must be bound to exactly one event (``binding_count == 1``).
    """
    names = bound_variables(p)
    if first not in names or then not in names:
        return True
    if isinstance(p, ast.As):
        if p.var in (first, then):
            return False  # one covers the other's events
        return precedes(p.pattern, first, then)
    if isinstance(p, ast.Filter):
        return precedes(p.pattern, first, then)
    if isinstance(p, ast.Or):
        return precedes(p.left, first, then) and precedes(p.right, first, then)
    if isinstance(p, ast.Seq):
        if first in bound_variables(p.left):
            return then not in bound_variables(p.left) or precedes(p.left, first, then)
        return then not in bound_variables(p.left) and precedes(p.right, first, then)
    if isinstance(p, ast.Unless):
        return precedes(p.left, first, then)
    if isinstance(p, ast.And | ast.All):
        # The sides' events interleave: only an order inside one side is known.
        for side, other in ((p.left, p.right), (p.right, p.left)):
            if {first, then} <= bound_variables(side):
                return not {first, then} & bound_variables(other) and precedes(side, first, then)
        return False
    if isinstance(p, ast.Repeat) and p.high == 1:
        return precedes(p.pattern, first, then)  # one copy (or none)
    return False  # iterations repeat `first`


def problem(
    filtered: ast.Pattern, atom: ast.FilterAtom, ref: ast.VarAttr, *, movable: bool = True
) -> str | None:
    """Why ``ref`` cannot be read in ``filtered FILTER atom`` (None if it can).

    ``movable``: a variable bound after ``atom.var`` may be read when the whole
    condition can be written on a later variable (:func:`on_later_variable`).
    """
    x = atom.var
    if ref.prev:
        if ref.var != x:
            return (
                f"prev({ref.var}) may only name the filtered variable: "
                f"write {x}[... prev({x}).{ref.name} ...] or {ref.var}.{ref.name}"
            )
        return None
    a = ref.var
    if a == x:
        return None
    if a not in bound_variables(filtered):
        return (
            f"variable {a!r} is not bound by the pattern this FILTER applies to "
            "(put the FILTER after a pattern that binds both variables)"
        )
    count = binding_count(filtered, a)
    if count is None:
        return (
            f"variable {a!r} is not bound in every match of the pattern this FILTER applies "
            "to (it is on one side of an OR, or under *)"
        )
    if count != 1:
        return (
            f"variable {a!r} is bound to several events here (inside an iteration, or "
            f"more than once), so {a}.{ref.name} has no single value; put the FILTER "
            "inside the iteration, bind the one event to compare with to a variable of "
            "its own, or compare consecutive events of an iteration with prev(...)"
        )
    across = across_conjunction(filtered, a, x)
    if across is not None:
        if movable and across_pair(filtered, atom) == a:
            return None  # evaluated on whichever of the two events comes second
        name = type(across).__name__.upper()
        return (
            f"variables {a!r} and {x!r} are bound on different sides of {name} (or both "
            f"sides bind one of them), whose events interleave in any order: a condition "
            f"between them is evaluated when the second of the two events arrives, which "
            f"needs each bound to exactly one event, no prev(...), and no third variable "
            f"in the condition; put it inside one side, or use ';' if {a!r} must come first"
        )
    if not precedes(filtered, a, x):
        if movable and on_later_variable(filtered, atom) is not None:
            return None  # evaluated on the variable bound last (moved at compile time)
        if binding_count(filtered, x) != 1:
            several = (
                "not bound in every match (one side of an OR, or under *)"
                if binding_count(filtered, x) is None
                else "bound to several events"
            )
            return (
                f"variable {a!r} is not bound yet when {x!r} is matched, and {x!r} is "
                f"{several}, so the condition cannot be moved onto {a!r} either: a "
                f"condition on {x!r} may only read variables matched before every event of "
                f"{x!r}; bind the events to compare with to a variable matched first"
            )
        return (
            f"variable {a!r} is not bound yet when {x!r} is matched, and no variable of the "
            f"condition is matched after all the others (in every match) to evaluate it on: "
            f"write it on a variable that is (e.g. {a}[... {x}.attr ...] when {a!r} comes last)"
        )
    return None


def across_pair(filtered: ast.Pattern, atom: ast.FilterAtom) -> str | None:
    """The other variable of a condition between two single events that ``filtered`` does not
    order (the sides of an AND/ALL), if ``atom`` is one: ``(A AS a ALL B AS b) FILTER
    b[v > a.v]`` is evaluated on ``b`` when ``a`` came first, on ``a`` (swapped, by
    :func:`swap_target`) when ``b`` did, and on the event itself when both are one event
    (kleene.registers.automaton).  Needs the two variables bound to one event each and no
    ``prev(...)``; None otherwise."""
    refs = list(var_attrs(atom.pred))
    others = {r.var for r in refs} - {atom.var}
    if any(r.prev for r in refs) or len(others) != 1:
        return None
    (a,) = others
    if binding_count(filtered, a) != 1 or binding_count(filtered, atom.var) != 1:
        return None
    return a if across_conjunction(filtered, a, atom.var) is not None else None


def on_later_variable(filtered: ast.Pattern, atom: ast.FilterAtom) -> ast.FilterAtom | None:
    """``atom`` written on the variable of its condition that is bound last, if it can be.

    ``a[2 * c.price >= price]``, with ``a`` and ``c`` each bound to one event and
    ``c`` after ``a`` in every match of ``filtered``, means "the pair of events
    satisfies the comparison", which ``c[2 * price >= a.price]`` says too: the
    valuation semantics of a condition over single events does not depend on
    the variable it is written on.  Written on the last one, a register engine
    evaluates it when that event arrives, all the others being stored by then.
    None when the atom reads ``prev(...)``, when a variable of it may bind
    several events or none (then the variable it is written on matters), or
    when no variable comes after all the others (across AND/ALL sides, or on
    one event, ``(T as x) as y``).
    """
    refs = list(var_attrs(atom.pred))
    if any(r.prev for r in refs):
        return None
    names = sorted({atom.var} | {r.var for r in refs})
    if len(names) < 2 or any(binding_count(filtered, v) != 1 for v in names):
        return None
    for last in names:
        if last == atom.var:
            continue
        moved = ast.FilterAtom(last, swap_target(atom.pred, atom.var, last), atom.span)
        if all(
            problem(filtered, moved, r, movable=False) is None for r in var_attrs(moved.pred)
        ):
            return moved
    return None


def swap_target(node: Any, old: str, new: str) -> Any:
    """``node`` read from ``new``'s event: ``attr`` becomes ``old.attr``, ``new.attr`` ``attr``."""
    return read_on_event(node, old, frozenset({new}))


def read_on_event(node: Any, outer: str | None, names: frozenset[str]) -> Any:
    """``node`` read on one event bound to each of ``names``: ``x.attr`` for ``x`` in ``names``
    becomes ``attr``, and a bare ``attr`` (the atom's own variable's) becomes ``outer.attr``
    (kept when ``outer`` is None)."""
    if isinstance(node, ast.Attr) and outer is not None:
        return ast.VarAttr(outer, node.name, False, node.span)
    if isinstance(node, ast.VarAttr) and node.var in names and not node.prev:
        return ast.Attr(node.name, node.span)
    changes = {}
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(node, name, None)
        if child is not None:
            changes[name] = read_on_event(child, outer, names)
    return dataclasses.replace(node, **changes) if changes else node


def on_later_variables(p: ast.Pattern) -> ast.Pattern:
    """Every condition of ``p`` written on the variable it is evaluated on (see
    :func:`on_later_variable`): the form the register engine runs.  ``p`` was checked, so an
    atom that reads a variable not bound yet can be moved."""
    if isinstance(p, ast.EventType):
        return p
    if isinstance(p, ast.Filter):
        inner = on_later_variables(p.pattern)
        return ast.Filter(inner, _moved_filter(p.pattern, p.condition), p.span)
    if isinstance(p, ast.As | ast.Iter | ast.Star | ast.Repeat | ast.NotEvent | ast.Selector):
        return dataclasses.replace(p, pattern=on_later_variables(p.pattern))
    return dataclasses.replace(
        p, left=on_later_variables(p.left), right=on_later_variables(p.right)
    )


def _moved_filter(filtered: ast.Pattern, cond: ast.FilterExpr) -> ast.FilterExpr:
    if isinstance(cond, ast.FilterAtom):
        stays = all(
            problem(filtered, cond, r, movable=False) is None for r in var_attrs(cond.pred)
        )
        return cond if stays else on_later_variable(filtered, cond) or cond
    return dataclasses.replace(
        cond, left=_moved_filter(filtered, cond.left), right=_moved_filter(filtered, cond.right)
    )


def across_conjunction(p: ast.Pattern, a: str, x: str) -> ast.And | ast.All | None:
    """The AND/ALL of ``p`` that has ``a`` and ``x`` on different sides, if any.

    Also when one side binds both and the other side one of them: either way
    the conjunction does not order them (see :func:`precedes`).
    """
    names = bound_variables(p)
    if a not in names or x not in names:
        return None
    if isinstance(p, ast.And | ast.All):
        left, right = bound_variables(p.left), bound_variables(p.right)
        for side, other in ((left, right), (right, left)):
            if {a, x} <= side and not {a, x} & other:
                return across_conjunction(p.left if side is left else p.right, a, x)
        return p
    if isinstance(p, ast.EventType):
        return None
    if isinstance(p, ast.As | ast.Filter | ast.Iter | ast.Star | ast.Repeat | ast.NotEvent | ast.Selector):
        return across_conjunction(p.pattern, a, x)
    if isinstance(p, ast.Unless):
        return across_conjunction(p.left, a, x)
    return across_conjunction(p.left, a, x) or across_conjunction(p.right, a, x)


def plain_attrs(node: Any, target: str) -> Any:
    """``x.attr`` inside ``x[...]`` is just ``attr`` (a unary predicate or expression)."""
    if isinstance(node, ast.VarAttr) and node.var == target and not node.prev:
        return ast.Attr(node.name, node.span)
    changes = {}
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(node, name, None)
        if child is not None:
            changes[name] = plain_attrs(child, target)
    return dataclasses.replace(node, **changes) if changes else node


def without_self_references(p: ast.Pattern) -> ast.Pattern:
    """``x[x.price > 1]`` is ``x[price > 1]``: rewrite such references to plain attributes."""
    if isinstance(p, ast.EventType):
        return p
    if isinstance(p, ast.Filter):
        return ast.Filter(without_self_references(p.pattern), _plain_filter(p.condition), p.span)
    if isinstance(p, ast.As | ast.Iter | ast.Star | ast.Repeat | ast.NotEvent | ast.Selector):
        return dataclasses.replace(p, pattern=without_self_references(p.pattern))
    return dataclasses.replace(
        p, left=without_self_references(p.left), right=without_self_references(p.right)
    )


def _plain_filter(cond: ast.FilterExpr) -> ast.FilterExpr:
    if isinstance(cond, ast.FilterAtom):
        return dataclasses.replace(cond, pred=plain_attrs(cond.pred, cond.var))
    return dataclasses.replace(cond, left=_plain_filter(cond.left), right=_plain_filter(cond.right))


def unsupported_with_conditions(p: ast.Pattern) -> ast.Pattern | None:
    """The first operator the register engine does not evaluate (NOT of a condition)."""
    if isinstance(p, ast.NotEvent):
        return p if has_conditions(p.pattern) else None
    if isinstance(p, ast.EventType):
        return None
    if isinstance(p, ast.As | ast.Filter | ast.Iter | ast.Star | ast.Repeat | ast.Selector):
        return unsupported_with_conditions(p.pattern)
    return unsupported_with_conditions(p.left) or unsupported_with_conditions(p.right)
