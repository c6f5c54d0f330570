"""Names the query expects that the input never shows: otherwise a typo is only silence.

A query over an inferred schema cannot know, when it is compiled, which event
types and streams the input holds.  A session records the distinct values of
the type and stream columns it reads (one vectorized ``unique`` per batch) and,
at the end of a whole run, names each type or stream of the query that never
occurred, with the names seen and the nearest one (``did you mean 'DEP'?``).
Under ``strict_types`` the same is an :class:`UnseenNameError` naming every
missing name (each with its nearest), whose caret points at the first in the
query: before the run when the input's
columns could be read cheaply first (:meth:`kleene.evaluable.Evaluable.check_names`),
else at the end of the input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

import kleene.kernels as pc
from kleene.language import ast
from kleene.language.ast import NO_SPAN, Span
from kleene.language.errors import UnseenNameError
from kleene.language.names import name_span
from kleene.options import InputOptions
from kleene.planning.plan import Plan

MAX_NAMES = 1000
"""Distinct names kept per column: past that the column is no list of types (and messages
would not list them anyway)."""


class SeenNames:
    """The distinct non-null values of one column over a stream (strings), until every name
    in ``expected`` has been seen: from then on no message can come, and a batch costs nothing."""

    def __init__(self, column: str | None, expected: Iterable[str]) -> None:
        self.column = column
        self.expected = frozenset(expected)
        self.names: set[str] = set()
        self.rows = 0
        self.done = column is None or not self.expected

    def add(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        if self.done or self.column not in batch.schema.names:
            return
        if len(self.names) >= MAX_NAMES:
            return
        values = pc.unique(batch.column(self.column)).to_pylist()  # dictionaries decoded too
        self.names.update(str(v) for v in values if v is not None)
        self.done = self.expected <= self.names

    def missing(self, expected: Iterable[str], kind: str) -> list[Unseen]:
        """One per expected name never seen (none when no row was read at all, or when
        the column held more than :data:`MAX_NAMES` names, since recording stopped there)."""
        if self.rows == 0 or self.column is None or len(self.names) >= MAX_NAMES:
            return []
        out = []
        seen = sorted(self.names)
        if seen:
            listed = ", ".join(seen[:10]) + (", ..." if len(seen) > 10 else "")
            holds = f"column {self.column!r} holds: {listed}"
        else:
            holds = f"column {self.column!r} holds no {kind}s"
        for name in sorted(set(expected) - self.names):
            near = nearest(name, seen)
            message = f"{kind} {name!r} never occurs in the input ({holds})"
            if near is not None:
                message += f"; did you mean {near!r}?"
            out.append(Unseen(kind, name, message, holds, near))
        return out


class NameWatch:
    """The type and stream columns of one stream, watched for the names some plans expect."""

    def __init__(self, options: InputOptions, plans: Sequence[Plan]) -> None:
        named = [expected_names(plan) for plan in plans]
        self.types = SeenNames(options.type_column, (t for types, _ in named for t in types))
        self.streams = SeenNames(options.stream_column, (s for _, streams in named for s in streams))

    def add(self, batch: pa.RecordBatch) -> None:
        self.types.add(batch)
        self.streams.add(batch)

    def missing(self, plan: Plan) -> list[str]:
        """A message per event type or stream of ``plan`` that the stream so far never held."""
        return [u.message for u in self.unseen(plan)]

    def unseen(self, plan: Plan) -> list[Unseen]:
        """The event types and streams of ``plan`` that the stream so far never held."""
        types, streams = expected_names(plan)
        return self.types.missing(types, "event type") + self.streams.missing(streams, "stream")

    def check(self, named: Sequence[tuple[Plan, str | None]]) -> None:
        """Under ``strict_types``: raise one :class:`UnseenNameError` naming every missing name
        of the queries ``named`` (plan, query name or None), each with its nearest name."""
        found = [(plan, name, u) for plan, name in named for u in self.unseen(plan)]
        if found:
            raise unseen_error(found)


@dataclass(frozen=True)
class Unseen:
    """A name of the query the input never held: ``kind`` is "event type" or "stream"."""

    kind: str
    name: str
    message: str
    holds: str = ""
    """What the column holds instead ("column 'type' holds: ARR, DEP")."""
    near: str | None = None
    """The nearest name the column holds, if any is near."""


def unseen_error(found: Sequence[tuple[Plan, str | None, Unseen]]) -> UnseenNameError:
    """The error ``--strict-types`` raises, at the first missing name in its query.

    One name: the warning's message.  Several: all of them in one message,
    each with its nearest name, then what each column holds, so that one run
    shows every typo instead of one per try.
    """
    plan, query_name, first = found[0]
    span = _name_span(plan.query, first)

    def prefix(name: str | None) -> str:
        return "" if name is None else f"query {name}: "

    if len(found) == 1:
        message = prefix(query_name) + first.message
    else:
        listed = []
        for _, name, u in found:
            near = "" if u.near is None else f" (did you mean {u.near!r}?)"
            listed.append(f"{prefix(name)}{u.kind} {u.name!r}{near}")
        holds = list(dict.fromkeys(u.holds for _, _, u in found))
        message = (
            f"{len(found)} names never occur in the input: {', '.join(listed)}; {'; '.join(holds)}"
        )
    return UnseenNameError(message, span.line, span.column, plan.text)


def _name_span(query: ast.Query, unseen: Unseen) -> Span:
    """Where the query first names the missing event type (or stream)."""
    if unseen.kind == "stream":
        for stream in query.streams:
            if stream == unseen.name:
                return name_span(stream, query.span)
    stack: list[Any] = [query.where]
    while stack:
        node = stack.pop(0)
        if isinstance(node, ast.EventType):
            if unseen.name == (node.stream if unseen.kind == "stream" else node.name):
                return node.span if node.span != NO_SPAN else query.span
            continue
        if dataclasses.is_dataclass(node):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
    return query.span


def expected_names(plan: Plan) -> tuple[set[str], set[str]]:
    """The event types and streams a plan names (none over a declared schema, which checked them)."""
    if plan.schema is not None:
        return set(), set()
    return set(plan.atoms.event_types), set(plan.atoms.streams) | set(plan.from_streams or ())


def nearest(name: str, names: list[str]) -> str | None:
    """The name ``name`` most likely meant: the same but for case, else the closest spelling."""
    folded = [n for n in names if n.casefold() == name.casefold()]
    if folded:
        return folded[0]
    import difflib  # only for a name that is not found (start-up time of every run)

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None
