"""A stretch of a stream and the complex events inside it: what a timeline draws.

The query runs over the source from its first event (a complex event may
depend on any earlier event), and reading stops once the stretch is over:
after ``max_events`` events of the stretch, past its end (a position or a
time), or at the end of the ``max_matches``-th complex event found inside it,
whichever comes first; those limits keep a picture readable.  Only the
stretch's rows are kept in memory.  A complex event is drawn when all its
events lie inside the stretch.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from kleene.io.sources import to_batches
from kleene.io.timecol import to_nanos
from kleene.language.errors import KleeneError
from kleene.results import Match

if TYPE_CHECKING:
    from kleene.api import Query

Bound = int | str | dt.datetime | None
"""An end of the stretch: an int is an input position, a string or datetime a time."""

MAX_EVENTS = 200
MAX_MATCHES = 40


@dataclass
class Stretch:
    """The rows of the stretch (positions, types, times, lanes) and its complex events."""

    positions: np.ndarray
    types: list[str]
    times: np.ndarray | None
    """Nanoseconds since the epoch, when the query has a time column."""
    lanes: list[tuple[Any, ...] | None]
    """Per row: its PARTITION BY key (None: a null key attribute, no partition)."""
    matches: list[Match] = field(default_factory=list)
    cut_by: str = "the end of the input"
    """What ended the stretch, for the picture's caption."""


def to_nanos_bound(value: str | dt.datetime) -> int:
    """A time bound in nanoseconds since the epoch (naive times are UTC, like the time column)."""
    nanos, bad = to_nanos(pa.array([value.isoformat() if isinstance(value, dt.datetime) else value]))
    if bad[0]:
        raise KleeneError(f"cannot read {value!r} as a time (write e.g. 2024-03-01T09:30:00Z)")
    return int(nanos[0])


def collect(
    query: Query,
    source: Any,
    *,
    start: Bound = None,
    stop: Bound = None,
    max_events: int = MAX_EVENTS,
    max_matches: int = MAX_MATCHES,
) -> Stretch:
    """Run ``query`` over ``source`` up to the end of the stretch (see the module docstring)."""
    if max_events < 1 or max_matches < 1:
        raise KleeneError("max_events and max_matches must be at least 1")
    options = query.options
    time_column = options.time_column
    bounds = [b for b in (start, stop) if b is not None and not isinstance(b, int)]
    if bounds and time_column is None:
        raise KleeneError("a stretch bounded by times needs the time column (time_column=, --time-column)")
    reader = _Reader(
        type_column=options.type_column,
        time_column=time_column,
        time_unit=options.time_unit,
        partition_by=query.partition_by,
        start=start,
        stop=stop,
        max_events=max_events,
    )
    found: list[Match] = []
    cut_by = "the end of the input"
    for m in query.matches(reader.read(to_batches(source))):
        assert isinstance(m, Match)
        if reader.first is None or m.start < reader.first or m.end > reader.last:
            continue  # starts before the stretch, or (batches are read whole) ends after it
        found.append(m)
        if len(found) >= max_matches:
            cut_by = f"{max_matches} complex events (max_matches)"
            break
    else:
        cut_by = reader.cut_by
    last = found[-1].end if len(found) >= max_matches and found else reader.last
    return reader.stretch(found, last, cut_by)


class _Reader:
    """Passes batches to the engine until the stretch is over, keeping the stretch's rows."""

    def __init__(
        self,
        *,
        type_column: str,
        time_column: str | None,
        time_unit: str,
        partition_by: tuple[str, ...],
        start: Bound,
        stop: Bound,
        max_events: int,
    ) -> None:
        self.type_column = type_column
        self.time_column = time_column
        self.time_unit = time_unit
        self.partition_by = partition_by
        self.lo_pos = start if isinstance(start, int) else 0
        self.hi_pos = stop if isinstance(stop, int) else None
        self.lo_time = None if start is None or isinstance(start, int) else to_nanos_bound(start)
        self.hi_time = None if stop is None or isinstance(stop, int) else to_nanos_bound(stop)
        self.max_events = max_events
        self.rows: list[pa.RecordBatch] = []
        self.row_positions: list[np.ndarray] = []
        self.row_times: list[np.ndarray] = []
        self.kept = 0
        self.first: int | None = None
        self.last = -1
        self.cut_by = "the end of the input"

    def read(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        base = 0
        for batch in batches:
            n = batch.num_rows
            pos = np.arange(base, base + n)
            times = self._times(batch)
            inside = pos >= self.lo_pos
            over = np.zeros(n, dtype=bool)
            if self.hi_pos is not None:
                over |= pos > self.hi_pos
            if times is not None and self.lo_time is not None:
                inside &= times >= self.lo_time
            if times is not None and self.hi_time is not None:
                over |= times > self.hi_time
            end = int(np.argmax(over)) if over.any() else n  # rows from `end` on are past it
            inside[end:] = False
            picked = np.flatnonzero(inside)
            room = self.max_events - self.kept
            if len(picked) >= room:
                picked = picked[:room]
                end = int(picked[-1]) + 1 if len(picked) else 0
                self.cut_by = f"{self.max_events} events (max_events)"
            elif end < n:
                self.cut_by = "the end of the stretch asked for"
            if len(picked):
                self._keep(batch, picked, pos, times)
            if end > 0:
                yield batch.slice(0, end)
            base += n
            if end < n:
                return

    def _times(self, batch: pa.RecordBatch) -> np.ndarray | None:
        if self.time_column is None or self.time_column not in batch.schema.names:
            return None
        values, bad = to_nanos(batch.column(self.time_column), self.time_unit)
        return np.where(bad, np.iinfo(np.int64).min, values)

    def _keep(self, batch: pa.RecordBatch, picked: np.ndarray, pos: np.ndarray, times: np.ndarray | None) -> None:
        self.rows.append(batch.take(pa.array(picked)))
        self.row_positions.append(pos[picked])
        if times is not None:
            self.row_times.append(times[picked])
        self.kept += len(picked)
        if self.first is None:
            self.first = int(pos[picked[0]])
        self.last = int(pos[picked[-1]])

    def stretch(self, found: list[Match], last: int, cut_by: str) -> Stretch:
        positions = np.concatenate(self.row_positions) if self.row_positions else np.zeros(0, np.int64)
        keep = positions <= last
        table = pa.Table.from_batches(self.rows) if self.rows else None
        types: list[str] = []
        lanes: list[tuple[Any, ...] | None] = []
        if table is not None:
            if self.type_column not in table.column_names:
                raise KleeneError(f"the input has no type column {self.type_column!r} (--type-column)")
            types = [str(t) for t in table.column(self.type_column).to_pylist()]
            keys = [
                table.column(a).to_pylist() if a in table.column_names else [None] * table.num_rows
                for a in self.partition_by
            ]
            lanes = [
                None if any(v is None for v in key) else key
                for key in (tuple(k[i] for k in keys) for i in range(table.num_rows))
            ]
        times = np.concatenate(self.row_times)[keep] if self.row_times else None
        return Stretch(
            positions=positions[keep],
            types=[t for t, k in zip(types, keep) if k],
            times=times,
            lanes=[lane for lane, k in zip(lanes, keep) if k],
            matches=found,
            cut_by=cut_by,
        )
