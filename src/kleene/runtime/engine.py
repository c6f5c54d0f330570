"""Running a compiled query over batches of events: partitions, windows, skipping.

The engine receives, per batch, the predicate bit vector of every event (the
vectorized first stage, :mod:`kleene.automata.predicates`), its input
position, its time and its partition key, and drives one
:class:`~kleene.runtime.evaluator.Evaluator` per partition (CORE §4.4:
PARTITION BY runs one instance of Algorithm 1 per key, created when the key
first appears; positions stay global input positions).

**Skipping.**  Only events that can change some active run enter the
per-event loop.  An event with bit vector ``v`` is skipped when ``v`` is
*inert* (:meth:`LazyDFA.inert`) for ``q0`` and for every state active in its
partition: then Algorithm 1 would leave ``T`` unchanged and output nothing.
Inertness depends on the active states, so a table ``code -> skip?`` over the
batch's distinct bit vectors is built per distinct set of active states and
cached for the batch.

**Windows.**  ``tau = time - window`` is the earliest start a complex event
ending now may have; enumeration prunes with it and runs older than it are
dropped.  ``WITHIN n EVENTS`` uses positions as times.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from kleene.automata.determinize import LazyDFA
from kleene.runtime.enumeration import enumerate_node
from kleene.runtime.evaluator import Evaluator

NO_BOUND = -(1 << 62)
"""``tau`` when the query has no window: earlier than every time."""

UNLIMITED = 1 << 62


@dataclass(frozen=True, slots=True)
class Settings:
    window: int | float | None
    """Window length in time units (positions for ``n EVENTS``); None: no window."""
    partitioned: bool
    consume: str
    limit: int | None


Emit = Callable[[int, int, tuple[int, ...], Hashable], object]
"""``emit(start, end, positions, partition_key)`` for each complex event."""


class Engine:
    """The evaluation state of one query over one stream (all partitions)."""

    def __init__(self, dfa: LazyDFA, settings: Settings) -> None:
        self.dfa = dfa
        self.settings = settings
        self.single = Evaluator(dfa)
        self.partitions: dict[Hashable, Evaluator] = {}
        self.tau: int | float = NO_BOUND
        """The window bound at the latest event: nothing before it is reachable."""

    def run_batch(
        self,
        bits: np.ndarray,
        positions: Sequence[int],
        times: Sequence[int] | Sequence[float] | None,
        keys: Sequence[Hashable] | None,
        emit: Emit,
    ) -> None:
        """Process one batch of events, calling ``emit`` for each complex event.

        ``times`` is None for event windows and unwindowed queries (positions
        serve as times).  ``keys`` holds the partition key per event (None
        for an event outside every partition) or is None if not partitioned.
        """
        n = len(positions)
        if n == 0:
            return
        dfa = self.dfa
        settings = self.settings
        window = settings.window
        limit = settings.limit if settings.limit is not None else UNLIMITED
        consume = settings.consume
        uniq, inverse = np.unique(bits, return_inverse=True)
        values: list[int] = uniq.tolist()
        codes: list[int] = inverse.reshape(-1).tolist()
        skip_tables: dict[frozenset[int], list[bool]] = {}

        def skip_table(active: frozenset[int]) -> list[bool]:
            table = skip_tables.get(active)
            if table is None:
                states = (0, *active)
                table = [all(dfa.inert(s, v) for s in states) for v in values]
                skip_tables[active] = table
            return table

        time_of = positions if times is None else times
        partitions = self.partitions
        ev = self.single
        skip_key = ev.active_key
        skip = skip_table(skip_key)
        for i in range(n):
            if keys is not None:
                key = keys[i]
                if key is None:
                    continue
                ev = partitions.get(key)  # type: ignore[assignment]
                if ev is None:
                    ev = partitions[key] = Evaluator(dfa)
                if skip_table(ev.active_key)[codes[i]]:
                    continue
            elif skip[codes[i]]:
                continue
            pos = positions[i]
            time = time_of[i]
            tau = NO_BOUND if window is None else time - window
            self.tau = tau
            outputs = ev.step(pos, time, values[codes[i]], tau)  # type: ignore[arg-type]
            if outputs:
                found = 0
                key = keys[i] if keys is not None else None

                def emit_here(start: int, ps: tuple[int, ...], _k: Hashable = key, _e: int = pos) -> None:
                    emit(start, _e, ps, _k)

                for node in outputs:
                    found += enumerate_node(node, tau, emit_here, limit - found)  # type: ignore[arg-type]
                    if found >= limit:
                        break
                if found and consume != "NONE":
                    if consume == "ANY":
                        self.single.clear()
                        partitions.clear()
                    else:
                        ev.clear()
            ev.active_key = frozenset(ev.table)
            if keys is None and ev.active_key != skip_key:
                skip_key = ev.active_key
                skip = skip_table(skip_key)
