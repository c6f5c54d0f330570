"""A nested selector (``NEXT(ρ)``, ``LAST(ρ)``, ``MAX(ρ)``) inside a register automaton.

When the conditions between events read no event the selector chooses (kleene.language.selectors
refuses the other queries), ρ has unary conditions only, so its product — the finite automaton
over unary predicates that tracks, with each run of ρ, the classes of the runs it competes with
(kleene.automata.selection) — is the same as in the tECS engine.  It is built by the tECS
compiler (:func:`kleene.automata.construction.selector_automaton`, not a second construction) and its
states become states of the register automaton: transitions with unary masks and no register
access.  The register builder (kleene.registers.construction, ``_Selector``) enters it right after
the left side of ``;`` or ``:`` without the gap state's TRUE loop (the product's entry waits with
transitions of its own, which track the competitors' first events), so the competitors start
exactly where the selector is entered, as in the tECS engine and the oracle; an OR's other
branch there gets a gap state of its own, an iteration re-enters the entry after each turn, an
AND pairs a side's reading skips with the other side's skips, and at the start of the pattern
the SRT is *anchored* (one run per partition from its first event, kleene.registers.runtime).

Here only the numbering differs: the tECS compiler numbers bits with an
:class:`~kleene.predicates.atoms.Atoms`; the register builder numbers event types first (the
same), then its unary predicates as it meets them, then streams after every predicate.  So the
product is built over an ``Atoms`` of its own and each bit is renumbered into the builder's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kleene.automata.construction import selector_automaton
from kleene.language import ast
from kleene.limits import Limits
from kleene.predicates.atoms import Atoms

__all__ = ["ProductInRegisters", "selector_in_registers"]


@dataclass(frozen=True)
class ProductInRegisters:
    """The selector's product in the register builder's bit numbering.

    ``transitions``: ``(source, mask, neg, names, target)``; ``names`` empty: the run reads
    the event (its bits decide the target) without taking it into the match.
    """

    transitions: tuple[tuple[int, int, int, frozenset[str], int], ...]
    entry: int
    finals: frozenset[int]


def selector_in_registers(
    p: ast.Selector,
    event_types: list[str],
    streams: list[str],
    stream_base: int,
    bit: Callable[[ast.Pred], int],
    limits: Limits | None = None,
) -> ProductInRegisters:
    """``p``'s product (tECS construction), with bits renumbered by the register builder's
    ``bit`` (unary predicates), its ``event_types`` (the same first bits) and ``streams``
    (numbered from ``stream_base``)."""
    atoms = Atoms()
    atoms.collect(p, with_streams=bool(streams))
    atoms.event_types = list(event_types)
    atoms.streams = list(streams)
    n_types, n_preds = len(atoms.event_types), len(atoms.preds)
    renumber: dict[int, int] = {}
    for k in range(n_types):
        renumber[k] = 1 << k
    for k, pred in enumerate(atoms.preds):
        renumber[n_types + k] = bit(pred)
    for k in range(len(atoms.streams)):
        renumber[n_types + n_preds + k] = 1 << (stream_base + k)

    def moved(mask: int) -> int:
        out = 0
        while mask:
            low = mask & -mask
            out |= renumber[low.bit_length() - 1]
            mask ^= low
        return out

    made = selector_automaton(p, atoms, limits)
    return ProductInRegisters(
        tuple(
            (source, moved(mask), moved(neg), names, target)
            for source, mask, neg, names, target in made.transitions
        ),
        made.entry,
        made.finals,
    )
