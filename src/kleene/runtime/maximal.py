"""``SELECT MAX`` under a window: the thesis's MAX automaton (Thm 7.5) with super-runs traced to their origin.

MAX keeps, among the complex events that end at a position and start inside
the window, those whose position set is not strictly contained in another's
(docs/cel-semantics.md).  The thesis's construction runs the determinized
automaton as pairs ``(q, T)``: ``q`` is the run's state and ``T`` the states
of its *super-runs*, the runs whose marks so far strictly contain its own.
A run whose state is in ``T`` is dominated forever (the super-run follows it
step for step and stays strictly larger), and a run ending in a final state
is maximal iff no super-run ends in a final state with it.

**Windows.**  Under WITHIN only matches that start inside the window count,
so a super-run that started before the window no longer dominates: a
dominated run comes back to life when its dominators leave the window.  A
super-run of a run that started at position ``b`` either

* started at ``b`` too (it marked an event the run skipped): it leaves the
  window together with the run, so these are kept as a set of states
  ``S`` (the thesis's ``T``), and a run whose own state is in ``S`` is
  dropped for good (the thesis's rule);
* or started earlier: then it was, at ``b - 1``, a run of the automaton in
  some state ``p0`` that marked ``b``.  Its start is at most the *latest
  start* of a run in ``p0`` at ``b - 1``, a number that depends on ``b``
  only (kept per start: :attr:`MaxEvaluator.snapshots`), and the runs of
  ``p0`` all behave alike from then on.  So these super-runs are kept as a
  relation ``R`` of pairs ``(p0, p)``: a super-run that was in ``p0`` at
  ``b - 1`` is now in ``p``.

A product state (a *class*) is ``(q, S, R)``: it depends on the query only,
not on the window or the starts (before, each super-run state kept the
latest start itself, and ``A+ ; B``, where each start is dominated by the
one before it, made one product state per start in the window).  A run of
a class in a final state with no final state in ``S`` is maximal iff no
``p0`` of ``P = {p0 | (p0, p) in R, p final}`` held, at ``b - 1``, a run
that started inside the window: the class outputs its runs whose start
passes that test (:class:`Gate`), the others stay (they come back when
their dominators leave the window).

**Sharing.**  Runs of the same class behave the same from then on, so they
share one tECS union-list (Algorithm 1 over the product automaton), and a
class's transition on a bit vector is computed once and cached
(:class:`MaxRules`, shared by the partitions).  The complex events of a
class with ``P`` empty are enumerated with output-linear delay, pruned by
the window, like ``ALL``.  Otherwise the enumeration also skips the runs
whose start the gate rejects: each node also keeps the *earliest* start
below it, and a subtree whose earliest start is after the latest start the
gate accepts is not entered (:func:`kleene.runtime.enumeration.enumerate_filtered`).

**Cost.**  Per event, one cached transition per class (their number depends
on the query only), one start snapshot (a reference to the map of the
automaton's states), and per set ``P`` in use one gate value and a heap
push for the new start.  The gated enumeration costs the output on
``A+ ; B`` (only the earliest start in the window passes; the walk steps
past each later start in one node), but not in general: it may also walk
the shared part of runs that fail the gate (a dominated start before the
latest one that passes, or runs that started before the window mixed with
runs that started after it).  See docs/semantics.md.
"""

from __future__ import annotations

import heapq
from collections import deque

from kleene.automata.determinize import DEAD, LazyDFA
from kleene.runtime import tecs
from kleene.runtime.tecs import BOTTOM, FILTER, OUTPUT, UNION, Node

NO_WINDOW = -(1 << 62)
"""The bound the engine passes without WITHIN (``engine.NO_BOUND``): nothing ever leaves."""

NONE = -1
"""No class: the run dies, or is dominated for good."""

ClassKey = tuple[int, frozenset[int], frozenset[tuple[int, int]]]
"""``(q, S, R)``: the run's state, its same-start super-runs' states, the earlier ones' ``(p0, p)``."""


def supported(dfa: LazyDFA) -> bool:
    """Every run starts by marking its first event (so a run's start is its first position)."""
    cea = dfa.cea
    return all(t.marked for t in cea.outgoing()[cea.initial])


class MaxRules:
    """The classes of the windowed MAX automaton, interned, with their cached transitions.

    Shared by every partition's :class:`MaxEvaluator`: a class's transition
    on a bit vector is computed once per query.
    """

    __slots__ = ("dfa", "keys", "ids", "moves", "gates", "starts")

    def __init__(self, dfa: LazyDFA) -> None:
        self.dfa = dfa
        self.keys: list[ClassKey] = []
        self.ids: dict[ClassKey, int] = {}
        self.moves: list[dict[int, tuple[int, int]]] = []
        """Per class: bit vector -> (class after marking, class after skipping), NONE for none."""
        self.gates: list[frozenset[int] | None] = []
        """Per class: None if it outputs nothing, else ``P`` (empty: every run in the window is maximal)."""
        self.starts: dict[tuple[frozenset[int], int], int] = {}
        """(states of the runs at ``b - 1``, bit vector of ``b``) -> the class of the run starting at ``b``."""

    def intern(self, key: ClassKey) -> int:
        cid = self.ids.get(key)
        if cid is None:
            cid = len(self.keys)
            self.ids[key] = cid
            self.keys.append(key)
            self.moves.append({})
            q, same, rel = key
            final = self.dfa.final
            if final[q] and not any(final[p] for p in same):
                self.gates.append(frozenset(p0 for p0, p in rel if final[p]))
            else:
                self.gates.append(None)
        return cid

    def start(self, active: frozenset[int], bits: int) -> int:
        """The class of a run that starts here, whose earlier super-runs are the runs in ``active``."""
        cid = self.starts.get((active, bits))
        if cid is None:
            step = self.dfa.step
            m0 = step(0, bits)[0]
            if m0 == DEAD:
                cid = NONE
            else:
                rel = frozenset((p, m) for p in active if (m := step(p, bits)[0]) != DEAD)
                cid = self.intern((m0, frozenset(), rel))
            self.starts[(active, bits)] = cid
        return cid

    def compute(self, cid: int, bits: int) -> tuple[int, int]:
        """Thm 7.5's update: when the run marks, its super-runs mark too; when it skips, they may
        do either, and the run marking instead becomes a same-start super-run."""
        q, same, rel = self.keys[cid]
        step = self.dfa.step
        mq, uq = step(q, bits)
        succ = {p: step(p, bits) for p in same.union(p for _, p in rel)}
        marked = unmarked = NONE
        if mq != DEAD:
            same2 = frozenset(m for p in same if (m := succ[p][0]) != DEAD)
            if mq not in same2:
                rel2 = frozenset((p0, m) for p0, p in rel if (m := succ[p][0]) != DEAD)
                marked = self.intern((mq, same2, rel2))
        if uq != DEAD:
            grown = {s for p in same for s in succ[p] if s != DEAD}
            if mq != DEAD:
                grown.add(mq)
            if uq not in grown:
                rel2 = frozenset((p0, s) for p0, p in rel for s in succ[p] if s != DEAD)
                unmarked = self.intern((uq, frozenset(grown), rel2))
        result = (marked, unmarked)
        self.moves[cid][bits] = result
        return result


class Gate:
    """Which starts a class with dominating set ``P`` may output: for each start ``b`` in the
    window, ``late[b]``, the latest start of a run in ``P`` at ``b - 1``.

    A run that started at ``b`` is maximal (as far as earlier starts go) iff
    ``late[b] < tau``.  ``hi`` is the latest start time accepted so far: it
    only grows, since ``tau`` does (starts enter it through a heap ordered by
    ``late``), and bounds the starts the enumeration needs to visit.
    """

    __slots__ = ("states", "late", "heap", "hi")

    def __init__(self, states: frozenset[int]) -> None:
        self.states = states
        self.late: dict[int, int | float] = {}
        self.heap: list[tuple[int | float, int | float]] = []
        self.hi: int | float = NO_WINDOW

    def add(self, pos: int, time: int | float, snapshot: dict[int, int | float]) -> None:
        """The run starting at ``pos`` (time ``time``); ``snapshot``: the runs' latest starts at ``pos - 1``."""
        late: int | float = NO_WINDOW
        for p0 in self.states:
            v = snapshot.get(p0)
            if v is not None and v > late:
                late = v
        self.late[pos] = late
        heapq.heappush(self.heap, (late, time))

    def bound(self, tau: int | float) -> int | float:
        """The latest accepted start at ``tau`` (below ``tau``: none is)."""
        heap = self.heap
        hi = self.hi
        while heap and heap[0][0] < tau:
            t = heapq.heappop(heap)[1]
            if t > hi:
                hi = t
        self.hi = hi
        return hi


def _union(n1: Node, n2: Node, created: list[Node]) -> Node:
    """:func:`tecs.union` for nodes that also keep their earliest start (index 4)."""
    if n1[0] != UNION:
        u = [UNION, n1[1], n1, n2, min(n1[4], n2[4])]
        created.append(u)
        return u
    if n2[0] != UNION:
        u = [UNION, n1[1], n2, n1, min(n1[4], n2[4])]
        created.append(u)
        return u
    r1, r2 = n1[3], n2[3]
    low = min(r1[4], r2[4])
    u2 = [UNION, r1[1], r1, r2, low] if r1[1] >= r2[1] else [UNION, r2[1], r2, r1, low]
    left2 = n2[2]
    u1 = [UNION, n1[1], left2, u2, min(left2[4], low)]
    left1 = n1[2]
    u = [UNION, n1[1], left1, u1, min(left1[4], u1[4])]
    created.extend((u2, u1, u))
    return u


def _merge(ul: list[Node], created: list[Node]) -> Node:
    """:func:`tecs.merge` for nodes that keep their earliest start."""
    n = ul[-1]
    for i in range(len(ul) - 2, -1, -1):
        a = ul[i]
        n = [UNION, a[1], a, n, min(a[4], n[4])]
        created.append(n)
    return n


class MaxEvaluator:
    """MAX over one (sub)stream: feed events with :meth:`step` (the engine's evaluator interface).

    :meth:`step` returns tECS nodes, like :class:`~kleene.runtime.evaluator.Evaluator`:
    every complex event below them (inside the window) is maximal.  A node
    of kind ``FILTER`` wraps a class whose runs pass a :class:`Gate`.
    """

    __slots__ = (
        "dfa",
        "rules",
        "runs",
        "plain",
        "table",
        "unions",
        "active_key",
        "snapshots",
        "gates",
        "_sweep_at",
    )

    def __init__(self, dfa: LazyDFA, rules: MaxRules | None = None) -> None:
        self.dfa = dfa
        self.rules = rules if rules is not None else MaxRules(dfa)
        self.runs: dict[int, list[Node]] = {}
        """Class -> union-list of the runs in it (latest start first)."""
        self.plain: dict[int, int | float] = {}
        """Every run of the automaton, MAX or not: state -> its latest start (the super-runs of a new run)."""
        self.table = self.plain
        """The active automaton states, for skipping (a superset of every state in :attr:`runs`)."""
        self.unions: list[Node] = []
        self.active_key: frozenset[int] = frozenset()
        self.snapshots: deque[tuple[int, int | float, dict[int, int | float]]] = deque()
        """The starts in the window: (position, time, :attr:`plain` just before it), for new gates."""
        self.gates: dict[frozenset[int], Gate] = {}
        self._sweep_at = 4096

    def clear(self) -> None:
        """Discard every partial match (CONSUME BY)."""
        self.runs = {}
        self.plain = self.table = {}
        self.unions = []
        self.snapshots = deque()
        self.gates = {}

    def expired(self, tau: int | float) -> bool:
        """True when every run started before the window."""
        return all(start < tau for start in self.plain.values())

    def _gate(self, states: frozenset[int], tau: int | float) -> Gate:
        gate = self.gates.get(states)
        if gate is None:
            gate = self.gates[states] = Gate(states)
            for pos, time, snapshot in self.snapshots:
                if time >= tau:
                    gate.add(pos, time, snapshot)
        return gate

    def step(self, pos: int, time: int | float, bits: int, tau: int | float) -> list[Node]:
        """Process the event at ``pos``; the nodes whose complex events (from ``tau`` on) are maximal."""
        dfa = self.dfa
        cache = dfa.cache
        rules = self.rules
        moves = rules.moves
        unions = self.unions
        plain = self.plain
        windowed = tau > NO_WINDOW

        if windowed:
            snapshots = self.snapshots
            while snapshots and snapshots[0][1] < tau:
                old = snapshots.popleft()[0]
                for gate in self.gates.values():
                    gate.late.pop(old, None)

        fresh: dict[int, int | float] = {}
        active = []
        for p, start in plain.items():
            if start >= tau:
                active.append(p)
                hit = cache[p].get(bits)
                for s in hit if hit is not None else dfa.compute(p, bits):
                    if s != DEAD and fresh.get(s, NO_WINDOW) < start:
                        fresh[s] = start

        new: dict[int, list[Node]] = {}
        # A run starting here comes first: it has the latest start.  Its
        # earlier super-runs are the runs that mark this event.
        hit = cache[0].get(bits)
        m0 = (hit if hit is not None else dfa.compute(0, bits))[0]
        if m0 != DEAD:
            fresh[m0] = time
            cid = rules.start(frozenset(active), bits)
            new[cid] = [(OUTPUT, time, pos, (BOTTOM, time, pos, None, time), time)]
            if windowed:
                self.snapshots.append((pos, time, plain))
                for gate in self.gates.values():
                    gate.add(pos, time, plain)

        for cid, ul in self.runs.items():
            if ul[0][1] < tau:
                continue  # every run here started before the window
            mc, uc = moves[cid].get(bits) or rules.compute(cid, bits)
            if mc == NONE and uc == NONE:
                continue
            if ul[-1][1] < tau:
                tecs.prune(ul, tau)
            n: Node = None
            if mc != NONE:
                n = ul[0] if len(ul) == 1 else _merge(ul, unions)
                node = (OUTPUT, n[1], pos, n, n[4])
                target = new.get(mc)
                if target is None:
                    new[mc] = [node]
                else:
                    tecs.insert(target, node, unions, _union)
            if uc != NONE:
                target = new.get(uc)
                if target is None:
                    new[uc] = ul
                else:
                    if n is None:
                        n = ul[0] if len(ul) == 1 else _merge(ul, unions)
                    tecs.insert(target, n, unions, _union)

        self.plain = self.table = fresh
        self.runs = new

        outputs: list[Node] = []
        gates = rules.gates
        for cid, ul in new.items():
            states = gates[cid]
            if states is None:
                continue
            if not states:
                outputs.append(ul[0] if len(ul) == 1 else _merge(ul, unions))
            elif windowed:  # without a window an earlier super-run dominates for ever
                gate = self._gate(states, tau)
                hi = gate.bound(tau)
                if hi >= tau:
                    n = ul[0] if len(ul) == 1 else _merge(ul, unions)
                    if n[4] <= hi:
                        outputs.append((FILTER, n[1], n, gate.late, hi))
        if len(unions) > self._sweep_at:
            self.unions = tecs.sever(unions, tau)
            self._sweep_at = max(4096, 2 * len(self.unions))
        return outputs
