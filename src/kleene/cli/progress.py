"""The progress bar of ``kleene run`` on a terminal (stderr), and the terminal test it needs.

The bar is drawn by tqdm rather than by hand-written terminal codes: tqdm is
a small pure-Python library with no dependencies that draws one line on any
stream, and computes the rate and the time left (ETA) itself.  rich was the
other candidate, but it brings several packages and a longer import for a
single line.  tqdm is imported only when the bar is about to appear (a run
that lasts under ``delay`` seconds, or runs with ``--no-progress``, never
imports it), so it costs ``kleene run`` nothing at start-up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import pyarrow as pa

KNOWN_TOTAL = "{percentage:3.0f}%|{bar}| {rows}/{total_rows} rows, {rate_fmt}{postfix}, ETA {remaining}"
"""The bar when the input's size is known (a file): rows read, rate, complex events, ETA
(about 70 columns besides the bar: it fits an 80-column terminal)."""
UNKNOWN_TOTAL = "{rows} rows, {rate_fmt}{postfix}, {elapsed} elapsed"
"""The line when it is not (a compressed text file): no percentage, no ETA."""
DEFAULT_WIDTH = 100
"""Columns of the bar's line on a stream that does not say its width."""


class Progress:
    """A one-line progress report on a terminal: rows read, rate, complex events so far, ETA.

    It stays silent for the first ``delay`` seconds, so quick runs print
    nothing but their results, and redraws at most every ``interval`` seconds
    so it costs nothing measurable.  The total row count (for the percentage
    and the ETA) is only computed once the bar is about to appear.
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
        self._events = events
        self.delay = delay
        self.interval = interval
        self.started = time.monotonic()
        self.rows = 0
        self.shown = False
        self._bar: Any = None

    def track(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Pass batches through, counting a batch's rows once the engine asks for the next one."""
        for batch in batches:
            yield batch
            self.advance(batch.num_rows)

    def advance(self, rows: int) -> None:
        self.rows += rows
        now = time.monotonic()
        if self._bar is None:
            if now - self.started >= self.delay:
                self._open()
            return
        self._bar.set_postfix_str(self._found(), refresh=False)  # drawn by update, if due
        self._bar.update(rows)

    def _open(self) -> None:
        """Create the bar now that it appears: the total is asked for once, here."""
        from tqdm import tqdm  # only for a run that lasts: see the module docstring

        class Bar(tqdm):
            """tqdm, with row counts written as people read them (``rows``, ``total_rows``)."""

            @property
            def format_dict(self) -> dict[str, Any]:
                found: dict[str, Any] = super().format_dict
                found["rows"] = count_text(found["n"])
                found["total_rows"] = count_text(found["total"] or 0)
                return found

        try:
            total = self._total_fn()
        except Exception:  # noqa: BLE001 - a progress bar must never break a run
            total = None
        self._bar = Bar(
            total=total or None,
            initial=self.rows,
            delay=1.0,  # not drawn by the constructor: its clock is set first (below)
            file=self.stream,
            unit=" rows",
            unit_scale=True,  # the rate: 12.3k rows/s
            mininterval=self.interval,
            smoothing=0,  # the average rate since the start: a steady ETA
            dynamic_ncols=self._sized(),
            ncols=None if self._sized() else DEFAULT_WIDTH,
            bar_format=KNOWN_TOTAL if total else UNKNOWN_TOTAL,
            postfix=self._found(),
            leave=True,
            position=0,  # one line, even when other bars were made in this process
        )
        # tqdm's clock (wall time) started when the bar was made; the run started earlier,
        # and the rows read before count in the rate (tqdm subtracts `initial`).
        self._bar.start_t = time.time() - (time.monotonic() - self.started)
        self._bar.initial = 0
        self._bar.delay = 0
        self._bar.refresh()
        self.shown = True

    def _sized(self) -> bool:
        """Whether the stream is a terminal that knows its width (a new pty says 0 columns, and
        tqdm would then draw an empty line)."""
        try:
            return os.get_terminal_size(self.stream.fileno()).columns > 0
        except (AttributeError, OSError, ValueError):
            return False

    def _found(self) -> str:
        return f"{self._events():,} complex events"

    def close(self) -> None:
        """Draw the final state (if the bar was ever shown) and end its line."""
        if self._bar is not None:
            self._bar.set_postfix_str(self._found(), refresh=False)
            self._bar.close()
            self._bar = None

    def clear(self) -> None:
        """Erase the bar, e.g. before an error message."""
        if self._bar is not None:
            self._bar.leave = False
            self._bar.close()
            self._bar = None
            self.shown = False


def count_text(n: float) -> str:
    """``12,345`` below a million, then ``2.40M`` and ``1.20G``: short enough for 80 columns."""
    if n < 1_000_000:
        return f"{int(n):,}"
    if n < 1_000_000_000:
        return f"{n / 1e6:.2f}M"
    return f"{n / 1e9:.2f}G"


def is_tty(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal (False for anything that cannot tell)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
