"""MATCH_RECOGNIZE over a Spark Structured Streaming DataFrame: :func:`match_recognize_stream`
and :func:`start_match_recognize_stream`.

The shape is CEQL streaming's (:mod:`kleene.spark.stream`, ``docs/streaming.md``):

1. The clause's first ORDER BY column is the event time.  It becomes an internal
   microsecond column with an event-time watermark, dropped again before the
   stateful operator so that Spark does not drop late rows silently: the
   processor reports them (``kind = 'late'``; ``'untimed'`` for a NULL time).
2. Rows are grouped by the PARTITION BY key (a constant without it) into
   ``transformWithStateInPandas`` in ``EventTime`` mode (RocksDB state store).
   Per key, rows wait in a ListState (one Arrow IPC value per arrival) until the watermark passes them,
   then are released in ORDER BY order to the incremental engine
   (:class:`kleene.runtime.match_recognize.incremental.Incremental`), which
   steps only the new rows: its live search (threads, registers, what the
   DEFINEs read of the match so far) is kept between micro-batches in a
   ValueState as bytes (:meth:`PartitionState.to_bytes`), with the few rows it
   may still read.  A match is emitted once final (no more preferred thread can
   replace it); MATCH_NUMBER() continues across batches and restarts.
3. With WITHIN, an event-time timer fires when the watermark closes the live
   search's window, so its match is emitted even if the partition goes idle,
   and the state shrinks to a few rows.  Without WITHIN a search can stay
   undecided as long as its rows keep matching (``docs/match_recognize.md``,
   "Structured Streaming").

:func:`start_match_recognize_stream` writes matches and late rows with
``foreachBatch``, one sub-directory per batch id, overwritten when Spark re-runs
a batch: exactly-once by idempotence, as :func:`kleene.spark.stream.start_stream`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle, StreamingQuery
from pyspark.sql.streaming.stateful_processor import ExpiredTimerInfo, TimerValues

from kleene.io.timecol import UNIT_NANOS
from kleene.language.errors import KleeneError
from kleene.language.match_recognize.parser import parse
from kleene.language.match_recognize.types import output_schema, resolve_column
from kleene.runtime.match_recognize.incremental import Incremental, PartitionState
from kleene.spark.schema import PREFIX
from kleene.spark.stream import (
    KEY,
    US,
    ceil_div,
    check_output_format,
    event_micros,
    start_writing,
    write_batch,
)

__all__ = ["match_recognize_stream", "release_order", "start_match_recognize_stream"]

KIND_MATCH, KIND_LATE, KIND_UNTIMED = "match", "late", "untimed"
EXTRA = ("kind", "watermark_ms", "late_row")
"""Columns added to the clause's output: ``kind`` (match, late, untimed), the watermark
a late row missed, and the late row itself (a struct of the input columns)."""
ET = PREFIX + "et"


@dataclass(frozen=True)
class _Spec:
    """What the processor needs, as plain data (the clause is parsed again on the executor)."""

    clause: str
    columns: list[str]
    input_schema_json: str
    partition_names: list[str]
    time_column: str
    time_unit: str
    out_columns: list[str]


def match_recognize_stream(streaming_df: DataFrame, clause: str, *, watermark: str = "10 seconds",
                           time_unit: str = "s") -> DataFrame:
    """One MATCH_RECOGNIZE clause over a streaming DataFrame; a streaming DataFrame of results.

    The columns are those of :func:`kleene.spark.match_recognize` (the clause's output)
    plus ``kind`` (``match``; ``late`` for a row behind the watermark, ``untimed`` for a
    NULL event time: then ``late_row`` holds the input row and ``watermark_ms`` the
    watermark).  The first ORDER BY column is the event time (a timestamp, or a number
    in ``time_unit``); rows are evaluated once the watermark (max event time seen minus
    ``watermark``) passes them, and a match is emitted once no later row can change it.
    Raises :class:`~kleene.language.errors.QueryError` with a caret for a bad clause and
    :class:`~kleene.language.errors.UnsupportedError` for what cannot be streamed
    exactly (``$``, ``NEXT``, a descending event time).  The session needs the RocksDB
    state store (:func:`kleene.spark.local_session` sets it); a checkpoint belongs to
    one clause.
    """
    mr = parse(clause)
    if time_unit not in UNIT_NANOS:
        raise KleeneError(f"time_unit={time_unit!r}: choose one of {', '.join(UNIT_NANOS)}")
    columns = list(streaming_df.columns)
    for name in columns:
        if name.startswith(PREFIX):
            raise KleeneError(f"column names starting with {PREFIX!r} are reserved: {name!r}")
    arrow_in = to_arrow_schema(streaming_df.schema, timezone="UTC")
    Incremental(mr, arrow_in)  # the static checks, on the driver, with a caret
    result = output_schema(mr, arrow_in)
    for name in EXTRA:
        if name in result.names:
            raise KleeneError(f"the output column {name!r} is the streaming result's own "
                              f"({', '.join(EXTRA)}): rename it")
    out = from_arrow_schema(result, prefer_timestamp_ntz=False)
    out_schema = T.StructType([
        *[T.StructField(f.name, f.dataType, True) for f in out.fields],
        T.StructField("kind", T.StringType(), False),
        T.StructField("watermark_ms", T.LongType(), True),
        T.StructField("late_row", streaming_df.schema, True),
    ])
    time_column = resolve_column(mr.order_by[0].column, columns, mr.source)
    partition = [resolve_column(c, columns, mr.source) for c in mr.partition_by]
    spec = _Spec(clause, columns, streaming_df.schema.json(), partition, time_column, time_unit,
                 out_schema.names)
    timed = streaming_df.withColumn(
        US, event_micros(time_column, streaming_df.schema[time_column].dataType, time_unit))
    watermarked = timed.withColumn(ET, F.timestamp_micros(F.col(US))).withWatermark(ET, watermark)
    prepared = watermarked.drop(ET)  # late rows reach the processor (see the module docstring)
    if partition:
        grouped = prepared.groupBy(*[F.col("`" + c.replace("`", "``") + "`") for c in partition])
    else:
        grouped = prepared.withColumn(KEY, F.lit(0)).groupBy(KEY)
    return grouped.transformWithStateInPandas(
        statefulProcessor=_MatchProcessor(spec), outputStructType=out_schema,
        outputMode="Append", timeMode="EventTime")


def start_match_recognize_stream(results: DataFrame, output: str, *, checkpoint: str,
                                 late_rows_path: str, output_format: str = "parquet",
                                 available_now: bool = False, processing_time: str | None = None,
                                 query_name: str | None = None) -> StreamingQuery:
    """Write :func:`match_recognize_stream`'s results: matches to ``output``, late rows to
    ``late_rows_path``, each micro-batch ``N`` to ``batch=N`` (zero-padded), overwritten
    when Spark re-runs it, so each row appears exactly once.  Late rows are the input
    columns plus ``reason`` (``late``/``untimed``) and ``watermark_ms``.  Other options as
    :func:`kleene.spark.stream.start_stream`."""
    check_output_format(output_format)
    writer = _Writer(output.rstrip("/"), late_rows_path.rstrip("/"), output_format)
    return start_writing(results, writer, checkpoint, query_name=query_name,
                         available_now=available_now, processing_time=processing_time)


class _Writer:
    """The ``foreachBatch`` function (idempotent per batch id)."""

    def __init__(self, output: str, late: str, output_format: str) -> None:
        self.output, self.late, self.format = output, late, output_format

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        df = df.persist()  # the stateful batch must not be computed twice
        try:
            # one job counts both kinds (two asked whether each was empty): a job fewer per batch
            counts = {str(r[0]): int(r[1]) for r in df.groupBy("kind").count().collect()}
            n_matches = counts.pop(KIND_MATCH, 0)
            matches = df.filter(F.col("kind") == KIND_MATCH).drop(*EXTRA)
            late = df.filter(F.col("kind") != KIND_MATCH).select(
                "late_row.*", F.col("kind").alias("reason"), F.col("watermark_ms"))
            name = f"batch={batch_id:09d}"
            write_batch(matches, f"{self.output}/{name}", self.format, rows=n_matches)
            write_batch(late, f"{self.late}/{name}", self.format, rows=sum(counts.values()))
        finally:
            df.unpersist()


class _MatchProcessor(StatefulProcessor):
    """Per key: buffer until the watermark, release in order, feed the incremental engine.

    State: ``pending`` (ListState: per arrival, its rows not yet released with their event
    time in µs, as Arrow IPC, and their earliest time) and ``engine`` (ValueState: the engine's :class:`PartitionState` as bytes).
    """

    def __init__(self, spec: _Spec) -> None:
        self.spec = spec

    # Spark calls these with keyword arguments: the parameter names are fixed.
    def init(self, handle: StatefulProcessorHandle) -> None:
        spec = self.spec
        self.handle = handle
        input_schema = T.StructType.fromJson(_json(spec.input_schema_json))
        self.input_arrow = to_arrow_schema(input_schema, timezone="UTC")
        self.engine = Incremental(parse(spec.clause), self.input_arrow)
        pending = T.StructType([*input_schema.fields, T.StructField(US, T.LongType(), True)])
        self.pending_arrow = to_arrow_schema(pending, timezone="UTC")
        # one element per arrival: its rows as Arrow IPC (one state row per input row costs a
        # serialisation and a state-server entry each)
        self.pending = handle.getListState("pending", T.StructType([
            T.StructField("first_us", T.LongType(), True),
            T.StructField("rows", T.BinaryType(), True)]))
        self.state = handle.getValueState(
            "engine", T.StructType([T.StructField("data", T.BinaryType(), True)]))
        self.ncols = len(spec.columns)
        kind = self.input_arrow.field(spec.time_column).type
        self.temporal = pa.types.is_timestamp(kind) or pa.types.is_date(kind)
        self.unit_nanos = UNIT_NANOS[spec.time_unit]

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        wm = timerValues.getCurrentWatermarkInMs()
        frames = [pdf for pdf in rows if len(pdf)]
        if not frames:
            return
        pdf = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        pdf = pdf.iloc[:, : self.ncols + 1]  # positional: Spark renames internal columns
        pdf.columns = pd.Index(self.pending_arrow.names)
        table = pa.Table.from_pandas(pdf, schema=self.pending_arrow, preserve_index=False)
        us = table.column(US)
        on_time = pc.is_valid(us)
        if wm > 0:
            on_time = pc.and_(on_time, pc.fill_null(pc.greater(us, wm * 1000), False))
        out: list[dict[str, Any]] = []
        for row in table.filter(pc.invert(on_time)).to_pylist():
            values = tuple(row.values())
            kind = KIND_UNTIMED if values[self.ncols] is None else KIND_LATE
            out.append(self._rejected(values, kind, wm))
        keep = table.filter(on_time)
        if keep.num_rows:
            first = int(pc.min(keep.column(US)).as_py())
            self.pending.appendValue((first, _ipc(keep)))
            self.handle.registerTimer(ceil_div(first, 1000))
        if out:
            yield self._frame(out)

    def handleExpiredTimer(self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        wm = timerValues.getCurrentWatermarkInMs()
        limit = wm * 1000
        chunks = [pa.ipc.open_stream(r[1]).read_all() for r in self.pending.get()] \
            if self.pending.exists() else []
        batch = None
        if chunks:
            pending = pa.concat_tables(chunks)
            due = pc.less_equal(pending.column(US), limit)
            ready, rest = pending.filter(due), pending.filter(pc.invert(due))
            if ready.num_rows:
                if rest.num_rows:
                    first = int(pc.min(rest.column(US)).as_py())
                    self.pending.put([(first, _ipc(rest))])
                    self.handle.registerTimer(ceil_div(first, 1000))
                else:
                    self.pending.clear()
                columns = ready.select(self.spec.columns)
                order, _tied = release_order(ready.column(US), columns)
                batch = columns.take(order)
        value = self.state.get()  # None when the key has no state yet
        state = PartitionState.from_bytes(value[0]) if value is not None else None
        result, state = self.engine.feed(state, batch, horizon=self._horizon(wm))
        self.state.update((state.to_bytes(),))
        deadline = self.engine.deadline(state)
        if deadline is not None:  # the live search's window closes then: decide it
            self.handle.registerTimer(max(self._millis(deadline), wm + 1))
        if result.num_rows:
            frame = pd.DataFrame(result.to_pylist(), columns=result.column_names, dtype=object)
            frame["kind"] = KIND_MATCH
            frame["watermark_ms"] = None
            frame["late_row"] = None
            yield frame[self.spec.out_columns]

    def close(self) -> None:
        pass

    def _horizon(self, wm: int) -> float:
        """Every future on-time row's key (as WITHIN compares it) is greater than this."""
        nanos = wm * 1_000_000
        return float(nanos) if self.temporal else nanos / self.unit_nanos

    def _millis(self, key: float) -> int:
        nanos = key if self.temporal else key * self.unit_nanos
        return math.ceil(nanos / 1_000_000)

    def _rejected(self, row: tuple[Any, ...], kind: str, wm: int) -> dict[str, Any]:
        late = dict(zip(self.spec.columns, row[: self.ncols], strict=True))
        out: dict[str, Any] = {name: None for name in self.spec.out_columns}
        for name in self.spec.partition_names:
            out[name] = late[name]
        out.update(kind=kind, watermark_ms=wm, late_row=late)
        return out

    def _frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        return pd.DataFrame(rows, columns=self.spec.out_columns, dtype=object)


def release_order(times: pa.ChunkedArray | pa.Array, rows: pa.Table) -> tuple[pa.Array, int]:
    """The order rows are released in: by event time, ties by the row's contents (its
    ``repr``), whatever the arrival order; and how many rows were tied.

    Sorted by Arrow; only rows that share a time are converted to Python for their
    ``repr`` (in a stream of distinct times, none), so the order costs no Python
    object per row.
    """
    order = pc.sort_indices(times)  # stable
    sorted_times = times.take(order).to_numpy(zero_copy_only=False)
    same = sorted_times[1:] == sorted_times[:-1]
    if not same.any():
        return order, 0
    indices = order.to_numpy(zero_copy_only=False).copy()
    starts = np.flatnonzero(np.diff(np.concatenate(([False], same, [False])).astype(np.int8)) == 1)
    ends = np.flatnonzero(np.diff(np.concatenate(([False], same, [False])).astype(np.int8)) == -1)
    tied = 0
    for s, e in zip(starts.tolist(), (ends + 1).tolist(), strict=True):
        run = indices[s:e]
        texts = [repr(tuple(r.values())) for r in rows.take(pa.array(run)).to_pylist()]
        indices[s:e] = [run[k] for k in sorted(range(len(run)), key=texts.__getitem__)]
        tied += e - s
    return pa.array(indices, pa.int64()), tied


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _json(text: str) -> dict[str, Any]:
    import json

    data = json.loads(text)
    assert isinstance(data, dict)
    return data
