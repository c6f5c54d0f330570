"""Brute-force reference evaluator of CEQL (CORE paper, Figure 2).

The real engine compiles queries into automata and enumerates complex events
with the CORE algorithm.  This module computes the same output the slow and
obvious way, straight from the formal valuation semantics, so that the two can
be compared on random queries and streams (differential testing).  It shares
nothing with the engine except the parser and the AST: its semantic helpers
(``nullable``, ``single_event``, the references of a condition) are its own,
in :mod:`kleene.reference.semantics`, cross-checked against the engine's.

Semantics implemented (CORE paper §2 and the project's decisions):

* A stream is a list of events; positions are list indices.  A *valuation*
  has an interval ``[start, end]`` and maps variables to **sets** of
  positions.  ``⟦φ⟧`` is computed bottom-up as a set of valuations:

  - ``R``: ``[i, i]`` with ``V(R) = {i}`` for every event ``i`` of type ``R``;
  - ``_``: ``[i, i]``, positions ``{i}``, no variable, for every event ``i``
    (``S>_``: every event of stream ``S``);
  - ``φ AS X``: ``V(X)`` := every position of the match;
  - ``φ FILTER X[P]``: keep ``V`` if every event in ``V(X)`` satisfies ``P``
    (vacuously true when ``V(X)`` is empty); ``AND``/``OR`` of filter atoms
    are conjunction and disjunction (the paper's footnote 1);
  - conditions between events (n-ary ``P``): ``A.attr`` in ``X[P]`` reads the
    event of ``V(A)`` (every one of them, should there be several: the
    checker makes sure there is exactly one), ``prev(X).attr`` the event of
    ``V(X)`` just before the one checked: a top-level conjunct of ``P`` that
    reads ``prev(X)`` is checked on every *consecutive pair* of ``V(X)`` and
    holds vacuously for the first event (the other conjuncts on every event).
    This is the SRT register semantics (a register overwritten at each
    binding, read by the guard before the write), stated on valuations;
  - a FILTER atom naming a variable its pattern does not bind (the CEL
    thesis's φ4, ``H AS x ; (T AS y FILTER y[id = x.id])+``, and φ6,
    ``T AS x ; ((T AS y FILTER x[v >= 40]) OR ...)``), written as a top-level
    conjunct: the valuation carries it, *deferred*, with the events it filters
    (``V(y)`` at the FILTER; for φ6's outer ``x``, none: ``x``'s at the end),
    and it is checked, as above, on the valuations of the nearest enclosing
    pattern that binds all its variables (the thesis passes the valuation of
    enclosing scopes down); a check no pattern resolves holds (the checker
    rejects such queries); under an OR of conditions, ``φ FILTER θ1 OR θ2``
    is evaluated as ``(φ FILTER θ1) OR (φ FILTER θ2)`` (CORE's footnote 1),
    each side deferring its own such atoms;
  - nested selectors (``MAX(ρ)``...): see "nested selectors" below (``patterns.evaluate_at``);
  - ``φ1 OR φ2``: union;
  - ``φ1 ; φ2``: ``V1.end < V2.start``, interval ``[V1.start, V2.end]``,
    variables unioned; ``φ1 : φ2`` additionally requires ``V2.start`` to be
    the position right after ``V1.end`` *in the (sub)stream evaluated*;
  - ``φ+`` / ``φ:+``: least fixpoint of ``⟦φ⟧ ∪ ⟦φ ; φ+⟧`` (resp. with ``:``);
  - ``φ1 AND φ2``: ``V1``, ``V2`` with the same interval and the same
    positions, variables unioned;
  - ``φ1 ALL φ2``: ``V1``, ``V2`` in any order, overlapping or interleaved;
    interval ``[min starts, max ends]``, variables unioned;
  - ``φ1 UNLESS φ2``: ``V1`` such that no ``V2`` (of the same (sub)stream,
    evaluated on its own) lies inside it: ``V1.start <= V2.start`` and
    ``V2.end <= V1.end`` (thesis §3.3, inclusive bounds as spec §11 #6 says);
  - ``NOT(ψ)`` (ψ a single-event pattern: ``E``, ``AS``, ``FILTER``, ``OR``
    of those): ``[i, i]``, positions ``{i}``, no variable, for every event
    ``i`` such that ``{i}`` is not a match of ``ψ``;
  - ``φ{n,m}`` (``φ:{n,m}``): the union of ``φ^k`` for ``n <= k <= m``, ``k``
    copies of ``φ`` joined by ``;`` (``:``); ``φ{n,}`` is ``φ^n ; φ*``;
    ``φ?`` is ``φ{0,1}``;
  - ``φ*``: the valuations of ``φ+``, plus the *empty match* ε, which is
    never a valuation of its own: a pattern is *nullable* (syntactically:
    ``*``; ``{0,m}``, ``?``, or a repetition of a nullable; ``;``/``:`` of
    two nullable; OR with a nullable side; ``+`` of a nullable) and ``⟦φ1 ; φ2⟧`` adds ``⟦φ1⟧`` when ``φ2`` is nullable and
    ``⟦φ2⟧`` when ``φ1`` is (ε is the identity of sequencing).  AS, FILTER,
    AND, ALL, UNLESS and NOT treat a nullable operand as its non-empty
    matches only; the query's output never contains ε.

* PARTITION BY splits the stream into maximal substreams agreeing on every
  key attribute (events lacking one are dropped) and evaluates WHERE on each,
  keeping **global** positions; ``:`` means adjacency inside the substream.
* WITHIN is inclusive: ``end - start <= n`` over global positions
  (``n EVENTS``), over ``times`` (durations) or over an attribute.
* SELECT keeps the positions of the selected variables (all for ``*``, none
  for ``NONE``); the interval is always the whole match.  The output is a
  **set** of complex events ``(start, end, positions)``.
* CONSUME BY ANY / PARTITION: scanning end positions in increasing order, a
  complex event is output only if it starts after the last position ``c`` at
  which something was output (globally, resp. in its partition); outputting
  at ``j`` sets ``c = j``.
* Streams (``stream_key``, docs/semantics.md "Several streams"): each
  event names its stream under ``stream_key``; an event without one is in
  no stream (the engine reports it as a bad row).  FROM keeps the events of
  the listed streams (all streams without FROM), which form the query's
  stream *before* PARTITION BY, with **global** positions, exactly like a
  partition: ``:``, STRICT, NOT(...) and UNLESS see only the query's
  events, while ``WITHIN n EVENTS`` counts global positions.  ``S>R``
  matches events of type R from stream S only.  Without ``stream_key`` the
  input is one stream: FROM is ignored and ``S>R`` is ``R``.
* Selection strategies (CEL thesis §4, valuation-free reading of spec §3.5)
  are applied per partition after WITHIN and before SELECT's projection and
  CONSUME BY, to the *full* position sets ``D`` of the matches, comparing only
  matches with the same end: ALL and ANY keep everything; STRICT keeps ``D``
  when no event of the substream between ``min D`` and ``max D`` is missing
  from it; NEXT (LAST) keeps the unique maximum of the order "``min (max) of
  D △ D'`` is in the larger"; MAX keeps the ``D`` no other ``D'`` strictly
  contains.  ``docs/cel-semantics.md`` gives the reasons.
* LIMIT is **ignored**: which ``n`` complex events are kept per position
  depends on the engine's enumeration order, which a set semantics cannot
  express.  Differential tests should check that the engine's output is a
  subset of the oracle's with the right per-position counts.

Two optimisations keep it usable without changing results: valuations only
record the variables something reads (FILTER and SELECT variables) next to the
full set of positions (``AS`` reads only that set, which is the union of all
variables), and, for count and duration windows, valuations whose interval is
already too long are dropped early (intervals only grow when combined).

Nested selectors (``STRICT(ρ)``, ``NEXT(ρ)``, ``LAST(ρ)``, ``MAX(ρ)``; docs/semantics.md,
"Nested selectors") need the thesis's reading *from a position*: ``⟦ρ⟧(S, i)``, the matches
of ρ starting at ``i`` or later, where ``ρ1 ; ρ2`` reads ρ2 from ``max(M1) + 1`` and the top
level from the first position of the window of the whole match.  A selector read from ``i``
keeps the matches of ρ read from ``i`` that its strategy chooses among those with the same
end (:func:`~kleene.reference.selection.select_matches`).  Patterns holding one are evaluated top-down per position,
memoized (:func:`~kleene.reference.patterns.evaluate_at`); the others bottom-up as above.

Layout: this module reads a query (windows, PARTITION BY, FROM, CONSUME BY, strategies);
:mod:`kleene.reference.patterns` evaluates patterns (bottom-up, and top-down from a position for
nested selectors), on the valuations of :mod:`kleene.reference.valuations`;
:mod:`kleene.reference.selection` applies a selection strategy to matches.  Together they
share no code with the engines they check.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kleene.language import ast
from kleene.reference.patterns import evaluate_at, evaluate_node, names_outer
from kleene.reference.selection import select_matches
from kleene.reference.semantics import has_selector, var_attrs
from kleene.reference.valuations import ComplexEvent, Context, OracleBudgetExceeded, Valuation

__all__ = [
    "ComplexEvent",
    "OracleBudgetExceeded",
    "Valuation",
    "evaluate",
    "evaluate_pattern",
    "in_query_stream",
    "pattern_variables",
]


# ----------------------------------------------------------------- variables


def pattern_variables(pattern: ast.Pattern) -> frozenset[str]:
    """Every variable a pattern binds or filters on (event types included)."""
    if isinstance(pattern, ast.EventType):
        return frozenset({pattern.name})
    if isinstance(pattern, ast.As):
        return pattern_variables(pattern.pattern) | {pattern.var}
    if isinstance(pattern, ast.Filter):
        return pattern_variables(pattern.pattern) | _filter_variables(pattern.condition)
    if isinstance(pattern, ast.Seq | ast.Or | ast.And | ast.All | ast.Unless):
        return pattern_variables(pattern.left) | pattern_variables(pattern.right)
    if isinstance(pattern, ast.Iter | ast.NotEvent | ast.Star | ast.Repeat | ast.Selector):
        return pattern_variables(pattern.pattern)
    raise TypeError(f"not a pattern: {pattern!r}")


def _filter_variables(condition: ast.FilterExpr) -> frozenset[str]:
    if isinstance(condition, ast.FilterAtom):
        return frozenset({condition.var}) | {r.var for r in var_attrs(condition.pred)}
    return _filter_variables(condition.left) | _filter_variables(condition.right)


def _read_variables(pattern: ast.Pattern) -> frozenset[str]:
    """Variables whose content some FILTER in ``pattern`` inspects."""
    if isinstance(pattern, ast.EventType):
        return frozenset()
    if isinstance(pattern, ast.Filter):
        return _read_variables(pattern.pattern) | _filter_variables(pattern.condition)
    if isinstance(pattern, ast.As | ast.Iter | ast.NotEvent | ast.Star | ast.Repeat | ast.Selector):
        return _read_variables(pattern.pattern)
    if isinstance(pattern, ast.Seq | ast.Or | ast.And | ast.All | ast.Unless):
        return _read_variables(pattern.left) | _read_variables(pattern.right)
    raise TypeError(f"not a pattern: {pattern!r}")


# ------------------------------------------------------------------- windows


def _check_times(times: Sequence[int] | None, n: int) -> None:
    if times is None:
        return
    if len(times) != n:
        raise ValueError(f"{len(times)} times for {n} events")
    if any(a > b for a, b in zip(times, times[1:], strict=False)):
        raise ValueError("times must be non-decreasing")


def _window_test(
    window: ast.Window | None,
    events: Sequence[Mapping[str, Any]],
    times: Sequence[int] | None,
) -> tuple[Callable[[int, int], bool], Callable[[int, int], bool]]:
    """``(admissible, final)`` tests on an interval ``[start, end]``.

    ``final`` is the WITHIN condition.  ``admissible`` is a weaker test that is
    monotone (false on an interval implies false on every larger one), so
    sub-matches failing it can be dropped early.
    """

    def always(_s: int, _e: int) -> bool:
        return True

    if window is None:
        return always, always
    if isinstance(window, ast.EventsWindow):
        count = window.count

        def by_count(s: int, e: int) -> bool:
            return e - s <= count

        return by_count, by_count
    if isinstance(window, ast.DurationWindow):
        if times is None:
            raise ValueError("a duration window (WITHIN ... SECONDS) needs times")
        stamps, nanos = times, window.nanos

        def by_time(s: int, e: int) -> bool:
            return stamps[e] - stamps[s] <= nanos

        return by_time, by_time
    if isinstance(window, ast.AttrWindow):
        attr, amount = window.attr, window.amount

        def by_attr(s: int, e: int) -> bool:
            # The attribute need not be monotone, so there is no early pruning.
            return bool(events[e][attr] - events[s][attr] <= amount)

        return always, by_attr
    raise TypeError(f"not a window: {window!r}")


# ---------------------------------------------------------------- partitions


def in_query_stream(
    query: ast.Query, events: Sequence[Mapping[str, Any]], stream_key: str | None
) -> list[int]:
    """Global positions of the events of the streams the query reads (FROM)."""
    if stream_key is None:
        return list(range(len(events)))
    wanted = set(query.streams)
    return [
        i
        for i, e in enumerate(events)
        if e.get(stream_key) is not None and (not wanted or e.get(stream_key) in wanted)
    ]


def _partitions(
    query: ast.Query, events: Sequence[Mapping[str, Any]], stream_key: str | None = None
) -> dict[tuple[Any, ...], list[int]]:
    """Partition key -> increasing global positions of its substream (of the FROM streams)."""
    mine = in_query_stream(query, events, stream_key)
    keys = [attr for group in query.partition_by for attr in group]
    if not keys:
        return {(): mine}
    parts: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i in mine:
        event = events[i]
        key = tuple(event.get(k) for k in keys)
        if any(v is None for v in key):
            continue
        parts[key].append(i)
    return dict(parts)


def _context(
    events: Sequence[Mapping[str, Any]],
    positions: Sequence[int],
    type_key: str,
    stream_key: str | None,
    tracked: frozenset[str] | None,
    admissible: Callable[[int, int], bool],
    budget: int | None,
) -> Context:
    following = {a: b for a, b in zip(positions, positions[1:], strict=False)}
    return Context(events, type_key, stream_key, positions, following, tracked, admissible, budget)


# ----------------------------------------------------------------- public API


def evaluate_pattern(
    pattern: ast.Pattern,
    events: Sequence[Mapping[str, Any]],
    *,
    type_key: str = "type",
    variables: Iterable[str] | None = None,
    budget: int | None = None,
) -> set[Valuation]:
    """``⟦pattern⟧`` over the whole stream, as valuations.

    ``variables`` restricts which variables the valuations record (default:
    every variable of the pattern); positions are always complete.
    """
    tracked = frozenset(variables) if variables is not None else pattern_variables(pattern)
    ctx = _context(events, range(len(events)), type_key, None, tracked, lambda s, e: True, budget)
    ctx.defers = names_outer(pattern)
    ctx.selectors = has_selector(pattern)
    return evaluate_node(pattern, ctx)


def evaluate(
    query: ast.Query,
    events: Sequence[Mapping[str, Any]],
    *,
    times: Sequence[int] | None = None,
    type_key: str = "type",
    budget: int | None = None,
    optimise: bool = True,
    stream_key: str | None = None,
) -> set[ComplexEvent]:
    """The set of complex events ``(start, end, positions)`` of ``query``.

    ``times`` (non-decreasing, one per event) is only needed for duration
    windows.  ``stream_key`` names the key holding each event's stream
    (None: the input is one stream).  LIMIT is ignored (see the module docstring).  ``budget`` caps
    the number of intermediate valuations (raising
    :class:`OracleBudgetExceeded`); None means no cap.  ``optimise=False``
    turns off early window pruning and records every variable: slower, same
    result (a test checks that).

    Order of the clauses, per partition: WHERE, WITHIN, the selection
    strategy (on full matches), SELECT's projection; then CONSUME BY over all
    partitions.  WITHIN comes before the strategy so that a strategy chooses
    among matches that can actually be reported (NEXT would otherwise pick an
    old match the window then drops, and report nothing at that position).
    """
    _check_times(times, len(events))
    admissible, final = _window_test(query.within, events, times)

    items = query.select.items
    selected = None if items is None else frozenset(item.var for item in items)
    tracked: frozenset[str] | None = _read_variables(query.where) | (selected or frozenset())
    if not optimise:
        admissible, tracked = (lambda s, e: True), None

    defers = names_outer(query.where)
    selectors = has_selector(query.where)
    # Per partition: its substream and its matches by end position.
    parts = _partitions(query, events, stream_key)
    by_end: dict[int, list[tuple[tuple[Any, ...], Valuation]]] = defaultdict(list)
    for key, positions in parts.items():
        ctx = _context(events, positions, type_key, stream_key, tracked, admissible, budget)
        ctx.defers = defers
        ctx.selectors = selectors
        if selectors:
            found = _from_window_start(query, ctx, times)
        else:
            found = evaluate_node(query.where, ctx)
        for v in found:
            if final(v.start, v.end):
                by_end[v.end].append((key, v))

    # End by end: what earlier output consumed is gone, then the strategy
    # chooses among the remaining matches of each partition, then projection.
    consumed: dict[tuple[Any, ...], int] = {}
    out: set[ComplexEvent] = set()
    for end in sorted(by_end):
        candidates: dict[tuple[Any, ...], list[Valuation]] = defaultdict(list)
        for key, v in by_end[end]:
            point = _consumption_point(query.consume, key)
            if point is None or v.start > consumed.get(point, -1):
                candidates[key].append(v)
        for key, matches in candidates.items():
            kept = select_matches(query.select.strategy, {v.positions for v in matches}, parts[key])
            emitted = False
            for v in matches:
                if v.positions not in kept:
                    continue
                if selected is None:
                    data = v.positions
                else:
                    data = frozenset().union(*(v.get(x) for x in selected))
                out.add((v.start, v.end, tuple(sorted(data))))
                emitted = True
            point = _consumption_point(query.consume, key)
            if emitted and point is not None:
                consumed[point] = end
    return out


def _from_window_start(
    query: ast.Query, ctx: Context, times: Sequence[int] | None
) -> set[Valuation]:
    """WHERE's matches when it holds a nested selector: a match ending at ``e`` is read from
    the first position its window allows (0 without one), so that a selector at the start
    of the pattern compares with the matches that fit the same window, as the query's own
    strategy does (``WHERE MAX(p)`` is ``SELECT MAX * WHERE p``).  An attribute window
    does not say where it starts (the attribute need not grow): read from 0."""
    window = query.within
    first: dict[int, int] = {}
    for e in ctx.positions:
        if isinstance(window, ast.EventsWindow):
            first[e] = max(0, e - window.count)
        elif isinstance(window, ast.DurationWindow) and times is not None:
            first[e] = bisect_left(times, times[e] - window.nanos)
        else:
            first[e] = 0
    ends_from: dict[int, set[int]] = defaultdict(set)
    for e, i in first.items():
        ends_from[i].add(e)
    out: set[Valuation] = set()
    for i, ends in ends_from.items():
        out |= {v for v in evaluate_at(query.where, ctx, i) if v.end in ends}
    return out


def _consumption_point(consume: ast.Consume, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Which consumption point a match in partition ``key`` obeys (None: no consumption)."""
    if consume == "NONE":
        return None
    return key if consume == "PARTITION" else ()
