"""Running a compiled query over batches of events: partitions, windows, skipping.

The engine receives, per batch, the predicate bit vector of every event (the
vectorized first stage, :mod:`kleene.predicates`), its input
position, its time and its partition key, and drives one
:class:`~kleene.runtime.evaluator.Evaluator` per partition (CORE §4.4:
PARTITION BY runs one instance of Algorithm 1 per key, created when the key
first appears; positions stay global input positions).

**Skipping.**  Only events that can change some active run enter the
per-event loop.  An event with bit vector ``v`` is skipped when ``v`` is
*inert* (:meth:`LazyDFA.inert`) for ``q0`` and for every state active in its
partition: then Algorithm 1 would leave ``T`` unchanged and output nothing.
Inertness depends on the active states, so for each distinct set of active
states the batch's non-inert events are found with one vectorized pass over
the batch (cached for the batch), and the loop jumps from one to the next.
Under PARTITION BY the set is that of the states active in *some* partition;
each visited event is then checked against its own partition's states.

**Lookahead.**  Under a window, an event that no *final-capable* event
(one that can take a run into a final state) follows within the window can
be in no complex event: it is skipped too, whatever the active states
(:mod:`kleene.runtime.lookahead`).  The loop then runs over the remaining
candidates only, and converts only their positions and times to Python.
A batch's undecided tail (live events after its last final-capable event)
is carried into the next batch (:class:`~kleene.runtime.tail.Tail`) instead of being stepped:
no complex event ends in it, so outputs come at the same events as before.

**The loop.**  :meth:`Engine.loop` is the per-event loop in Python, the readable reference;
``kleene.runtime._loop`` is its compiled twin (:mod:`kleene.native`), which runs instead when it
is built and takes the configuration (every one but a projector's; see its docstring).

**Windows.**  ``tau = time - window`` is the earliest start a complex event
ending now may have; enumeration prunes with it and runs older than it are
dropped.  ``WITHIN n EVENTS`` uses positions as times.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from kleene.automata.determinize import LazyDFA
from kleene.limits import CHECK_EVERY, Limits
from kleene.native import load
from kleene.runtime.anchored import AnchoredEvaluator
from kleene.runtime.contract import FoundSink
from kleene.runtime.enumeration import Count, Found, enumerate_node
from kleene.runtime.evaluator import Evaluator
from kleene.runtime.lookahead import Lookahead
from kleene.runtime.maximal import MaxEvaluator, MaxRules, supported
from kleene.runtime.nxt import NxtEvaluator, NxtRules
from kleene.runtime.projection import Projector
from kleene.runtime.settings import Settings  # here before; kept importable from here
from kleene.runtime.strategies import last_match, maximal_matches
from kleene.runtime.tail import Tail
from kleene.runtime.tecs import Node
from kleene.runtime.visits import Visits

NO_BOUND = -(1 << 62)
"""``tau`` when the query has no window: earlier than every time."""

UNLIMITED = 1 << 62

SWEEP_STEPS = 8192
"""Steps between two sweeps for expired partitions (at least)."""


class Engine:
    """The evaluation state of one query over one stream (all partitions)."""

    def __init__(
        self,
        dfa: LazyDFA,
        settings: Settings,
        *,
        skip_inert: bool = True,
        lookahead: bool = True,
        projector: Projector | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.dfa = dfa
        self.settings = settings
        self.limits = limits or dfa.limits
        """``max_matches`` per event, ``max_runs`` partitions, ``max_memory`` (kleene.limits)."""
        self.produced = 0
        """Complex events output so far; the memory is looked at every CHECK_EVERY of them."""
        self.check_at = CHECK_EVERY
        self.projector = projector
        """Projects the matches a strategy chose (NEXT/LAST/MAX with a projection; ``dfa`` is then
        the automaton of ``SELECT *``)."""
        self.anchored = dfa.cea.anchored
        """Runs start at the stream's start (runtime/anchored.py): no skips, no lookahead."""
        self.skip_inert = skip_inert and not self.anchored
        """False turns skipping off (every event is stepped): for tests and measurements."""
        self.lookahead = Lookahead.of(dfa.cea) if lookahead and not self.anchored else None
        """Skips the events no final-capable event follows within the window (runtime/lookahead.py)."""
        self.steps = 0
        """How many events went through Algorithm 1 (the others were skipped)."""
        self.counting = False
        """The sink of the latest batch was a :class:`Count`: NEXT's evaluators then build no match."""
        if self.anchored:
            if settings.strategy not in ("ALL", "ANY") or settings.window is not None:
                raise ValueError("an anchored automaton runs under ALL, without a window")
            self._new: Callable[[], Evaluator | NxtEvaluator | MaxEvaluator] = lambda: AnchoredEvaluator(dfa)
        elif settings.strategy == "NEXT":
            rules = NxtRules(dfa)
            self._new = lambda: NxtEvaluator(dfa, rules, count_only=self.counting)
        elif settings.strategy == "MAX" and supported(dfa):
            max_rules = MaxRules(dfa)
            self._new = lambda: MaxEvaluator(dfa, max_rules)
        else:
            self._new = lambda: Evaluator(dfa)
        self.single = self._new()
        self.partitions: dict[Hashable, Evaluator | NxtEvaluator | MaxEvaluator] = {}
        # How many partitions each automaton state is active in, and the set
        # of those states (None when it must be recomputed): an event is only
        # looked at when it is not inert for some active state.
        self._counts: dict[int, int] = {}
        self._global: frozenset[int] | None = frozenset()
        self._sweep_at = SWEEP_STEPS
        self.tau: int | float = NO_BOUND
        """The window bound at the latest event: nothing before it is reachable."""
        self.tail: Tail | None = None
        """The previous batch's undecided tail, not stepped yet (see :class:`Tail`)."""

    def run_batch(
        self,
        batch: pa.RecordBatch | None,
        bits: np.ndarray,
        positions: Sequence[int] | np.ndarray,
        times: Sequence[int] | Sequence[float] | np.ndarray | None,
        key_columns: Sequence[Sequence[Hashable]] | None,
        out: FoundSink,
    ) -> None:
        """Process one batch of events, appending its complex events to ``out``.

        The contract of :class:`kleene.runtime.contract.BatchEngine`; the tECS
        engine reads only the bits, never ``batch``'s attributes.
        ``times`` is None for event windows and unwindowed queries (positions
        serve as times).  ``key_columns`` holds the values of the PARTITION
        BY attributes, one sequence per attribute (None if not partitioned);
        an event with a null key attribute belongs to no partition.
        ``positions`` and ``times`` may be numpy arrays or lists; only the
        entries of the events that are visited are converted to Python values.
        """
        if self.projector is not None and not isinstance(out, list):
            # Projection rewrites the batch's latest results: it works on a list,
            # whose complex events then go to the bulk path's columns.
            found: list[Found] = []
            self.run_batch(batch, bits, positions, times, key_columns, found)
            out.extend(found)
            return
        n = len(positions)
        if n == 0:
            return
        if (out.__class__ is Count) != self.counting:
            self._count_only(out.__class__ is Count)
        window = self.settings.window
        bits = np.asarray(bits, dtype=np.uint64)
        pos_arr = np.asarray(positions)
        time_arr = pos_arr if times is None else np.asarray(times)
        given = None if times is None else time_arr  # what _steps and Tail take: None for positions
        if window is not None:
            # Nothing before this is reachable from the next batch on (the
            # events' store is released up to here even if no event is visited).
            self.tau = max(self.tau, time_arr[-1].item() - window)
        projector = self.projector
        if projector is not None:
            # Every event, skipped or not: a chosen match is replayed over its span.
            projector.log(pos_arr, bits, key_columns, time_arr[-1].item())
            if window is not None:
                projector.release(time_arr[0].item() - window)
        if not (self.skip_inert and self.lookahead is not None and window is not None):
            self._steps(bits, pos_arr, given, key_columns, None, out)
            return
        # The candidate events: those that can reach a final state within the
        # window; the live ones after the last final-capable event wait in
        # the tail for the next batch.
        split = self.lookahead.split(bits, time_arr, window)
        tail = None if self.tail is None else self.tail.alive(split.horizon, window)
        self.tail = None
        live = split.live
        if split.cut < n:
            waits = np.ones(n - split.cut, dtype=bool) if live is None else live[split.cut :]
            moving = self.lookahead.may_move(bits[split.cut :])
            if moving is not None:
                # Transparent events need not wait: they change no run.  Except
                # the first: it may follow a final-capable event, and stepping it
                # out of a final state reshapes the tECS (the same complex events
                # later, but in another order than pushing the events one by one).
                moving[0] = True
                waits = waits & moving
            rest = split.cut + np.flatnonzero(waits)
            held = len(rest) + (len(tail) if tail is not None and split.cut == 0 else 0)
            if held <= n:  # else step them now: a tail is at most one batch long
                new = Tail.of(rest, bits, pos_arr, given, key_columns)
                if tail is not None and split.cut == 0:
                    new, tail = tail + new, None
                self.tail = new
                if live is None:
                    live = np.ones(n, dtype=bool)
                live[split.cut :] = False
        if tail is not None:
            self._steps(tail.bits, tail.positions, tail.times, tail.keys, None, out)
        cand = None if live is None else np.flatnonzero(live)
        if cand is None or len(cand):
            self._steps(bits, pos_arr, given, key_columns, cand, out)

    def _steps(
        self,
        bits: np.ndarray,
        positions: np.ndarray,
        times: np.ndarray | None,
        key_columns: Sequence[Sequence[Hashable]] | None,
        cand: np.ndarray | None,
        out: FoundSink,
    ) -> None:
        """Algorithm 1 over the events ``cand`` of a batch (all when None), skipping inert ones.

        The loop is :meth:`loop`, or its compiled twin ``kleene.runtime._loop.steps``
        (:mod:`kleene.native`) when that is built and takes the configuration: every
        strategy without a projector, positions as int64, times as int64 or float64 (it
        declines the rest before doing anything, and :meth:`loop` runs).
        """
        plan = Visits(self.dfa, bits if cand is None else bits[cand], self.skip_inert)
        twin = LOOP if self.projector is None and not self.anchored else None
        if twin is None or not twin(self, plan, positions, times, key_columns, cand, out):
            self.loop(plan, positions, times, key_columns, cand, out)

    def loop(self, plan: Visits, positions: np.ndarray, times: np.ndarray | None,
             key_columns: Sequence[Sequence[Hashable]] | None, cand: np.ndarray | None,
             out: FoundSink) -> None:
        """The per-event loop of :meth:`_steps`: the readable reference of its compiled twin."""
        settings = self.settings
        window = settings.window
        limit = settings.limit if settings.limit is not None else UNLIMITED
        cap = self.limits.max_matches
        # LIMIT at or below max_matches cuts silently, as asked; else one complex event past
        # max_matches is enumerated, and stops the run.
        room = limit if limit <= cap else cap + 1
        consume = settings.consume
        nxt = settings.strategy == "NEXT"
        selecting = settings.strategy == "LAST" or (
            settings.strategy == "MAX" and not isinstance(self.single, MaxEvaluator)
        )
        projector = self.projector
        time_arr = positions if times is None else times
        values, inverse, m = plan.values, plan.inverse, plan.size
        if cand is None:
            pos_arr = positions
            time_src = time_arr
        else:
            pos_arr = positions[cand]
            time_src = pos_arr if times is None else time_arr[cand]
        # Python values per candidate (positions, times, codes, rows, partition keys) are made
        # for the candidates about to be visited only while visits are sparse
        # (dicts), and for all of them (lists) at the first dense visit or once
        # the sparse ones pass a quarter of the batch (see provide).
        pos_list: Any = {}
        time_of: Any = pos_list if times is None else {}
        codes: Any = {}
        idx: Any = None if cand is None else {}
        keys: list[tuple[Hashable, ...]] | None = None  # by row, once dense
        is_dense = False
        converted = 0

        def provide(active: frozenset[int], k: int) -> None:
            """Make the Python values of the candidates visited for ``active`` from the
            ``k``-th on available (of every candidate when the visits are dense).

            Sparse conversions stop at a quarter of the batch: then everything is
            converted, so a batch never costs more than 1.25 times one conversion.
            """
            nonlocal pos_list, time_of, codes, idx, keys, is_dense, converted
            if is_dense:
                return
            at = plan.arrays.get(active)
            if at is not None:
                at = at[k:]
                converted += len(at)
            if at is None or converted * 4 > m:
                is_dense = True
                pos_list = pos_arr.tolist()
                time_of = pos_list if times is None else time_src.tolist()
                codes = inverse.tolist()
                idx = None if cand is None else cand.tolist()
                if key_columns is not None:
                    keys = list(zip(*key_columns))
                return
            ahead = at.tolist()
            pos_list.update(zip(ahead, pos_arr[at].tolist()))
            if times is not None:
                time_of.update(zip(ahead, time_src[at].tolist()))
            codes.update(zip(ahead, inverse[at].tolist()))
            if cand is not None:
                idx.update(zip(ahead, cand[at].tolist()))

        skip_tables = plan.tables
        partitions = self.partitions
        partitioned = key_columns is not None
        nulls = partitioned and any(None in col for col in key_columns)  # type: ignore[union-attr]
        ev = self.single
        active = self._active()
        todo = plan.visits(active)
        skip = plan.skip_table(active)
        provide(active, 0)
        k = 0
        j = 0
        key: Hashable = None
        while j < m:
            if todo is not None:
                if k >= len(todo):
                    break
                j = todo[k]
                k += 1
            elif skip[codes[j]]:
                j += 1
                continue
            if partitioned:
                i = j if idx is None else idx[j]
                key = keys[i] if keys is not None else tuple(col[i] for col in key_columns)  # type: ignore[union-attr]
                if nulls and None in key:
                    j += 1
                    continue
                ev = partitions.get(key)  # type: ignore[assignment]
                if ev is None:
                    if len(partitions) >= self.limits.max_runs:
                        raise self.limits.runs_error(len(partitions) + 1, "partitions holding runs")
                    ev = partitions[key] = self._new()
                table = skip_tables.get(ev.active_key)
                if table is None:
                    table = plan.skip_table(ev.active_key)
                if table[codes[j]]:
                    j += 1
                    continue
            pos = pos_list[j]
            time = time_of[j]
            tau = NO_BOUND if window is None else time - window
            if tau > self.tau:
                self.tau = tau
            self.steps += 1
            outputs = ev.step(pos, time, values[codes[j]], tau)
            if outputs:
                mark = len(out) if projector is not None else 0
                if nxt:
                    out.extend((start, pos, found_positions, key) for start, found_positions in outputs)
                    found = len(outputs)
                elif selecting:
                    found = self._select(outputs, tau, out, room, pos, key)
                else:
                    found = 0
                    # Several matches may project to one complex event: project them all.
                    most = room if projector is None else cap + 1
                    for node in outputs:
                        found += enumerate_node(node, tau, out, most - found, pos, key)
                        if found >= most:
                            break
                if found > cap:
                    raise self.limits.matches_error(pos)
                self.produced += found
                if self.produced >= self.check_at:
                    self.checkpoint(pos)
                if projector is not None and found:
                    assert isinstance(out, list)  # run_batch gives the projector a list
                    out[mark:] = projector.apply(out[mark:], limit)
                    found = len(out) - mark
                if found and consume != "NONE":
                    self._consume(ev)
            j += 1
            if partitioned:
                if not ev.table and not self.anchored:
                    partitions.pop(key, None)  # an empty evaluator is a fresh one: free it
                if self.steps >= self._sweep_at:
                    self._evict_expired(tau)
            if ev.table.keys() != ev.active_key:
                self._update(ev)
                now = self._active()
                if now != active:
                    active = now
                    skip = plan.skip_table(active)
                    todo = plan.visits(active)
                    if todo is not None:
                        k = bisect.bisect_left(todo, j)
                    provide(active, k)

    def checkpoint(self, pos: int) -> None:
        """Every CHECK_EVERY complex events: stop when the memory passed ``max_memory``."""
        self.check_at = self.produced + CHECK_EVERY
        self.limits.check_memory(
            f"after {self.produced:,} complex events (at input position {pos})"
        )

    def _consume(self, ev: Evaluator | NxtEvaluator | MaxEvaluator) -> None:
        """CONSUME BY after ``ev`` output: ANY discards every partial match, PARTITION ``ev``'s."""
        if self.settings.consume == "ANY":
            self.single.clear()
            for other in self.partitions.values():
                self._retire(other)
            self.partitions.clear()
        else:
            ev.clear()

    def _count_only(self, counting: bool) -> None:
        """Say to NEXT's evaluators whether their matches are only counted (a :class:`Count` sink)."""
        self.counting = counting
        for ev in (self.single, *self.partitions.values()):
            if isinstance(ev, NxtEvaluator):
                ev.count_only = counting

    def _select(
        self, outputs: list[Node], tau: float, out: FoundSink, limit: int, end: int, key: Hashable
    ) -> int:
        """The complex events ending at ``end`` that the strategy keeps; how many.

        Counted (a :class:`Count` sink), LAST needs no selection: it keeps one complex event
        wherever some complex event ends here inside the window, that is, wherever an output
        node's maximum start is inside it (O(1) per end).
        """
        if out.__class__ is Count and self.settings.strategy == "LAST":
            return out.add(1 if any(n[1] >= tau for n in outputs) else 0)
        if self.settings.strategy == "MAX":
            chosen = maximal_matches(outputs, tau)
            if self.projector is None:
                chosen = chosen[:limit]
        else:
            best = last_match(outputs, tau)
            chosen = [] if best is None else [best]
        out.extend((start, end, positions, key) for start, positions in chosen)
        return len(chosen)

    def _active(self) -> frozenset[int]:
        """The automaton states active in some partition."""
        if not self.settings.partitioned:
            return self.single.active_key
        if self._global is None:
            self._global = frozenset(self._counts)
        return self._global

    def _update(self, ev: Evaluator | NxtEvaluator | MaxEvaluator) -> None:
        """Refresh ``ev.active_key`` and, when partitioned, the per-state counts."""
        new = frozenset(ev.table)
        old = ev.active_key
        if new == old:
            return
        ev.active_key = new
        if self.settings.partitioned:
            counts = self._counts
            for s in old - new:
                counts[s] -= 1
                if not counts[s]:
                    del counts[s]
                    self._global = None
            for s in new - old:
                if s not in counts:
                    counts[s] = 0
                    self._global = None
                counts[s] += 1

    def _retire(self, ev: Evaluator | NxtEvaluator | MaxEvaluator) -> None:
        ev.clear()
        self._update(ev)

    def _evict_expired(self, tau: float) -> None:
        """Drop partitions whose every run started before the window.

        Keeps memory bounded when partition keys keep changing (a key seen
        once must not keep an evaluator forever).  Amortized: the next sweep
        waits for as many steps as there are partitions left.
        """
        partitions = self.partitions
        for key in [k for k, e in partitions.items() if e.expired(tau)]:
            self._retire(partitions.pop(key))
        self._sweep_at = self.steps + max(SWEEP_STEPS, len(partitions))


_compiled = load("kleene.runtime._loop")
LOOP: Callable[..., bool] | None = None if _compiled is None else _compiled.steps
"""The compiled twin of :meth:`Engine.loop` (``kleene.runtime._loop.steps``), or None when it
was not built or pure Python was asked for (:mod:`kleene.native`); it returns False when it
does not take a configuration."""
