"""CEQL over a Spark Structured Streaming DataFrame: :func:`detect_stream` and :func:`start_stream`.

The engine is a sequential evaluator; a stream delivers rows out of order and
in arbitrary micro-batches.  The pipeline (details in ``docs/streaming.md``):

1. The time column becomes an internal event-time timestamp with a
   watermark.  The watermarked column is dropped again *before* the stateful
   operator: Spark then cannot drop late rows silently (it only filters on a
   watermarked column of the operator's input), so the processor sees them,
   compares them with the current watermark and emits them as ``late`` rows.
2. Rows are grouped by the PARTITION BY key (a constant without PARTITION
   BY) into ``transformWithStateInPandas`` in ``EventTime`` mode (RocksDB
   state store).  Per key, rows are buffered in a typed ListState until the
   watermark passes them (event-time timers), then released in
   ``(time, id)`` order and evaluated.
3. Evaluator state is kept as typed rows, not as a pickled automaton: the
   released events that a future complex event can still need (those within
   one window of the last released event) plus a few counters.  On every
   release a fresh engine session replays those events with their stored
   positions (their complex events were emitted before and are discarded),
   then evaluates the newly released events.  A complex event ending at ``j``
   only contains events in ``[time(j) - window, j]``, so this is exact; and
   because nothing lives outside the state store, a restart from the
   checkpoint continues exactly where the last committed micro-batch ended.

:func:`start_stream` writes complex events and late rows to two directories
with ``foreachBatch``, one sub-directory per micro-batch id, overwritten when
Spark re-runs a batch after a failure: the output is exactly-once by
idempotence.

Size: the streaming entry point and its stateful processor share the state layout
(pending, window, counters) row for row; split, each half would describe the other's rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle, StreamingQuery
from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues

import kleene
from kleene.api import Query
from kleene.io.timecol import UNIT_NANOS, to_nanos
from kleene.language import ast
from kleene.language.checks import check
from kleene.language.errors import KleeneError, UnsupportedError
from kleene.language.schema import Schema
from kleene.options import InputOptions
from kleene.spark.schema import OUTPUT_FIELDS, POS, PREFIX, output_schema, query_name

US = PREFIX + "us"
"""Event time in microseconds since the epoch, computed by Spark (watermark and release)."""
ET = PREFIX + "et"
"""The watermarked event-time timestamp (dropped before the stateful operator)."""
KEY = PREFIX + "key"
"""The constant grouping key of a query without PARTITION BY."""
NS = PREFIX + "ns"

KIND_COMPLEX = "complex"
KIND_LATE = "late"
KIND_UNTIMED = "untimed"
STREAM_FIELDS = (*OUTPUT_FIELDS, "kind", "watermark_ms")

COUNTERS_DDL = "next_pos long, consume_mark long, released long, late long"
"""The per-key ValueState: next position, last consumption (-1: none), released and late counts."""


# ------------------------------------------------------------------ checks
def check_streamable(query: Query) -> None:
    """Reject the queries whose streaming evaluation could not be exact.

    * No window: every released event could be needed forever, so state
      would grow without bound.  We refuse rather than retain everything.
    * ``WITHIN n EVENTS`` with PARTITION BY: the window counts *global*
      positions, which no key's state knows.
    * ``CONSUME BY ANY`` with PARTITION BY: one key's output discards the
      runs of every other key, which per-key state cannot do.
    """
    q = query.ast
    window = q.within
    span = q.span
    if window is None:
        raise UnsupportedError(
            "streaming needs a window (WITHIN <duration>, WITHIN n EVENTS or WITHIN n [attr]): "
            "without one every event must be kept forever",
            span.line,
            span.column,
            query.text,
        )
    if query.partition_by and isinstance(window, ast.EventsWindow):
        raise UnsupportedError(
            "WITHIN n EVENTS with PARTITION BY cannot be streamed: the window counts global "
            "positions, which a partition's state does not know; use a time window",
            window.span.line,
            window.span.column,
            query.text,
        )
    if query.partition_by and q.consume == "ANY":
        raise UnsupportedError(
            "CONSUME BY ANY with PARTITION BY cannot be streamed: an output in one partition "
            "discards the runs of all others; use CONSUME BY PARTITION",
            span.line,
            span.column,
            query.text,
        )


def stream_schema(
    input_schema: T.StructType, *, partition_by: Sequence[str], time_column: str
) -> T.StructType:
    """:func:`kleene.spark.schema.output_schema` plus ``kind`` and ``watermark_ms``.

    ``kind`` is ``complex`` for a complex event, ``late`` for an input row
    that arrived behind the watermark (``events`` holds that one row and
    ``watermark_ms`` the watermark it missed), ``untimed`` for a row without a
    usable time.
    """
    base = output_schema(input_schema, partition_by=partition_by, time_column=time_column)
    return T.StructType(
        [
            *base.fields,
            T.StructField("kind", T.StringType(), False),
            T.StructField("watermark_ms", T.LongType(), True),
        ]
    )


def event_micros(column: str, typ: T.DataType, unit: str) -> Column:
    """The event time in whole microseconds, computed the way the engine reads the column."""
    col = F.col(column)
    if isinstance(typ, T.TimestampType):
        return F.unix_micros(col)
    if isinstance(typ, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        factor = UNIT_NANOS[unit]
        if factor >= 1000:
            return (col.cast("long") * (factor // 1000)).cast("long")
        return F.floor(col / 1000).cast("long")
    if isinstance(typ, (T.FloatType, T.DoubleType, T.DecimalType)):
        return F.floor(col.cast("double") * (UNIT_NANOS[unit] / 1000.0)).cast("long")
    raise KleeneError(
        f"the time column {column!r} has type {typ.simpleString()}: streaming needs a "
        "number (with time_unit) or a timestamp"
    )


# -------------------------------------------------------------- the API
def detect_stream(
    streaming_df: DataFrame,
    query: str | Query,
    *,
    time_column: str | None = None,
    watermark: str = "10 seconds",
    id_column: str | None = None,
    type_column: str | None = None,
    time_unit: str | None = None,
    schema: Schema | None = None,
    query_id: str | None = None,
    options: InputOptions | None = None,
) -> DataFrame:
    """Run a CEQL query over a streaming DataFrame; return a streaming DataFrame of results.

    Each result row is a complex event (``kind = 'complex'``, the columns of
    :func:`kleene.spark.schema.output_schema`) or an input row that could not
    be evaluated (``kind = 'late'``: behind the watermark; ``'untimed'``: null
    time), so nothing is dropped silently.  Write it with :func:`start_stream`
    (two directories, exactly-once), or to any sink yourself, in append mode.

    Events are evaluated once the watermark (max event time seen minus
    ``watermark``) passes them, in ``(time_column, id_column)`` order; without
    ``id_column`` ties are broken by the row's contents.  Positions count the
    released events per PARTITION BY key (globally without PARTITION BY, where
    they equal the batch positions of the same rows sorted by time and id).

    The session needs the RocksDB state store
    (``spark.sql.streaming.stateStore.providerClass``; :func:`kleene.spark.local_session`
    sets it).  A checkpoint belongs to one query text: use a new checkpoint
    directory when the query changes.  ``time_column`` is required, here or in
    ``options`` (:class:`~kleene.options.InputOptions`; a compiled ``query``
    brings its own), which single keywords override.  The ``query`` column
    holds ``query_id``, by default the query's name (:func:`kleene.spark.schema.query_name`).
    """
    if isinstance(query, Query):
        text, schema = query.text, schema or query.schema
        options = options or query.options
    else:
        text = query
    options = InputOptions.given(
        options, type_column=type_column, time_column=time_column, time_unit=time_unit
    )
    if options.time_column is None:
        raise KleeneError("a streaming query needs event times: pass time_column")
    type_column, time_column, time_unit = options.type_column, options.time_column, options.time_unit
    compiled = kleene.compile(text, schema, options=options)
    check_streamable(compiled)
    columns = list(streaming_df.columns)
    for name in columns:
        if name.startswith(PREFIX):
            raise KleeneError(f"column names starting with {PREFIX!r} are reserved: {name!r}")
    typed = [type_column] if compiled.plan.type_column is not None else []  # not for `_` alone
    for name in [*typed, time_column, *([id_column] if id_column else [])]:
        if name not in columns:
            raise KleeneError(f"no column {name!r} in the input (columns: {', '.join(columns)})")
    if compiled.schema is None:
        check(
            compiled.ast, text, Schema.from_arrow(
                to_arrow_schema(streaming_df.schema, timezone="UTC"), type_column,
                needs_type_column=bool(typed),
            )
        )

    input_schema = streaming_df.schema
    partition_names = list(dict.fromkeys(compiled.partition_by))
    out_schema = stream_schema(input_schema, partition_by=partition_names, time_column=time_column)
    spec = _Spec(
        text=text,
        schema=schema,
        options=options,
        time_column=time_column,
        id_column=id_column,
        columns=columns,
        input_schema_json=input_schema.json(),
        partition_names=partition_names,
        query_id=query_name(text, query_id),
        out_columns=list(STREAM_FIELDS),
    )
    timed = streaming_df.withColumn(
        US, event_micros(time_column, input_schema[time_column].dataType, time_unit)
    )
    watermarked = timed.withColumn(ET, F.timestamp_micros(F.col(US))).withWatermark(ET, watermark)
    # Dropping the watermarked column keeps the global watermark (timers still
    # fire) but stops Spark from filtering late rows before our function.
    prepared = watermarked.drop(ET)
    if partition_names:
        grouped = prepared.groupBy(*partition_names)
    else:
        grouped = prepared.withColumn(KEY, F.lit(0)).groupBy(KEY)
    return grouped.transformWithStateInPandas(
        statefulProcessor=_CerProcessor(spec),
        outputStructType=out_schema,
        outputMode="Append",
        timeMode="EventTime",
    )


def start_stream(
    results: DataFrame,
    output: str,
    *,
    checkpoint: str,
    late_events_path: str,
    output_format: str = "parquet",
    available_now: bool = False,
    processing_time: str | None = None,
    query_name: str | None = None,
) -> StreamingQuery:
    """Write :func:`detect_stream`'s results: complex events to ``output``, late rows elsewhere.

    Each micro-batch ``N`` goes to ``output/batch=N`` and
    ``late_events_path/batch=N`` (zero-padded), written with mode
    ``overwrite``: when Spark re-runs a batch after a crash it produces the
    same rows and replaces the partial attempt, so every complex event and
    every late row appears exactly once.  Read the directories with
    ``spark.read.parquet(output)`` (the ``batch`` column comes from the
    directory names).  Late rows are the input columns plus ``reason``
    (``late`` or ``untimed``), ``watermark_ms`` and ``partition``.

    ``output_format`` is ``parquet``, ``jsonl`` or ``csv`` (in CSV the nested
    columns are JSON strings).  ``available_now`` processes what is there and
    stops; otherwise the query runs until stopped, every ``processing_time``
    (default: as fast as possible).
    """
    check_output_format(output_format)
    writer = _BatchWriter(output, late_events_path, output_format)
    return start_writing(results, writer, checkpoint, query_name=query_name,
                         available_now=available_now, processing_time=processing_time)


def check_output_format(output_format: str) -> None:
    """The formats a streaming query's batches are written in."""
    if output_format not in ("parquet", "jsonl", "csv"):
        raise KleeneError(f"unknown output format {output_format!r}: parquet, jsonl or csv")


def start_writing(
    results: DataFrame, writer: Any, checkpoint: str, *, query_name: str | None = None,
    available_now: bool = False, processing_time: str | None = None,
) -> StreamingQuery:
    """Start ``results`` with ``writer`` as its ``foreachBatch`` function, checkpointed."""
    stream = results.writeStream.foreachBatch(writer).option("checkpointLocation", checkpoint)
    if query_name:
        stream = stream.queryName(query_name)
    if available_now:
        stream = stream.trigger(availableNow=True)
    elif processing_time:
        stream = stream.trigger(processingTime=processing_time)
    return stream.start()


def read_results(spark: SparkSession, path: str, output_format: str = "parquet") -> DataFrame:
    """Read what :func:`start_stream` wrote (complex events or late rows), as a batch DataFrame."""
    if output_format == "parquet":
        return spark.read.parquet(path)
    if output_format == "jsonl":
        return spark.read.json(path)
    return spark.read.option("header", True).csv(path)


class _BatchWriter:
    """The ``foreachBatch`` function of :func:`start_stream` (idempotent per batch id)."""

    def __init__(self, output: str, late: str, output_format: str) -> None:
        self.output = output.rstrip("/")
        self.late = late.rstrip("/")
        self.format = output_format

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        df = df.persist()  # the stateful batch must not be computed twice
        try:
            complex_events = df.filter(F.col("kind") == KIND_COMPLEX).drop("kind", "watermark_ms")
            late = df.filter(F.col("kind") != KIND_COMPLEX).select(
                F.inline(F.col("events")),
                F.col("kind").alias("reason"),
                F.col("watermark_ms"),
                F.col("partition"),
            )
            name = f"batch={batch_id:09d}"
            self._write(complex_events, f"{self.output}/{name}")
            self._write(late, f"{self.late}/{name}")
        finally:
            df.unpersist()

    def _write(self, df: DataFrame, path: str) -> None:
        write_batch(df, path, self.format)


def write_batch(df: DataFrame, path: str, output_format: str, *, rows: int | None = None) -> None:
    """Write one micro-batch's rows to ``path`` (overwritten: idempotent per batch id);
    nothing for an empty batch.  In CSV the nested columns are JSON strings.  ``rows``:
    the number of rows when the caller knows it (then no job asks whether it is empty)."""
    if rows == 0 or (rows is None and df.isEmpty()):
        return
    if output_format == "parquet":
        df.write.mode("overwrite").parquet(path)
    elif output_format == "jsonl":
        df.write.mode("overwrite").json(path)
    else:
        flat = [
            F.to_json(F.col(f.name)).alias(f.name)
            if isinstance(f.dataType, (T.ArrayType, T.StructType, T.MapType))
            else F.col(f.name)
            for f in df.schema.fields
        ]
        df.select(*flat).write.mode("overwrite").option("header", True).csv(path)


# ------------------------------------------------------------ the executors
@dataclass(frozen=True)
class _Spec:
    """What the processor needs, as plain data (the query is recompiled on the executor)."""

    text: str
    schema: Schema | None
    options: InputOptions
    time_column: str
    id_column: str | None
    columns: list[str]
    input_schema_json: str
    partition_names: list[str]
    query_id: str
    out_columns: list[str]


class _CerProcessor(StatefulProcessor):
    """Per key: buffer until the watermark, release in order, replay the window, evaluate.

    State (all typed rows, see ``docs/streaming.md``):

    * ``pending`` (ListState): input columns + event time in µs; not yet released.
    * ``window`` (ListState): input columns + µs + ns + position; released
      events a future complex event may still contain.
    * ``counters`` (ValueState): :data:`COUNTERS_DDL`.
    """

    def __init__(self, spec: _Spec) -> None:
        self.spec = spec

    # Spark calls these with keyword arguments: the parameter names are fixed.
    def init(self, handle: StatefulProcessorHandle) -> None:
        spec = self.spec
        self.handle = handle
        self.query = kleene.compile(spec.text, spec.schema, options=spec.options)
        input_schema = T.StructType.fromJson(_json(spec.input_schema_json))
        fields = [input_schema[c] for c in spec.columns]
        self.input_arrow = to_arrow_schema(T.StructType(fields), timezone="UTC")
        pending = T.StructType([*fields, T.StructField(US, T.LongType(), True)])
        window = T.StructType(
            [
                *fields,
                T.StructField(US, T.LongType(), True),
                T.StructField(NS, T.LongType(), True),
                T.StructField(POS, T.LongType(), True),
            ]
        )
        self.pending_arrow = to_arrow_schema(pending, timezone="UTC")
        self.pending = handle.getListState("pending", pending)
        self.window = handle.getListState("window", window)
        self.counters = handle.getValueState("counters", COUNTERS_DDL)
        self.ncols = len(spec.columns)
        self.time_index = spec.columns.index(spec.time_column)
        self.id_index = spec.columns.index(spec.id_column) if spec.id_column else None
        within = self.query.ast.within
        self.within = within
        if isinstance(within, ast.AttrWindow):
            self.attr_index: int | None = spec.columns.index(within.attr)
        else:
            self.attr_index = None

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        wm = timerValues.getCurrentWatermarkInMs()
        frames = [pdf for pdf in rows if len(pdf)]
        if not frames:
            return
        pdf = pd.concat(frames, ignore_index=True)
        # Positional: Spark renames the internal ``__kleene_*`` columns in the frames.
        pdf = pdf.iloc[:, : self.ncols + 1]
        pdf.columns = pd.Index(self.pending_arrow.names)
        table = pa.Table.from_pandas(pdf, schema=self.pending_arrow, preserve_index=False)
        tuples = [tuple(r.values()) for r in table.to_pylist()]
        keep: list[tuple[Any, ...]] = []
        out: list[dict[str, Any]] = []
        late = 0
        for row in tuples:
            us = row[self.ncols]
            if us is None:
                out.append(self._rejected(key, row, KIND_UNTIMED, wm))
                late += 1
            elif wm > 0 and us <= wm * 1000:
                out.append(self._rejected(key, row, KIND_LATE, wm))
                late += 1
            else:
                keep.append(row)
        if keep:
            self.pending.appendList(keep)
            first = min(r[self.ncols] for r in keep)
            self.handle.registerTimer(ceil_div(first, 1000))
        if late:
            counters = self._counters()
            counters[3] += late
            self.counters.update(tuple(counters))
        if out:
            yield self._frame(out)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        wm = timerValues.getCurrentWatermarkInMs()
        limit_us = wm * 1000
        pending = list(self.pending.get()) if self.pending.exists() else []
        ready = [r for r in pending if r[self.ncols] <= limit_us]
        out: list[dict[str, Any]] = []
        if ready:
            rest = [r for r in pending if r[self.ncols] > limit_us]
            if rest:
                self.pending.put(rest)
                # Each arrival registered a timer for its earliest row only.
                self.handle.registerTimer(ceil_div(min(r[self.ncols] for r in rest), 1000))
            else:
                self.pending.clear()
            out = self._release(key, ready)
        self._evict(wm)
        if out:
            yield self._frame(out)

    def close(self) -> None:
        pass

    # ------------------------------------------------------------ helpers
    def _counters(self) -> list[int]:
        value = self.counters.get() if self.counters.exists() else None
        return [int(v) for v in value] if value is not None else [0, -1, 0, 0]

    def _release(self, key: Any, ready: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
        """Evaluate the released rows after replaying the retained window; return their outputs."""
        n = self.ncols
        counters = self._counters()
        next_pos, mark = counters[0], counters[1]
        # Order: (time in ns as the engine reads it, id or the row's contents).
        times = self._nanos(ready)
        if self.id_index is not None:
            idx = self.id_index
            order = sorted(range(len(ready)), key=lambda i: (times[i], _sortable(ready[i][idx])))
        else:
            order = sorted(range(len(ready)), key=lambda i: (times[i], repr(ready[i][:n])))
        new = [(*ready[i][: n + 1], times[i], next_pos + k) for k, i in enumerate(order)]
        window = sorted(self.window.get(), key=lambda r: r[n + 2]) if self.window.exists() else []

        session = self.query.session()
        replay = [r for r in window if r[n + 2] > mark]
        if replay:
            session.feed(self._batch(replay), positions=np.array([r[n + 2] for r in replay]))
        found = session.feed(self._batch(new), positions=np.array([r[n + 2] for r in new]))

        by_pos = {r[n + 2]: r for r in (*window, *new)}
        out = [self._complex(key, ce, by_pos) for ce in found]
        if found and self.query.ast.consume != "NONE":
            mark = max(ce.end for ce in found)
        next_pos += len(new)
        retained = [
            r for r in (*window, *new) if r[n + 2] > mark and self._needed(r, new[-1], next_pos)
        ]
        if retained:
            self.window.put(retained)
        else:
            self.window.clear()
        self.counters.update((next_pos, mark, counters[2] + len(new), counters[3]))
        if isinstance(self.within, ast.DurationWindow):
            # When the watermark passes last + window, no future event reaches back here.
            self.handle.registerTimer(ceil_div(new[-1][n + 1] + self.within.nanos, 1_000_000))
        return out

    def _needed(self, row: tuple[Any, ...], last: tuple[Any, ...], next_pos: int) -> bool:
        """Whether a complex event ending at a future event may contain ``row``."""
        n = self.ncols
        within = self.within
        if isinstance(within, ast.DurationWindow):
            return bool(row[n + 1] >= last[n + 1] - within.nanos)
        if isinstance(within, ast.EventsWindow):
            return bool(row[n + 2] >= next_pos - within.count)
        assert isinstance(within, ast.AttrWindow) and self.attr_index is not None
        value, top = row[self.attr_index], last[self.attr_index]
        return value is None or top is None or bool(value >= top - within.amount)

    def _evict(self, wm: int) -> None:
        """Drop the retained window once the watermark is a full window past it."""
        if not isinstance(self.within, ast.DurationWindow) or not self.window.exists():
            return
        n = self.ncols
        last = max(r[n + 1] for r in self.window.get())
        if wm * 1_000_000 >= last + self.within.nanos:
            self.window.clear()

    def _nanos(self, rows: list[tuple[Any, ...]]) -> list[int]:
        field = self.input_arrow.field(self.time_index)
        column = pa.array([r[self.time_index] for r in rows], field.type)
        values, _bad = to_nanos(column, self.spec.options.time_unit, name=self.spec.time_column)
        return [int(v) for v in values.tolist()]

    def _batch(self, rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
        cols = list(zip(*rows))
        arrays = [pa.array(list(cols[j]), f.type) for j, f in enumerate(self.input_arrow)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.input_arrow)

    def _partition(self, key: Any) -> dict[str, Any] | None:
        if not self.spec.partition_names:
            return None
        return dict(zip(self.spec.partition_names, key))

    def _complex(self, key: Any, ce: Any, by_pos: dict[int, tuple[Any, ...]]) -> dict[str, Any]:
        t = self.time_index
        first, last = by_pos.get(ce.start), by_pos.get(ce.end)
        return {
            "query": self.spec.query_id,
            "partition": self._partition(key),
            "start": ce.start,
            "end": ce.end,
            "start_time": first[t] if first is not None else None,
            "end_time": last[t] if last is not None else None,
            "positions": list(ce.positions),
            "events": [dict(e) for e in ce.events],
            "kind": KIND_COMPLEX,
            "watermark_ms": None,
        }

    def _rejected(self, key: Any, row: tuple[Any, ...], kind: str, wm: int) -> dict[str, Any]:
        event = dict(zip(self.spec.columns, row[: self.ncols]))
        time = row[self.time_index]
        return {
            "query": self.spec.query_id,
            "partition": self._partition(key),
            "start": None,
            "end": None,
            "start_time": time,
            "end_time": time,
            "positions": [],
            "events": [event],
            "kind": kind,
            "watermark_ms": wm,
        }

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        return pd.DataFrame(rows, columns=self.spec.out_columns)


def ceil_div(a: int, b: int) -> int:
    return -(-int(a) // b)


def _sortable(value: Any) -> tuple[int, Any]:
    """A sort key that puts nulls first and never compares None with a value."""
    return (0, 0) if value is None else (1, value)


def _json(text: str) -> dict[str, Any]:
    import json

    data = json.loads(text)
    assert isinstance(data, dict)
    return data


__all__ = [
    "ceil_div",
    "check_streamable",
    "detect_stream",
    "event_micros",
    "read_results",
    "start_stream",
    "stream_schema",
    "write_batch",
]
