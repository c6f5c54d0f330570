"""``kleene plot``: draw a stretch of an input and a query's complex events as a timeline.

Several ``--input`` are merged by time as ``kleene run`` merges them
(:func:`kleene.io.merge.merge_streams`).  The picture is made by :meth:`kleene.Query.plot` (matplotlib, the ``plot``
extra, imported only when this command runs).
"""

from __future__ import annotations

import argparse
import re
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from kleene.cli.common import (
    EXIT_OK,
    UsageError,
    load_query,
    parse_inputs,
    skip_pandas_probe,
    spooled_stdin,
    unseen_messages,
)
from kleene.cli.sidefiles import check_written_files
from kleene.io.merge import merge_streams
from kleene.io.readers import read_batches
from kleene.language.errors import UnseenNameWarning
from kleene.language.query_cache import parse
from kleene.options import InputOptions

PICTURE_FORMATS = (".png", ".svg", ".pdf")


def add_plot_parser(commands: Any) -> argparse.ArgumentParser:
    """Add the ``plot`` sub-command to the ``kleene`` parser's sub-parsers."""
    plot: argparse.ArgumentParser = commands.add_parser(
        "plot",
        help="draw a stretch of an input and the query's complex events as a timeline",
        description=(
            "Run a CEQL query over a stretch of an input and draw it as a timeline (matplotlib, "
            "pip install 'kleene[plot]'): events as marks coloured by type, each complex event "
            "as a bar over its events, one lane per PARTITION BY key. The stretch starts at "
            "--from and ends at --to, after --max-events events or at the end of the "
            "--max-matches-th complex event, whichever comes first. "
            "Exit codes: 0 ok, 1 other error, 2 bad query or usage, 3 bad input."
        ),
    )
    plot.add_argument("query", metavar="QUERY", help="CEQL text, a path to a .ceql file, or - to read it from stdin")
    plot.add_argument(
        "--input", "-i", required=True, action="append", metavar="[STREAM=]FILE",
        help="events: .csv, .jsonl or .parquet; - reads standard input; repeat it for several "
        "inputs, merged by --time-column as kleene run merges them (STREAM=FILE names the "
        "stream of a whole file)",
    )
    plot.add_argument(
        "--stream-column", metavar="COL",
        help="column naming each event's stream, for FROM S1, S2 (default: 'stream' when an "
        "input is named STREAM=FILE)",
    )
    plot.add_argument("--output", "-o", required=True, metavar="OUT", help="the picture: .png, .svg or .pdf")
    plot.add_argument("--format", choices=["csv", "jsonl", "json", "ndjson", "parquet"], help="input format (default: from the file extension)")
    plot.add_argument("--time-column", metavar="COL", help="timestamp column: the time axis (default: the input position)")
    plot.add_argument("--time-unit", choices=["s", "ms", "us", "ns"], default="s", help="unit of a numeric time column (default: s)")
    plot.add_argument("--type-column", default="type", metavar="COL", help="column holding the event type (default: type)")
    plot.add_argument(
        "--from", dest="start", metavar="POS|TIME",
        help="start of the stretch: an input position (0-based) or a time such as "
        "2024-03-01T09:30:00Z (needs --time-column); default: the first event",
    )
    plot.add_argument("--to", dest="stop", metavar="POS|TIME", help="end of the stretch (included), a position or a time")
    plot.add_argument("--max-events", type=_positive_int, default=200, metavar="N", help="at most N events drawn (default: 200)")
    plot.add_argument("--max-matches", type=_positive_int, default=40, metavar="N", help="at most N complex events drawn (default: 40)")
    plot.add_argument("--max-lanes", type=_positive_int, default=12, metavar="N", help="at most N partitions drawn (default: 12)")
    plot.set_defaults(handler=plot_command)
    return plot


def _positive_int(text: str) -> int:
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return int(text)


def _bound(text: str | None) -> int | str | None:
    """A position when it is a whole number, else a time."""
    if text is None:
        return None
    return int(text) if re.fullmatch(r"\d+", text.strip()) else text


def plot_command(args: argparse.Namespace, stderr: IO[str]) -> int:
    """Draw the timeline to --output; errors propagate to :func:`kleene.cli.main`."""
    from kleene.api import compile_parsed

    skip_pandas_probe()
    if Path(args.output).suffix.lower() not in PICTURE_FORMATS:
        raise UsageError(f"--output {args.output!r}: choose a file ending in {', '.join(PICTURE_FORMATS)}")
    given = parse_inputs(args.input)
    if len(given) > 1 and not args.time_column:
        raise UsageError("several inputs are merged by time: give --time-column")
    stream_column = args.stream_column or (
        "stream" if any(name is not None for name, _ in given) else None
    )
    check_written_files([path for _, path in given], [("--output", args.output)])
    start, stop = _bound(args.start), _bound(args.stop)
    if not args.time_column and any(isinstance(b, str) for b in (start, stop)):
        raise UsageError("--from/--to with a time need --time-column (or give input positions)")
    text = load_query(args.query)
    program = parse(text)
    if len(program.queries) > 1:
        raise UsageError("kleene plot draws one query: QUERY holds several")
    options = InputOptions(
        type_column=args.type_column, time_column=args.time_column, time_unit=args.time_unit,
        stream_column=stream_column,
    )
    query = compile_parsed(program, 0, text, None, options)
    with spooled_stdin(given, args.format) as inputs, warnings.catch_warnings(
        record=True
    ) as caught:
        warnings.simplefilter("always", UnseenNameWarning)
        batches: Iterable[pa.RecordBatch]
        if len(inputs) == 1 and inputs[0][0] is None:
            batches = read_batches(inputs[0][1], format=args.format)
        else:
            batches = merge_streams(
                [(name, read_batches(path, format=args.format)) for name, path in inputs],
                time_column=args.time_column,
                time_unit=args.time_unit,
                stream_column=stream_column or "stream",
            )
        figure = query.plot(
            batches,
            path=args.output,
            start=start,
            stop=stop,
            max_events=args.max_events,
            max_matches=args.max_matches,
            max_lanes=args.max_lanes,
        )
    caption = figure.axes[0].get_title(loc="left").splitlines()[-1]
    print(f"kleene: timeline drawn to {args.output} ({caption})", file=stderr)
    for message in unseen_messages(caught):  # a misspelt event type: say so, as kleene run does
        print(f"kleene: {message}", file=stderr)
    return EXIT_OK
