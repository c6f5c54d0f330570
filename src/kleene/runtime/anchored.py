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
from kleene.runtime.evaluator import Evaluator
from kleene.runtime.tecs import BOTTOM, OUTPUT, Node

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
        """Algorithm 1's step with the waiting state in place of a fresh ``q0``: its marked
        successor starts the runs whose first event this is."""
        new: dict[int, list[Node]] = {}
        if self.waiting != DEAD:
            m, self.waiting = self.dfa.step(self.waiting, bits)
            if m != DEAD:
                new[m] = [(OUTPUT, time, pos, (BOTTOM, time, pos))]
        return self.advance(new, pos, time, bits, tau)
