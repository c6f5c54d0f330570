"""The Python API: ``kleene.compile(query) -> Query``.

One :class:`Query` object serves both ways of feeding events, with one
semantics: :meth:`Query.run` evaluates a whole source (a pyarrow Table, an
iterator of RecordBatches, a pandas DataFrame or an iterable of dicts) from a
fresh state, while :meth:`Query.push` and :meth:`Query.push_batch` feed
events incrementally into the query's own state.  Single events are turned
into one-row batches, so both paths share the vectorized predicate stage and
give the same complex events.

The pipeline per batch: conform the columns the query reads (bad rows go to
the bad-row policy), evaluate every atomic predicate vectorized into a bit
vector per event, then run the engine (:mod:`kleene.runtime.engine`) only on
the events that can change its state.

The engine is chosen per query (:func:`choose_engine`): CORE's tECS engine
when every FILTER is unary, the register engine (:mod:`kleene.registers`)
when some FILTER relates two events (``b[price < a.price]``,
``b[price > prev(b).price]``); its unary conditions still go through the
vectorized predicate table, as a prefilter.  :meth:`Query.explain` says which.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kleene.automata.compile import compile_labelled, compile_pattern
from kleene.automata.determinize import LazyDFA
from kleene.batches import EventRows, MatchBatch
from kleene.io.badrows import BadRowPolicy
from kleene.io.readers import read_batches
from kleene.io.timecol import to_nanos
from kleene.language import ast
from kleene.language.checks import check
from kleene.language.conditions import atoms as filter_atoms
from kleene.language.conditions import nary_filters, var_attrs, without_self_references
from kleene.language.errors import DataError, KleeneError, QueryError, UnsupportedError
from kleene.language.parser import parse, parse_duration
from kleene.language.printer import filter_to_ceql
from kleene.language.schema import Schema
from kleene.language.variables import variable_event_types
from kleene.predicates.atoms import Atoms
from kleene.predicates.conform import Requirement, conform
from kleene.predicates.kinds import infer_kinds
from kleene.predicates.table import PredicateTable
from kleene.registers.automaton import SRT, compile_srt
from kleene.registers.runtime import RegisterEngine
from kleene.registers.window_runtime import WindowedEngine, choose_register_runtime
from kleene.runtime.engine import Engine, Settings
from kleene.runtime.enumeration import Columns, Found
from kleene.runtime.projection import Projector
from kleene.runtime.store import EventStore

DICT_BATCH = 4096
"""Events per batch when the source is an iterable of dicts."""

_ROW = "__kleene_row"
_TIME = "__kleene_time"
"""Columns of the reorder buffer: input row number and time (ns)."""


class Match(NamedTuple):
    """A complex event without its events' data: what the engine produces."""

    start: int
    end: int
    positions: tuple[int, ...]
    partition: Hashable


class QueryMatch(NamedTuple):
    """A :class:`Match` and the name of its query, when several queries run together."""

    query: str
    start: int
    end: int
    positions: tuple[int, ...]
    partition: Hashable


@dataclass(frozen=True, slots=True)
class ComplexEvent:
    """A complex event: its interval, its positions and its events' data.

    ``start`` and ``end`` are the 0-based input positions of its interval,
    ``positions`` the sorted input positions of its events, ``events`` their
    attributes (with the event type under the type column's name),
    ``partition`` the PARTITION BY key (None without PARTITION BY), and
    ``query`` the name of the query that found it when several queries run
    together (:func:`kleene.compile_many`; None for a single query).
    """

    start: int
    end: int
    positions: tuple[int, ...]
    events: tuple[dict[str, Any], ...]
    partition: tuple[Any, ...] | None = None
    query: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {} if self.query is None else {"query": self.query}
        out |= {
            "start": self.start,
            "end": self.end,
            "positions": list(self.positions),
            "events": [dict(e) for e in self.events],
        }
        if self.partition is not None:
            out["partition"] = list(self.partition)
        return out


def compile(  # noqa: A001 - the natural name, as re.compile
    query: str,
    schema: Schema | None = None,
    *,
    type_column: str = "type",
    time_column: str | None = None,
    time_unit: str = "s",
    on_bad_row: str | BadRowPolicy = "error",
    max_delay: str | None = None,
    stream_column: str | None = None,
) -> Query:
    """Parse, check and compile a CEQL query.

    ``schema`` declares event types and attributes; ``CREATE STREAM``
    declarations in the query text do the same.  Without either, attributes
    are checked against the input's columns when the first batch arrives.
    ``time_column`` (with ``time_unit`` for numeric columns) gives event times
    for ``WITHIN <duration>`` windows.  ``max_delay`` (e.g. ``"2 seconds"``)
    accepts input that is out of time order by at most that much: events
    are buffered and released in time order (see :class:`Session`).
    ``stream_column`` names the column that says which stream each event
    comes from: the query then reads only the events of the streams of its
    FROM clause, and ``S>E`` matches E events of stream S only (see
    docs/semantics.md, "Several streams").  A text with several queries is
    compiled with :func:`kleene.compile_many`.
    """
    program = parse(query)
    if len(program.queries) > 1:
        second = program.queries[1].span
        raise QueryError(
            f"the text holds {len(program.queries)} queries; compile them together with "
            "kleene.compile_many",
            second.line, second.column, query,
        )
    return compile_parsed(
        program,
        0,
        query,
        schema,
        type_column=type_column,
        time_column=time_column,
        time_unit=time_unit,
        on_bad_row=on_bad_row,
        max_delay=max_delay,
        stream_column=stream_column,
    )


def compile_parsed(
    program: ast.Program,
    index: int,
    text: str,
    schema: Schema | None,
    **options: Any,
) -> Query:
    """Check and compile the ``index``-th query of a parsed program (its declarations apply)."""
    if program.streams:
        declared = Schema.from_decls(program.streams, text)
        schema = declared if schema is None else schema
    query = program.queries[index] if program.queries else program.query
    check(query, text, schema)
    return Query(query, text, schema, **options)


class Query:
    """A compiled CEQL query, ready to run over events."""

    skip_inert = True
    """Skip events that cannot change any run (see kleene.runtime.engine); tests turn it off."""

    lookahead = True
    """Skip events no complex event can contain (see kleene.runtime.lookahead); tests turn it off."""

    def __init__(
        self,
        query: ast.Query,
        source: str,
        schema: Schema | None,
        *,
        type_column: str,
        time_column: str | None,
        time_unit: str,
        on_bad_row: str | BadRowPolicy,
        max_delay: str | None = None,
        stream_column: str | None = None,
    ) -> None:
        self.ast = query
        self.text = source
        self.schema = schema
        self.type_column = type_column
        self.stream_column = stream_column
        """The column naming each event's stream (None: the input is one stream)."""
        self.from_streams: frozenset[str] | None = (
            frozenset(query.streams) if stream_column is not None and query.streams else None
        )
        """The streams the query reads (None: every event of the input)."""
        self.time_column = time_column
        self.time_unit = time_unit
        self._policy_spec = on_bad_row
        self.max_delay: int | None = None
        """Bounded disorder in nanoseconds (None: input must be in time order)."""
        if max_delay is not None:
            if time_column is None:
                raise KleeneError("max_delay reorders events by time: pass time_column too")
            self.max_delay = parse_duration(max_delay)

        items = query.select.items
        projection = None if items is None else frozenset(i.var for i in items)
        self.engine, self.engine_reason = choose_engine(query)
        """``"tecs"`` (CORE's algorithm) or ``"registers"`` (SRT runs), and why."""
        self.atoms = Atoms()
        self.cea = None
        self.projector: Projector | None = None
        self.srt: SRT | None = None
        where = without_self_references(query.where)
        with_streams = stream_column is not None
        if self.engine == "registers":
            # NEXT, LAST and MAX compare whole matches: the SRT marks every event
            # and the runtime projects the chosen ones (kleene.registers.runtime).
            self.srt = compile_srt(
                where, projection, with_streams=with_streams,
                strategy_first=projection is not None
                and query.select.strategy in ("NEXT", "LAST", "MAX"),
            )
            self.atoms.event_types = list(self.srt.event_types)
            self.atoms.preds = list(self.srt.preds)
            self.atoms.streams = list(self.srt.streams)
        else:
            self.atoms.collect(where, with_streams=with_streams)
            try:
                if projection is not None and query.select.strategy in ("NEXT", "LAST", "MAX"):
                    # The strategy compares whole matches: it runs on SELECT *'s
                    # automaton and the chosen matches are projected afterwards.
                    self.cea, labels = compile_labelled(
                        where, self.atoms, None, project=projection
                    )
                    self.projector = Projector(self.cea, labels)
                else:
                    self.cea = compile_pattern(
                        where, self.atoms, projection, strict=query.select.strategy == "STRICT"
                    )
            except ValueError as err:  # a construct too large to compile (see compile.py)
                span = query.where.span
                raise UnsupportedError(str(err), span.line, span.column, source) from None
        self.predicates = PredicateTable(
            self.atoms.event_types,
            self.atoms.preds,
            type_column=type_column,
            streams=self.atoms.streams,
            stream_column=stream_column,
        )
        self.requirements = self._requirements()
        self.partition_by = tuple(a for group in query.partition_by for a in group)
        self.columns: tuple[str, ...] = self._read_columns()
        """The input columns the query reads (type, filters, time, window, partitions,
        stream): all a run needs when the events' data is not output."""
        window = query.within
        if isinstance(window, ast.DurationWindow) and time_column is None:
            raise UnsupportedError(
                "a time window needs event times: pass time_column (--time-column)",
                window.span.line,
                window.span.column,
                source,
            )
        amount: int | float | None
        if window is None:
            amount = None
        elif isinstance(window, ast.EventsWindow):
            amount = window.count
        elif isinstance(window, ast.DurationWindow):
            amount = window.nanos
        else:
            amount = window.amount
        self.settings = Settings(
            window=amount,
            partitioned=bool(self.partition_by),
            consume=query.consume,
            limit=query.limit,
            strategy=query.select.strategy,
        )
        self.register_runtime: str | None = None
        """For the register engine: ``"pairs"``, ``"windowed"`` or ``"runs"`` (see explain())."""
        if self.srt is not None:
            self.register_runtime = choose_register_runtime(
                self.srt, self.settings, window, type_column
            )
        self._attrs = self._projected_attributes()
        self._session = Session(self)

    # ------------------------------------------------------------ public API
    def explain(self) -> str:
        """Which engine evaluates this query, why, and what it compiled to."""
        lines = [f"engine: {self.engine}", f"why: {self.engine_reason}"]
        if self.srt is not None:
            srt = self.srt
            transitions = sum(len(ts) for ts in srt.labelled)
            lines.append(
                f"automaton: symbolic register transducer, {srt.num_states} states, "
                f"{transitions} transitions, registers: "
                + (", ".join(srt.register_names) or "none")
            )
            lines.append(
                f"prefilter: {len(srt.event_types)} event types and {len(srt.preds)} unary "
                "predicates evaluated vectorized; "
                + (
                    "every event visited (contiguity)"
                    if srt.contiguous or self.ast.select.strategy == "STRICT"
                    else "only events some transition accepts are visited"
                )
            )
            lines.append("runtime: " + RUNTIME_EXPLAINED[self.register_runtime or "runs"])
        elif self.cea is not None:
            lines.append(
                f"automaton: complex event automaton, {self.cea.num_states} states, "
                f"{len(self.cea.transitions)} transitions, determinized lazily"
            )
        return "\n".join(lines)

    def session(self) -> Session:
        """A fresh evaluation state, fed batch by batch with :meth:`Session.feed`."""
        return Session(self)

    @property
    def bad_rows(self) -> BadRowPolicy:
        """The bad-row policy of the latest run (or of push/push_batch)."""
        return self._last.policy

    @property
    def _last(self) -> Session:
        return getattr(self, "_last_session", self._session)

    def run(self, source: Any) -> Iterator[ComplexEvent]:
        """Evaluate the query over a whole source, from a fresh state.

        ``source``: a file path (CSV, JSON Lines or Parquet), a pyarrow Table
        or RecordBatch, an iterable of those or of event dicts, or a pandas
        DataFrame.  :meth:`matches` and :meth:`match_batches` without events
        read only :attr:`columns` of a file.
        """
        yield from self._whole(source, events=True)

    def matches(self, source: Any) -> Iterator[Match]:
        """Like :meth:`run`, but without the events' data (cheaper)."""
        yield from self._whole(source, events=False)

    def match_batches(self, source: Any, *, events: bool = False) -> Iterator[MatchBatch]:
        """The bulk path: like :meth:`matches` (or :meth:`run` with ``events``), in columns.

        One :class:`~kleene.batches.MatchBatch` per input batch that completes
        complex events: the same complex events as :meth:`matches`, in the same
        order, without a Python object per complex event.  With ``events``,
        each batch can gather its events' data (``to_arrow()``, JSON Lines).
        """
        yield from self._whole(source, events=events, columnar=True)

    def _whole(self, source: Any, *, events: bool, columnar: bool = False) -> Iterator[Any]:
        """A whole source through a fresh session (see :meth:`OrderedFeed.feed_all`)."""
        session = Session(self)
        self._last_session = session
        batches = _batches(source, pushdown(self.columns, self._policy_spec, events=events))
        return session.feed_all(batches, with_events=events, columnar=columnar)

    def run_arrow(self, source: Any, *, events: bool = True) -> Iterator[pa.RecordBatch]:
        """The complex events as Arrow record batches (see :meth:`MatchBatch.to_arrow`)."""
        for batch in self.match_batches(source, events=events):
            yield batch.to_arrow()

    def push(self, event: Mapping[str, Any]) -> list[ComplexEvent]:
        """Feed one event; return the complex events it completes."""
        return self.push_batch(pa.RecordBatch.from_pylist([dict(event)]))

    def flush(self) -> list[ComplexEvent]:
        """End of the pushed stream: release the events still held back by ``max_delay``."""
        self._last_session = self._session
        return self._session.flush(with_events=True)

    def push_batch(self, batch: pa.RecordBatch | pa.Table) -> list[ComplexEvent]:
        """Feed a batch of events; return the complex events they complete."""
        self._last_session = self._session
        out: list[ComplexEvent] = []
        for b in _batches(batch):
            out.extend(self._session.feed(b, with_events=True))
        return out

    # -------------------------------------------------------------- helpers
    def _read_columns(self) -> tuple[str, ...]:
        names = [self.type_column]
        for f in _filters(self.ast.where):
            for atom in filter_atoms(f.condition):
                names += sorted(_attributes(atom.pred) | {r.name for r in var_attrs(atom.pred)})
        window = self.ast.within
        if isinstance(window, ast.AttrWindow):
            names.append(window.attr)
        names += [c for c in (self.time_column, self.stream_column) if c is not None]
        names += self.partition_by
        return tuple(dict.fromkeys(names))

    def _requirements(self) -> dict[str, Requirement]:
        """Which attributes must be valid on which event types.

        ``FILTER x[P]`` reads the attributes of ``P`` on the events ``x`` can
        be bound to: rows of those types must carry valid values.
        """
        every = [a.pred for f in _filters(self.ast.where) for a in filter_atoms(f.condition)]
        names = {r.name for p in every for r in var_attrs(p)} | {
            name for p in every for name in _attributes(p)
        }
        kinds = infer_kinds(every, sorted(names))
        req: dict[str, set[str]] = {}

        def conditions(cond: ast.FilterExpr) -> Iterator[ast.FilterAtom]:
            if isinstance(cond, ast.FilterAtom):
                yield cond
            else:
                yield from conditions(cond.left)
                yield from conditions(cond.right)

        def walk(p: ast.Pattern) -> None:
            if isinstance(p, ast.Filter):
                scope = variable_event_types(p.pattern)
                for atom in conditions(p.condition):
                    for attr in _attributes(atom.pred):
                        req.setdefault(attr, set()).update(scope.get(atom.var, ()))
                    for ref in var_attrs(atom.pred):  # a.attr reads a's events
                        req.setdefault(ref.name, set()).update(scope.get(ref.var, ()))
            for child in ("pattern", "left", "right"):
                node = getattr(p, child, None)
                if node is not None:
                    walk(node)

        walk(self.ast.where)
        # An attribute of unknown kind is a number for unary predicates (as
        # always); one compared only with other events' values of unknown
        # kind (`kind = a.kind`) compares by its runtime type, unconverted.
        unary = {name for p in every for name in _attributes(p) if not any(var_attrs(p))}
        out = {
            attr: Requirement(kinds.get(attr, "number"), frozenset(types))
            for attr, types in req.items()
            if types and (attr in kinds or attr in unary)
        }
        self._untyped = {
            attr: frozenset(types) for attr, types in req.items() if types and attr not in out
        }
        window = self.ast.within
        if isinstance(window, ast.AttrWindow):
            out[window.attr] = Requirement("number", None)
        return out

    def requirements_for(self, schema: pa.Schema) -> dict[str, Requirement]:
        """:attr:`requirements`, plus the attributes of unknown kind, kinded by the input's columns.

        ``b[price < a.price]`` gives ``price`` no kind (it is only compared with
        itself); its values must still be valid, of the kind its column has.
        """
        if not self._untyped:
            return self.requirements
        out = dict(self.requirements)
        for attr, types in self._untyped.items():
            if attr not in schema.names:
                continue
            t = schema.field(attr).type
            if pa.types.is_dictionary(t):
                t = t.value_type
            if pa.types.is_boolean(t):
                kind = "boolean"
            elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
                kind = "number"
            elif pa.types.is_string(t) or pa.types.is_large_string(t):
                kind = "string"
            else:
                continue
            out[attr] = Requirement(kind, types)
        return out

    def _projected_attributes(self) -> tuple[str, ...] | None:
        """Attributes to show per event (``SELECT a[x, y]``); None for all."""
        items = self.ast.select.items
        if not items or any(i.attrs is None for i in items):
            return None
        return tuple(dict.fromkeys(a for i in items for a in i.attrs or ()))


RUNTIME_EXPLAINED = {
    "pairs": "vectorized pair join over a per-window index of first events",
    "windowed": (
        "the SRT unrolled under the window (a tree of walks of at most n+1 events, "
        "each register written once) and determinized lazily: one subset of tree nodes "
        "per partition, registers read from the last n+1 events, subset transitions cached "
        "per minterm; hands over to runs if the cache misses on more than 10% of events"
    ),
    "runs": "runs (state, registers, start, positions), merged when equal",
}
"""What ``explain()`` says about each runtime of the register engine."""


def choose_engine(query: ast.Query) -> tuple[str, str]:
    """The engine for a query: CORE's tECS unless some FILTER relates two events."""
    found = next(nary_filters(query.where), None)
    if found is None:
        return "tecs", (
            "every FILTER reads only the event it filters (unary predicates): CORE's "
            "algorithm, constant time per event and output-linear enumeration"
        )
    _, atom = found
    return "registers", (
        f"{filter_to_ceql(atom)} relates events to each other, which unary automata cannot "
        "express: symbolic register transducer runs (the SRT papers), with the unary "
        "conditions as a vectorized prefilter"
    )


def _filters(p: ast.Pattern) -> Iterator[ast.Filter]:
    if isinstance(p, ast.Filter):
        yield p
    for child in ("pattern", "left", "right"):
        node = getattr(p, child, None)
        if node is not None:
            yield from _filters(node)


def _attributes(pred: ast.Pred | ast.Expr) -> set[str]:
    if isinstance(pred, ast.Attr):
        return {pred.name}
    if isinstance(pred, ast.Const):
        return set()
    out: set[str] = set()
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(pred, name, None)
        if child is not None:
            out |= _attributes(child)
    return out


SetAside = Callable[[pa.RecordBatch, int, int, "str | None", str], None]
"""``(batch, row_in_batch, input_row, column, reason)``: hands a bad row to a policy."""


class ReorderBuffer:
    """Bounded disorder (``max_delay``): rows held back until the watermark passes them.

    The watermark is the latest time seen minus ``max_delay``.  A row more
    than ``max_delay`` behind the latest time seen before it is *late*: it
    goes to the bad-row policy (with its input row number), never silently
    dropped or misordered.  Every other row is at or after every watermark
    so far, so the released stream is in time order.  One buffer serves one
    query (:class:`Session`) or several queries evaluated together.
    """

    def __init__(self, time_column: str, time_unit: str, max_delay: int) -> None:
        self.time_column = time_column
        self.time_unit = time_unit
        self.max_delay = max_delay
        self.next_input = 0
        self.pending: pa.Table | None = None
        self.latest_seen: int | None = None

    def push(
        self, batch: pa.RecordBatch | None, *, final: bool, set_aside: SetAside
    ) -> list[tuple[pa.RecordBatch, np.ndarray]]:
        """Buffer ``batch``; return the released rows in (time, arrival) order, in parts.

        Each part comes with the input row numbers of its rows.
        """
        column = self.time_column
        n = 0 if batch is None else batch.num_rows
        rows = np.arange(self.next_input, self.next_input + n, dtype=np.int64)
        self.next_input += n
        if batch is not None and n:
            if column not in batch.schema.names:
                raise DataError("the time column is missing", column=column)
            times, bad_mask = to_nanos(batch.column(column), self.time_unit)
            times = np.asarray(times, dtype=np.int64)
            keep = ~np.asarray(bad_mask, dtype=bool)
            for i in np.flatnonzero(~keep).tolist():
                set_aside(batch, i, int(rows[i]), column, "unreadable timestamp")
            # Late: more than max_delay behind the latest time seen *before* the
            # row arrived.  Decided row by row in arrival order, so the outcome
            # does not depend on how the input is cut into batches.
            lowest = np.iinfo(np.int64).min
            seen = np.where(keep, times, lowest)
            before = np.maximum.accumulate(np.concatenate(([self.latest_seen or lowest], seen)))[:-1]
            late = keep & (before > lowest) & (times < before - self.max_delay)
            for i in np.flatnonzero(late).tolist():
                set_aside(
                    batch, i, int(rows[i]), column,
                    f"late event: more than {self.max_delay} ns behind the latest time",
                )
            keep &= ~late
            table = pa.Table.from_batches([batch]).filter(pa.array(keep))
            table = table.append_column(_ROW, pa.array(rows[keep])).append_column(
                _TIME, pa.array(times[keep])
            )
            if len(table):
                latest = int(times[keep].max())
                self.latest_seen = latest if self.latest_seen is None else max(self.latest_seen, latest)
            self.pending = table if self.pending is None else pa.concat_tables(
                [self.pending, table], promote_options="permissive"
            )
        if self.pending is None or self.pending.num_rows == 0:
            return []
        ordered = self.pending.sort_by([(_TIME, "ascending"), (_ROW, "ascending")])
        ordered_times = ordered.column(_TIME).to_numpy()
        if final:
            cut = len(ordered_times)
        else:
            assert self.latest_seen is not None
            cut = int(np.searchsorted(ordered_times, self.latest_seen - self.max_delay, side="right"))
        released, self.pending = ordered.slice(0, cut), ordered.slice(cut)
        if cut == 0:
            return []
        input_rows = released.column(_ROW).to_numpy()
        released = released.drop_columns([_ROW, _TIME]).combine_chunks()
        parts = []
        for part in released.to_batches():
            m = part.num_rows
            parts.append((part, input_rows[:m]))
            input_rows = input_rows[m:]
        return parts

    @property
    def holding(self) -> bool:
        return self.pending is not None and self.pending.num_rows > 0


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
    one buffer) differ only in ``_evaluate`` and in who receives late rows.
    """

    reorder: ReorderBuffer | None

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
        for part, input_rows in self.reorder.push(batch, final=final, set_aside=self._set_aside):
            # positions=None numbers the released rows on from next_row.
            out.extend(
                self._evaluate(
                    part, with_events=with_events, positions=None, report=input_rows,
                    columnar=columnar,
                )
            )
        return out

    def _evaluate(
        self,
        batch: pa.RecordBatch,
        *,
        with_events: bool,
        positions: np.ndarray | None,
        report: np.ndarray | None = None,
        columnar: bool = False,
    ) -> list[Any]:
        raise NotImplementedError

    def _set_aside(
        self, batch: pa.RecordBatch, row: int, pos: int, column: str | None, reason: str
    ) -> None:
        raise NotImplementedError


class Session(OrderedFeed):
    """The evaluation state of one query over one stream: engine, positions, time, stored events.

    :meth:`Query.run`, :meth:`Query.matches` and :meth:`Query.push` each use
    one.  Edges that define positions themselves (Spark orders rows by time
    and a row id) call :meth:`feed` with explicit ``positions``.
    """

    def __init__(self, query: Query, policy: BadRowPolicy | None = None) -> None:
        self.query = query
        self.engine: Engine | RegisterEngine
        if query.srt is not None:
            settings = query.settings
            runtime: type[RegisterEngine] = RegisterEngine
            if query.register_runtime == "windowed":
                if not isinstance(query.ast.within, ast.EventsWindow):
                    raise ValueError("the windowed runtime needs a WITHIN n EVENTS window")
                runtime = WindowedEngine
            self.engine = runtime(
                query.srt,
                window=settings.window,
                partitioned=settings.partitioned,
                consume=settings.consume,
                limit=settings.limit,
                strategy=settings.strategy,
                type_column=query.type_column,
            )
        else:
            assert query.cea is not None
            projector = None
            if query.projector is not None:  # a fresh copy: it keeps this session's events
                projector = Projector(query.cea, query.projector.labels)
            self.engine = Engine(
                LazyDFA(query.cea),
                query.settings,
                skip_inert=query.skip_inert,
                lookahead=query.lookahead,
                projector=projector,
            )
        spec = query._policy_spec
        if policy is None:
            policy = spec if isinstance(spec, BadRowPolicy) else BadRowPolicy(spec)
        self.policy = policy
        self.next_row = 0
        self.last_time: float | None = None
        self.store = EventStore()
        self.checked = query.schema is not None
        self.reorder = (
            None
            if query.max_delay is None
            else ReorderBuffer(query.time_column or "", query.time_unit, query.max_delay)
        )
        self.reported: set[int] | None = None
        """Input rows already handed to the policy, when several queries share it."""
        self.name: str | None = None
        """The query's name when it runs with others (it tags each complex event)."""

    def _evaluate(
        self,
        batch: pa.RecordBatch,
        *,
        with_events: bool,
        positions: np.ndarray | None,
        report: np.ndarray | None = None,
        columnar: bool = False,
    ) -> list[Any]:
        """The pipeline for rows in stream order: streams, conform, predicates, engine.

        ``report`` gives the row numbers that bad-row messages name (the
        input row numbers when rows were reordered); by default, positions.
        """
        q = self.query
        n = batch.num_rows
        positions = number_rows(self.next_row, n, positions)
        if n == 0:
            return []
        self.next_row = int(positions[-1]) + 1
        named = positions if report is None else np.asarray(report, dtype=np.int64)
        self.check_schema(batch)
        mine = self.stream_rows(batch, named)
        if mine is not None:
            batch, positions, named = batch.filter(pa.array(mine)), positions[mine], named[mine]
        original = batch
        batch, bad = conform(batch, q.requirements_for(batch.schema), type_column=q.type_column)
        return self.process(
            original, batch, bad, positions, named, None, with_events=with_events, columnar=columnar
        )

    def check_schema(self, batch: pa.RecordBatch) -> None:
        """Without a declared schema, check the query against the first batch's columns."""
        if not self.checked:
            q = self.query
            check(q.ast, q.text, Schema.from_arrow(batch.schema, q.type_column))
            self.checked = True

    def stream_rows(self, batch: pa.RecordBatch, named: np.ndarray) -> np.ndarray | None:
        """The rows of the streams the query reads (None: all rows).

        With a stream column, a row without a stream name is a bad row (an
        event belongs to exactly one stream); rows of streams outside the
        FROM clause are simply not in the query's stream.
        """
        q = self.query
        column = q.stream_column
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
            self._set_aside(batch, row, int(named[row]), column, "null value")
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
        q = self.query
        n = batch.num_rows
        keep = np.ones(n, dtype=bool)
        for row, column, reason in bad:
            if keep[row]:
                self._set_aside(original, row, int(named[row]), column, reason)
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
        keys = self._keys(batch)
        if bits is None:
            bits = q.predicates.evaluate(batch)
        found: list[Found] | Columns = Columns() if columnar else []

        if with_events:
            max_time = (times if times is not None else positions)[-1].item()
            self.store.add(batch, positions, max_time)
        with _no_cyclic_gc():
            engine = self.engine
            # A Columns takes Found tuples too (append, extend): the engines
            # need not know which path they fill.
            if isinstance(engine, RegisterEngine):
                engine.run_batch(batch, bits, positions, times, keys, found)  # type: ignore[arg-type]
            else:
                engine.run_batch(bits, positions, times, keys, found)  # type: ignore[arg-type]
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
        q = self.query
        result = []
        if len(found):
            batch = MatchBatch.from_columns(found, name=self.name, partition_names=q.partition_by)
            if with_events:
                lo = int(min(batch.start.min(), batch.positions.min(initial=batch.start[0])))
                stored = self.store.snapshot(lo, int(batch.end.max()))
                columns = None if q._attrs is None else (q.type_column, *q._attrs)
                batch.events = EventRows(stored, columns)
            result.append(batch)
        if with_events:
            self.store.release_before(self.engine.tau)
        return result

    def _set_aside(
        self, batch: pa.RecordBatch, row: int, pos: int, column: str | None, reason: str
    ) -> None:
        """Hand a bad row to the policy (which raises in "error" mode).

        Queries evaluated together share one policy: a row bad for several
        of them is handed over once.
        """
        if self.policy.mode == "error":
            raise DataError(f"bad input: {reason}", row=pos, column=column)
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
        q = self.query
        window = q.ast.within
        if isinstance(window, ast.DurationWindow):
            column = q.time_column
            assert column is not None
            if column not in batch.schema.names:
                raise DataError("the time column is missing", column=column)
            times, bad_mask = to_nanos(batch.column(column), q.time_unit)
            for row in np.flatnonzero(bad_mask & keep).tolist():
                self._set_aside(batch, row, int(positions[row]), column, "unreadable timestamp")
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
                self._set_aside(batch, row, int(positions[row]), column, "timestamp goes backwards")
                keep[row] = False
            self.last_time = seen[-1] if last is None else max(last, seen[-1])
            return times
        for row in range(len(times)):
            # Object or NaN times: row by row, as the comparisons of Python values go.
            if not keep[row]:
                continue
            t = times[row]
            if last is not None and t < last:
                self._set_aside(batch, row, int(positions[row]), column, "timestamp goes backwards")
                keep[row] = False
            else:
                last = t
        self.last_time = last
        return times

    def _keys(self, batch: pa.RecordBatch) -> list[list[Hashable]] | None:
        """The PARTITION BY columns as Python lists (keys are built per visited event)."""
        attrs = self.query.partition_by
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
        attrs = self.query._attrs
        type_column = self.query.type_column
        events = []
        for p in positions:
            row = self.store.event(p)
            if attrs is not None:
                row = {k: row.get(k) for k in (type_column, *attrs)}
            events.append(row)
        return ComplexEvent(start, end, positions, tuple(events), key, self.name)  # type: ignore[arg-type]


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
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


def pushdown(
    columns: tuple[str, ...], policy: str | BadRowPolicy, *, events: bool
) -> tuple[str, ...] | None:
    """The columns to read from a file: all (None) when the output or the quarantine needs whole rows."""
    mode = policy.mode if isinstance(policy, BadRowPolicy) else policy
    return None if events or mode == "quarantine" else columns


def _batches(source: Any, columns: Iterable[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Normalize every supported source into RecordBatches.

    A file path is read with :func:`~kleene.io.readers.read_batches`; with
    ``columns`` (the callers that need no event data pass the query's), only
    those columns, strings as dictionaries (projection pushdown).
    """
    if isinstance(source, (str, os.PathLike)):
        wanted = None if columns is None else tuple(columns)
        yield from read_batches(os.fspath(source), columns=wanted, dictionary=wanted is not None)
        return
    if isinstance(source, pa.RecordBatch):
        yield source
        return
    if isinstance(source, pa.Table):
        yield from source.to_batches()
        return
    pd = sys.modules.get("pandas")  # a DataFrame means pandas is imported: never import it here
    if pd is not None and isinstance(source, pd.DataFrame):
        yield from pa.Table.from_pandas(source, preserve_index=False).to_batches()
        return
    if isinstance(source, Mapping):
        raise KleeneError("a single event: use Query.push(event)")
    if not isinstance(source, Iterable):
        raise KleeneError(f"cannot read events from {type(source).__name__}")
    it = iter(source)
    first = next(it, None)
    if first is None:
        return
    if isinstance(first, (pa.RecordBatch, pa.Table)):
        # Batches are consumed one at a time, never read ahead: memory stays
        # that of one batch, and progress reporting follows the evaluation.
        for item in itertools.chain([first], it):
            if isinstance(item, pa.Table):
                yield from item.to_batches()
            else:
                yield item
        return
    rows = itertools.chain([first], it)
    while chunk := list(itertools.islice(rows, DICT_BATCH)):
        yield _from_dicts(chunk)


def _from_dicts(rows: list[Mapping[str, Any]]) -> pa.RecordBatch:
    """A batch from event dicts; a column whose values mix types is kept as strings.

    The conform step then parses the strings it needs as numbers and sets
    aside, with a reason, the rows it cannot parse: mixed input is reported,
    never silently coerced or dropped.
    """
    try:
        return pa.RecordBatch.from_pylist([dict(e) for e in rows])
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    names = list(dict.fromkeys(k for e in rows for k in e))
    arrays = []
    for name in names:
        values = [e.get(name) for e in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in values], pa.string()))
    return pa.RecordBatch.from_arrays(arrays, names=names)
