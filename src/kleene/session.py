"""A session: the evaluation state of one query over one stream, fed batch by batch.

Per batch, in stream order: keep the rows of the query's streams, conform the
columns the query reads (bad rows go to the bad-row policy), evaluate every
atomic predicate vectorized into a bit vector per event, check times, then
hand the batch to the engine the plan built.  :class:`OrderedFeed` puts a
:class:`~kleene.io.reorder.ReorderBuffer` in front when the input may be out
of time order (``max_delay``); a set of queries (:mod:`kleene.queryset`)
shares one feed.

Size: a little over 500 lines, because one batch's whole pipeline (streams, conform, times,
bad rows, engine, results or counts) reads best in one place.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Hashable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.io.badrows import SKIP_HINTS, BadRowPolicy
from kleene.io.reorder import BACKWARDS, UNSORTED_HINT, ReorderBuffer
from kleene.io.timecol import to_nanos
from kleene.io.utf8 import INVALID_UTF8, unmark
from kleene.io.utf8 import REASON as UTF8_REASON
from kleene.language import ast
from kleene.language.checks import check
from kleene.language.errors import DataError, KleeneError
from kleene.language.schema import Schema
from kleene.planning.plan import Plan
from kleene.predicates.conform import conform, textual
from kleene.results import ComplexEvent, EventRows, Match, MatchBatch, QueryMatch
from kleene.runtime.contract import BatchEngine
from kleene.runtime.enumeration import Columns, Count, Found
from kleene.runtime.store import EventStore
from kleene.seen import NameWatch


def number_rows(next_row: int, n: int, positions: np.ndarray | None) -> np.ndarray:
    """Positions for ``n`` rows: by arrival from ``next_row``, or checked explicit ones."""
    if positions is None:
        return np.arange(next_row, next_row + n, dtype=np.int64)
    positions = np.asarray(positions, dtype=np.int64)
    if len(positions) != n:
        raise KleeneError("one position per row is needed")
    if n and (positions[0] < next_row or (np.diff(positions) <= 0).any()):
        raise KleeneError("positions must increase, also across batches")
    return positions


class OrderedFeed:
    """Feeding a stream in order: rows go straight to ``_evaluate``, or first through the
    :class:`ReorderBuffer` when the query allows bounded disorder (``max_delay``).

    :class:`Session` (one query) and ``QuerySetSession`` (several queries over
    one buffer) differ only in ``_rows`` and in who receives late rows.
    """

    reorder: ReorderBuffer | None
    policy: BadRowPolicy
    seen: NameWatch
    """The event types and streams the stream held so far (kleene.seen)."""
    next_row: int
    """The position the next row gets when rows are numbered by arrival."""

    def feed(
        self, batch: pa.RecordBatch, *, with_events: bool = True, positions: np.ndarray | None = None
    ) -> list[Any]:
        """Evaluate one batch; return the complex events it completes.

        ``positions`` (int64, increasing, after every earlier one) numbers the
        rows; by default rows are numbered by arrival.
        """
        if self.reorder is not None and positions is None:
            return self._released(batch, with_events=with_events, final=False)
        return self._evaluate(batch, with_events=with_events, positions=positions)

    def flush(self, *, with_events: bool = True) -> list[Any]:
        """End of the stream: release every event still held back by ``max_delay``."""
        if self.reorder is None or not self.reorder.holding:
            return []
        return self._released(None, with_events=with_events, final=True)

    def feed_all(
        self, batches: Iterable[pa.RecordBatch], *, with_events: bool, columnar: bool = False
    ) -> Iterator[Any]:
        """A whole stream: every batch, then its end (``run``, ``matches``, ``match_batches``)."""
        for batch in batches:
            if columnar:
                yield from self.feed_columns(batch, events=with_events)
            else:
                yield from self.feed(batch, with_events=with_events)
        self.check_names()
        if columnar:
            yield from self.flush_columns(events=with_events)
        else:
            yield from self.flush(with_events=with_events)

    def feed_columns(
        self, batch: pa.RecordBatch, *, events: bool = False, positions: np.ndarray | None = None
    ) -> list[MatchBatch]:
        """:meth:`feed` on the bulk path: the complex events as :class:`MatchBatch` es.

        ``events`` keeps access to the events' data (for Arrow and JSON output).
        """
        if self.reorder is not None and positions is None:
            return self._released(batch, with_events=events, final=False, columnar=True)
        return self._evaluate(batch, with_events=events, positions=positions, columnar=True)

    def flush_columns(self, *, events: bool = False) -> list[MatchBatch]:
        """:meth:`flush` on the bulk path."""
        if self.reorder is None or not self.reorder.holding:
            return []
        return self._released(None, with_events=events, final=True, columnar=True)

    def _released(
        self, batch: pa.RecordBatch | None, *, with_events: bool, final: bool, columnar: bool = False
    ) -> list[Any]:
        """Buffer rows and evaluate, in (time, arrival) order, those behind the watermark.

        Released rows are numbered in release order, so positions follow time
        order; bad-row messages name their input row numbers.
        """
        assert self.reorder is not None
        out: list[Any] = []
        parts = self.reorder.push(batch, final=final, set_aside=self.set_aside)
        self.releasing = f" (evaluating {sum(p.num_rows for p, _ in parts):,} rows held back)"
        for part, input_rows in parts:  # positions=None numbers them on from next_row
            out.extend(self._evaluate(part, with_events=with_events, positions=None,
                                      report=input_rows, columnar=columnar))
        self.releasing = ""
        return out

    releasing = ""  # said by limit messages while released rows are evaluated (issue 16)

    def _evaluate(
        self,
        batch: pa.RecordBatch,
        *,
        with_events: bool,
        positions: np.ndarray | None,
        report: np.ndarray | None = None,
        columnar: bool = False,
    ) -> list[Any]:
        """Number the rows (they are in stream order now) and evaluate them.

        ``report`` gives the row numbers that bad-row messages name (the
        input row numbers when rows were reordered); by default, positions.
        """
        n = batch.num_rows
        positions = number_rows(self.next_row, n, positions)
        if n == 0:
            return []
        self.next_row = int(positions[-1]) + 1
        named = positions if report is None else np.asarray(report, dtype=np.int64)
        if INVALID_UTF8 in batch.schema.names:  # rows the reader found invalid UTF-8 in
            batch, marked = unmark(batch)
            for row, column in marked:
                self.set_aside(batch, row, int(named[row]), column, UTF8_REASON)
            if marked:
                keep = np.ones(n, bool)
                keep[[row for row, _ in marked]] = False
                batch, positions, named = batch.filter(pa.array(keep)), positions[keep], named[keep]
                if batch.num_rows == 0:
                    return []
        self.seen.add(batch)
        return self._rows(batch, positions, named, with_events=with_events, columnar=columnar)

    def _rows(
        self, batch: pa.RecordBatch, positions: np.ndarray, named: np.ndarray, *,
        with_events: bool, columnar: bool,
    ) -> list[Any]:
        """Evaluate numbered rows in stream order (``named``: the numbers messages use)."""
        raise NotImplementedError

    def unseen(self) -> list[str]:
        """The event types and streams of the query that the stream so far never held."""
        raise NotImplementedError

    def count_only(self) -> list[Count]:
        """Only count complex events from now on (batches give none): one Count per query."""
        raise NotImplementedError

    def check_names(self) -> None:
        """End of input, ``strict_types``: UnseenNameError for a name the stream never held."""
        raise NotImplementedError

    def set_aside(
        self, batch: pa.RecordBatch, row: int, pos: int, column: str | None, reason: str
    ) -> None:
        raise NotImplementedError


class Session(OrderedFeed):
    """The evaluation state of one query over one stream: engine, positions, time, stored events.

    :meth:`Query.run`, :meth:`Query.matches` and :meth:`Query.push` each use
    one.  Edges that define positions themselves (Spark orders rows by time
    and a row id) call :meth:`feed` with explicit ``positions``.
    """

    def __init__(self, plan: Plan, policy: BadRowPolicy | None = None) -> None:
        self.plan = plan
        self.engine: BatchEngine = plan.build_engine()
        self.limits = plan.options.limits  # the register engine's memory is looked at here
        options = plan.options
        self.policy = options.policy() if policy is None else policy
        self.next_row = 0
        self.last_time: float | None = None
        self.store = EventStore()
        self.checked = plan.schema is not None
        self.reorder = options.reorder_buffer()
        self.seen = NameWatch(options, [plan])
        self.reported: set[int] | None = None
        """Input rows already handed to the policy, when several queries share it."""
        self.name: str | None = None
        """The query's name when it runs with others (it tags each complex event)."""
        self.counted: Count | None = None  # set by count_only: the engine's sink for every batch

    def _rows(
        self, batch: pa.RecordBatch, positions: np.ndarray, named: np.ndarray, *,
        with_events: bool, columnar: bool,
    ) -> list[Any]:
        """The pipeline for rows in stream order: streams, conform, predicates, engine."""
        q = self.plan
        self.check_schema(batch)
        mine = self.stream_rows(batch, named)
        if mine is not None:
            batch, positions, named = batch.filter(pa.array(mine)), positions[mine], named[mine]
        original = batch
        batch, bad = conform(batch, q.requirements_for(batch.schema), type_column=q.type_column)
        return self.process(
            original, batch, bad, positions, named, None, with_events=with_events, columnar=columnar
        )

    def unseen(self) -> list[str]:
        return self.seen.missing(self.plan)

    def count_only(self) -> list[Count]:
        self.counted = Count()
        return [self.counted]

    def check_names(self) -> None:
        if self.plan.options.strict_types:
            self.seen.check([(self.plan, None)])

    def check_schema(self, batch: pa.RecordBatch) -> None:
        """Without a declared schema, check the query against the first batch's columns (a string
        column read as a number that holds text is a string: ``carrier > 60`` is a query error)."""
        if not self.checked:
            q = self.plan
            names, typed = batch.schema.names, q.type_column is not None
            numbers = [a for a, r in q.requirements_for(batch.schema).items() if r.kind == "number"]
            texts = {a: textual(batch.column(a)) for a in numbers if a in names and a != q.type_column}
            examples = {a: text for a, text in texts.items() if text is not None}
            schema = Schema.from_arrow(
                batch.schema, q.options.type_column, textual=examples, needs_type_column=typed
            )
            check(q.query, q.text, schema)
            self.checked = True

    def stream_rows(self, batch: pa.RecordBatch, named: np.ndarray) -> np.ndarray | None:
        """The rows of the streams the query reads (None: all rows).

        With a stream column, a row without a stream name is a bad row (an
        event belongs to exactly one stream); rows of streams outside the
        FROM clause are simply not in the query's stream.
        """
        q = self.plan
        column = q.options.stream_column
        if column is None:
            return None
        if column not in batch.schema.names:
            raise DataError("the stream column is missing", column=column)
        arr = batch.column(column)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = arr.cast(pa.string())
        valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        if q.from_streams is None:
            mine = valid
        else:
            members = pa.array(sorted(q.from_streams), pa.string())
            mine = valid & np.asarray(
                pc.is_in(arr, value_set=members).fill_null(False).to_numpy(zero_copy_only=False),
                dtype=bool,
            )
        for row in np.flatnonzero(~valid).tolist():
            self.set_aside(batch, row, int(named[row]), column, "null value")
        return None if mine.all() else mine

    def process(
        self,
        original: pa.RecordBatch,
        batch: pa.RecordBatch,
        bad: list[tuple[int, str, str]],
        positions: np.ndarray,
        named: np.ndarray,
        bits: np.ndarray | None,
        *,
        with_events: bool,
        columnar: bool = False,
    ) -> list[Any]:
        """Set aside the bad rows, then run the engine on the others.

        ``batch`` is the conformed ``original`` (the query's rows only);
        ``bits`` its predicate bit vectors when they were evaluated already
        (several queries sharing one evaluation), else None.  ``columnar``:
        the engine enumerates into :class:`Columns` and the result is one
        :class:`MatchBatch` (none when the batch completes no complex event).
        """
        q = self.plan
        n = batch.num_rows
        keep = np.ones(n, dtype=bool)
        for row, column, reason in bad:
            if keep[row]:
                self.set_aside(original, row, int(named[row]), column, reason)
                keep[row] = False
        times = self._times(batch, named, keep)
        if not keep.all():
            batch = batch.filter(pa.array(keep))
            positions = positions[keep]
            if times is not None:
                times = times[keep]
            if bits is not None:
                bits = bits[keep]
        if batch.num_rows == 0:
            return []
        self.limits.check_memory(f"at input position {int(positions[0])}{self.releasing}")
        keys = self._keys(batch)
        if bits is None:
            bits = q.predicates.evaluate(batch)
        found: list[Found] | Columns | Count = Columns() if columnar else []
        found = found if self.counted is None else self.counted

        if with_events:
            max_time = (times if times is not None else positions)[-1].item()
            self.store.add(batch, positions, max_time)
        with no_cyclic_gc():
            engine = self.engine
            # A Columns takes Found tuples too (append, extend): the engines
            # need not know which path they fill.
            engine.run_batch(batch, bits, positions, times, keys, found)
            if isinstance(found, Count):
                return []
            if isinstance(found, Columns):
                return self._match_batch(found, with_events)
            if not with_events:
                new = tuple.__new__
                if self.name is not None:
                    tag = (self.name,)
                    return [new(QueryMatch, tag + f) for f in found]
                return [new(Match, f) for f in found]
            events = [self._materialize(*f) for f in found]
        self.store.release_before(self.engine.tau)
        return events

    def _match_batch(self, found: Columns, with_events: bool) -> list[MatchBatch]:
        """The bulk path's result: the batch's complex events as columns (none: an empty list).

        With events, the batch keeps the stored input batches its events come
        from (before the store releases anything), to gather their data later.
        """
        q = self.plan
        result = []
        if len(found):
            batch = MatchBatch.from_columns(found, name=self.name, partition_names=q.partition_by)
            if with_events:
                lo = int(min(batch.start.min(), batch.positions.min(initial=batch.start[0])))
                stored = self.store.snapshot(lo, int(batch.end.max()))
                columns = None if q.attrs is None else (q.options.type_column, *q.attrs)
                batch.events = EventRows(stored, columns)
            result.append(batch)
        if with_events:
            self.store.release_before(self.engine.tau)
        return result

    def set_aside(
        self, batch: pa.RecordBatch, row: int, pos: int, column: str | None, reason: str
    ) -> None:
        """Hand a bad row to the policy (which raises in "error" mode).

        Queries evaluated together share one policy: a row bad for several
        of them is handed over once.
        """
        if self.policy.mode == "error":
            unsorted = reason == BACKWARDS and column == self.plan.options.time_column
            hint = UNSORTED_HINT if unsorted else SKIP_HINTS.get(reason, "")
            raise DataError(f"bad input: {reason}{hint}", row=pos, column=column)
        if self.reported is not None:
            if pos in self.reported:
                return
            self.reported.add(pos)
        values = {name: batch.column(j)[row].as_py() for j, name in enumerate(batch.schema.names)}
        self.policy.handle(pos, column, reason, values)

    def _times(
        self, batch: pa.RecordBatch, positions: np.ndarray, keep: np.ndarray
    ) -> np.ndarray | None:
        """Event times for time and attribute windows; checks they never go back."""
        q = self.plan
        window = q.query.within
        if isinstance(window, ast.DurationWindow):
            column = q.options.time_column
            assert column is not None
            if column not in batch.schema.names:
                raise DataError("the time column is missing", column=column)
            times, bad_mask = to_nanos(batch.column(column), q.options.time_unit)
            for row in np.flatnonzero(bad_mask & keep).tolist():
                self.set_aside(batch, row, int(positions[row]), column, "unreadable timestamp")
                keep[row] = False
        elif isinstance(window, ast.AttrWindow):
            column = window.attr
            times = batch.column(column).to_numpy(zero_copy_only=False)
        else:
            return None
        last = self.last_time
        if (
            times.dtype.kind in "iu"
            and len(times)
            and keep.all()
            and (last is None or times[0] >= last)
            and bool((times[1:] >= times[:-1]).all())
        ):
            # The usual case, rows already in time order: one vectorized check.
            self.last_time = times[-1]
            return times
        rows = np.flatnonzero(keep)
        if len(rows) and (
            times.dtype.kind in "iu"
            or (times.dtype.kind == "f" and not np.isnan(times[rows]).any())
        ):
            # A row goes back when its time is below the largest earlier time
            # of a kept row; a set-aside row never raised that maximum, so the
            # running maximum over all rows still to check gives the same answer.
            t = times[rows]
            seen = np.maximum.accumulate(t)
            before = np.empty_like(seen)
            before[1:] = seen[:-1]
            before[0] = t[0] if last is None else last
            if last is not None:
                before = np.maximum(before, last)
            for row in rows[t < before].tolist():
                self.set_aside(batch, row, int(positions[row]), column, BACKWARDS)
                keep[row] = False
            self.last_time = seen[-1] if last is None else max(last, seen[-1])
            return times
        for row in range(len(times)):
            # Object or NaN times: row by row, as the comparisons of Python values go.
            if not keep[row]:
                continue
            t = times[row]
            if last is not None and t < last:
                self.set_aside(batch, row, int(positions[row]), column, BACKWARDS)
                keep[row] = False
            else:
                last = t
        self.last_time = last
        return times

    def _keys(self, batch: pa.RecordBatch) -> list[list[Hashable]] | None:
        """The PARTITION BY columns as Python lists (keys are built per visited event)."""
        attrs = self.plan.partition_by
        if not attrs:
            return None
        names = batch.schema.names
        for a in attrs:
            if a not in names:
                raise DataError("a PARTITION BY attribute is missing", column=a)
        return [batch.column(a).to_pylist() for a in attrs]

    def _materialize(
        self, start: int, end: int, positions: tuple[int, ...], key: Hashable
    ) -> ComplexEvent:
        attrs = self.plan.attrs
        type_column = self.plan.options.type_column
        events = []
        for p in positions:
            row = self.store.event(p)
            if attrs is not None:
                row = {k: row.get(k) for k in (type_column, *attrs)}
            events.append(row)
        return ComplexEvent(
            start, end, positions, tuple(events), key, self.name,  # type: ignore[arg-type]
            self.plan.partition_by,
        )


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector during a batch.

    The tECS is a DAG of millions of small tuples and lists without reference
    cycles: reference counting frees every node, and the cyclic collector's
    repeated traversals of the live nodes cost ~40% of the evaluation time on
    output-heavy queries.  Collection resumes between batches, so a caller's
    own cycles are still collected.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
