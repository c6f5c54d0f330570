"""On-the-fly I/O-determinization of a CEA, cached (CORE §4.4).

A CEA is *I/O-deterministic* when two transitions from one state whose
predicates overlap carry different marks.  Algorithm 1 needs that property:
it is what makes every open complex event appear on exactly one run, so the
tECS stays duplicate-free.  The classical subset construction gives it; the
number of subsets may be exponential, so, like CORE, subsets are built only
when an event actually leads to them, and each transition
``(subset, bit vector) → (marked subset, unmarked subset)`` is computed once
and cached.
"""

from __future__ import annotations

from kleene.automata.cea import CEA
from kleene.limits import Limits

DEAD = -1
"""The empty subset: no transition."""


class LazyDFA:
    """The I/O-determinized CEA, built as the stream needs it.

    States are small integers; state 0 is ``{q0}``.  ``step(s, v)`` returns
    ``(marked, unmarked)`` successor ids (``DEAD`` for none).  Passing ``limits.max_states``
    subsets stops the run with a LimitError (:mod:`kleene.limits`): the subsets an input
    reaches may be exponentially many.
    """

    def __init__(self, cea: CEA, limits: Limits | None = None) -> None:
        self.cea = cea
        self.limits = limits or Limits()
        self.max_states = self.limits.max_states
        self._out = cea.outgoing()
        self.subsets: list[frozenset[int]] = []
        self.final: list[bool] = []
        self._ids: dict[frozenset[int], int] = {}
        self.cache: list[dict[int, tuple[int, int]]] = []
        self._intern(frozenset({cea.initial}))

    def _intern(self, subset: frozenset[int]) -> int:
        if not subset:
            return DEAD
        sid = self._ids.get(subset)
        if sid is None:
            sid = len(self.subsets)
            if sid >= self.max_states:
                raise self.limits.states_error("the determinized automaton", sid + 1)
            self._ids[subset] = sid
            self.subsets.append(subset)
            self.final.append(bool(subset & self.cea.finals))
            self.cache.append({})
        return sid

    def state_of(self, subset: frozenset[int]) -> int:
        """The id of the state for a set of CEA states (DEAD for the empty set)."""
        return self._intern(subset)

    def step(self, state: int, bits: int) -> tuple[int, int]:
        hit = self.cache[state].get(bits)
        if hit is None:
            hit = self.compute(state, bits)
        return hit

    def compute(self, state: int, bits: int) -> tuple[int, int]:
        """Successors of ``state`` on bit vector ``bits``; fills the cache."""
        marked: set[int] = set()
        unmarked: set[int] = set()
        for q in self.subsets[state]:
            for t in self._out[q]:
                if bits & t.mask == t.mask and not bits & t.neg:
                    (marked if t.marked else unmarked).add(t.target)
        result = (self._intern(frozenset(marked)), self._intern(frozenset(unmarked)))
        self.cache[state][bits] = result
        return result

    def inert(self, state: int, bits: int) -> bool:
        """True when an event with ``bits`` leaves a run in ``state`` unchanged.

        That is: no marked successor, the unmarked successor is the state
        itself, and the state is not final (so no complex event is output).
        For the initial state the condition is that no run starts.  Events
        that are inert for every active state can be skipped (see
        :mod:`kleene.runtime.evaluator`).
        """
        m, u = self.step(state, bits)
        if state == 0:
            return m == DEAD and u == DEAD
        return m == DEAD and u == state and not self.final[state]
