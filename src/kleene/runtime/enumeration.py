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

from array import array
from collections.abc import Hashable, Iterable
from typing import TypeAlias

import numpy as np

from kleene.native import load
from kleene.runtime.tecs import FILTER, OUTPUT, UNION, Node

Ints: TypeAlias = "array[int]"
"""The columns of :class:`Columns`: int64 (typecode ``q``), handed to numpy without conversion."""

Found = tuple[int, int, tuple[int, ...], Hashable]
"""A complex event as enumerated: ``(start, end, positions, partition_key)``."""


def enumerate_node(
    node: Node,
    tau: int | float,
    out: list[Found] | Columns,
    limit: int,
    end: int,
    key: Hashable = None,
) -> int:
    """Append ``(start, end, positions, key)`` to ``out`` per complex event of ``node``.

    Only complex events that start at ``tau`` or later are enumerated (the
    window).  Stops after ``limit`` complex events; returns how many were
    appended.  A :class:`Columns` ``out`` gets the same complex events in
    columns (:meth:`Columns.add_node`).
    """
    if node[0] == FILTER:
        found = enumerate_filtered(node, tau, limit, end, key)
        out.extend(found)
        return len(found)
    if out.__class__ is not list:
        return out.add_node(node, tau, limit, end, key)  # type: ignore[union-attr]
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


def enumerate_filtered(node: Node, tau: int | float, limit: int, end: int, key: Hashable = None) -> list[Found]:
    """The complex events of a MAX gate ``(FILTER, max, inner, late, hi)`` (:mod:`kleene.runtime.maximal`).

    Those of ``inner`` that start at ``tau`` or later at a position ``b``
    with ``late[b] < tau``.  The nodes below ``inner`` also keep their
    earliest start (index 4): a subtree whose earliest start is after
    ``hi``, the latest start the gate accepts, holds none of them and is not
    entered.  The same left-first walk as :func:`enumerate_node`.
    """
    _, _, inner, late, hi = node
    found: list[Found] = []
    if inner[1] < tau or inner[4] > hi or limit <= 0:
        return found
    stack: list[tuple[Node, object]] = [(inner, None)]
    pop, push, append = stack.pop, stack.append, found.append
    while stack:
        n, chain = pop()
        while True:
            kind = n[0]
            if kind == OUTPUT:
                chain = (n[2], chain)
                n = n[3]
            elif kind == UNION:
                right = n[3]
                if right[1] >= tau and right[4] <= hi:
                    push((right, chain))
                n = n[2]
                if n[4] > hi:
                    break
            else:
                if late[n[2]] < tau:
                    positions = []
                    while chain is not None:
                        positions.append(chain[0])  # type: ignore[index]
                        chain = chain[1]  # type: ignore[index]
                    append((n[2], end, tuple(positions), key))
                    if len(found) >= limit:
                        return found
                break
    return found


class Columns:
    """Complex events collected column by column: the bulk path's sink.

    The engine appends to ``out`` either a list of :data:`Found` tuples (the
    readable path) or a ``Columns``: :func:`enumerate_node` then walks the
    tECS with :meth:`add_node`, which creates no object per complex event.
    Per complex event it appends its start and its number of positions, and
    extends one flat array with its positions *latest first* (the order in
    which the walk meets them); :class:`kleene.results.MatchBatch` reverses
    each run of positions with one vectorized gather.  Ends and partition
    keys are stored once per enumerated node, with the number of complex
    events it gave (run-length).

    ``extend`` and ``append`` accept :data:`Found` tuples (positions
    ascending), so the selection strategies, NEXT and the register engine
    fill a ``Columns`` too; ``found_runs`` lists the runs they made.
    """

    __slots__ = ("starts", "lengths", "flat", "run_ends", "run_keys", "run_counts", "found_runs")

    def __init__(self) -> None:
        self.starts = array("q")
        self.lengths = array("q")
        self.flat = array("q")
        self.run_ends: list[int] = []
        self.run_keys: list[Hashable] = []
        self.run_counts: list[int] = []
        self.found_runs: list[int] = []
        """The runs appended as Found tuples (positions ascending): none on the tECS path."""

    def __len__(self) -> int:
        return len(self.starts)

    def append(self, found: Found) -> None:
        self.extend((found,))

    def extend(self, found: Iterable[Found]) -> None:
        starts, lengths, flat = self.starts, self.lengths, self.flat
        for start, end, positions, key in found:
            starts.append(start)
            lengths.append(len(positions))
            flat.extend(positions)
            self.found_runs.append(len(self.run_ends))
            self.run_ends.append(end)
            self.run_keys.append(key)
            self.run_counts.append(1)

    def extend_arrays(self, starts: np.ndarray, ends: np.ndarray, marked: np.ndarray) -> None:
        """Bulk :meth:`extend` of unpartitioned complex events given as arrays (no object each).

        ``starts`` and ``ends`` (non-decreasing) per complex event, ``marked`` its positions,
        one row each, ascending; complex events of one end become one run.
        """
        n = len(starts)
        if n == 0:
            return
        self.starts.frombytes(np.ascontiguousarray(starts, dtype=np.int64).tobytes())
        self.lengths.frombytes(np.full(n, marked.shape[1], dtype=np.int64).tobytes())
        self.flat.frombytes(np.ascontiguousarray(marked, dtype=np.int64).tobytes())
        bounds = np.concatenate(([0], np.flatnonzero(np.diff(ends)) + 1, [n]))
        first = len(self.run_ends)
        self.run_ends.extend(ends[bounds[:-1]].tolist())
        self.run_counts.extend(np.diff(bounds).tolist())
        self.run_keys.extend([None] * (len(bounds) - 1))
        self.found_runs.extend(range(first, first + len(bounds) - 1))

    def add_node(self, node: Node, tau: int | float, limit: int, end: int, key: Hashable) -> int:
        """:func:`enumerate_node` into the columns; the same complex events, in the same order."""
        if node[1] < tau or limit <= 0:
            return 0
        count = walk(node, tau, limit, self.starts, self.lengths, self.flat)
        self.run_ends.append(end)
        self.run_keys.append(key)
        self.run_counts.append(count)
        return count


def walk(node: Node, tau: int | float, limit: int, starts: Ints, lengths: Ints, flat: Ints) -> int:
    """Append the complex events of ``node`` that start at ``tau`` or later (at most ``limit``).

    Per complex event: its start to ``starts``, its number of positions to ``lengths``, its
    positions latest first to ``flat``; returns how many.  The caller has checked that ``node``
    reaches ``tau`` and that ``limit`` is positive.

    The walk keeps the positions of the current path in one list (latest first) and a stack of
    pending branches with the path's length at each: a branch resumes by truncating the list,
    and a complex event is copied out with one C-level ``extend``.  Setting up is kept minimal,
    since most nodes give only a few complex events.  ``kleene.runtime._walk.walk`` is its
    compiled twin (:mod:`kleene.native`).
    """
    path: list[int] = []
    stack: list[tuple[Node, int]] = []
    count = 0
    n = node
    while True:
        kind = n[0]
        if kind == OUTPUT:
            path.append(n[2])
            n = n[3]
        elif kind == UNION:
            right = n[3]
            if right[1] >= tau:
                stack.append((right, len(path)))
            n = n[2]
        else:
            starts.append(n[2])
            flat.extend(path)
            lengths.append(len(path))
            count += 1
            if count >= limit or not stack:
                return count
            n, depth = stack.pop()
            del path[depth:]


PURE_ADD_NODE = Columns.add_node
"""The pure-Python :meth:`Columns.add_node`: the readable reference of
``kleene.runtime._walk.add_node``, its compiled twin, which replaces it on the class when it is
built (:mod:`kleene.native`)."""
_compiled = load("kleene.runtime._walk")
if _compiled is not None:
    Columns.add_node = _compiled.add_node  # type: ignore[method-assign]
