"""CORE's evaluation algorithm (Algorithm 1) for one (sub)stream.

The state ``T`` maps each active state of the determinized automaton to a
union-list of tECS nodes that encode the open complex events of all runs in
that state (CORE §4.3, Theorem 3).  Python dicts iterate in first-insertion
order, which is exactly the ``ordered-keys`` that the algorithm needs: with
``q0`` handled first, states are visited in decreasing maximum start, so every
``insert`` meets its precondition.

Each event costs time linear in the automaton, independent of the number of
partial matches and of the window length.  Two things keep it cheap in
practice:

* runs whose maximum start is before the window are dropped from ``T``
  (they can never produce a complex event again), and
* the caller may skip events that are *inert* for every active state (see
  :meth:`LazyDFA.inert`): such an event leaves ``T`` unchanged and outputs
  nothing, so it need not enter this loop at all.
"""

from __future__ import annotations

from kleene.automata.determinize import DEAD, LazyDFA
from kleene.native import load
from kleene.runtime import tecs
from kleene.runtime.tecs import BOTTOM, OUTPUT, Node, insert, merge


class Evaluator:
    """Algorithm 1 over one stream: feed events with :meth:`step`."""

    __slots__ = ("dfa", "table", "merged", "unions", "_sweep_at", "active_key")

    def __init__(self, dfa: LazyDFA) -> None:
        self.dfa = dfa
        self.table: dict[int, list[Node]] = {}
        # merge(T[p]) computed for the output at the previous event, reused by
        # the next step so a final state's list is not merged twice.
        self.merged: dict[int, Node] = {}
        # Union nodes still within reach of the window, for tecs.sever().
        self.unions: list[Node] = []
        self._sweep_at = 4096
        # The states of ``table`` as last reported to the engine (for skipping).
        self.active_key: frozenset[int] = frozenset()

    def clear(self) -> None:
        """Discard every partial match (CONSUME BY)."""
        self.table = {}
        self.merged = {}
        self.unions = []

    def expired(self, tau: int | float) -> bool:
        """True when every run started before the window (nothing can output again)."""
        return all(ul[0][1] < tau for ul in self.table.values())

    def step(self, pos: int, time: int, bits: int, tau: int) -> list[Node]:
        """Process the event at input position ``pos``; return the nodes to enumerate.

        ``tau`` is the earliest start time a complex event ending here may
        have (``time - window``).  The returned nodes (one per final state)
        encode the complex events that end at ``pos``.
        """
        dfa = self.dfa
        new: dict[int, list[Node]] = {}

        # A run may start here: q0 first, it has the largest maximum start.
        hit = dfa.cache[0].get(bits)
        m, u = hit if hit is not None else dfa.compute(0, bits)
        if m != DEAD:
            new[m] = [(OUTPUT, time, pos, (BOTTOM, time, pos))]
        if u != DEAD:
            if u in new:
                insert(new[u], (BOTTOM, time, pos), self.unions)
            else:
                new[u] = [(BOTTOM, time, pos)]
        return self.advance(new, pos, time, bits, tau)

    def advance(
        self, new: dict[int, list[Node]], pos: int, time: int, bits: int, tau: int
    ) -> list[Node]:
        """Move the runs of ``T`` on the event into ``new`` (which holds the runs starting
        here), make it the new ``T``, and return the nodes of the complex events ending here."""
        dfa = self.dfa
        cache = dfa.cache
        old = self.table
        merged = self.merged
        unions = self.unions

        for p, ul in old.items():
            if ul[0][1] < tau:
                continue  # every run in p started before the window
            hit = cache[p].get(bits)
            m, u = hit if hit is not None else dfa.compute(p, bits)
            if m == DEAD and u == DEAD:
                continue
            if ul[-1][1] < tau:
                tecs.prune(ul, tau)
            # merge(T[p]) only when a node for the whole list is needed: a run
            # that only moves on unmarked to a fresh state keeps its list.
            n = merged.get(p)
            if m != DEAD:
                if n is None:
                    n = ul[0] if len(ul) == 1 else merge(ul, unions)
                node = (OUTPUT, n[1], pos, n)
                target = new.get(m)
                if target is None:
                    new[m] = [node]
                else:
                    insert(target, node, unions)
            if u != DEAD:
                target = new.get(u)
                if target is None:
                    new[u] = ul
                else:
                    if n is None:
                        n = ul[0] if len(ul) == 1 else merge(ul, unions)
                    insert(target, n, unions)

        self.table = new
        outputs: list[Node] = []
        merged = {}
        final = dfa.final
        for q, ul in new.items():
            if final[q]:
                n = ul[0] if len(ul) == 1 else merge(ul, unions)
                merged[q] = n
                outputs.append(n)
        self.merged = merged
        if len(unions) > self._sweep_at:
            self.unions = tecs.sever(unions, tau)
            self._sweep_at = max(4096, 2 * len(self.unions))
        return outputs



PURE_STEP = Evaluator.step
"""The pure-Python step: the readable reference of ``kleene.runtime._step.step``, its compiled
twin, which replaces it on the class when it is built (:mod:`kleene.native`)."""
_compiled = load("kleene.runtime._step")
if _compiled is not None:
    Evaluator.step = _compiled.step  # type: ignore[method-assign]
