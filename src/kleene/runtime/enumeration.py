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
from typing import Any, TypeAlias

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
    out: list[Found] | Columns | Count,
    limit: int,
    end: int,
    key: Hashable = None,
) -> int:
    """Append ``(start, end, positions, key)`` to ``out`` per complex event of ``node``.

    Only complex events that start at ``tau`` or later are enumerated (the
    window).  Stops after ``limit`` complex events; returns how many were
    appended.  A :class:`Columns` ``out`` gets the same complex events in
    columns (:meth:`Columns.add_node`), a :class:`Count` only their number
    (:func:`count_node`, :func:`count_filtered`).
    """
    if node[0] == FILTER:
        if out.__class__ is Count:
            return out.add(count_filtered(node, tau, limit))
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


def count_node(node: Node, tau: int | float, limit: int) -> int:
    """How many complex events :func:`enumerate_node` would give for ``node``, without them.

    ``min(limit, c)`` where ``c`` counts the complex events of ``node`` that start at ``tau``
    or later.  A node whose maximum start is inside the window holds at least one (the walk
    down its left children ends at a bottom node with that start), so with ``limit`` 1 the
    answer is read off the node: O(1).  Otherwise :func:`count_dag`.
    """
    if node[1] < tau or limit <= 0:
        return 0
    if limit == 1:
        return 1
    return count_dag(node, tau, limit, None, 0)


def count_filtered(node: Node, tau: int | float, limit: int) -> int:
    """How many complex events :func:`enumerate_filtered` would give for a MAX gate, without them."""
    _, _, inner, late, hi = node
    if inner[1] < tau or inner[4] > hi or limit <= 0:
        return 0
    return count_dag(inner, tau, limit, late, hi)


def count_dag(
    node: Node, tau: int | float, limit: int, late: Any, hi: int | float, memo: dict[int, int] | None = None
) -> int:
    """The complex events below ``node`` (inside the window, and through a MAX gate when
    ``late`` is given), counted as paths to bottom nodes: at most ``limit``.

    A dynamic program over the DAG, children before parents, one explicit stack, left child
    first: an output node has its child's count, a union node the sum of its children's, a
    bottom node 1 (under a gate: if ``late[start] < tau``).  A node whose maximum start is
    before ``tau`` (under a gate: whose earliest start is after ``hi``) counts 0 and is not
    entered, and each node is evaluated once per call (memo by ``id``; shared sub-DAGs are
    counted once, not once per complex event through them).  Counts saturate at ``limit``,
    and a union node whose left child reaches ``limit`` does not enter its right child.  So
    the cost is at most the number of nodes holding a complex event in the window, and never
    more than the walk that lists the first ``limit`` complex events; no positions are
    collected.  ``memo`` (given empty) is left holding the count of every node evaluated: what
    a test counts as the work.
    """
    if memo is None:
        memo = {}
    get = memo.get
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        n = stack[-1]
        key = id(n)
        if key in memo:
            pop()
            continue
        kind = n[0]
        if kind == OUTPUT:
            child = n[3]
            if late is not None and child[4] > hi:
                value = 0
            else:
                below = get(id(child))
                if below is None:
                    push(child)
                    continue
                value = below
        elif kind == UNION:
            left, right = n[2], n[3]
            if late is not None and left[4] > hi:
                lv = 0
            else:
                found = get(id(left))
                if found is None:
                    push(left)
                    continue
                lv = found
            value = lv
            if lv < limit and right[1] >= tau and (late is None or right[4] <= hi):
                rv = get(id(right))
                if rv is None:
                    push(right)
                    continue
                value = min(limit, lv + rv)
        else:  # BOTTOM: entered only inside the window
            value = 1 if late is None or late[n[2]] < tau else 0
        memo[key] = value
        pop()
    return memo[id(node)]


class Count:
    """A sink that keeps only the number of complex events: ``Query.count``, ``kleene run --count``.

    Engines that know it add numbers (:meth:`add`) where they can count without building
    complex events: :func:`enumerate_node` counts a tECS node's complex events
    (:func:`count_node`), LAST and NEXT count whether a match ends at an event
    (:meth:`kleene.runtime.engine.Engine.count_selected`).  It takes :data:`Found` tuples
    too (``append``, ``extend``), like a list, so every engine fills it and counts exactly
    what it would have listed.
    """

    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add(self, n: int) -> int:
        """Count ``n`` more complex events; returns ``n``."""
        self.n += n
        return n

    def append(self, found: Found) -> None:
        self.n += 1

    def extend(self, found: Iterable[Found]) -> None:
        self.n += len(found) if isinstance(found, list | tuple) else sum(1 for _ in found)

    def add_node(self, node: Node, tau: int | float, limit: int, end: int, key: Hashable) -> int:
        """:meth:`Columns.add_node`, counted (:func:`count_node`)."""
        return self.add(count_node(node, tau, limit))


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
        # Per run (one enumerated node, or one end of the bulk path): machine integers, so that
        # the bulk path extends them and MatchBatch reads them without a Python int each.
        self.run_ends = array("q")
        self.run_keys: list[Hashable] = []
        self.run_counts = array("q")
        self.found_runs = array("q")
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
        first, runs = len(self.run_ends), len(bounds) - 1
        self.run_ends.frombytes(np.ascontiguousarray(ends[bounds[:-1]], dtype=np.int64).tobytes())
        self.run_counts.frombytes(np.diff(bounds).astype(np.int64).tobytes())
        self.run_keys.extend([None] * runs)
        self.found_runs.frombytes(np.arange(first, first + runs, dtype=np.int64).tobytes())

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
