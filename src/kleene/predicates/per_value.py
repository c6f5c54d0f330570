"""Predicates on string columns, evaluated once per distinct combination of values.

A predicate that reads only string columns has the same value on every row
with the same values of those columns, and string columns repeat few values
(event names, codes, symbols).  :class:`PerValue` evaluates such predicates
on the distinct combinations only and spreads their bits over the rows with
one gather; it keeps the values seen in earlier batches numbered
(:class:`_SeenValues`), so the bits of a combination are computed once per
table, not once per batch.  The table
(:class:`~kleene.predicates.table.PredicateTable`) evaluates the other
predicates over the whole batch, and these too when the combinations are
too many.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.predicates.nodes import Ctx, Node
from kleene.predicates.values import dict_parts, is_string

PER_VALUE_COMBINATIONS = 1 << 16
"""At most this many combinations of distinct values (nulls included) are evaluated per batch."""

PER_VALUE_GROUP = 4
"""Predicates reading several plain string columns go per combination when at least this many
do (dictionary-encoded columns always do: numbering their rows costs one gather per column)."""


class PerValue:
    """The per-value evaluation of a :class:`~kleene.predicates.table.PredicateTable`'s predicates.

    ``by_columns`` groups the predicates (their indices ``k``) by the
    attributes they read; ``roots``, ``slots`` and ``shifts`` are the table's
    compiled predicates, its memo size and each predicate's bit.
    """

    def __init__(
        self,
        by_columns: dict[tuple[str, ...], list[int]],
        roots: Sequence[Node],
        slots: int,
        shifts: Sequence[np.uint64],
    ) -> None:
        self.by_columns = by_columns
        self.roots = roots
        self.slots = slots
        self.shifts = shifts
        self.seen: dict[str, _SeenValues | None] = {}
        """Per string column, the values seen so far (None: too many to number)."""
        self.tables: dict[tuple[str, ...], tuple[list[int], np.ndarray]] = {}
        """Per group of columns, the bits of every combination of their values seen so far
        (and how many values each column had then)."""

    def evaluate(self, batch: pa.RecordBatch, out: np.ndarray) -> set[int]:
        """Set the bits of the predicates on string columns from their distinct values.

        Such a predicate's value on a row depends on the row's values of its
        columns only.  So the predicates reading the same string columns are
        evaluated on a small batch of the distinct combinations of those
        columns' values (a null is one more value), their bits are combined
        per combination, and one gather spreads them over the rows: one pass
        over the batch for all of them, instead of several passes each.
        Only when the combinations are few (:data:`PER_VALUE_COMBINATIONS`).
        The values are numbered across batches (:class:`_SeenValues`), so the
        bits of every combination are computed once, and again only when a
        new value appears: each Parquet row group (and each CSV batch) brings
        its own dictionary, mostly of the same values in another order.
        Returns the predicates done here.
        """
        done: set[int] = set()
        n = batch.num_rows
        numbered: dict[str, np.ndarray | None] = {}  # per column, its dictionary's value numbers
        encoded: dict[str, tuple[pa.Array, np.ndarray, np.ndarray | None]] = {}

        def parts(name: str, col: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
            if name not in encoded:
                encoded[name] = dict_parts(col)
            return encoded[name]

        def entries(name: str, col: pa.Array) -> np.ndarray | None:
            if name not in numbered:
                seen = self.seen[name] if name in self.seen else _SeenValues.empty()
                dictionary = col.dictionary if pa.types.is_dictionary(col.type) else parts(name, col)[0]
                numbered[name] = None if seen is None else seen.entries(dictionary)
                self.seen[name] = None if numbered[name] is None else seen
            return numbered[name]

        for names, ks in self.by_columns.items():
            cols = [_per_value_column(batch, name, len(ks) > 1 or len(names) > 1) for name in names]
            if any(c is None for c in cols):
                continue
            dictionaries = all(pa.types.is_dictionary(c.type) for c in cols)  # type: ignore[union-attr]
            if len(ks) < PER_VALUE_GROUP and len(names) > 1 and not dictionaries:
                continue  # a few predicates on plain strings: comparing each column is cheaper
            if len(names) == 1 and dictionaries and len(cols[0].dictionary) > 2 * n + 64:  # type: ignore[union-attr]
                continue  # more values than rows: compare the rows
            numbers = [entries(name, c) for name, c in zip(names, cols)]
            if all(e is not None for e in numbers):
                seen = [self.seen[name] for name in names]
                sizes = [len(v.values) + 1 for v in seen]  # type: ignore[union-attr]
                if math.prod(sizes) <= min(PER_VALUE_COMBINATIONS, 4 * n):
                    # Every combination of the values seen so far, kept for later batches.
                    cached = self.tables.get(names)
                    if cached is None or cached[0] != sizes:
                        columns = [v.column() for v in seen]  # type: ignore[union-attr]
                        cached = self.tables[names] = (sizes, self._bits_of(names, ks, columns, np.arange(math.prod(sizes))))
                    out |= _spread(cached[1], sizes, names, cols, numbers, parts, n)  # type: ignore[arg-type]
                    done.update(ks)
                    continue
            # Only the combinations present in this batch.
            split = [parts(name, c) for name, c in zip(names, cols)]
            sizes = [len(d) + 1 for d, _, _ in split]  # + 1: the null slot
            if math.prod(sizes) > PER_VALUE_COMBINATIONS:
                continue
            combined = _combine(
                [idx if valid is None else np.where(valid, idx, len(d)) for d, idx, valid in split], sizes
            )
            present = np.flatnonzero(np.bincount(combined, minlength=math.prod(sizes)))
            lut = np.zeros(math.prod(sizes), dtype=np.intp)
            lut[present] = np.arange(len(present))
            values = [pa.concat_arrays([d.cast(pa.large_string()), pa.nulls(1, pa.large_string())]) for d, _, _ in split]
            out |= self._bits_of(names, ks, values, present)[lut[combined]]
            done.update(ks)
        return done

    def _bits_of(
        self, names: tuple[str, ...], ks: list[int], values: list[pa.Array], combinations: np.ndarray
    ) -> np.ndarray:
        """The bits of predicates ``ks`` on the given combinations of the columns' ``values``.

        A combination is a number in the mixed radix of the value counts (the
        last column varies fastest); each column's last value is its null.
        """
        rows, rest = [], combinations
        for column in values[::-1]:
            rows.append(rest % len(column))
            rest = rest // len(column)
        rows.reverse()
        # Dictionary columns over the values: the predicates compare each
        # distinct value once, as they do on a dictionary-encoded batch.
        mini = [pa.DictionaryArray.from_arrays(pa.array(r, pa.int32()), v) for r, v in zip(rows, values)]
        ctx = Ctx(pa.record_batch(mini, names=list(names)), self.slots)
        table = np.zeros(len(combinations), np.uint64)
        for k in ks:
            table |= self.roots[k].get(ctx).astype(np.uint64) << self.shifts[k]
        return table


def _spread(
    table: np.ndarray,
    sizes: list[int],
    names: tuple[str, ...],
    cols: list[pa.Array],
    numbers: list[np.ndarray],
    parts: Callable[[str, pa.Array], tuple[pa.Array, np.ndarray, np.ndarray | None]],
    n: int,
) -> np.ndarray:
    """Each row's bits from ``table`` (bits per combination of value numbers, radix ``sizes``).

    Dictionary columns without nulls go through a small table over the
    combinations of their dictionaries' entries, indexed by the rows' raw
    dictionary indices: one gather per row instead of one per column and row.
    """
    if all(pa.types.is_dictionary(c.type) and not c.null_count and not c.dictionary.null_count for c in cols):
        lens = [len(c.dictionary) for c in cols]
        if math.prod(lens) <= 4 * n:
            grid = numbers[0][: lens[0]]
            for size, e, k in zip(sizes[1:], numbers[1:], lens[1:]):
                grid = (grid[:, None] * size + e[None, :k]).reshape(-1)
            raw = [np.asarray(c.indices) for c in cols]
            return table[grid][_combine(raw, lens)]
    codes = []
    for name, c, e in zip(names, cols, numbers):  # per row: its entry's number (the null's if invalid)
        _, idx, valid = parts(name, c)
        codes.append(e[idx if valid is None else np.where(valid, idx, len(e) - 1)])
    return table[_combine(codes, sizes)]


def _combine(codes: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """Per row, the number of its combination of column codes (mixed radix ``sizes``)."""
    combined = codes[0]
    for size, c in zip(sizes[1:], codes[1:]):
        combined = combined * size + c
    return combined


@dataclass(slots=True)
class _SeenValues:
    """The distinct values seen in one string column, numbered in order of appearance.

    Batches number a column's values differently (a Parquet row group, a CSV
    batch: each has its own dictionary); mapping each batch's dictionary onto
    these numbers (a lookup of its few entries) lets the bits computed for
    every combination of values (``PerValue.tables``) serve every
    batch.  A null is numbered after the values.
    """

    values: pa.Array
    """The values seen (large strings), in order of first appearance."""
    last: tuple[pa.Array, np.ndarray] | None = None
    """The latest dictionary and the numbers of its entries: batches of one Parquet row group
    share a dictionary."""

    @classmethod
    def empty(cls) -> _SeenValues:
        return cls(pa.array([], pa.large_string()))

    def column(self) -> pa.Array:
        """The values, then the null."""
        return pa.concat_arrays([self.values, pa.nulls(1, pa.large_string())])

    def entries(self, d: pa.Array) -> np.ndarray | None:
        """The number of each entry of dictionary ``d``, then the null's; new values are numbered
        first.  None when the values would pass :data:`PER_VALUE_COMBINATIONS`."""
        last = self.last
        if last is not None and (last[0] is d or last[0].equals(d)):
            return last[1]
        large = d.cast(pa.large_string())
        pos = pc.index_in(large, value_set=self.values)
        if pos.null_count > large.null_count:  # values not seen before
            new = pc.unique(large.filter(pc.and_(pos.is_null(), large.is_valid())))
            self.values = pa.concat_arrays([self.values, new])
            if len(self.values) >= PER_VALUE_COMBINATIONS:
                return None
            pos = pc.index_in(large, value_set=self.values)
        null = len(self.values)
        number = np.append(np.asarray(pos.fill_null(null)).astype(np.intp), null)
        self.last = (d, number)
        return number


def _per_value_column(batch: pa.RecordBatch, name: str, several: bool) -> pa.Array | None:
    """The string column ``name`` if it pays to evaluate its predicates per distinct value."""
    i = batch.schema.get_field_index(name)
    if i < 0:
        return None
    col = batch.column(i)
    t = col.type
    if pa.types.is_dictionary(t):
        return col if is_string(t.value_type) else None
    return col if several and is_string(t) else None

