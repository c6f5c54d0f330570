"""JSON Lines output of complex events.

Event attributes come out of Arrow and numpy as values that :mod:`json` does
not know (datetimes, numpy scalars, bytes, Decimals) or would write as invalid
JSON (``NaN``, ``Infinity``).  Every line kleene writes must parse with any
JSON reader, so values are converted here: datetimes and dates to ISO-8601
strings, NaN and infinities to ``null``, bytes to base64, numpy scalars and
arrays to Python numbers and lists, Decimals to strings (no precision lost).

The common case (plain Python values) is serialised by a single
``json.dumps`` call per line; only lines that fail it take the slower,
converting path.  Lines are buffered and written in blocks, never flushed per
event, because output speed matters when a query yields millions of events.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import sys
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol

import numpy as np

_BUFFER_LINES = 512


class SupportsToDict(Protocol):
    """Anything that renders itself as a JSON-ready dict, like ``kleene.ComplexEvent``."""

    def to_dict(self) -> dict[str, Any]: ...


def _default(value: Any) -> Any:
    """``json.dumps`` hook for types it does not know (NaN is handled elsewhere)."""
    if isinstance(value, dt.datetime):
        if value != value:  # pandas.NaT is a datetime that is not equal to itself
            return None
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


def jsonable(value: Any) -> Any:
    """Return ``value`` converted (recursively) to plain JSON types.

    Non-finite floats become ``None``; mapping keys become strings.  Used on
    the slow path, and by the quarantine file, whose ``values`` come straight
    from input rows and may contain anything.
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return jsonable(_default(value))


def dumps(obj: Any, *, ensure_ascii: bool = False) -> str:
    """Serialise ``obj`` as strict JSON (no NaN), converting exotic values."""
    try:
        return json.dumps(obj, default=_default, allow_nan=False, ensure_ascii=ensure_ascii)
    except (ValueError, TypeError):
        # NaN/Infinity somewhere, or a non-string key, or a circular/odd value:
        # convert everything explicitly and try again.
        return json.dumps(jsonable(obj), allow_nan=False, ensure_ascii=ensure_ascii)


def dumps_line(obj: Any, *, ensure_ascii: bool = False) -> str:
    """:func:`dumps` plus the newline of JSON Lines."""
    return dumps(obj, ensure_ascii=ensure_ascii) + "\n"


def _stdout_is_utf8() -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or ""
    return encoding.lower().replace("-", "").replace("_", "") in {"utf8", "utf8sig"}


class JsonlWriter:
    """Writes one JSON object per line to a path, an open text stream, or stdout (``"-"``).

    Accepts ``ComplexEvent`` objects (anything with ``to_dict()``) or plain
    dicts.  ``count`` is the number of lines written so far.  A path is opened
    for writing (truncated) immediately, so an unwritable output fails before
    any work is done.  Stdout and streams passed in are flushed, not closed.
    """

    def __init__(self, target: str | Path | IO[str] = "-") -> None:
        self._owns = False
        if isinstance(target, (str, Path)) and str(target) == "-":
            self._stream: IO[str] = sys.stdout
            # Non-ASCII text stays readable when stdout can carry UTF-8, and is
            # escaped (still valid JSON) when it cannot, instead of crashing.
            self._ascii = not _stdout_is_utf8()
        elif isinstance(target, (str, Path)):
            self._stream = open(target, "w", encoding="utf-8")  # noqa: SIM115
            self._owns = True
            self._ascii = False
        else:
            self._stream = target
            self._ascii = False
        self._buffer: list[str] = []
        self.count = 0

    def write(self, event: SupportsToDict | Mapping[str, Any]) -> None:
        """Queue one complex event (or dict) as a line."""
        obj = event if isinstance(event, Mapping) else event.to_dict()
        self._buffer.append(dumps_line(obj, ensure_ascii=self._ascii))
        self.count += 1
        if len(self._buffer) >= _BUFFER_LINES:
            self._drain()

    def write_all(self, events: Iterable[SupportsToDict | Mapping[str, Any]]) -> int:
        """Write every event; return how many were written by this call."""
        before = self.count
        for event in events:
            self.write(event)
        return self.count - before

    def _drain(self) -> None:
        if self._buffer:
            self._stream.write("".join(self._buffer))
            self._buffer.clear()

    def flush(self) -> None:
        self._drain()
        self._stream.flush()

    def close(self) -> None:
        """Write what is buffered; close the file if this writer opened it."""
        self.flush()
        if self._owns:
            self._stream.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def write_jsonl(events: Iterable[SupportsToDict | Mapping[str, Any]], target: str | Path | IO[str] = "-") -> int:
    """Write ``events`` as JSON Lines to ``target``; return the number written."""
    with JsonlWriter(target) as writer:
        return writer.write_all(events)
