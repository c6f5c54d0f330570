"""The product of two sides of ``AND`` or ``ALL`` in the register engine's ε-NFA.

Built into the ε-NFA of :class:`kleene.registers.construction.Builder` (its states, ε-edges and
consuming transitions), from the fragments of the two sides, each built with registers of its
own; a pair of states of the sides is a state of the product (:class:`StateNumbering`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kleene.automata.fragments import StateNumbering
from kleene.registers.enfa import Cons, Frag

if TYPE_CHECKING:
    from kleene.registers.construction import Builder


def product(builder: Builder, a: Frag, b: Frag, *, interleave: bool, waits: bool) -> Frag:
    """``φ1 AND φ2`` (``interleave`` False) or ``φ1 ALL φ2``: a product of the two fragments.

    As in :mod:`kleene.automata.construction`, on the ε-NFAs of the two sides
    (their ε-edges, with their register clears, move one side at a time).
    A labelled transition of the product fires labelled transitions of
    both sides together (the event satisfies both: masks and guards
    conjoined, variables and register writes united), or, for ALL, of one
    side while the other *stays*: before its match (at its start state,
    which no edge enters), after it (at its final state, which no edge
    leaves) or at a gap (its TRUE self-loop).  An event no side takes is
    skipped when both sides can stay; for AND only at gaps of both (the
    two matches have the same events), for ALL also before or after one
    side's match, but not before both (the match starts with an event of
    one side: skipping before it is the enclosing pattern's business) nor
    after both (the product is final).  A condition inside a side reads
    that side's registers; the checker allows a condition above the
    product only on variables of one side.  ``waits`` (AND, a side starting with a nested
    selector, both sides made to wait by the caller): the product's start waits too.
    """
    eps_out: dict[int, list[tuple[frozenset[int], int]]] = {}
    for x, clears, y in builder.eps:
        eps_out.setdefault(x, []).append((clears, y))
    labelled: dict[int, list[Cons]] = {}
    reading: dict[int, list[Cons]] = {}  # a nested selector's skips (registers/selectors.py)
    loops: set[int] = set()
    for t in builder.cons:
        if t.variables:
            labelled.setdefault(t.source, []).append(t)
        elif t.reads:
            assert not interleave, "a nested selector inside ALL"
            reading.setdefault(t.source, []).append(t)
        else:
            assert t.source == t.target, "unlabelled transitions are TRUE self-loops"
            loops.add(t.source)
    pair: StateNumbering[tuple[int, int]] = StateNumbering(builder.state)

    out: list[Cons] = []

    def add(source: int, parts: tuple[Cons, ...], target: int, reads: bool = False) -> None:
        mask = neg = 0
        variables: set[str] = set()
        writes: set[int] = set()
        checks: set[tuple[int, int]] = set()
        for t in parts:
            mask, neg = mask | t.mask, neg | t.neg
            variables |= t.variables
            writes |= t.writes
            checks |= t.checks
        if mask & neg:
            return  # the event would need a bit and its absence
        t = Cons(
            source, mask, variables, target, neg, writes=writes, parts=parts, checks=checks,
            reads=reads,
        )
        builder.cons.append(t)
        out.append(t)

    start = pair((a.start, b.start))
    for (x, y), source in pair.pending():
        for clears, x2 in eps_out.get(x, ()):
            builder.edge(source, pair((x2, y)), clears)
        for clears, y2 in eps_out.get(y, ()):
            builder.edge(source, pair((x, y2)), clears)
        for ta in labelled.get(x, ()):
            for tb in labelled.get(y, ()):
                add(source, (ta, tb), pair((ta.target, tb.target)))
        if interleave:
            begun = (x, y) != (a.start, b.start)
            stay_a = x in loops or x == a.start or x == a.final
            stay_b = y in loops or y == b.start or y == b.final
            if stay_b:
                for ta in labelled.get(x, ()):
                    add(source, (ta,), pair((ta.target, y)))
            if stay_a:
                for tb in labelled.get(y, ()):
                    add(source, (tb,), pair((x, tb.target)))
            skip_a = x in loops or (x == a.start and begun) or (x == a.final and y != b.final)
            skip_b = y in loops or (y == b.start and begun) or (y == b.final and x != a.final)
        else:
            skip_a, skip_b = x in loops, y in loops
            if x in reading or y in reading:  # both skip the event, one reading its bits
                for ta in (*reading.get(x, ()), *((None,) if skip_a else ())):
                    for tb in (*reading.get(y, ()), *((None,) if skip_b else ())):
                        if ta is not None or tb is not None:
                            parts = tuple(t for t in (ta, tb) if t is not None)
                            target = pair((ta.target if ta else x, tb.target if tb else y))
                            add(source, parts, target, reads=True)
        if skip_a and skip_b:
            loop = Cons(source, 0, set(), source)
            builder.cons.append(loop)
    final = pair.ids.get((a.final, b.final))
    entries = (start,) if waits else ()
    return Frag(start, builder.state() if final is None else final, tuple(out), entries)
