"""Which variables a pattern binds, and to which event types.

In CEQL every event type used in a pattern is also a variable of that name
(``FILTER SELL[price > 1]`` is legal), and ``pattern AS x`` binds ``x`` to
every event the sub-pattern matches.  The checker uses this to reject
filters and SELECT items over unbound variables, and to find the event types
whose attributes a filter can read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from kleene.language import ast

__all__ = [
    "WILDCARD",
    "bound_variables",
    "children",
    "event_types_of",
    "is_wildcard",
    "named_event_types",
    "single_event",
    "variable_event_types",
]

WILDCARD = "_"
"""The event pattern ``_`` (``S>_``): any event, of any type.  It binds no variable
(name its event with ``_ AS x``); as an event type of a variable it means "any type"."""


def is_wildcard(p: ast.Pattern) -> bool:
    """Is ``p`` the wildcard event ``_`` (maybe of a stream, ``S>_``)?"""
    return isinstance(p, ast.EventType) and p.name == WILDCARD


def children(p: ast.Pattern) -> tuple[ast.Pattern, ...]:
    """The sub-patterns directly inside ``p``."""
    if isinstance(p, ast.EventType):
        return ()
    if isinstance(p, ast.As | ast.Filter | ast.Iter | ast.Star | ast.Repeat | ast.NotEvent | ast.Selector):
        return (p.pattern,)
    return (p.left, p.right)


def event_types_of(p: ast.Pattern) -> frozenset[str]:
    """Names of all event types occurring in the pattern."""
    if isinstance(p, ast.EventType):
        return frozenset((p.name,))
    out: frozenset[str] = frozenset()
    for child in children(p):
        out |= event_types_of(child)
    return out


def named_event_types(p: ast.Pattern) -> frozenset[str]:
    """The event types ``p`` names, the wildcard left out: the type column is read only for them."""
    return event_types_of(p) - {WILDCARD}


def variable_event_types(p: ast.Pattern) -> dict[str, frozenset[str]]:
    """Each variable the pattern binds -> the event types it can be bound to."""
    out: dict[str, frozenset[str]] = {}

    def add(var: str, types: frozenset[str]) -> None:
        out[var] = out.get(var, frozenset()) | types

    def walk(node: ast.Pattern) -> None:
        if isinstance(node, ast.EventType):
            if node.name != WILDCARD:  # `_` binds nothing: `_ AS x` names its event
                add(node.name, frozenset((node.name,)))
            return
        if isinstance(node, ast.NotEvent):
            return  # the event of NOT(...) is in the match but binds no variable
        if isinstance(node, ast.As):
            add(node.var, event_types_of(node.pattern))
        if isinstance(node, ast.Unless):
            walk(node.left)  # the negated side only constrains, it binds nothing
            return
        for child in children(node):
            walk(child)

    walk(p)
    return out


def bound_variables(p: ast.Pattern) -> frozenset[str]:
    """All variables the pattern can bind: AS names and event type names."""
    return frozenset(variable_event_types(p))


def single_event(p: ast.Pattern) -> bool:
    """Is every match of ``p`` exactly one event (so that ``NOT(p)`` makes sense)?"""
    if isinstance(p, ast.EventType):
        return True
    if isinstance(p, ast.As | ast.Filter):
        return single_event(p.pattern)
    if isinstance(p, ast.Or):
        return single_event(p.left) and single_event(p.right)
    return False


def nullable(pattern: ast.Pattern) -> bool:
    """Whether the empty match ε belongs to ``pattern`` (only through ``*``, ``?``, ``{0,m}``).

    ε is never stored as a valuation (a complex event is non-empty); the flag
    only tells ``;``/``:`` that the operand may be skipped.  AS, FILTER, AND,
    ALL, UNLESS and NOT deliberately cut it off (they use ``φ*`` as ``φ+``):
    binding a variable to nothing, an empty conjunct, or "unless ε" (which
    would exclude every match) are not useful readings.
    """
    if isinstance(pattern, ast.Star):
        return True
    if isinstance(pattern, ast.Repeat):
        return pattern.low == 0 or nullable(pattern.pattern)
    if isinstance(pattern, ast.Seq):
        return nullable(pattern.left) and nullable(pattern.right)
    if isinstance(pattern, ast.Or):
        return nullable(pattern.left) or nullable(pattern.right)
    if isinstance(pattern, ast.Iter):
        return nullable(pattern.pattern)
    return False


def fresh_names(prefix: str, taken: set[str]) -> Callable[[], str]:
    """A source of variable names ``prefix1``, ``prefix2``, ... not in ``taken`` (each one
    given is added to it), for the variables a rewrite introduces."""
    counter = itertools.count(1)

    def fresh() -> str:
        while True:
            name = f"{prefix}{next(counter)}"
            if name not in taken:
                taken.add(name)
                return name

    return fresh
