"""The one contract every evaluation engine keeps, so a session never asks which it has.

The tECS engine (:class:`kleene.runtime.engine.Engine`, CORE's algorithm), the
register engine (:class:`kleene.registers.runtime.RegisterEngine`, SRT runs
and the pair join) and the windowed register runtime
(:class:`kleene.registers.window_runtime.WindowedEngine`) each take the
events of one batch, in stream order, and append the complex events they
complete to a sink.  The plan (:mod:`kleene.planning`) builds the one it
chose; a new engine plugs in by implementing this and being chosen there.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa

from kleene.runtime.enumeration import Columns, Count, Found

FoundSink = list[Found] | Columns | Count
"""Where an engine appends complex events: a list of ``Found`` tuples, the bulk path's
``Columns``, or a ``Count`` that keeps only their number (both take the same tuples, so
engines need not know which path they fill).  An engine that can count without building
complex events does so into a ``Count`` (``add(n)``); one that cannot appends its tuples,
which are counted."""


class BatchEngine(Protocol):
    """The evaluation state of one query over one stream (all partitions)."""

    tau: int | float
    """The window bound at the latest event: no complex event to come reaches before it
    (the session releases stored events up to here)."""

    steps: int
    """How many events were visited (the others could change no run): work, not time."""

    def run_batch(
        self, batch: pa.RecordBatch, bits: np.ndarray, positions: np.ndarray,
        times: np.ndarray | None, key_columns: Sequence[Sequence[Hashable]] | None, out: FoundSink,
    ) -> None:
        """Process one batch (rows in stream order), appending its complex events to ``out``.

        ``batch`` holds the conformed rows (engines that read attributes
        take them from it), ``bits`` their predicate bit vectors,
        ``positions`` their input positions, ``times`` their times (None:
        positions serve as times), ``key_columns`` the PARTITION BY values.
        """
        ...
