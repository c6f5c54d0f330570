"""Several inputs, each a stream, merged into one stream by time.

``FROM S1, S2`` reads the events of two streams as one stream (CORE paper
§2: the FROM streams "are logically merged into a single stream").  When the
streams arrive as separate inputs (files, tables, iterables of dicts),
:func:`merge_streams` interleaves them by time and, for each input given a
stream name, adds a column naming it, so that every event says which
stream it comes from (``stream_column`` of :func:`kleene.compile`).

The merge is **stable**: events are ordered by time, ties by input order
(the order in which the inputs are given), then by row order within the
input.  Each input is expected in time order; a row whose time is earlier
than an earlier row of the same input is placed where it arrived (as if it
had that input's latest time), so that the engine sees it out of order and
treats it as it treats any out-of-order row: a bad row under a time window,
or reordered by ``max_delay``.  A row whose time cannot be read is placed
the same way (the engine reports it when the query needs its time).

It is a streaming k-way merge: an input is read batch by batch, and rows are
released as soon as no other input can still produce an earlier row, so
memory stays that of the batches waiting for a slower input.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from kleene.io.sources import to_batches
from kleene.io.timecol import to_nanos
from kleene.language.errors import DataError, KleeneError

_LOWEST = np.iinfo(np.int64).min


class _Input:
    """One input being merged: its batches, its buffered rows and their merge keys."""

    def __init__(self, name: str | None, batches: Iterator[pa.RecordBatch]) -> None:
        self.name = name
        self.batches = batches
        self.done = False
        self.table: pa.Table | None = None
        self.keys = np.zeros(0, np.int64)
        self.latest = _LOWEST

    @property
    def empty(self) -> bool:
        return self.table is None or self.table.num_rows == 0

    def take(self, count: int) -> tuple[pa.Table, np.ndarray]:
        assert self.table is not None
        head, keys = self.table.slice(0, count), self.keys[:count]
        self.table, self.keys = self.table.slice(count), self.keys[count:]
        return head, keys


def merge_streams(
    inputs: Mapping[str, Any] | Sequence[tuple[str | None, Any]],
    *,
    time_column: str | None,
    time_unit: str = "s",
    stream_column: str = "stream",
) -> Iterator[pa.RecordBatch]:
    """Merge several inputs into one stream of RecordBatches, by time (stable).

    ``inputs`` maps stream names to sources (anything :meth:`kleene.Query.run`
    accepts), or is a list of ``(name, source)`` pairs where a name may be
    None for an input that already has ``stream_column``.  A named input
    gets ``stream_column`` added with its name (it must not have that column
    already).  Several inputs need ``time_column``; columns missing from an
    input are null in its rows.
    """
    pairs = list(inputs.items()) if isinstance(inputs, Mapping) else list(inputs)
    if not pairs:
        return
    if len(pairs) > 1 and time_column is None:
        raise KleeneError("several inputs are merged by time: give the time column")
    streams = [
        _Input(name, named_stream(name, to_batches(source), stream_column)) for name, source in pairs
    ]
    if len(streams) == 1:
        yield from streams[0].batches
        return
    assert time_column is not None
    while True:
        for s in streams:
            while s.empty and not s.done:
                _read(s, time_column, time_unit)
        live = [i for i, s in enumerate(streams) if not s.done]
        if not live:
            ready = [(i, s.take(s.table.num_rows)) for i, s in enumerate(streams) if not s.empty]  # type: ignore[union-attr]
            if ready:
                yield from _ordered(ready, [s.name for s in streams])
            return
        # No live input can produce a row with a key below its latest buffered key.
        low = min(int(streams[i].keys[-1]) for i in live)
        first = min(i for i in live if int(streams[i].keys[-1]) == low)
        ready = []
        for i, s in enumerate(streams):
            if s.empty:
                continue
            # Ties go to earlier inputs first.
            if i <= first:
                count = int(np.searchsorted(s.keys, low, side="right"))
            else:
                count = int(np.searchsorted(s.keys, low, side="left"))
            if count:
                ready.append((i, s.take(count)))
        if ready:
            yield from _ordered(ready, [s.name for s in streams])


def named_stream(
    name: str | None, batches: Iterator[pa.RecordBatch], column: str
) -> Iterator[pa.RecordBatch]:
    """Add the stream column with ``name`` to every batch of a named input."""
    for batch in batches:
        if name is None:
            yield batch
            continue
        if column in batch.schema.names:
            raise DataError(
                f"input {name!r} already has a column {column!r}; name the stream column "
                "differently or leave the input unnamed",
                column=column,
            )
        values = pa.array([name] * batch.num_rows, pa.string())
        yield pa.RecordBatch.from_arrays([*batch.columns, values], names=[*batch.schema.names, column])


def _read(s: _Input, time_column: str, time_unit: str) -> None:
    """Buffer the input's next batch with its merge keys (running maximum of its times)."""
    batch = next(s.batches, None)
    if batch is None:
        s.done = True
        return
    if batch.num_rows == 0:
        return
    if time_column not in batch.schema.names:
        where = f"input {s.name!r}" if s.name else "an input"
        raise DataError(f"{where} has no time column", column=time_column)
    times, bad = to_nanos(batch.column(time_column), time_unit)
    times = np.where(np.asarray(bad, dtype=bool), _LOWEST, np.asarray(times, dtype=np.int64))
    keys = np.maximum.accumulate(np.concatenate(([s.latest], times)))[1:]
    s.latest = int(keys[-1])
    table = pa.Table.from_batches([batch])
    if s.table is None or s.table.num_rows == 0:
        s.table, s.keys = table, keys
    else:
        s.table = _concat([s.table, table], [s.name])
        s.keys = np.concatenate((s.keys, keys))


def _ordered(
    ready: list[tuple[int, tuple[pa.Table, np.ndarray]]], names: list[str | None]
) -> Iterator[pa.RecordBatch]:
    """The ready rows of several inputs in (key, input, row) order."""
    tables = [t for _, (t, _) in ready]
    keys = np.concatenate([k for _, (_, k) in ready])
    which = np.concatenate([np.full(len(k), i, np.int64) for i, (_, k) in ready])
    order = np.lexsort((which, keys))  # stable: rows of one input keep their order
    merged = _concat(tables, [names[i] for i, _ in ready])
    yield from merged.take(pa.array(order)).combine_chunks().to_batches()


def _concat(tables: list[pa.Table], names: list[str | None]) -> pa.Table:
    try:
        return pa.concat_tables(_same_zones(tables), promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        shown = ", ".join(repr(n) for n in names if n) or "the inputs"
        raise DataError(f"the columns of {shown} do not fit together: {exc}") from None


def _same_zones(tables: list[pa.Table]) -> list[pa.Table]:
    """Zoned timestamps of one column in the first table's zone: the same instants.

    Inputs from different producers name one zone differently (DuckDB's
    ``Etc/UTC``, Python's ``UTC``) or use different zones; Arrow refuses to
    concatenate those, though each value is an instant.
    """
    zones: dict[str, pa.DataType] = {}
    for table in tables:
        for field in table.schema:
            if pa.types.is_timestamp(field.type) and field.type.tz is not None:
                zones.setdefault(field.name, field.type)
    out = []
    for table in tables:
        schema = table.schema
        for i, field in enumerate(schema):
            want = zones.get(field.name)
            t = field.type
            if want is not None and pa.types.is_timestamp(t) and t.tz is not None and t.tz != want.tz:
                schema = schema.set(i, field.with_type(pa.timestamp(t.unit, want.tz)))
        out.append(table if schema.equals(table.schema) else table.cast(schema))
    return out
