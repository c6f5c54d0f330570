"""A treap of count vectors with lazy matrix tags: sums over key ranges, matrices on key ranges.

:mod:`kleene.registers.aggregate` keeps, per partition, one leaf per start alive in the window,
ordered by ``(register value, sequence number)``, holding the start's *vector*: how many of its
runs are at each state of the SRT.  An event multiplies the vectors of a range of keys by a
matrix (the runs' moves, which depend on the start only through which guards its register
value passes) and reads the sum of a range's vectors (the runs that reach a final state).  A
treap (random priorities, split and merge) does both in ``O(log n)`` nodes per range:

* every node keeps its own vector, the sum of its subtree's vectors and a *tag*: a matrix
  already applied to its sum but not yet to its own vector and its children (None: none
  pending), so that tagging a range costs one vector product and one matrix product;
* ``split``, ``merge``, ``insert`` and ``delete`` push a node's tag down before they look at
  its children, and recompute its sum after.

Vectors are lists of exact Python ints (counts exceed 2^63: the subsets of a ``B+``).
Matrices are *sparse rows*: ``m[i]`` is the tuple of ``(j, c)`` with ``c != 0``, so applying
``m`` to a vector ``v`` gives ``out[j] = sum(v[i] * c)``.  ``work[0]`` counts the nodes whose
tag was pushed or sum recomputed, for tests that count work instead of timing it.

A node is a list ``[value, seq, priority, left, right, vec, sum, tag]`` (lists: cheaper than
objects in the loop).
"""

from __future__ import annotations

from random import Random
from typing import Any

Matrix = tuple[tuple[tuple[int, int], ...], ...]
"""Sparse rows: ``m[i]`` holds ``(j, c)``: a run at state ``i`` gives ``c`` runs at ``j``."""
Node = list[Any]
VALUE, SEQ, PRIO, LEFT, RIGHT, VEC, SUM, TAG = range(8)


def vec_mat(v: list[int], m: Matrix) -> list[int]:
    """``v · m``."""
    out = [0] * len(v)
    for i, x in enumerate(v):
        if x:
            for j, c in m[i]:
                out[j] += x * c
    return out


def compose(a: Matrix, b: Matrix) -> Matrix:
    """``a · b``: first ``a``, then ``b``."""
    k = len(a)
    rows = []
    for i in range(k):
        acc = [0] * k
        for j, x in a[i]:
            for m, c in b[j]:
                acc[m] += x * c
        rows.append(tuple((j, c) for j, c in enumerate(acc) if c))
    return tuple(rows)


def dot(v: list[int], f: tuple[int, ...]) -> int:
    """``v · f``: the runs of ``v`` that reach a final state, ``f[i]`` ways from state ``i``."""
    return sum(x * c for x, c in zip(v, f, strict=True) if x and c)


def _dot(v: list[int], g: list[int]) -> int:
    return sum(x * c for x, c in zip(v, g, strict=True) if x and c)


class VectorTree:
    """One treap of vectors (see the module doc); ``root`` is None when empty."""

    __slots__ = ("k", "random", "root", "size", "work")

    def __init__(self, k: int, work: list[int], seed: int = 0) -> None:
        self.k = k
        self.root: Node | None = None
        self.size = 0
        self.work = work
        self.random = Random(seed)

    # -- the node primitives -------------------------------------------------------------

    def _apply(self, node: Node, m: Matrix) -> None:
        node[SUM] = vec_mat(node[SUM], m)
        tag = node[TAG]
        node[TAG] = m if tag is None else compose(tag, m)

    def _push(self, node: Node) -> None:
        tag = node[TAG]
        if tag is not None:
            self.work[0] += 1
            node[VEC] = vec_mat(node[VEC], tag)
            if node[LEFT] is not None:
                self._apply(node[LEFT], tag)
            if node[RIGHT] is not None:
                self._apply(node[RIGHT], tag)
            node[TAG] = None

    def _pull(self, node: Node) -> None:
        self.work[0] += 1
        total = node[VEC]
        left, right = node[LEFT], node[RIGHT]
        if left is not None:
            total = [x + y for x, y in zip(total, left[SUM], strict=True)]
        if right is not None:
            total = [x + y for x, y in zip(total, right[SUM], strict=True)]
        node[SUM] = total

    def _split(self, node: Node | None, cut: tuple[Any, int]) -> tuple[Node | None, Node | None]:
        """``(keys < cut, keys >= cut)``."""
        if node is None:
            return None, None
        self._push(node)
        if (node[VALUE], node[SEQ]) < cut:
            left, right = self._split(node[RIGHT], cut)
            node[RIGHT] = left
            self._pull(node)
            return node, right
        left, right = self._split(node[LEFT], cut)
        node[LEFT] = right
        self._pull(node)
        return left, node

    def _merge(self, a: Node | None, b: Node | None) -> Node | None:
        """Every key of ``a`` below every key of ``b``."""
        if a is None:
            return b
        if b is None:
            return a
        if a[PRIO] > b[PRIO]:
            self._push(a)
            a[RIGHT] = self._merge(a[RIGHT], b)
            self._pull(a)
            return a
        self._push(b)
        b[LEFT] = self._merge(a, b[LEFT])
        self._pull(b)
        return b

    # -- what the aggregate counter uses ---------------------------------------------------

    def insert(self, value: Any, seq: int, vec: list[int]) -> None:
        """A new leaf ``(value, seq)`` (``seq`` unique) holding ``vec``."""
        node: Node = [value, seq, self.random.random(), None, None, vec, list(vec), None]
        self.size += 1
        self.root = self._insert(self.root, node)

    def _insert(self, node: Node | None, new: Node) -> Node:
        if node is None:
            return new
        if new[PRIO] > node[PRIO]:
            new[LEFT], new[RIGHT] = self._split(node, (new[VALUE], new[SEQ]))
            self._pull(new)
            return new
        self._push(node)
        if (new[VALUE], new[SEQ]) < (node[VALUE], node[SEQ]):
            node[LEFT] = self._insert(node[LEFT], new)
        else:
            node[RIGHT] = self._insert(node[RIGHT], new)
        self._pull(node)
        return node

    def delete(self, value: Any, seq: int) -> None:
        """Remove the leaf ``(value, seq)`` (it must be there)."""
        self.size -= 1
        self.root = self._delete(self.root, (value, seq))

    def _delete(self, node: Node | None, key: tuple[Any, int]) -> Node | None:
        assert node is not None, "deleting a key the tree does not hold"
        self._push(node)
        here = (node[VALUE], node[SEQ])
        if key == here:
            return self._merge(node[LEFT], node[RIGHT])
        if key < here:
            node[LEFT] = self._delete(node[LEFT], key)
        else:
            node[RIGHT] = self._delete(node[RIGHT], key)
        self._pull(node)
        return node

    def step(self, cuts: list[tuple[Any, int]], moves: list[tuple[Matrix | None, tuple[int, ...] | None]]) -> int:
        """Apply one event: the keys are cut into ``len(cuts) + 1`` ranges (``cuts`` ascending),
        range ``r`` gets ``moves[r] = (matrix, finals)``: first the runs reaching a final state
        are counted (``sum · finals``, None: none), then its vectors are multiplied by the matrix
        (None: unchanged).  Returns the count.  Where no range moves (an event that only
        completes complex events), the ranges' sums are read without cutting the tree."""
        root = self.root
        if root is None:
            return 0
        if not cuts:
            m, f = moves[0]
            found = dot(root[SUM], f) if f is not None else 0
            if m is not None:
                self._apply(root, m)
            return found
        if all(m is None for m, _ in moves):
            return self._count(cuts, [f for _, f in moves])
        parts: list[Node | None] = []
        rest: Node | None = root
        for cut in cuts:
            left, rest = self._split(rest, cut)
            parts.append(left)
        parts.append(rest)
        found = 0
        merged: Node | None = None
        for part, (m, f) in zip(parts, moves, strict=True):
            if part is not None:
                if f is not None:
                    found += dot(part[SUM], f)
                if m is not None:
                    self._apply(part, m)
            merged = self._merge(merged, part)
        self.root = merged
        return found

    def _count(self, cuts: list[tuple[Any, int]], finals: list[tuple[int, ...] | None]) -> int:
        """``sum over ranges r of (sum of range r) · finals[r]``, without changing the tree.

        That is ``total · finals[-1]`` plus, per cut ``r``, ``prefix(cut r) · (finals[r] -
        finals[r + 1])``; a prefix sum walks one path, carrying ``g`` as a column vector through
        the pending tags (``(v · T) · g = v · (T · g)``): ``k²`` per tagged node, no push."""
        k = self.k
        zero = (0,) * k
        fs = [zero if f is None else f for f in finals]
        root = self.root
        assert root is not None
        found = dot(root[SUM], fs[-1])
        for r, cut in enumerate(cuts):
            g = [a - b for a, b in zip(fs[r], fs[r + 1], strict=True)]
            if any(g):
                found += self._prefix(root, cut, g)
        return found

    def _prefix(self, node: Node | None, cut: tuple[Any, int], g: list[int]) -> int:
        """``(sum of the keys below cut) · g``, ``g`` already through the tags above ``node``."""
        found = 0
        visited = 0
        while node is not None:
            visited += 1
            left = node[LEFT]
            tag = node[TAG]
            below = g if tag is None else [sum(c * g[j] for j, c in row) for row in tag]
            if (node[VALUE], node[SEQ]) < cut:
                found += _dot(node[VEC], below)
                if left is not None:
                    found += _dot(left[SUM], below)
                node = node[RIGHT]
            else:
                node = left
            g = below
        self.work[0] += visited
        return found

    def total(self) -> list[int]:
        """The sum of every vector (zeros when empty)."""
        return [0] * self.k if self.root is None else list(self.root[SUM])
