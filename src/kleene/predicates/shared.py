"""One predicate evaluation for several queries: the union of their atoms, bits remapped per query.

Each query numbers its atoms (:class:`~kleene.predicates.atoms.Atoms`):
event types, then unary predicates, then streams.  Queries over one stream
often test the same atoms (``BUY``, ``price > 100``), so evaluating each
query's table separately would repeat that work.  :class:`SharedPredicates`
builds the union of the atoms of all queries, deduplicated structurally (an
atom's key is :meth:`Atoms.keys`: ``b = true`` and ``b = 1`` stay two
atoms), evaluates it once per batch, vectorized, and hands each query its
own bit vectors.

The union may need more than the 64 bits of one word: it is then cut into
several :class:`~kleene.predicates.table.PredicateTable`\\ s of at most
64 atoms each (each still evaluated once).  A query's bit ``i`` comes from
bit ``b`` of word ``w``; bits that move by the same shift out of the same
word are moved together, so remapping costs one masked shift per
(word, shift) group, not one operation per bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from kleene.language import ast
from kleene.predicates.atoms import Atoms
from kleene.predicates.table import MAX_WIDTH, PredicateTable

Remap = tuple[tuple[int, int, np.uint64], ...]
"""Per query: ``(word, shift, mask)`` groups; query bits = OR of ``(word & mask) >> shift``."""


class SharedPredicates:
    """The atoms of several queries, evaluated once per batch."""

    def __init__(
        self,
        atoms: Sequence[Atoms],
        *,
        type_column: str = "type",
        stream_column: str | None = None,
    ) -> None:
        # The union, in order of first appearance: one entry per distinct key.
        union: dict[tuple[str, object], tuple[str, str | ast.Pred]] = {}
        for a in atoms:
            for key, atom in zip(a.keys(), _atoms_of(a), strict=True):
                union.setdefault(key, atom)
        keys = list(union)
        # Cut into words of at most 64 atoms; inside a word the table's layout
        # is types, predicates, streams.
        self.tables: list[PredicateTable] = []
        where: dict[tuple[str, object], tuple[int, int]] = {}
        for w, lo in enumerate(range(0, max(len(keys), 1), MAX_WIDTH)):
            chunk = keys[lo : lo + MAX_WIDTH]
            types = [str(union[k][1]) for k in chunk if k[0] == "type"]
            preds = [union[k][1] for k in chunk if k[0] == "pred"]
            streams = [str(union[k][1]) for k in chunk if k[0] == "stream"]
            table = PredicateTable(
                types,
                preds,  # type: ignore[arg-type]
                type_column=type_column,
                streams=streams,
                stream_column=stream_column if streams else None,
            )
            self.tables.append(table)
            ordered = (
                [k for k in chunk if k[0] == "type"]
                + [k for k in chunk if k[0] == "pred"]
                + [k for k in chunk if k[0] == "stream"]
            )
            for bit, k in enumerate(ordered):
                where[k] = (w, bit)
        self.width = len(keys)
        """Distinct atoms over all queries (each evaluated once per batch)."""
        self.remaps: list[Remap] = [self._remap(a, where) for a in atoms]

    @staticmethod
    def _remap(a: Atoms, where: dict[tuple[str, object], tuple[int, int]]) -> Remap:
        groups: dict[tuple[int, int], int] = {}
        for i, key in enumerate(a.keys()):
            w, b = where[key]
            groups[(w, b - i)] = groups.get((w, b - i), 0) | (1 << b)
        return tuple((w, shift, np.uint64(mask)) for (w, shift), mask in sorted(groups.items()))

    @property
    def evaluations(self) -> int:
        """Batches evaluated so far (every word is evaluated once per batch)."""
        return self.tables[0].evaluations

    def evaluate(self, batch: pa.RecordBatch) -> list[np.ndarray]:
        """Each query's bit vectors (one uint64 per row), in the order of ``atoms``."""
        words = [t.evaluate(batch) for t in self.tables]
        out: list[np.ndarray] = []
        for remap in self.remaps:
            if len(remap) == 1 and remap[0][1] == 0:
                w, _, mask = remap[0]
                everything = (1 << self.tables[w].width) - 1
                out.append(words[w] if int(mask) == everything else words[w] & mask)
                continue
            bits = np.zeros(batch.num_rows, np.uint64)
            for w, shift, mask in remap:
                moved = words[w] & mask
                if shift > 0:
                    moved >>= np.uint64(shift)
                elif shift < 0:
                    moved <<= np.uint64(-shift)
                bits |= moved
            out.append(bits)
        return out


def _atoms_of(a: Atoms) -> list[tuple[str, str | ast.Pred]]:
    """The atoms of ``a`` in bit order, as (kind, value) pairs matching :meth:`Atoms.keys`."""
    out: list[tuple[str, str | ast.Pred]] = [("type", t) for t in a.event_types]
    out.extend(("pred", p) for p in a.preds)
    out.extend(("stream", s) for s in a.streams)
    return out
