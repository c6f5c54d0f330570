"""``kleene explain``: check and compile a query, say which engine evaluates it and why.

It reads no data, so it needs no data flags: a time window is explained
without ``--time-column`` (the plan says a run needs one).  The input flags
it accepts (``--time-column``, ``--time-unit``, ``--type-column``,
``--stream-column``) show what they change: the columns read, the stream bits.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kleene.cli.common import EXIT_OK, UsageError, load_query, skip_pandas_probe
from kleene.language.query_cache import parse
from kleene.options import InputOptions

if TYPE_CHECKING:
    from kleene.api import Query


def add_explain_parser(commands: Any) -> argparse.ArgumentParser:
    """Add the ``explain`` sub-command to the ``kleene`` parser's sub-parsers."""
    explain: argparse.ArgumentParser = commands.add_parser(
        "explain",
        help="say which engine evaluates a query, and why; draw its automaton (--dot)",
        description=(
            "Check and compile a CEQL query and print which engine evaluates it: CORE's tECS "
            "engine (every FILTER unary) or the register engine (conditions between events), "
            "why, the size of the compiled automaton and the input columns it reads. It reads "
            "no data: the input options are optional and show what they change. "
            "Exit codes: 0 ok, 2 bad query."
        ),
    )
    explain.add_argument("query", metavar="QUERY", help="CEQL text, a path to a .ceql file, or - to read it from stdin")
    explain.add_argument("--time-column", metavar="COL", help="timestamp column, for time windows")
    explain.add_argument(
        "--time-unit", choices=["s", "ms", "us", "ns"], default="s", help="unit of a numeric time column (default: s)"
    )
    explain.add_argument("--type-column", default="type", metavar="COL", help="column holding the event type (default: type)")
    explain.add_argument("--stream-column", metavar="COL", help="column naming each event's stream")
    explain.add_argument(
        "--dot",
        action="store_true",
        help="print the query's automaton as Graphviz DOT text instead of the explanation",
    )
    explain.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        help="draw the query's automaton to FILE: .svg, .png or .pdf (needs Graphviz's dot "
        "program) or .dot (the DOT text)",
    )
    explain.set_defaults(handler=explain_command)
    return explain


def explained_queries(args: argparse.Namespace) -> list[tuple[str | None, Query]]:
    """Every query of QUERY (a file may hold several), compiled without data, with its name."""
    from kleene.api import compile_parsed  # the engine: not imported to build the command line

    text = load_query(args.query)
    options = InputOptions(
        type_column=args.type_column,
        time_column=args.time_column,
        time_unit=args.time_unit,
        stream_column=args.stream_column,
    )
    program = parse(text)
    count = max(len(program.queries), 1)
    names = program.names or (None,) * count
    return [
        (names[i] if count > 1 else None, compile_parsed(program, i, text, None, options, need_time=False))
        for i in range(count)
    ]


def explain_command(args: argparse.Namespace, stderr: IO[str]) -> int:
    """Print the engine choice and the automaton's size for QUERY, or draw its automaton
    (``--dot``, ``--output``); errors propagate to main."""
    skip_pandas_probe()
    if args.output is not None:
        from kleene.pictures.automaton import DRAWN_AS  # only when a picture is asked for

        if Path(args.output).suffix.lower() not in DRAWN_AS:
            raise UsageError(f"--output {args.output!r}: choose a file ending in {', '.join(DRAWN_AS)}")
    found = explained_queries(args)
    if args.output is not None:
        if len(found) > 1:
            raise UsageError("--output draws one query's automaton: QUERY holds several")
        path = found[0][1].draw(args.output)
        print(f"kleene: automaton drawn to {path}", file=stderr)
    if args.dot:
        for _, query in found:
            print(query.automaton_dot(), end="")
        return EXIT_OK
    for k, (name, query) in enumerate(found):
        if len(found) > 1:
            print(("\n" if k else "") + f"query {name or k + 1}:")
        print(query.explain())
    return EXIT_OK
