"""``kleene sql``: a SQL statement whose MATCH_RECOGNIZE clauses run on kleene, the rest on DuckDB.

::

    kleene sql "SELECT * FROM 'ticks.parquet' MATCH_RECOGNIZE (...) AS m WHERE ..."
               [--table NAME=FILE ...] [--output OUT.jsonl|OUT.parquet|OUT.arrow]
               [--output-format jsonl|parquet|arrow]

STATEMENT is the text, ``-`` (read stdin) or a ``.sql`` file.  Tables are files
in single quotes after FROM/JOIN, or names given with ``--table`` (CSV, JSON
Lines, Parquet or Arrow, read by kleene's readers).  Rows go to stdout as JSON
Lines, or to ``--output`` (by extension, as ``kleene run``).  Exit codes: 2 for a
bad statement (a caret under the offending text in the whole statement) or
an error DuckDB reports; 3 for bad data; 1 otherwise (DuckDB not installed:
``pip install 'kleene[sql]'``).  See :mod:`kleene.sql.duckdb_engine` for what the
statement can reach.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO, Any

import pyarrow as pa

from kleene.cli.common import EXIT_OK, EXIT_QUERY, STDIN, UsageError
from kleene.cli.output import Output
from kleene.io.writers import ArrowWriter, output_format

__all__ = ["add_sql_parser", "sql_command"]


def add_sql_parser(commands: Any) -> argparse.ArgumentParser:
    """Add the ``sql`` sub-command to the ``kleene`` parser's sub-parsers."""
    sql: argparse.ArgumentParser = commands.add_parser(
        "sql",
        help="run a SQL statement with MATCH_RECOGNIZE (kleene) over files (DuckDB for the rest)",
        description=(
            "Run one SELECT statement: its MATCH_RECOGNIZE clauses on kleene, the rest on "
            "DuckDB (the 'sql' extra). Files in single quotes after FROM/JOIN are tables. "
            "Exit codes: 0 ok, 2 bad statement or SQL error, 3 bad data, 1 other."
        ),
    )
    sql.add_argument("statement", metavar="STATEMENT",
                     help="the SQL text, a path to a .sql file, or - to read it from stdin")
    sql.add_argument("--table", action="append", default=[], metavar="NAME=FILE",
                     help="make FILE (CSV, JSON Lines, Parquet, Arrow) the table NAME (repeatable)")
    sql.add_argument("--output", "-o", default="-", metavar="OUT",
                     help="where to write the rows (default: stdout, as JSON Lines)")
    sql.add_argument("--output-format", choices=["jsonl", "parquet", "arrow"],
                     help="format of --output (default: from its extension, else jsonl)")
    sql.set_defaults(handler=sql_command)
    return sql


def _statement(arg: str) -> str:
    if arg == STDIN:
        return sys.stdin.read()
    if "\n" not in arg and arg.lower().endswith(".sql"):
        try:
            return Path(arg).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read statement file {arg!r}: {exc}") from exc
    return arg


def _tables(values: list[str]) -> dict[str, str]:
    tables: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--table {value!r}: write NAME=FILE")
        if not Path(path).is_file():
            raise UsageError(f"--table {value!r}: no such file {path!r}")
        tables[name] = path
    return tables


def sql_command(args: argparse.Namespace, stderr: IO[str]) -> int:
    """Run STATEMENT and write its rows; errors propagate to main, except DuckDB's (exit 2)."""
    from kleene.sql.duckdb_engine import SqlEngineError, run_sql

    statement = _statement(args.statement)
    tables = _tables(args.table)
    try:
        result = run_sql(statement, tables)
    except SqlEngineError as exc:
        print(f"kleene: SQL error: {exc}", file=stderr)
        return EXIT_QUERY
    output = Output(args.output, output_format(args.output, args.output_format))
    try:
        writer = output.writer
        if isinstance(writer, ArrowWriter):
            for batch in result.to_batches():
                writer.write_arrow(batch)
            if not result.num_rows:  # an empty file with the statement's columns
                writer.write_arrow(pa.RecordBatch.from_pylist([], schema=result.schema))
        else:
            for batch in result.to_batches():
                writer.write_all(batch.to_pylist())
        output.commit()
    except BaseException:
        output.abort()
        raise
    return EXIT_OK
