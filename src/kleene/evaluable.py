"""What a compiled query and a set of queries share: the ways of feeding them events.

:class:`Evaluable` gives :class:`kleene.Query` and :class:`kleene.QuerySet`
one set of public methods with one semantics: :meth:`~Evaluable.run`,
:meth:`~Evaluable.matches`, :meth:`~Evaluable.match_batches` and
:meth:`~Evaluable.run_arrow` evaluate a whole source from a fresh state;
:meth:`~Evaluable.push`, :meth:`~Evaluable.push_batch` and
:meth:`~Evaluable.flush` feed events incrementally into the object's own
state.  Single events become one-row batches, so both paths share the
vectorized predicate stage and give the same complex events.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from kleene.frames import check_shape, results_table, to_pandas, to_polars
from kleene.io.badrows import BadRowPolicy
from kleene.io.readers import cheap_columns
from kleene.io.sources import pushdown, to_batches
from kleene.language.errors import KleeneError, UnseenNameWarning
from kleene.options import InputOptions
from kleene.planning.plan import Plan
from kleene.results import ComplexEvent, Match, MatchBatch, QueryMatch
from kleene.runtime.enumeration import Count
from kleene.seen import NameWatch
from kleene.session import OrderedFeed


class Evaluable:
    """The shared front of :class:`kleene.Query` and :class:`kleene.QuerySet`.

    A subclass sets :attr:`options` and :attr:`columns` and says how to make a
    fresh :meth:`session`; everything else is here.
    """

    options: InputOptions
    columns: tuple[str, ...]
    """The input columns a run reads (type, filters, time, window, partitions, stream):
    all it needs when the events' data is not output."""
    result_name: str | None = None
    """The ``query`` column of a single query's result tables (its ``QUERY name:``)."""
    result_partitions: tuple[str, ...] = ()
    """The PARTITION BY attributes, one column each in ``to_arrow(shape="matches")``."""

    def __init__(self) -> None:
        self._session = self.session()
        self._last_session: OrderedFeed = self._session

    def session(self) -> OrderedFeed:
        """A fresh evaluation state, fed batch by batch with ``feed``."""
        raise NotImplementedError

    @property
    def last_session(self) -> OrderedFeed:
        """The session of the latest run (or of push/push_batch): its engine, store and policy."""
        return self._last_session

    @property
    def bad_rows(self) -> BadRowPolicy:
        """The bad-row policy of the latest run (or of push/push_batch)."""
        return self._last_session.policy

    def run(self, source: Any) -> Iterator[ComplexEvent]:
        """Evaluate over a whole source, from a fresh state.

        ``source``: a file path (CSV, JSON Lines or Parquet), a pyarrow Table,
        RecordBatch or reader, a pandas DataFrame, any Arrow PyCapsule stream
        (a polars DataFrame, a DuckDB relation, a batch Spark DataFrame, which is
        collected to the driver), a polars LazyFrame, or an iterable of batches,
        DataFrames or event dicts (:func:`kleene.io.sources.to_batches`).  Complex events come in order
        of end position; at one end, in the order of the queries.
        """
        yield from self._whole(source, events=True)

    def matches(self, source: Any) -> Iterator[Match | QueryMatch]:
        """Like :meth:`run`, but without the events' data (cheaper): a file is read only
        for :attr:`columns`."""
        yield from self._whole(source, events=False)

    def match_batches(self, source: Any, *, events: bool = False) -> Iterator[MatchBatch]:
        """The bulk path: like :meth:`matches` (or :meth:`run` with ``events``), in columns.

        One :class:`~kleene.results.MatchBatch` per input batch that completes
        complex events: the same complex events as :meth:`matches`, in the same
        order, without a Python object per complex event.  With ``events``,
        each batch can gather its events' data (``to_arrow()``, JSON Lines).
        """
        yield from self._whole(source, events=events, columnar=True)

    def counts(self, source: Any, *, sinks: list[Count] | None = None) -> list[int]:
        """How many complex events each query gives on ``source``, in query order (``count``).

        A fresh session in count-only mode (:meth:`OrderedFeed.count_only`): the engines add
        to one count per query instead of listing complex events; warnings, strict types and
        bad rows as in :meth:`matches`.  ``sinks`` (a list) gets the Counts as the run starts,
        for whoever wants to read them during the run (``kleene run --count``'s progress bar).
        """
        counts: list[Count] = [] if sinks is None else sinks
        for _ in self._whole(source, events=False, counting=counts):
            pass
        return [c.n for c in counts]

    def run_arrow(self, source: Any, *, events: bool = True) -> Iterator[pa.RecordBatch]:
        """The complex events as Arrow record batches (see :meth:`MatchBatch.to_arrow`)."""
        for batch in self.match_batches(source, events=events):
            yield batch.to_arrow()

    def to_arrow(self, source: Any, *, shape: str = "matches") -> pa.Table:
        """The complex events of ``source`` as one pyarrow Table (see :mod:`kleene.frames`).

        ``shape="matches"``: one row per complex event (``query``, ``match_id``,
        ``start``, ``end``, with a time column ``start_time`` and ``end_time`` (its
        first and last event's), ``positions``, one column per PARTITION BY attribute);
        ``shape="events"``: one row per (complex event, event) (``query``,
        ``match_id``, ``position``, the event's attributes).  Built from
        :meth:`match_batches` in columns; the matches shape reads only the query's columns.
        """
        check_shape(shape)
        timed = shape == "matches" and self.options.time_column is not None
        # The matches shape keeps the events only for their times: the file's query columns
        # are read (pushdown) as without events.
        batches = self._whole(source, events=shape == "events" or timed, columnar=True, lean=timed)
        return results_table(
            batches,
            shape=shape,
            name=self.result_name,
            partition_by=self.result_partitions,
            time_column=self.options.time_column if timed else None,
        )

    def to_pandas(self, source: Any, *, shape: str = "matches") -> Any:
        """:meth:`to_arrow` as a pandas DataFrame (needs pandas)."""
        return to_pandas(self.to_arrow(source, shape=shape))

    def to_polars(self, source: Any, *, shape: str = "matches") -> Any:
        """:meth:`to_arrow` as a polars DataFrame (needs polars)."""
        return to_polars(self.to_arrow(source, shape=shape))

    def push(self, event: Mapping[str, Any]) -> list[ComplexEvent]:
        """Feed one event; return the complex events it completes."""
        return self.push_batch(pa.RecordBatch.from_pylist([dict(event)]))

    def push_batch(self, batch: Any) -> list[ComplexEvent]:
        """Feed a batch of events; return the complex events they complete.

        ``batch``: a RecordBatch or Table, or any source :meth:`run` reads
        (a pandas or polars DataFrame, a DuckDB relation, ...), read whole.
        """
        self._last_session = self._session
        out: list[ComplexEvent] = []
        for b in to_batches(batch):
            out.extend(self._session.feed(b, with_events=True))
        return out

    def flush(self) -> list[ComplexEvent]:
        """End of the pushed stream: release the events still held back by ``max_delay``."""
        self._last_session = self._session
        return self._session.flush(with_events=True)

    def named_plans(self) -> list[tuple[str | None, Plan]]:
        """Each query's plan, with its name when it runs with others."""
        raise NotImplementedError

    def check_names(self, batches: Iterable[pa.RecordBatch]) -> None:
        """Raise :class:`~kleene.language.errors.UnseenNameError` if an event type or stream of
        the query never occurs in ``batches`` (the whole input's type and stream columns).

        What ``strict_types`` does before a run when the input's columns can be
        read cheaply (:func:`~kleene.io.readers.cheap_columns`).
        """
        named = self.named_plans()
        watch = NameWatch(self.options, [plan for _, plan in named])
        for batch in batches:
            watch.add(batch)
        watch.check([(plan, name) for name, plan in named])

    def _check_file_names(self, source: Any) -> None:
        """Under ``strict_types``, a file's type and stream columns checked before the run."""
        if not self.options.strict_types or not isinstance(source, (str, os.PathLike)):
            return
        options = self.options
        wanted = [c for c in (options.type_column, options.stream_column) if c is not None]
        try:
            batches = cheap_columns(os.fspath(source), wanted)
        except KleeneError:  # a bad file is reported by the run itself
            return
        if batches is not None:
            self.check_names(batches)

    def _whole(
        self, source: Any, *, events: bool, columnar: bool = False, lean: bool = False,
        counting: list[Count] | None = None,
    ) -> Iterator[Any]:
        """A whole source through a fresh session (see :meth:`OrderedFeed.feed_all`).

        At its end, each event type or stream of the query that the input never
        held is an :class:`~kleene.UnseenNameWarning` (a typo otherwise gives
        only silence).  ``lean``: read only the query's columns of a file even
        with ``events`` (when the events are kept for their times only).
        ``counting``: the session only counts, into the Counts appended to this list.
        """
        self._check_file_names(source)
        session = self.session()
        self._last_session = session
        if counting is not None:
            counting.extend(session.count_only())
        columns = pushdown(self.columns, self.options.policy_mode, events=events and not lean)
        batches = to_batches(source, columns, null_values=self.options.null_values)
        yield from session.feed_all(batches, with_events=events, columnar=columnar)
        for message in session.unseen():
            warnings.warn(message, UnseenNameWarning, stacklevel=3)
