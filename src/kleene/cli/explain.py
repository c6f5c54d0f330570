"""``kleene explain``: check and compile a query, say which engine evaluates it and why."""

from __future__ import annotations

import argparse
from typing import IO, Any

import kleene
from kleene.cli.common import EXIT_OK, load_query, skip_pandas_probe


def add_explain_parser(commands: Any) -> argparse.ArgumentParser:
    """Add the ``explain`` sub-command to the ``kleene`` parser's sub-parsers."""
    explain: argparse.ArgumentParser = commands.add_parser(
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
    explain.set_defaults(handler=explain_command)
    return explain


def explain_command(args: argparse.Namespace, stderr: IO[str]) -> int:
    """Print the engine choice and the automaton's size for QUERY; errors propagate to main."""
    skip_pandas_probe()
    compiled = kleene.compile(load_query(args.query), time_column=args.time_column)
    print(compiled.explain())
    return EXIT_OK
