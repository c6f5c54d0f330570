"""Counting register runs by aggregates over register values (``Query.count``, issue 18 item 2).

:class:`kleene.registers.merged.MergedEngine` keeps one run per ``(state, registers)``.  In
``SELL as a; BUY as b; BUY as c FILTER c[price > a.price]`` the register is ``a``'s price, a
float: every ``a`` of the window has a run of its own, and every ``b`` (no guard) moves each of
them, so the work per event grows with the window.  For the class below, counting needs no run
at all, only a vector of counts per start, kept in a balanced tree ordered by register value.

**The class** (:func:`aggregate_plan`; anything else keeps the merged runs' count):

* no transition enters the initial state, none sets a register, no gap transition enters a
  final state; each register read by a guard holds, at the state the guard leaves, the same
  thing for every run there but for its start (:mod:`kleene.registers.freshness`): the start's
  event (written by the initial transitions only), nothing (``prev(t)`` before the first ``t``)
  or the partition's previous event (a state every entering transition writes it on and no
  event leaves a run at: ``prev(t)`` inside ``:+``, ``b`` after ``b :``);
* every conjunct on the start's registers compares an expression of the current event with one
  and the same expression ``K`` of them (``price > a.price``, ``2 * price <= a.price + 1``) by
  ``<``, ``<=``, ``>``, ``>=`` or ``=``; a conjunct on the others has one truth per event
  (evaluated once, with the partition's previous event), which picks the transitions of every
  start alike;
* ALL or ANY, no LIMIT, no UNLESS, no CONSUME BY, not STRICT, no nested selector, and the SRT
  is unambiguous (:func:`kleene.registers.counting.unambiguous`): its paths are its complex
  events.

**The count.**  For one start ``s`` with key ``K(s)``, its runs are a vector ``v_s`` of counts
over the SRT's live states (not the initial one, not the dead ones).  An event moves them by a
matrix ``M`` and completes ``v_s · F`` complex events, where ``M[q][q']`` and ``F[q]`` count the
distinct ways (target, marks) a run at ``q`` takes the event: staying at a gap state or its gap
transitions, plus the labelled transitions whose mask the event has and whose guards hold.
Steps of one run with the same target and marks are one run (as the merged runs' ``_ident``
merges them), and reports of one run with the same marks one complex event.  The guards hold or
not depending on ``K(s)`` only through where it lies among the event's values of the conjuncts'
event sides: at most ``2·c + 1`` pieces of the key order for ``c`` conjuncts, adjacent pieces
with the same truths merged.  So an event cuts each tree into its pieces, adds ``sum · F`` of
each, multiplies each by its ``M`` (lazily: :mod:`kleene.registers.vectortree`), and merges them
back: ``O(pieces · log w)`` nodes.  A start inserts its vector (the initial transitions it
takes), the window removes the starts older than it (a FIFO per partition), and the total is the
exact count (Python ints).  Keys of different kinds never compare (a guard across kinds is
false), so there is one tree per kind of ``K`` (numbers, strings, booleans) and one for the starts
whose ``K`` is undefined (null, NaN), where every conjunct is false.  Events no labelled
transition accepts change nothing and are not visited (the vectorized prefilter), unless a live
state is not stationary (``:``): then every event of a partition is visited, one that no
transition takes moves its runs by the matrix that kills them there (contiguity is within the
partition), and each partition keeps its previous event.

``work`` counts tree nodes touched (pushes and sums recomputed), for tests that count work.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from kleene.limits import CHECK_EVERY, Limits
from kleene.native import load
from kleene.registers.counting import unambiguous
from kleene.registers.freshness import BIG, SINGLE, Check, Conjunct, beside, classify_guards, holds
from kleene.registers.guards import Key, guard_columns
from kleene.registers.srt import SRT, RTransition
from kleene.registers.vectortree import Matrix, VectorTree
from kleene.runtime.enumeration import Count

_compiled = load("kleene.registers._vectortree")
TREE: Any = VectorTree if _compiled is None else _compiled.VectorTree
"""The tree class in use: the compiled twin when built, else the pure-Python reference."""


def _marks(t: RTransition) -> Any:
    return ("hidden" if t.hidden else "marked") if t.marked else None


@dataclass(frozen=True)
class AggregatePlan:
    """What the counter needs of the SRT (see the module doc), built by :func:`aggregate_plan`."""

    states: tuple[int, ...]
    """The live states (reachable from the initial one, not it, not dead): vector positions."""
    key: Callable[[Any, Any], Key | None] | None
    """``K`` over the registers (None: no guard at all, every start in one piece)."""
    written: tuple[int, ...]
    """The start registers (written by the initial transitions only)."""
    conjuncts: dict[int, tuple[Conjunct, ...]]
    """Per labelled transition (``id``): its conjuncts ``event op K``."""
    described: str
    """``K`` as CEQL text, for explain()."""
    checks: dict[int, tuple[Check, ...]] = field(default_factory=dict)
    """Per labelled transition (``id``): its conjuncts with one truth per event
    (:mod:`kleene.registers.freshness`)."""
    visit_all: bool = False
    """Some live state is not stationary (``:``): every event of a partition moves its runs."""


def aggregate_plan(
    srt: SRT, *, strategy: str, limit: int | None, consume: str
) -> tuple[AggregatePlan | None, str]:
    """The plan, or None and why the query is outside the class."""
    if strategy not in ("ALL", "ANY") or limit is not None:
        return None, "a strategy other than ALL/ANY, or LIMIT"
    if srt.monitors or consume != "NONE":
        return None, "UNLESS or CONSUME BY"
    if srt.strategy_first:
        return None, "a strategy comparing whole matches"
    if srt.selectors or srt.anchored:
        return None, "a nested selector (its product moves the runs on every event)"
    init = srt.initial
    firsts = srt.labelled[init]
    if not firsts or srt.gaps[init]:
        return None, "the pattern does not start with one event"
    everything = [t for ts in srt.labelled for t in ts] + [g for gs in srt.gaps for g in gs]
    if any(t.target == init for t in everything):
        return None, "the initial state is entered again"
    if any(t.sets or t.checks for t in everything):
        return None, "UNLESS or CONSUME BY"
    if any(g.target in srt.finals for gs in srt.gaps for g in gs):
        return None, "a gap transition reports"
    reach: set[int] = set()
    todo = [t.target for t in firsts]
    while todo:
        q = todo.pop()
        if q in reach or srt.dead[q]:
            continue
        reach.add(q)
        todo.extend(t.target for t in srt.labelled[q])
        todo.extend(g.target for g in srt.gaps[q])
    guards, why = classify_guards(srt, reach)
    if guards is None:
        return None, why
    if not unambiguous(srt):
        return None, "two runs of the automaton may give the same complex event"
    plan = AggregatePlan(
        tuple(sorted(reach)), guards.key, tuple(sorted(guards.start)), guards.conjuncts,
        guards.key_text, guards.checks, not all(srt.stationary[q] for q in reach),
    )
    return plan, ""


def describe(srt: SRT, strategy: str, limit: int | None, consume: str) -> str:
    """``explain()``'s line about counting."""
    plan, why = aggregate_plan(srt, strategy=strategy, limit=limit, consume=consume)
    if plan is None:
        return f"counting (count, --count): merged runs' tECS counts (no aggregates: {why})"
    return (
        "counting (count, --count): aggregates over register values, no runs: per start a "
        f"vector of run counts over {len(plan.states)} states in a tree ordered by "
        f"{plan.described}, an event moving each range of it by a matrix (O(log w) per range)"
        + _per_event(plan)
    )


def _per_event(plan: AggregatePlan) -> str:
    texts = sorted({c.text for cs in plan.checks.values() for c in cs})
    said = f"; once per event: {', '.join(texts)} (the partition's previous event)" if texts else ""
    return said + ("; every event of a partition visited (':')" if plan.visit_all else "")


@dataclass
class _EventKind:
    """What an event of one predicate bit pattern does (cached per ``bits``)."""

    fired: list[list[tuple[int, bool, Any, tuple[int, ...]]]]
    """Per live state: the labelled transitions it takes, ``(target index or -1 when dead,
    into a final state, marks, indexes of its conjuncts in conds)``."""
    conds: list[Conjunct]
    """The conjuncts the event's transitions carry (their event sides evaluated per event)."""
    start: list[int] | None
    """The vector of a run started by this event (None: it starts none that lives on)."""
    start_final: int
    """Complex events of one event (first transitions into a final state)."""
    active: bool
    """Some live state takes it or is not stationary (else only a start can come of it)."""
    ident: Any
    """``bits``, or ``(bits, truths of checks)``: the key of its moves."""
    checks: list[Check]
    """The per-event conjuncts of its transitions (non-empty: refine with their truths)."""


@dataclass
class _Partition:
    trees: dict[int | None, VectorTree]
    """Per kind of ``K`` (None: undefined): the starts' vectors."""
    fifo: deque[tuple[Any, int | None, Any, int]]
    """``(start time, kind, value, seq)`` in start order: the window removes from the left."""
    prev: tuple[Any, ...] | None = None
    """The partition's previous event (what fresh registers hold)."""


class AggregateCounter:
    """Counts a query's complex events into a :class:`Count` (see the module doc)."""

    def __init__(self, srt: SRT, plan: AggregatePlan, *, window: int | float | None,
                 limits: Limits, relevant: Callable[[np.ndarray], np.ndarray]) -> None:
        self.srt, self.plan, self.window, self.limits = srt, plan, window, limits
        self.relevant = relevant
        self.index = {q: i for i, q in enumerate(plan.states)}
        self.k = len(plan.states)
        self.tree: Any = TREE
        """The tree class (tests set the pure-Python one to compare it with the twin)."""
        self.parts: dict[Hashable, _Partition] = {}
        self.kinds: dict[Any, _EventKind] = {}
        self.moves: dict[tuple[Any, tuple[bool, ...]], tuple[Matrix | None, tuple[int, ...] | None]] = {}
        self.work = [0]
        """Tree nodes touched (pushes, sums recomputed), for tests that count work."""
        self.pieces = 0
        """Key ranges the events applied a move to (each costs O(log w) nodes)."""
        self.steps = 0
        self.live = 0
        """Starts alive in the window (all partitions)."""
        self.peak = 0
        """The most starts alive at once."""
        self.tau: int | float = -(1 << 62)
        self.single: dict[Any, tuple[list[int], list[Any]]] = {}  # per kind of one conjunct: (cuts' seqs, moves)
        self.track = any(c.fresh for cs in plan.checks.values() for c in cs)
        """Some check reads a fresh register: each partition keeps its previous event."""
        self._seq = 0
        self._sweep_at = 8192
        self._look_at = min(limits.max_runs, CHECK_EVERY)

    # -- per bit pattern ------------------------------------------------------------------

    def _kind(self, bits: int, truths: tuple[bool, ...] | None = None) -> _EventKind:
        """The kind of ``bits``; where its transitions carry checks, ``truths`` (theirs, in
        :attr:`_EventKind.checks` order) drops the transitions whose checks fail (None: only
        the checks, to evaluate)."""
        srt, plan, index = self.srt, self.plan, self.index
        checks: list[Check] = []
        seen: dict[Any, int] = {}
        taken: list[list[RTransition]] = []
        for q in (srt.initial, *plan.states):
            mine = []
            for t in srt.labelled[q]:
                if bits & t.mask != t.mask or bits & t.neg:
                    continue
                at = []
                for check in plan.checks.get(id(t), ()):
                    if check.ident not in seen:
                        seen[check.ident] = len(checks)
                        checks.append(check)
                    at.append(seen[check.ident])
                if truths is None or all(truths[j] for j in at):
                    mine.append(t)
            taken.append(mine)
        if checks and truths is None:
            kind = _EventKind([], [], None, 0, False, bits, checks)
            self.kinds[bits] = kind
            return kind
        conds: list[Conjunct] = []
        where: dict[int, int] = {}
        fired: list[list[tuple[int, bool, Any, tuple[int, ...]]]] = []
        for ts in taken[1:]:
            mine_fired = []
            for t in ts:
                at = []
                for c in plan.conjuncts.get(id(t), ()):
                    if id(c) not in where:  # the same conjunct on several transitions: once
                        where[id(c)] = len(conds)
                        conds.append(c)
                    at.append(where[id(c)])
                target = -1 if srt.dead[t.target] else index[t.target]
                mine_fired.append((target, t.target in srt.finals, _marks(t), tuple(at)))
            fired.append(mine_fired)
        start = [0] * self.k
        ways: dict[int, set[Any]] = {}
        finals: set[Any] = set()
        for t in taken[0]:
            if not srt.dead[t.target]:
                ways.setdefault(index[t.target], set()).add(_marks(t))
            if t.target in srt.finals:
                finals.add(_marks(t))
        for i, marks in ways.items():
            start[i] = len(marks)
        ident = bits if truths is None else (bits, truths)
        kind = _EventKind(fired, conds, start if ways else None, len(finals),
                          any(fired) or plan.visit_all, ident, [])
        self.kinds[ident] = kind
        return kind

    def _move(self, bits: int, kind: _EventKind, truth: tuple[bool, ...]) -> tuple[Matrix | None, tuple[int, ...] | None]:
        """``(M, F)`` of the event on the starts whose conjuncts have ``truth``: None for the
        identity and for no final."""
        got = self.moves.get((kind.ident, truth))
        if got is not None:
            return got
        srt, plan, index = self.srt, self.plan, self.index
        rows: list[tuple[tuple[int, int], ...]] = []
        finals: list[int] = []
        identity = True
        for i, q in enumerate(plan.states):
            ways: dict[int, set[Any]] = {}
            if srt.stationary[q]:
                ways[i] = {None}
            else:
                for g in srt.gaps[q]:
                    if not srt.dead[g.target]:
                        ways.setdefault(index[g.target], set()).add(None)
            reported: set[Any] = set()
            for target, final, marks, at in kind.fired[i]:
                if all(truth[c] for c in at):
                    if target >= 0:
                        ways.setdefault(target, set()).add(marks)
                    if final:
                        reported.add(marks)
            row = tuple(sorted((j, len(m)) for j, m in ways.items()))
            identity = identity and row == ((i, 1),)
            rows.append(row)
            finals.append(len(reported))
        got = (None if identity else tuple(rows), tuple(finals) if any(finals) else None)
        self.moves[(kind.ident, truth)] = got
        return got

    # -- per event ------------------------------------------------------------------------

    def run_batch(self, batch: pa.RecordBatch, bits: np.ndarray, positions: np.ndarray,
                  times: np.ndarray | None, key_columns: Sequence[Sequence[Hashable]] | None,
                  out: Count) -> None:
        """Count one batch's complex events into ``out`` (rows in stream order)."""
        n = len(positions)
        if n == 0:
            return
        visit = range(n) if self.plan.visit_all else np.flatnonzero(self.relevant(bits)).tolist()
        bit_list: list[int] = bits.tolist()
        columns = guard_columns(batch, self.srt.attributes)
        rows = list(zip(*columns)) if columns else [()] * n  # the event tuples, built in C
        keys = None if key_columns is None else list(zip(*key_columns))
        pos_list: list[int] = positions.tolist()
        time_of = pos_list if times is None else times.tolist()
        window = self.window
        kinds = self.kinds
        track = self.track
        for i in visit:
            key: Hashable = None
            if keys is not None:
                key = keys[i]
                if None in key:
                    continue
            time = time_of[i]
            tau = -(1 << 62) if window is None else time - window
            self.tau = tau
            self.steps += 1
            b = bit_list[i]
            kind = kinds.get(b)
            if kind is None:
                kind = self._kind(b)
            found = 0
            part = self.parts.get(key)
            event: tuple[Any, ...] | None = None
            if kind.checks:
                event = rows[i]
                kind = self._refine(b, kind, event, None if part is None else part.prev)
            if part is not None:
                if part.fifo and part.fifo[0][0] < tau:
                    self._expire(part, tau)
                if kind.active and part.trees:
                    if kind.conds:
                        event = rows[i]
                    found += self._step(part, b, kind, event)
            if kind.start_final:
                found += kind.start_final
            if kind.start is not None:
                event = rows[i]
                if part is None:
                    part = self.parts[key] = _Partition({}, deque())
                self._start(part, kind.start, event, time)
            if track and part is not None:
                part.prev = rows[i]
            if found:
                if found > self.limits.max_matches:
                    raise self.limits.matches_error(pos_list[i])
                out.add(found)
            if self.steps >= self._sweep_at:
                self._sweep(tau)

    def _refine(self, bits: int, kind: _EventKind, event: tuple[Any, ...],
                prev: tuple[Any, ...] | None) -> _EventKind:
        """The kind of an event refined by its checks' truths (with the partition's previous event;
        false where there is none: no run is then at the state they leave)."""
        checks = kind.checks
        if len(checks) == 1:
            c = checks[0]
            truths: tuple[bool, ...] = (False if prev is None and c.fresh else c.test(event, prev),)
        else:
            truths = tuple(False if prev is None and c.fresh else c.test(event, prev) for c in checks)
        got = self.kinds.get((bits, truths))
        return self._kind(bits, truths) if got is None else got

    def _step(self, part: _Partition, bits: int, kind: _EventKind, event: tuple[Any, ...] | None) -> int:
        found = 0
        if event is None:
            move = self._move(bits, kind, ())
            for tree in part.trees.values():
                self.pieces += 1
                found += tree.step([], [move])
            return found
        values = [fn(event, ()) for _, fn in kind.conds]
        single = self.single.get(kind.ident) if len(values) == 1 else None
        v = values[0] if single is not None else None
        for tree_kind, tree in part.trees.items():
            if single is not None and v is not None and v[0] == tree_kind:  # the cached template
                e = v[1]
                self.pieces += len(single[1])
                found += tree.step([(e, at) for at in single[0]], single[1])
                continue
            cuts, moves = self._pieces(bits, kind, values, tree_kind)
            self.pieces += len(moves)
            found += tree.step(cuts, moves)
        return found

    def _pieces(self, bits: int, kind: _EventKind, values: list[Key | None],
                tree_kind: int | None) -> tuple[list[tuple[Any, int]], list[Any]]:
        """The cuts of the key order where the conjuncts' truths change, and each range's move."""
        mine = [None if v is None or v[0] != tree_kind else v[1] for v in values]
        if len(mine) == 1 and mine[0] is not None:  # one conjunct: a cached template
            got = self.single.get(kind.ident)
            if got is None:
                template = SINGLE[kind.conds[0][0]]
                got = self.single[kind.ident] = (
                    [at for at, _ in template[1:]],
                    [self._move(bits, kind, (truth,)) for _, truth in template],
                )
            e = mine[0]
            return [(e, at) for at in got[0]], got[1]
        ops = [op for op, _ in kind.conds]
        ts = sorted({v for v in mine if v is not None})
        if not ts:
            return [], [self._move(bits, kind, (False,) * len(ops))]
        cuts: list[tuple[Any, int]] = []
        moves: list[Any] = []
        last: tuple[bool, ...] | None = None
        r = len(ts)
        for p in range(2 * r + 1):
            if p % 2:  # the point ts[p // 2]
                k = ts[p // 2]
                truth = tuple(e is not None and holds(op, e, k) for op, e in zip(ops, mine, strict=True))
                cut = (k, -1)
            else:  # strictly between ts[p//2 - 1] and ts[p//2] (open ends at the extremes)
                hi = ts[p // 2] if p // 2 < r else None
                truth = tuple(
                    e is not None and beside(op, hi is not None and e >= hi)
                    for op, e in zip(ops, mine, strict=True)
                )
                cut = (ts[p // 2 - 1], BIG) if p else (None, 0)
            if truth == last:
                continue
            if p:
                cuts.append(cut)
            moves.append(self._move(bits, kind, truth))
            last = truth
        return cuts, moves

    def _start(self, part: _Partition, vec: list[int], event: tuple[Any, ...], time: Any) -> None:
        plan = self.plan
        if plan.key is None:
            key: Key | None = (0, 0)
        else:
            regs: list[Any] = [None] * self.srt.num_registers
            for r in plan.written:
                regs[r] = event
            key = plan.key((), regs)
        kind, value = (None, 0) if key is None else key
        tree = part.trees.get(kind)
        if tree is None:
            tree = part.trees[kind] = self.tree(self.k, self.work, seed=self._seq)
        self._seq += 1
        tree.insert(value, self._seq, list(vec))
        if self.window is not None:
            part.fifo.append((time, kind, value, self._seq))
        self.live += 1
        if self.live > self.peak:
            self.peak = self.live
        if self.live > self._look_at:
            if self.live > self.limits.max_runs:
                raise self.limits.runs_error(self.live, "starts counted in the window")
            self.limits.check_memory(f"with {self.live:,} starts counted in the window")
            self._look_at = min(self.limits.max_runs, self.live + CHECK_EVERY)

    def _expire(self, part: _Partition, tau: Any) -> None:
        fifo, trees = part.fifo, part.trees
        while fifo and fifo[0][0] < tau:
            _, kind, value, seq = fifo.popleft()
            tree = trees[kind]
            tree.delete(value, seq)
            self.live -= 1
            if not tree.size:
                del trees[kind]

    def _sweep(self, tau: Any) -> None:
        """Remove the expired starts of partitions no recent event visited (amortized)."""
        for key in list(self.parts):
            part = self.parts[key]
            self._expire(part, tau)
            if not part.trees:
                del self.parts[key]
        self._sweep_at = self.steps + max(8192, self.live)
