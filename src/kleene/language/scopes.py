"""Conditions that read an enclosing scope: a FILTER inside a sub-pattern naming an outer variable.

The CEL thesis passes the valuation of enclosing scopes *down* into a formula,
so a FILTER may name a variable its own pattern does not bind (§5.1, φ4 and
φ6):

* ``H AS x ; (T AS y FILTER y[id = x.id])+ ; H AS z`` -- every ``y`` of the
  iteration has ``x``'s id (φ4);
* ``T AS x ; ((T AS y FILTER x[temp >= 40]) OR (H AS y FILTER x[temp < 40]))``
  -- a condition on ``x`` that chooses the branch (φ6, not in LP normal form).

kleene evaluates such a condition at the *nearest enclosing pattern that binds
every variable it names* (the oracle, :mod:`kleene.reference.oracle`, defines
it that way, independently).  :func:`lift_outer_conditions` rewrites the query
so that every FILTER names only variables of its own pattern, which both
engines already evaluate: the atom is taken out of its FILTER and put on a
FILTER around that enclosing pattern.

* ``y[P]`` with ``y`` bound inside (φ4) keeps its variable: outside, ``y``'s
  events are the same ones, provided nothing between the two binds ``y``
  again (checked); when ``y`` is every event of the FILTER's pattern
  (``T AS y FILTER ...``) it becomes a fresh variable bound to that pattern,
  as below, so that another ``y`` (the other branch of an OR) is not touched;
* ``x[P]`` with ``x`` itself outer (φ6) holds or not for the match as a whole,
  so it becomes ``f[P']`` on a fresh variable ``f`` bound to the FILTER's whole
  pattern, ``P'`` reading ``x.attr`` where ``P`` read ``attr``: "every event of
  ``f`` satisfies a statement about ``x``" is that statement (``f`` is never
  empty).

This is Thm 5.3's "lift" step without its OR distribution: the conditions
between events the lifted atoms become run on the register engine.  An atom is
left in place (and the checker's error says why) when it sits under an OR of
conditions, reads ``prev(...)``, is inside a ``NOT(...)`` that
:mod:`kleene.language.negation` did not rewrite or on the right of ``UNLESS``
relating its events to the left side's where no seeded monitor applies, or when no
enclosing pattern binds its variables.  An atom on UNLESS's right side reading left variables
that are each the left match's first event stays where written too, recorded in
:attr:`Lifted.monitored`: the engine runs that right side once per left start, seeded with them
(:mod:`kleene.registers.runtime`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from kleene.language import ast
from kleene.language.conditions import (
    atom_names,
    atoms,
    binding_count,
    on_later_variables,
    var_attrs,
    without_self_references,
)
from kleene.language.printer import pattern_to_ceql
from kleene.language.variables import (
    bound_variables,
    children,
    fresh_names,
    nullable,
    single_event,
)

__all__ = ["Lifted", "evaluated_form", "lift_outer_conditions"]


@dataclasses.dataclass(frozen=True)
class Lifted:
    """What :func:`lift_outer_conditions` made of a pattern."""

    pattern: ast.Pattern
    stays: dict[int, str]
    """``id(atom)`` of an atom naming an outer variable that stays where written -> why."""
    shown: dict[str, str]
    """A fresh variable -> how messages name it (the variable it stands for)."""
    monitored: dict[int, frozenset[str]] = dataclasses.field(default_factory=dict)
    """``id(atom)`` of an atom on UNLESS's right side reading the left side's variables ->
    those variables: it stays where written, and the engine seeds the UNLESS's monitor with
    them (kleene.registers.runtime)."""


@dataclasses.dataclass
class _Lift:
    atom: ast.FilterAtom  # as written
    lifted: ast.FilterAtom  # as attached to the enclosing pattern
    fresh: str | None  # the variable bound to the FILTER's pattern (φ6), if any


def _top_conjuncts(cond: ast.FilterExpr) -> Iterator[ast.FilterExpr]:
    if isinstance(cond, ast.FilterAnd):
        yield from _top_conjuncts(cond.left)
        yield from _top_conjuncts(cond.right)
    else:
        yield cond


def _all_names(p: ast.Pattern) -> set[str]:
    names: set[str] = set()
    stack = [p]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.EventType):
            names.add(node.name)
        if isinstance(node, ast.As):
            names.add(node.var)
        if isinstance(node, ast.Filter):
            names |= {v for a in atoms(node.condition) for v in atom_names(a) | {a.var}}
        stack.extend(children(node))
    return names


def _binds_all(p: ast.Pattern, var: str) -> bool:
    """Is ``var`` bound to every event of every match of ``p``?"""
    if isinstance(p, ast.EventType):
        return p.name == var
    if isinstance(p, ast.As):
        return p.var == var or _binds_all(p.pattern, var)
    if isinstance(p, ast.Filter):
        return _binds_all(p.pattern, var)
    return False


def _plain(node: Any, var: str) -> Any:
    """``var.attr`` is ``attr`` in ``var[...]`` (the event itself), for a renamed ``var``."""
    if isinstance(node, ast.VarAttr) and node.var == var and not node.prev:
        return ast.Attr(node.name, node.span)
    changes = {}
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(node, name, None)
        if child is not None:
            changes[name] = _plain(child, var)
    return dataclasses.replace(node, **changes) if changes else node


def _with_target(node: Any, old: str) -> Any:
    """``P`` on ``old`` read from another event: ``attr`` becomes ``old.attr``."""
    if isinstance(node, ast.Attr):
        return ast.VarAttr(old, node.name, False, node.span)
    changes = {}
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(node, name, None)
        if child is not None:
            changes[name] = _with_target(child, old)
    return dataclasses.replace(node, **changes) if changes else node


def lift_outer_conditions(p: ast.Pattern) -> Lifted:
    """``p`` with every FILTER atom naming an outer variable moved to the nearest enclosing
    pattern binding all its variables (module docstring), and, for the atoms that name one and
    stay, why they could not be moved."""
    fresh = fresh_names("scope", _all_names(p))
    attach: dict[int, list[ast.FilterAtom]] = {}  # id(enclosing node) -> atoms to add
    moved: dict[int, _Lift] = {}  # id(atom as written) -> its lift
    why: dict[int, str] = {}
    shown: dict[str, str] = {}
    monitored: dict[int, frozenset[str]] = {}

    def place(atom: ast.FilterAtom, where: ast.Filter, path: list[ast.Pattern]) -> None:
        """Find where ``atom`` of the FILTER ``where`` goes (``path``: its ancestors)."""
        key = id(atom)
        needs = atom_names(atom)
        own = atom.var if atom.var in bound_variables(where.pattern) else None
        renamed = own is not None and _binds_all(where.pattern, own)
        if renamed:  # y is every event of the FILTER's pattern: a fresh name is y here
            own = None
            atom = ast.FilterAtom(atom.var, _plain(atom.pred, atom.var), atom.span)
        child: ast.Pattern = where
        for node in reversed(path):
            if isinstance(node, ast.NotEvent):
                why[key] = (
                    "it is inside NOT(...), which kleene rewrites into the events that fail "
                    "the condition (kleene.language.negation) only when the NOT names event "
                    "types without a stream that the query neither selects nor filters "
                    "elsewhere, and reads no prev(...): name the NOT's event type with AS "
                    "where it is used elsewhere (C AS c ... FILTER c[...])"
                )
                return
            if isinstance(node, ast.Unless) and child is node.right:
                outer = needs - bound_variables(node.right)
                problem = _unmonitored(atom, where, node, outer, path)
                if problem is None:  # the monitor runs per left start (issue 18)
                    monitored[key] = outer
                    return
                why[key] = problem + ". " + (
                    "A condition on a left variable "
                    "alone (a[v > 3]) runs (thesis Thm 5.3's lift); when the right side is "
                    "one event, say it with NOT between the left's events and select the "
                    "left's variables: SELECT a, b WHERE A AS a : NOT(C AS c FILTER "
                    "c[v > a.v])* : B AS b for (A AS a ; B AS b) UNLESS (C AS c FILTER "
                    "c[v > a.v])"
                )
                return
            siblings = [c for c in children(node) if c is not child]
            rebinds = isinstance(node, ast.As) and node.var == own
            if own is not None and (rebinds or any(own in bound_variables(s) for s in siblings)):
                why[key] = (
                    f"{own!r} is bound again outside this FILTER, so the condition on its "
                    "events here cannot be stated outside: rename one of them"
                )
                return
            if needs <= bound_variables(node):
                target = own or fresh()
                if not own:
                    pattern = pattern_to_ceql(where.pattern)
                    shown[target] = atom.var if renamed else f"the events of {pattern}"
                if own or renamed:
                    lifted = ast.FilterAtom(target, atom.pred, atom.span)
                else:
                    pred = _with_target(atom.pred, atom.var)
                    lifted = ast.FilterAtom(target, pred, atom.span)
                moved[key] = _Lift(atom, lifted, None if own else target)
                attach.setdefault(id(node), []).append(lifted)
                return
            child = node
        missing = sorted(needs - bound_variables(path[0] if path else where))
        why[key] = f"no pattern around it binds {', '.join(map(repr, missing))}"

    def find(node: ast.Pattern, path: list[ast.Pattern]) -> None:
        if isinstance(node, ast.Filter):
            inner = bound_variables(node.pattern)
            for part in _top_conjuncts(node.condition):
                if isinstance(part, ast.FilterAtom):
                    if not atom_names(part) <= inner and not any(
                        r.prev for r in var_attrs(part.pred)
                    ):
                        place(part, node, path)
                    elif not atom_names(part) <= inner:
                        why[id(part)] = "it reads prev(...), which is local to this FILTER"
                else:
                    for atom in atoms(part):
                        if not atom_names(atom) <= inner:
                            why[id(atom)] = (
                                "it is one side of an OR of conditions; write the OR as "
                                "an OR of patterns"
                            )
        for child in children(node):
            find(child, [*path, node])

    find(p, [])
    if not moved:
        return Lifted(p, why, shown, monitored)

    def rebuild(node: ast.Pattern) -> ast.Pattern:
        out: ast.Pattern
        if isinstance(node, ast.EventType):
            out = node
        elif isinstance(node, ast.Filter):
            inner = rebuild(node.pattern)
            kept = _without(node.condition, moved)
            lifts = [moved[id(a)] for a in atoms(node.condition) if id(a) in moved]
            for lift in lifts:
                if lift.fresh is not None:
                    inner = ast.As(inner, lift.fresh, node.span)
            out = inner if kept is None else ast.Filter(inner, kept, node.span)
        elif isinstance(node, ast.As | ast.Iter | ast.Star | ast.Repeat | ast.NotEvent | ast.Selector):
            out = dataclasses.replace(node, pattern=rebuild(node.pattern))
        else:
            out = dataclasses.replace(node, left=rebuild(node.left), right=rebuild(node.right))
        for atom in attach.get(id(node), ()):
            out = ast.Filter(out, atom, atom.span)
        return out

    return Lifted(rebuild(p), why, shown, monitored)


def _unmonitored(
    atom: ast.FilterAtom,
    where: ast.Filter,
    unless: ast.Unless,
    outer: frozenset[str],
    path: list[ast.Pattern],
) -> str | None:
    """Why ``atom``, on the right side of ``unless`` and reading its left side's ``outer``
    variables, cannot run on a monitor seeded per left start; None if it can."""
    shown = ", ".join(map(repr, sorted(outer)))
    if atom.var in outer:
        return (
            f"it is on the right of UNLESS and written on the left side's {atom.var!r}: write "
            "it on the right side's own variable (c[a.v < v] for a[v > c.v])"
        )
    if not outer <= bound_variables(unless.left):
        return f"it is on the right of UNLESS and reads {shown}, bound outside the UNLESS"
    if not (atom_names(atom) - outer) <= bound_variables(where.pattern):
        return (
            "it is on the right of UNLESS and reads both the left side's variables and "
            "variables of the right side outside its own FILTER; put those in the FILTER's "
            "pattern"
        )
    stack = [unless.right]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Unless):
            return (
                "it is on the right of an UNLESS whose right side holds another UNLESS (the "
                "inner one would be checked per left start too: not built)"
            )
        stack.extend(children(node))
    above = path[: path.index(unless)] if unless in path else []
    for node, inner in zip(above, [*above[1:], unless], strict=False):
        if isinstance(node, ast.NotEvent) or (isinstance(node, ast.Unless) and inner is node.right):
            return "it is on the right of an UNLESS that is itself inside NOT(...) or UNLESS's right"
    for v in sorted(outer):
        if binding_count(unless.left, v) != 1 or not _first_event(unless.left, v):
            return (
                f"it is on the right of UNLESS and reads {v!r}, which is not the first event of "
                "every left match: the right side's runs that start before it would have to "
                "keep their events until it comes (not in bounded memory per run)"
            )
    return None


def _first_event(p: ast.Pattern, var: str) -> bool:
    """Is ``var`` bound to the first event of every match of ``p``?"""
    if isinstance(p, ast.EventType):
        return p.name == var
    if isinstance(p, ast.As):
        return (p.var == var and single_event(p.pattern)) or _first_event(p.pattern, var)
    if isinstance(p, ast.Filter | ast.Selector):
        return _first_event(p.pattern, var)
    if isinstance(p, ast.Unless):
        return _first_event(p.left, var)
    if isinstance(p, ast.Seq):
        return not nullable(p.left) and _first_event(p.left, var)
    if isinstance(p, ast.Or):
        return _first_event(p.left, var) and _first_event(p.right, var)
    if isinstance(p, ast.And):  # the same events on both sides
        return _first_event(p.left, var) or _first_event(p.right, var)
    return False


def _without(cond: ast.FilterExpr, moved: dict[int, _Lift]) -> ast.FilterExpr | None:
    """``cond`` without the moved atoms (they are top-level conjuncts); None if nothing is left."""
    if isinstance(cond, ast.FilterAnd):
        left, right = _without(cond.left, moved), _without(cond.right, moved)
        if left is None or right is None:
            return left or right
        return dataclasses.replace(cond, left=left, right=right)
    if isinstance(cond, ast.FilterAtom) and id(cond) in moved:
        return None
    return cond


def evaluated_form(where: ast.Pattern) -> ast.Pattern:
    """The pattern as the engines evaluate it: ``x.attr`` in ``x[...]`` read as ``attr``, atoms
    naming an enclosing pattern's variables lifted there, and every condition written on the
    variable bound last (:func:`kleene.language.conditions.on_later_variables`)."""
    return on_later_variables(lift_outer_conditions(without_self_references(where)).pattern)

