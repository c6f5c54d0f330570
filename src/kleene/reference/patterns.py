"""The reference evaluator's patterns: ``⟦φ⟧`` as a set of valuations, bottom-up per operator,
and top-down from a position (``⟦ρ⟧(S, i)``) for patterns holding a nested selector.

The semantics of each operator, and the reasons, are in :mod:`kleene.reference.oracle`'s
docstring; this module is its code, written apart from the engines it checks.

Size: the operators call one another (a FILTER or an iteration evaluates its operand; the
top-down reading of nested selectors reuses every operator), so they stay in one module.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import product
from typing import Any

from kleene.language import ast
from kleene.reference.predicates import Others, holds
from kleene.reference.selection import select_matches
from kleene.reference.semantics import (
    binds,
    conjuncts,
    has_selector,
    nullable,
    reads_prev,
    single_event,
    var_attrs,
)
from kleene.reference.valuations import (
    Absent,
    Context,
    Deferred,
    Valuation,
    join,
    merge_bindings,
)


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
    left: Iterable[Valuation], right: Iterable[Valuation], contiguous: bool, ctx: Context
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
                    out.add(join(v1, v2))
    return out


def _iterate(base: set[Valuation], contiguous: bool, ctx: Context) -> set[Valuation]:
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


def _repeat(pattern: ast.Repeat, ctx: Context) -> set[Valuation]:
    """``⟦φ{n,m}⟧ = ⋃ ⟦φ^k⟧`` for ``n <= k <= m``; ``⟦φ{n,}⟧ = ⟦φ^n ; φ*⟧``.

    ``φ^k`` is ``k`` copies of ``φ`` joined by ``;`` (by ``:`` for ``φ:{n,m}``),
    ``φ^0`` the empty match alone.  A set of valuations travels with whether
    ε belongs to it, and ``;`` with ε is the identity, as in ``evaluate_node``'s Seq.
    """
    base, base_empty = evaluate_node(pattern.pattern, ctx), nullable(pattern.pattern)
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


def _all(left: set[Valuation], right: set[Valuation], ctx: Context) -> set[Valuation]:
    """``⟦φ1 ALL φ2⟧``: every pair, any order, overlap allowed, variables unioned."""
    out: set[Valuation] = set()
    for v1 in left:
        ctx.charge(len(right))
        for v2 in right:
            start, end = min(v1.start, v2.start), max(v1.end, v2.end)
            if ctx.admissible(start, end):
                bindings = merge_bindings(v1.bindings, v2.bindings)
                deferred = v1.deferred | v2.deferred
                out.add(Valuation(start, end, v1.positions | v2.positions, bindings, deferred))
    return out


def _and(left: set[Valuation], right: set[Valuation], ctx: Context) -> set[Valuation]:
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
                    bindings=merge_bindings(v1.bindings, v2.bindings),
                    deferred=v1.deferred | v2.deferred,
                )
            )
    return out


def _unless(
    left: set[Valuation], right: set[Valuation], local: frozenset[str] = frozenset()
) -> set[Valuation]:
    """``⟦φ1 UNLESS φ2⟧``: drop ``V1`` if some ``V2`` has ``V1.start <= V2.start <= V2.end <= V1.end``.

    ``earliest_end[k]`` is the smallest end of a ``V2`` starting at or after
    ``starts[k]``, so the test is one lookup per ``V1``.  A ``V2`` carrying deferred checks
    (its FILTERs read variables φ2 does not bind, ``local`` being those it can) drops ``V1``
    only if they hold on ``V1``'s valuation (the thesis: φ2 is read with ``ν``, its own
    variables re-chosen): ``V1`` carries an :class:`Absent` check of those inside its span,
    resolved where their variables are bound (at this UNLESS when φ1 binds them).
    """
    pending = [v2 for v2 in right if v2.deferred]
    right = {v2 for v2 in right if not v2.deferred}
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
            inside = frozenset(
                v2 for v2 in pending if v1.start <= v2.start and v2.end <= v1.end
            )
            if inside:
                v1 = v1._replace(deferred=v1.deferred | {(Absent(local, inside), None)})
            out.add(v1)
    return out


def _not_event(pattern: ast.NotEvent, ctx: Context) -> set[Valuation]:
    """``NOT(ψ)``: every event of the (sub)stream that is not a match of ψ on its own.

    When ψ's FILTERs read a variable bound around the NOT (issue 18), whether event ``i``
    matches ψ depends on that variable's event: ``[i, i]`` then carries an :class:`Absent`
    check of ψ's matches at ``i``, resolved where the variable is bound."""
    if not single_event(pattern.pattern):
        raise ValueError(
            "NOT(...) needs a single-event pattern (an event type, with AS, FILTER or OR)"
        )
    at: dict[int, list[Valuation]] = defaultdict(list)
    for v in evaluate_node(pattern.pattern, ctx):
        if v.start == v.end:
            at[v.start].append(v)
    local = binds(pattern.pattern)
    out = set()
    for i in ctx.positions:
        found = at.get(i, [])
        if any(not v.deferred for v in found):
            continue  # ψ matches i whatever the enclosing valuation
        deferred: Deferred = frozenset()
        if found:
            deferred = frozenset({(Absent(local, frozenset(found)), None)})
        out.add(Valuation(i, i, frozenset((i,)), frozenset(), deferred))
    ctx.charge(len(out))
    return out


def _filter(
    pattern: ast.Filter, ctx: Context, found: set[Valuation] | None = None
) -> set[Valuation]:
    """``φ FILTER θ``: the top-level conjuncts of θ naming a variable φ does not bind are
    deferred (module docstring), the rest is checked here.  ``found``: φ's valuations,
    when the caller has them (read from a position, see :func:`evaluate_at`)."""
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
        found = evaluate_node(pattern.pattern, ctx)
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


def _resolve(pattern: ast.Pattern, found: set[Valuation], ctx: Context) -> set[Valuation]:
    """Check the deferred atoms whose variables ``pattern`` binds, on its valuations."""
    if not any(v.deferred for v in found):
        return found
    here = binds(pattern)
    out = set()
    for v in found:
        due = {d for d in v.deferred if _needs(d[0]) <= here}
        if not due:
            out.add(v)
            continue
        if all(_check(check, own, v, ctx) for check, own in due):
            out.add(v._replace(deferred=v.deferred - due))
    return out


def _needs(check: ast.FilterAtom | Absent) -> frozenset[str]:
    """The variables a deferred check needs bound."""
    if isinstance(check, ast.FilterAtom):
        return _names(check)
    found: set[str] = set()
    for c in check.candidates:
        for inner, _ in c.deferred:
            found |= _needs(inner)
    return frozenset(found) - check.local


def _check(
    check: ast.FilterAtom | Absent, own: frozenset[int] | None, v: Valuation, ctx: Context
) -> bool:
    if isinstance(check, ast.FilterAtom):
        return _deferred_holds(check, own, v, ctx)
    outer = frozenset(b for b in v.bindings if b[0] not in check.local)
    return not any(
        all(_check(inner, mine, c._replace(bindings=outer | c.bindings), ctx)
            for inner, mine in c.deferred)
        for c in check.candidates
    )


def _deferred_holds(
    atom: ast.FilterAtom, own: frozenset[int] | None, v: Valuation, ctx: Context
) -> bool:
    """``atom`` on the events it filtered where it was written (``own``), the other variables
    read on ``v``."""
    if own is not None:
        rest = frozenset(b for b in v.bindings if b[0] != atom.var)
        v = v._replace(bindings=rest | {(atom.var, own)} if own else rest)
    return _satisfies(atom, v, ctx.events)


def evaluate_node(pattern: ast.Pattern, ctx: Context) -> set[Valuation]:
    if ctx.selectors:
        if has_selector(pattern):  # read from the stream's start (thesis: i = 0)
            return evaluate_at(pattern, ctx, 0)
        key = id(pattern)
        if key not in ctx.memo:
            ctx.memo[key] = _eval_plain(pattern, ctx)
        return ctx.memo[key]
    return _eval_plain(pattern, ctx)


def _eval_plain(pattern: ast.Pattern, ctx: Context) -> set[Valuation]:
    found = _eval_node(pattern, ctx)
    return _resolve(pattern, found, ctx) if ctx.defers else found


# ------------------------------------------------------------ nested selectors
# The CEL thesis evaluates a formula *from a position*: ``⟦ρ⟧(S, i, ν)`` holds the matches
# of ρ that start at ``i`` or later, and ``ρ1 ; ρ2`` reads ρ2 from ``max(M1) + 1``.  Without
# selectors that is only "start >= i" on the bottom-up valuations; a selector ``SEL(ρ)``
# read from ``i`` compares a match of ρ with the matches of ρ read from ``i`` that end at
# the same position (docs/semantics.md, "Nested selectors").  So patterns holding a
# selector are evaluated top-down, per position, memoized: ``evaluate_at(φ, ctx, i)``.


def evaluate_at(pattern: ast.Pattern, ctx: Context, i: int) -> set[Valuation]:
    """``⟦pattern⟧`` read from position ``i``: its matches that start at ``i`` or later."""
    if not has_selector(pattern):
        return {v for v in evaluate_node(pattern, ctx) if v.start >= i}
    key = (id(pattern), i)
    if key not in ctx.memo:
        found = _at_node(pattern, ctx, i)
        ctx.memo[key] = _resolve(pattern, found, ctx) if ctx.defers else found
    return ctx.memo[key]


def _then(
    left: set[Valuation], right: ast.Pattern, contiguous: bool, ctx: Context
) -> set[Valuation]:
    """``V1 ; V2`` for every ``V1`` in ``left`` and ``V2`` of ``right`` read from ``V1.end + 1``."""
    by_end: dict[int, list[Valuation]] = defaultdict(list)
    for v1 in left:
        by_end[v1.end].append(v1)
    out: set[Valuation] = set()
    for end, group in by_end.items():
        out |= _sequence(group, evaluate_at(right, ctx, end + 1), contiguous, ctx)
    return out


def _plus_at(
    pattern: ast.Pattern, contiguous: bool, ctx: Context, i: int
) -> set[Valuation]:
    """``⟦φ+⟧`` read from ``i``: ``⟦φ⟧(i) ∪ ⟦φ ; φ+⟧(i)``, each iteration read after the last."""
    key = (id(pattern), "+", contiguous, i)
    if key in ctx.memo:
        return ctx.memo[key]
    first = evaluate_at(pattern, ctx, i)
    out = set(first)
    by_end: dict[int, list[Valuation]] = defaultdict(list)
    for v1 in first:
        by_end[v1.end].append(v1)
    for end, group in by_end.items():
        out |= _sequence(group, _plus_at(pattern, contiguous, ctx, end + 1), contiguous, ctx)
    ctx.memo[key] = out
    return out


def _written_out(pattern: ast.Repeat, ctx: Context) -> ast.Pattern:
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


def _at_node(pattern: ast.Pattern, ctx: Context, i: int) -> set[Valuation]:
    if isinstance(pattern, ast.Selector):
        inner = evaluate_at(pattern.pattern, ctx, i)
        kept = select_matches(pattern.strategy, {v.positions for v in inner}, ctx.positions)
        return {v for v in inner if v.positions in kept}
    if isinstance(pattern, ast.As):
        inner = evaluate_at(pattern.pattern, ctx, i)
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
        return _filter(pattern, ctx, evaluate_at(pattern.pattern, ctx, i))
    if isinstance(pattern, ast.Or):
        return evaluate_at(pattern.left, ctx, i) | evaluate_at(pattern.right, ctx, i)
    if isinstance(pattern, ast.Seq):
        left = evaluate_at(pattern.left, ctx, i)
        out = _then(left, pattern.right, pattern.contiguous, ctx)
        if nullable(pattern.right):  # ψ ; ε = ψ
            out |= left
        if nullable(pattern.left):  # ε ; ψ = ψ
            out |= evaluate_at(pattern.right, ctx, i)
        return out
    if isinstance(pattern, ast.Iter):
        return _plus_at(pattern.pattern, pattern.contiguous, ctx, i)
    if isinstance(pattern, ast.Star):
        return _plus_at(pattern.pattern, False, ctx, i)
    if isinstance(pattern, ast.Repeat):
        return evaluate_at(_written_out(pattern, ctx), ctx, i)
    if isinstance(pattern, ast.And):
        return _and(evaluate_at(pattern.left, ctx, i), evaluate_at(pattern.right, ctx, i), ctx)
    if isinstance(pattern, ast.All):
        return _all(evaluate_at(pattern.left, ctx, i), evaluate_at(pattern.right, ctx, i), ctx)
    if isinstance(pattern, ast.Unless):  # the thesis reads φ2 from i too, inside the span
        return _unless(
            evaluate_at(pattern.left, ctx, i),
            evaluate_at(pattern.right, ctx, i),
            binds(pattern.right),
        )
    if isinstance(pattern, ast.NotEvent):
        return {v for v in _not_event(pattern, ctx) if v.start >= i}
    raise TypeError(f"not a pattern: {pattern!r}")


def names_outer(pattern: ast.Pattern) -> bool:
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
        names_outer(getattr(pattern, name))
        for name in ("pattern", "left", "right")
        if isinstance(getattr(pattern, name, None), ast.Pattern)
    )


def _eval_node(pattern: ast.Pattern, ctx: Context) -> set[Valuation]:
    if isinstance(pattern, ast.EventType):
        out = set()
        binding = pattern.name != "_" and ctx.tracks(pattern.name)  # `_` binds nothing
        for i in ctx.positions:
            if _is_of_type(ctx.events[i], pattern, ctx.type_key, ctx.stream_key):
                here = frozenset((i,))
                out.add(
                    Valuation(
                        i, i, here, frozenset({(pattern.name, here)}) if binding else frozenset()
                    )
                )
        ctx.charge(len(out))
        return out
    if isinstance(pattern, ast.As):
        inner = evaluate_node(pattern.pattern, ctx)
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
        return evaluate_node(pattern.left, ctx) | evaluate_node(pattern.right, ctx)
    if isinstance(pattern, ast.Seq):
        left, right = evaluate_node(pattern.left, ctx), evaluate_node(pattern.right, ctx)
        out = _sequence(left, right, pattern.contiguous, ctx)
        if nullable(pattern.right):  # ψ ; ε = ψ
            out |= left
        if nullable(pattern.left):  # ε ; ψ = ψ
            out |= right
        return out
    if isinstance(pattern, ast.Iter):
        # Empty iterations are the identity, so only the non-empty ones are chained.
        return _iterate(evaluate_node(pattern.pattern, ctx), pattern.contiguous, ctx)
    if isinstance(pattern, ast.Star):
        return _iterate(evaluate_node(pattern.pattern, ctx), False, ctx)
    if isinstance(pattern, ast.Repeat):
        return _repeat(pattern, ctx)
    if isinstance(pattern, ast.And):
        return _and(evaluate_node(pattern.left, ctx), evaluate_node(pattern.right, ctx), ctx)
    if isinstance(pattern, ast.All):
        return _all(evaluate_node(pattern.left, ctx), evaluate_node(pattern.right, ctx), ctx)
    if isinstance(pattern, ast.Unless):
        return _unless(
            evaluate_node(pattern.left, ctx), evaluate_node(pattern.right, ctx), binds(pattern.right)
        )
    if isinstance(pattern, ast.NotEvent):
        return _not_event(pattern, ctx)
    if isinstance(pattern, ast.Selector):
        return evaluate_at(pattern, ctx, 0)
    raise TypeError(f"not a pattern: {pattern!r}")
