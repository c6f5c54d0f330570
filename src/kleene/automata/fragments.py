"""The pieces of the CEA construction (:mod:`kleene.automata.construction`): VCEA transitions,
fragments under construction, and the numbering of a product's states.

A *VCEA* transition carries the set of variables that the event it reads is bound to; a
fragment is a VCEA with its initial and final states (the invariants are :class:`Fragment`'s).
:class:`StateNumbering` and :data:`NOT_LABEL` are shared with the register engine's construction
(:mod:`kleene.registers.construction`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar


@dataclass(frozen=True, slots=True)
class VT:
    """A VCEA transition: predicate masks (see cea.py) and the variables it binds."""

    source: int
    mask: int
    labels: frozenset[str]
    target: int
    neg: int = 0

    def moved(self, source: int, target: int) -> VT:
        return VT(source, self.mask, self.labels, target, self.neg)


K = TypeVar("K", bound=Hashable)


class StateNumbering(Generic[K]):
    """The states of a product construction, numbered when first reached.

    Calling it with a key (a pair of states, a state and a set...) gives the
    key's state, made with ``new_state`` the first time; :meth:`pending`
    hands out each new key once to be expanded, which may reach more.
    """

    def __init__(self, new_state: Callable[[], int]) -> None:
        self.ids: dict[K, int] = {}
        self._todo: list[K] = []
        self._new = new_state

    def __call__(self, key: K) -> int:
        number = self.ids.get(key)
        if number is None:
            number = self.ids[key] = self._new()
            self._todo.append(key)
        return number

    def pending(self) -> Iterator[tuple[K, int]]:
        """``(key, state)`` for every key not expanded yet, the latest reached first."""
        while self._todo:
            key = self._todo.pop()
            yield key, self.ids[key]


NOT_LABEL = "<not>"
"""The label of the event matched by NOT(...): part of the match, bound to no variable."""


@dataclass(frozen=True)
class Fragment:
    """A VCEA under construction.

    Invariant: initial states have no incoming transitions (so no TRUE
    self-loop either).  ``nullable`` marks patterns that may match no event
    (``φ*``); the empty match is only ever used inside a sequence or OR, never
    output on its own.
    """

    transitions: tuple[VT, ...]
    initial: frozenset[int]
    finals: frozenset[int]
    nullable: bool = False
    waits: frozenset[int] = frozenset()
    """Initial states of nested selectors: they wait for their first event with transitions
    of their own (which track the other runs), so no TRUE self-loop is added there.  The
    initial pairs of a product one of whose sides waits (AND, UNLESS's left) wait too, with
    the product's own transitions (which may loop on the pair: the exception to the invariant
    above, harmless since nothing is added around a waiting state)."""


def waiting(f: Fragment) -> Fragment:
    """``f`` whose initial states all wait: those of nested selectors with their own
    transitions, the others with a TRUE loop (as after ';'); for a product (AND, UNLESS's left)
    one of whose sides starts with a selector, so that both sides wait together."""
    loops = tuple(VT(i, 0, frozenset(), i) for i in sorted(f.initial - f.waits))
    return Fragment(f.transitions + loops, f.initial, f.finals, f.nullable, f.initial)


def by_source(transitions: tuple[VT, ...]) -> dict[int, list[VT]]:
    out: dict[int, list[VT]] = {}
    for t in transitions:
        out.setdefault(t.source, []).append(t)
    return out
