"""Complex events as one table, in two shapes, for DataFrame users.

:meth:`kleene.Query.to_arrow` (and ``to_pandas``, ``to_polars``, the same on a
:class:`kleene.QuerySet`) gather the bulk path's batches
(:meth:`kleene.Query.match_batches`, :meth:`~kleene.MatchBatch.to_arrow`) into
one pyarrow Table, without a Python object per complex event:

* ``shape="matches"``: one row per complex event: ``query``, ``match_id``,
  ``start``, ``end``, with a time column ``start_time`` and ``end_time`` (the
  time column's values of its first and last event, as the input holds them;
  the same columns as :func:`kleene.spark.detect`'s), ``positions`` (list),
  then one column per PARTITION BY
  attribute (for several queries, the union of their attributes, null for a
  query that lacks one);
* ``shape="events"``: one row per (complex event, event): ``query``,
  ``match_id``, ``position``, then the event's attributes (those of
  :attr:`kleene.ComplexEvent.events`: every column, or the type and
  ``SELECT``'s attributes), ready for a group-by on ``match_id``.

``match_id`` numbers the complex events of one call from 0, in output order
(end position; at one end, query order): the key that joins the two shapes.
The engine does not record which variable an event is bound to (a complex
event is a set of positions), so no column says it.

pandas and polars are imported only by the function that converts to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.language.errors import KleeneError, MissingDependencyError
from kleene.results import MatchBatch

SHAPES = ("matches", "events")
MATCH_COLUMNS = ("query", "match_id", "start", "end", "positions")
TIME_COLUMNS = ("start_time", "end_time")
EVENT_COLUMNS = ("query", "match_id", "position")


def check_shape(shape: str) -> None:
    if shape not in SHAPES:
        raise KleeneError(f"unknown result shape {shape!r}: 'matches' or 'events'")


def results_table(
    batches: Iterable[MatchBatch],
    *,
    shape: str,
    name: str | None,
    partition_by: tuple[str, ...],
    time_column: str | None = None,
) -> pa.Table:
    """The complex events of ``batches`` as one table of the given ``shape``.

    ``name`` fills ``query`` for batches that do not name their queries (a
    single query); ``partition_by`` gives the PARTITION BY columns even when
    no complex event is found; ``time_column`` (the matches shape; the
    batches then carry their events) gives ``start_time`` and ``end_time``.
    """
    check_shape(shape)
    parts: list[pa.Table] = []
    count = 0
    for batch in batches:
        if not len(batch):
            continue
        if shape == "matches":
            times = None if time_column is None else batch.first_last(time_column)
            batch.drop_events()  # their data is not in this shape
            parts.append(_matches(batch.to_arrow(), count, name, partition_by, times))
        else:
            parts.append(_events(batch.to_arrow(), count, name, partition_by))
        count += len(batch)
    if not parts:
        return _empty(shape, partition_by, time_column is not None)
    if len(parts) == 1:
        return parts[0]
    return pa.concat_tables(parts, promote_options="permissive")


def _query_column(rb: pa.RecordBatch, name: str | None) -> pa.Array:
    if "query" in rb.schema.names:
        return rb.column("query")
    return pa.array([name] * rb.num_rows, pa.string())


def _matches(
    rb: pa.RecordBatch,
    first: int,
    name: str | None,
    partition_by: tuple[str, ...],
    times: tuple[pa.Array, pa.Array] | None,
) -> pa.Table:
    n = rb.num_rows
    names = list(MATCH_COLUMNS)
    arrays = [
        _query_column(rb, name),
        pa.array(np.arange(first, first + n, dtype=np.int64)),
        rb.column("start"),
        rb.column("end"),
        rb.column("positions"),
    ]
    if times is not None:
        names[4:4] = TIME_COLUMNS
        arrays[4:4] = times
    fields: dict[str, pa.Array] = {}
    if "partition" in rb.schema.names:
        struct = rb.column("partition")
        valid = struct.is_valid()
        for i, field in enumerate(struct.type):
            # A null partition (a query without PARTITION BY among several) nulls its fields.
            fields[field.name] = pc.if_else(valid, struct.field(i), pa.nulls(n, field.type))
    for attr in partition_by:
        _no_clash(attr, MATCH_COLUMNS + TIME_COLUMNS, "a PARTITION BY attribute")
        names.append(attr)
        arrays.append(fields.pop(attr, pa.nulls(n)))
    for attr, values in fields.items():  # keys without a known name (key0, ...)
        names.append(attr)
        arrays.append(values)
    return pa.Table.from_arrays(arrays, names=names)


def _events(
    rb: pa.RecordBatch, first: int, name: str | None, partition_by: tuple[str, ...]
) -> pa.Table:
    events = rb.column("events")
    owner = pc.list_parent_indices(events)
    struct = pc.list_flatten(events)
    names = list(EVENT_COLUMNS)
    arrays = [
        _query_column(rb, name).take(owner),
        pc.add(owner.cast(pa.int64()), first),
        pc.list_flatten(rb.column("positions")),
    ]
    for i, field in enumerate(struct.type):
        _no_clash(field.name, EVENT_COLUMNS, "an event attribute")
        names.append(field.name)
        arrays.append(struct.field(i))
    return pa.Table.from_arrays(arrays, names=names)


def _no_clash(attr: str, taken: tuple[str, ...], what: str) -> None:
    if attr in taken:
        raise KleeneError(
            f"{what} is named {attr!r}, like a column of the result ({', '.join(taken)}): "
            "rename it in the input"
        )


def _empty(shape: str, partition_by: tuple[str, ...], timed: bool = False) -> pa.Table:
    if shape == "events":
        return pa.table(
            {"query": pa.array([], pa.string()), "match_id": pa.array([], pa.int64()),
             "position": pa.array([], pa.int64())}
        )
    columns: dict[str, pa.Array] = {
        "query": pa.array([], pa.string()),
        "match_id": pa.array([], pa.int64()),
        "start": pa.array([], pa.int64()),
        "end": pa.array([], pa.int64()),
    }
    if timed:
        columns |= {c: pa.nulls(0) for c in TIME_COLUMNS}
    columns["positions"] = pa.array([], pa.list_(pa.int64()))
    for attr in partition_by:
        _no_clash(attr, MATCH_COLUMNS + TIME_COLUMNS, "a PARTITION BY attribute")
        columns[attr] = pa.nulls(0)
    return pa.table(columns)


def to_pandas(table: pa.Table) -> Any:
    """``table`` as a pandas DataFrame (zoned times stay zoned)."""
    try:
        import pandas  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            "results as a pandas DataFrame need pandas: pip install pandas", name="pandas"
        ) from exc
    return table.to_pandas()


def to_polars(table: pa.Table) -> Any:
    """``table`` as a polars DataFrame."""
    try:
        import polars as pl
    except ImportError as exc:
        raise MissingDependencyError(
            "results as a polars DataFrame need polars: pip install polars", name="polars"
        ) from exc
    return pl.from_arrow(table)
