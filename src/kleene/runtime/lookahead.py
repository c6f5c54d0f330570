"""Lookahead: which events of a batch can still belong to a complex event.

A complex event ends at an event that takes some run into a final state: a
*final-capable* event, one whose predicate bit vector fires a transition of
the CEA into a final state.  Under a window ``W``, a complex event that ends
at position ``j`` and starts at ``s`` has ``time(j) - time(s) <= W``, and all
its events lie between ``s`` and ``j``.  So an event ``i`` can only matter if
some final-capable event ``j >= i`` has ``time(j) - time(i) <= W``.

An event with no such ``j`` is *dead*: every run through it dies before it
can output, and every complex event output later starts after it (its
interval does not contain it).  Skipping dead events therefore leaves the
set of complex events, and with it CONSUME BY, unchanged.  It is the
counterpart of inert skipping (:mod:`kleene.runtime.engine`), which looks
back at the runs that are active; this looks ahead, with one vectorized pass
over the batch.  On queries whose last event is rare (``P'_n`` of the CORE
paper ends with an event that never occurs) almost no event reaches the
per-event loop.

Within a batch the future is known up to its last event.  Later batches
only hold events at its last time or later, so an event with no
final-capable event after it in the batch is dead when the batch's last
time is already beyond its window.  The others (the batch's *undecided
tail*, after its last final-capable event) need not be stepped yet: no
complex event ends at them, so the engine carries them into the next batch
(:meth:`Lookahead.split`), where most turn out dead.  Without the carry a
batch's tail within the window was stepped every time, a cost that grew with
the window (``T -> 4T``) and made a query whose last event never occurs step
a window's worth of events per batch for nothing.

Under LIMIT n the engine still outputs n complex events at a triggering
event that has more, runs that started later first; among complex events
with the same start the tie may break differently than without the
lookahead, because the skipped events no longer shape the tECS.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kleene.automata.cea import CEA


class Lookahead:
    """The final-capable test of one CEA, and the dead events of a batch."""

    __slots__ = ("masks", "negs", "moving")

    def __init__(self, guards: list[tuple[int, int]], moving: int | None = None) -> None:
        self.masks = [np.uint64(m) for m, _ in guards]
        self.negs = [np.uint64(g) for _, g in guards]
        self.moving = None if moving is None else np.uint64(moving)
        """Bits one of which every event that can change a run has (None: no such test).

        An event with none of them is *transparent*: from the initial state no
        transition fires, from every other state only unmarked self-loops, so
        stepping it changes no run (except that runs in states without
        transitions, which can never output again, die).  The engine leaves
        such events out of the tail it carries (:func:`moving_bits`)."""

    @classmethod
    def of(cls, cea: CEA) -> Lookahead | None:
        """The lookahead of ``cea``; None when every event may be final-capable."""
        if cea.initial in cea.finals:
            return None
        guards = sorted({(t.mask, t.neg) for t in cea.transitions if t.target in cea.finals})
        if any(mask == 0 and neg == 0 for mask, neg in guards):
            return None  # a TRUE transition into a final state: nothing is dead
        return cls(guards, moving_bits(cea))

    def may_move(self, bits: np.ndarray) -> np.ndarray | None:
        """For each bit vector: may it change a run (None: every one may)?"""
        if self.moving is None:
            return None
        return (bits & self.moving) != 0

    def final_capable(self, bits: np.ndarray) -> np.ndarray:
        """For each bit vector: does it fire some transition into a final state?"""
        out = np.zeros(len(bits), dtype=bool)
        for mask, neg in zip(self.masks, self.negs):
            fires = (bits & mask) == mask
            if neg:
                fires &= (bits & neg) == 0
            out |= fires
        return out

    def split(self, bits: np.ndarray, times: np.ndarray, window: int | float) -> Split:
        """The batch's live events, its undecided tail, and the horizon of earlier events.

        ``times`` are the events' times (positions for ``WITHIN n EVENTS``),
        non-decreasing.
        """
        n = len(bits)
        if np.issubdtype(times.dtype, np.floating) and np.isnan(times).any():
            return Split(None, n, None)  # no order to reason with
        capable = self.final_capable(bits)
        # horizon[i]: the time of the first final-capable row at or after i.
        # Without one in the batch, later batches start at the last time at
        # the earliest, which is the time of the last row (n - 1).
        if not capable.any():
            horizon: np.ndarray | np.generic = times[-1]
            cut = 0
            before = times[-1]
        else:
            rows = np.where(capable, np.arange(n), n - 1)
            horizon = times[np.minimum.accumulate(rows[::-1])[::-1]]
            cut = n - int(np.argmax(capable[::-1]))
            before = horizon[0]
        live = (horizon - times) <= window
        return Split(None if live.all() else live, cut, before.item())


class Split(NamedTuple):
    """What :meth:`Lookahead.split` finds in a batch."""

    live: np.ndarray | None
    """The events that are not dead (None: all of them)."""
    cut: int
    """Where the undecided tail starts: after the last final-capable event (0: none in the
    batch; the length of the batch when the times have no order)."""
    horizon: int | float | None
    """The earliest time an event before the batch can reach a final-capable event by (None:
    no order, every earlier event may)."""


def moving_bits(cea: CEA) -> int | None:
    """The bits of :attr:`Lookahead.moving`: the highest bit of each transition's guard, over
    the transitions that move a run (from the initial state: all; from the others: all
    but unmarked self-loops).

    None when some event with none of them may still change a run: a state
    (other than the initial one) with transitions but no unconditional unmarked
    self-loop (an event can end its runs, as under strict contiguity), or a
    moving transition whose guard asks for no bit.
    """
    looping: set[int] = set()
    bits = 0
    for t in cea.transitions:
        if t.source != cea.initial and t.target == t.source and not t.marked:
            if t.mask == 0 and t.neg == 0:
                looping.add(t.source)
            continue
        if t.mask == 0:
            return None
        bits |= 1 << (t.mask.bit_length() - 1)
    if any(t.source != cea.initial and t.source not in looping for t in cea.transitions):
        return None
    return bits
