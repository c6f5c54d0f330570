"""Register runs with equal futures merged: one run per (state, registers), outputs in a tECS.

A run of :mod:`kleene.registers.runtime` is ``(state, registers, start,
start time, marked positions)``.  Its future (which events move it, what it
writes) depends on the state and the registers only; the start and the marked
positions are its *output*, and the start decides when it leaves the window.
Runs with the same state and registers but different outputs are therefore
one run here, a *handle* ``(state, registers)`` holding one tECS node
(:mod:`kleene.runtime.tecs`, CORE §4.1) that encodes every output of the runs
it stands for: a bottom node per start, an output node per marked position,
union nodes where runs meet.  The node's ``max`` is the newest start time, so

* the handle is alive while ``max >= tau`` (the newest of its runs is still
  in the window), and
* a complex event is enumerated from the node of the run that reached a final
  state (:func:`kleene.runtime.enumeration.enumerate_node`), skipping the
  outputs that started before the window, in time O(output): unions are
  time-ordered (``max(left) >= max(right)``) and built with CORE's union-list
  gadgets (:func:`kleene.runtime.tecs.insert`, :func:`~kleene.runtime.tecs.merge`).

The number of live runs is then the number of distinct ``(state,
registers)`` of the window, not the number of partial matches: in ``SELL as
a; BUY as b; BUY as c FILTER c[price > a.price]`` the runs waiting for ``c``
are one per value of ``a`` (not one per pair ``a, b``), and a register no
later guard reads is dropped (:mod:`kleene.registers.liveness`): after ``c``
in the SRT paper's ``seq6`` one run stands for every ``a``, and after ``d``
one per value of ``d``.  The register values are what remains of the window:
runs touched per event are the runs the event moves plus the index look-ups
(:mod:`kleene.registers.index`), each moved run costing O(1) plus its
union-list, whatever the number of its outputs.

Several runs of the SRT may give the same complex event (an event both ``A``
and ``B`` under ``A OR B``): the old runtime kept them apart and dropped the
copies when an event emitted them; so does this one (``dict.fromkeys`` on the
enumerated complex events of an event).

Into a :class:`~kleene.runtime.enumeration.Count` (``Query.count``), the runs that reached a
final state add their nodes' window counts instead (:mod:`kleene.registers.counting`): no
complex event is enumerated, unless two runs could give the same one.

Used where the run index applies (ALL or ANY, no LIMIT, no UNLESS, not
STRICT, :func:`kleene.registers.index.applies`): there the order of an
event's complex events is free.  NEXT, LAST, MAX and LIMIT take them in the
order the runs produce them and keep the runs of the runtime module.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from kleene.registers.aggregate import AggregateCounter, aggregate_plan
from kleene.registers.counting import unambiguous, window_count
from kleene.registers.index import RunIndex
from kleene.registers.liveness import dead_after
from kleene.registers.runtime import RegisterEngine, Run
from kleene.runtime import tecs
from kleene.runtime.contract import FoundSink
from kleene.runtime.enumeration import Count, enumerate_node
from kleene.runtime.tecs import BOTTOM, OUTPUT, UNION, Node

Handle = tuple[int, tuple[Any, ...]]
"""``(state, registers)``: a merged run (its outputs are the tECS node it maps to)."""
ALL = 1 << 62
"""No limit on the complex events enumerated from a node (the merged runs have no LIMIT)."""
SEVER_EVERY = 4096
"""Union nodes created between two cuts of the right children that left the window."""


def join(nodes: list[Node], created: list[Node]) -> Node:
    """One tECS node for the union of ``nodes`` (time-ordered, CORE's union-list gadgets).

    The union-list's head must not be a union (its left child is read first by
    the enumeration): a union at the head is unfolded into its left child,
    which has the same ``max`` and is not a union (the tECS invariant), and
    its right child, inserted like the others.
    """
    if len(nodes) == 1:
        return nodes[0]
    nodes.sort(key=lambda n: n[1], reverse=True)
    head, rest = nodes[0], nodes[1:]
    while head[0] == UNION:
        rest.append(head[3])
        head = head[2]
    rest.sort(key=lambda n: n[1], reverse=True)
    ul = [head]
    for n in rest:
        tecs.insert(ul, n, created)
    return ul[0] if len(ul) == 1 else tecs.merge(ul, created)


def _ident(node: Node) -> tuple[int, int]:
    """Identifies a node built this event: an output node by its position and child."""
    if node[0] == OUTPUT:
        return node[2], id(node[3])
    return -1, id(node)


class MergedEngine(RegisterEngine):
    """:class:`RegisterEngine` with runs of equal state and registers merged (see the module doc)."""

    def __init__(self, *args: Any, aggregates: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.indexed:
            raise ValueError("merged runs need the run index (ALL or ANY, no LIMIT or UNLESS)")
        self.moving: dict[Hashable, dict[Handle, Node]] = {}
        """Per partition: the merged runs at non-stationary states and their nodes."""
        self.waiting: dict[Hashable, dict[Handle, Node]] = {}
        """Per partition: the nodes of the merged runs parked in the run indexes."""
        self.created: list[Node] = []
        """Union nodes still in reach of the window (:func:`kleene.runtime.tecs.sever`)."""
        self._sever_at = SEVER_EVERY
        self.scanned = 0
        """Union nodes looked at by the cuts (:func:`kleene.runtime.tecs.sever`), for tests."""
        self.nodes = 0
        """tECS nodes built so far (output nodes, bottoms and unions), for tests that count work."""
        self.merged = 0
        """Runs that met another at the same state and registers (and were merged into it)."""
        self.countable = unambiguous(self.srt)
        """No two runs give the same complex event (:func:`kleene.registers.counting.unambiguous`):
        a :class:`Count` sink then gets the nodes' window counts, no complex event is enumerated."""
        self.count_work = [0]
        """tECS nodes visited by the window counts so far (:func:`~kleene.registers.counting.window_count`)."""
        self.aggregates = (
            aggregate_plan(self.srt, strategy=self.strategy, limit=kwargs.get("limit"),
                           consume=self.consume)[0]
            if aggregates else None
        )
        """Where the query is in its class, a :class:`Count` from the first batch on is filled by
        aggregates over register values instead of runs (:mod:`kleene.registers.aggregate`)."""
        self.counter: AggregateCounter | None = None
        self.drops = dead_after(self.srt)
        """Per transition (``id``): the registers no later guard reads, set to ``None`` after it
        so that runs differing only in them merge (:mod:`kleene.registers.liveness`)."""

    def run_batch(
        self,
        batch: pa.RecordBatch,
        bits: np.ndarray,
        positions: np.ndarray,
        times: np.ndarray | None,
        key_columns: Sequence[Sequence[Hashable]] | None,
        out: FoundSink,
    ) -> None:
        """Counting from the first batch on, in the aggregates' class: the
        :class:`~kleene.registers.aggregate.AggregateCounter`; otherwise the merged runs."""
        counter = self.counter
        if counter is None and out.__class__ is Count and self.aggregates is not None \
                and not self.steps and not self.live:
            counter = self.counter = AggregateCounter(
                self.srt, self.aggregates, window=self.window, limits=self.limits,
                relevant=self.relevant,
            )
        if counter is None:
            super().run_batch(batch, bits, positions, times, key_columns, out)
            return
        if out.__class__ is not Count:
            raise RuntimeError("an engine that counts by aggregates cannot list complex events")
        counter.run_batch(batch, bits, positions, times, key_columns, out)
        self.steps, self.live, self.tau = counter.steps, counter.live, counter.tau

    def _step(
        self,
        key: Hashable,
        pos: int,
        time: Any,
        bits: int,
        columns: Sequence[Sequence[Any]],
        row: int,
        tau: Any,
    ) -> list[Any]:
        srt = self.srt
        labelled, gaps, finals, dead = srt.labelled, srt.gaps, srt.finals, srt.dead
        latest = self.latest
        arriving: dict[Handle, list[Node]] = {}
        found: list[Node] = []
        event: tuple[Any, ...] | None = None
        built = 0
        drops = self.drops

        def fire(t: Any, regs: tuple[Any, ...], node: Node) -> None:
            # The register step (clears/sets, guards, UNLESS checks, writes) is written out as in
            # RegisterEngine._step: one shared method measured 8-12% slower on rising and seq3.
            nonlocal event, built
            if t.clears or t.sets:
                cleared = list(regs)
                for r in t.clears:
                    cleared[r] = None
                for r in t.sets:
                    cleared[r] = pos
                regs = tuple(cleared)
            if t.guards or t.writes:
                if event is None:
                    event = tuple(col[row] for col in columns)
                for g in t.guards:
                    if not g(event, regs):
                        return
            for r, k in t.checks:
                if latest[k].get(key, -1) >= regs[r]:
                    return
            if t.writes:
                written = list(regs)
                for r in t.writes:
                    written[r] = event
                regs = tuple(written)
            if drops and (drop := drops.get(id(t))) is not None:
                kept = list(regs)
                for r in drop:
                    kept[r] = None
                regs = tuple(kept)
            if t.marked:
                node = (OUTPUT, node[1], ~pos if t.hidden else pos, node)
                built += 1
            if not dead[t.target]:
                handle = (t.target, regs)
                nodes = arriving.get(handle)
                if nodes is None:
                    arriving[handle] = [node]
                else:
                    nodes.append(node)
            if t.target in finals:
                found.append(node)

        self._expire(key, tau)
        indexes = self.parked.get(key)
        if indexes:
            waiting = self.waiting[key]
            for q, index in indexes.items():
                for k, t in enumerate(labelled[q]):
                    if bits & t.mask != t.mask or bits & t.neg:
                        continue
                    if event is None:
                        event = tuple(col[row] for col in columns)
                    self.probed += 1
                    for handle in index.candidates(k, event):
                        self.touched += 1
                        fire(t, handle[1], waiting[handle])
        old = self.moving.pop(key, None)
        if old:
            self.touched += len(old)
            self.live -= len(old)
            for (state, regs), node in old.items():
                if node[1] < tau:
                    continue
                for g in gaps[state]:
                    fire(g, regs, node)
                for t in labelled[state]:
                    if bits & t.mask == t.mask and not bits & t.neg:
                        fire(t, regs, node)
        fresh = None
        for t in labelled[srt.initial]:
            if bits & t.mask == t.mask and not bits & t.neg:
                if fresh is None:
                    fresh = (BOTTOM, time, pos)
                    built += 1
                fire(t, self._empty, fresh)
        if arriving:
            self._arrive(key, arriving)
        self.nodes += built
        if self.live > self._look_at:
            self._look(pos)
        if len(self.created) > self._sever_at:
            # Without a window nothing leaves it: forget the list (it would hold dead runs' nodes).
            self.scanned += len(self.created)
            self.created = [] if self.window is None else tecs.sever(self.created, tau)
            self._sever_at = max(SEVER_EVERY, 2 * len(self.created))  # amortized O(1) per union
        return found

    def _arrive(self, key: Hashable, arriving: dict[Handle, list[Node]]) -> None:
        """Merge the runs that reached each ``(state, registers)`` this event, and keep them.

        One run taking two transitions to the same handle (the same output node, or output
        nodes of one position over the same node) arrives once.
        """
        park, created = self.park, self.created
        moving: dict[Handle, Node] | None = None
        for handle, nodes in arriving.items():
            if len(nodes) > 1:
                nodes = list({_ident(n): n for n in nodes}.values())
            if park[handle[0]]:
                self._park_node(key, handle, nodes)
                continue
            if moving is None:
                moving = self.moving.setdefault(key, {})
            self.merged += len(nodes) - 1
            before = len(created)
            moving[handle] = join(nodes, created)
            self.nodes += len(created) - before
            self.live += 1

    def _park_node(self, key: Hashable, handle: Handle, nodes: list[Node]) -> None:
        """Park ``handle`` with the union of ``nodes`` (and of its node, if it already waits)."""
        waiting = self.waiting.setdefault(key, {})
        have = waiting.get(handle)
        created = self.created
        before = len(created)
        if have is not None:
            nodes.append(have)
        self.merged += len(nodes) - 1
        node = join(nodes, created)
        self.nodes += len(created) - before
        waiting[handle] = node
        q = handle[0]
        if have is None:
            indexes = self.parked.setdefault(key, {})
            index = indexes.get(q)
            if index is None:
                index = indexes[q] = RunIndex(self.probes[q])
            index.add(handle)
            self.live += 1
        if self.window is not None and (have is None or node[1] > have[1]):
            self._seq += 1
            heap: list[Any] = self.expiry.setdefault(key, [])
            heapq.heappush(heap, (node[1], self._seq, q, handle))

    def _expire(self, key: Hashable, tau: Any) -> None:
        """Drop the parked runs of ``key`` whose newest start left the window."""
        heap: list[Any] | None = self.expiry.get(key)
        if not heap or heap[0][0] >= tau:
            return
        indexes, waiting = self.parked[key], self.waiting[key]
        while heap and heap[0][0] < tau:
            _, _, q, handle = heapq.heappop(heap)
            node = waiting.get(handle)
            if node is None or node[1] >= tau:
                continue  # gone already, or a newer start arrived (it has its own entry)
            del waiting[handle]
            index = indexes[q]
            index.remove(handle)
            self.live -= 1
            if not index:
                del indexes[q]
        if not heap:
            del self.expiry[key], self.parked[key], self.waiting[key]

    def _evict_expired(self, tau: Any) -> None:
        """The sweep of :meth:`RegisterEngine._evict_expired`, over merged runs."""
        for key in list(self.expiry):
            self._expire(key, tau)
        live = sum(len(w) for w in self.waiting.values())
        for key in list(self.moving):
            kept = {h: n for h, n in self.moving[key].items() if n[1] >= tau}
            if kept:
                self.moving[key] = kept
                live += len(kept)
            else:
                del self.moving[key]
        self.live = live
        self._look_at = min(self.limits.max_runs, live + 4096)
        self._sweep_at = self.steps + max(8192, live)

    def adopt(self, key: Hashable, runs: dict[Run, None]) -> None:
        """Take over plain runs (each becomes a chain of output nodes over its start)."""
        arriving: dict[Handle, list[Node]] = {}
        for state, regs, start, stime, marked in runs:
            node: Node = (BOTTOM, stime, start)
            for p in marked:
                node = (OUTPUT, stime, p, node)
            arriving.setdefault((state, regs), []).append(node)
        self._arrive(key, arriving)

    def _emit(self, found: list[Any], end: int, key: Hashable, out: FoundSink) -> None:
        """Enumerate the complex events of the runs that reached a final state (copies dropped);
        into a :class:`Count`, count them without enumerating (:meth:`_count`)."""
        if out.__class__ is Count and self.countable:
            self._count(found, end, key, out)
            return
        seen: dict[Any, None] = {}
        cap = self.limits.max_matches + 1
        for node in found:
            listed: list[Any] = []
            if enumerate_node(node, self.tau, listed, cap, end, key) >= cap:
                # cut at the limit: raise, unless copies made it reach the cap (then take all)
                if len(set(listed)) >= cap:
                    raise self.limits.matches_error(end)
                listed = []
                enumerate_node(node, self.tau, listed, ALL, end, key)
            seen.update(dict.fromkeys(listed))
            if len(seen) > self.limits.max_matches:
                raise self.limits.matches_error(end)
        unique = list(seen)
        if out.__class__ is list:
            out.extend(unique)
        else:
            for m in unique:
                out.append(m)
        if unique and self.consume != "NONE":
            self._forget(None if self.consume == "ANY" else key)

    def _count(self, found: list[Any], end: int, key: Hashable, out: Count) -> None:
        """The complex events of ``found`` inside the window, counted from their nodes.

        The SRT is unambiguous, so the nodes of different final runs share no complex event;
        one run reaching final states by two transitions of the same marks gives one node
        identity (:func:`_ident`), counted once.
        """
        tau, work = self.tau, self.count_work
        if len(found) > 1:
            found = list({_ident(n): n for n in found}.values())
        total = 0
        for node in found:
            total += window_count(node, tau, work)
        if total > self.limits.max_matches:
            raise self.limits.matches_error(end)
        out.add(total)
        if total and self.consume != "NONE":
            self._forget(None if self.consume == "ANY" else key)

    def _forget(self, key: Hashable) -> None:
        """CONSUME BY: drop the runs of partition ``key`` (None: of every partition)."""
        if key is None:
            self.moving.clear()
            self.waiting.clear()
            self.parked.clear()
            self.expiry.clear()
            self.live = 0
        else:
            self.live -= len(self.moving.pop(key, {})) + len(self.waiting.pop(key, {}))
            self.parked.pop(key, None)
            self.expiry.pop(key, None)
