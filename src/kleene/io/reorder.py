"""Bounded disorder (``max_delay``): rows held back until the watermark passes them.

kleene's engines need events in time order.  Real feeds are a little out of
order; this buffer sorts them within a bound and hands every row it cannot
place (late, or with an unreadable time) to the bad-row policy, never
dropping or misordering one silently.  Without a bound (``sort``) it holds
the whole input, up to a memory limit, and releases it sorted at the end.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from kleene.io.timecol import to_nanos
from kleene.language.errors import DataError, KleeneError, LimitError
from kleene.limits import Limits, resident_bytes

_ROW = "__kleene_row"
_TIME = "__kleene_time"
"""Columns of the buffer: input row number and time (ns)."""


BACKWARDS = "timestamp goes backwards"
"""The bad-row reason of a row whose time is before an earlier row's (input not in order)."""
UNSORTED_HINT = (
    "; the input is not in time order: --sort sorts it by time first (sort=True in Python), "
    "--max-delay DURATION accepts disorder up to DURATION (max_delay=)"
)


class SortMemoryError(KleeneError):
    """``sort``: the input does not fit the memory allowed for sorting it (``sort_memory``)."""


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n} bytes"


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
        self,
        time_column: str,
        time_unit: str,
        max_delay: int | None,
        said: str | None = None,
        *,
        sort_memory: int | None = None,
        hold_memory: int | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.time_column = time_column
        self.time_unit = time_unit
        self.max_delay = max_delay
        """None: sort the whole input (``sort``): nothing is late, all is released at its end."""
        self.said = said or f"{max_delay} nanoseconds"
        """``max_delay`` as the user wrote it, for messages (``"2 seconds"``, not nanoseconds)."""
        self.sort_memory = sort_memory
        """With ``max_delay`` None: the most bytes of Arrow data held (the limit of ``sort``)."""
        self.hold_memory = hold_memory
        """With ``max_delay``: the most bytes of Arrow data held back (``max_memory``)."""
        self.limits = limits
        """With ``max_delay``: ``max_held``, the most rows held back at once (None: no limit)."""
        self.held = 0
        self.parts: list[pa.Table] = []
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
            if self.max_delay is not None:
                keep &= ~self._late(batch, rows, times, keep, set_aside)
            table = pa.Table.from_batches([batch]).filter(pa.array(keep))
            table = table.append_column(_ROW, pa.array(rows[keep])).append_column(
                _TIME, pa.array(times[keep])
            )
            if len(table):
                latest = int(times[keep].max())
                self.latest_seen = latest if self.latest_seen is None else max(self.latest_seen, latest)
            if self.max_delay is None:  # sorting: concatenated once, at the end
                self.parts.append(table)
            else:
                self.pending = table if self.pending is None else pa.concat_tables(
                    [self.pending, table], promote_options="permissive"
                )
            self.held += table.nbytes
            if self.sort_memory is not None and self.held > self.sort_memory:
                raise SortMemoryError(
                    f"sorting by time holds the whole input in memory, and it passed the limit of "
                    f"{_size(self.sort_memory)} (--sort-memory, sort_memory= in Python) at input "
                    f"row {self.next_input - 1}: sort the file beforehand, raise --sort-memory, "
                    "or, if it is nearly in time order, use --max-delay instead of --sort"
                )
            if self.hold_memory is not None and self._over(self.hold_memory):
                raise LimitError(
                    f"holding back {self.pending.num_rows if self.pending is not None else 0:,} "
                    f"events for max_delay = {self.said} (--max-delay), kleene's process passed "
                    f"the limit max_memory = {_size(self.hold_memory)} at input row "
                    f"{self.next_input - 1}: lower --max-delay to the disorder the input really "
                    "has, sort the input beforehand (--sort), or raise the limit with "
                    "--max-memory SIZE (max_memory= in Python)",
                    "max_memory", self.hold_memory,
                )
        if self.max_delay is None:
            if not final or not self.parts:
                return []  # sorting: everything waits for the end
            self.pending = pa.concat_tables(self.parts, promote_options="permissive")
            self.parts = []
        if self.pending is None or self.pending.num_rows == 0:
            return []
        ordered = self.pending.sort_by([(_TIME, "ascending"), (_ROW, "ascending")])
        ordered_times = ordered.column(_TIME).to_numpy()
        if final:
            cut = len(ordered_times)
        else:
            assert self.latest_seen is not None and self.max_delay is not None
            cut = int(np.searchsorted(ordered_times, self.latest_seen - self.max_delay, side="right"))
        released, self.pending = ordered.slice(0, cut), ordered.slice(cut)
        self.held = self.pending.nbytes
        if self.limits is not None and self.pending.num_rows > self.limits.max_held:
            # Rows still behind the watermark after this batch: it brought them past the limit.
            raise self.limits.held_error(self.pending.num_rows, self.said, self.next_input - 1)
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

    def _over(self, limit: int) -> bool:
        """The rows held, or the whole process, passed ``limit`` bytes (the held rows are what
        grows with ``max_delay``; the process's resident memory counts the rest).  The rows
        count three times: each push concatenates and sorts them, two more copies for a while."""
        if 3 * self.held > limit:
            return True
        now = resident_bytes()
        return now is not None and now > limit

    def _late(
        self, batch: pa.RecordBatch, rows: np.ndarray, times: np.ndarray, keep: np.ndarray,
        set_aside: SetAside,
    ) -> np.ndarray:
        """Late rows: more than max_delay behind the latest time seen *before* the row arrived.

        Decided row by row in arrival order, so the outcome does not depend on
        how the input is cut into batches.  Each goes to the policy.
        """
        assert self.max_delay is not None
        lowest = np.iinfo(np.int64).min
        seen = np.where(keep, times, lowest)
        before = np.maximum.accumulate(np.concatenate(([self.latest_seen or lowest], seen)))[:-1]
        late = keep & (before > lowest) & (times < before - self.max_delay)
        for i in np.flatnonzero(late).tolist():
            set_aside(
                batch, i, int(rows[i]), self.time_column,
                f"late event: more than {self.said} (max_delay) behind the latest time",
            )
        return late

    @property
    def holding(self) -> bool:
        return bool(self.parts) or (self.pending is not None and self.pending.num_rows > 0)
