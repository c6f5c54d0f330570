"""The planner: a checked query and the input options in, a frozen :class:`Plan` out.

It decides, once per query, everything that does not depend on the events:
the engine (CORE's tECS engine when every FILTER is unary, the register
engine when some FILTER relates two events), the automaton, the window and
strategy settings, which attributes must be valid on which event types, and
which input columns a run reads (projection pushdown).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from kleene.automata.compile import compile_labelled, compile_pattern
from kleene.language import ast
from kleene.language.conditions import atoms as filter_atoms
from kleene.language.conditions import nary_filters, on_later_variables, var_attrs
from kleene.language.errors import QueryError, UnsupportedError
from kleene.language.normal_form import unfold_outer_ors
from kleene.language.printer import filter_to_ceql
from kleene.language.schema import Schema
from kleene.language.scopes import evaluated_form, lift_outer_conditions
from kleene.language.selectors import (
    anchored_selectors,
    desugar_selectors,
    has_selectors,
    register_refusal,
)
from kleene.language.variables import WILDCARD, variable_event_types
from kleene.options import InputOptions
from kleene.planning.plan import Plan, Tuning
from kleene.predicates.atoms import Atoms
from kleene.predicates.conform import Requirement
from kleene.predicates.kinds import infer_kinds
from kleene.predicates.table import MAX_WIDTH, PredicateTable
from kleene.runtime.settings import Settings

WHOLE_MATCH_STRATEGIES = ("NEXT", "LAST", "MAX")
"""Strategies that compare whole matches: with a projection they run on SELECT *'s automaton
and the chosen matches are projected afterwards."""


def plan_query(
    query: ast.Query,
    text: str,
    schema: Schema | None,
    options: InputOptions,
    tuning: Tuning | None = None,
    *,
    need_time: bool = True,
) -> Plan:
    """Plan a query that :func:`kleene.language.checks.check` accepted.

    ``need_time=False`` plans a time window without a time column, for a plan
    that is only explained or drawn (``kleene explain`` reads no data); such
    a plan must not be run.
    """
    tuning = tuning or Tuning()
    # STRICT(p) as ':' and a selector on the whole pattern as the strategy (selectors.py);
    # a FILTER's OR naming an enclosing variable unfolded (normal_form.py, thesis Thm 5.3).
    query = unfold_outer_ors(desugar_selectors(query, text))
    # A FILTER naming an enclosing pattern's variable is evaluated around that pattern
    # (kleene.language.scopes); the plan is made for that form, the query kept as written.
    written = query
    lifted = lift_outer_conditions(query.where).pattern
    if lifted is not query.where:
        query = dataclasses.replace(query, where=lifted)
    items = query.select.items
    projection = None if items is None else frozenset(i.var for i in items)
    # A selector at the start of the pattern: the automaton runs from the stream's start, and
    # a match starts at its first event only under SELECT * (kleene.runtime.anchored), so a
    # projection is made from the chosen whole matches, as after a strategy.
    anchored = anchored_selectors(query.where)
    whole_match = projection is not None and (
        query.select.strategy in WHOLE_MATCH_STRATEGIES or bool(anchored)
    )
    if projection is not None:
        for sel in anchored:
            if anchored_selectors(sel.pattern):
                raise UnsupportedError(
                    f"{sel.strategy}(...) at the start of the pattern, itself starting with a "
                    "selector, is not supported with a projection: the chosen matches are "
                    "projected by replaying them from their first event, where the inner "
                    "selector would choose among fewer matches; write SELECT *",
                    sel.span.line,
                    sel.span.column,
                    text,
                )
    window = query.within
    if isinstance(window, ast.DurationWindow) and options.time_column is None and need_time:
        raise UnsupportedError(
            "a time window needs event times: pass time_column (--time-column)",
            window.span.line,
            window.span.column,
            text,
        )
    partition_by = tuple(a for group in query.partition_by for a in group)
    settings = Settings(
        window=_window_amount(window),
        partitioned=bool(partition_by),
        consume=query.consume,
        limit=query.limit,
        strategy=query.select.strategy,
    )
    engine, reason = choose_engine(written)
    if engine == "registers" and has_selectors(query.where):
        refused = register_refusal(query.where, reason)
        if refused is not None:
            sel, why = refused
            raise UnsupportedError(why, sel.span.line, sel.span.column, text)
    atoms = Atoms()
    cea = labels = srt = register_runtime = None
    # a[2 * c.price >= price], c after a, runs as c[2 * price >= a.price] (docs/semantics.md)
    where = evaluated_form(query.where)
    with_streams = options.stream_column is not None
    if engine == "registers":
        # Loaded only for conditions between events (start-up time of every other run).
        from kleene.registers.automaton import compile_srt
        from kleene.registers.index import applies
        from kleene.registers.window_runtime import choose_register_runtime

        # The SRT marks every event under a whole-match strategy, and the
        # runtime projects the chosen ones (kleene.registers.runtime).
        # (A selector at the start needs no replay here: a run's start is its first bound event.)
        srt = compile_srt(
            where, projection, with_streams=with_streams,
            strategy_first=whole_match and query.select.strategy in WHOLE_MATCH_STRATEGIES,
            limits=options.limits,
        )
        atoms.event_types = list(srt.event_types)
        atoms.preds = list(srt.preds)
        atoms.streams = list(srt.streams)
        check_width(atoms, query, text)
        register_runtime = tuning.register_runtime or choose_register_runtime(
            srt, settings, window, options.type_column, windowed=tuning.windowed
        )
        if register_runtime != "runs" and srt.selectors:
            raise ValueError("a nested selector's product runs on the plain runs only")
        if register_runtime == "windowed" and not isinstance(window, ast.EventsWindow):
            raise ValueError("the windowed runtime needs a WITHIN n EVENTS window")
        if register_runtime == "merged" and not applies(srt, settings.strategy, settings.limit):
            raise ValueError("merged runs need the run index: ALL or ANY, no LIMIT, no UNLESS")
    else:
        atoms.collect(where, with_streams=with_streams)
        check_width(atoms, query, text)
        try:
            if whole_match:
                cea, labels = compile_labelled(
                    where, atoms, None, project=projection, limits=options.limits
                )
            else:
                cea = compile_pattern(
                    where, atoms, projection, strict=query.select.strategy == "STRICT",
                    limits=options.limits,
                )
        except ValueError as err:  # a construct too large to compile (see compile.py)
            span = query.where.span
            raise UnsupportedError(str(err), span.line, span.column, text) from None
    requirements, untyped = _requirements(query)
    return Plan(
        query=written,
        text=text,
        schema=schema,
        options=options,
        tuning=tuning,
        engine=engine,
        engine_reason=reason,
        atoms=atoms,
        cea=cea,
        labels=labels,
        srt=srt,
        register_runtime=register_runtime,
        settings=settings,
        predicates=PredicateTable(
            atoms.event_types,
            atoms.preds,
            type_column=options.type_column,
            streams=atoms.streams,
            stream_column=options.stream_column,
        ),
        requirements=requirements,
        untyped=untyped,
        partition_by=partition_by,
        columns=_read_columns(query, options, partition_by, bool(atoms.event_types)),
        attrs=_projected_attributes(query),
        from_streams=(
            frozenset(query.streams) if with_streams and query.streams else None
        ),
    )


def check_width(atoms: Atoms, query: ast.Query, text: str) -> None:
    """A query needing more than :data:`MAX_WIDTH` atoms is a :class:`QueryError` at the first
    atom past the limit (bit vectors are uint64: one bit per event type, per distinct
    ``var[...]`` predicate, per ``S>E`` stream; that order)."""
    types, preds, streams = len(atoms.event_types), len(atoms.preds), len(atoms.streams)
    width = types + preds + streams
    if width <= MAX_WIDTH:
        return
    span: ast.Span = ast.NO_SPAN
    if types > MAX_WIDTH:
        first = f"event type {atoms.event_types[MAX_WIDTH]!r}"
        span = _event_span(query.where, lambda e: e.name == atoms.event_types[MAX_WIDTH])
    elif types + preds > MAX_WIDTH:
        pred = atoms.preds[MAX_WIDTH - types]
        first = "this predicate"
        span = getattr(pred, "span", ast.NO_SPAN)
    else:
        stream = atoms.streams[MAX_WIDTH - types - preds]
        first = f"stream {stream!r}"
        span = _event_span(query.where, lambda e: e.stream == stream)
    if span == ast.NO_SPAN:
        span = query.where.span
    raise QueryError(
        f"too many atoms: the query needs {width} ({types} event types, {preds} distinct "
        f"predicates, {streams} streams), at most {MAX_WIDTH} are supported, and {first} is "
        f"number {MAX_WIDTH + 1}. To get under the limit, put the conditions on one variable "
        "in one bracket (a[x > 1 AND y < 2] is one predicate, a[x > 1] AND a[y < 2] two), "
        "compare with a set (a[x IN {1, 2, 3}]) or a range (a[x IN RANGE(1, 9)]) instead of "
        "one comparison per value, or split the query into several (kleene.compile_many "
        "runs them in one pass)",
        span.line, span.column, text,
    )


def _event_span(pattern: ast.Pattern, wanted: Callable[[ast.EventType], bool]) -> ast.Span:
    """The span of the first event type atom of ``pattern`` that is ``wanted``."""
    stack: list[object] = [pattern]
    while stack:
        node = stack.pop(0)
        if isinstance(node, ast.EventType):
            if wanted(node):
                return node.span
        elif dataclasses.is_dataclass(node):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
    return ast.NO_SPAN


def choose_engine(query: ast.Query) -> tuple[str, str]:
    """The engine for a query: CORE's tECS unless some FILTER relates two events."""
    lifted = lift_outer_conditions(query.where)  # where outer conditions are evaluated
    where = lifted.pattern
    found = next(nary_filters(where), None)
    if found is None:
        return "tecs", (
            "every FILTER reads only the event it filters (unary predicates): CORE's "
            "algorithm, constant time per event and output-linear enumeration"
        )
    _, atom = found
    written, placed = list(nary_filters(where)), list(nary_filters(on_later_variables(where)))
    moved = [  # said only when the rewrite kept every condition (it may fold some away)
        f"{filter_to_ceql(a)} as {filter_to_ceql(b)}"
        for (_, a), (_, b) in zip(written, placed, strict=False)
        if a.var != b.var
    ] if len(written) == len(placed) else []
    evaluated = (
        "; evaluated on the variable bound last: " + ", ".join(moved) if moved else ""
    )
    named = filter_to_ceql(atom)
    if atom.var in lifted.shown:  # a variable made up for a FILTER naming an outer one
        named += f" ({atom.var}: {lifted.shown[atom.var]}, evaluated where its variables are bound)"
    return "registers", (
        f"{named} relates events to each other, which unary automata cannot "
        "express: symbolic register transducer runs (the SRT papers), with the unary "
        f"conditions as a vectorized prefilter{evaluated}"
    )


def _window_amount(window: ast.Window | None) -> int | float | None:
    """The window's length in its own units: events, nanoseconds, or the attribute's."""
    if window is None:
        return None
    if isinstance(window, ast.EventsWindow):
        return window.count
    if isinstance(window, ast.DurationWindow):
        return window.nanos
    return window.amount


def _read_columns(
    query: ast.Query, options: InputOptions, partition_by: tuple[str, ...], typed: bool
) -> tuple[str, ...]:
    """The input columns a run reads when the events' data is not output.

    ``typed``: the query names an event type (the wildcard ``_`` alone reads no type).
    """
    names = [options.type_column] if typed else []
    for f in _filters(query.where):
        for atom in filter_atoms(f.condition):
            names += sorted(_attributes(atom.pred) | {r.name for r in var_attrs(atom.pred)})
    window = query.within
    if isinstance(window, ast.AttrWindow):
        names.append(window.attr)
    names += [c for c in (options.time_column, options.stream_column) if c is not None]
    names += partition_by
    # SELECT a[x, y]'s attributes: the query is checked against the columns read, and an
    # attribute it outputs must exist even when only positions are asked for.
    names += _projected_attributes(query) or ()
    return tuple(dict.fromkeys(names))


def _requirements(
    query: ast.Query,
) -> tuple[dict[str, Requirement], dict[str, frozenset[str]]]:
    """Which attributes must be valid on which event types, and those of unknown kind.

    ``FILTER x[P]`` reads the attributes of ``P`` on the events ``x`` can
    be bound to: rows of those types must carry valid values.
    """
    every = [a.pred for f in _filters(query.where) for a in filter_atoms(f.condition)]
    names = {r.name for p in every for r in var_attrs(p)} | {
        name for p in every for name in _attributes(p)
    }
    kinds = infer_kinds(every, sorted(names))
    req: dict[str, set[str]] = {}

    def walk(p: ast.Pattern) -> None:
        if isinstance(p, ast.Filter):
            scope = variable_event_types(p.pattern)
            for atom in filter_atoms(p.condition):
                for attr in _attributes(atom.pred):
                    req.setdefault(attr, set()).update(scope.get(atom.var, ()))
                for ref in var_attrs(atom.pred):  # a.attr reads a's events
                    req.setdefault(ref.name, set()).update(scope.get(ref.var, ()))
        for child in ("pattern", "left", "right"):
            node = getattr(p, child, None)
            if node is not None:
                walk(node)

    walk(query.where)
    # An attribute of unknown kind is a number for unary predicates (as
    # always); one compared only with other events' values of unknown
    # kind (`kind = a.kind`) compares by its runtime type, unconverted.
    unary = {name for p in every for name in _attributes(p) if not any(var_attrs(p))}
    # A variable bound to the wildcard `_` reads the attribute on events of every type.
    out = {
        attr: Requirement(kinds.get(attr, "number"), None if WILDCARD in types else frozenset(types))
        for attr, types in req.items()
        if types and (attr in kinds or attr in unary)
    }
    untyped = {
        attr: frozenset(types) for attr, types in req.items() if types and attr not in out
    }
    window = query.within
    if isinstance(window, ast.AttrWindow):
        out[window.attr] = Requirement("number", None)
    return out, untyped


def _projected_attributes(query: ast.Query) -> tuple[str, ...] | None:
    """Attributes to show per event (``SELECT a[x, y]``); None for all."""
    items = query.select.items
    if not items or any(i.attrs is None for i in items):
        return None
    return tuple(dict.fromkeys(a for i in items for a in i.attrs or ()))


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
