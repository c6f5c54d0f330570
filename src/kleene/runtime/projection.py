"""SELECT's projection after NEXT, LAST or MAX: replaying the chosen matches.

A selection strategy compares whole matches (docs/cel-semantics.md, "Order of
the clauses"), so the engine runs it on the automaton of ``SELECT *`` and
projects each chosen match afterwards.  A match is a set of positions ``D``;
several valuations may have those positions with different variables (OR
branches), and each gives its own projection.  They are exactly the runs of
the (non-deterministic) CEA that mark the events of ``D`` and skip the
others of the (sub)stream between ``min D`` and ``max D``, ending in a final
state; each marked transition says whether its event is bound to a
projected variable (:func:`kleene.automata.compile.compile_labelled`).

:class:`Projector` keeps the predicate bit vectors of the events still inside
the window (per batch, as the engine received them) and replays the CEA over
the span of a chosen match.  The cost is per complex event output: the
events of its span times the CEA's transitions; the update per event is one
list append per batch.  Distinct matches may project to the same complex
event (``SELECT a, c`` of two maximal matches that differ in ``b``): it is
output once.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Hashable, Sequence
from typing import Any

from kleene.automata.cea import CEA
from kleene.automata.compile import Labels
from kleene.runtime.enumeration import Found

Move = tuple[int, int, int, frozenset[bool]]
"""``(mask, neg, target, projected flags)`` of a transition."""


class Projector:
    """Projects the complex events a strategy chose, from the events of their span."""

    def __init__(self, cea: CEA, labels: Labels) -> None:
        self.labels = labels
        self.initial = cea.initial
        self.finals = cea.finals
        self.marked: list[list[Move]] = [[] for _ in range(cea.num_states)]
        self.unmarked: list[list[Move]] = [[] for _ in range(cea.num_states)]
        for t in cea.transitions:
            if t.marked:
                self.marked[t.source].append((t.mask, t.neg, t.target, labels[t]))
            else:
                self.unmarked[t.source].append((t.mask, t.neg, t.target, frozenset()))
        self.batches: deque[tuple[Any, Any, Sequence[Sequence[Hashable]] | None, float]] = deque()
        """``(positions, bit vectors, partition key columns, latest time)`` per batch (numpy
        arrays or sequences, positions increasing)."""

    def log(
        self,
        positions: Any,
        bits: Any,
        keys: Sequence[Sequence[Hashable]] | None,
        latest: float,
    ) -> None:
        """Keep a batch's events (the engine calls this before stepping through them)."""
        self.batches.append((positions, bits, keys, latest))

    def release(self, tau: float) -> None:
        """Forget the batches whose events all lie before the window (no match can span them)."""
        batches = self.batches
        while len(batches) > 1 and batches[0][3] < tau:
            batches.popleft()

    def _span(self, lo: int, hi: int, key: Hashable) -> list[tuple[int, int]]:
        """``(position, bits)`` of the events of partition ``key`` in ``[lo, hi]``, in order."""
        out: list[tuple[int, int]] = []
        for positions, bits, keys, _ in self.batches:
            if len(positions) == 0 or positions[-1] < lo or positions[0] > hi:
                continue
            a = bisect.bisect_left(positions, lo)
            b = bisect.bisect_right(positions, hi)
            for i in range(a, b):
                if keys is not None and tuple(col[i] for col in keys) != key:
                    continue
                out.append((int(positions[i]), int(bits[i])))
        return out

    def project(self, match: tuple[int, ...], key: Hashable) -> set[tuple[int, ...]]:
        """The projections of the valuations whose positions are exactly ``match``."""
        chosen = set(match)
        hi = match[-1]
        runs: dict[int, set[tuple[int, ...]]] = {self.initial: {()}}
        for pos, bits in self._span(match[0], hi, key):
            moves = self.marked if pos in chosen else self.unmarked
            nxt: dict[int, set[tuple[int, ...]]] = {}
            for q, kept in runs.items():
                for mask, neg, target, flags in moves[q]:
                    if bits & mask != mask or bits & neg:
                        continue
                    into = nxt.setdefault(target, set())
                    if True in flags:
                        into.update(k + (pos,) for k in kept)
                    if False in flags or not flags:
                        into.update(kept)
            runs = nxt
            if not runs:
                return set()
        return set().union(*(kept for q, kept in runs.items() if q in self.finals))

    def apply(self, found: list[Found], limit: int) -> list[Found]:
        """The projected complex events of the chosen matches ``found`` (one end), each once."""
        seen: dict[tuple[int, tuple[int, ...], Hashable], None] = {}
        for start, _end, positions, key in found:
            for data in sorted(self.project(positions, key)):
                seen[(start, data, key)] = None
                if len(seen) >= limit:
                    break
            if len(seen) >= limit:
                break
        end = found[0][1] if found else -1
        return [(start, end, data, key) for start, data, key in seen]
