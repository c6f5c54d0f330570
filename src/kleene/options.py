"""How the input is read: one value carried from ``compile`` to every session.

The options describe the *input*, not the query: which column names the
event type, the time and the stream, the unit of numeric times, how much
disorder to accept, and what to do with rows that cannot be evaluated.
Queries evaluated together (:func:`kleene.compile_many`) share them.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from kleene.io.badrows import BadRowPolicy
from kleene.io.reorder import ReorderBuffer
from kleene.language.errors import KleeneError
from kleene.limits import Limits


class OptionKeywords(TypedDict, total=False):
    """The fields of :class:`InputOptions` as keyword arguments (``compile(q, time_column="t")``)."""

    type_column: str
    time_column: str | None
    time_unit: str
    on_bad_row: str | BadRowPolicy
    max_delay: str | None
    stream_column: str | None
    strict_types: bool
    null_values: Sequence[str]
    sort: bool
    sort_memory: str | int | None
    max_states: int | None
    max_runs: int | None
    max_matches: int | None
    max_memory: str | int | None


@dataclass(frozen=True)
class InputOptions:
    """The input's columns and reading rules (the keyword options of :func:`kleene.compile`).

    ``time_column`` (with ``time_unit`` for numeric columns) gives event times
    for ``WITHIN <duration>`` windows.  ``max_delay`` (e.g. ``"2 seconds"``)
    accepts input out of time order by at most that much.  ``stream_column``
    names the column saying which stream each event comes from (None: the
    input is one stream).  ``on_bad_row`` is ``"error"``, ``"skip"``,
    ``"quarantine"`` or a :class:`~kleene.io.badrows.BadRowPolicy`.
    ``strict_types``: an event type or stream of the query that the input
    never holds is an :class:`~kleene.language.errors.UnseenNameError` instead
    of a warning: before evaluation when a file input's type column can be
    read cheaply first (:func:`kleene.io.readers.cheap_columns`), else at the
    end of the input, before the events still held by ``max_delay`` are released.
    ``null_values``: more texts that mean "no value" in a CSV file (``["NA"]``),
    besides the empty cell, ``null`` and ``NULL``; in JSON Lines, strings equal
    to one are nulls.  Only files read by kleene (a path) use them.
    ``sort``: the whole input is held in memory and evaluated in (time,
    arrival) order (needs ``time_column``), up to ``sort_memory`` bytes of
    Arrow data (``"4GB"``, or an int; default: half the machine's memory).
    ``max_states``, ``max_runs``, ``max_matches`` and ``max_memory`` (``"4GB"`` or an int)
    bound the automaton, the live runs, the complex events of one event and the process's
    memory, ``max_held`` the rows ``max_delay`` holds back at once (:mod:`kleene.limits`;
    None: the default); passing one stops the run with a
    :class:`~kleene.language.errors.LimitError`.
    """

    type_column: str = "type"
    time_column: str | None = None
    time_unit: str = "s"
    on_bad_row: str | BadRowPolicy = "error"
    max_delay: str | None = None
    stream_column: str | None = None
    strict_types: bool = False
    null_values: tuple[str, ...] = ()
    sort: bool = False
    sort_memory: str | int | None = None
    max_states: int | None = None
    max_runs: int | None = None
    max_matches: int | None = None
    max_memory: str | int | None = None
    max_held: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.null_values, str):
            raise KleeneError("null_values is a list of texts, e.g. ['NA', 'N/A']")
        object.__setattr__(self, "null_values", tuple(self.null_values))
        if self.max_delay is not None:
            if self.time_column is None:
                raise KleeneError("max_delay reorders events by time: pass time_column too")
            from kleene.language.parser import parse_duration  # lark: only with a delay

            parse_duration(self.max_delay)  # a bad duration is reported here, once
        if self.sort:
            if self.time_column is None:
                raise KleeneError("sort orders the input by time: pass time_column (--time-column) too")
            if self.max_delay is not None:
                raise KleeneError(
                    "sort orders the whole input, max_delay a nearly ordered one: choose one"
                )
        if self.sort_memory is not None:
            parse_size(self.sort_memory)
        _ = self.limits  # a bad limit is reported here, once

    @property
    def limits(self) -> Limits:
        """The limits of a run (:mod:`kleene.limits`), defaults where none was given."""
        given = {
            name: value
            for name, value in (
                ("max_states", self.max_states),
                ("max_runs", self.max_runs),
                ("max_matches", self.max_matches),
                ("max_held", self.max_held),
            )
            if value is not None
        }
        memory = 0 if self.max_memory is None else parse_size(self.max_memory, "max_memory")
        return Limits(**given, max_memory=memory)

    @classmethod
    def given(cls, base: InputOptions | None = None, **options: Any) -> InputOptions:
        """``base`` (default: the defaults) with the options given (and not None) replacing its own.

        So a whole ``options=`` value and single keywords combine:
        ``compile(q, options=opts, time_unit="ms")``.
        """
        changes = {k: v for k, v in options.items() if v is not None}
        return dataclasses.replace(base or cls(), **changes)

    @property
    def delay_nanos(self) -> int | None:
        """``max_delay`` in nanoseconds (None: input must be in time order)."""
        if self.max_delay is None:
            return None
        from kleene.language.parser import parse_duration  # lark: only with a delay

        return parse_duration(self.max_delay)

    def reorder_buffer(self) -> ReorderBuffer | None:
        """A fresh buffer for bounded disorder or for sorting the whole input, or None when
        input must come in time order."""
        if self.sort:
            limit = default_sort_memory() if self.sort_memory is None else parse_size(self.sort_memory)
            return ReorderBuffer(self.time_column or "", self.time_unit, None, sort_memory=limit)
        delay = self.delay_nanos
        if delay is None:
            return None
        return ReorderBuffer(
            self.time_column or "", self.time_unit, delay, self.max_delay,
            hold_memory=self.limits.max_memory, limits=self.limits,
        )

    def policy(self) -> BadRowPolicy:
        """The bad-row policy a new run reports to: the one given, or a fresh one of that mode."""
        spec = self.on_bad_row
        return spec if isinstance(spec, BadRowPolicy) else BadRowPolicy(spec)

    @property
    def policy_mode(self) -> str:
        """``"error"``, ``"skip"`` or ``"quarantine"``."""
        spec = self.on_bad_row
        return spec.mode if isinstance(spec, BadRowPolicy) else spec


_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(size: str | int, name: str = "sort_memory") -> int:
    """Bytes from ``4GB``, ``512 MiB``, ``1.5g`` or an int (binary units: 1 GB = 2**30 bytes)."""
    if isinstance(size, int) and not isinstance(size, bool):
        if size < 1:
            raise KleeneError(f"{name} must be at least 1 byte, not {size}")
        return size
    match = _SIZE.match(str(size))
    if match is None:
        raise KleeneError(f"cannot read {size!r} as a size (e.g. 4GB, 512MB, 1000000)")
    unit = (match.group(2) or "").lower()[:1]
    if unit == "b":
        unit = ""
    value = int(float(match.group(1)) * _UNITS[unit])
    if value < 1:
        raise KleeneError(f"{name} must be at least 1 byte, not {size!r}")
    return value


def default_sort_memory() -> int:
    """Half the machine's physical memory (4 GiB when the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) // 2
    except (ValueError, OSError, AttributeError):
        return 4 << 30
