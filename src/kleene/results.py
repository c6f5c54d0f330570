"""What a query gives back: complex events, one by one or in columns.

:class:`Match` (positions only), :class:`QueryMatch` (with its query's name)
and :class:`ComplexEvent` (with the events' data) are the readable results of
:meth:`kleene.Query.matches` and :meth:`kleene.Query.run`.

The bulk path: :meth:`kleene.Query.match_batches` yields one :class:`MatchBatch` per input
batch: the complex events that batch completed, as numpy columns (start,
end, offsets into one flat array of positions, partition keys), with no
Python object per complex event.  The engine fills them through
:class:`~kleene.runtime.enumeration.Columns`, the same walk of the tECS as the
readable path (:meth:`kleene.Query.matches`), so both give exactly the same
complex events in the same order.

With ``events=True`` a batch also keeps :class:`EventRows`: references to the
stored input batches its events come from.  Their data is then *gathered*
column by column (``pyarrow.Table.take`` on the input rows) instead of being
copied into one dict per event: :meth:`MatchBatch.to_arrow` builds
``events`` as a list of structs, and :func:`kleene.io.jsonl_bulk.json_lines`
renders each input row as JSON once and joins the rows of every complex
event with Arrow's string kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.runtime.enumeration import Columns
from kleene.runtime.store import Stored

_EMPTY = np.zeros(0, dtype=np.int64)

FEW_ROWS = 16
"""Events under 1/16 of the stored rows are rendered alone (see :meth:`EventRows.rendered`)."""


class Match(NamedTuple):
    """A complex event without its events' data: what the engine produces."""

    start: int
    end: int
    positions: tuple[int, ...]
    partition: Hashable


class QueryMatch(NamedTuple):
    """A :class:`Match` and the name of its query, when several queries run together."""

    query: str
    start: int
    end: int
    positions: tuple[int, ...]
    partition: Hashable


@dataclass(frozen=True, slots=True)
class ComplexEvent:
    """A complex event: its interval, its positions and its events' data.

    ``start`` and ``end`` are the 0-based input positions of its interval,
    ``positions`` the sorted input positions of its events, ``events`` their
    attributes (with the event type under the type column's name),
    ``partition`` the PARTITION BY key (None without PARTITION BY),
    ``query`` the name of the query that found it when several queries run
    together (:func:`kleene.compile_many`; None for a single query), and
    ``partition_by`` the PARTITION BY attributes, which name the key's values
    in :meth:`to_dict` (not compared: the query fixes them).
    """

    start: int
    end: int
    positions: tuple[int, ...]
    events: tuple[dict[str, Any], ...]
    partition: tuple[Any, ...] | None = None
    query: str | None = None
    partition_by: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict: ``partition`` is an object keyed by the PARTITION BY attributes
        (``{"name": "MSFT"}``), as Parquet's struct."""
        out: dict[str, Any] = {} if self.query is None else {"query": self.query}
        out |= {
            "start": self.start,
            "end": self.end,
            "positions": list(self.positions),
            "events": [dict(e) for e in self.events],
        }
        if self.partition is not None:
            out["partition"] = dict(zip(partition_labels(self.partition_by, len(self.partition)),
                                        self.partition))
        return out


def partition_labels(names: Sequence[str], width: int) -> list[str]:
    """The names of a partition key's values: the PARTITION BY attributes, else ``key0``, ...

    One rule for the JSON object and the Arrow struct, so both name a key alike.
    """
    return list(names) if len(names) == width else [f"key{i}" for i in range(width)]


class EventRows:
    """The events' data of a batch of complex events: the stored input batches holding them.

    ``columns`` is the projection (the type column, then ``SELECT a[x, y]``'s
    attributes; a column the input lacks comes out null), None for every
    column: exactly the fields of :attr:`kleene.ComplexEvent.events`.
    """

    def __init__(self, stored: list[Stored], columns: tuple[str, ...] | None) -> None:
        self.stored = stored
        self.columns = None if columns is None else tuple(dict.fromkeys(columns))
        self._positions = (
            np.concatenate([s.positions for s in stored]) if stored else _EMPTY
        )
        self._table: pa.Table | None = None

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """Row numbers (in :meth:`table`) of the events at ``positions``."""
        rows = np.searchsorted(self._positions, positions)
        if len(rows) and (
            rows.max() >= len(self._positions) or (self._positions[rows] != positions).any()
        ):
            raise KeyError("a complex event refers to an event that is no longer stored")
        return rows

    def project(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self.columns is None:
            return batch
        names = batch.schema.names
        arrays = [
            batch.column(c) if c in names else pa.nulls(batch.num_rows) for c in self.columns
        ]
        return pa.RecordBatch.from_arrays(arrays, names=list(self.columns))

    def __len__(self) -> int:
        """How many input rows are stored (the rows :meth:`rows` indexes)."""
        return len(self._positions)

    def table(self) -> pa.Table:
        """The stored events (projected), one table, in position order."""
        if self._table is None:
            batches = [self.project(s.batch) for s in self.stored]
            if not batches:
                self._table = pa.table({c: pa.nulls(0) for c in self.columns or ()})
            elif all(b.schema.equals(batches[0].schema) for b in batches):
                self._table = pa.Table.from_batches(batches)
            else:
                self._table = pa.concat_tables(
                    [pa.Table.from_batches([b]) for b in batches], promote_options="permissive"
                )
        return self._table

    def take(self, positions: np.ndarray) -> pa.Table:
        """The events at ``positions`` (one row each, repeats allowed)."""
        return pc.take(self.table(), self.rows(positions))

    def values(self, column: str, positions: np.ndarray) -> pa.Array:
        """Column ``column`` of the stored events at ``positions``, whatever the projection
        (the time of a complex event's first and last event).  Nulls where absent."""
        arrays = []
        for s in self.stored:
            names = s.batch.schema.names
            values = s.batch.column(column) if column in names else pa.nulls(s.batch.num_rows)
            if pa.types.is_dictionary(values.type):  # a column read as dictionary (pushdown)
                values = values.dictionary_decode()
            arrays.append(values)
        typed = [a.type for a in arrays if not pa.types.is_null(a.type)]
        if not typed:
            return pa.nulls(len(positions))
        arrays = [a.cast(typed[0]) for a in arrays]
        return pa.chunked_array(arrays, typed[0]).take(self.rows(positions)).combine_chunks()

    def rendered(
        self,
        key: Hashable,
        make: Callable[[pa.RecordBatch], tuple[pa.Array, ...]],
        positions: np.ndarray,
    ) -> tuple[tuple[pa.Array, ...], np.ndarray]:
        """``make`` applied to the rows the events at ``positions`` need, and each event's row there.

        Few events among many stored rows (a selective query: tens of complex
        events in batches of 65,536 rows) render just their rows, uncached;
        otherwise every stored row is rendered once (:meth:`derived`) and
        reused, since events recur across complex events and output batches.
        """
        rows = self.rows(positions)
        if 0 < len(rows) and len(rows) * FEW_ROWS < len(self):
            needed, index = np.unique(rows, return_inverse=True)
            picked = pc.take(self.table(), needed).combine_chunks()
            return make(picked.to_batches()[0]), index.reshape(-1)
        return self.derived(key, make), rows

    def derived(
        self, key: Hashable, make: Callable[[pa.RecordBatch], tuple[pa.Array, ...]]
    ) -> tuple[pa.Array, ...]:
        """``make(projected batch)`` for every stored batch, concatenated array by array.

        Computed once per stored batch: complex events share events (an event
        is in many of them) and stored batches outlive many output batches, so
        per-row work such as rendering a row as JSON is done once per input
        row, not once per use.
        """
        full = (key, self.columns)
        parts = []
        for s in self.stored:
            arrays = s.derived.get(full)
            if arrays is None:
                arrays = s.derived[full] = make(self.project(s.batch))
            parts.append(arrays)
        if len(parts) == 1:
            return tuple(parts[0])
        return tuple(pa.concat_arrays(list(column)) for column in zip(*parts))


class MatchBatch:
    """Complex events as columns: ``start``, ``end``, ``offsets`` into ``positions``.

    The ``i``-th complex event is ``(start[i], end[i], positions[offsets[i]:offsets[i + 1]])``
    (positions ascending), with PARTITION BY key ``partition[i]`` (``partition`` is
    None without PARTITION BY) and query name ``query[i]`` (``query`` is None for a
    single query).  ``events`` gives the events' data (None when not asked for).
    """

    __slots__ = ("start", "end", "offsets", "positions", "partition", "query", "events",
                 "partition_names", "_parts", "_order")

    def __init__(
        self,
        start: np.ndarray,
        end: np.ndarray,
        offsets: np.ndarray,
        positions: np.ndarray,
        partition: list[Hashable] | None = None,
        query: list[str] | None = None,
        events: EventRows | None = None,
        partition_names: tuple[str, ...] = (),
    ) -> None:
        self.start = start
        self.end = end
        self.offsets = offsets
        self.positions = positions
        self.partition = partition
        self.query = query
        self.events = events
        self.partition_names = partition_names
        self._parts: list[MatchBatch] | None = None
        self._order: np.ndarray | None = None

    @classmethod
    def from_columns(
        cls,
        cols: Columns,
        *,
        name: str | None = None,
        events: EventRows | None = None,
        partition_names: tuple[str, ...] = (),
    ) -> MatchBatch:
        n = len(cols.starts)
        counts = np.frombuffer(cols.run_counts, dtype=np.int64)
        lengths = np.frombuffer(cols.lengths, dtype=np.int64).copy()
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.frombuffer(cols.flat, dtype=np.int64).copy()
        runs_ascending = np.zeros(len(counts), dtype=bool)
        runs_ascending[np.frombuffer(cols.found_runs, dtype=np.int64)] = True
        if len(flat) and not cols.found_runs:
            # The walk met each complex event's positions latest first: element
            # k of event i goes to offsets[i] + offsets[i + 1] - 1 - k, one gather.
            base = offsets[:-1] + offsets[1:] - 1
            flat = flat[np.repeat(base, lengths) - np.arange(len(flat), dtype=np.int64)]
        elif len(flat) and not runs_ascending.all():
            ascending = np.repeat(runs_ascending, counts)
            owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
            k = np.arange(len(flat), dtype=np.int64)
            reverse = offsets[owner] + offsets[owner + 1] - 1 - k
            flat = flat[np.where(ascending[owner], k, reverse)]
        keys = cols.run_keys
        partition: list[Hashable] | None = None
        if keys.count(None) < len(keys):  # a key somewhere (counted in C: a run per end)
            partition = [k for k, c in zip(keys, cols.run_counts) for k in repeat(k, c)]
        return cls(
            np.frombuffer(cols.starts, dtype=np.int64).copy(),
            np.repeat(np.frombuffer(cols.run_ends, dtype=np.int64), counts),
            offsets,
            flat,
            partition,
            None if name is None else [name] * n,
            events,
            partition_names,
        )

    @classmethod
    def merge(cls, parts: Sequence[MatchBatch]) -> MatchBatch:
        """One batch in order of end; at one end, in the order of ``parts`` (stable)."""
        parts = [p for p in parts if len(p)]
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls(_EMPTY, _EMPTY, np.zeros(1, np.int64), _EMPTY)
        order = np.argsort(np.concatenate([p.end for p in parts]), kind="stable")
        lengths = np.concatenate([np.diff(p.offsets) for p in parts])
        bases = np.cumsum([0] + [len(p.positions) for p in parts[:-1]])
        starts_at = np.concatenate([p.offsets[:-1] + b for p, b in zip(parts, bases)])
        flat = np.concatenate([p.positions for p in parts])
        offsets, positions = ragged_take(starts_at, lengths, flat, order)
        partition = None
        if any(p.partition is not None for p in parts):
            keys = [k for p in parts for k in (p.partition or [None] * len(p))]
            partition = [keys[i] for i in order.tolist()]
        query = None
        if any(p.query is not None for p in parts):
            names = [q for p in parts for q in (p.query or [None] * len(p))]  # type: ignore[list-item]
            query = [names[i] for i in order.tolist()]
        out = cls(
            np.concatenate([p.start for p in parts])[order],
            np.concatenate([p.end for p in parts])[order],
            offsets,
            positions,
            partition,
            query,
        )
        out._parts = parts
        out._order = order
        return out

    def __len__(self) -> int:
        return len(self.start)

    @property
    def merged(self) -> bool:
        """True for a batch :meth:`merge` made of several (their rows interleave by end)."""
        return self._parts is not None

    @property
    def has_events(self) -> bool:
        if self._parts is not None:
            return all(p.has_events for p in self._parts)
        return self.events is not None

    def matches(self) -> list[Any]:
        """The readable form: one :class:`kleene.Match` (or ``QueryMatch``) per complex event."""
        flat = self.positions.tolist()
        bounds = self.offsets.tolist()
        keys = self.partition or repeat(None)
        items = zip(self.start.tolist(), self.end.tolist(), bounds, bounds[1:], keys)
        if self.query is None:
            return [Match(s, e, tuple(flat[a:b]), k) for s, e, a, b, k in items]
        return [
            QueryMatch(q, s, e, tuple(flat[a:b]), k)
            for q, (s, e, a, b, k) in zip(self.query, items)
        ]

    def first_last(self, column: str) -> tuple[pa.Array, pa.Array]:
        """Column ``column`` (the time) of each complex event's first and last event, null for a
        complex event without events; needs the events' data (``events=True``)."""
        if self._parts is not None:
            assert self._order is not None
            pairs = [p.first_last(column) for p in self._parts]
            order = pa.array(self._order)
            typed = [a.type for a, _ in pairs if not pa.types.is_null(a.type)]
            typ = typed[0] if typed else pa.null()
            return tuple(
                pa.concat_arrays([pair[i].cast(typ) for pair in pairs]).take(order) for i in (0, 1)
            )
        if self.events is None:
            raise ValueError("the times of complex events need their events' data (events=True)")
        lengths = np.diff(self.offsets)
        empty = lengths == 0
        bounds = (np.where(empty, 0, self.offsets[:-1]), np.where(empty, 0, self.offsets[1:] - 1))
        out = []
        for index in bounds:
            wanted = self.positions[index[~empty]] if len(self.positions) else _EMPTY
            got = self.events.values(column, wanted)
            if empty.any():
                slots = np.cumsum(~empty) - 1
                got = got.take(pa.array(np.where(empty, 0, slots), mask=empty))
            out.append(got)
        return out[0], out[1]

    def drop_events(self) -> None:
        """Forget the events' data (of every part of a merged batch too): :meth:`to_arrow` then
        leaves ``events`` out."""
        self.events = None
        for part in self._parts or ():
            part.drop_events()

    def positions_list(self) -> pa.Array:
        """``positions`` as an Arrow ``list<int64>`` array, one list per complex event."""
        return pa.ListArray.from_arrays(
            pa.array(self.offsets.astype(np.int32)), pa.array(self.positions)
        )

    def render(self, make: Callable[[MatchBatch], pa.Array]) -> pa.Array:
        """``make(self)``, one value per complex event; a merged batch renders its parts."""
        if self._parts is None:
            return make(self)
        assert self._order is not None
        return pa.concat_arrays([make(p) for p in self._parts]).take(pa.array(self._order))

    def to_arrow(self) -> pa.RecordBatch:
        """Columns ``query`` (several queries), ``start``, ``end``, ``positions`` (list<int64>),
        ``events`` (list of structs, when the batch has its events' data) and ``partition``
        (a struct of the PARTITION BY attributes, under PARTITION BY)."""
        if self._parts is not None:
            assert self._order is not None
            tables = [pa.Table.from_batches([p.to_arrow()]) for p in self._parts]
            table = pa.concat_tables(tables, promote_options="permissive")
            return table.take(pa.array(self._order)).combine_chunks().to_batches()[0]
        names: list[str] = []
        arrays: list[pa.Array] = []
        if self.query is not None:
            names.append("query")
            arrays.append(pa.array(self.query, pa.string()))
        names += ["start", "end", "positions"]
        arrays += [pa.array(self.start), pa.array(self.end), self.positions_list()]
        if self.events is not None:
            table = self.events.take(self.positions).combine_chunks()
            struct = pa.StructArray.from_arrays(
                [c.chunk(0) if c.num_chunks else pa.nulls(0, c.type) for c in table.columns],
                names=table.schema.names,
            ) if table.num_columns else pa.array([{}] * table.num_rows, pa.struct([]))
            names.append("events")
            arrays.append(pa.ListArray.from_arrays(pa.array(self.offsets.astype(np.int32)), struct))
        if self.partition is not None:
            names.append("partition")
            arrays.append(_partition_array(self.partition, self.partition_names))
        if not len(self):
            arrays = [a.slice(0, 0) for a in arrays]
        return pa.RecordBatch.from_arrays(arrays, names=names)


def _partition_array(keys: list[Hashable], names: tuple[str, ...]) -> pa.Array:
    width = len(names) or max((len(k) for k in keys if isinstance(k, tuple)), default=0)
    labels = partition_labels(names, width)
    fields = [
        pa.array([None if k is None else k[i] for k in keys])  # type: ignore[index]
        for i in range(width)
    ]
    mask = pa.array([k is None for k in keys])
    return pa.StructArray.from_arrays(fields, names=labels, mask=mask)


def ragged_take(
    starts_at: np.ndarray, lengths: np.ndarray, flat: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Reorder ragged rows (row ``i`` is ``flat[starts_at[i]:starts_at[i] + lengths[i]]``).

    Returns the new offsets and flat values of rows ``order[0], order[1], ...``.
    """
    taken = lengths[order]
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(taken, out=offsets[1:])
    index = np.repeat(starts_at[order] - offsets[:-1], taken) + np.arange(offsets[-1])
    return offsets, flat[index]
