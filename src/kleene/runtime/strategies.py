"""Selection strategies LAST and MAX, evaluated on the tECS at enumeration time.

Each strategy compares the complex events that end at the same position (in
one partition), on their whole position sets (docs/cel-semantics.md):

* LAST keeps the maximum of ``M ≤ M'`` iff ``max(M △ M') ∈ M'`` (latest
  events win): one complex event per end position;
* MAX keeps the sets not strictly contained in another.

NEXT, which prefers the earliest events, has its own evaluator
(:mod:`kleene.runtime.nxt`): the tECS orders runs by their latest start, which
serves LAST and the window, not NEXT's earliest start.

The tECS update is unchanged (constant time per event); the selection is a
dynamic program over the nodes below the final states, within the window.
Adding the same, latest, position ``p`` to two sets never changes how they
compare (``(A ∪ {p}) △ (B ∪ {p}) = A △ B``), so the best below an output node
is the best below its child plus ``p``, and the best below a union node is the
better of its children's.  Matches are persistent chains ``(pos, rest)``,
latest position first, so extending one is O(1).

The result below a union node is cached on the node (nodes never change, and
the window bound ``tau`` only grows): for LAST the best match stays
valid as long as it still starts inside the window, because dropping matches
that were not the best cannot change the best; for MAX the maximal sets stay
valid while they all start inside the window.  So a union node is usually
resolved once, and the cost per end position is that of the nodes created
since, times the cost of comparing matches (LAST stops at the first
difference from the latest events or at a shared older part; MAX compares
sets).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kleene.native import load
from kleene.runtime.tecs import BOTTOM, OUTPUT, UNION, Node

Chain = Any
"""Positions as a persistent linked list ``(pos, rest)``, latest first; None when empty."""

Best = tuple[int | float, int, Chain] | None
"""``(start time, start position, positions chain)`` of the preferred match, or None."""

CACHE = 4
"""Index, in a union node's list, of its cached value (best match for LAST, maximal sets for MAX)."""


def _positions(chain: Chain) -> list[int]:
    out = []
    while chain is not None:
        out.append(chain[0])
        chain = chain[1]
    return out


def last_better(a: Best, b: Best) -> bool:
    """Is ``a`` preferred to ``b`` by LAST (``max(a △ b) ∈ a``)?  Both non-None."""
    assert a is not None and b is not None
    x, y = a[2], b[2]
    while x is not None and y is not None:
        if x is y:
            return False  # the same older positions: equal sets (same length)
        if x[0] != y[0]:
            return bool(x[0] > y[0])
        x, y = x[1], y[1]
    return x is not None


def last_match(roots: list[Node], tau: int | float) -> tuple[int, tuple[int, ...]] | None:
    """LAST's complex event below ``roots``, starting at ``tau`` or later.

    The dynamic program of the module docstring, written out for LAST (one pass, no
    callbacks: it runs at every end, so its constant matters): :func:`_last_below` per root.
    """
    memo: dict[int, Best] = {}
    found: Best = None
    for root in roots:
        value = LAST_BELOW(root, tau, memo)
        if value is not None and (found is None or last_better(value, found)):
            found = value
    if found is None:
        return None
    return found[1], tuple(_positions(found[2])[::-1])


_MISSING: Any = object()


def _last_below(root: Node, tau: int | float, memo: dict[int, Best]) -> Best:
    """LAST's best match below ``root`` that starts at ``tau`` or later (None: none).

    Children before parents with one explicit stack; a node's value goes to ``memo`` (by
    ``id``: every node is alive during the call), a union node's also to its slot ``CACHE``,
    reused while its best still starts inside the window (``tau`` only grows, and dropping
    matches that were not the best cannot change the best).  A node whose maximum start is
    before ``tau`` holds nothing and is not entered.  Each node is evaluated once per call,
    and a union node once while its cache holds: the work at an end is the nodes created
    since the ends before (counted by tests/runtime/test_strategy_counts.py).
    """
    get = memo.get
    stack = [root]
    pop, push = stack.pop, stack.append
    while stack:
        n = stack[-1]
        key = id(n)
        if key in memo:
            pop()
            continue
        if n[1] < tau:
            memo[key] = None
            pop()
            continue
        kind = n[0]
        if kind == OUTPUT:
            child = n[3]
            below = _cached(child, tau)
            if below is _MISSING:
                below = get(id(child), _MISSING)
                if below is _MISSING:
                    push(child)
                    continue
            memo[key] = None if below is None else (below[0], below[1], (n[2], below[2]))
        elif kind == UNION:
            value = _cached(n, tau)
            if value is _MISSING:
                left, right = n[2], n[3]
                lv = _cached(left, tau)
                if lv is _MISSING:
                    lv = get(id(left), _MISSING)
                    if lv is _MISSING:
                        push(left)
                        continue
                rv: Best = None
                if right[1] >= tau:
                    rv = _cached(right, tau)
                    if rv is _MISSING:
                        rv = get(id(right), _MISSING)
                        if rv is _MISSING:
                            push(right)
                            continue
                if lv is None or (rv is not None and not last_better(lv, rv)):
                    value = rv
                else:
                    value = lv
                if len(n) > CACHE:
                    n[CACHE] = value
                else:
                    n.append(value)
            memo[key] = value
        else:  # BOTTOM (its maximum start is its own start, inside the window here)
            memo[key] = (n[1], n[2], None)
        pop()
    return memo[id(root)]


def _cached(n: Node, tau: int | float) -> Any:
    """A union node's cached best if it still holds at ``tau``, else ``_MISSING``."""
    if n[0] != UNION or len(n) <= CACHE:
        return _MISSING
    value = n[CACHE]
    if value is None or value[0] >= tau:
        return value
    return _MISSING


Entry = tuple[int | float, int, frozenset[int]]
"""A match for MAX: start time, start position, positions."""


def maximal_matches(roots: list[Node], tau: int | float) -> list[tuple[int, tuple[int, ...]]]:
    """The complex events below ``roots`` (starting at ``tau`` or later) contained in no other.

    A union node's maximal sets stay valid while they all still start inside
    the window: then no set they dominated can have become maximal.
    """
    empty: list[Entry] = []
    found: list[Entry] = []
    for value in _solve(
        roots,
        tau,
        bottom=lambda n: [(n[1], n[2], frozenset())],
        extend=lambda below, pos: [(t, s, ps | {pos}) for t, s, ps in below],
        union=lambda left, right: _maximal(left + right),
        none=empty,
        valid=lambda entries: all(e[0] >= tau for e in entries),
    ):
        found.extend(value)
    return [(s, tuple(sorted(ps))) for _, s, ps in _maximal(found)]


def _solve(
    roots: list[Node],
    tau: int | float,
    *,
    bottom: Callable[[Node], Any],
    extend: Callable[[Any, int], Any],
    union: Callable[[Any, Any], Any],
    none: Any,
    valid: Callable[[Any], bool],
) -> list[Any]:
    """The dynamic program below each root, children before parents.

    ``bottom`` gives the value of a run starting at a bottom node inside the
    window (``none`` outside it), ``extend`` adds an output node's position,
    ``union`` combines a union node's children (a right child that starts
    before ``tau`` counts as ``none``).  Union nodes keep their value in slot
    ``CACHE`` and reuse it while ``valid`` says it still holds at ``tau``.
    """

    def cached(n: Node) -> bool:
        return len(n) > CACHE and valid(n[CACHE])

    memo: dict[int, Any] = {}
    for root in roots:
        for n in _post_order(root, tau, cached):
            key = id(n)
            if key in memo:
                continue
            kind = n[0]
            if kind == BOTTOM:
                memo[key] = bottom(n) if n[1] >= tau else none
            elif kind == OUTPUT:
                memo[key] = extend(memo[id(n[3])], n[2])
            elif cached(n):
                memo[key] = n[CACHE]
            else:
                right = memo[id(n[3])] if n[3][1] >= tau else none
                value = union(memo[id(n[2])], right)
                if len(n) > CACHE:
                    n[CACHE] = value
                else:
                    n.append(value)
                memo[key] = value
    return [memo[id(root)] for root in roots]


def _maximal(sets: list[Any]) -> list[Any]:
    """The entries whose position set (last field) is contained in no other's.

    A set can only be strictly contained in a larger one, so entries are
    taken largest first and each is checked against the kept larger ones
    only: sets of equal size are never compared.
    """
    unique = sorted(dict.fromkeys(sets), key=lambda e: len(e[-1]), reverse=True)
    kept: list[Any] = []
    larger = 0  # kept[:larger] are strictly larger than the current entry
    size = -1
    for a in unique:
        ps = a[-1]
        if len(ps) != size:
            size = len(ps)
            larger = len(kept)
        if not any(ps < b[-1] for b in kept[:larger]):
            kept.append(a)
    return kept


def _post_order(root: Node, tau: int | float, leaf: Callable[[Node], bool]) -> list[Node]:
    """Nodes below ``root`` within the window, children first, without recursion.

    Union nodes for which ``leaf`` holds (a valid cache) are not expanded.
    """
    out: list[Node] = []
    seen: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        if expanded:
            out.append(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        if n[0] == OUTPUT:
            stack.append((n[3], False))
        elif n[0] == UNION and not leaf(n):
            stack.append((n[2], False))
            if n[3][1] >= tau:
                stack.append((n[3], False))
    return out


PURE_LAST_BELOW = _last_below
"""The pure-Python :func:`_last_below`: the readable reference of ``kleene.runtime._last``."""
_compiled = load("kleene.runtime._last")
LAST_BELOW: Callable[[Node, int | float, dict[int, Best]], Best] = (
    _last_below if _compiled is None else _compiled.last_below
)
"""LAST's dynamic program: :func:`_last_below`, or its compiled twin ``kleene.runtime._last``
(:mod:`kleene.native`) when that is built."""
