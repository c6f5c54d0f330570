"""The ``kleene`` command: run a CEQL query over a file, print complex events as JSON Lines.

::

    kleene run QUERY [QUERY ...] --input [STREAM=]FILE [--input [STREAM=]FILE ...]
               [--output OUT.jsonl|OUT.parquet|OUT.arrow] [--output-format jsonl|parquet|arrow]
               [--format csv|jsonl|parquet] [--stream-column COL]
               [--time-column COL] [--time-unit s|ms|us|ns] [--type-column COL] [--max-delay DURATION]
               [--on-bad-row error|skip|quarantine [FILE]] [--quarantine FILE]
               [--batch-size N] [--no-progress] [--engine python|spark [--master URL]]

Exit codes are part of the interface, so that scripts can tell a mistake in
the query (2: fix the query; the message shows a caret under the offending
text) from a problem with the data (3: fix or filter the input, or rerun with
``--on-bad-row skip``) from anything else (1).  Results go to stdout (or
``--output``), everything for humans goes to stderr, so piping the output
into another tool is always safe.  With ``--output``, results are written to
a temporary file that replaces OUT only when the run succeeds: a failed run
never leaves a truncated result that looks complete.

Several queries (several QUERY arguments, or a file holding several queries)
run together in one pass (:func:`kleene.compile_many`); each output line then
starts with ``"query"``, the query's name (its ``QUERY name:`` header, else
the file's name).  Several inputs, each optionally naming its stream
(``--input S1=a.csv --input S2=b.csv``), are merged by time
(:func:`kleene.merge_streams`): a named input gets the stream column
(``--stream-column``, default ``stream``) with its name.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

import kleene
from kleene.io.badrows import BadRowPolicy
from kleene.io.merge import merge_streams
from kleene.io.readers import count_rows, read_batches
from kleene.io.writers import ArrowWriter, JsonlWriter, output_format
from kleene.language.errors import DataError, QueryError
from kleene.language.parser import parse

EXIT_OK, EXIT_OTHER, EXIT_QUERY, EXIT_DATA, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


class UsageError(Exception):
    """A problem with the command line itself (exit code 2, like argparse's own errors)."""


# ------------------------------------------------------------------ parsing
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kleene",
        description="Complex event recognition: run CEQL queries over event files.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser(
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
        "stream of every event of FILE (in the stream column)",
    )
    run.add_argument(
        "--stream-column",
        metavar="COL",
        help="column naming each event's stream, for FROM S1, S2 and S>E (default: 'stream' "
        "when an input is named STREAM=FILE; otherwise the input is one stream)",
    )
    run.add_argument("--output", "-o", default="-", metavar="OUT", help="where to write complex events (default: stdout)")
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
        "(rows ordered by --time-column, then input order; only --on-bad-row error)",
    )
    run.add_argument("--master", default="local[*]", metavar="URL", help="Spark master for --engine spark (default: local[*])")
    explain = commands.add_parser(
        "explain",
        help="say which engine evaluates a query, and why",
        description=(
            "Check and compile a CEQL query and print which engine evaluates it: CORE's tECS "
            "engine (every FILTER unary) or the register engine (conditions between events), "
            "why, and the size of the compiled automaton. Exit codes: 0 ok, 2 bad query."
        ),
    )
    explain.add_argument("query", metavar="QUERY", help="CEQL text, a path to a .ceql file, or - to read it from stdin")
    explain.add_argument("--time-column", metavar="COL", help="timestamp column, for time windows")
    from kleene.spark.stream_cli import add_stream_parser  # imports no Spark until it runs

    add_stream_parser(commands)
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("kleene")
    except Exception:  # noqa: BLE001 - not installed as a distribution: still report something
        return "unknown"


def bad_row_policy(on_bad_row: Sequence[str] | None, quarantine: str | None) -> BadRowPolicy:
    """Build the policy from ``--on-bad-row MODE [FILE]`` and ``--quarantine FILE``."""
    words = list(on_bad_row or [])
    if len(words) > 2:
        raise UsageError("--on-bad-row takes a mode and, for quarantine, a file")
    mode = words[0] if words else ("quarantine" if quarantine else "error")
    if mode not in ("error", "skip", "quarantine"):
        raise UsageError(f"--on-bad-row: unknown mode {mode!r} (choose error, skip or quarantine)")
    target = words[1] if len(words) == 2 else None
    if target is not None and mode != "quarantine":
        raise UsageError(f"--on-bad-row {mode} takes no file")
    if target is not None and quarantine is not None and target != quarantine:
        raise UsageError("two different quarantine files given")
    target = target or quarantine
    if mode == "quarantine" and target is None:
        raise UsageError("--on-bad-row quarantine needs a file: --on-bad-row quarantine FILE")
    if mode != "quarantine" and quarantine is not None:
        raise UsageError(f"--quarantine given, but --on-bad-row is {mode}")
    try:
        return BadRowPolicy(mode, target)
    except OSError as exc:
        raise UsageError(f"cannot write the quarantine file: {exc}") from exc


def load_query(arg: str, stdin: IO[str] | None = None) -> str:
    """QUERY is CEQL text, ``-`` (read stdin), or the path of a file holding the query.

    A word ending in ``.ceql`` that names no file is an error rather than
    query text: it is a typo in a path far more often than a query.
    """
    if arg == "-":
        return (stdin or sys.stdin).read()
    if "\n" not in arg and len(arg) < 4096:
        path = Path(arg)
        try:
            is_file = path.is_file()
        except OSError:
            is_file = False
        if is_file:
            try:
                return path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"cannot read query file {arg!r}: {exc}") from exc
        if path.suffix.lower() == ".ceql":
            raise UsageError(f"query file {arg!r} does not exist")
    return arg


# ----------------------------------------------------------------- progress
class Progress:
    """A one-line progress report on a terminal: rows read, rate, complex events so far.

    It stays silent for the first ``delay`` seconds, so quick runs print
    nothing but their results, and redraws at most every ``interval`` seconds
    so it costs nothing measurable.  The total row count (for a percentage)
    is only computed once the bar is about to appear.
    """

    def __init__(
        self,
        stream: IO[str],
        total: Callable[[], int | None],
        events: Callable[[], int],
        *,
        delay: float = 1.0,
        interval: float = 0.2,
    ) -> None:
        self.stream = stream
        self._total_fn = total
        self._total: int | None = None
        self._total_known = False
        self._events = events
        self.delay = delay
        self.interval = interval
        self.started = time.monotonic()
        self.rows = 0
        self.shown = False
        self._last = 0.0

    def track(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Pass batches through, counting a batch's rows once the engine asks for the next one."""
        for batch in batches:
            yield batch
            self.advance(batch.num_rows)

    def advance(self, rows: int) -> None:
        self.rows += rows
        now = time.monotonic()
        if now - self.started >= self.delay and now - self._last >= self.interval:
            self._last = now
            self._draw(now)

    def _draw(self, now: float, final: bool = False) -> None:
        if not self._total_known:
            self._total_known = True
            try:
                self._total = self._total_fn()
            except Exception:  # noqa: BLE001 - a progress bar must never break a run
                self._total = None
        elapsed = max(now - self.started, 1e-9)
        text = f"{self.rows:,} rows"
        if self._total:
            pct = min(100.0, 100.0 * self.rows / self._total)
            text += f" / {self._total:,} ({pct:.0f}%)"
        text += f"  {self.rows / elapsed:,.0f} rows/s  {self._events():,} complex events  {elapsed:.1f}s"
        self.stream.write("\r" + text + "\x1b[K" + ("\n" if final else ""))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Draw the final state (if the bar was ever shown) and end its line."""
        if self.shown:
            self._draw(time.monotonic(), final=True)

    def clear(self) -> None:
        """Erase the bar, e.g. before an error message."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


# ---------------------------------------------------------------------- run
class _Output:
    """The sink (JSON Lines, Parquet or Arrow); a file is written under a temporary name and
    renamed on success."""

    def __init__(self, target: str, fmt: str = "jsonl") -> None:
        self.final: Path | None = None
        self.temp: Path | None = None
        self.writer: JsonlWriter | ArrowWriter
        if target == "-":
            if fmt != "jsonl":
                raise UsageError(f"--output-format {fmt} writes a file: give --output FILE")
            self.writer = JsonlWriter("-")
            return
        self.final = Path(target)
        try:
            fd, name = tempfile.mkstemp(prefix=f".{self.final.name}.", suffix=".tmp", dir=self.final.parent)
        except OSError as exc:
            raise OSError(f"cannot write {target!r}: {exc.strerror or exc}") from exc
        os.close(fd)
        self.temp = Path(name)
        self.writer = JsonlWriter(self.temp) if fmt == "jsonl" else ArrowWriter(self.temp, fmt)

    def commit(self) -> None:
        self.writer.close()
        if self.temp is not None and self.final is not None:
            # mkstemp makes the file private (0600); give it the usual permissions.
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(self.temp, 0o666 & ~mask)
            os.replace(self.temp, self.final)
            self.temp = None

    def abort(self) -> None:
        try:
            self.writer.close()
        except OSError:
            pass
        if self.temp is not None:
            self.temp.unlink(missing_ok=True)


def parse_inputs(values: Sequence[str]) -> list[tuple[str | None, str]]:
    """``--input`` values: ``FILE`` or ``STREAM=FILE`` (an existing file named ``a=b`` is a file)."""
    out: list[tuple[str | None, str]] = []
    for value in values:
        name, sep, path = value.partition("=")
        if sep and name and not Path(value).exists():
            if not name.isidentifier():
                raise UsageError(f"--input {value!r}: {name!r} is not a stream name")
            out.append((name, path))
        else:
            out.append((None, value))
    names = [n for n, _ in out if n is not None]
    if len(names) != len(set(names)):
        raise UsageError("--input: a stream name is given twice")
    return out


def compile_queries(
    args: argparse.Namespace, policy: BadRowPolicy | str, stream_column: str | None
) -> kleene.Query | kleene.QuerySet:
    """One query (output as before), or several run together (each line names its query)."""
    texts: list[tuple[str | None, str]] = []
    for arg in args.query:
        text = load_query(arg)
        base = Path(arg).stem if _is_file(arg) else None
        texts.append((base, text))
    options: dict[str, Any] = {
        "type_column": args.type_column,
        "time_column": args.time_column,
        "time_unit": args.time_unit,
        "on_bad_row": policy,
        "max_delay": args.max_delay,
        "stream_column": stream_column,
    }
    if len(texts) == 1 and len(parse(texts[0][1]).queries) == 1:
        return kleene.compile(texts[0][1], **options)
    return kleene.compile_many(texts, **options)


def _is_file(arg: str) -> bool:
    if arg == "-" or "\n" in arg or len(arg) >= 4096:
        return False
    try:
        return Path(arg).is_file()
    except OSError:
        return False


def _stream_column(args: argparse.Namespace, inputs: list[tuple[str | None, str]]) -> str | None:
    if args.stream_column:
        return str(args.stream_column)
    return "stream" if any(name is not None for name, _ in inputs) else None


def _run(args: argparse.Namespace, stderr: IO[str]) -> int:
    if args.command == "stream":
        return int(args.handler(args, stderr))
    if args.command == "explain":
        compiled = kleene.compile(load_query(args.query), time_column=args.time_column)
        print(compiled.explain())
        return EXIT_OK
    if args.engine == "spark":
        return _run_spark(args, stderr)
    inputs = parse_inputs(args.input)
    if len(inputs) > 1 and not args.time_column:
        raise UsageError("several inputs are merged by time: give --time-column")
    stream_column = _stream_column(args, inputs)
    policy = bad_row_policy(args.on_bad_row, args.quarantine)
    with policy:
        query = compile_queries(args, policy, stream_column)

        def read(path: str) -> Iterator[pa.RecordBatch]:
            return read_batches(path, format=args.format, batch_size=args.batch_size)

        batches: Iterable[pa.RecordBatch]
        if len(inputs) == 1 and inputs[0][0] is None:
            batches = read(inputs[0][1])
        else:
            batches = merge_streams(
                [(name, read(path)) for name, path in inputs],
                time_column=args.time_column,
                time_unit=args.time_unit,
                stream_column=stream_column or "stream",
            )
        output = _Output(args.output, output_format(args.output, args.output_format))
        progress: Progress | None = None
        # A bar redrawn with "\r" would garble results printed to the same terminal.
        results_on_terminal = args.output == "-" and _is_tty(sys.stdout)
        if not args.no_progress and _is_tty(stderr) and not results_on_terminal:
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
            output.commit()
        except BaseException:
            if progress is not None:
                progress.clear()
            output.abort()
            raise
        if progress is not None:
            progress.close()
    if policy.count:
        print(f"kleene: {policy.summary()}", file=stderr)
    return EXIT_OK


def _total_rows(inputs: list[tuple[str | None, str]], fmt: str | None) -> int | None:
    counts = [count_rows(path, format=fmt) for _, path in inputs]
    return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


def _run_spark(args: argparse.Namespace, stderr: IO[str]) -> int:
    """``--engine spark``: the same query and output format, evaluated by :func:`kleene.spark.detect`.

    Spark numbers rows by (time column, input order), so on a file sorted by
    time the positions are the in-process engine's.  Only the ``error``
    bad-row policy exists on Spark (a bad row fails the job, exit 3).
    Complex events are written in (end, start, positions) order, streamed
    to the driver with ``toLocalIterator``; the output file is replaced only
    when the run succeeds, as with the in-process engine.
    """
    from kleene.io.readers import detect_format

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
    from pyspark.sql import SparkSession

    from kleene.spark import detect, local_session

    # Stop the session at the end only if this run started it (a caller's
    # session, e.g. in tests or a notebook, is left running).
    owned = SparkSession.getActiveSession() is None
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
        output = _Output(args.output)
        writer = output.writer
        assert isinstance(writer, JsonlWriter)
        try:
            rows = result.orderBy("end", "start", "positions").toLocalIterator()
            attrs = query.plan.attrs
            for row in rows:
                writer.write(_spark_event(row.asDict(recursive=True), query.type_column, attrs))
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


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kleene`` command; returns the exit code."""
    parser = build_parser()
    stderr = sys.stderr
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (argparse exits with 2)
        return exc.code if isinstance(exc.code, int) else EXIT_OTHER
    if args.command is None:
        parser.print_help(stderr)
        return EXIT_QUERY
    try:
        return _run(args, stderr)
    except UsageError as exc:
        print(f"kleene run: error: {exc}", file=stderr)
        return EXIT_QUERY
    except QueryError as exc:
        print(f"kleene: query error: {exc}", file=stderr)
        return EXIT_QUERY
    except DataError as exc:
        print(f"kleene: input error: {exc}", file=stderr)
        return EXIT_DATA
    except KeyboardInterrupt:
        print("kleene: interrupted", file=stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (e.g. `kleene run ... | head`): stop quietly.
        # Point stdout at devnull so the interpreter's final flush does not complain.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_OTHER
    except OSError as exc:
        print(f"kleene: {exc}", file=stderr)
        return EXIT_OTHER
    except kleene.KleeneError as exc:  # e.g. complex events that do not fit one Parquet schema
        print(f"kleene: error: {exc}", file=stderr)
        return EXIT_OTHER


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
