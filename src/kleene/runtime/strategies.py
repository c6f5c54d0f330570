"""Selection strategies NEXT, LAST and MAX, evaluated on the tECS at enumeration time.

Each strategy compares the complex events that end at the same position (in
one partition), on their whole position sets (docs/cel-semantics.md):

* NEXT keeps the maximum of ``M ≤ M'`` iff ``min(M △ M') ∈ M'`` (earliest
  events win), LAST the maximum of ``max(M △ M') ∈ M'`` (latest events win):
  one complex event per end position;
* MAX keeps the sets not strictly contained in another.

The tECS update is unchanged (constant time per event); the selection is a
dynamic program over the nodes reachable from the final states within the
window.  Adding the same, latest, position ``p`` to two sets never changes how
they compare (``(A ∪ {p}) △ (B ∪ {p}) = A △ B``), so the best of an output
node is the best of its child plus ``p``, and the best of a union node is the
better of its children's bests.  The cost per end position is linear in the
reachable part of the tECS (times the length of the compared matches): it
grows with the window, unlike ALL's output-linear enumeration, but never with
the (possibly exponential) number of matches.
"""

from __future__ import annotations

from collections.abc import Callable

from kleene.runtime.tecs import BOTTOM, OUTPUT, Node

Best = tuple[int, tuple[int, ...]] | None
"""``(start, positions ascending)`` of the preferred match below a node, or None."""


def next_better(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Is ``a`` preferred to ``b`` by NEXT (``min(a △ b) ∈ a``)?"""
    for x, y in zip(a, b):
        if x != y:
            return x < y
    return len(a) > len(b)


def last_better(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Is ``a`` preferred to ``b`` by LAST (``max(a △ b) ∈ a``)?"""
    for x, y in zip(reversed(a), reversed(b)):
        if x != y:
            return x > y
    return len(a) > len(b)


def best_match(
    roots: list[Node], tau: int | float, better: Callable[[tuple[int, ...], tuple[int, ...]], bool]
) -> Best:
    """The preferred complex event below ``roots`` that starts at ``tau`` or later."""
    memo: dict[int, Best] = {}

    def value(n: Node) -> Best:
        return memo[id(n)]

    def combine(x: Best, y: Best) -> Best:
        if x is None:
            return y
        if y is None or better(x[1], y[1]):
            return x
        return y

    for root in roots:
        _post_order(root, tau, memo, value, combine)
    found: Best = None
    for root in roots:
        found = combine(found, memo.get(id(root)))
    return found


def maximal_matches(roots: list[Node], tau: int | float) -> list[tuple[int, tuple[int, ...]]]:
    """The complex events below ``roots`` (starting at ``tau`` or later) contained in no other."""
    memo: dict[int, list[tuple[int, frozenset[int]]]] = {}

    def compute(n: Node) -> list[tuple[int, frozenset[int]]]:
        kind = n[0]
        if kind == BOTTOM:
            return [(n[2], frozenset())] if n[1] >= tau else []  # n[1]: start time
        if kind == OUTPUT:
            return [(s, ps | {n[2]}) for s, ps in memo[id(n[3])]]
        right = memo.get(id(n[3]), []) if n[3][1] >= tau else []
        return _maximal(memo[id(n[2])] + right)

    order = []
    for root in roots:
        order.extend(_nodes_post_order(root, tau))
    for n in order:
        if id(n) not in memo:
            memo[id(n)] = compute(n)
    found: list[tuple[int, frozenset[int]]] = []
    for root in roots:
        found.extend(memo.get(id(root), []))
    return [(s, tuple(sorted(ps))) for s, ps in _maximal(found)]


def _maximal(sets: list[tuple[int, frozenset[int]]]) -> list[tuple[int, frozenset[int]]]:
    unique = list(dict.fromkeys(sets))
    return [a for a in unique if not any(a[1] < b[1] for b in unique)]


def _post_order(
    root: Node,
    tau: int | float,
    memo: dict[int, Best],
    value: Callable[[Node], Best],
    combine: Callable[[Best, Best], Best],
) -> None:
    for n in _nodes_post_order(root, tau):
        if id(n) in memo:
            continue
        kind = n[0]
        if kind == BOTTOM:
            memo[id(n)] = (n[2], ()) if n[1] >= tau else None  # n[1]: start time
        elif kind == OUTPUT:
            below = value(n[3])
            memo[id(n)] = None if below is None else (below[0], below[1] + (n[2],))
        else:
            right = value(n[3]) if n[3][1] >= tau else None
            memo[id(n)] = combine(value(n[2]), right)


def _nodes_post_order(root: Node, tau: int | float) -> list[Node]:
    """Nodes reachable from ``root`` within the window, children before parents (no recursion)."""
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
        elif n[0] != BOTTOM:
            stack.append((n[2], False))
            if n[3][1] >= tau:
                stack.append((n[3], False))
    return out
