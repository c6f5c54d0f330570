"""The symbolic register transducer (SRT) the register engine runs: states, transitions, registers.

A run of an SRT is a state plus one register per variable a condition reads (the SRT papers' Def
23): a transition fires on an event whose unary bits match its ``mask`` and whose guards hold on
the event and the registers, then clears and writes registers.  :mod:`kleene.registers.automaton`
builds it from CEQL; :mod:`kleene.registers.runtime` and the other register runtimes run it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kleene.language import ast
from kleene.registers.guards import Guard


@dataclass(frozen=True, slots=True)
class Condition:
    """An n-ary conjunct of ``target[...]``; ``vacuous_when_empty``: it reads prev(target)."""

    pred: ast.Pred
    target: str
    vacuous_when_empty: bool
    slots: tuple[tuple[tuple[str, bool], int], ...] = ()
    """The register of each ``(variable, prev)`` the condition reads (for the run index,
    kleene.registers.index)."""


@dataclass(frozen=True, slots=True)
class RTransition:
    """``source --mask, guards / clears, writes, •?--> target`` of the ε-free SRT."""

    source: int
    mask: int
    """Unary bits (event type, unary predicates) the event must have."""
    neg: int
    """Bits the event must not have (``NOT(...)``); 0 for every other transition."""
    guards: tuple[Guard, ...]
    """n-ary conditions, evaluated after ``clears`` and before ``writes``."""
    conditions: tuple[Condition, ...]
    """The same conditions as ASTs (for the vectorized pair join, kleene.registers.pairs)."""
    variables: frozenset[str]
    """The variables the event is bound to; empty for a gap (skip) transition."""
    marked: bool
    """Whether the event is output (its variables meet the projection)."""
    clears: tuple[int, ...]
    writes: tuple[int, ...]
    target: int
    hidden: bool = False
    """Part of the match the selection strategy compares, but not of its projection
    (only in an SRT compiled with ``strategy_first``: the event binds no SELECT variable)."""
    sets: tuple[int, ...] = ()
    """Position registers set to the event's position (entering ``φ1`` of ``φ1 UNLESS φ2``),
    after ``clears`` and before the guards."""
    checks: tuple[tuple[int, int], ...] = ()
    """``(register, monitor)``: the event ends ``φ1`` of an UNLESS, whose start position is in
    the register; the transition fires only if no match of the monitor's ``φ2`` that ended
    at or before this event started at or after it (evaluated after the guards)."""


@dataclass(frozen=True)
class SRT:
    """An ε-free symbolic register transducer, ready for :mod:`kleene.registers.runtime`."""

    num_states: int
    initial: int
    finals: frozenset[int]
    labelled: tuple[tuple[RTransition, ...], ...]
    """Per state: transitions that bind a variable."""
    gaps: tuple[tuple[RTransition, ...], ...]
    """Per state: gap transitions (TRUE, bind nothing) that change the state."""
    stationary: tuple[bool, ...]
    """Per state: a run there is unchanged by an event no labelled transition takes."""
    dead: tuple[bool, ...]
    """Per state: no transition leaves it, so a run there only ever reports (and is not kept)."""
    num_registers: int
    event_types: tuple[str, ...]
    preds: tuple[ast.Pred, ...]
    """Unary atomic predicates, bit ``len(event_types) + k`` (the prefilter)."""
    attributes: tuple[str, ...]
    """Attributes the guards read: the layout of event tuples."""
    register_names: tuple[str, ...]
    streams: tuple[str, ...]
    """Stream bits, after the predicates' (as in :class:`kleene.predicates.atoms.Atoms`)."""
    variable_registers: dict[str, int]
    """The register of each variable a condition reads as ``var.attr``."""
    strategy_first: bool = False
    """Compiled for NEXT/LAST/MAX with a projection: every event of a match is marked (the
    strategy compares whole matches) and ``hidden`` says which ones the projection drops."""
    monitors: tuple[SRT, ...] = ()
    """The SRTs of the right sides of UNLESS (monitor ``k`` is the ``k``-th), run on their own
    next to the query's runs; their transitions' ``checks`` refer to this list too."""
    seeded: tuple[tuple[int, ...], ...] = ()
    """Per monitor: the registers of the left side's variables its conditions read (issue 18),
    each bound to the left match's first event; empty for a monitor on its own.  A seeded
    monitor runs once per left start, its runs starting with those registers holding the
    start's event (:class:`kleene.registers.runtime.RegisterEngine`)."""
    selectors: tuple[str, ...] = ()
    """The strategies of the nested selectors whose products ride in the states
    (kleene.registers.selectors): their states are not stationary, so every event is visited."""
    anchored: bool = False
    """A selector starts the pattern: one run per partition starts at its first event and waits
    (its competitors are every match since then); a match starts at its first bound event."""

    @property
    def relevant_masks(self) -> tuple[int, ...]:
        """The masks of labelled transitions: an event matching none changes no run's registers."""
        return tuple(sorted({t.mask for ts in self.labelled for t in ts}))

    @property
    def contiguous(self) -> bool:
        """Can a run die on an event that no labelled transition takes (``:``, ``:+``)?"""
        reachable = {t.target for ts in self.labelled for t in ts}
        return not all(self.stationary[q] for q in reachable)
