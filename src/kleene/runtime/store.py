"""Recent input batches, kept so complex events can carry their events' data.

Only events that a future complex event may still contain are kept: with a
window, a batch whose every event is older than the window bound ``tau`` is
released, so memory stays bounded on long streams.  Without a window every
event may still be part of a future match, so everything is kept.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from typing import Any

import numpy as np
import pyarrow as pa


class Stored:
    __slots__ = ("batch", "positions", "first", "last", "max_time", "_columns", "derived")

    def __init__(self, batch: pa.RecordBatch, positions: np.ndarray, max_time: float) -> None:
        self.batch = batch
        self.positions = positions
        self.first = int(positions[0])
        self.last = int(positions[-1])
        self.max_time = max_time
        self._columns: list[list[Any]] | None = None
        self.derived: dict[Hashable, Any] = {}
        """Per-batch data derived for output (e.g. each row rendered as JSON), computed once."""

    def row(self, pos: int) -> dict[str, Any]:
        i = int(np.searchsorted(self.positions, pos))
        if self._columns is None:
            self._columns = [c.to_pylist() for c in self.batch.columns]
        return {name: col[i] for name, col in zip(self.batch.schema.names, self._columns)}


class EventStore:
    """Maps input positions to event dicts for the batches still in reach."""

    def __init__(self) -> None:
        self._batches: deque[Stored] = deque()

    def add(self, batch: pa.RecordBatch, positions: np.ndarray, max_time: float) -> None:
        if len(positions):
            self._batches.append(Stored(batch, positions, max_time))

    def release_before(self, tau: float) -> None:
        """Forget batches whose every event is earlier than ``tau``."""
        while len(self._batches) > 1 and self._batches[0].max_time < tau:
            self._batches.popleft()

    def snapshot(self, lo: int, hi: int) -> list[Stored]:
        """The stored batches holding positions ``lo..hi``, oldest first.

        The bulk path (:class:`kleene.results.EventRows`) keeps them, so that a
        batch of complex events can still gather its events' data after the
        store has moved on.
        """
        return [b for b in self._batches if b.last >= lo and b.first <= hi]

    def event(self, pos: int) -> dict[str, Any]:
        # Complex events mostly refer to recent events: scan from the newest batch.
        for b in reversed(self._batches):
            if b.first <= pos:
                return b.row(pos)
        raise KeyError(pos)
