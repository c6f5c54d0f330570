"""The ε-NFA the register builder makes, and its per-state ε-elimination into an SRT's states.

:class:`kleene.registers.construction.Builder` assembles Thompson fragments (:class:`Frag`) of
consuming transitions (:class:`Cons`) and ε-edges that may clear registers; :func:`eliminate`
gives each reachable state the consuming transitions of its ε-closure (the spec's recommended
variant of the SRT papers' Alg 2), with the registers cleared along the ε-path, and tells which
states a run may stay in while no transition takes the event (``stationary``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from kleene.registers.guards import Guard
from kleene.registers.srt import Condition, RTransition


@dataclass
class Cons:
    """A consuming transition of the ε-NFA: ``source --mask, not neg, guards / writes--> target``."""

    source: int
    mask: int
    variables: set[str]
    target: int
    neg: int = 0
    guards: list[Guard] = field(default_factory=list)
    conditions: list[Condition] = field(default_factory=list)
    writes: set[int] = field(default_factory=set)
    parts: tuple[Cons, ...] = ()
    """For a transition of an AND/ALL product: the sides' transitions it fires together (their
    guards are its guards too, added once the registers are numbered)."""
    checks: set[tuple[int, int]] = field(default_factory=set)
    """UNLESS checks (see :class:`RTransition`)."""
    reads: bool = False
    """A nested selector's transition that skips the event (no variables) under a mask: it
    reads the event's bits, unlike a gap's TRUE loop (kleene.registers.selectors)."""


@dataclass(frozen=True)
class Frag:
    """A Thompson fragment: one start and one final state, and the transitions built for it."""

    start: int
    final: int
    cons: tuple[Cons, ...]
    entries: tuple[int, ...] = ()
    """The fragment starts with a nested selector: the states at its start that wait by
    themselves (a selector's entry, with its own transitions, and a gap state before each other
    branch of an OR there), so ``;`` enters it without a gap state (kleene.registers.selectors)."""


class Eliminated(NamedTuple):
    """The states of an ε-free SRT (the fields of :class:`kleene.registers.srt.SRT` they fill)."""

    num_states: int
    finals: frozenset[int]
    labelled: tuple[tuple[RTransition, ...], ...]
    gaps: tuple[tuple[RTransition, ...], ...]
    stationary: tuple[bool, ...]
    dead: tuple[bool, ...]


def eliminate(
    frag: Frag,
    eps: list[tuple[int, frozenset[int], int]],
    cons: list[Cons],
    projection: frozenset[str] | None,
    strategy_first: bool,
) -> Eliminated:
    """Per-state ε-elimination of ``frag`` (its reachable states, renumbered from 0).

    ``eps`` are the ε-edges ``(source, registers cleared, target)`` and ``cons`` the consuming
    transitions of the whole ε-NFA; ``projection`` and ``strategy_first`` decide which
    transitions are marked (output)."""
    eps_out: dict[int, list[tuple[frozenset[int], int]]] = {}
    for a, clears, b in eps:
        eps_out.setdefault(a, []).append((clears, b))
    cons_out: dict[int, list[Cons]] = {}
    for t in cons:
        cons_out.setdefault(t.source, []).append(t)

    def closure(q: int) -> set[tuple[int, frozenset[int]]]:
        seen: set[tuple[int, frozenset[int]]] = {(q, frozenset())}
        todo = deque(seen)
        while todo:
            state, clears = todo.popleft()
            for more, nxt in eps_out.get(state, ()):
                item = (nxt, clears | more)
                if item not in seen:
                    seen.add(item)
                    todo.append(item)
        return seen

    number: dict[int, int] = {frag.start: 0}
    order = [frag.start]
    labelled: list[list[RTransition]] = []
    gaps: list[list[RTransition]] = []
    self_gap: list[bool] = []
    finals: set[int] = set()
    k = 0
    while k < len(order):
        q = order[k]
        k += 1
        close = closure(q)
        if any(state == frag.final for state, _ in close):
            finals.add(number[q])
        here: list[RTransition] = []
        skip: list[RTransition] = []
        loops = False
        seen: set[tuple[int, frozenset[int]]] = set()
        for state, clears in sorted(close, key=lambda sc: (sc[0], sorted(sc[1]))):
            for t in cons_out.get(state, ()):
                if (
                    not t.variables and not t.reads and t.target == state == q and not clears
                ):
                    loops = True
                    continue
                if t.target not in number:
                    number[t.target] = len(order)
                    order.append(t.target)
                projected = bool(t.variables) and (
                    projection is None or bool(t.variables & projection)
                )
                marked = bool(t.variables) if strategy_first else projected
                new = RTransition(
                    number[q], t.mask, t.neg, tuple(t.guards), tuple(t.conditions),
                    frozenset(t.variables), marked,
                    tuple(sorted(r for r in clears if r >= 0)), tuple(sorted(t.writes)),
                    number[t.target], marked and not projected,
                    tuple(sorted(~r for r in clears if r < 0)), tuple(sorted(t.checks)),
                )
                key = (id(t), clears)
                if key in seen:
                    continue
                seen.add(key)
                (here if t.variables or t.reads else skip).append(new)
        labelled.append(here)
        gaps.append(skip)
        self_gap.append(loops)
    n = len(order)
    dead = [not (labelled[q] or gaps[q] or self_gap[q]) for q in range(n)]
    stationary = [
        dead[q] or self_gap[q] or _equivalent_to_gap(q, labelled, gaps, self_gap)
        for q in range(n)
    ]
    return Eliminated(
        num_states=n,
        finals=frozenset(finals),
        labelled=tuple(tuple(ts) for ts in labelled),
        gaps=tuple(() if stationary[q] else tuple(gaps[q]) for q in range(n)),
        stationary=tuple(stationary),
        dead=tuple(dead),
    )


def _equivalent_to_gap(
    q: int,
    labelled: list[list[RTransition]],
    gaps: list[list[RTransition]],
    self_gap: list[bool],
) -> bool:
    """Is a run at ``q`` the same as the runs at the gap states it moves to on a skip?

    After ``A ; B`` reads A, the run is at A's final state, whose closure holds
    the gap state ``g`` before B: on an event B does not take it moves to
    ``g``, which offers exactly the same transitions.  In general, when the
    gap states ``q`` moves to (each with its TRUE self-loop) together offer
    exactly ``q``'s labelled transitions, the run at ``q`` can stay where it
    is instead: the successors it can make, now and after any further skips,
    are the same (runs and outputs are sets).  Treating ``q`` as stationary
    lets the runtime skip the events no labelled transition takes.
    """
    if not gaps[q] or any(t.clears for t in gaps[q]):
        return False
    targets = {t.target for t in gaps[q]}
    if not all(self_gap[g] and not gaps[g] for g in targets):
        return False

    def shape(ts: list[RTransition]) -> set[tuple[object, ...]]:
        return {
            (t.mask, t.neg, t.guards, t.variables, t.clears, t.writes, t.target, t.sets, t.checks)
            for t in ts
        }

    offered: set[tuple[object, ...]] = set()
    for g in targets:
        offered |= shape(labelled[g])
    return shape(labelled[q]) == offered
