"""The Python API: ``kleene.compile(query) -> Query``.

:func:`compile` parses and checks a CEQL query, and the planner
(:mod:`kleene.planning`) decides how to evaluate it: CORE's tECS engine when
every FILTER is unary, the register engine (:mod:`kleene.registers`) when some
FILTER relates two events (``b[price < a.price]``); :meth:`Query.explain` says
which and why.  A :class:`Query` is a thin front over that plan: its ways of
feeding events (run, matches, push, ...) come from
:class:`~kleene.evaluable.Evaluable`, the evaluation itself from
:class:`~kleene.session.Session`.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from kleene.evaluable import Evaluable
from kleene.language import ast
from kleene.language.checks import check
from kleene.language.errors import QueryError
from kleene.language.schema import Schema
from kleene.options import InputOptions, OptionKeywords
from kleene.planning import Plan, plan_query
from kleene.session import Session

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def compile(  # noqa: A001 - the natural name, as re.compile
    query: str,
    schema: Schema | None = None,
    *,
    options: InputOptions | None = None,
    **keywords: Unpack[OptionKeywords],
) -> Query:
    """Parse, check and compile a CEQL query.

    ``schema`` declares event types and attributes; ``CREATE STREAM``
    declarations in the query text do the same.  Without either, attributes
    are checked against the input's columns when the first batch arrives.
    The keyword options (:class:`~kleene.options.OptionKeywords`) describe
    the input; they may also come as one :class:`~kleene.options.InputOptions`
    (``options``), which single keywords override.  Defaults:
    ``type_column="type"``, ``time_unit="s"``, ``on_bad_row="error"``, no
    time, stream or delay.  ``time_column`` (with ``time_unit`` for numeric
    columns) gives event times for ``WITHIN <duration>`` windows.  ``max_delay`` (e.g. ``"2 seconds"``)
    accepts input that is out of time order by at most that much: events
    are buffered and released in time order (:mod:`kleene.io.reorder`).
    ``stream_column`` names the column that says which stream each event
    comes from: the query then reads only the events of the streams of its
    FROM clause, and ``S>E`` matches E events of stream S only (see
    docs/semantics.md, "Several streams").  A text with several queries is
    compiled with :func:`kleene.compile_many`.
    """
    from kleene.language.parser import parse  # lark: not for `kleene run` (query_cache)

    options = InputOptions.given(options, **keywords)
    program = parse(query)
    if len(program.queries) > 1:
        second = program.queries[1].span
        raise QueryError(
            f"the text holds {len(program.queries)} queries; compile them together with "
            "kleene.compile_many",
            second.line, second.column, query,
        )
    return compile_parsed(program, 0, query, schema, options)


def compile_parsed(
    program: ast.Program,
    index: int,
    text: str,
    schema: Schema | None,
    options: InputOptions,
    *,
    need_time: bool = True,
) -> Query:
    """Check and compile the ``index``-th query of a parsed program (its declarations apply).

    ``need_time=False``: a time window without a time column is accepted, for
    a query that is only explained or drawn (see :func:`kleene.planning.plan_query`).
    """
    if program.streams:
        declared = Schema.from_decls(program.streams, text)
        schema = declared if schema is None else schema
    query = program.queries[index] if program.queries else program.query
    check(query, text, schema)
    given = program.names[index] if index < len(program.names) else None
    return Query(
        plan_query(query, text, schema, options, need_time=need_time),
        None if given is None else str(given),
    )


class Query(Evaluable):
    """A compiled CEQL query, ready to run over events (see :class:`~kleene.evaluable.Evaluable`)."""

    def __init__(self, plan: Plan, name: str | None = None) -> None:
        self.plan = plan
        self.name = name
        """The ``QUERY name:`` header's name, if the text gave one."""
        self.options = plan.options
        self.columns = plan.columns
        self.result_name = name
        self.result_partitions = tuple(dict.fromkeys(plan.partition_by))
        super().__init__()

    @property
    def ast(self) -> ast.Query:
        return self.plan.query

    @property
    def text(self) -> str:
        return self.plan.text

    @property
    def schema(self) -> Schema | None:
        return self.plan.schema

    @property
    def partition_by(self) -> tuple[str, ...]:
        return self.plan.partition_by

    @property
    def engine(self) -> str:
        """``"tecs"`` (CORE's algorithm) or ``"registers"`` (SRT runs)."""
        return self.plan.engine

    @property
    def register_runtime(self) -> str | None:
        """For the register engine: ``"pairs"``, ``"merged"``, ``"windowed"`` or ``"runs"``
        (see explain())."""
        return self.plan.register_runtime

    def explain(self) -> str:
        """Which engine evaluates this query, why, and what it compiled to."""
        return self.plan.explain()

    def automaton_dot(self) -> str:
        """The automaton the engine runs, as Graphviz DOT text labelled in the query's words.

        The CEA for the tECS engine, the register automaton (with its guards)
        for the register engine; see :mod:`kleene.pictures.automaton`.
        """
        from kleene.pictures.automaton import automaton_dot  # only when a picture is asked for

        return automaton_dot(self.plan)

    def draw(self, path: str | Path) -> Path:
        """Draw the automaton to ``path``: ``.svg``, ``.png`` or ``.pdf`` (needs Graphviz's
        ``dot`` program; raises :class:`~kleene.pictures.automaton.GraphvizMissingError`
        saying how to install it) or ``.dot`` (the DOT text, needs nothing)."""
        from kleene.pictures.automaton import automaton_dot, render

        return render(automaton_dot(self.plan), path)

    def plot(
        self,
        events: Any,
        *,
        path: str | Path | None = None,
        start: int | str | datetime | None = None,
        stop: int | str | datetime | None = None,
        max_events: int = 200,
        max_matches: int = 40,
        max_lanes: int = 12,
    ) -> Figure:
        """A timeline of a stretch of ``events`` and the complex events inside it (matplotlib).

        ``events``: anything :meth:`run` takes.  The stretch starts at ``start``
        and ends at ``stop`` (an int is an input position, a string or datetime a
        time of the time column), after ``max_events`` events, or at the end of
        the ``max_matches``-th complex event, whichever comes first.  One lane per
        partition (at most ``max_lanes``).  Returns the Figure (shown by a
        notebook); ``path`` also saves it (.png, .svg, .pdf).  Needs the ``plot``
        extra; see :mod:`kleene.pictures.timeline`.
        """
        from kleene.pictures.stretch import collect  # only when a picture is asked for
        from kleene.pictures.timeline import draw_timeline, figure_class

        figure_class()  # no matplotlib: say so before reading any event
        stretch = collect(
            self, events, start=start, stop=stop, max_events=max_events, max_matches=max_matches
        )
        return draw_timeline(self, stretch, path=path, max_lanes=max_lanes)

    def named_plans(self) -> list[tuple[str | None, Plan]]:
        return [(None, self.plan)]

    def session(self) -> Session:
        """A fresh evaluation state, fed batch by batch with :meth:`Session.feed`."""
        return Session(self.plan)

    def count(self, source: Any) -> int:
        """How many complex events :meth:`run` would give on ``source``, without listing them.

        The same number as ``len(list(q.run(source)))`` (same LIMIT, strategy, window,
        partitions, bad-row policy), read like :meth:`matches` (a file only for
        :attr:`columns`).  The engine counts without building complex events where it can:
        under NEXT and LAST, and under any strategy with ``LIMIT 1``, in O(1) per event that
        ends a match; under ALL by counting paths in the tECS (docs/semantics.md, "Counting").
        """
        return self.counts(source)[0]

    def tuned(self, **changes: Any) -> Query:
        """The same query, planned with other :class:`~kleene.planning.Tuning` (same results).

        For tests and measurements: ``q.tuned(lookahead=False)``,
        ``q.tuned(register_runtime="windowed")``.
        """
        p = self.plan
        tuning = dataclasses.replace(p.tuning, **changes)
        return Query(plan_query(p.query, p.text, p.schema, p.options, tuning), self.name)

