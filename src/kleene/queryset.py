"""Several queries over one stream, in one pass: ``kleene.compile_many([...]) -> QuerySet``.

A :class:`QuerySet` has the methods of :class:`~kleene.api.Query` (run,
matches, push, push_batch, flush, session) and gives, for each query, exactly
the complex events that query gives alone; each complex event names its
query (``ComplexEvent.query``, ``QueryMatch.query``).  Queries may differ in
everything a query says (pattern, FROM, PARTITION BY, WITHIN, CONSUME BY,
LIMIT, strategy); what describes the *input* is shared: the type, time and
stream columns, the time unit, ``max_delay`` and the bad-row policy.

What is shared per batch, so that n queries cost less than n runs:

* reading, numbering and reordering (``max_delay``) the events;
* :func:`~kleene.predicates.conform.conform`, once per group of queries that
  agree on the kind of every attribute they read (almost always one group);
* the predicate evaluation: the union of the queries' atoms, deduplicated
  structurally, evaluated once, vectorized
  (:class:`~kleene.predicates.shared.SharedPredicates`); each query's engine
  gets its own bit layout by a few masked shifts.

A row that is bad for a query is set aside *for that query only*, as when
the query runs alone (another query may not read the bad attribute); the
shared policy hands each bad row over once.

Names: a ``QUERY name:`` header names the query that follows it; otherwise
a query gets its text's name (a key of the mapping given to
:func:`compile_many`, or the file name on the command line), with ``#k``
appended when that text holds several queries, or else ``q<k>`` (k counts
from 1 over the whole set).  Names must be unique.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Unpack

import numpy as np
import pyarrow as pa

from kleene.api import Query, compile_parsed
from kleene.evaluable import Evaluable
from kleene.language.errors import KleeneError, QueryError
from kleene.language.names import name_span
from kleene.language.schema import Schema
from kleene.options import InputOptions, OptionKeywords
from kleene.planning import Plan
from kleene.predicates.conform import Requirement, conform
from kleene.predicates.shared import SharedPredicates
from kleene.results import MatchBatch
from kleene.runtime.enumeration import Count
from kleene.seen import NameWatch
from kleene.session import OrderedFeed, Session


@dataclass(frozen=True)
class _Group:
    """Queries that can share one conformed batch: they agree on every attribute's kind."""

    members: tuple[int, ...]
    requirements: dict[str, Requirement]
    predicates: SharedPredicates


def compile_many(
    queries: str | Sequence[str | tuple[str | None, str]] | Mapping[str, str],
    schema: Schema | None = None,
    *,
    options: InputOptions | None = None,
    **keywords: Unpack[OptionKeywords],
) -> QuerySet:
    """Compile several CEQL queries to run together over one stream.

    ``queries`` is one text, a list of texts (or of ``(name, text)`` pairs,
    a name None for none), or a mapping name -> text; any text may hold
    several queries, each optionally headed ``QUERY name:``
    (see the module docstring for naming).  The keyword options are those of
    :func:`kleene.compile` and apply to every query.
    """
    if isinstance(queries, str):
        texts: list[tuple[str | None, str]] = [(None, queries)]
    elif isinstance(queries, Mapping):
        texts = [(str(k), v) for k, v in queries.items()]
    else:
        texts = [(None, t) if isinstance(t, str) else t for t in queries]
    from kleene.language.parser import parse  # lark: not for `kleene run` of one query

    options = InputOptions.given(options, **keywords)
    compiled: list[Query] = []
    names: list[str] = []
    spans: dict[str, None] = {}
    for base, text in texts:
        program = parse(text)
        for k, (query, given) in enumerate(zip(program.queries, program.names, strict=True)):
            if given is not None:
                name = str(given)
            elif base is not None:
                name = base if len(program.queries) == 1 else f"{base}#{k + 1}"
            else:
                name = f"q{len(names) + 1}"
            if name in spans:
                span = name_span(given, query.span) if given is not None else query.span
                raise QueryError(f"two queries are named {name!r}", span.line, span.column, text)
            spans[name] = None
            compiled.append(compile_parsed(program, k, text, schema, options))
            names.append(name)
    if not compiled:
        raise KleeneError("no query to compile")
    return QuerySet(compiled, names, options)


class QuerySet(Evaluable):
    """Compiled queries evaluated together over one stream (see the module docstring).

    Its methods are those of :class:`kleene.Query` (:class:`~kleene.evaluable.Evaluable`);
    complex events name their query, and at one end position come in the
    order of the queries.
    """

    def __init__(
        self, queries: Sequence[Query], names: Sequence[str], options: InputOptions
    ) -> None:
        self.queries = list(queries)
        self.plans = [q.plan for q in self.queries]
        self.options = options
        self.columns = tuple(dict.fromkeys(c for q in self.queries for c in q.columns))
        self.names = list(names)
        if len(set(self.names)) != len(self.names):
            raise KleeneError("query names must be unique")
        self.groups = self._groups()
        self.result_partitions = tuple(
            dict.fromkeys(a for q in self.queries for a in q.result_partitions)
        )
        super().__init__()

    def _groups(self) -> list[_Group]:
        """Queries that agree on every attribute's kind share conform and predicates."""
        plans: list[tuple[list[int], dict[str, Requirement]]] = []
        for i, q in enumerate(self.plans):
            for members, reqs in plans:
                if all(reqs[a].kind == r.kind for a, r in q.requirements.items() if a in reqs):
                    members.append(i)
                    for attr, r in q.requirements.items():
                        old = reqs.get(attr)
                        if old is None:
                            reqs[attr] = r
                        elif old.event_types is None or r.event_types is None:
                            reqs[attr] = Requirement(r.kind, None)
                        else:
                            reqs[attr] = Requirement(r.kind, old.event_types | r.event_types)
                    break
            else:
                plans.append(([i], dict(q.requirements)))
        return [
            _Group(
                tuple(members),
                reqs,
                SharedPredicates(
                    [self.plans[i].atoms for i in members],
                    type_column=self.options.type_column,
                    stream_column=self.options.stream_column,
                ),
            )
            for members, reqs in plans
        ]

    def named_plans(self) -> list[tuple[str | None, Plan]]:
        return list(zip(self.names, self.plans, strict=True))

    def session(self) -> QuerySetSession:
        """A fresh evaluation state for all the queries."""
        return QuerySetSession(self)

    def count(self, source: Any) -> dict[str, int]:
        """How many complex events each query gives on ``source``, by query name.

        Exactly as many as :meth:`run` lists for that query (same LIMIT, strategies, windows,
        partitions), counted without building them where the engine can
        (:meth:`kleene.Query.count`).
        """
        return dict(zip(self.names, self.counts(source), strict=True))


class QuerySetSession(OrderedFeed):
    """The evaluation state of a :class:`QuerySet`: one :class:`Session` per query, shared stages."""

    def __init__(self, qs: QuerySet) -> None:
        self.qs = qs
        options = qs.options
        self.policy = options.policy()
        reported: set[int] = set()
        self.sessions: list[Session] = []
        for plan, name in zip(qs.plans, qs.names, strict=True):
            s = Session(plan, self.policy)
            s.name = name
            s.reported = reported
            self.sessions.append(s)
        self.next_row = 0
        self.reorder = options.reorder_buffer()
        self.seen = NameWatch(options, qs.plans)

    def unseen(self) -> list[str]:
        return [
            f"query {s.name}: {message}"
            for s in self.sessions
            for message in self.seen.missing(s.plan)
        ]

    def check_names(self) -> None:
        if self.qs.options.strict_types:
            self.seen.check([(s.plan, s.name) for s in self.sessions])

    def count_only(self) -> list[Count]:
        return [c for s in self.sessions for c in s.count_only()]

    def set_aside(
        self, batch: pa.RecordBatch, row: int, pos: int, column: str | None, reason: str
    ) -> None:
        """Late and unreadable rows of the shared buffer go to the shared policy once."""
        self.sessions[0].set_aside(batch, row, pos, column, reason)

    def _rows(
        self, batch: pa.RecordBatch, positions: np.ndarray, named: np.ndarray, *,
        with_events: bool, columnar: bool,
    ) -> list[Any]:
        qs = self.qs
        type_column = qs.options.type_column
        results: list[list[Any]] = [[] for _ in self.sessions]
        types: list[Any] | None = None
        for group in qs.groups:
            requirements = _batch_requirements(group, qs.plans, batch.schema)
            # The type column is read only when some query of the group names a type.
            typed = any(qs.plans[i].type_column is not None for i in group.members)
            conformed, problems = conform(
                batch, requirements, type_column=type_column if typed else None
            )
            bits = group.predicates.evaluate(conformed)
            if problems and types is None and type_column in batch.schema.names:
                types = batch.column(type_column).to_pylist()
            for index, query_bits in zip(group.members, bits, strict=True):
                s = self.sessions[index]
                s.next_row = self.next_row
                s.check_schema(batch)
                bad = _problems_of(s.plan, problems, types, type_column, batch.schema)
                mine = s.stream_rows(batch, named)
                original, rows, pos, names, qbits = batch, conformed, positions, named, query_bits
                if mine is not None:
                    keep = pa.array(mine)
                    original, rows = batch.filter(keep), conformed.filter(keep)
                    pos, names, qbits = positions[mine], named[mine], query_bits[mine]
                    index_of = np.cumsum(mine) - 1
                    bad = [(int(index_of[r]), c, why) for r, c, why in bad if mine[r]]
                results[index] = s.process(
                    original, rows, bad, pos, names, qbits, with_events=with_events,
                    columnar=columnar,
                )
        if columnar:
            merged = MatchBatch.merge([b for r in results for b in r])
            return [merged] if len(merged) else []
        return _merge(results)


def _batch_requirements(
    group: _Group, plans: Sequence[Plan], schema: pa.Schema
) -> dict[str, Requirement]:
    """The group's requirements, plus those whose kind only the input's columns give.

    A condition between events such as ``b[price < a.price]`` fixes no kind for
    ``price`` (:meth:`Plan.requirements_for`); its values must still be valid.
    """
    extra: dict[str, Requirement] = {}
    for i in group.members:
        q = plans[i]
        for attr, r in q.requirements_for(schema).items():
            if attr in group.requirements or attr in q.requirements:
                continue
            old = extra.get(attr)
            if old is None or old.event_types is None or r.event_types is None:
                extra[attr] = r if old is None else Requirement(r.kind, None)
            else:
                extra[attr] = Requirement(r.kind, old.event_types | r.event_types)
    return {**group.requirements, **extra} if extra else group.requirements


def _problems_of(
    query: Plan,
    problems: list[tuple[int, str, str]],
    types: list[Any] | None,
    type_column: str,
    schema: pa.Schema,
) -> list[tuple[int, str, str]]:
    """The problems conform found that concern ``query``: the rows it needs valid."""
    if not problems:
        return []
    requirements = query.requirements_for(schema)
    out = []
    for row, column, reason in problems:
        if column == type_column:
            if query.type_column is not None:  # a query of `_` alone reads no type
                out.append((row, column, reason))
            continue
        req = requirements.get(column)
        if req is None:
            continue
        if req.event_types is None or (types is not None and _as_name(types[row]) in req.event_types):
            out.append((row, column, reason))
    return out


def _as_name(value: Any) -> str | None:
    return None if value is None else str(value)


def _merge(results: list[list[Any]]) -> list[Any]:
    """One list in order of end position; at one end, in query order (a stable sort).

    Each query's list is already in end order; the sort is a numpy stable
    argsort of the ends, so its cost per complex event is small next to
    enumerating it.
    """
    filled = [r for r in results if r]
    if len(filled) <= 1:
        return filled[0] if filled else []
    merged: list[Any] = [x for r in filled for x in r]
    ends = np.fromiter((x.end for x in merged), np.int64, len(merged))
    order = np.argsort(ends, kind="stable")
    return [merged[i] for i in order.tolist()]
