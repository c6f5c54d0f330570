"""Complex events of :func:`kleene.spark.detect` in the in-process CLI's layout, written by Spark.

``kleene run --engine spark`` writes what ``kleene run`` writes: the columns
``start, end, positions, events`` and, under PARTITION BY, ``partition`` (an
object keyed by the PARTITION BY attribute names, as Parquet's named struct),
with the events projected as ``SELECT a[x, y]`` projects them.  For JSON Lines
the values are those of the in-process writer too:

* times are ISO-8601 text as Python's ``isoformat`` writes them: a fraction
  only when not zero (6 digits, 9 for a nanosecond remainder), and the offset
  (``+00:00``) only for a time-zone-aware column (:class:`TimeText`);
* NaN and infinities are ``null``; null attributes are kept (``"x": null``).

The frame is written by Spark's DataFrameWriter (:func:`write`), one part
file per task, into a directory: nothing passes through the driver.  Spark
has no Arrow IPC writer, so Arrow output is written by the tasks themselves
(``mapInArrow``: each task writes its rows to ``part-NNNNN.arrow`` with
pyarrow and returns only the file's name and row count).  The directory
appears at ``path`` only when every task succeeded (written beside it, then
renamed), as the in-process CLI replaces its output file only on success.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kleene.api import Query


@dataclass(frozen=True)
class TimeText:
    """How one time column is written as text: its unit in Spark and the zone of its offset.

    ``nanos``: the column is a long of nanoseconds since the epoch (a Parquet
    ``TIMESTAMP(NANOS)`` read with ``spark.sql.legacy.parquet.nanosAsLong``);
    otherwise a Spark timestamp (microseconds).  ``zone``: the time zone the
    in-process engine shows it in (the Arrow type's ``tz``); None for a naive
    time, written without an offset.
    """

    nanos: bool = False
    zone: str | None = "UTC"


def layout(
    result: DataFrame,
    query: Query,
    *,
    text_times: dict[str, TimeText] | None = None,
) -> DataFrame:
    """``result`` as the in-process CLI's columns; with ``text_times``, times and floats as its JSON.

    ``text_times`` maps time columns to how they are rendered; every other
    timestamp column of the events is rendered as a zone-aware (UTC) time.
    Without it (Parquet, Arrow) values keep their Spark types.
    """
    event_type = result.schema["events"].dataType
    assert isinstance(event_type, T.ArrayType) and isinstance(event_type.elementType, T.StructType)
    fields = {f.name: f.dataType for f in event_type.elementType.fields}
    attrs = query.plan.attrs
    keep = list(fields) if attrs is None else list(dict.fromkeys((query.options.type_column, *attrs)))
    json = text_times is not None
    times = text_times or {}

    def event(e: Column) -> Column:
        cols = []
        for name in keep:
            if name not in fields:
                cols.append(F.lit(None).alias(name))  # as in process: a listed attribute the input lacks
                continue
            value, typ = e[name], fields[name]
            if json:
                value = _json_value(value, typ, times.get(name))
            cols.append(value.alias(name))
        return F.struct(*cols)

    columns = [F.col("start"), F.col("end"), F.col("positions"), F.transform("events", event).alias("events")]
    if query.partition_by:
        columns.append(F.col("partition"))
    return result.select(*columns)


def _json_value(value: Column, typ: T.DataType, text: TimeText | None) -> Column:
    if text is not None and text.nanos and isinstance(typ, T.LongType):
        return iso_text(value, text)
    if isinstance(typ, (T.TimestampType, T.TimestampNTZType)):
        zone = (text or TimeText()).zone if isinstance(typ, T.TimestampType) else None
        return iso_text(value, TimeText(nanos=False, zone=zone))
    if isinstance(typ, (T.FloatType, T.DoubleType)):
        finite = ~F.isnan(value) & (F.abs(value) != F.lit(float("inf")))
        return F.when(finite, value)
    return value


def iso_text(value: Column, text: TimeText) -> Column:
    """A time as Python's ``isoformat`` writes it (pandas' for nanoseconds), in ``text.zone``.

    The session's time zone must be UTC (``local_session`` sets it): Spark
    formats the wall-clock fields in it.
    """
    if text.nanos:
        billion = F.lit(1_000_000_000)
        fraction = F.pmod(value, billion)
        seconds = F.round((value - fraction) / billion).cast("long")
        digits = F.when(fraction % 1000 == 0, F.lpad((fraction / 1000).cast("long").cast("string"), 6, "0"))
        digits = digits.otherwise(F.lpad(fraction.cast("string"), 9, "0"))
        instant = F.timestamp_seconds(seconds)
    else:
        micros = F.unix_micros(value.cast("timestamp"))
        fraction = F.pmod(micros, F.lit(1_000_000))
        digits = F.lpad(fraction.cast("string"), 6, "0")
        instant = value.cast("timestamp")
    zone = text.zone
    local = instant if zone in (None, "UTC", "Z", "+00:00") else F.from_utc_timestamp(instant, zone)
    base = F.date_format(local, "yyyy-MM-dd'T'HH:mm:ss")
    parts = [base, F.when(fraction != 0, F.concat(F.lit("."), digits)).otherwise(F.lit(""))]
    if zone is not None:
        parts.append(_offset(local, instant) if local is not instant else F.lit("+00:00"))
    return F.when(value.isNotNull(), F.concat(*parts))


def _offset(local: Column, instant: Column) -> Column:
    """``+HH:MM``: the zone's offset at that instant (local wall time minus UTC)."""
    minutes = ((F.unix_seconds(local) - F.unix_seconds(instant)) / 60).cast("int")
    sign = F.when(minutes < 0, F.lit("-")).otherwise(F.lit("+"))
    size = F.abs(minutes)
    hours = F.lpad((size / 60).cast("int").cast("string"), 2, "0")
    mins = F.lpad((size % 60).cast("string"), 2, "0")
    return F.concat(sign, hours, F.lit(":"), mins)


# ------------------------------------------------------------------ writing
def json_lines(frame: DataFrame) -> Iterator[str]:
    """The frame's rows as JSON lines, streamed to the driver one partition at a time (for stdout)."""
    spark = frame.sparkSession
    saved = spark.conf.get("spark.sql.jsonGenerator.ignoreNullFields")
    spark.conf.set("spark.sql.jsonGenerator.ignoreNullFields", "false")
    try:
        for line in frame.toJSON().toLocalIterator():
            yield str(line)
    finally:
        spark.conf.set("spark.sql.jsonGenerator.ignoreNullFields", saved or "true")


def write(frame: DataFrame, path: str, fmt: str) -> list[str]:
    """Write ``frame`` with Spark's writers as a directory of part files; return their names.

    Each part file is sorted by ``(end, start)`` (the in-process order within
    a task); part files are not ordered among themselves.  The directory
    replaces ``path`` only once every task has succeeded.
    """
    target = Path(path)
    staging = target.with_name(f".{target.name}.kleene-{uuid.uuid4().hex[:8]}")
    ordered = frame.sortWithinPartitions("end", "start")
    try:
        if fmt == "jsonl":
            ordered.write.option("ignoreNullFields", False).json(str(staging))
        elif fmt == "parquet":
            ordered.write.parquet(str(staging))
        elif fmt == "arrow":
            _write_arrow(ordered, str(staging))
        else:
            raise ValueError(f"unknown output format {fmt!r}")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    os.replace(staging, target)
    return sorted(p.name for p in target.iterdir() if p.name.startswith("part-"))


def _write_arrow(frame: DataFrame, directory: str) -> None:
    """Each task writes its rows as one Arrow IPC file (Spark has no Arrow writer of its own)."""
    Path(directory).mkdir(parents=True)
    writer = _ArrowParts(directory)
    done = frame.mapInArrow(writer, "file string, rows long").collect()  # one small row per task
    if not done:  # no task had rows: still an Arrow file, as the in-process CLI writes
        schema = _arrow_schema(frame)
        with pa.ipc.new_file(os.path.join(directory, "part-00000.arrow"), schema):
            pass
    Path(directory, "_SUCCESS").touch()


def _arrow_schema(frame: DataFrame) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    zone = str(frame.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC")
    return to_arrow_schema(frame.schema, timezone=zone)


class _ArrowParts:
    """The ``mapInArrow`` function of :func:`_write_arrow` (a module-level class: pickled by reference)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        part = context.partitionId() if context is not None else 0
        name = f"part-{part:05d}.arrow"
        rows = 0
        writer: pa.ipc.RecordBatchFileWriter | None = None
        try:
            for batch in batches:
                if writer is None:
                    writer = pa.ipc.new_file(os.path.join(self.directory, name), batch.schema)
                writer.write_batch(batch)
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
        if writer is not None:
            yield pa.RecordBatch.from_arrays([pa.array([name]), pa.array([rows], pa.int64())], names=["file", "rows"])


def part_files(path: str, suffixes: Sequence[str] = (".json", ".parquet", ".arrow")) -> list[Path]:
    """The part files of an output directory, in name order (for readers and tests)."""
    return sorted(p for p in Path(path).iterdir() if p.name.startswith("part-") and p.suffix in suffixes)
