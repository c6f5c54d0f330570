"""The window and strategy settings of a compiled query (:class:`Settings`), apart from the engine.

The planner makes them for every query and the register engine never needs the tECS engine
(:mod:`kleene.runtime.engine`, which takes them too): kept here, planning a query with conditions
between events does not import that engine and the modules under it (start-up time of ``kleene
run``).  :mod:`kleene.runtime.engine` re-exports the class.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Settings:
    """How a query's matches are bounded and chosen: its window, partitions, CONSUME BY, LIMIT
    and selection strategy."""

    window: int | float | None
    """Window length in time units (positions for ``n EVENTS``); None: no window."""
    partitioned: bool
    consume: str
    limit: int | None
    strategy: str = "ALL"
    """NEXT, LAST and MAX select among the complex events of one end (runtime/strategies.py)."""
