"""Algorithm 1 for an automaton whose runs start at the stream's start (a selector there).

``SELECT * WHERE MAX(T+) ; H`` without a window: the CEL thesis reads the pattern from
position 0, so ``MAX`` chooses among *every* match of ``T+`` since the (partition's) stream
started that ends on the same event (docs/semantics.md, "Nested selectors").  The selector's
product (:mod:`kleene.automata.selection`) tracks those competitors from where it is entered;
here it is entered once, at the first event, and waits there with its own unmarked
transitions (:func:`kleene.automata.compile.compile_pattern` makes such an automaton
:attr:`~kleene.automata.cea.CEA.anchored`).

So instead of starting a run in ``q0`` at every event, the evaluator keeps one *waiting*
state of the determinized automaton: the runs that have not taken an event yet, run from
the first event.  On each event its marked successor starts the runs that take this event
as their first one (a fresh bottom node: their complex events start here, not at the
stream's start), and its unmarked successor is the next waiting state.  Everything else is
Algorithm 1 unchanged: constant time per event, whatever the stream's length.  An anchored
automaton never has a window (the planner refuses one: the competitors would then start at
the window of the whole match, which a run does not know when its part ends).
"""

from __future__ import annotations

from kleene.automata.determinize import DEAD, LazyDFA
from kleene.runtime import tecs
from kleene.runtime.evaluator import Evaluator
from kleene.runtime.tecs import BOTTOM, OUTPUT, Node, insert, merge

__all__ = ["AnchoredEvaluator"]


class AnchoredEvaluator(Evaluator):
    """:class:`Evaluator` whose runs start at the first event it steps, then wait."""

    __slots__ = ("waiting",)

    def __init__(self, dfa: LazyDFA) -> None:
        super().__init__(dfa)
        self.waiting = 0
        """The state of the runs that have taken no event yet (DFA state 0, ``{q0}``, before
        the first event; DEAD when none can start any more)."""

    def expired(self, tau: int | float) -> bool:
        """Never: the waiting runs may still start a match (there is no window)."""
        return False

    def step(self, pos: int, time: int, bits: int, tau: int) -> list[Node]:
        """Algorithm 1's step with the waiting state in place of a fresh ``q0``."""
        m = DEAD
        if self.waiting != DEAD:
            m, self.waiting = self.dfa.step(self.waiting, bits)
        return self._runs(pos, time, bits, tau, m)

    def _runs(self, pos: int, time: int, bits: int, tau: int, start: int) -> list[Node]:
        """Move every run on the event; ``start``: the state of the runs whose first event this
        is (DEAD for none)."""
        dfa = self.dfa
        unions = self.unions
        merged = self.merged
        new: dict[int, list[Node]] = {}
        if start != DEAD:
            new[start] = [(OUTPUT, time, pos, (BOTTOM, time, pos))]
        for p, ul in self.table.items():
            m, u = dfa.step(p, bits)
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

