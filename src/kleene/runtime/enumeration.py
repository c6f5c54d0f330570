"""Enumeration of complex events from a tECS node (CORE Algorithm 2, appendix B.1).

A left-first depth-first walk.  The stack holds only branch points (right
children of union nodes) together with the positions collected so far, so
the walk resumes at the deepest pending branch without backtracking: the
delay between two outputs is linear in the size of the output, whatever the
size of the tECS, and there is no recursion (long matches cannot hit
Python's recursion limit).

Positions are collected in a persistent linked list ``(pos, rest)`` so that
pushing a branch point costs O(1).  The walk meets output nodes from the
latest position to the earliest, so the list reads in ascending order.

Runs that started later come first (left children hold the larger maximum
start); a right child whose maximum start is before ``tau`` is pruned, and
by time order so is everything after it.
"""

from __future__ import annotations

from collections.abc import Hashable

from kleene.runtime.tecs import OUTPUT, UNION, Node

Found = tuple[int, int, tuple[int, ...], Hashable]
"""A complex event as enumerated: ``(start, end, positions, partition_key)``."""


def enumerate_node(
    node: Node, tau: int | float, out: list[Found], limit: int, end: int, key: Hashable = None
) -> int:
    """Append ``(start, end, positions, key)`` to ``out`` per complex event of ``node``.

    Only complex events that start at ``tau`` or later are enumerated (the
    window).  Stops after ``limit`` complex events; returns how many were
    appended.
    """
    if node[1] < tau or limit <= 0:
        return 0
    count = 0
    stack: list[tuple[Node, object]] = [(node, None)]
    pop, push, append = stack.pop, stack.append, out.append
    while stack:
        n, chain = pop()
        while True:
            kind = n[0]
            if kind == OUTPUT:
                chain = (n[2], chain)
                n = n[3]
            elif kind == UNION:
                right = n[3]
                if right[1] >= tau:
                    push((right, chain))
                n = n[2]
            else:
                positions = []
                while chain is not None:
                    positions.append(chain[0])  # type: ignore[index]
                    chain = chain[1]  # type: ignore[index]
                append((n[2], end, tuple(positions), key))
                count += 1
                if count >= limit:
                    return count
                break
    return count
