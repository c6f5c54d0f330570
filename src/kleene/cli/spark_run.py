"""``kleene run --engine spark``: the same query and output, evaluated by :func:`kleene.spark.detect`.

PySpark is imported only when this runs; without the ``spark`` extra the
command stops with what to install (exit code 1).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO, Any

import kleene
from kleene.cli.common import EXIT_OK, UsageError, load_query, parse_inputs
from kleene.cli.output import Output
from kleene.io.readers import cheap_columns, detect_format
from kleene.io.writers import JsonlWriter, output_format
from kleene.language.errors import DataError, QueryError
from kleene.language.parser import parse


def run_spark(args: argparse.Namespace, stderr: IO[str]) -> int:
    """``--engine spark``: the same query and output format, evaluated by :func:`kleene.spark.detect`.

    Spark numbers rows by (time column, input order), so on a file sorted by
    time the positions are the in-process engine's.  Only the ``error``
    bad-row policy exists on Spark (a bad row fails the job, exit 3).
    Complex events are written in (end, start, positions) order, streamed
    to the driver with ``toLocalIterator``; the output file is replaced only
    when the run succeeds, as with the in-process engine.
    """
    inputs = parse_inputs(args.input)
    if len(args.query) != 1 or len(inputs) != 1 or inputs[0][0] is not None:
        raise UsageError("--engine spark runs one query over one input")
    args.input = inputs[0][1]
    query_text = load_query(args.query[0])
    if len(parse(query_text).queries) != 1:
        raise UsageError("--engine spark runs one query over one input")
    if (args.on_bad_row and args.on_bad_row != ["error"]) or args.quarantine:
        raise UsageError("--engine spark supports only --on-bad-row error")
    if args.max_delay:
        raise UsageError("--engine spark orders events itself: --max-delay is for the in-process engine")
    query = kleene.compile(
        query_text,
        type_column=args.type_column,
        time_column=args.time_column,
        time_unit=args.time_unit,
        stream_column=args.stream_column,
    )
    if not Path(args.input).exists():
        raise OSError(f"cannot read {args.input!r}: no such file")
    fmt = detect_format(args.input, args.format)
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
    from kleene.spark import active_session, detect, local_session

    # Stop the session at the end only if this run started it (a caller's
    # session, e.g. in tests or a notebook, is left running).
    owned = active_session() is None
    spark = local_session(args.master, app_name="kleene run")
    try:
        reader = spark.read
        if fmt == "csv":
            df = reader.option("header", True).option("inferSchema", True).csv(args.input)
        elif fmt == "parquet":
            df = reader.parquet(args.input)
        else:
            df = reader.json(args.input)
        try:
            result = detect(df, query)
        except (DataError, QueryError):
            raise
        except kleene.KleeneError as exc:
            raise DataError(str(exc)) from exc
        if output_format(args.output, args.output_format) != "jsonl":
            raise UsageError("--engine spark writes JSON Lines only")
        output = Output(args.output)
        writer = output.writer
        assert isinstance(writer, JsonlWriter)
        try:
            rows = result.orderBy("end", "start", "positions").toLocalIterator()
            attrs = query.plan.attrs
            for row in rows:
                writer.write(_spark_event(row.asDict(recursive=True), query.options.type_column, attrs))
            output.commit()
        except BaseException as exc:
            output.abort()
            error = _task_data_error(exc)
            if error is not None:
                raise error from exc
            raise
    finally:
        if owned:
            spark.stop()
    return EXIT_OK


def _spark_event(row: dict[str, Any], type_column: str, attrs: tuple[str, ...] | None) -> kleene.ComplexEvent:
    """A result row of :func:`kleene.spark.detect` as the engine's ComplexEvent.

    Spark structs have every input column; under ``SELECT a[x, y]`` the
    engine shows only the type and the listed attributes, so the others are
    dropped here to keep the output identical.
    """
    events = []
    for e in row["events"] or []:
        if attrs is not None:
            e = {k: e.get(k) for k in (type_column, *attrs)}
        events.append(e)
    part = row["partition"]
    partition = tuple(part.values()) if isinstance(part, dict) else None
    return kleene.ComplexEvent(row["start"], row["end"], tuple(row["positions"]), tuple(events), partition)


def _task_data_error(exc: BaseException) -> DataError | None:
    """A DataError raised inside a Spark task reaches the driver as text: recover its message."""
    text = str(exc)
    marker = "DataError: "
    if marker not in text:
        return None
    return DataError(text.split(marker, 1)[1].strip().splitlines()[0])
