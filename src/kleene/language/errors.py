"""Errors raised for bad query text.

A :class:`QueryError` always knows where in the query text the problem is, and
renders the offending line with a caret under it, so that a user can fix a
query without guessing.
"""

from __future__ import annotations


class KleeneError(Exception):
    """Base class of every error kleene raises on purpose."""


class QueryError(KleeneError):
    """A syntax or semantic error in a CEQL query.

    ``line`` and ``column`` are 1-based; ``source`` is the whole query text.
    ``str(error)`` shows the message, the position, the line and a caret.
    """

    def __init__(self, message: str, line: int, column: int, source: str = "") -> None:
        self.message = message
        self.line = line
        self.column = column
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.message} (line {self.line}, column {self.column})"
        # Lines as the parser counts them: split at "\n" only.  str.splitlines also splits at
        # \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029, which would show the wrong line.
        lines = self.source.split("\n")
        if not (1 <= self.line <= len(lines)):
            return head
        text = lines[self.line - 1].removesuffix("\r")
        # A lone surrogate (not text: no UTF-8 output can hold it) shows as U+FFFD, one
        # character, so that the caret stays under the problem.
        text = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
        caret = " " * (max(self.column, 1) - 1) + "^"
        return f"{head}\n  {text}\n  {caret}"


class UnsupportedError(QueryError):
    """A construct that parses but that this version does not evaluate yet."""


class UnseenNameError(QueryError):
    """Under ``strict_types`` (``--strict-types``): an event type or stream the query names
    that the input never holds.  The message is the :class:`UnseenNameWarning`'s (names seen,
    nearest name); the position is the name's first place in the query."""


class DataError(KleeneError):
    """Bad input data: names the row (0-based input position) and the column."""

    def __init__(self, message: str, row: int | None = None, column: str | None = None) -> None:
        self.message = message
        self.row = row
        self.column = column
        where = []
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class MissingDependencyError(KleeneError, ImportError):
    """An optional dependency is not installed; the message names what to install.

    An :class:`ImportError` too, so ``except ImportError`` around an import
    of :mod:`kleene.spark` still works.
    """


class UnseenNameWarning(UserWarning):
    """A name the query expects (an event type, a stream) that the whole input never showed.

    Without it a misspelled type (``DPE`` for ``DEP``) would give no complex
    events and no word; the message lists the names seen and the nearest one.
    """


class LimitError(KleeneError):
    """A query or a run passed one of kleene's limits (docs/reliability.md, "Limits and memory").

    Raised instead of growing until the machine runs out of memory: ``limit`` is the option
    that was passed (``"max_states"``, ``"max_matches"``, ``"max_memory"``, ...), ``value`` its
    value, and the message says what reached it and how to raise it (exit 2 in the CLI).
    """

    def __init__(self, message: str, limit: str, value: int) -> None:
        self.limit = limit
        self.value = value
        super().__init__(message)
