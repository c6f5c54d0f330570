"""``kleene run``: run CEQL queries over event files in this process, write complex events.

Its parser (:func:`add_run_parser`) and the in-process run (:func:`run_command`);
``--engine spark`` hands over to :mod:`kleene.cli.spark_run`.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

import kleene
from kleene.cli.common import (
    EXIT_OK,
    STDIN,
    UsageError,
    bad_row_policy,
    is_query_file,
    load_query,
    open_quarantine,
    parse_inputs,
    skip_pandas_probe,
    spooled_stdin,
    unseen_messages,
)
from kleene.cli.output import Output
from kleene.cli.progress import Progress, is_tty
from kleene.cli.sidefiles import check_written_files
from kleene.io.badrows import BadRowPolicy
from kleene.io.merge import merge_streams, named_stream
from kleene.io.prefetch import Prefetched
from kleene.io.readers import cheap_columns, count_rows, read_batches
from kleene.io.writers import output_format
from kleene.language.errors import DataError, KleeneError, UnseenNameWarning
from kleene.language.query_cache import parse
from kleene.limits import (
    DEFAULT_MAX_HELD,
    DEFAULT_MAX_MATCHES,
    DEFAULT_MAX_RUNS,
    DEFAULT_MAX_STATES,
    TRANSITIONS_PER_STATE,
)
from kleene.options import InputOptions, parse_size
from kleene.runtime.enumeration import Count


def add_run_parser(commands: Any) -> argparse.ArgumentParser:
    """Add the ``run`` sub-command to the ``kleene`` parser's sub-parsers."""
    run: argparse.ArgumentParser = commands.add_parser(
        "run",
        help="run a query over a file and print its complex events as JSON Lines",
        description=(
            "Run a CEQL query over a CSV, JSON Lines or Parquet file. Prints one JSON object per "
            "complex event (start, end, positions, events, partition), in order of end position. "
            "Exit codes: 0 ok, 1 other error, 2 bad query, 3 bad input."
        ),
    )
    run.add_argument(
        "query",
        metavar="QUERY",
        nargs="+",
        help="CEQL text, a path to a .ceql file, or - to read it from stdin; several queries "
        "(or a file holding several) run together, and each output line names its query",
    )
    run.add_argument(
        "--input",
        "-i",
        required=True,
        action="append",
        metavar="[STREAM=]FILE",
        help="events: .csv, .jsonl/.ndjson/.json or .parquet; repeat it for several inputs, "
        "merged by --time-column (ties: input order, then row order); STREAM=FILE names the "
        "stream of every event of FILE (in the stream column); - reads standard input "
        "(CSV, or --format)",
    )
    run.add_argument(
        "--stream-column",
        metavar="COL",
        help="column naming each event's stream, for FROM S1, S2 and S>E (default: 'stream' "
        "when an input is named STREAM=FILE; otherwise the input is one stream)",
    )
    run.add_argument("--output", "-o", default="-", metavar="OUT", help="where to write complex events (default: stdout)")
    run.add_argument(
        "--count",
        action="store_true",
        help="write only how many complex events each query gives, as text: the number (one "
        "query), or one line NAME<TAB>NUMBER per query; counted without building them where "
        "the engine can (not with --output-format or --engine spark)",
    )
    run.add_argument(
        "--output-format",
        choices=["jsonl", "parquet", "arrow"],
        help="jsonl (one JSON object per line), parquet or arrow (Arrow IPC file): columns start, "
        "end, positions, events (list of structs), partition, query (default: from the --output "
        "extension, .parquet, .arrow/.feather, else jsonl)",
    )
    run.add_argument(
        "--format",
        choices=["csv", "jsonl", "json", "ndjson", "parquet"],
        help="input format (default: from the file extension)",
    )
    run.add_argument("--time-column", metavar="COL", help="timestamp column, for time windows (WITHIN n seconds)")
    run.add_argument(
        "--time-unit",
        choices=["s", "ms", "us", "ns"],
        default="s",
        help="unit of a numeric time column (default: s)",
    )
    run.add_argument("--type-column", default="type", metavar="COL", help="column holding the event type (default: type)")
    run.add_argument(
        "--max-delay",
        metavar="DURATION",
        help="accept input out of time order by at most DURATION (e.g. '2 seconds'): events are "
        "buffered and released in time order; later ones are bad rows (needs --time-column)",
    )
    run.add_argument(
        "--max-held", type=_positive_int, metavar="N",
        help=f"most rows --max-delay may hold back at once (default: {DEFAULT_MAX_HELD:,}); "
        "more stops the run with an error naming the input row (exit 2)",
    )
    run.add_argument(
        "--sort",
        action="store_true",
        help="sort the input by --time-column before evaluating (stable: ties keep input order); "
        "holds the whole input in memory, up to --sort-memory",
    )
    run.add_argument(
        "--sort-memory",
        type=_size,
        metavar="SIZE",
        help="the most memory --sort may hold, as Arrow data (e.g. 4GB, 512MB; default: half "
        "the machine's memory); a larger input stops with an error (exit 1)",
    )
    add_limit_arguments(run)
    run.add_argument(
        "--null-values",
        type=_tokens,
        default=(),
        metavar="TOKENS",
        help="more texts that mean no value in CSV (and strings in JSON Lines), comma-separated, "
        "e.g. NA,N/A (always: an empty cell, null, NULL)",
    )
    run.add_argument(
        "--strict-types",
        action="store_true",
        help="an event type or stream of the query that the input never holds is an error "
        "(exit 2) instead of a warning: before the run when the type column is read cheaply "
        "(Parquet, or an uncompressed text file up to 64 MiB), else at the end of the input",
    )
    run.add_argument(
        "--on-bad-row",
        nargs="+",
        metavar=("{error,skip,quarantine}", "FILE"),
        help=(
            "what to do with a row the query cannot evaluate (null, NaN, wrong type, missing "
            "attribute, time going backwards): error (default: stop, exit 3), skip (set it aside "
            "and count it), quarantine FILE (also write it to FILE as JSON Lines)"
        ),
    )
    run.add_argument("--quarantine", metavar="FILE", help="file for quarantined rows (implies --on-bad-row quarantine)")
    run.add_argument("--batch-size", type=_positive_int, default=65536, metavar="N", help="rows per batch read (default: 65536)")
    run.add_argument(
        "--no-progress",
        action="store_true",
        help="never show the progress bar (shown on stderr when it is a terminal, results are not "
        "printed to a terminal, and the run lasts over a second)",
    )
    run.add_argument(
        "--engine",
        choices=["python", "spark"],
        default="python",
        help="python (default): evaluate in this process; spark: read and evaluate with Spark "
        "(rows ordered by --time-column, then input order; only --on-bad-row error; needs "
        "kleene[spark])",
    )
    run.add_argument("--master", default="local[*]", metavar="URL", help="Spark master for --engine spark (default: local[*])")
    run.add_argument(
        "--no-class-archive",
        dest="class_archive",
        action="store_false",
        help="with --engine spark on a local master: start the JVM without kleene's class archive "
        "(by default the first run builds it in kleene's cache, later runs start faster from it)",
    )
    run.add_argument(
        "--spark-log",
        metavar="FILE",
        help="with --engine spark: where Spark's and its Python workers' log lines go (default: a "
        "new file in the temporary directory; its path is printed on stderr at start)",
    )
    run.set_defaults(handler=run_command)
    return run


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-states``, ``--max-runs``, ``--max-matches``, ``--max-memory`` (kleene.limits):
    passing one stops the run with an error naming it (exit 2)."""
    parser.add_argument(
        "--max-states", type=_positive_int, metavar="N",
        help=f"most states of the query's automaton, built or determinized (default: "
        f"{DEFAULT_MAX_STATES:,}; transitions at most {TRANSITIONS_PER_STATE} times as many)",
    )
    parser.add_argument(
        "--max-runs", type=_positive_int, metavar="N",
        help=f"most runs alive at once (partitions for the tECS engine; default: {DEFAULT_MAX_RUNS:,})",
    )
    parser.add_argument(
        "--max-matches", type=_positive_int, metavar="N",
        help=f"most complex events one event may complete (default: {DEFAULT_MAX_MATCHES:,}); "
        "LIMIT n in the query keeps the first n instead",
    )
    parser.add_argument(
        "--max-memory", type=_memory, metavar="SIZE",
        help="most resident memory of the run, e.g. 4GB (default: three quarters of the "
        "machine's memory); also bounds the events --max-delay holds back",
    )


def _memory(text: str) -> int:
    try:
        return parse_size(text, "--max-memory")
    except KleeneError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except KleeneError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _tokens(text: str) -> tuple[str, ...]:
    """``--null-values NA,N/A``: the tokens, blanks around them kept out."""
    tokens = tuple(t.strip() for t in text.split(","))
    if not all(tokens):
        raise argparse.ArgumentTypeError(f"an empty token in {text!r} (empty cells are nulls already)")
    return tokens


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def compile_queries(
    args: argparse.Namespace, policy: BadRowPolicy | str, stream_column: str | None
) -> kleene.Query | kleene.QuerySet:
    """One query (output as before), or several run together (each line names its query)."""
    # The engine is imported here, not with the parser of the command line: the input's first
    # batch is being read (kleene.io.prefetch) while these imports run.
    from kleene.api import compile_parsed

    texts: list[tuple[str | None, str]] = []
    for arg in args.query:
        text = load_query(arg)
        base = Path(arg).stem if is_query_file(arg) else None
        texts.append((base, text))
    options = InputOptions(
        type_column=args.type_column,
        time_column=args.time_column,
        time_unit=args.time_unit,
        on_bad_row=policy,
        max_delay=args.max_delay,
        stream_column=stream_column,
        strict_types=args.strict_types,
        null_values=args.null_values,
        sort=args.sort,
        sort_memory=args.sort_memory,
        max_states=args.max_states,
        max_runs=args.max_runs,
        max_matches=args.max_matches,
        max_memory=args.max_memory,
        max_held=args.max_held,
    )
    if len(texts) == 1:
        program = parse(texts[0][1])  # parsed once: lark's parse is a part of every start
        if len(program.queries) == 1:
            return compile_parsed(program, 0, texts[0][1], None, options)
    return kleene.compile_many(texts, options=options)


def _stream_column(args: argparse.Namespace, inputs: list[tuple[str | None, str]]) -> str | None:
    if args.stream_column:
        return str(args.stream_column)
    return "stream" if any(name is not None for name, _ in inputs) else None


def run_command(args: argparse.Namespace, stderr: IO[str]) -> int:
    """Run ``kleene run``; returns the exit code (errors propagate to :func:`kleene.cli.main`)."""
    if args.count and args.engine == "spark":
        raise UsageError("--count runs in this process: leave out --engine spark")
    if args.count and args.output_format:
        raise UsageError("--count writes numbers as text: leave out --output-format")
    if args.engine == "spark":
        from kleene.cli.spark_run import run_spark

        return run_spark(args, stderr)
    skip_pandas_probe()
    given = parse_inputs(args.input)
    if len(given) > 1 and not args.time_column:
        raise UsageError("several inputs are merged by time: give --time-column")
    if args.sort and not args.time_column:
        raise UsageError("--sort orders the input by time: give --time-column")
    if args.sort and args.max_delay:
        raise UsageError("--sort orders the whole input, --max-delay a nearly ordered one: choose one")
    if args.sort_memory and not args.sort:
        raise UsageError("--sort-memory is the limit of --sort: give --sort too")
    if STDIN in args.query and any(path == STDIN for _, path in given):
        raise UsageError("standard input can hold the query or the events, not both")
    stream_column = _stream_column(args, given)
    policy = bad_row_policy(args.on_bad_row, args.quarantine)
    check_written_files(
        [path for _, path in given],
        [("--output", args.output), ("--quarantine", _quarantine_path(policy))],
    )
    with policy, spooled_stdin(given, args.format) as inputs, warnings.catch_warnings(
        record=True
    ) as caught:
        warnings.simplefilter("always", UnseenNameWarning)

        def read(path: str) -> Iterator[pa.RecordBatch]:
            return read_batches(
                path, format=args.format, batch_size=args.batch_size, null_values=args.null_values
            )

        # One file is read (its first batch, in a thread) while the query compiles; what the
        # reader raises comes at the first batch, after the query's own errors (io.prefetch).
        single = len(inputs) == 1 and inputs[0][0] is None
        prefetched = Prefetched(lambda: read(inputs[0][1])) if single else None
        try:
            query = compile_queries(args, policy, stream_column)
            if args.strict_types:
                check_names_first(query, inputs, args.format)
        except BaseException:
            if prefetched is not None:
                prefetched.close()
            raise

        batches: Iterable[pa.RecordBatch]
        if prefetched is not None:
            prefetched.made()  # a missing file fails here, before any output is opened
            batches = prefetched
        else:
            batches = merge_streams(
                [(name, read(path)) for name, path in inputs],
                time_column=args.time_column,
                time_unit=args.time_unit,
                stream_column=stream_column or "stream",
            )
        if args.count:
            return _count(args, query, batches, inputs, policy, caught, stderr)
        output = Output(args.output, output_format(args.output, args.output_format))
        try:
            open_quarantine(policy)  # the run starts: the query compiled, the inputs exist
        except BaseException:
            output.abort()
            raise
        progress: Progress | None = None
        # A bar redrawn with "\r" would garble results printed to the same terminal.
        results_on_terminal = args.output == "-" and is_tty(sys.stdout)
        if not args.no_progress and is_tty(stderr) and not results_on_terminal:
            progress = Progress(
                stderr,
                total=lambda: _total_rows(inputs, args.format),
                events=lambda: output.writer.count,
            )
            batches = progress.track(batches)
        try:
            # The bulk path: complex events in columns, their events' data
            # gathered per batch (the same lines as writing each ComplexEvent).
            write = output.writer.write_batch
            for found in query.match_batches(batches, events=True):
                write(found)
                output.written()  # towards the disk while the next batches are computed
            output.commit()
        except BaseException:
            if progress is not None:
                progress.clear()
            output.abort()
            raise
        if progress is not None:
            progress.close()
    return _finish(caught, bool(output.writer.count), policy, stderr)


def _finish(caught: list[warnings.WarningMessage], found: bool, policy: BadRowPolicy,
            stderr: IO[str]) -> int:
    """The end of a run on stderr: names the input never had (and, then, that nothing was
    found), and what the bad-row policy set aside."""
    unseen = unseen_messages(caught)
    if unseen and not found:
        print("kleene: no complex events", file=stderr)
    for message in unseen:
        print(f"kleene: {message}", file=stderr)
    if policy.count:
        print(f"kleene: {policy.summary()}", file=stderr)
    return EXIT_OK


def _count(
    args: argparse.Namespace, query: kleene.Query | kleene.QuerySet, batches: Iterable[pa.RecordBatch],
    inputs: list[tuple[str | None, str]], policy: BadRowPolicy, caught: list[warnings.WarningMessage],
    stderr: IO[str],
) -> int:
    """``kleene run --count``: the number of complex events of each query, written as text to
    ``--output`` (a file only once the run succeeded), with the same messages as a run."""
    open_quarantine(policy)
    sinks: list[Count] = []
    progress: Progress | None = None
    if not args.no_progress and is_tty(stderr) and not (args.output == "-" and is_tty(sys.stdout)):
        progress = Progress(
            stderr, total=lambda: _total_rows(inputs, args.format), events=lambda: sum(len(c) for c in sinks)
        )
        batches = progress.track(batches)
    try:
        counts = query.counts(batches, sinks=sinks)
    except BaseException:
        if progress is not None:
            progress.clear()
        raise
    if progress is not None:
        progress.close()
    if isinstance(query, kleene.QuerySet):
        text = "".join(f"{name}\t{n}\n" for name, n in zip(query.names, counts, strict=True))
    else:
        text = f"{counts[0]}\n"
    if args.output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        Path(args.output).write_text(text)
    return _finish(caught, bool(sum(counts)), policy, stderr)


def _quarantine_path(policy: BadRowPolicy) -> str | None:
    return None if policy.quarantine_path is None else str(policy.quarantine_path)


def check_names_first(
    query: kleene.Query | kleene.QuerySet, inputs: list[tuple[str | None, str]], fmt: str | None
) -> None:
    """``--strict-types``: the inputs' type and stream columns checked before the run, when every
    input's can be read cheaply (:func:`kleene.io.readers.cheap_columns`); otherwise the run
    checks them at the end of the input.  ``STREAM=FILE`` names the stream of a whole file."""
    options = query.options
    wanted = [c for c in (options.type_column, options.stream_column) if c is not None]
    batches: list[pa.RecordBatch] = []
    for name, path in inputs:
        try:
            read = cheap_columns(path, wanted, format=fmt)
            if read is None:
                return
            if options.stream_column is not None:  # STREAM=FILE, as the run names it
                read = list(named_stream(name, iter(read), options.stream_column))
        except DataError:
            return  # a missing or unreadable file, a clash of stream columns: the run says so
        batches.extend(read)
    query.check_names(batches)


def _total_rows(inputs: list[tuple[str | None, str]], fmt: str | None) -> int | None:
    counts = [count_rows(path, format=fmt) for _, path in inputs]
    return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)
