"""The progress bar of ``kleene run`` on a terminal (stderr), and the terminal test it needs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import pyarrow as pa


class Progress:
    """A one-line progress report on a terminal: rows read, rate, complex events so far.

    It stays silent for the first ``delay`` seconds, so quick runs print
    nothing but their results, and redraws at most every ``interval`` seconds
    so it costs nothing measurable.  The total row count (for a percentage)
    is only computed once the bar is about to appear.
    """

    def __init__(
        self,
        stream: IO[str],
        total: Callable[[], int | None],
        events: Callable[[], int],
        *,
        delay: float = 1.0,
        interval: float = 0.2,
    ) -> None:
        self.stream = stream
        self._total_fn = total
        self._total: int | None = None
        self._total_known = False
        self._events = events
        self.delay = delay
        self.interval = interval
        self.started = time.monotonic()
        self.rows = 0
        self.shown = False
        self._last = 0.0

    def track(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Pass batches through, counting a batch's rows once the engine asks for the next one."""
        for batch in batches:
            yield batch
            self.advance(batch.num_rows)

    def advance(self, rows: int) -> None:
        self.rows += rows
        now = time.monotonic()
        if now - self.started >= self.delay and now - self._last >= self.interval:
            self._last = now
            self._draw(now)

    def _draw(self, now: float, final: bool = False) -> None:
        if not self._total_known:
            self._total_known = True
            try:
                self._total = self._total_fn()
            except Exception:  # noqa: BLE001 - a progress bar must never break a run
                self._total = None
        elapsed = max(now - self.started, 1e-9)
        text = f"{self.rows:,} rows"
        if self._total:
            pct = min(100.0, 100.0 * self.rows / self._total)
            text += f" / {self._total:,} ({pct:.0f}%)"
        text += f"  {self.rows / elapsed:,.0f} rows/s  {self._events():,} complex events  {elapsed:.1f}s"
        self.stream.write("\r" + text + "\x1b[K" + ("\n" if final else ""))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Draw the final state (if the bar was ever shown) and end its line."""
        if self.shown:
            self._draw(time.monotonic(), final=True)

    def clear(self) -> None:
        """Erase the bar, e.g. before an error message."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def is_tty(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal (False for anything that cannot tell)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
