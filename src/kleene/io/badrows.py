"""What to do with a bad input row: stop, skip it, or set it aside in a file.

Real event streams contain rows that a query cannot evaluate: an attribute a
predicate reads is missing or null, a value has the wrong type, a number is
NaN, a timestamp goes backwards under a time window.  Evaluating such a row
"somehow" would silently change the complex events a user gets, so the engine
hands every bad row to a :class:`BadRowPolicy`, which either raises a
:class:`~kleene.language.errors.DataError` naming the row and the column
(mode ``"error"``, the default), or sets the row aside and counts it (modes
``"skip"`` and ``"quarantine"``; the latter also writes the row to a JSON
Lines file so it can be inspected and replayed).  Nothing is silently dropped:
:meth:`BadRowPolicy.summary` says how many rows were set aside and why, and
the CLI prints it on stderr at the end of a run.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal, cast

from kleene.io.reorder import BACKWARDS, UNSORTED_HINT
from kleene.language.errors import DataError

Mode = Literal["error", "skip", "quarantine"]
MODES: tuple[Mode, ...] = ("error", "skip", "quarantine")


SKIP_HINTS = {
    reason: f" ({what}: --on-bad-row skip sets such rows aside and counts them, "
    "--on-bad-row quarantine FILE also keeps them; on_bad_row= in Python)"
    for reason, what in (
        ("null value", "the query reads this attribute and the row has no value"),
        ("NaN value", "the query reads this attribute and NaN compares with nothing"),
    )
}
"""What the error for a missing value says besides the row: how to go on without such rows."""


class BadRowPolicy:
    """Decides the fate of bad rows and keeps count of them.

    ``mode`` is ``"error"``, ``"skip"`` or ``"quarantine"``.  In quarantine
    mode ``quarantine`` is the file (a path, or an open text stream that the
    caller owns) that receives one JSON object per bad row::

        {"row": 17, "column": "price", "reason": "null value", "values": {...}}

    A path is truncated when the policy is created (with ``deferred=True``: by
    :meth:`open`, which the CLI calls only once the query compiled and the
    inputs were checked), so that a file left over from an earlier run is
    never mistaken for this run's bad rows.  A symbolic link is refused, never
    written through.  Use the policy as a context manager, or call
    :meth:`close`, to flush the file.
    """

    def __init__(
        self,
        mode: Mode | str = "error",
        quarantine: str | Path | IO[str] | None = None,
        *,
        deferred: bool = False,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown bad-row mode {mode!r}; expected one of {', '.join(MODES)}")
        self.mode: Mode = cast(Mode, mode)
        self._stream: IO[str] | None = None
        self._owns_stream = False
        self.quarantine_path: Path | None = None
        self._closed = False
        if mode == "quarantine":
            if quarantine is None:
                raise ValueError("the quarantine mode needs a file to write bad rows to")
            if isinstance(quarantine, (str, Path)):
                self.quarantine_path = Path(quarantine)
                if not deferred:
                    self.open()
            else:
                self._stream = quarantine
        elif quarantine is not None:
            raise ValueError(f"a quarantine file only makes sense in the quarantine mode, not {mode!r}")
        self._rows: set[int] = set()
        self._reasons: dict[str, int] = {}
        self.records = 0
        """Number of calls to :meth:`handle` (a row with two problems counts twice)."""

    @classmethod
    def coerce(cls, value: BadRowPolicy | str | None) -> BadRowPolicy:
        """Accept what ``kleene.compile(on_bad_row=...)`` accepts: a policy or a mode name."""
        if value is None:
            return cls()
        if isinstance(value, BadRowPolicy):
            return value
        if value == "quarantine":
            raise ValueError("on_bad_row='quarantine' needs a file: pass BadRowPolicy('quarantine', path)")
        return cls(value)

    # ------------------------------------------------------------------ use
    def handle(
        self,
        row: int,
        column: str | None,
        reason: str,
        values: dict[str, Any] | None = None,
    ) -> None:
        """Deal with one bad row: raise in ``"error"`` mode, otherwise count (and record) it.

        ``row`` is the 0-based input position, ``column`` the attribute at
        fault (None when the row as a whole is bad), ``reason`` a short
        lower-case phrase such as ``"null value"`` (it is shown after a count,
        so keep it free of row-specific details), ``values`` the row's
        attributes if the caller has them at hand (only quarantine uses them).
        """
        key = f"{reason} in {column!r}" if column is not None else reason
        self._reasons[key] = self._reasons.get(key, 0) + 1
        self._rows.add(row)
        self.records += 1
        if self.mode == "error":
            raise DataError(reason + SKIP_HINTS.get(reason, ""), row=row, column=column)
        if self._stream is None:
            self.open()  # a deferred policy used without open(): open it now rather than lose rows
        if self._stream is not None:
            from kleene.io.json_text import dumps_line

            record = {"row": row, "column": column, "reason": reason, "values": values}
            self._stream.write(dumps_line(record))

    @property
    def count(self) -> int:
        """Number of distinct rows set aside (or, in error mode, seen before stopping)."""
        return len(self._rows)

    @property
    def reasons(self) -> dict[str, int]:
        """How many times each ``"<reason> in '<column>'"`` occurred, most frequent first."""
        return dict(sorted(self._reasons.items(), key=lambda kv: -kv[1]))

    def summary(self) -> str:
        """One line for humans, e.g. ``3 rows set aside: 2 null value in 'price', 1 NaN in 'volume'``."""
        n = self.count
        if n == 0:
            return "no rows set aside"
        parts = ", ".join(f"{c} {key}" for key, c in self.reasons.items())
        noun = "row" if n == 1 else "rows"
        text = f"{n} {noun} set aside: {parts}"
        if self.quarantine_path is not None:
            text += f" (written to {self.quarantine_path})"
        if any(key.startswith(BACKWARDS) for key in self._reasons):
            text += UNSORTED_HINT
        return text

    # ------------------------------------------------------------ lifecycle
    def open(self) -> None:
        """Create (or truncate) the quarantine file; a no-op once open, or without a path.

        ``O_NOFOLLOW``: a symbolic link at the path is an error (ELOOP), never
        followed, so a planted link cannot make kleene overwrite another file.
        """
        if self.quarantine_path is None or self._stream is not None or self._closed:
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self.quarantine_path, flags, 0o666)
        except OSError as exc:
            if os.path.islink(self.quarantine_path):
                raise OSError(
                    f"the quarantine file {str(self.quarantine_path)!r} is a symbolic link: "
                    "kleene does not write through links (name the file itself)"
                ) from exc
            raise
        self._stream = os.fdopen(fd, "w", encoding="utf-8")
        self._owns_stream = True

    def flush(self) -> None:
        if self._stream is not None:
            self._stream.flush()

    def close(self) -> None:
        """Flush the quarantine file, and close it if the policy opened it."""
        if self._stream is None:
            return
        if self._owns_stream:
            self._stream.close()
            self._stream = None
            self._closed = True
        else:
            self._stream.flush()

    def __enter__(self) -> BadRowPolicy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BadRowPolicy(mode={self.mode!r}, count={self.count})"
