"""Which events of a batch the engine's loop visits, per set of active states (kleene.runtime.engine).

An event with bit vector ``v`` is skipped when ``v`` is *inert* (:meth:`LazyDFA.inert`) for ``q0``
and for every active state.  The batch's candidates are numbered by their distinct bit vectors
(:func:`distinct`); per distinct set of active states, :class:`Visits` keeps one table telling
which numbers are skipped and, when few candidates matter, the list of those that do (one
vectorized pass over the batch).  Shared by the pure-Python loop and its compiled twin
(``kleene.runtime._loop``), which read the same tables.
"""

from __future__ import annotations

import numpy as np

from kleene.automata.determinize import LazyDFA

MAX_VISIT_LISTS = 64
"""Distinct sets of active states per batch for which a visit list is built."""

DENSE_CODES = 1 << 16
"""Bit vectors below this are numbered by a lookup table instead of a sort."""


def distinct(bits: np.ndarray) -> tuple[list[int], np.ndarray]:
    """(the distinct bit vectors, ascending; each event's number among them).

    ``np.unique`` sorts (O(n log n), the largest cost of a selective batch);
    when the bit vectors are small integers, as they are for queries with
    few atoms, a presence table gives the same numbering in O(n).
    """
    if len(bits) and int(bits.max()) < DENSE_CODES:
        small = bits.astype(np.intp)
        present = np.bincount(small)
        uniq = np.flatnonzero(present)
        lut = np.zeros(len(present), dtype=np.intp)
        lut[uniq] = np.arange(len(uniq))
        return uniq.tolist(), lut[small]
    uniq, inverse = np.unique(bits, return_inverse=True)
    return uniq.tolist(), inverse.reshape(-1)


class Visits:
    """The skip tables and visit lists of one batch's candidates (bit vectors ``bits``)."""

    __slots__ = ("dfa", "skip_inert", "values", "inverse", "size", "tables", "lists", "arrays")

    def __init__(self, dfa: LazyDFA, bits: np.ndarray, skip_inert: bool) -> None:
        self.dfa = dfa
        self.skip_inert = skip_inert
        """False: nothing is skipped (every candidate is visited)."""
        self.values, self.inverse = distinct(bits)
        """The distinct bit vectors; each candidate's number among them (``np.intp``)."""
        self.size = len(bits)
        self.tables: dict[frozenset[int], list[bool]] = {}
        """Per set of active states: whether each distinct bit vector is skipped."""
        self.lists: dict[frozenset[int], list[int] | None] = {}
        """Per set of active states: the candidates it visits, ascending (None: most of them)."""
        self.arrays: dict[frozenset[int], np.ndarray] = {}
        """The same lists as numpy arrays (when there is a list)."""

    def skip_table(self, active: frozenset[int]) -> list[bool]:
        """For each distinct bit vector: True when it is inert for ``q0`` and every state of ``active``."""
        table = self.tables.get(active)
        if table is None:
            states = (0, *active)
            inert = self.dfa.inert
            skip = self.skip_inert
            table = [skip and all(inert(s, v) for s in states) for v in self.values]
            self.tables[active] = table
        return table

    def visits(self, active: frozenset[int]) -> list[int] | None:
        """Candidate numbers of the events not inert for ``active`` (None: most of them).

        One vectorized pass over the batch per distinct set of active
        states; when most events matter, checking each one is cheaper than
        jumping.
        """
        lists = self.lists
        if active in lists:
            return lists[active]
        if not self.skip_inert:
            return None
        relevant = ~np.array(self.skip_table(active), dtype=bool)
        found: list[int] | None = None
        if len(lists) < MAX_VISIT_LISTS:
            index = np.flatnonzero(relevant[self.inverse])
            if len(index) * 2 < self.size:
                found = index.tolist()
                self.arrays[active] = index
        lists[active] = found
        return found
