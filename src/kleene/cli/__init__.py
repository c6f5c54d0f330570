"""The ``kleene`` command: run CEQL queries over files, print complex events as JSON Lines.

::

    kleene run QUERY [QUERY ...] --input [STREAM=]FILE [--input [STREAM=]FILE ...]
               [--output OUT.jsonl|OUT.parquet|OUT.arrow] [--output-format jsonl|parquet|arrow]
               [--format csv|jsonl|parquet] [--stream-column COL]
               [--time-column COL] [--time-unit s|ms|us|ns] [--type-column COL] [--max-delay DURATION]
               [--on-bad-row error|skip|quarantine [FILE]] [--quarantine FILE]
               [--batch-size N] [--no-progress] [--engine python|spark [--master URL]]
    kleene explain QUERY [--time-column COL] [--dot] [--output FILE.svg|.png|.pdf|.dot]
    kleene plot QUERY --input FILE --output OUT.png|.svg|.pdf [--from POS|TIME] [--to POS|TIME] ...
    kleene stream QUERY --input-dir DIR --output-dir OUT --checkpoint CK --time-column COL ...
    kleene sql "SELECT ... FROM 'FILE' MATCH_RECOGNIZE (...) ..." [--table NAME=FILE] [--output OUT]

One module per command (:mod:`~kleene.cli.run`, :mod:`~kleene.cli.explain`,
:mod:`~kleene.cli.stream`, :mod:`~kleene.cli.sql`, and :mod:`~kleene.cli.spark_run` for ``run
--engine spark``), the shared pieces in :mod:`~kleene.cli.common`,
:mod:`~kleene.cli.output` and :mod:`~kleene.cli.progress`.  Building the
parser and the in-process commands import neither PySpark nor pandas; the
Spark commands import them when they run (the ``spark`` extra).

Exit codes are part of the interface, so that scripts can tell a mistake in
the query (2: fix the query; the message shows a caret under the offending
text) from a problem with the data (3: fix or filter the input, or rerun with
``--on-bad-row skip``) from anything else (1).  A limit reached (``--max-states``,
``--max-runs``, ``--max-matches``, ``--max-memory``: :mod:`kleene.limits`) is 2 too: narrow the
query or raise the limit the message names.  Results go to stdout (or
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
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import kleene
from kleene.cli.common import (
    EXIT_DATA,
    EXIT_INTERRUPTED,
    EXIT_OTHER,
    EXIT_QUERY,
    EXIT_TERMINATED,
    UsageError,
)
from kleene.language.errors import DataError, LimitError, QueryError

__all__ = ["COMMANDS", "build_parser", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("kleene.cli.run", "add_run_parser"),
    "explain": ("kleene.cli.explain", "add_explain_parser"),
    "plot": ("kleene.cli.plot", "add_plot_parser"),
    "stream": ("kleene.cli.stream", "add_stream_parser"),
    "sql": ("kleene.cli.sql", "add_sql_parser"),
}
"""Each sub-command's module and the function there that adds its parser, in ``--help``'s order."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``kleene`` command line; with ``command`` (a key of :data:`COMMANDS`), that
    sub-command's parser only, and only its module imported: :func:`main` builds just the
    invoked command's (``kleene run`` then imports neither ``explain``'s, ``plot``'s,
    ``stream``'s nor ``sql``'s module, ~3 ms of its start)."""
    parser = argparse.ArgumentParser(
        prog="kleene",
        description="Complex event recognition: run CEQL queries over event files.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, add) in COMMANDS.items():
        if command is None or name == command:
            getattr(importlib.import_module(module), add)(commands)
    return parser


class _Version(argparse.Action):
    """``--version``, looked up only when asked: importlib.metadata costs ~10 ms of every start."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import version

        try:
            found = version("kleene")
        except Exception:  # noqa: BLE001 - not installed as a distribution: still report something
            found = "unknown"
        print(f"{parser.prog} {found}")  # to stdout, as argparse's own version action
        parser.exit()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt so that every
    ``finally`` and ``except BaseException`` cleanup runs (Python's default for SIGTERM is to
    die at once, leaving a run's temporary output behind).  A KeyboardInterrupt, so code that
    stops gracefully on Ctrl-C (``kleene stream``) does so on SIGTERM too."""


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` while a command runs (main thread only; the
    previous handler is restored after, so a caller's own handler survives ``main``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum: int, frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kleene`` command; returns the exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    # The first word names the sub-command (the parser has no option taking a value before it).
    parser = build_parser(words[0] if words and words[0] in COMMANDS else None)
    stderr = sys.stderr
    try:
        args = parser.parse_args(words)
    except SystemExit as exc:  # --help, --version, or a usage error (argparse exits with 2)
        return exc.code if isinstance(exc.code, int) else EXIT_OTHER
    if args.command is None:
        parser.print_help(stderr)
        return EXIT_QUERY
    try:
        with _terminate_as_interrupt():
            return int(args.handler(args, stderr))
    except Terminated:
        # Raised through the command, whose cleanup (the output's temporary file, a
        # spooled standard input) ran on the way: the shell's status for SIGTERM.
        print("kleene: terminated", file=stderr)
        return EXIT_TERMINATED
    except UsageError as exc:
        print(f"kleene {args.command}: error: {exc}", file=stderr)
        return EXIT_QUERY
    except QueryError as exc:
        print(f"kleene: query error: {exc}", file=stderr)
        return EXIT_QUERY
    except DataError as exc:
        print(f"kleene: input error: {exc}", file=stderr)
        return EXIT_DATA
    except LimitError as exc:  # a limit of kleene.limits: raise it or narrow the query
        print(f"kleene: limit reached: {exc}", file=stderr)
        return EXIT_QUERY
    except MemoryError:  # past every limit of kleene.limits, yet the allocator said no
        print(
            "kleene: out of memory: this process may use less memory than kleene's limit "
            "--max-memory assumed; set --max-memory below what it may use",
            file=stderr,
        )
        return EXIT_QUERY
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
    except kleene.KleeneError as exc:
        # e.g. complex events that do not fit one Parquet schema, or a Spark command
        # without the spark extra (MissingDependencyError: it names what to install)
        print(f"kleene: error: {exc}", file=stderr)
        return EXIT_OTHER
