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
from typing import Any, Unpack

from kleene.evaluable import Evaluable
from kleene.language import ast
from kleene.language.checks import check
from kleene.language.errors import QueryError
from kleene.language.parser import parse
from kleene.language.schema import Schema
from kleene.options import InputOptions, OptionKeywords
from kleene.planning import Plan, plan_query
from kleene.session import Session


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
    program: ast.Program, index: int, text: str, schema: Schema | None, options: InputOptions
) -> Query:
    """Check and compile the ``index``-th query of a parsed program (its declarations apply)."""
    if program.streams:
        declared = Schema.from_decls(program.streams, text)
        schema = declared if schema is None else schema
    query = program.queries[index] if program.queries else program.query
    check(query, text, schema)
    return Query(plan_query(query, text, schema, options))


class Query(Evaluable):
    """A compiled CEQL query, ready to run over events (see :class:`~kleene.evaluable.Evaluable`)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.options = plan.options
        self.columns = plan.columns
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
        """For the register engine: ``"pairs"``, ``"windowed"`` or ``"runs"`` (see explain())."""
        return self.plan.register_runtime

    def explain(self) -> str:
        """Which engine evaluates this query, why, and what it compiled to."""
        return self.plan.explain()

    def named_plans(self) -> list[tuple[str | None, Plan]]:
        return [(None, self.plan)]

    def session(self) -> Session:
        """A fresh evaluation state, fed batch by batch with :meth:`Session.feed`."""
        return Session(self.plan)

    def tuned(self, **changes: Any) -> Query:
        """The same query, planned with other :class:`~kleene.planning.Tuning` (same results).

        For tests and measurements: ``q.tuned(lookahead=False)``,
        ``q.tuned(register_runtime="windowed")``.
        """
        p = self.plan
        tuning = dataclasses.replace(p.tuning, **changes)
        return Query(plan_query(p.query, p.text, p.schema, p.options, tuning))

