"""Nested selectors compiled in place: ``NEXT(ρ)``, ``LAST(ρ)``, ``MAX(ρ)`` as automata.

CEL thesis Thm 7.5 (MAX): a run of ρ is paired with the states of the runs
whose matches, so far, strictly contain its own; it is maximal when it ends
and none of them ends with it.  The thesis determinizes ρ first, so that runs
with the same marks are one run; here ρ stays non-deterministic and the runs
with the *same* marks so far are tracked as a class of their own.  The same
product gives NEXT and LAST (Thm 7.3 builds NXT with total preorders, for
finite ambiguity; kleene's runtime determinizes the CEA anyway, so the plain
subset product is enough): relative to the current run, every other run of ρ
is in one class:

* ``EQ``: the same marks so far;
* ``UP``: greater so far (MAX: a strict superset; NEXT: at the first
  difference it marked and the current run did not; LAST: at the *last*
  difference so far it marked);
* ``DOWN`` (LAST only): smaller so far, but a later difference may turn it.

A run in ``UP`` in the current run's state dominates it for ever (it can follow
the same continuation), so the current run dies; when the current run ends
(a marked step into a final state of ρ), it is chosen iff no ``UP`` run ends
on the same event.  The classes are sets of states, so the product is finite:
``Q × 2^Q × 2^Q (× 2^Q)``, built only where reached.

Every run of ρ starts where the selector is *entered* (the enclosing pattern
says where: after the left side of ``;``), possibly waiting there, so the
competitors are exactly the oracle's "matches of ρ read from that position"
(docs/semantics.md, "Nested selectors").

The automaton's transitions carry predicate masks (``mask`` bits set, ``neg``
bits clear); which transitions of the other runs fire on an event depends on
its bits, so each transition of the current run is split into cells where that
is decided (only on the bits that change the outcome; event types are
exclusive).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

EQ, UP, DOWN = 0, 1, 2


@dataclass(frozen=True)
class Arc:
    """A transition of ρ: ``marked`` iff the event it reads is in the match; ``ref``: the
    caller's handle on it (its variables)."""

    source: int
    mask: int
    neg: int
    marked: bool
    target: int
    ref: int = -1


Key = tuple[int, frozenset[int], frozenset[int], frozenset[int], bool]
"""A product state: the current run's state, the EQ, UP and DOWN classes, and whether the
current run has just ended chosen (the product's final states)."""


def _moved(strategy: str, cls: int, mine: bool, theirs: bool) -> int | None:
    """The class of a run of class ``cls`` after it (``theirs``) and the current run (``mine``)
    marked or skipped the same event; None: it can no longer matter."""
    if mine == theirs:
        return cls
    if strategy == "MAX":
        if cls == EQ:
            return UP if theirs else None
        return UP if theirs or not mine else None  # UP: keeps containing the current run
    if strategy == "NEXT":
        if cls == EQ:
            return UP if theirs else None
        return UP  # the first difference decided
    return UP if theirs else DOWN  # LAST: the latest difference decides


def select_product(
    strategy: str,
    arcs: Iterable[Arc],
    initial: frozenset[int],
    finals: frozenset[int],
    types: int,
    grew: Callable[[int], None],
) -> tuple[list[tuple[Key, int, int, Arc, Key]], list[Key]]:
    """The product for ``strategy`` over ρ's automaton (arcs, initial states, final states).

    ``arcs`` include ρ's waiting before its first event (its own TRUE loops).  Returns the
    product's transitions ``(source, mask, neg, arc of the current run, target)`` and its
    initial keys; a key whose last field is True is final.  ``types``: the mask of the
    event-type bits (one type per event); ``grew(n)`` is told the number of transitions
    made so far (the caller's size limit).
    """
    out_of: dict[int, list[Arc]] = {}
    for a in arcs:
        out_of.setdefault(a.source, []).append(a)
    starts: list[Key] = [(q, initial, frozenset(), frozenset(), False) for q in sorted(initial)]
    seen = set(starts)
    todo = list(starts)
    made: list[tuple[Key, int, int, Arc, Key]] = []
    while todo:
        key = todo.pop()
        q, eq, up, down, _ = key
        live = [(EQ, a) for s in eq | {q} for a in out_of.get(s, ())]
        live += [(UP, a) for s in up for a in out_of.get(s, ())]
        live += [(DOWN, a) for s in down for a in out_of.get(s, ())]
        for arc in out_of.get(q, ()):
            for mask, neg, fired in _cells(strategy, live, arc, finals, types):
                classes: dict[int, set[int]] = {EQ: set(), UP: set(), DOWN: set()}
                up_ends = False
                for cls, target, marked in fired:
                    classes[cls].add(target)
                    up_ends |= cls == UP and marked and target in finals
                if arc.target in classes[UP]:
                    continue  # dominated for ever
                chosen = arc.marked and arc.target in finals and not up_ends
                nxt: Key = (
                    arc.target,
                    frozenset(classes[EQ]),
                    frozenset(classes[UP]),
                    frozenset(classes[DOWN]),
                    chosen,
                )
                made.append((key, mask, neg, arc, nxt))
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
            grew(len(made))
    return made, starts


def _cells(
    strategy: str, live: list[tuple[int, Arc]], arc: Arc, finals: frozenset[int], types: int
) -> list[tuple[int, int, frozenset[tuple[int, int, bool]]]]:
    """Split the events ``arc`` reads by what the other runs (``live``) do on them.

    Returns ``(mask, neg, fired)``: on every event with bits ``mask`` set and ``neg``
    clear, ``fired`` is the set of ``(new class, target, marked)`` of the live arcs that
    fire.  A bit is split on only while an undecided arc would add something new.
    """
    out: list[tuple[int, int, frozenset[tuple[int, int, bool]]]] = []
    stack = [(arc.mask, arc.neg)]
    while stack:
        m, n = stack.pop()
        if m & n or (m & types) & ((m & types) - 1):
            continue  # contradictory, or two event types at once
        off = n | (types & ~m if m & types else 0)  # one type set: the others are clear
        fired: set[tuple[int, int, bool]] = set()
        undecided: list[tuple[tuple[int, int, bool], Arc]] = []
        for cls, a in live:
            if a.mask & off or a.neg & m:
                continue
            moved = _moved(strategy, cls, arc.marked, a.marked)
            if moved is None:
                continue
            item = (moved, a.target, a.marked)
            if a.mask & ~m == 0 and a.neg & ~off == 0:
                fired.add(item)
            else:
                undecided.append((item, a))
        split = next((a for item, a in undecided if item not in fired), None)
        if split is None:
            out.append((m, n, frozenset(fired)))
            continue
        free = (split.mask & ~m) | (split.neg & ~off)
        bit = free & -free
        stack.append((m, n | bit))
        stack.append((m | bit, n))
    return out
