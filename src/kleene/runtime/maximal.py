"""``SELECT MAX`` under a window: the thesis's MAX automaton (Thm 7.5) with the starts of super-runs.

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
dominated run comes back to life when its dominators leave the window.  So
``T`` becomes a map ``U`` from states to the *latest start* of a super-run in
that state (only whether some super-run is still inside the window matters,
and the latest one stays longest), and an entry is dropped once its start is
before the window.  Two kinds of value occur:

* ``SELF``: a super-run that started with the run itself (it marked an
  event the run skipped).  It leaves the window together with the run, so a
  run whose own state holds ``SELF`` is dropped for good (the thesis's rule);
* an earlier start ``v``: a run that had started before the run's first
  event and marked it.  At the run's start these are the marked successors of
  the states of *all* runs (their latest starts), kept in :attr:`plain`.
  A run whose own state holds ``v`` is dominated only until ``v`` leaves the
  window, so it is kept.

The update of ``U`` follows Thm 7.5: when the run marks, its super-runs must
mark too; when it skips, they may mark or skip, and the run marking instead
becomes a ``SELF`` super-run.  A run in a final state outputs iff no final
state is in its ``U`` (every entry is inside the window).

**Sharing.**  Runs with the same ``(q, U)`` behave the same from then on, so
they share one tECS union-list (Algorithm 1 over the product automaton): the
update is constant per product state, and the complex events of a product
state are enumerated with output-linear delay, pruned by the window, like
``ALL``.  ``SELF`` does not name a start, so the runs of all starts whose
super-runs started with them share their product states.

**Cost.**  Per event, one cached transition per product state and per entry
of its ``U``.  The number of product states is bounded by the query
(``|Q| · 2^|Q|`` keys without earlier-start values) unless runs that started
earlier can take every event of a run that started later (``A+ ; B``: each
start is dominated by the one before it until that one leaves the window);
then the distinct earlier starts, up to one per start in the window, make
distinct product states.  See docs/semantics.md.
"""

from __future__ import annotations

import math

from kleene.automata.determinize import DEAD, LazyDFA
from kleene.runtime import tecs
from kleene.runtime.tecs import BOTTOM, OUTPUT, Node, insert, merge

SELF = math.inf
"""The start of a super-run that started with the run itself: later than every window bound."""

Key = tuple[int, tuple[tuple[int, int | float], ...]]
"""A product state: the run's automaton state and its super-runs' ``(state, latest start)``, sorted."""


def supported(dfa: LazyDFA) -> bool:
    """Every run starts by marking its first event (so a run's start is its first position)."""
    cea = dfa.cea
    return all(t.marked for t in cea.outgoing()[cea.initial])


class MaxEvaluator:
    """MAX over one (sub)stream: feed events with :meth:`step` (the engine's evaluator interface).

    :meth:`step` returns tECS nodes, like :class:`~kleene.runtime.evaluator.Evaluator`:
    every complex event below them (inside the window) is maximal.
    """

    __slots__ = ("dfa", "runs", "plain", "table", "unions", "active_key", "_sweep_at")

    def __init__(self, dfa: LazyDFA) -> None:
        self.dfa = dfa
        self.runs: dict[Key, list[Node]] = {}
        """Product state -> union-list of the runs in it (latest start first)."""
        self.plain: dict[int, int | float] = {}
        """Every run of the automaton, MAX or not: state -> its latest start (the super-runs of a new run)."""
        self.table = self.plain
        """The active automaton states, for skipping (a superset of every state in :attr:`runs`)."""
        self.unions: list[Node] = []
        self.active_key: frozenset[int] = frozenset()
        self._sweep_at = 4096

    def clear(self) -> None:
        """Discard every partial match (CONSUME BY)."""
        self.runs = {}
        self.plain = self.table = {}
        self.unions = []

    def expired(self, tau: int | float) -> bool:
        """True when every run started before the window."""
        return all(start < tau for start in self.plain.values())

    def step(self, pos: int, time: int | float, bits: int, tau: int | float) -> list[Node]:
        """Process the event at ``pos``; the nodes whose complex events (from ``tau`` on) are maximal."""
        dfa = self.dfa
        cache = dfa.cache
        unions = self.unions
        plain = self.plain

        def succ(p: int) -> tuple[int, int]:
            hit = cache[p].get(bits)
            return hit if hit is not None else dfa.compute(p, bits)

        moves = {p: succ(p) for p, start in plain.items() if start >= tau}
        new: dict[Key, list[Node]] = {}

        # A run starting here comes first: it has the latest start.  Its
        # super-runs are the runs that started earlier and mark this event.
        m0, _ = succ(0)
        if m0 != DEAD:
            first: dict[int, int | float] = {}
            for p, (m, _u) in moves.items():
                if m != DEAD:
                    v = plain[p]
                    if first.get(m, -math.inf) < v:
                        first[m] = v
            new[(m0, tuple(sorted(first.items())))] = [(OUTPUT, time, pos, (BOTTOM, time, pos))]

        for (q, sup), ul in self.runs.items():
            if ul[0][1] < tau:
                continue  # every run here started before the window
            mq, uq = succ(q)
            if mq == DEAD and uq == DEAD:
                continue
            if ul[-1][1] < tau:
                tecs.prune(ul, tau)
            n: Node = None
            if mq != DEAD:
                marked: dict[int, int | float] = {}
                for p, v in sup:
                    if v < tau:
                        continue
                    m = moves[p][0] if p in moves else succ(p)[0]
                    if m != DEAD and marked.get(m, -math.inf) < v:
                        marked[m] = v
                if marked.get(mq) != SELF:
                    n = ul[0] if len(ul) == 1 else merge(ul, unions)
                    key = (mq, tuple(sorted(marked.items())))
                    node = (OUTPUT, n[1], pos, n)
                    target = new.get(key)
                    if target is None:
                        new[key] = [node]
                    else:
                        insert(target, node, unions)
            if uq != DEAD:
                skipped: dict[int, int | float] = {} if mq == DEAD else {mq: SELF}
                for p, v in sup:
                    if v < tau:
                        continue
                    for s in moves[p] if p in moves else succ(p):
                        if s != DEAD and skipped.get(s, -math.inf) < v:
                            skipped[s] = v
                if skipped.get(uq) != SELF:
                    key = (uq, tuple(sorted(skipped.items())))
                    target = new.get(key)
                    if target is None:
                        new[key] = ul
                    else:
                        if n is None:
                            n = ul[0] if len(ul) == 1 else merge(ul, unions)
                        insert(target, n, unions)

        fresh: dict[int, int | float] = {}
        if m0 != DEAD:
            fresh[m0] = time
        for p, (m, u) in moves.items():
            v = plain[p]
            for s in (m, u):
                if s != DEAD and fresh.get(s, -math.inf) < v:
                    fresh[s] = v
        self.plain = self.table = fresh
        self.runs = new

        outputs: list[Node] = []
        final = dfa.final
        for (q, sup), ul in new.items():
            if final[q] and not any(final[p] and v >= tau for p, v in sup):
                outputs.append(ul[0] if len(ul) == 1 else merge(ul, unions))
        if len(unions) > self._sweep_at:
            self.unions = tecs.sever(unions, tau)
            self._sweep_at = max(4096, 2 * len(self.unions))
        return outputs
