"""Every kind of source a user holds, as a stream of Arrow RecordBatches.

A path is read by :func:`~kleene.io.readers.read_batches`; pyarrow tables,
batches and readers pass through; pandas, polars, DuckDB, a batch Spark
DataFrame and any other object that exports Arrow's PyCapsule stream
(``__arrow_c_stream__``) are read without a copy where Arrow allows; a polars
LazyFrame is collected in streaming chunks; event dicts are batched.  Nothing
here imports pandas, polars or pyspark: their objects are recognised only when
their package is already loaded (or by their Arrow interface).

Foreign producers use Arrow's *view* layouts (polars exports ``string_view``,
categoricals as ``dictionary<string_view>``), which many Arrow kernels lack;
their batches are cast to the plain layouts (``large_string``,
``large_binary``, ``large_list``) once, on entry (:func:`plain_layout`).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from kleene.io.readers import read_batches
from kleene.language.errors import KleeneError

DICT_BATCH = 4096
"""Events per batch when the source is an iterable of dicts."""


def pushdown(columns: tuple[str, ...], policy_mode: str, *, events: bool) -> tuple[str, ...] | None:
    """The columns to read from a file: all (None) when the output or the quarantine needs whole rows."""
    return None if events or policy_mode == "quarantine" else columns


def to_batches(
    source: Any, columns: Iterable[str] | None = None, *, null_values: Sequence[str] = ()
) -> Iterator[pa.RecordBatch]:
    """Normalize every supported source into RecordBatches.

    ``source``: a file path (CSV, JSON Lines, Parquet), a pyarrow Table,
    RecordBatch or RecordBatchReader, a pandas DataFrame, any object with
    ``__arrow_c_stream__`` or ``__arrow_c_array__`` (polars, DuckDB, ...), or
    an iterable of batches, tables, DataFrames or event dicts.  A polars LazyFrame is
    collected chunk by chunk (``collect_batches``); a Spark DataFrame is read
    with ``toArrow()``, which collects it to the driver, in the order
    Spark gives (``orderBy`` first: kleene reads events in input order; for
    data too large for one machine, :func:`kleene.spark.detect`); a streaming
    Spark DataFrame is refused with a pointer to :func:`kleene.spark.detect_stream`.
    A file path is read with
    :func:`~kleene.io.readers.read_batches`; with ``columns`` (the callers that
    need no event data pass the query's), only those columns, strings as
    dictionaries (projection pushdown); ``null_values``: more null tokens for
    a text file.
    """
    if isinstance(source, (str, os.PathLike)):
        wanted = None if columns is None else tuple(columns)
        yield from read_batches(
            os.fspath(source), columns=wanted, dictionary=wanted is not None, null_values=null_values
        )
        return
    # Arrow data in view layouts (string_view, ...) is cast to plain layouts, whatever the
    # source: few Arrow compute kernels take views (found by fuzzing: tests/fuzz).
    if isinstance(source, pa.RecordBatch):
        yield plain_layout(source)
        return
    if isinstance(source, pa.Table):
        yield from plain_batches(source.to_batches())
        return
    if isinstance(source, pa.RecordBatchReader):
        yield from plain_batches(source)
        return
    pd = sys.modules.get("pandas")  # a DataFrame means pandas is imported: never import it here
    if pd is not None and isinstance(source, pd.DataFrame):
        yield from pa.Table.from_pandas(source, preserve_index=False).to_batches()
        return
    if _is_spark(source):
        if getattr(source, "isStreaming", False):
            raise KleeneError(
                "a streaming Spark DataFrame cannot be run in process: use "
                "kleene.spark.detect_stream(df, query, ...)"
            )
        # toArrow, not the DataFrame's own Arrow stream: PySpark's stream fails on timestamps.
        yield from plain_batches(source.toArrow().to_batches())
        return
    if _is_lazy_polars(source):
        yield from _lazy_batches(source)
        return
    if hasattr(source, "__arrow_c_stream__"):  # Arrow's PyCapsule interface: read, not copied
        try:
            reader = pa.RecordBatchReader.from_stream(source)
        except pa.ArrowInvalid as exc:  # a column (polars Series, Arrow array), not a table
            raise KleeneError(
                f"cannot read events from {type(source).__name__}: its Arrow stream is not a "
                f"table of events ({exc})"
            ) from exc
        yield from plain_batches(reader)
        return
    if hasattr(source, "__arrow_c_array__"):
        yield plain_layout(pa.record_batch(source))
        return
    if isinstance(source, Mapping):
        raise KleeneError("a single event: use Query.push(event)")
    if not isinstance(source, Iterable):
        raise KleeneError(f"cannot read events from {type(source).__name__}")
    it = iter(source)
    first = next(it, None)
    if first is None:
        return
    if isinstance(first, (pa.RecordBatch, pa.Table)):
        # Batches are consumed one at a time, never read ahead: memory stays
        # that of one batch, and progress reporting follows the evaluation.
        for item in itertools.chain([first], it):
            if isinstance(item, pa.Table):
                yield from plain_batches(item.to_batches())
            else:
                yield plain_layout(item)
        return
    if _is_frame(first):  # several DataFrames (chunks of one stream), one after the other
        for item in itertools.chain([first], it):
            yield from to_batches(item)
        return
    if not isinstance(first, Mapping):
        # Rows as tuples (polars' iter_rows, DB-API fetchall) carry no column names.
        raise KleeneError(
            f"cannot read events from an iterable of {type(first).__name__}: give event dicts "
            "(one mapping per event), Arrow batches or tables, or the DataFrame itself"
        )
    rows = itertools.chain([first], it)
    while chunk := list(itertools.islice(rows, DICT_BATCH)):
        yield from_dicts(chunk)


def _is_frame(item: Any) -> bool:
    """A table-like item of an iterable (not an event dict)."""
    if isinstance(item, Mapping):
        return False
    pd = sys.modules.get("pandas")
    return (
        hasattr(item, "__arrow_c_stream__")
        or _is_lazy_polars(item)
        or (pd is not None and isinstance(item, pd.DataFrame))
    )


def _is_spark(source: Any) -> bool:
    """A Spark DataFrame (classic or Connect), known without importing pyspark."""
    return type(source).__module__.startswith("pyspark.") and hasattr(source, "isStreaming")


def _is_lazy_polars(source: Any) -> bool:
    pl = sys.modules.get("polars")
    return pl is not None and isinstance(source, pl.LazyFrame)


def _lazy_batches(frame: Any) -> Iterator[pa.RecordBatch]:
    """A polars LazyFrame, evaluated in streaming chunks (in order) where polars can."""
    collect_batches = getattr(frame, "collect_batches", None)
    chunks = collect_batches(maintain_order=True) if collect_batches else [frame.collect()]
    for chunk in chunks:
        yield from plain_batches(pa.RecordBatchReader.from_stream(chunk))


def plain_batches(reader: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The batches of ``reader`` in plain layouts (see :func:`plain_layout`)."""
    for batch in reader:
        yield plain_layout(batch)


def plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every view layout replaced by its plain twin (nested types included)."""
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    if pa.types.is_dictionary(t):
        return pa.dictionary(t.index_type, plain_type(t.value_type), t.ordered)
    if pa.types.is_list_view(t):
        return pa.list_(t.value_field.with_type(plain_type(t.value_type)))
    if pa.types.is_large_list_view(t):
        return pa.large_list(t.value_field.with_type(plain_type(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(plain_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(plain_type(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(plain_type(t.value_type)), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(plain_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(plain_type(t.key_type)),
            t.item_field.with_type(plain_type(t.item_type)),
        )
    return t


def plain_layout(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` cast to plain layouts when it uses views (a no-op otherwise)."""
    schema = batch.schema
    plain = pa.schema(
        [f.with_type(plain_type(f.type)) for f in schema], metadata=schema.metadata
    )
    return batch if plain.equals(schema) else batch.cast(plain)


def from_dicts(rows: list[Mapping[str, Any]]) -> pa.RecordBatch:
    """A batch from event dicts; a column whose values mix types is kept as strings.

    The conform step then parses the strings it needs as numbers and sets
    aside, with a reason, the rows it cannot parse: mixed input is reported,
    never silently coerced or dropped.
    """
    try:
        return pa.RecordBatch.from_pylist([dict(e) for e in rows])
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    names = list(dict.fromkeys(k for e in rows for k in e))
    arrays = []
    for name in names:
        values = [e.get(name) for e in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in values], pa.string()))
    return pa.RecordBatch.from_arrays(arrays, names=names)
