"""``kleene run --engine spark``: the same query and output, evaluated by :func:`kleene.spark.detect`.

PySpark is imported only when this runs; without the ``spark`` extra the
command stops with what to install (exit code 1).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

import kleene
from kleene.cli.common import (
    EXIT_OK,
    UsageError,
    load_query,
    new_spark_log,
    parse_inputs,
    warnings_to_log,
)
from kleene.cli.sidefiles import check_written_files
from kleene.io.badrows import SKIP_HINTS
from kleene.io.peek import Peeked, peek_schema
from kleene.io.readers import cheap_columns, count_rows, detect_format, read_batches
from kleene.io.writers import output_format
from kleene.language.checks import check
from kleene.language.errors import DataError, KleeneError, QueryError
from kleene.language.query_cache import parse
from kleene.language.schema import Schema


def run_spark(args: argparse.Namespace, stderr: IO[str]) -> int:
    """``--engine spark``: the same query and output, evaluated by :func:`kleene.spark.detect`.

    Spark numbers rows by (time column, input order), so on a file sorted by
    time the positions are the in-process engine's.  Only the ``error``
    bad-row policy exists on Spark (a bad row fails the job, exit 3).

    ``--output DIR`` is a directory of part files written by Spark's writers
    (JSON Lines, Parquet; Arrow IPC written by the tasks), one per task, each
    in (end, start) order, replacing DIR only when the run succeeds;
    nothing passes through the driver.  Standard output (``-``, the
    default) streams JSON Lines through the driver, one partition at a time.
    A Parquet ``TIMESTAMP(NANOS)`` column is read as long nanoseconds
    (exact; Spark's own timestamps hold microseconds) and written back as
    the in-process CLI writes the time (see :mod:`kleene.spark.output`).
    """
    inputs = parse_inputs(args.input)
    if len(args.query) != 1 or len(inputs) != 1 or inputs[0][0] is not None:
        raise UsageError("--engine spark runs one query over one input")
    args.input = inputs[0][1]
    query_text = load_query(args.query[0])
    if len(parse(query_text).queries) != 1:
        raise UsageError("--engine spark runs one query over one input")
    if (args.on_bad_row and args.on_bad_row != ["error"]) or args.quarantine:
        # Refused before the JVM starts: a task's bad row fails its job (exit 3, row and column).
        raise UsageError(
            "--engine spark supports only --on-bad-row error (it stops at the first bad row): "
            "--on-bad-row skip and quarantine are for the in-process engine (leave out "
            "--engine spark), or filter such rows out of the input first"
        )
    if args.max_delay:
        raise UsageError("--engine spark orders events itself: --max-delay is for the in-process engine")
    if getattr(args, "null_values", None):
        raise UsageError("--null-values is for the in-process engine (Spark's CSV reader takes one null token)")
    if args.input == "-":
        raise UsageError("--engine spark reads a file or directory: standard input is for the in-process engine")
    check_written_files([args.input], [("--output", args.output), ("--spark-log", args.spark_log)])
    fmt_out = output_format(args.output, args.output_format)
    if args.output == "-" and fmt_out != "jsonl":
        raise UsageError(f"--output-format {fmt_out} writes a directory: give --output DIR")
    if not Path(args.input).exists():
        raise DataError(f"input file {args.input!r} does not exist")  # as the in-process reader says
    fmt = detect_format(args.input, args.format)
    peeked = _peek(args.input, fmt)
    nanos = _nanos_columns(peeked, fmt)
    time_unit = "ns" if args.time_column in nanos else args.time_unit
    query = kleene.compile(
        query_text,
        type_column=args.type_column,
        time_column=args.time_column,
        time_unit=time_unit,
        stream_column=args.stream_column,
        # The limits travel with the options to each task's engine (kleene.limits).
        max_states=getattr(args, "max_states", None),
        max_runs=getattr(args, "max_runs", None),
        max_matches=getattr(args, "max_matches", None),
        max_memory=getattr(args, "max_memory", None),
    )
    precheck(query, peeked)
    if getattr(args, "strict_types", False):
        # Before the JVM starts; Spark's run has no end-of-input check, so it must be cheap.
        names = cheap_columns(args.input, [args.type_column], format=fmt)
        if names is None:
            raise UsageError(
                "--strict-types with --engine spark reads the type column first: it needs a "
                "Parquet file or an uncompressed text file of at most 64 MiB"
            )
        query.check_names(names)
    # Imported here, not at the top: PySpark and pandas are an optional extra (kleene[spark]),
    # about 0.3 s to import, and no other command needs them.  Without them this raises
    # MissingDependencyError, which names what to install.
    from kleene.spark import (  # first: says what to install
        active_session,
        detect,
        local_session,
        stop_session,
    )
    from kleene.spark.output import json_lines, layout, write
    from kleene.spark.session import DRIVER_JAVA_OPTIONS, DUMP_OPTION

    from py4j.protocol import Py4JJavaError  # isort: skip
    from pyspark.errors import PySparkException  # isort: skip

    # Stop the session at the end only if this run started it (a caller's
    # session, e.g. in tests or a notebook, is left running).
    owned = active_session() is None
    if owned:  # Spark's log lines (and its Python workers') go to a file: stderr is kleene's
        log_file = args.spark_log or new_spark_log("run")
        print(f"kleene run: Spark's log: {log_file}", file=stderr)
        with warnings.catch_warnings():
            warnings.showwarning = warnings_to_log(log_file)
            spark = local_session(
                args.master, app_name="kleene run", log_file=log_file,
                quick_jit=quick_jit(args.input, fmt),
                class_archive=getattr(args, "class_archive", True),
            )
        building = DUMP_OPTION in str(spark.conf.get(DRIVER_JAVA_OPTIONS, ""))
        if building:
            print(
                "kleene run: this first run on Spark also builds the JVM's class archive, "
                "so that the next ones start faster (about 30 CPU-seconds, once)",
                file=stderr,
            )
    else:
        spark = local_session(args.master, app_name="kleene run")
    saved_nanos = str(spark.conf.get(NANOS_AS_LONG, "false"))
    if nanos:
        spark.conf.set(NANOS_AS_LONG, "true")
    try:
        try:
            df = _read(spark, args.input, fmt)
        except (PySparkException, Py4JJavaError) as exc:
            raise DataError(f"cannot read {args.input!r}: {_first_line(exc)}") from exc
        try:
            result = detect(df, query, position_column=row_index_positions(args.input, fmt, args.time_column))
        except (DataError, QueryError):
            raise
        except kleene.KleeneError as exc:
            raise DataError(str(exc)) from exc
        texts = _time_texts(peeked, nanos) if fmt_out == "jsonl" else None
        frame = layout(result, query, text_times=texts)
        try:
            if args.output == "-":
                out = sys.stdout
                for line in json_lines(frame.orderBy("end", "start")):
                    out.write(line + "\n")
                out.flush()
            else:
                write(frame, args.output, fmt_out)
        except (PySparkException, Py4JJavaError) as exc:
            error = _task_data_error(exc)
            if error is not None:
                raise error from exc
            raise kleene.KleeneError(f"Spark failed: {_first_line(exc)}") from exc
    finally:
        if not owned:
            spark.conf.set(NANOS_AS_LONG, saved_nanos)
        elif stop_session(spark) is not None:
            print("kleene run: Spark's class archive is built", file=stderr)
    return EXIT_OK


QUICK_JIT_ROWS = 500_000
"""Inputs of at most this many rows start the JVM with C1 only (``local_session(quick_jit=True)``).

On the flights (336,776 rows, docs/benchmarks.md) C1 saved about 11 CPU-seconds of
compiling in a cold run, and its slower code cost about 4 CPU-seconds more per warm
run of the same rows: the two cross near 900,000 rows; this stays well below.
"""


def quick_jit(path: str, fmt: str) -> bool:
    """Whether this run's input is small enough for a C1-only JVM (rows known cheaply).

    Parquet: the footer's count; a text file is counted (newlines) only up to
    64 MiB, beyond which it has too many rows anyway at any usual width.
    """
    p = Path(path)
    if fmt != "parquet" and (not p.is_file() or p.stat().st_size > 64 << 20):
        return False
    rows = count_rows(p, format=fmt)
    return rows is not None and rows <= QUICK_JIT_ROWS


ROW_INDEX = "_metadata.row_index"
"""Spark's hidden column of a Parquet row's index in its file."""


def row_index_positions(path: str, fmt: str, time_column: str | None) -> str | None:
    """:data:`ROW_INDEX` as the positions, for one Parquet file in time order (else None).

    Most event files are written in time order.  For one such Parquet file a
    row's index in the file *is* its position in (time, input) order, so
    :func:`kleene.spark.detect` needs no job to order the rows (the order
    check reads every row's time through the Python workers).  pyarrow reads
    the time column alone to make sure: some milliseconds on the flights.
    """
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    p = Path(path)
    if fmt != "parquet" or not p.is_file():
        return None
    if time_column is None:
        return ROW_INDEX  # the file's order is the order
    try:
        times = pq.read_table(p, columns=[time_column]).column(0)
    except (OSError, KeyError, pa.ArrowException):
        return None  # Spark's reader says what is wrong
    typ = times.type
    if times.null_count or not (
        pa.types.is_timestamp(typ) or pa.types.is_integer(typ) or pa.types.is_floating(typ)
        or pa.types.is_date(typ)
    ):
        return None  # nulls and texts: the general path and its messages
    if len(times) < 2:
        return ROW_INDEX
    values = times.combine_chunks()
    if pa.types.is_floating(typ) and pc.any(pc.is_nan(values)).as_py():
        return None
    ordered = pc.all(pc.greater_equal(values.slice(1), values.slice(0, len(values) - 1))).as_py()
    return ROW_INDEX if ordered else None


NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"
"""Spark cannot hold nanoseconds in a timestamp; with this it reads them as long nanoseconds (exact)."""


def _read(spark: Any, path: str, fmt: str) -> Any:
    reader = spark.read
    if fmt == "csv":
        schema = _csv_schema(path)
        if schema is not None:
            return reader.option("header", True).schema(schema).csv(path)
        return reader.option("header", True).option("inferSchema", True).csv(path)
    if fmt == "parquet":
        schema = parquet_schema(
            path,
            nanos_as_long=_conf_true(spark, NANOS_AS_LONG, "false"),
            naive_as_ntz=_conf_true(spark, "spark.sql.parquet.inferTimestampNTZ.enabled", "true"),
        )
        return (reader.schema(schema) if schema is not None else reader).parquet(path)
    # ISO times become timestamps, as Arrow's JSON reader (the in-process engine's) makes them.
    return reader.option("inferTimestamp", True).json(path)


def _csv_schema(path: str) -> Any:
    """The CSV's column types as the in-process reader settles them (pyarrow, the whole file), for Spark.

    Spark's own ``inferSchema`` reads the file once more in the JVM, trying
    every value as a timestamp: on the flights (30 MB) that pass cost more
    than reading the file with Arrow here, and its types could differ from the
    in-process engine's (int and long, which strings are times).  A column
    that is empty throughout is read as text.  None (Spark infers) for
    compressed files or a directory.
    """
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import from_arrow_type

    p = Path(path)
    if p.is_dir() or p.suffix.lower() in (".gz", ".bz2", ".xz"):
        return None
    try:
        first = next(iter(read_batches(p, format="csv", batch_size=1)), None)
    except (OSError, KleeneError, pa.ArrowException):
        return None  # Spark's reader reports it
    if first is None:
        return None
    fields = []
    for field in first.schema:
        typ = field.type
        if pa.types.is_null(typ):
            spark_type: Any = T.StringType()
        elif pa.types.is_timestamp(typ):
            spark_type = T.TimestampType() if typ.tz else T.TimestampNTZType()
        else:
            try:
                spark_type = from_arrow_type(typ)
            except Exception:  # noqa: BLE001 - a type Spark cannot hold: let it infer the file
                return None
        fields.append(T.StructField(field.name, spark_type, True))
    return T.StructType(fields)


PARQUET_TYPES = {
    ("BOOLEAN", "NONE"): "boolean",
    ("INT32", "NONE"): "int",
    ("INT64", "NONE"): "bigint",
    ("FLOAT", "NONE"): "float",
    ("DOUBLE", "NONE"): "double",
    ("BYTE_ARRAY", "STRING"): "string",
    ("INT32", "DATE"): "date",
}
"""Parquet (physical type, logical type) pairs whose Spark type :func:`parquet_schema` knows for sure."""


def _conf_true(spark: Any, key: str, default: str) -> bool:
    return str(spark.conf.get(key, default)).lower() == "true"


def parquet_schema(path: str, *, nanos_as_long: bool, naive_as_ntz: bool = True) -> Any:
    """The Spark schema of a Parquet file, from its footer (pyarrow), or None to let Spark infer it.

    Spark infers a Parquet file's schema in a job of its own (one task that
    reads the footer); the footer read here gives the same schema without it.
    Only a single file of flat columns of the types in :data:`PARQUET_TYPES`,
    signed integers and timestamps (``TIMESTAMP(NANOS)`` as long nanoseconds
    under ``nanos_as_long``; a naive one as ``TIMESTAMP_NTZ`` only under
    ``naive_as_ntz``, Spark's ``inferTimestampNTZ``) is mapped; anything else (a directory, nested or
    unsigned columns, INT96, decimals, binary) is left to Spark's inference.
    Fields are nullable, as Spark reads every file column.
    """
    import pyarrow.parquet as pq
    from pyspark.sql import types as T

    if not Path(path).is_file():
        return None
    try:
        columns = pq.ParquetFile(path).schema
    except (OSError, pa.ArrowException):
        return None  # Spark's reader reports it
    simple = {"boolean": T.BooleanType(), "int": T.IntegerType(), "bigint": T.LongType(),
              "float": T.FloatType(), "double": T.DoubleType(), "string": T.StringType(), "date": T.DateType()}
    fields = []
    for i in range(len(columns)):
        column = columns.column(i)
        if column.max_repetition_level or "." in column.path or column.path != column.name:
            return None  # nested or repeated
        physical, logical = column.physical_type, column.logical_type
        kind = PARQUET_TYPES.get((physical, logical.type))
        spark_type: Any = simple[kind] if kind is not None else None
        if logical.type == "INT":
            facts = json.loads(logical.to_json())
            if facts.get("isSigned") is True and physical in ("INT32", "INT64"):
                spark_type = {8: T.ByteType(), 16: T.ShortType(), 32: T.IntegerType(), 64: T.LongType()}.get(
                    int(facts.get("bitWidth", 0))
                )
        elif logical.type == "TIMESTAMP" and physical == "INT64":
            facts = json.loads(logical.to_json())
            unit, utc = facts.get("timeUnit"), facts.get("isAdjustedToUTC")
            if unit in ("milliseconds", "microseconds") and (utc or naive_as_ntz):
                spark_type = T.TimestampType() if utc else T.TimestampNTZType()
            elif unit == "nanoseconds" and nanos_as_long:
                spark_type = T.LongType()
        if spark_type is None:
            return None
        fields.append(T.StructField(column.name, spark_type, True))
    return T.StructType(fields) if fields else None


def _peek(path: str, fmt: str) -> Peeked | None:
    try:
        return peek_schema(path, fmt)
    except (OSError, ValueError, pa.ArrowException):
        return None  # unreadable here: Spark's reader reports it


def _nanos_columns(peeked: Peeked | None, fmt: str) -> dict[str, str | None]:
    """Parquet ``TIMESTAMP(NANOS)`` columns and their time zones (Spark reads them as long ns)."""
    if peeked is None or fmt != "parquet":
        return {}
    return {
        f.name: f.type.tz
        for f in peeked.schema
        if pa.types.is_timestamp(f.type) and f.type.unit == "ns"
    }


def _time_texts(peeked: Peeked | None, nanos: dict[str, str | None]) -> dict[str, Any]:
    """How each time column is written in JSON Lines: as the in-process reader typed it."""
    from kleene.spark.output import TimeText

    texts: dict[str, Any] = {}
    for field in peeked.schema if peeked is not None else ():
        if pa.types.is_timestamp(field.type):
            texts[field.name] = TimeText(nanos=field.name in nanos, zone=field.type.tz)
    return texts


def _first_line(exc: BaseException) -> str:
    """The first line of Spark's own message (a Java exception's, not py4j's "error calling o48")."""
    java = getattr(exc, "java_exception", None)
    text = (str(java.getMessage()) if java is not None else str(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def precheck(query: kleene.Query, peeked: Peeked | None) -> None:
    """Check the query against the input's columns before Spark starts (the JVM takes 8-30 s).

    The columns come from :func:`kleene.io.peek.peek_schema` (the Parquet
    footer, the CSV header and first block, the first JSON line).  A missing
    type column (exit 3) or an unknown attribute (exit 2, with the caret) is
    then reported with the in-process CLI's message and in its time.  From a
    sampled guess (CSV, JSON Lines) with a column null throughout the sample,
    nothing is concluded: :func:`kleene.spark.detect` checks again against
    Spark's schema of the whole input.
    """
    if query.schema is not None or peeked is None:
        return  # a declared schema (CREATE STREAM) was checked by kleene.compile already
    schema = Schema.from_arrow(  # DataError: no type column (unless every event pattern is _)
        peeked.schema, query.options.type_column, needs_type_column=query.plan.type_column is not None
    )
    for role, column in (("time", query.options.time_column), ("stream", query.options.stream_column)):
        if column is not None and column not in peeked.schema.names:
            raise DataError(f"the {role} column is missing", column=column)  # the in-process words
    if peeked.exact or not peeked.untyped:
        check(query.ast, query.text, schema)


SPARK_SKIP_HINT = (
    " (--engine spark stops at the first bad row: filter such rows out of the input first, or "
    "run in process, where --on-bad-row skip sets them aside and counts them)"
)


def _task_data_error(exc: BaseException) -> DataError | None:
    """A DataError raised inside a Spark task reaches the driver as text: recover its message
    (where it says how to go on with --on-bad-row, say what works on Spark instead)."""
    text = str(exc)
    marker = "DataError: "
    if marker not in text:
        return None
    message = text.split(marker, 1)[1].strip().splitlines()[0]
    for hint in SKIP_HINTS.values():
        message = message.replace(hint, SPARK_SKIP_HINT)
    return DataError(message)
