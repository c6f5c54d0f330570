"""Count-windowed queries with conditions between events on the unrolled, determinized SRA.

Under ``WITHIN n EVENTS`` a complex event spans at most ``D = n + 1``
positions, so a run consumes at most ``D`` events of its partition and the
SRT can be unrolled to depth ``D`` (:class:`kleene.registers.windowed.Unrolling`).
The evaluation state of a partition is then *one* configuration of the
deterministic automaton (SRT TR Alg 7): the set ``S`` of tree nodes its runs
are at, plus the deterministic automaton's registers, which are the last
``D`` events of the partition.  A node at depth ``d`` started ``d`` events
ago, and the register copy it reads that was written at depth ``j`` is the
event ``d - j`` events before the current one; its marked positions are
likewise the positions of the events at its marked depths.  So a run costs no
register tuple, no position tuple and no hashing of events: it is an integer,
and equal runs are one node.

Per visited event of a partition:

1. ``S' = {root}`` plus, for every node of ``S`` and every edge of the node
   whose unary bits match the event's and whose n-ary guards hold on the
   event and the history, the edge's child (the minterm of the subset's
   conditions, evaluated lazily: a condition is only evaluated when its
   unary bits match);
2. an edge that accepts reports ``(start, marked positions)``, read from the
   history at the node's depth;
3. nodes whose start left the window (partitions and skipped events make
   walks shorter than the window's span) are dropped.

The tree is built lazily, node by node, and cached for the whole stream.
Cost per visited event: ``O(|S| · d · g)`` (``|S|`` live nodes, ``d`` edges
per node, ``g`` the guard cost), the same bound as the runs-based runtime
(:mod:`kleene.registers.runtime`) since ``|S|`` is its number of distinct
runs, with a smaller constant: building and hashing run tuples is replaced
by integer set insertion.  Memory: the nodes reached (at most the walks of
``D`` events the data produces) plus ``D`` events per partition.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from kleene.language import ast
from kleene.registers.automaton import SRT
from kleene.registers.pairs import pair_plan
from kleene.registers.runtime import RegisterEngine
from kleene.registers.windowed import Unrolling

Found = list[tuple[int, tuple[int, ...]]]


class _Partition:
    """The configuration of the deterministic automaton for one partition."""

    __slots__ = ("events", "nodes", "positions")

    def __init__(self) -> None:
        self.nodes: list[int] = []
        """The non-root nodes the runs are at (the root is in every subset)."""
        self.events: list[tuple[Any, ...]] = []
        self.positions: list[int] = []


class WindowedEngine(RegisterEngine):
    """:class:`RegisterEngine` for ``WITHIN n EVENTS``, on the unrolled tree (see the module doc)."""

    def __init__(
        self,
        srt: SRT,
        *,
        window: int,
        partitioned: bool,
        consume: str,
        limit: int | None,
        strategy: str,
        type_column: str = "type",
    ) -> None:
        super().__init__(
            srt, window=window, partitioned=partitioned, consume=consume, limit=limit,
            strategy=strategy, type_column=type_column,
        )
        self.pairs = None
        self.depth = int(window) + 1
        self.tree = Unrolling(srt, self.depth, strict=self.strict)
        self.parts: dict[Hashable, _Partition] = {}
        self._node_depth: list[int] = []

    @property
    def live_runs(self) -> int:
        return sum(len(p.nodes) for p in self.parts.values())

    def _depths(self) -> list[int]:
        keys = self.tree.keys
        depths = self._node_depth
        if len(depths) < len(keys):
            depths.extend(k[1] for k in keys[len(depths):])
        return depths

    def _step(
        self,
        key: Hashable,
        pos: int,
        time: Any,
        bits: int,
        columns: Sequence[Sequence[Any]],
        row: int,
        tau: Any,
    ) -> Found:
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = _Partition()
        events, positions = part.events, part.positions
        events.append(tuple(col[row] for col in columns))
        positions.append(pos)
        k = len(events) - 1
        event = events[k]
        out = self.tree.out
        depth = self._depths()
        new: dict[int, None] = {}
        found: Found = []
        for n in (*part.nodes, 0):
            first = k - depth[n]
            if positions[first] < tau:
                continue
            for e in out(n):
                if bits & e.mask != e.mask or bits & e.neg:
                    continue
                if e.guards:
                    base = first - 1
                    regs = tuple(None if j is None else events[base + j] for j in e.selection)
                    ok = True
                    for g in e.guards:
                        if not g(event, regs):
                            ok = False
                            break
                    if not ok:
                        continue
                if e.live:
                    new[e.child] = None
                if e.accepting:
                    base = first - 1
                    found.append((positions[first], tuple(positions[base + j] for j in e.marks)))
            depth = self._depths()  # out() may have created nodes
        if new:
            part.nodes = list(new)
            keep = self.depth + 1
            if len(events) > 2 * keep + 64:
                del events[: len(events) - keep]
                del positions[: len(positions) - keep]
        else:
            del self.parts[key]
        return found

    def _evict_expired(self, tau: Any) -> None:
        depth = self._depths()
        live = 0
        for key in list(self.parts):
            part = self.parts[key]
            last = len(part.positions)
            part.nodes = [n for n in part.nodes if part.positions[last - depth[n]] >= tau]
            if part.nodes:
                live += len(part.nodes)
            else:
                del self.parts[key]
        self._sweep_at = self.steps + max(8192, live)

    def _forget(self, key: Hashable) -> None:
        if key is None:
            self.parts.clear()
        else:
            self.parts.pop(key, None)


WINDOWED_MAX = 64
"""The largest ``WITHIN n EVENTS`` the windowed runtime is chosen for (see docs/semantics.md)."""


def choose_register_runtime(
    srt: SRT, settings: Any, within: ast.Window | None, type_column: str
) -> str:
    """``"pairs"`` (vectorized pair join), ``"windowed"`` (this module) or ``"runs"``."""
    plan = pair_plan(
        srt, window=settings.window, partitioned=settings.partitioned, consume=settings.consume,
        limit=settings.limit, strategy=settings.strategy, type_column=type_column,
    )
    if plan is not None:
        return "pairs"
    if isinstance(within, ast.EventsWindow) and within.count <= WINDOWED_MAX:
        return "windowed"
    return "runs"
