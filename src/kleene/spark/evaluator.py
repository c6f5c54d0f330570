"""The executors' side of :func:`kleene.spark.detect`: engine sessions fed in position order.

:class:`Evaluator` is the ``mapInArrow`` function of every plan; :class:`KeysOfTask` the
one of the ``task_reader`` route (each task reads every row and keeps its keys).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kleene
from kleene.language.schema import Schema
from kleene.options import InputOptions
from kleene.spark.schema import POS

__all__ = ["Evaluator", "KeysOfTask", "key_hashes"]


class Evaluator:
    """The ``mapInArrow`` function: feeds sessions, one per key (or range), in position order.

    A module-level class, so that cloudpickle ships it by reference plus its
    plain attributes; the query is recompiled from its text on the executor.
    """

    def __init__(
        self,
        *,
        text: str,
        schema: Schema | None,
        options: InputOptions,
        columns: list[str],
        mode: str,
        key_columns: list[str],
        range_starts: list[tuple[int, float]] | None,
        query_id: str,
        out_schema: pa.Schema,
    ) -> None:
        self.text = text
        self.schema = schema
        self.options = options
        self.time_column = options.time_column
        self.columns = columns
        self.mode = mode
        self.key_columns = key_columns
        self.range_first = [p for p, _ in range_starts] if range_starts else None
        self.query_id = query_id
        self.out_schema = out_schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        query = kleene.compile(self.text, self.schema, options=self.options)
        keyed = self.mode == "ranges"
        session = query.session()
        current: Any = object()  # no key equals it
        for batch in batches:
            if batch.num_rows == 0:
                continue
            positions = batch.column(POS).to_numpy(zero_copy_only=False).astype(np.int64)
            data = pa.RecordBatch.from_arrays(
                [batch.column(c) for c in self.columns], names=self.columns
            )
            if keyed:
                key_arrays = [batch.column(c) for c in self.key_columns]
                bounds = _segments(key_arrays)
            else:
                key_arrays, bounds = [], [0, batch.num_rows]
            out: list[pa.RecordBatch] = []
            for s, e in zip(bounds[:-1], bounds[1:]):
                if keyed:
                    key = tuple(a[s].as_py() for a in key_arrays)
                    if key != current:
                        # Sorted input: this key (or range) never comes back.
                        session, current = query.session(), key
                first_own = None
                if self.range_first is not None:
                    first_own = self.range_first[current[0]]
                # The bulk path: complex events in columns, no Python object per event.
                for found in session.feed_columns(data.slice(s, e - s), events=True, positions=positions[s:e]):
                    rows = found.to_arrow()
                    if first_own is not None:
                        # ends in the overlap: the previous range emits it
                        rows = rows.filter(pc.greater_equal(rows.column("end"), first_own))
                    if rows.num_rows:
                        out.append(self._batch(rows))
            yield from out

    def _batch(self, found: pa.RecordBatch) -> pa.RecordBatch:
        """The engine's columns (:meth:`~kleene.results.MatchBatch.to_arrow`) in :func:`output_schema`.

        Events get every input column in the input's types (a column outside
        ``SELECT a[x, y]`` is null); start and end times are the first and
        last events' times.
        """
        schema = self.out_schema
        n = found.num_rows
        names = found.schema.names
        events = found.column("events")
        event_type = schema.field("events").type.value_type
        flat = events.flatten()
        fields = []
        for f in event_type:
            index = flat.type.get_field_index(f.name)
            if index < 0:
                fields.append(pa.nulls(len(flat), f.type))
            else:
                fields.append(_cast(flat.field(index), f.type))
        struct = pa.StructArray.from_arrays(fields, fields=list(event_type))
        offsets = pc.subtract(events.offsets, events.offsets[0])  # (a sliced list starts past 0)
        events_out = pa.ListArray.from_arrays(offsets, struct, type=schema.field("events").type)
        time_type = schema.field("start_time").type
        if self.time_column is not None and flat.type.get_field_index(self.time_column) >= 0:
            times = _cast(flat.field(self.time_column), time_type)
            o = offsets.to_numpy()
            # A projection may keep no event of a match (`SELECT b` where an OR bound `a`):
            # its times are null, not the neighbour's (a null index takes a null).
            empty = o[1:] == o[:-1]
            start_time = times.take(pa.array(np.where(empty, 0, o[:-1]), mask=empty))
            end_time = times.take(pa.array(np.where(empty, 0, o[1:] - 1), mask=empty))
        else:
            start_time = end_time = pa.nulls(n, time_type)
        partition_type = schema.field("partition").type
        if "partition" in names:
            part = found.column("partition")
            partition = pa.StructArray.from_arrays(
                [_cast(part.field(i), f.type) for i, f in enumerate(partition_type)],
                fields=list(partition_type),
                mask=part.is_null(),
            )
        else:
            partition = pa.nulls(n, partition_type)
        arrays = [
            pa.array([self.query_id] * n, schema.field("query").type),
            partition,
            found.column("start"),
            found.column("end"),
            start_time,
            end_time,
            found.column("positions").cast(schema.field("positions").type),
            events_out,
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


class KeysOfTask:
    """The ``mapInArrow`` function of :func:`detect`'s ``task_reader`` route: task ``i`` of ``n``
    reads every row, keeps the PARTITION BY keys whose hash is ``i`` modulo ``n``, and evaluates
    them in position order (the reader's order) with the partitioned plan's evaluator."""

    def __init__(
        self,
        *,
        read: Callable[[], Iterator[pa.RecordBatch]],
        evaluate: Evaluator,
        keys: list[str],
        tasks: int,
        position_column: str,
        columns: list[str],
    ) -> None:
        self.read = read
        self.evaluate = evaluate
        self.keys = keys
        self.tasks = tasks
        self.position_column = position_column
        self.columns = columns

    def __call__(self, ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        mine = [int(i) for batch in ids for i in batch.column(0).to_pylist()]
        yield from self.evaluate(self._kept(set(mine)))

    def _kept(self, mine: set[int]) -> Iterator[pa.RecordBatch]:
        if not mine:
            return
        names = [*self.columns, POS]
        for batch in self.read():
            keep = np.isin(key_hashes([batch.column(k) for k in self.keys]) % self.tasks, list(mine))
            if not keep.any():
                continue
            arrays = [batch.column(c) for c in self.columns]
            arrays.append(batch.column(self.position_column).cast(pa.int64()))
            yield pa.RecordBatch.from_arrays(arrays, names=names).filter(pa.array(keep))


def key_hashes(columns: list[pa.Array]) -> np.ndarray:
    """A hash of each row's key values, the same in every process (CRC-32 of each distinct value's
    ``repr``: Python's own string hash differs between processes)."""
    n = len(columns[0]) if columns else 0
    out = np.zeros(n, dtype=np.uint64)
    for column in columns:
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        codes = np.array(
            [zlib.crc32(repr(v).encode("utf-8")) for v in encoded.dictionary.to_pylist()], dtype=np.uint64
        )
        index = encoded.indices.to_numpy(zero_copy_only=False).astype(np.intp)
        out = (out * np.uint64(1_000_003) + codes[index]) % np.uint64(1 << 32)
    return out


def _cast(values: pa.Array, typ: pa.DataType) -> pa.Array:
    """The engine's column in the input's Spark type (it may have conformed, e.g. text to numbers)."""
    if values.type == typ:
        return values
    try:
        return values.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return _array(values.to_pylist(), typ)


def _array(values: list[Any], typ: pa.DataType) -> pa.Array:
    """``pa.array(values, typ)``, casting when the engine changed a value's kind.

    The engine hands events back after conforming the columns it reads (a
    numeric string becomes a number), so a value may not fit the input's type
    directly; it is then converted through Arrow's cast, back to the input type.
    """
    try:
        return pa.array(values, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return pa.array(values).cast(typ)


def _segments(arrays: list[pa.Array]) -> list[int]:
    """Boundaries of the runs of equal keys in sorted key columns: [0, ..., n]."""
    n = len(arrays[0])
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for arr in arrays:
        codes = pc.dictionary_encode(arr, null_encoding="encode").indices
        c = codes.to_numpy(zero_copy_only=False)
        change[1:] |= c[1:] != c[:-1]
    return [*np.flatnonzero(change).tolist(), n]
