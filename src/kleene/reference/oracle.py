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
  - nested selectors (``MAX(ρ)``...): see "nested selectors" below (``_at``);
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
end (:func:`select_matches`).  Patterns holding one are evaluated top-down per position,
memoized (:func:`_at`); the others bottom-up as above.

Size: the oracle is deliberately one self-contained evaluator of the formal semantics,
sharing no code with the engines it checks (the top-down reading of nested selectors reuses
every operator's evaluation, so it lives here too).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any, NamedTuple

from kleene.language import ast
from kleene.reference.predicates import Others, holds
from kleene.reference.semantics import (
    binds,
    conjuncts,
    has_selector,
    nullable,
    reads_prev,
    single_event,
    var_attrs,
)

ComplexEvent = tuple[int, int, tuple[int, ...]]
Bindings = frozenset[tuple[str, frozenset[int]]]
Deferred = frozenset[tuple[ast.FilterAtom, frozenset[int] | None]]
"""Checks of FILTER atoms naming an enclosing pattern's variables: the atom, and the events of
its variable it filters (None: the variable's events where the check is made)."""


class OracleBudgetExceeded(RuntimeError):
    """More intermediate valuations than the caller's budget allowed.

    Property tests pass a budget so that an unlucky random case is discarded
    instead of running for minutes; the oracle itself has no size limit.
    """


class Valuation(NamedTuple):
    """A valuation: interval, all positions of the match, and variable bindings.

    ``bindings`` holds ``(variable, positions)`` pairs for the tracked
    variables whose set is non-empty; an absent variable is bound to ∅.
    """

    start: int
    end: int
    positions: frozenset[int]
    bindings: Bindings
    deferred: Deferred = frozenset()

    def get(self, var: str) -> frozenset[int]:
        """``V(var)``, the empty set when ``var`` is unbound."""
        for name, positions in self.bindings:
            if name == var:
                return positions
        return frozenset()

    def as_dict(self) -> dict[str, frozenset[int]]:
        return dict(self.bindings)


def _merge(a: Bindings, b: Bindings) -> Bindings:
    if not a:
        return b
    if not b:
        return a
    merged: dict[str, frozenset[int]] = dict(a)
    for name, positions in b:
        merged[name] = merged.get(name, frozenset()) | positions
    return frozenset(merged.items())


def _join(v1: Valuation, v2: Valuation) -> Valuation:
    """``V1`` followed by ``V2`` (the caller checked the order condition)."""
    return Valuation(
        v1.start,
        v2.end,
        v1.positions | v2.positions,
        _merge(v1.bindings, v2.bindings),
        v1.deferred | v2.deferred,
    )


@dataclass
class _Context:
    """What evaluating a pattern on one (sub)stream needs to know."""

    events: Sequence[Mapping[str, Any]]
    type_key: str
    stream_key: str | None
    positions: Sequence[int]  # global positions of the substream, increasing
    following: dict[int, int]  # position -> next position of the substream
    tracked: frozenset[str] | None  # None: track every variable
    admissible: Callable[[int, int], bool]  # may an interval [s, e] still be output?
    budget: int | None
    produced: int = 0
    defers: bool = True  # some FILTER names an outer variable (else nothing to resolve)
    selectors: bool = False  # the pattern holds a nested selector (read from a position)
    memo: dict[Any, set[Valuation]] = field(default_factory=dict)
    written: dict[int, ast.Pattern] = field(default_factory=dict)  # Repeat node -> written out

    def tracks(self, var: str) -> bool:
        return self.tracked is None or var in self.tracked

    def charge(self, n: int) -> None:
        self.produced += n
        if self.budget is not None and self.produced > self.budget:
            raise OracleBudgetExceeded(f"more than {self.budget} valuations")


def _is_of_type(
    event: Mapping[str, Any], pattern: ast.EventType, type_key: str, stream_key: str | None
) -> bool:
    if pattern.name != "_" and event.get(type_key) != pattern.name:
        return False  # `_` is any event, whatever its type (or none)
    if pattern.stream is not None and stream_key is not None:
        return bool(event.get(stream_key) == pattern.stream)
    return True


def _satisfies(
    condition: ast.FilterExpr, v: Valuation, events: Sequence[Mapping[str, Any]]
) -> bool:
    if isinstance(condition, ast.FilterAtom):
        x = condition.var
        refs = list(var_attrs(condition.pred))
        if not refs:
            return all(holds(condition.pred, events[i]) for i in v.get(x))
        return _satisfies_nary(condition, refs, v, events)
    if isinstance(condition, ast.FilterAnd):
        return _satisfies(condition.left, v, events) and _satisfies(condition.right, v, events)
    if isinstance(condition, ast.FilterOr):
        return _satisfies(condition.left, v, events) or _satisfies(condition.right, v, events)
    raise TypeError(f"not a filter condition: {condition!r}")


def _satisfies_nary(
    atom: ast.FilterAtom,
    refs: list[ast.VarAttr],
    v: Valuation,
    events: Sequence[Mapping[str, Any]],
) -> bool:
    """``V ⊨ X[P]`` for a condition between events (see the module docstring)."""
    x = atom.var
    parts = conjuncts(atom.pred)
    names = sorted({r.var for r in refs if not r.prev and r.var != x})
    choices = [sorted(v.get(a)) for a in names]
    bound = sorted(v.get(x))
    for k, i in enumerate(bound):
        # No previous event of X for the first one: conjuncts reading it hold.
        checked = [c for c in parts if k > 0 or not reads_prev(c)]
        others: dict[tuple[str, bool], Mapping[str, Any]] = {(x, False): events[i]}
        if k > 0:
            others[(x, True)] = events[bound[k - 1]]
        for combo in product(*choices):
            for a, j in zip(names, combo, strict=True):
                others[(a, False)] = events[j]
            env: Others = others
            if not all(holds(c, events[i], env) for c in checked):
                return False
    return True


def _sequence(
    left: Iterable[Valuation], right: Iterable[Valuation], contiguous: bool, ctx: _Context
) -> set[Valuation]:
    """``⟦φ1 ; φ2⟧`` (or ``φ1 : φ2``) from the two operands' valuation sets.

    Pairs are found through an index on ``V2.start`` only to avoid scanning
    every pair; the condition checked is exactly the paper's.
    """
    by_start: dict[int, list[Valuation]] = defaultdict(list)
    for v2 in right:
        by_start[v2.start].append(v2)
    starts = sorted(by_start)
    out: set[Valuation] = set()
    for v1 in left:
        if contiguous:
            nxt = ctx.following.get(v1.end)
            candidates = [nxt] if nxt is not None and nxt in by_start else []
        else:
            candidates = starts[bisect_right(starts, v1.end) :]  # V1.end < V2.start
        for start in candidates:
            if not ctx.admissible(v1.start, start):
                break  # later starts only make the interval longer
            matches = by_start[start]
            ctx.charge(len(matches))
            for v2 in matches:
                if ctx.admissible(v1.start, v2.end):
                    out.add(_join(v1, v2))
    return out


def _iterate(base: set[Valuation], contiguous: bool, ctx: _Context) -> set[Valuation]:
    """``⟦φ+⟧ = ⟦φ⟧ ∪ ⟦φ ; φ+⟧`` as a least fixpoint.

    Each round prepends one more ``φ`` valuation to the valuations found in
    the previous round, until nothing new appears (finite: the stream is).
    """
    result = set(base)
    frontier = set(base)
    while frontier:
        new = _sequence(base, frontier, contiguous, ctx) - result
        result |= new
        frontier = new
    return result


def _repeat(pattern: ast.Repeat, ctx: _Context) -> set[Valuation]:
    """``⟦φ{n,m}⟧ = ⋃ ⟦φ^k⟧`` for ``n <= k <= m``; ``⟦φ{n,}⟧ = ⟦φ^n ; φ*⟧``.

    ``φ^k`` is ``k`` copies of ``φ`` joined by ``;`` (by ``:`` for ``φ:{n,m}``),
    ``φ^0`` the empty match alone.  A set of valuations travels with whether
    ε belongs to it, and ``;`` with ε is the identity, as in ``_eval``'s Seq.
    """
    base, base_empty = _eval(pattern.pattern, ctx), nullable(pattern.pattern)
    glue = pattern.contiguous

    def then(
        a: tuple[set[Valuation], bool], b: tuple[set[Valuation], bool]
    ) -> tuple[set[Valuation], bool]:
        out = _sequence(a[0], b[0], glue, ctx)
        if b[1]:
            out |= a[0]
        if a[1]:
            out |= b[0]
        return out, a[1] and b[1]

    power: tuple[set[Valuation], bool] = (set(), True)  # φ^0 = {ε}
    for _ in range(pattern.low):
        power = then(power, (base, base_empty))
    if pattern.high is None:
        return then(power, (_iterate(base, glue, ctx), True))[0]
    out = set(power[0])
    for _ in range(pattern.high - pattern.low):
        power = then(power, (base, base_empty))
        out |= power[0]
    return out


def _all(left: set[Valuation], right: set[Valuation], ctx: _Context) -> set[Valuation]:
    """``⟦φ1 ALL φ2⟧``: every pair, any order, overlap allowed, variables unioned."""
    out: set[Valuation] = set()
    for v1 in left:
        ctx.charge(len(right))
        for v2 in right:
            start, end = min(v1.start, v2.start), max(v1.end, v2.end)
            if ctx.admissible(start, end):
                bindings = _merge(v1.bindings, v2.bindings)
                deferred = v1.deferred | v2.deferred
                out.add(Valuation(start, end, v1.positions | v2.positions, bindings, deferred))
    return out


def _and(left: set[Valuation], right: set[Valuation], ctx: _Context) -> set[Valuation]:
    """``⟦φ1 AND φ2⟧``: pairs with the same positions (hence interval), variables unioned."""
    by_positions: dict[frozenset[int], list[Valuation]] = defaultdict(list)
    for v2 in right:
        by_positions[v2.positions].append(v2)
    out: set[Valuation] = set()
    for v1 in left:
        matches = by_positions.get(v1.positions, [])
        ctx.charge(len(matches))
        for v2 in matches:
            out.add(
                v1._replace(
                    bindings=_merge(v1.bindings, v2.bindings),
                    deferred=v1.deferred | v2.deferred,
                )
            )
    return out


def _unless(left: set[Valuation], right: set[Valuation]) -> set[Valuation]:
    """``⟦φ1 UNLESS φ2⟧``: drop ``V1`` if some ``V2`` has ``V1.start <= V2.start <= V2.end <= V1.end``.

    ``earliest_end[k]`` is the smallest end of a ``V2`` starting at or after
    ``starts[k]``, so the test is one lookup per ``V1``.
    """
    if not right:
        return set(left)
    ends_by_start: dict[int, int] = {}
    for v2 in right:
        ends_by_start[v2.start] = min(v2.end, ends_by_start.get(v2.start, v2.end))
    starts = sorted(ends_by_start)
    earliest_end = [0] * len(starts)
    best: int | None = None
    for k in range(len(starts) - 1, -1, -1):
        end = ends_by_start[starts[k]]
        best = end if best is None else min(best, end)
        earliest_end[k] = best
    out: set[Valuation] = set()
    for v1 in left:
        k = bisect_left(starts, v1.start)
        if k == len(starts) or earliest_end[k] > v1.end:
            out.add(v1)
    return out


def _not_event(pattern: ast.NotEvent, ctx: _Context) -> set[Valuation]:
    """``NOT(ψ)``: every event of the (sub)stream that is not a match of ψ on its own."""
    if not single_event(pattern.pattern):
        raise ValueError(
            "NOT(...) needs a single-event pattern (an event type, with AS, FILTER or OR)"
        )
    hits = {v.start for v in _eval(pattern.pattern, ctx) if v.start == v.end}
    out = {Valuation(i, i, frozenset((i,)), frozenset()) for i in ctx.positions if i not in hits}
    ctx.charge(len(out))
    return out


def _filter(
    pattern: ast.Filter, ctx: _Context, found: set[Valuation] | None = None
) -> set[Valuation]:
    """``φ FILTER θ``: the top-level conjuncts of θ naming a variable φ does not bind are
    deferred (module docstring), the rest is checked here.  ``found``: φ's valuations,
    when the caller has them (read from a position, see :func:`_at`)."""
    inner = binds(pattern.pattern)
    now: list[ast.FilterExpr] = []
    later: list[ast.FilterAtom] = []
    stack = [pattern.condition]
    while stack:
        part = stack.pop()
        if isinstance(part, ast.FilterAnd):
            stack += [part.right, part.left]
        elif isinstance(part, ast.FilterAtom) and not _names(part) <= inner:
            later.append(part)
        else:
            now.append(part)
    if found is None:
        found = _eval(pattern.pattern, ctx)
    for k, part in enumerate(now):
        if isinstance(part, ast.FilterOr) and not all(
            _names(atom) <= inner for atom in _leaves(part)
        ):
            # `φ FILTER θ1 OR θ2` is `(φ FILTER θ1) OR (φ FILTER θ2)` (CORE's footnote 1):
            # apart, each side defers its own atoms naming an outer variable.
            rest = [*now[:k], *now[k + 1 :], *later]
            out: set[Valuation] = set()
            for side in (part.left, part.right):
                cond = side
                for other in rest:
                    cond = ast.FilterAnd(other, cond)
                out |= _filter(ast.Filter(pattern.pattern, cond), ctx, found)
            return out
    out = set()
    for v in found:
        if all(_satisfies(c, v, ctx.events) for c in now):
            if later:
                extra = frozenset(
                    (atom, v.get(atom.var) if atom.var in inner else None) for atom in later
                )
                v = v._replace(deferred=v.deferred | extra)
            out.add(v)
    return out


def _leaves(cond: ast.FilterExpr) -> list[ast.FilterAtom]:
    """The atoms of a FILTER condition."""
    if isinstance(cond, ast.FilterAtom):
        return [cond]
    return _leaves(cond.left) + _leaves(cond.right)


def _names(atom: ast.FilterAtom) -> frozenset[str]:
    """The variables a FILTER atom needs bound: its own and the ones it reads (not ``prev``)."""
    return frozenset({atom.var} | {r.var for r in var_attrs(atom.pred) if not r.prev})


def _resolve(pattern: ast.Pattern, found: set[Valuation], ctx: _Context) -> set[Valuation]:
    """Check the deferred atoms whose variables ``pattern`` binds, on its valuations."""
    if not any(v.deferred for v in found):
        return found
    here = binds(pattern)
    out = set()
    for v in found:
        due = {d for d in v.deferred if _names(d[0]) <= here}
        if not due:
            out.add(v)
            continue
        if all(_deferred_holds(atom, own, v, ctx) for atom, own in due):
            out.add(v._replace(deferred=v.deferred - due))
    return out


def _deferred_holds(
    atom: ast.FilterAtom, own: frozenset[int] | None, v: Valuation, ctx: _Context
) -> bool:
    """``atom`` on the events it filtered where it was written (``own``), the other variables
    read on ``v``."""
    if own is not None:
        rest = frozenset(b for b in v.bindings if b[0] != atom.var)
        v = v._replace(bindings=rest | {(atom.var, own)} if own else rest)
    return _satisfies(atom, v, ctx.events)


def _eval(pattern: ast.Pattern, ctx: _Context) -> set[Valuation]:
    if ctx.selectors:
        if has_selector(pattern):  # read from the stream's start (thesis: i = 0)
            return _at(pattern, ctx, 0)
        key = id(pattern)
        if key not in ctx.memo:
            ctx.memo[key] = _eval_plain(pattern, ctx)
        return ctx.memo[key]
    return _eval_plain(pattern, ctx)


def _eval_plain(pattern: ast.Pattern, ctx: _Context) -> set[Valuation]:
    found = _eval_node(pattern, ctx)
    return _resolve(pattern, found, ctx) if ctx.defers else found


# ------------------------------------------------------------ nested selectors
# The CEL thesis evaluates a formula *from a position*: ``⟦ρ⟧(S, i, ν)`` holds the matches
# of ρ that start at ``i`` or later, and ``ρ1 ; ρ2`` reads ρ2 from ``max(M1) + 1``.  Without
# selectors that is only "start >= i" on the bottom-up valuations; a selector ``SEL(ρ)``
# read from ``i`` compares a match of ρ with the matches of ρ read from ``i`` that end at
# the same position (docs/semantics.md, "Nested selectors").  So patterns holding a
# selector are evaluated top-down, per position, memoized: ``_at(φ, ctx, i)``.


def _at(pattern: ast.Pattern, ctx: _Context, i: int) -> set[Valuation]:
    """``⟦pattern⟧`` read from position ``i``: its matches that start at ``i`` or later."""
    if not has_selector(pattern):
        return {v for v in _eval(pattern, ctx) if v.start >= i}
    key = (id(pattern), i)
    if key not in ctx.memo:
        found = _at_node(pattern, ctx, i)
        ctx.memo[key] = _resolve(pattern, found, ctx) if ctx.defers else found
    return ctx.memo[key]


def _then(
    left: set[Valuation], right: ast.Pattern, contiguous: bool, ctx: _Context
) -> set[Valuation]:
    """``V1 ; V2`` for every ``V1`` in ``left`` and ``V2`` of ``right`` read from ``V1.end + 1``."""
    by_end: dict[int, list[Valuation]] = defaultdict(list)
    for v1 in left:
        by_end[v1.end].append(v1)
    out: set[Valuation] = set()
    for end, group in by_end.items():
        out |= _sequence(group, _at(right, ctx, end + 1), contiguous, ctx)
    return out


def _plus_at(
    pattern: ast.Pattern, contiguous: bool, ctx: _Context, i: int
) -> set[Valuation]:
    """``⟦φ+⟧`` read from ``i``: ``⟦φ⟧(i) ∪ ⟦φ ; φ+⟧(i)``, each iteration read after the last."""
    key = (id(pattern), "+", contiguous, i)
    if key in ctx.memo:
        return ctx.memo[key]
    first = _at(pattern, ctx, i)
    out = set(first)
    by_end: dict[int, list[Valuation]] = defaultdict(list)
    for v1 in first:
        by_end[v1.end].append(v1)
    for end, group in by_end.items():
        out |= _sequence(group, _plus_at(pattern, contiguous, ctx, end + 1), contiguous, ctx)
    ctx.memo[key] = out
    return out


def _written_out(pattern: ast.Repeat, ctx: _Context) -> ast.Pattern:
    """``φ{n,m}`` as the union of its ``k``-fold sequences (``φ{n,}``: ``φ^n ; φ*``), built once
    per node (the memo is keyed by node identity)."""
    built = ctx.written.get(id(pattern))
    if built is None:
        inner, glue = pattern.pattern, pattern.contiguous

        def power(k: int) -> ast.Pattern:
            chain = inner
            for _ in range(k - 1):
                chain = ast.Seq(chain, inner, glue)
            return chain

        low = max(pattern.low, 1)
        if pattern.high is None:
            tail: ast.Pattern = ast.Iter(inner, glue)
            node = tail if pattern.low == 0 else ast.Or(power(low), ast.Seq(power(low), tail, glue))
        else:
            node = power(low)
            for k in range(low + 1, pattern.high + 1):
                node = ast.Or(node, power(k))
        built = ctx.written[id(pattern)] = node
    return built


def _at_node(pattern: ast.Pattern, ctx: _Context, i: int) -> set[Valuation]:
    if isinstance(pattern, ast.Selector):
        inner = _at(pattern.pattern, ctx, i)
        kept = select_matches(pattern.strategy, {v.positions for v in inner}, ctx.positions)
        return {v for v in inner if v.positions in kept}
    if isinstance(pattern, ast.As):
        inner = _at(pattern.pattern, ctx, i)
        if not ctx.tracks(pattern.var):
            return inner
        return {
            v._replace(
                bindings=frozenset(b for b in v.bindings if b[0] != pattern.var)
                | {(pattern.var, v.positions)}
            )
            for v in inner
        }
    if isinstance(pattern, ast.Filter):
        return _filter(pattern, ctx, _at(pattern.pattern, ctx, i))
    if isinstance(pattern, ast.Or):
        return _at(pattern.left, ctx, i) | _at(pattern.right, ctx, i)
    if isinstance(pattern, ast.Seq):
        left = _at(pattern.left, ctx, i)
        out = _then(left, pattern.right, pattern.contiguous, ctx)
        if nullable(pattern.right):  # ψ ; ε = ψ
            out |= left
        if nullable(pattern.left):  # ε ; ψ = ψ
            out |= _at(pattern.right, ctx, i)
        return out
    if isinstance(pattern, ast.Iter):
        return _plus_at(pattern.pattern, pattern.contiguous, ctx, i)
    if isinstance(pattern, ast.Star):
        return _plus_at(pattern.pattern, False, ctx, i)
    if isinstance(pattern, ast.Repeat):
        return _at(_written_out(pattern, ctx), ctx, i)
    if isinstance(pattern, ast.And):
        return _and(_at(pattern.left, ctx, i), _at(pattern.right, ctx, i), ctx)
    if isinstance(pattern, ast.All):
        return _all(_at(pattern.left, ctx, i), _at(pattern.right, ctx, i), ctx)
    if isinstance(pattern, ast.Unless):  # the thesis reads φ2 from i too, inside the span
        return _unless(_at(pattern.left, ctx, i), _at(pattern.right, ctx, i))
    if isinstance(pattern, ast.NotEvent):
        return {v for v in _not_event(pattern, ctx) if v.start >= i}
    raise TypeError(f"not a pattern: {pattern!r}")


def _names_outer(pattern: ast.Pattern) -> bool:
    """Does some FILTER of ``pattern`` name a variable its own pattern does not bind?"""
    if isinstance(pattern, ast.EventType):
        return False
    if isinstance(pattern, ast.Filter):
        inner = binds(pattern.pattern)
        stack = [pattern.condition]
        while stack:
            c = stack.pop()
            if isinstance(c, ast.FilterAtom):
                if not _names(c) <= inner:
                    return True
            else:
                stack += [c.left, c.right]
    return any(
        _names_outer(getattr(pattern, name))
        for name in ("pattern", "left", "right")
        if isinstance(getattr(pattern, name, None), ast.Pattern)
    )


def _eval_node(pattern: ast.Pattern, ctx: _Context) -> set[Valuation]:
    if isinstance(pattern, ast.EventType):
        out = set()
        binds = pattern.name != "_" and ctx.tracks(pattern.name)  # `_` binds nothing
        for i in ctx.positions:
            if _is_of_type(ctx.events[i], pattern, ctx.type_key, ctx.stream_key):
                here = frozenset((i,))
                out.add(
                    Valuation(
                        i, i, here, frozenset({(pattern.name, here)}) if binds else frozenset()
                    )
                )
        ctx.charge(len(out))
        return out
    if isinstance(pattern, ast.As):
        inner = _eval(pattern.pattern, ctx)
        if not ctx.tracks(pattern.var):
            return inner
        out = set()
        for v in inner:
            rest = frozenset(b for b in v.bindings if b[0] != pattern.var)
            out.add(v._replace(bindings=rest | {(pattern.var, v.positions)}))
        return out
    if isinstance(pattern, ast.Filter):
        return _filter(pattern, ctx)
    if isinstance(pattern, ast.Or):
        return _eval(pattern.left, ctx) | _eval(pattern.right, ctx)
    if isinstance(pattern, ast.Seq):
        left, right = _eval(pattern.left, ctx), _eval(pattern.right, ctx)
        out = _sequence(left, right, pattern.contiguous, ctx)
        if nullable(pattern.right):  # ψ ; ε = ψ
            out |= left
        if nullable(pattern.left):  # ε ; ψ = ψ
            out |= right
        return out
    if isinstance(pattern, ast.Iter):
        # Empty iterations are the identity, so only the non-empty ones are chained.
        return _iterate(_eval(pattern.pattern, ctx), pattern.contiguous, ctx)
    if isinstance(pattern, ast.Star):
        return _iterate(_eval(pattern.pattern, ctx), False, ctx)
    if isinstance(pattern, ast.Repeat):
        return _repeat(pattern, ctx)
    if isinstance(pattern, ast.And):
        return _and(_eval(pattern.left, ctx), _eval(pattern.right, ctx), ctx)
    if isinstance(pattern, ast.All):
        return _all(_eval(pattern.left, ctx), _eval(pattern.right, ctx), ctx)
    if isinstance(pattern, ast.Unless):
        return _unless(_eval(pattern.left, ctx), _eval(pattern.right, ctx))
    if isinstance(pattern, ast.NotEvent):
        return _not_event(pattern, ctx)
    if isinstance(pattern, ast.Selector):
        return _at(pattern, ctx, 0)
    raise TypeError(f"not a pattern: {pattern!r}")


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
) -> _Context:
    following = {a: b for a, b in zip(positions, positions[1:], strict=False)}
    return _Context(events, type_key, stream_key, positions, following, tracked, admissible, budget)


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
    ctx.defers = _names_outer(pattern)
    ctx.selectors = has_selector(pattern)
    return _eval(pattern, ctx)


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

    defers = _names_outer(query.where)
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
            found = _eval(query.where, ctx)
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
    query: ast.Query, ctx: _Context, times: Sequence[int] | None
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
        out |= {v for v in _at(query.where, ctx, i) if v.end in ends}
    return out


def _consumption_point(consume: ast.Consume, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Which consumption point a match in partition ``key`` obeys (None: no consumption)."""
    if consume == "NONE":
        return None
    return key if consume == "PARTITION" else ()


def next_less(a: frozenset[int], b: frozenset[int]) -> bool:
    """``a <_next b``: at the first position where they differ, ``b`` has it (thesis §4)."""
    return a != b and min(a ^ b) in b


def last_less(a: frozenset[int], b: frozenset[int]) -> bool:
    """``a <_last b``: at the last position where they differ, ``b`` has it."""
    return a != b and max(a ^ b) in b


def _maximum(
    group: Iterable[frozenset[int]], less: Callable[[frozenset[int], frozenset[int]], bool]
) -> frozenset[int]:
    """The maximum of a non-empty group under a total order given by ``less``."""
    it = iter(group)
    best = next(it)
    for d in it:
        if less(best, d):
            best = d
    return best


def select_matches(
    strategy: ast.Strategy, matches: Iterable[frozenset[int]], substream: Sequence[int]
) -> set[frozenset[int]]:
    """The matches (full position sets) a selection strategy keeps.

    ``matches`` are the matches of one partition, ``substream`` its increasing
    global positions.  Strategies only compare matches with the same end
    (``max``), so each end position is decided on its own, from the prefix
    that ends there (the thesis's streamability requirement).
    """
    all_matches = set(matches)
    if strategy in ("ALL", "ANY"):
        return all_matches
    if strategy == "STRICT":
        rank = {p: k for k, p in enumerate(substream)}
        return {d for d in all_matches if rank[max(d)] - rank[min(d)] + 1 == len(d)}
    by_end: dict[int, list[frozenset[int]]] = defaultdict(list)
    for d in all_matches:
        by_end[max(d)].append(d)
    if strategy == "NEXT":
        return {_maximum(group, next_less) for group in by_end.values()}
    if strategy == "LAST":
        return {_maximum(group, last_less) for group in by_end.values()}
    if strategy == "MAX":
        return {d for group in by_end.values() for d in group if not any(d < e for e in group)}
    raise ValueError(f"unknown selection strategy {strategy!r}")
