"""A file read by kleene's own reader inside Spark tasks, rows numbered (CSV, JSON Lines; Parquet too).

Spark's CSV parser costs the JVM several CPU-seconds more than a Parquet
read on the flights (docs/benchmarks.md), its types and nulls are not the
in-process engine's (``null`` is text to Spark, a value that does not parse
becomes a silent null), and the positions of its rows need an ordering job.
Read by :func:`kleene.io.readers.read_batches` instead (pyarrow, the
in-process reader's types, null tokens and invalid-UTF-8 marks), one task
per file, the rows come with their index in the file: when the driver found
the file in time order (:func:`scan`, one pyarrow pass, which the CSV
schema needed anyway), that index *is* the position, so
:func:`kleene.spark.detect` takes it as ``position_column`` and runs no
ordering job.

Under PARTITION BY, a file of at most :data:`EACH_TASK_BYTES` is read whole
by every evaluating task (:class:`FileRows` as ``detect``'s ``task_reader``),
which keeps its own keys: no shuffle, one Spark job; a Parquet file in time
order goes the same way (its footer gives the schema).  A larger file is
read by one task (pyarrow) and spread by the evaluation's shuffle.  A file
the driver cannot read, a directory, or a file out of time order takes
Spark's own reader and the general ordering path instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kleene.io.badrows import SKIP_HINTS
from kleene.io.readers import read_batches
from kleene.io.textfiles import BUFFER_BYTES
from kleene.io.utf8 import INVALID_UTF8, unmark
from kleene.io.utf8 import REASON as UTF8_REASON
from kleene.language.errors import DataError, KleeneError

ROW_COLUMN = "__kleene_row"
"""The column of each row's index in its file (dropped by :func:`kleene.spark.detect` when it is the positions)."""

TEXT_FORMATS = ("csv", "jsonl")


@dataclass(frozen=True)
class Scan:
    """What the driver learnt from reading a text file once with kleene's reader."""

    schema: pa.Schema
    """The columns as the in-process reader types them (without the invalid-UTF-8 marks)."""
    rows: int
    in_time_order: bool
    """The time column never decreases and is never null (or there is none): row index = position."""


def times_in_order(times: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a time column is non-null, of a comparable type, and never decreases (row order)."""
    typ = times.type
    if times.null_count or not (
        pa.types.is_timestamp(typ) or pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_date(typ)
    ):
        return False
    if len(times) < 2:
        return True
    values = times.combine_chunks() if isinstance(times, pa.ChunkedArray) else times
    if pa.types.is_floating(typ) and pc.any(pc.is_nan(values)).as_py():
        return False
    return bool(pc.all(pc.greater_equal(values.slice(1), values.slice(0, len(values) - 1))).as_py())


def scan(path: str, fmt: str, time_column: str | None) -> Scan | None:
    """Read one CSV or JSON Lines file on the driver: its types, rows and whether it is in time order.

    None when it is not one such file (a JSON Lines file above :data:`EACH_TASK_BYTES`
    neither), or kleene's reader cannot read it (Spark's reader then reports what
    is wrong, as before).  The batches are not kept:
    only the time column's order is checked, batch after batch.
    """
    p = Path(path)
    if fmt not in TEXT_FORMATS or not p.is_file():
        return None
    if fmt == "jsonl" and p.stat().st_size > EACH_TASK_BYTES:
        return None  # Spark's reader, as before: the driver read no JSON Lines file whole then
    schema: pa.Schema | None = None
    rows = 0
    ordered = True
    last: Any = None
    try:
        for batch in read_batches(p, format=fmt):
            if schema is None:
                schema = batch.schema
            rows += batch.num_rows
            if ordered and time_column is not None:
                if time_column not in batch.schema.names:
                    ordered = False
                    continue
                times = batch.column(time_column)
                ordered = times_in_order(times)
                if ordered and last is not None and len(times) and pc.less(times[0], last).as_py():
                    ordered = False
                if len(times):
                    last = times[len(times) - 1]
    except (OSError, KleeneError, pa.ArrowException):
        return None
    if schema is None:
        return None  # no rows: Spark's reader and its messages
    if INVALID_UTF8 in schema.names:
        schema = schema.remove(schema.get_field_index(INVALID_UTF8))
    return Scan(schema, rows, ordered)


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark schema of the reader's Arrow types (None: a type Spark cannot hold).

    A column null throughout is text; a timestamp with a zone is Spark's
    ``TimestampType``, a naive one ``TimestampNTZType`` (microseconds: a finer
    text time is cut, as Spark's own CSV reader cuts it).
    """
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_type

    fields = []
    for field in schema:
        typ = field.type
        if pa.types.is_null(typ):
            spark_type: Any = T.StringType()
        elif pa.types.is_timestamp(typ):
            spark_type = T.TimestampType() if typ.tz else T.TimestampNTZType()
        else:
            try:
                spark_type = from_arrow_type(typ)
            except Exception:  # noqa: BLE001 - PySpark raises several kinds for a type it lacks
                return None
        fields.append(T.StructField(field.name, spark_type, True))
    return T.StructType(fields)


def read(spark: Any, path: str, fmt: str, schema: Any, *, rows: int | None = None) -> tuple[Any, FileRows]:
    """A DataFrame of the file read by kleene's reader in one task, with :data:`ROW_COLUMN`,
    and the reader itself (:class:`FileRows`, for :func:`kleene.spark.detect`'s ``task_reader``).

    ``schema`` is the Spark schema of the file's columns (:func:`spark_schema`
    of the driver's :func:`scan`); the task checks that it reads the same
    columns, and ``rows`` rows when given (a file changed in between fails
    the job, it is not read half-right).
    """
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    full = T.StructType([*schema.fields, T.StructField(ROW_COLUMN, T.LongType(), False)])
    zone = str(spark.conf.get("spark.sql.session.timeZone") or "UTC")
    reader = FileRows(path=str(Path(path).resolve()), fmt=fmt, schema=to_arrow_schema(full, timezone=zone), rows=rows)
    return spark.range(1, numPartitions=1).mapInArrow(_OneTask(reader), full), reader


class FileRows:
    """The rows of one text file in Spark's Arrow types, numbered: a picklable function run in tasks."""

    def __init__(self, *, path: str, fmt: str, schema: pa.Schema, rows: int | None) -> None:
        self.path = path
        self.fmt = fmt
        self.schema = schema
        self.rows = rows

    def __call__(self) -> Iterator[pa.RecordBatch]:
        fields = list(self.schema)[:-1]
        names = [f.name for f in fields]
        row = 0
        for batch in read_batches(self.path, format=self.fmt):
            n = batch.num_rows
            if INVALID_UTF8 in batch.schema.names:
                batch, marked = unmark(batch)
                if marked:  # the error policy's words (the only policy on Spark)
                    at, column = marked[0]
                    raise DataError(f"bad input: {UTF8_REASON}{SKIP_HINTS.get(UTF8_REASON, '')}", row=row + at, column=column)
            if batch.schema.names != names:
                raise DataError(
                    f"{self.path!r} changed while Spark read it: columns {batch.schema.names}, expected {names}"
                )
            arrays = [_cast(batch.column(i), f.type, f.name, row) for i, f in enumerate(fields)]
            arrays.append(pa.array(np.arange(row, row + n, dtype=np.int64)))
            yield pa.RecordBatch.from_arrays(arrays, schema=self.schema)
            row += n
        if self.rows is not None and row != self.rows:
            raise DataError(f"{self.path!r} changed while Spark read it: {row:,} rows, expected {self.rows:,}")


class _OneTask:
    """The ``mapInArrow`` function of :func:`read`: the one task of ``spark.range(1)`` reads the file."""

    def __init__(self, rows: FileRows) -> None:
        self.rows = rows

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:  # the one row of spark.range(1)
            pass
        yield from self.rows()


def _cast(values: pa.Array, typ: pa.DataType, name: str, first_row: int) -> pa.Array:
    """The reader's column in Spark's Arrow type (seconds to microseconds, a null column to text)."""
    if values.type == typ:
        return values
    try:
        return values.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise DataError(f"cannot hold {values.type} as {typ} on Spark: {exc}", row=first_row, column=name) from exc


EACH_TASK_BYTES = BUFFER_BYTES
"""Files up to this size are read by every evaluating task (:func:`kleene.spark.detect`'s
``task_reader``: no shuffle); pyarrow reads such a file whole, its blocks in parallel."""
