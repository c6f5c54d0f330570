"""Complex event automata (CEA), CORE paper §3.

A CEA ``(Q, Δ, q0, F)`` reads one event per transition.  A transition
``p --P/m--> q`` fires when the event satisfies the predicate ``P``; its mark
``m`` says whether the event becomes part of the output complex event
(``•``, *marked*) or not (``◦``).  A run may start at any position; no
transition re-enters ``q0``.

Predicates here are conjunctions of *atomic* predicates and their negations,
each atom one bit of the event's predicate bit vector (CORE §4.4): a
transition with ``mask`` and ``neg`` fires on bit vector ``v`` iff
``v & mask == mask`` and ``v & neg == 0``.  Both 0 is the predicate TRUE.
Negated bits come from CORE's ``NOT(E FILTER ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Transition:
    source: int
    mask: int
    marked: bool
    target: int
    neg: int = 0

    def fires(self, bits: int) -> bool:
        return bits & self.mask == self.mask and not bits & self.neg


@dataclass(frozen=True)
class CEA:
    """A (generally non-deterministic) complex event automaton."""

    num_states: int
    transitions: tuple[Transition, ...]
    initial: int
    finals: frozenset[int]
    anchored: bool = False
    """Runs start at the first event of the (sub)stream only, in ``initial``, and wait there
    (unmarked) for their first event: a NEXT/LAST/MAX at the start of the pattern, whose
    competitors are every match of its sub-pattern from the stream's start
    (:mod:`kleene.runtime.anchored`)."""

    def outgoing(self) -> tuple[tuple[Transition, ...], ...]:
        """Transitions grouped by source state, indexed by state."""
        groups: list[list[Transition]] = [[] for _ in range(self.num_states)]
        for t in self.transitions:
            groups[t.source].append(t)
        return tuple(tuple(g) for g in groups)
