"""Running an SRT over batches of events: runs with registers (SRT TR Algorithm 1).

A *run* is ``(state, registers, start, start time, marked positions)``, a
hashable tuple: registers hold whole events (tuples of the attributes the
guards read), marked positions are the output so far.  For each event every
live run of the event's partition tries its labelled transitions (unary mask
on the event's predicate bits first, then the n-ary guards on the registers
as they are after the transition's clears, then the register writes); a run
at a *stationary* state also stays where it is (the TRUE self-loop of a gap,
``;``), one at another state follows its gap transitions or dies (``:``).  A
fresh run starts at every event from the initial state (anchored: one per partition, see
``begun``).  A labelled
transition into a final state reports ``(start, now, marked)``; the run goes
on (a final state may have successors: SRT spec test T12).

**Sharing and skipping.**

* The unary parts of every FILTER are one bit each in the vectorized
  predicate table (:class:`~kleene.predicates.table.PredicateTable`), so
  an event that no labelled transition's mask accepts is *irrelevant*: it
  changes no run at a stationary state.  Unless the pattern has contiguous
  parts (``:``, ``:+``, STRICT), only the relevant events of a batch (found
  with one vectorized pass) are visited at all.
* Runs are a set: two runs with the same state, registers, start and output
  behave identically forever, so they are merged (this is where runs
  created by different paths share their future work).
* Windows: a run that started before ``tau = time - window`` can produce no
  admissible match and is dropped, so with ``WITHIN`` the live runs are
  those that started inside the window.

* Runs at a stationary state wait in a run index (:mod:`kleene.registers.index`)
  instead of being carried from event to event: an event tries only the
  waiting runs whose state has a transition accepting it, and, where that
  transition's guard compares the event with a register (``price > s.price``,
  ``name = a.name``), only the runs the comparison selects, found by binary
  search over the runs ordered by register value.  Not under LIMIT, UNLESS,
  STRICT or NEXT/LAST/MAX (:func:`kleene.registers.index.applies`).

**Cost per event** without the index (of a visited event, in its partition): ``O(R · d · g)``
where ``R`` is the number of live runs (started inside the window, distinct),
``d`` the number of transitions out of a run's state and ``g`` the cost of its
guards; plus ``O(k)`` per complex event of ``k`` positions reported.  ``R``
is at most the number of partial matches inside the window: linear in the
window for sequences of single events, and (skip-till-any-match with
iteration) exponential in the window in the worst case, as the SRT papers
state (TR §6); deduplication is what keeps iterations such as
``E+ as p FILTER p[price > prev(p).price]`` polynomial in practice.  With the
index, the runs tried per event are the moving runs (at non-stationary states)
plus the waiting runs the event's transitions select: ``O(log R)`` per look-up
plus the runs that then fire, i.e. the new partial and complex events
(``touched`` and ``probed`` count them; tests/registers/test_index.py).

**UNLESS whose right side reads the left side's variables** (issue 18,
``(A AS a ; B) UNLESS (C AS c FILTER c[v > a.v])``): its monitor is *seeded*: it runs once
per left start ``s`` still held by some run (partition key ``(key, s)``), its runs starting
with the left variables' registers holding the event at ``s`` (the checker made sure they are
bound there); the left run's check asks whether the runs of its own start ended a match.
Cost: the monitor's runs times the left starts alive, memory per left run.

Size: the run loop, its monitors and their bookkeeping share the per-event step.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from kleene.limits import CHECK_EVERY, Limits
from kleene.registers.guards import guard_columns
from kleene.registers.index import RunIndex, applies, probes
from kleene.registers.pairs import pair_plan, run_pairs
from kleene.registers.srt import SRT
from kleene.runtime.contract import FoundSink

NO_BOUND = -(1 << 62)
UNLIMITED = 1 << 62
SWEEP_STEPS = 8192
"""Visited events between two sweeps for runs that left the window (at least)."""

Run = tuple[int, tuple[Any, ...], int, Any, tuple[int, ...]]
"""``(state, registers, start position, start time, marked positions)``."""


def _next_less(a: frozenset[int], b: frozenset[int]) -> bool:
    """``a <_next b``: at the first position where they differ, ``b`` has it (CEL thesis §4)."""
    return a != b and min(a ^ b) in b


def _last_less(a: frozenset[int], b: frozenset[int]) -> bool:
    return a != b and max(a ^ b) in b


def select(strategy: str, matches: list[tuple[int, tuple[int, ...]]]) -> list[tuple[int, tuple[int, ...]]]:
    """The matches (of one end, one partition) that NEXT, LAST or MAX keep."""
    if strategy == "MAX":
        sets = [frozenset(m) for _, m in matches]
        return [m for m, s in zip(matches, sets, strict=True) if not any(s < o for o in sets)]
    less = _next_less if strategy == "NEXT" else _last_less
    best = matches[0]
    for m in matches[1:]:
        if less(frozenset(best[1]), frozenset(m[1])):
            best = m
    return [best]


def project_chosen(
    strategy: str, found: list[tuple[int, tuple[int, ...]]]
) -> list[tuple[int, tuple[int, ...]]]:
    """NEXT, LAST or MAX with a projection: choose whole matches, then project them.

    In an SRT compiled with ``strategy_first`` every event of a match is
    marked, a ``hidden`` one as ``~position``: ``found`` holds, per accepting
    run, the whole match and which of its events the projection keeps.  The
    strategy chooses among the whole matches (docs/cel-semantics.md, "Order
    of the clauses"); every run whose whole match was chosen gives its
    projection (runs of one match may bind its events to different
    variables, e.g. the two sides of an OR), each complex event once.
    """
    whole: dict[tuple[int, tuple[int, ...]], list[tuple[int, ...]]] = {}
    for start, marked in found:
        full = tuple(p if p >= 0 else ~p for p in marked)
        whole.setdefault((start, full), []).append(tuple(p for p in marked if p >= 0))
    chosen = select(strategy, list(whole))
    out: dict[tuple[int, tuple[int, ...]], None] = {}
    for start, full in chosen:
        for kept in sorted(whole[(start, full)]):
            out[(start, kept)] = None
    return list(out)


class RegisterEngine:
    """The evaluation state of one query with conditions between events (all partitions)."""

    def __init__(
        self,
        srt: SRT,
        *,
        window: int | float | None,
        partitioned: bool,
        consume: str,
        limit: int | None,
        strategy: str,
        type_column: str = "type",
        limits: Limits | None = None,
    ) -> None:
        self.srt = srt
        self.limits = limits or Limits()
        """``max_runs`` (runs alive at once, all partitions) and ``max_matches`` (complex events
        one event completes): :mod:`kleene.limits`; the session looks at ``max_memory``."""
        self.live = 0
        """Runs alive now, over every partition (kept up to date by each step)."""
        self._look_at = min(self.limits.max_runs, CHECK_EVERY)
        """Runs alive past which :meth:`_look` checks ``max_runs`` and the memory again."""
        self.window = window
        self.partitioned = partitioned
        self.consume = consume
        self.limit = limit if limit is not None else UNLIMITED
        self.strategy = strategy
        self.strict = strategy == "STRICT"
        self.visit_all = self.strict or srt.contiguous or bool(srt.monitors)
        self.latest: list[dict[Hashable, int]] = [{} for _ in srt.monitors]
        """Per UNLESS monitor and partition: the latest start of its matches ended so far."""
        self.monitors: list[RegisterEngine] = []
        """The right sides of UNLESS, run on every event before the query's runs."""
        for m in srt.monitors:
            monitor = RegisterEngine(
                dataclasses.replace(m, monitors=()), window=window, partitioned=partitioned,
                consume="NONE", limit=None, strategy="ALL", type_column=type_column,
                limits=self.limits,
            )
            self.monitors.append(monitor)
        self.runs: dict[Hashable, dict[Run, None]] = {}
        """Per partition: the runs stepped one by one (all of them unless ``indexed``)."""
        self.begun: set[Hashable] = set()
        """Anchored SRT (kleene.registers.selectors): the partitions whose one run has started
        (at their first event; its start is set by its first bound event)."""
        self.probes = probes(srt)
        self.indexed = not self.strict and applies(srt, strategy, limit)
        """Whether runs at stationary states are indexed by register value (kleene.registers.index):
        not under LIMIT and the strategies that choose among the complex events of an event,
        which take them in the order the runs produce them."""
        self.park = [self.indexed and srt.stationary[q] for q in range(srt.num_states)]
        """Per state: runs there wait in a :class:`~kleene.registers.index.RunIndex`, tried only
        by the events one of the state's transitions accepts, through its probe if it has one."""
        self.parked: dict[Hashable, dict[int, RunIndex]] = {}
        """Per partition, per parked state: its waiting runs."""
        self.expiry: dict[Hashable, list[tuple[Any, int, int, Run]]] = {}
        """Per partition: ``(start time, seq, state, run)`` of parked runs, a heap (window order)."""
        self._seq = 0
        self.touched = 0
        """Runs tried on an event so far (moved, fired or kept), for tests that count work."""
        self.probed = 0
        """Index look-ups so far."""
        self.tau: int | float = NO_BOUND
        self._sweep_at = SWEEP_STEPS
        self.steps = 0
        """How many events were visited (the others could change no run)."""
        self._masks = np.array(srt.relevant_masks, dtype=np.uint64)
        self._empty: tuple[Any, ...] = (None,) * srt.num_registers
        self.pairs = pair_plan(
            srt, window=window, partitioned=partitioned, consume=consume, limit=limit,
            strategy=strategy, type_column=type_column,
        )
        """The vectorized pair join (kleene.registers.pairs), when the query allows it."""
        self.seeded = srt.seeded or ((),) * len(srt.monitors)
        """Per monitor: the registers seeded with the left match's first event (issue 18: its
        right side reads the left's variables), empty for a monitor on its own."""
        self.contexts: list[dict[Hashable, set[int]]] = [{} for _ in srt.monitors]
        """Per seeded monitor and partition: the left starts it runs for (one run set each)."""
        self.done: list[set[tuple[Hashable, int]]] = [set() for _ in srt.monitors]
        """Per seeded monitor: ``(partition, left start)`` whose runs ended a match."""
        self.start_register = {k: r for ts in srt.labelled for t in ts for r, k in t.checks}
        """Per monitor: the register holding the start of its UNLESS's left match."""
        self.pruned = [k for k in self.start_register if self.seeded[k]]
        """The seeded monitors whose left starts are forgotten once no run holds them."""
        self.seeds: dict[Hashable, tuple[Any, ...]] | None = None
        """Of a seeded monitor: the registers its runs start with, per (partition, left start)."""
        for k, monitor in enumerate(self.monitors):
            monitor.latest, monitor.done = self.latest, self.done  # stepped with _step
            if self.seeded[k]:  # runs per left start: stepped one by one, none parked
                monitor.seeds = {}
                monitor.indexed = False
                monitor.park = [False] * monitor.srt.num_states

    def relevant(self, bits: np.ndarray) -> np.ndarray:
        """Which events some labelled transition accepts (vectorized)."""
        out = np.zeros(len(bits), dtype=bool)
        for m in self._masks:
            out |= (bits & m) == m
        return out

    def run_batch(
        self,
        batch: pa.RecordBatch,
        bits: np.ndarray,
        positions: np.ndarray,
        times: np.ndarray | None,
        key_columns: Sequence[Sequence[Hashable]] | None,
        out: FoundSink,
    ) -> None:
        """Process one batch (rows in stream order), appending its complex events to ``out``.

        ``positions`` and ``times`` (None: positions serve as times) are
        int64/float arrays; ``key_columns`` the PARTITION BY values.
        """
        n = len(positions)
        if n == 0:
            return
        if self.pairs is not None:
            assert self.window is not None
            stamps = positions if times is None else times
            run_pairs(self.pairs, batch, bits, positions, stamps, self.window, out, self.limits)
            self.steps += n
            self.touched = sum(step.tried for step in self.pairs)
            self.tau = stamps[-1] - self.window
            # A run of the pair join is an indexed first event waiting for its second.
            self.live = sum(len(step.index.positions) for step in self.pairs)
            if self.live > self.limits.max_runs:
                raise self.limits.runs_error(self.live, "first events waiting in the window")
            return
        visit = range(n) if self.visit_all else np.flatnonzero(self.relevant(bits)).tolist()
        bit_list: list[int] = bits.tolist()
        columns = guard_columns(batch, self.srt.attributes)
        pos_list: list[int] = positions.tolist()
        time_of = pos_list if times is None else times.tolist()
        positions = pos_list  # type: ignore[assignment]
        window = self.window
        for i in visit:
            key: Hashable = None
            if key_columns is not None:
                key = tuple(col[i] for col in key_columns)
                if None in key:
                    continue
            time = time_of[i]
            tau = NO_BOUND if window is None else time - window
            self.tau = tau
            self.steps += 1
            for k, monitor in enumerate(self.monitors):  # inner UNLESS first (lower k)
                if self.seeded[k]:
                    self._step_seeded(k, key, positions[i], time, bit_list[i], columns, i, tau)
                    continue
                ended = monitor._step(key, positions[i], time, bit_list[i], columns, i, tau)
                if ended:
                    latest = self.latest[k]
                    latest[key] = max(latest.get(key, -1), max(s for s, _ in ended))
            found = self._step(key, positions[i], time, bit_list[i], columns, i, tau)
            for k in self.pruned:
                self._prune_seeded(k, key)
            if found:
                self._emit(found, positions[i], key, out)
            if self.steps >= self._sweep_at:
                self._evict_expired(tau)

    def _step_seeded(
        self, k: int, key: Hashable, pos: int, time: Any, bits: int,
        columns: Sequence[Sequence[Any]], row: int, tau: Any,
    ) -> None:
        """Step seeded monitor ``k`` for every left start of ``key`` still in use, and for this
        event as a new one (its runs read the left variables as this event)."""
        monitor = self.monitors[k]
        assert monitor.seeds is not None
        starts = self.contexts[k].setdefault(key, set())
        seed = list(self._empty)
        event = tuple(col[row] for col in columns)
        for r in self.seeded[k]:
            seed[r] = event
        monitor.seeds[(key, pos)] = tuple(seed)
        starts.add(pos)
        done = self.done[k]
        for s in starts:
            if (key, s) not in done and monitor._step((key, s), pos, time, bits, columns, row, tau):
                done.add((key, s))
                monitor._drop((key, s))  # decided: no need to follow its runs further

    def _prune_seeded(self, k: int, key: Hashable) -> None:
        """Forget the left starts of seeded monitor ``k`` that no run of ``key`` holds any more
        (memory per left run, not per event)."""
        starts = self.contexts[k].get(key)
        if not starts:
            return
        r = self.start_register[k]
        held = {run[1][r] for run in self.runs.get(key, ())}
        monitor = self.monitors[k]
        for s in [s for s in starts if s not in held]:
            starts.discard(s)
            self.done[k].discard((key, s))
            monitor._drop((key, s))
            assert monitor.seeds is not None
            monitor.seeds.pop((key, s), None)
        if not starts:
            del self.contexts[k][key]

    def _drop(self, key: Hashable) -> None:
        """Drop the runs of ``key`` (a seeded monitor's decided or forgotten left start)."""
        self.live -= len(self.runs.pop(key, {}))

    def _evict_expired(self, tau: Any) -> None:
        """Drop the runs that left the window in partitions no recent event visited.

        A partition's runs are only pruned when one of its events is visited;
        without this sweep, keys seen once would keep their runs forever.
        Amortized: the next sweep waits for as many steps as runs remain.
        """
        for monitor in self.monitors:
            monitor._evict_expired(tau)
        live = 0
        for key in list(self.expiry):
            self._expire(key, tau)
        live += sum(len(i) for indexes in self.parked.values() for i in indexes.values())
        for key in list(self.runs):
            kept = {run: None for run in self.runs[key] if run[3] >= tau}
            if kept:
                self.runs[key] = kept
                live += len(kept)
            else:
                del self.runs[key]
        for k in self.pruned:
            for key in list(self.contexts[k]):
                self._prune_seeded(k, key)
        self.live = live
        self._look_at = min(self.limits.max_runs, live + CHECK_EVERY)
        self._sweep_at = self.steps + max(SWEEP_STEPS, live)

    def _step(
        self,
        key: Hashable,
        pos: int,
        time: Any,
        bits: int,
        columns: Sequence[Sequence[Any]],
        row: int,
        tau: Any,
    ) -> list[tuple[int, tuple[int, ...]]]:
        srt = self.srt
        labelled, gaps, stationary, finals = srt.labelled, srt.gaps, srt.stationary, srt.finals
        dead = srt.dead
        park = self.park
        strict = self.strict
        latest, done = self.latest, self.done
        old = self.runs.get(key)
        new: dict[Run, None] = {}
        found: list[tuple[int, tuple[int, ...]]] = []
        event: tuple[Any, ...] | None = None

        def fire(t: Any, regs: tuple[Any, ...], start: int, stime: Any, marked: tuple[int, ...]) -> None:
            nonlocal event
            if start < 0 and t.variables:  # an anchored run's first event of the match
                start, stime = pos, time
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
            for r, k in t.checks:  # UNLESS: no match of its right side inside [start, now]
                if latest[k].get(key, -1) >= regs[r] or (key, regs[r]) in done[k]:
                    return
            if t.guards or t.writes:
                if t.writes:
                    written = list(regs)
                    for r in t.writes:
                        written[r] = event
                    regs = tuple(written)
            if t.marked:
                marked = (*marked, ~pos if t.hidden else pos)
            if not dead[t.target]:
                if park[t.target]:
                    parked.append((t.target, regs, start, stime, marked))
                else:
                    new[(t.target, regs, start, stime, marked)] = None
            if t.target in finals:
                found.append((start, marked))

        parked: list[Run] = []
        if self.indexed:
            old = self._step_parked(key, old, bits, columns, row, tau, fire, parked)
        if old:
            self.touched += len(old)
            for run in old:
                state, regs, start, stime, marked = run
                if stime < tau:
                    continue
                if not strict:
                    if stationary[state]:
                        new[run] = None
                    else:
                        for g in gaps[state]:
                            fire(g, regs, start, stime, marked)
                for t in labelled[state]:
                    if bits & t.mask == t.mask and not bits & t.neg:
                        fire(t, regs, start, stime, marked)
        seed = self._empty if self.seeds is None else self.seeds[key]
        begin = not srt.anchored or key not in self.begun  # anchored: the partition's one run
        if begin and srt.anchored:
            self.begun.add(key)
            for g in gaps[srt.initial]:  # (its initial state is not stationary: no TRUE loop)
                fire(g, seed, -1, time, ())
        for t in labelled[srt.initial] if begin else ():
            if bits & t.mask == t.mask and not bits & t.neg:
                fire(t, seed, -1 if srt.anchored else pos, time, ())
        if parked:
            self._park(key, parked)  # counted in self.live
        self.live += len(new) - (len(old) if old else 0)
        if self.live > self._look_at:
            self._look(pos)
        if new:
            self.runs[key] = new
        elif key in self.runs:
            del self.runs[key]
        return found

    def _look(self, pos: int) -> None:
        """The runs grew by :data:`CHECK_EVERY` or passed ``max_runs``: check both limits.

        Runs can double at each event, so the memory is looked at here too, not only between
        batches (by the session): a batch could otherwise exhaust it.
        """
        if self.live > self.limits.max_runs:
            raise self.limits.runs_error(self.live)
        self.limits.check_memory(f"with {self.live:,} runs alive (at input position {pos})")
        self._look_at = min(self.limits.max_runs, self.live + CHECK_EVERY)

    def _step_parked(
        self,
        key: Hashable,
        old: dict[Run, None] | None,
        bits: int,
        columns: Sequence[Sequence[Any]],
        row: int,
        tau: Any,
        fire: Any,
        parked: list[Run],
    ) -> dict[Run, None] | None:
        """Try the parked runs of ``key`` that the event's probes select; the moving runs left.

        Expired runs leave the indexes first.
        """
        self._expire(key, tau)
        indexes = self.parked.get(key)
        if not indexes:
            return old
        labelled = self.srt.labelled
        event: tuple[Any, ...] | None = None
        for q, index in indexes.items():
            for k, t in enumerate(labelled[q]):
                if bits & t.mask != t.mask or bits & t.neg:
                    continue
                if event is None:
                    event = tuple(col[row] for col in columns)
                self.probed += 1
                for run in index.candidates(k, event):
                    self.touched += 1
                    fire(t, run[1], run[2], run[3], run[4])
        return old

    def adopt(self, key: Hashable, runs: dict[Run, None]) -> None:
        """Take over the runs of partition ``key`` (the windowed runtime's hand-over)."""
        moving = {run: None for run in runs if not self.park[run[0]]}
        if moving:
            self.runs[key] = moving
            self.live += len(moving)
        self._park(key, [run for run in runs if self.park[run[0]]])

    def _park(self, key: Hashable, runs: list[Run]) -> None:
        indexes = self.parked.setdefault(key, {})
        heap = self.expiry.setdefault(key, [])
        for run in runs:
            q = run[0]
            index = indexes.get(q)
            if index is None:
                index = indexes[q] = RunIndex(self.probes[q])
            if not index.add(run):
                continue
            self.live += 1
            if self.window is not None:
                self._seq += 1
                heapq.heappush(heap, (run[3], self._seq, q, run))

    def _expire(self, key: Hashable, tau: Any) -> None:
        """Drop the parked runs of ``key`` that started before ``tau``."""
        heap = self.expiry.get(key)
        if not heap or heap[0][0] >= tau:
            return
        indexes = self.parked[key]
        while heap and heap[0][0] < tau:
            _, _, q, run = heapq.heappop(heap)
            index = indexes[q]
            index.remove(run)
            self.live -= 1
            if not index:
                del indexes[q]
        if not heap:
            del self.expiry[key], self.parked[key]

    def _emit(
        self, found: list[tuple[int, tuple[int, ...]]], end: int, key: Hashable, out: FoundSink
    ) -> None:
        unique = list(dict.fromkeys(found))
        if self.srt.strategy_first:
            unique = project_chosen(self.strategy, unique)
        elif self.strategy in ("NEXT", "LAST", "MAX"):
            unique = select(self.strategy, unique)
        # LIMIT at or below max_matches cuts silently, as asked (as in the tECS engine).
        if len(unique) > self.limits.max_matches and self.limit > self.limits.max_matches:
            raise self.limits.matches_error(end)
        unique = unique[: self.limit]
        for start, marked in unique:
            out.append((start, end, marked, key))
        if unique and self.consume != "NONE":
            self._forget(None if self.consume == "ANY" else key)

    def _forget(self, key: Hashable) -> None:
        """CONSUME BY: drop the runs of partition ``key`` (None: of every partition)."""
        if key is None:
            self.runs.clear()
            self.parked.clear()
            self.expiry.clear()
            self.live = 0
        else:
            gone = self.parked.pop(key, {})
            self.live -= len(self.runs.pop(key, {})) + sum(len(i) for i in gone.values())
            self.expiry.pop(key, None)
