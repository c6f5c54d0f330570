"""Parse the text CORE (``pycer.PyOfflineServer.get_output()``) prints for complex events.

CORE's offline server returns all complex events as text, one per line::

    [0,3], ((id: 1 attributes: [0 MSFT 101.000000 10 ]) (id: 0 attributes: [3 AAPL 300.000000 1 ]) )

``[start,end]`` are stream positions, or attribute values under ``WITHIN n [attr]``; each
``(id: <type id> attributes: [...])`` is one event with its attributes separated by spaces, so
string values with spaces (taxi zone names) cannot be split back reliably.  The benchmark data
therefore carries the event's position as its first attribute (``id``), and this parser reads
only that: a complex event is the sorted tuple of its events' ids, and its interval is
``(min, max)`` of them (a complex event's interval always spans exactly its events, also in
CORE).  CORE prints a complex event once per valuation (``SELL AS a OR SELL`` prints each SELL
twice); the complex-event semantics is a set, so :func:`complex_events` deduplicates.

Standard library only: this module runs under both the project's interpreter and CORE's.
"""

from __future__ import annotations

import re

FAILURE = "Failed to process"
"""CORE's offline server swallows query errors and prints this instead (core-pycer-notes, bug 2)."""

_LINE = re.compile(r"^\[(-?\d+),(-?\d+)\], \(")
_EVENT_ID = re.compile(r"\(id: \d+ attributes: \[(-?\d+)[ \]]")

ComplexEvent = tuple[int, int, tuple[int, ...]]


class CoreOutputError(ValueError):
    """CORE reported a failure (e.g. an unsupported query) in its output text."""


def check(text: str) -> None:
    """Raise :class:`CoreOutputError` when the text holds CORE's failure message."""
    at = text.find(FAILURE)
    if at >= 0:
        line = text[at : text.find("\n", at) if "\n" in text[at:] else len(text)]
        raise CoreOutputError(f"CORE failed: {line.strip()}")


def count_lines(text: str) -> int:
    """The number of complex events CORE printed (one per valuation), cheaply."""
    check(text)
    return sum(1 for line in text.splitlines() if _LINE.match(line))


def parse_line(line: str) -> tuple[tuple[int, int], tuple[int, ...]] | None:
    """``((start, end) as printed, ids of the events in printed order)``, or None for other lines."""
    head = _LINE.match(line)
    if head is None:
        return None
    ids = tuple(map(int, _EVENT_ID.findall(line, head.end())))
    return (int(head.group(1)), int(head.group(2))), ids


def complex_events(text: str) -> set[ComplexEvent]:
    """The set of complex events ``(start, end, positions)`` in CORE's output text.

    Positions are the events' first attribute (the benchmark data's ``id`` = row position).
    """
    return set(ordered_complex_events(text))


def ordered_complex_events(text: str) -> list[ComplexEvent]:
    """The complex events of CORE's output text in the order printed (by end position), each once."""
    check(text)
    seen: set[tuple[int, ...]] = set()
    out: list[ComplexEvent] = []
    for line in text.splitlines():
        parsed = parse_line(line)
        if parsed is None:
            continue
        _, ids = parsed
        if not ids:
            raise ValueError(f"a complex event without events in CORE output: {line!r}")
        positions = tuple(sorted(set(ids)))
        if positions not in seen:
            seen.add(positions)
            out.append((positions[0], positions[-1], positions))
    return out
