"""The lookahead's tail: live events of a batch that wait for the next one (kleene.runtime.engine).

Kept apart from the engine because it is plain data with its own small
algebra (select, keep the alive, concatenate); the engine decides when to
build one and when to step it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Tail:
    """Live events after a batch's last final-capable event, held until the next batch.

    No complex event ends at them, so deferring them delays no output; the
    next batch tells which of them still reach a final-capable event within
    the window (those are stepped before it) and which are dead (dropped, as
    all are at the end of the stream).  Without it a batch's tail was stepped
    every time: a window's worth of events per batch, more the wider the
    window.  It is never longer than the batch that follows.
    """

    bits: np.ndarray
    positions: np.ndarray
    times: np.ndarray | None
    """None when positions are the times."""
    keys: list[list[Hashable]] | None

    @classmethod
    def of(
        cls,
        rows: np.ndarray,
        bits: np.ndarray,
        positions: np.ndarray,
        times: np.ndarray | None,
        keys: Sequence[Sequence[Hashable]] | None,
    ) -> Tail:
        """The given rows of a batch."""
        picked = None if keys is None else [[col[i] for i in rows.tolist()] for col in keys]
        return cls(bits[rows], positions[rows], None if times is None else times[rows], picked)

    def __len__(self) -> int:
        return len(self.bits)

    def alive(self, horizon: int | float | None, window: int | float) -> Tail | None:
        """The events that reach ``horizon`` (the next final-capable time) within the window."""
        if horizon is None:
            return self
        times = self.positions if self.times is None else self.times
        keep = (horizon - times) <= window
        if keep.all():
            return self
        if not keep.any():
            return None
        return Tail.of(np.flatnonzero(keep), self.bits, self.positions, self.times, self.keys)

    def __add__(self, other: Tail) -> Tail:
        return Tail(
            np.concatenate((self.bits, other.bits)),
            np.concatenate((self.positions, other.positions)),
            None if self.times is None or other.times is None else np.concatenate((self.times, other.times)),
            None if self.keys is None or other.keys is None else [a + b for a, b in zip(self.keys, other.keys)],
        )
