"""Bounded disorder (``max_delay``): rows held back until the watermark passes them.

kleene's engines need events in time order.  Real feeds are a little out of
order; this buffer sorts them within a bound and hands every row it cannot
place (late, or with an unreadable time) to the bad-row policy, never
dropping or misordering one silently.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from kleene.io.timecol import to_nanos
from kleene.language.errors import DataError

_ROW = "__kleene_row"
_TIME = "__kleene_time"
"""Columns of the buffer: input row number and time (ns)."""


SetAside = Callable[[pa.RecordBatch, int, int, "str | None", str], None]
"""``(batch, row_in_batch, input_row, column, reason)``: hands a bad row to a policy."""


class ReorderBuffer:
    """Bounded disorder (``max_delay``): rows held back until the watermark passes them.

    The watermark is the latest time seen minus ``max_delay``.  A row more
    than ``max_delay`` behind the latest time seen before it is *late*: it
    goes to the bad-row policy (with its input row number), never silently
    dropped or misordered.  Every other row is at or after every watermark
    so far, so the released stream is in time order.  One buffer serves one
    query (:class:`Session`) or several queries evaluated together.
    """

    def __init__(
        self, time_column: str, time_unit: str, max_delay: int, said: str | None = None
    ) -> None:
        self.time_column = time_column
        self.time_unit = time_unit
        self.max_delay = max_delay
        self.said = said or f"{max_delay} nanoseconds"
        """``max_delay`` as the user wrote it, for messages (``"2 seconds"``, not nanoseconds)."""
        self.next_input = 0
        self.pending: pa.Table | None = None
        self.latest_seen: int | None = None

    def push(
        self, batch: pa.RecordBatch | None, *, final: bool, set_aside: SetAside
    ) -> list[tuple[pa.RecordBatch, np.ndarray]]:
        """Buffer ``batch``; return the released rows in (time, arrival) order, in parts.

        Each part comes with the input row numbers of its rows.
        """
        column = self.time_column
        n = 0 if batch is None else batch.num_rows
        rows = np.arange(self.next_input, self.next_input + n, dtype=np.int64)
        self.next_input += n
        if batch is not None and n:
            if column not in batch.schema.names:
                raise DataError("the time column is missing", column=column)
            times, bad_mask = to_nanos(batch.column(column), self.time_unit)
            times = np.asarray(times, dtype=np.int64)
            keep = ~np.asarray(bad_mask, dtype=bool)
            for i in np.flatnonzero(~keep).tolist():
                set_aside(batch, i, int(rows[i]), column, "unreadable timestamp")
            # Late: more than max_delay behind the latest time seen *before* the
            # row arrived.  Decided row by row in arrival order, so the outcome
            # does not depend on how the input is cut into batches.
            lowest = np.iinfo(np.int64).min
            seen = np.where(keep, times, lowest)
            before = np.maximum.accumulate(np.concatenate(([self.latest_seen or lowest], seen)))[:-1]
            late = keep & (before > lowest) & (times < before - self.max_delay)
            for i in np.flatnonzero(late).tolist():
                set_aside(
                    batch, i, int(rows[i]), column,
                    f"late event: more than {self.said} (max_delay) behind the latest time",
                )
            keep &= ~late
            table = pa.Table.from_batches([batch]).filter(pa.array(keep))
            table = table.append_column(_ROW, pa.array(rows[keep])).append_column(
                _TIME, pa.array(times[keep])
            )
            if len(table):
                latest = int(times[keep].max())
                self.latest_seen = latest if self.latest_seen is None else max(self.latest_seen, latest)
            self.pending = table if self.pending is None else pa.concat_tables(
                [self.pending, table], promote_options="permissive"
            )
        if self.pending is None or self.pending.num_rows == 0:
            return []
        ordered = self.pending.sort_by([(_TIME, "ascending"), (_ROW, "ascending")])
        ordered_times = ordered.column(_TIME).to_numpy()
        if final:
            cut = len(ordered_times)
        else:
            assert self.latest_seen is not None
            cut = int(np.searchsorted(ordered_times, self.latest_seen - self.max_delay, side="right"))
        released, self.pending = ordered.slice(0, cut), ordered.slice(cut)
        if cut == 0:
            return []
        input_rows = released.column(_ROW).to_numpy()
        released = released.drop_columns([_ROW, _TIME]).combine_chunks()
        parts = []
        for part in released.to_batches():
            m = part.num_rows
            parts.append((part, input_rows[:m]))
            input_rows = input_rows[m:]
        return parts

    @property
    def holding(self) -> bool:
        return self.pending is not None and self.pending.num_rows > 0
