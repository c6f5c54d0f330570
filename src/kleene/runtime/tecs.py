"""The timed enumerable compact set (tECS), CORE paper §4.1–4.2.

A tECS is a DAG that encodes the *open complex events* of all partial runs.
Three kinds of node, each carrying ``max``, the maximum start (here: the
*time* at which the latest run through it started):

* bottom ``(BOTTOM, max, pos)``: a run started at input position ``pos``;
* output ``(OUTPUT, max, pos, next)``: position ``pos`` is part of every
  complex event below it (the run *marked* the event at ``pos``);
* union ``[UNION, max, left, right]``: both sets, with
  ``max(left) >= max(right)`` (*time-ordered*), so enumeration can stop at
  the first right child that starts too early for the window.

Bottom and output nodes are tuples (cheap to build).  Union nodes are lists
so that :func:`sever` can cut a right child that no window can reach any
more, which keeps memory bounded on long streams (CORE does the same with
weak references).

A *union-list* (CORE §4.2) is a Python list ``[n0, n1, ..., nk]`` of *safe*
nodes: ``n0`` is not a union, ``max(n0) >= max(ni)``, and the maxima strictly
decrease after ``n0``.  Its length is at most the number of automaton states,
so :func:`insert` and :func:`merge` take constant time in data complexity.

Keeping ``max`` as a time rather than a position lets the same structure serve
``WITHIN n EVENTS`` (time = position) and time windows (time = timestamp).
"""

from __future__ import annotations

from typing import Any

BOTTOM, OUTPUT, UNION, FILTER = 0, 1, 2, 3
"""``FILTER`` is not a tECS node: ``(FILTER, max, node, late, hi)`` asks the enumeration for the
complex events of ``node`` whose start passes a MAX gate (:mod:`kleene.runtime.maximal`)."""

Node = Any
"""A tECS node: a tuple (bottom, output) or a list (union), see module doc."""

DEAD_NODE: Node = (BOTTOM, -(1 << 63), -1)
"""What a severed right child points to: its max is earlier than any window."""


def new_bottom(time: int, pos: int) -> Node:
    return (BOTTOM, time, pos)


def extend(node: Node, pos: int) -> Node:
    return (OUTPUT, node[1], pos, node)


def union(n1: Node, n2: Node, created: list[Node]) -> Node:
    """Union of two safe nodes with equal ``max`` (the gadgets of Figure 5).

    The result is safe: its left child is not a union and its right child
    has out-depth at most 2, so every node stays 3-bounded.  New union
    nodes are appended to ``created`` (for :func:`sever`).
    """
    if n1[0] != UNION:
        u = [UNION, n1[1], n1, n2]
        created.append(u)
        return u
    if n2[0] != UNION:
        u = [UNION, n1[1], n2, n1]
        created.append(u)
        return u
    r1, r2 = n1[3], n2[3]
    u2 = [UNION, r1[1], r1, r2] if r1[1] >= r2[1] else [UNION, r2[1], r2, r1]
    u1 = [UNION, n1[1], n2[2], u2]
    u = [UNION, n1[1], n1[2], u1]
    created.extend((u2, u1, u))
    return u


def insert(ul: list[Node], node: Node, created: list[Node], union: Any = union) -> None:
    """Insert a safe node into a union-list, keeping it sorted by ``max``.

    Precondition (Invariant 1 of appendix B.3): ``max(node) <= max(ul[0])``.
    ``union`` joins two nodes of equal ``max`` (MAX's nodes use their own).
    """
    m = node[1]
    for i in range(1, len(ul)):
        mi = ul[i][1]
        if mi == m:
            ul[i] = union(ul[i], node, created)
            return
        if mi < m:
            ul.insert(i, node)
            return
    ul.append(node)


def merge(ul: list[Node], created: list[Node]) -> Node:
    """One safe node for the whole union-list (Figure 5(e))."""
    n = ul[-1]
    for i in range(len(ul) - 2, -1, -1):
        a = ul[i]
        n = [UNION, a[1], a, n]
        created.append(n)
    return n


def prune(ul: list[Node], tau: int | float) -> bool:
    """Drop the entries no window can reach (``max < tau``); False if none is left."""
    if ul[0][1] < tau:
        return False
    k = len(ul)
    while ul[k - 1][1] < tau:
        k -= 1
    if k < len(ul):
        del ul[k:]
    return True


def sever(unions: list[Node], tau: int | float) -> list[Node]:
    """Cut right children that start before ``tau``; return the unions still in reach.

    ``tau`` only grows, so a right child with ``max < tau`` can never be
    enumerated again.  Pointing it to :data:`DEAD_NODE` lets the garbage
    collector reclaim the old part of the DAG.
    """
    alive = []
    for u in unions:
        if u[1] < tau:
            continue
        if u[3][1] < tau:
            u[3] = DEAD_NODE
        else:
            alive.append(u)
    return alive
