"""``kleene stream``: a streaming query over a directory of incoming files.

::

    kleene stream QUERY --input-dir DIR --output-dir OUT --checkpoint CK --time-column COL
                  [--watermark "10 seconds"] [--format jsonl|csv|parquet]
                  [--output-format parquet|jsonl|csv] [--late-dir DIR] [--id-column COL]
                  [--time-unit s|ms|us|ns] [--type-column COL] [--schema DDL]
                  [--master URL] [--available-now] [--trigger-interval "5 seconds"]
                  [--max-files-per-trigger N] [--spark-log FILE]

The ``kleene`` entry point registers it with :func:`add_stream_parser` and
dispatches to :func:`run_stream`.  Nothing here imports PySpark until the
command actually runs, so ``kleene run`` never pays for it; without the
``spark`` extra the command stops with what to install (exit code 1).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import IO, Any

import kleene
from kleene.cli.common import EXIT_OK, load_query, new_spark_log, warnings_to_log
from kleene.cli.sidefiles import check_written_files


def add_stream_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``stream`` sub-command to the ``kleene`` parser's sub-parsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "stream",
        help="run a query with Spark Structured Streaming over a directory of incoming files",
        description=(
            "Run a CEQL query over the files arriving in a directory (Spark Structured Streaming, "
            "exactly-once through a checkpoint). Complex events go to --output-dir, one "
            "sub-directory per micro-batch; rows later than the watermark go to --late-dir "
            "(default: OUTPUT_DIR/_late). Restarting with the same --checkpoint continues where "
            "the last run stopped. Exit codes: 0 ok, 1 other error, 2 bad query, 3 bad input."
        ),
    )
    p.add_argument(
        "query",
        metavar="QUERY",
        help="CEQL text, a path to a .ceql file, or - to read it from stdin",
    )
    p.add_argument(
        "--input-dir",
        required=True,
        metavar="DIR",
        help="directory the event files arrive in (move them in atomically)",
    )
    p.add_argument(
        "--output-dir", required=True, metavar="OUT", help="where complex events are written"
    )
    p.add_argument(
        "--checkpoint", required=True, metavar="CK", help="checkpoint directory (one per query)"
    )
    p.add_argument(
        "--time-column",
        required=True,
        metavar="COL",
        help="event time column (number in --time-unit, or timestamp)",
    )
    p.add_argument(
        "--time-unit",
        choices=["s", "ms", "us", "ns"],
        default="s",
        help="unit of a numeric time column (default: s)",
    )
    p.add_argument(
        "--type-column",
        default="type",
        metavar="COL",
        help="column holding the event type (default: type)",
    )
    p.add_argument(
        "--id-column",
        metavar="COL",
        help="breaks ties between equal times (default: the row's contents)",
    )
    p.add_argument(
        "--watermark",
        default="10 seconds",
        metavar="DELAY",
        help="how late events may arrive (default: '10 seconds')",
    )
    p.add_argument(
        "--format",
        choices=["jsonl", "csv", "parquet"],
        default="jsonl",
        help="input file format (default: jsonl)",
    )
    p.add_argument(
        "--output-format",
        choices=["parquet", "jsonl", "csv"],
        default="parquet",
        help="output format (default: parquet; CSV holds nested columns as JSON)",
    )
    p.add_argument(
        "--late-dir", metavar="DIR", help="where late rows go (default: OUTPUT_DIR/_late)"
    )
    p.add_argument(
        "--schema",
        metavar="DDL",
        help="input schema, e.g. 'id long, type string, ts double' (default: inferred from the files present)",
    )
    p.add_argument(
        "--master", default="local[*]", metavar="URL", help="Spark master (default: local[*])"
    )
    p.add_argument(
        "--available-now", action="store_true", help="process the files present, then stop"
    )
    p.add_argument(
        "--trigger-interval", metavar="DELAY", help="micro-batch interval when running continuously"
    )
    p.add_argument("--max-files-per-trigger", type=int, metavar="N", help="files per micro-batch")
    p.add_argument(
        "--spark-log",
        metavar="FILE",
        help="where Spark's and its Python workers' log lines go (default: a new file in the "
        "temporary directory; its path is printed on stderr at start)",
    )
    p.set_defaults(handler=run_stream)
    return p


def run_stream(args: argparse.Namespace, stderr: IO[str] | None = None) -> int:
    """Run ``kleene stream``; returns the exit code (errors propagate to :func:`kleene.cli.main`).

    Query errors raise :class:`~kleene.language.errors.QueryError` before
    Spark starts; a missing input directory or an empty one without
    ``--schema`` raises :class:`OSError`.
    """
    err = stderr or sys.stderr
    text = load_query(args.query)
    # Compile before paying for Spark.
    query = kleene.compile(
        text, type_column=args.type_column, time_column=args.time_column, time_unit=args.time_unit
    )
    # Imported here, not at the top: PySpark and pandas are an optional extra (kleene[spark]),
    # about 0.3 s to import, and no other command needs them.  Without them this raises
    # MissingDependencyError, which names what to install.
    from kleene.spark import active_session, local_session
    from kleene.spark.stream import check_streamable, detect_stream, read_results, start_stream

    check_streamable(query)  # reject what cannot be streamed before starting Spark
    input_dir = Path(args.input_dir)
    if not input_dir.is_dir():
        raise OSError(f"cannot read {args.input_dir!r}: not a directory")
    if args.schema is None and not any(
        p.is_file() and not p.name.startswith((".", "_")) for p in input_dir.iterdir()
    ):
        raise OSError(f"{args.input_dir!r} is empty: pass --schema, or add a file to infer it from")

    # Spark's log lines (and its Python workers') go to a file: stderr is kleene's.
    check_written_files([args.input_dir], [("--spark-log", args.spark_log)])
    log_file = args.spark_log or new_spark_log("stream")
    print(f"kleene stream: Spark's log: {log_file}", file=err)
    # A caller's session (a notebook, the tests) is used as it is and left running.
    active = active_session()
    owned = active is None
    with warnings.catch_warnings():
        warnings.showwarning = warnings_to_log(log_file)  # PySpark's own warnings (pandas versions...)
        spark = active if active is not None else local_session(
            args.master, app_name="kleene stream", log_file=log_file
        )
    try:
        schema: Any = args.schema or _infer_schema(spark, str(input_dir), args.format)
        reader = spark.readStream.schema(schema)
        if args.max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", args.max_files_per_trigger)
        if args.format == "csv":
            source = reader.option("header", True).csv(str(input_dir))
        elif args.format == "parquet":
            source = reader.parquet(str(input_dir))
        else:
            source = reader.json(str(input_dir))
        results = detect_stream(
            source,
            query,
            time_column=args.time_column,
            watermark=args.watermark,
            id_column=args.id_column,
        )
        late_dir = args.late_dir or str(Path(args.output_dir) / "_late")
        with warnings.catch_warnings():
            warnings.showwarning = warnings_to_log(log_file)
            running = start_stream(
                results,
                args.output_dir,
                checkpoint=args.checkpoint,
                late_events_path=late_dir,
                output_format=args.output_format,
                available_now=args.available_now,
                processing_time=args.trigger_interval,
            )
            try:
                _follow(running, err)
            except KeyboardInterrupt:
                running.stop()
                raise
            complex_events = _count(spark, read_results, args.output_dir, args.output_format)
            late = _count(spark, read_results, late_dir, args.output_format)
        print(f"kleene stream: {complex_events} complex events in {args.output_dir}", file=err)
        print(f"kleene stream: {late} late events in {late_dir}", file=err)
    finally:
        if owned:
            spark.stop()
    return EXIT_OK


def _follow(running: Any, err: IO[str], poll: float = 0.5) -> None:
    """Wait for the query to end, printing one progress line per micro-batch as it completes."""
    shown = -1
    while True:
        done = running.awaitTermination(poll)
        for progress in running.recentProgress:
            batch = int(progress.batchId)
            if batch <= shown:
                continue
            shown = batch
            seconds = (progress.durationMs or {}).get("triggerExecution", 0) / 1000
            print(
                f"kleene stream: batch {batch}: {progress.numInputRows} rows in {seconds:.1f} s",
                file=err,
                flush=True,
            )
        if done:
            return


def _infer_schema(spark: Any, path: str, fmt: str) -> Any:
    """The schema of the files already present (a streaming file source needs one up front)."""
    reader = spark.read
    if fmt == "csv":
        return reader.option("header", True).option("inferSchema", True).csv(path).schema
    if fmt == "parquet":
        return reader.parquet(path).schema
    return reader.json(path).schema


def _count(spark: Any, read: Any, path: str, fmt: str) -> int:
    """Rows written so far under ``path`` (0 when nothing was written yet)."""
    if not Path(path).exists() or not any(Path(path).glob("batch=*")):
        return 0
    return int(read(spark, path, fmt).count())
