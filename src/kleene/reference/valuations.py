"""Valuations of the reference evaluator (:mod:`kleene.reference.oracle`) and what evaluating on
one (sub)stream needs to know: the interval, the positions, the bindings of the tracked
variables and the deferred checks of FILTER atoms naming an enclosing pattern's variables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kleene.language import ast

ComplexEvent = tuple[int, int, tuple[int, ...]]
Bindings = frozenset[tuple[str, frozenset[int]]]
Deferred = frozenset[tuple["ast.FilterAtom | Absent", frozenset[int] | None]]
"""Checks of FILTER atoms naming an enclosing pattern's variables: the atom, and the events of
its variable it filters (None: the variable's events where the check is made); or an
:class:`Absent` check (with None) of ``NOT(...)`` or UNLESS's right side reading them."""


class OracleBudgetExceeded(RuntimeError):
    """More intermediate valuations than the caller's budget allowed.

    Property tests pass a budget so that an unlucky random case is discarded
    instead of running for minutes; the oracle itself has no size limit.
    """


class Valuation(NamedTuple):
    """A valuation: interval, all positions of the match, and variable bindings.

    ``bindings`` holds ``(variable, positions)`` pairs for the tracked
    variables whose set is non-empty; an absent variable is bound to ∅.
    """

    start: int
    end: int
    positions: frozenset[int]
    bindings: Bindings
    deferred: Deferred = frozenset()

    def get(self, var: str) -> frozenset[int]:
        """``V(var)``, the empty set when ``var`` is unbound."""
        for name, positions in self.bindings:
            if name == var:
                return positions
        return frozenset()

    def as_dict(self) -> dict[str, frozenset[int]]:
        return dict(self.bindings)


class Absent(NamedTuple):
    """A deferred *negative* check: ``NOT(ψ)`` or the right side of UNLESS reads a variable
    bound around it (issue 18), so whether ψ (the right side) matches depends on the valuation
    of the pattern that binds it.  It holds iff no ``candidate`` (a valuation of ψ, of the
    right side inside the left match's span) has all its own deferred checks holding when the
    variables it does not bind (``local``: those ψ can bind) are read from that valuation."""

    local: frozenset[str]
    candidates: frozenset[Valuation]


def merge_bindings(a: Bindings, b: Bindings) -> Bindings:
    if not a:
        return b
    if not b:
        return a
    merged: dict[str, frozenset[int]] = dict(a)
    for name, positions in b:
        merged[name] = merged.get(name, frozenset()) | positions
    return frozenset(merged.items())


def join(v1: Valuation, v2: Valuation) -> Valuation:
    """``V1`` followed by ``V2`` (the caller checked the order condition)."""
    return Valuation(
        v1.start,
        v2.end,
        v1.positions | v2.positions,
        merge_bindings(v1.bindings, v2.bindings),
        v1.deferred | v2.deferred,
    )


@dataclass
class Context:
    """What evaluating a pattern on one (sub)stream needs to know."""

    events: Sequence[Mapping[str, Any]]
    type_key: str
    stream_key: str | None
    positions: Sequence[int]  # global positions of the substream, increasing
    following: dict[int, int]  # position -> next position of the substream
    tracked: frozenset[str] | None  # None: track every variable
    admissible: Callable[[int, int], bool]  # may an interval [s, e] still be output?
    budget: int | None
    produced: int = 0
    defers: bool = True  # some FILTER names an outer variable (else nothing to resolve)
    selectors: bool = False  # the pattern holds a nested selector (read from a position)
    memo: dict[Any, set[Valuation]] = field(default_factory=dict)
    written: dict[int, ast.Pattern] = field(default_factory=dict)  # Repeat node -> written out

    def tracks(self, var: str) -> bool:
        return self.tracked is None or var in self.tracked

    def charge(self, n: int) -> None:
        self.produced += n
        if self.budget is not None and self.produced > self.budget:
            raise OracleBudgetExceeded(f"more than {self.budget} valuations")
