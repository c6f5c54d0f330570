"""Shared by the differential tests: a generated case compiled, fed, and compared with the oracle.

A case is a random query (an AST), a random stream of events and their times
(tests/generators.py); :func:`check_against_oracle` runs the engine and the
brute-force evaluator (kleene.reference.oracle) and compares their sets of
complex events.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pyarrow as pa
from hypothesis import reject

import kleene
from kleene.language import ast
from kleene.language.errors import LimitError
from kleene.language.printer import to_ceql
from kleene.reference.oracle import OracleBudgetExceeded, evaluate
from kleene.reference.semantics import binds

Case = tuple[ast.Query, list[dict[str, Any]], list[int]]


def rows_of(events: list[dict[str, Any]], times: list[int]) -> list[dict[str, Any]]:
    return [dict(e, __t=t) for e, t in zip(events, times)]


def compile_case(query: ast.Query, stream_column: str | None = None, **tuning: Any) -> kleene.Query:
    """The case's query; ``tuning`` (kleene.planning.Tuning) picks another evaluation path."""
    try:
        q = kleene.compile(
            to_ceql(query), time_column="__t", time_unit="ns", stream_column=stream_column
        )
    except LimitError as err:  # e.g. ALL of six wildcards: over max_states, as documented
        if aim() is None:
            reject()  # a plain property test: hypothesis counts the case as filtered
        skip_case(f"over kleene's limit {err.limit}", stop=True)
        raise
    return q.tuned(**tuning) if tuning else q


SUPPORTED_CEL = frozenset(
    {"not", "star", "and", "all", "unless", "repeat", "wildcard", "STRICT", "NEXT", "LAST", "MAX"}
)
"""The constructs beyond the core language (all of them are evaluated by the engine)."""


BUDGET = 200_000
"""Intermediate valuations the oracle may build for one case (OracleBudgetExceeded beyond)."""


def oracle(case: Case, stream_key: str | None = None) -> set[Any] | None:
    """The oracle's complex events, or None (a counted skip, see :func:`aimed`) when the case is
    too large for brute force."""
    query, events, times = case
    try:
        return evaluate(query, events, times=times, budget=BUDGET, stream_key=stream_key)
    except OracleBudgetExceeded:
        skip_case("oracle budget exceeded")
        return None


def check_against_oracle(
    case: Case,
    stream_key: str | None = None,
    aim_at: list[str] | None = None,
    compare: dict[str, ast.Query] | None = None,
    **tuning: Any,
) -> None:
    """The engine's output is the oracle's.

    Also records, on the running :func:`aimed` test, whether one of ``aim_at`` (default: the
    query's strategy, UNLESS, window, PARTITION BY, CONSUME BY, LIMIT) changed the result, and
    for each ``compare`` entry (feature: the query without it, built by the test) whether the
    oracle's result on that query differs.
    """
    query, events, times = case
    expected = oracle(case, stream_key)
    if expected is None:
        return
    measure_feature(case, expected, features_of(query) if aim_at is None else aim_at, stream_key)
    for feature, other in (compare or {}).items():
        measure_variant(case, expected, feature, other, stream_key)
    if aim_at is None and query.limit is not None:
            ends = Counter(end for _, end, _ in expected)
            feature_changed("LIMIT", any(n > query.limit for n in ends.values()))
    engine = compile_case(query, stream_key, **tuning)
    got = [(m.start, m.end, m.positions) for m in engine.matches(rows_of(events, times))]
    assert len(got) == len(set(got)), "a complex event was output twice"
    if query.limit is None:
        assert set(got) == expected
    else:
        # LIMIT n: at most n complex events per triggering (end) event, taken from the full set.
        assert set(got) <= expected
        per_end = Counter(end for _, end, _ in expected)
        got_per_end = Counter(end for _, end, _ in got)
        assert got_per_end == Counter({e: min(c, query.limit) for e, c in per_end.items()})


def pieces(table: pa.Table, cuts: list[int]) -> list[pa.RecordBatch]:
    """``table`` cut at ``cuts`` (uneven batches, some empty)."""
    bounds = sorted({0, table.num_rows, *[c % (table.num_rows + 1) for c in cuts]})
    return [b for lo, hi in zip(bounds, bounds[1:]) for b in table.slice(lo, hi - lo).to_batches()]


def prepared(case: Case) -> tuple[Any, pa.Table, Any]:
    query, events, times = case
    if query.select.strategy in ("NEXT", "LAST", "MAX") and query.select.items is not None:
        query = replace(query, select=replace(query.select, items=None))
    return query, pa.Table.from_pylist(rows_of(events, times)), None


def check_push_and_batches(case: Case, cuts: list[int]) -> None:
    """push(event) one by one, and push_batch(...) of the slices between ``cuts``, give what
    run(table) gives."""
    query, events, times = case
    rows = rows_of(events, times)
    whole = [ce.to_dict() for ce in compile_case(query).run(pa.Table.from_pylist(rows))]
    one = compile_case(query)
    singles = [ce.to_dict() for row in rows for ce in one.push(row)]
    sliced = compile_case(query)
    pieces = []
    cut = [0, *cuts, len(rows)]
    for lo, hi in zip(cut, cut[1:]):
        if lo < hi:
            pieces.extend(ce.to_dict() for ce in sliced.push_batch(pa.Table.from_pylist(rows[lo:hi])))
    assert singles == whole
    assert pieces == whole


# ------------------------------------------------ aim: did the feature matter?


class Aim:
    """One property test's tally: cases run, cases skipped (and why), and per feature how often
    removing the feature changed the result.

    A generated test can pass without ever exercising what it is named for (a strategy that
    chooses among one match, a window longer than the stream); the tally makes that visible
    (printed, ``pytest -s``) and :func:`aimed` fails the test when it happens too often.
    """

    def __init__(self, test: str) -> None:
        self.test = test
        self.cases = 0
        self.skips: Counter[str] = Counter()
        self.changed: Counter[str] = Counter()
        self.measured: Counter[str] = Counter()
        self.unmeasured: Counter[str] = Counter()

    def record(self, feature: str, changed: bool) -> None:
        self.measured[feature] += 1
        self.changed[feature] += changed

    def report(self) -> str:
        skipped = sum(self.skips.values())
        parts = [f"{self.test}: {self.cases} cases, {skipped} skipped"]
        parts += [f"  skipped ({why}): {n}" for why, n in sorted(self.skips.items())]
        for feature in sorted(self.measured):
            n, c = self.measured[feature], self.changed[feature]
            extra = f", {self.unmeasured[feature]} too large to compare" if self.unmeasured[feature] else ""
            parts.append(f"  {feature} changed the result in {c}/{n} ({c / n:.0%}){extra}")
        return "\n".join(parts)


_current: list[Aim] = []


def aim() -> Aim | None:
    """The tally of the running :func:`aimed` test (None outside one)."""
    return _current[-1] if _current else None


class SkippedCase(Exception):
    """Raised by ``skip_case(..., stop=True)``: ends the case, which :func:`aimed` counts."""


def skip_case(reason: str, stop: bool = False) -> None:
    """Count the running case as skipped; outside an :func:`aimed` test a skip is an error
    (nothing is skipped silently).  ``stop``: end the case here (raises :class:`SkippedCase`,
    which the test's :func:`aimed` wrapper catches)."""
    tally = aim()
    if tally is None:
        raise AssertionError(f"a case was skipped ({reason}) outside an @aimed test")
    tally.skips[reason] += 1
    if stop:
        raise SkippedCase(reason)


def feature_changed(feature: str, changed: bool) -> None:
    """Record whether ``feature`` changed the running case's result."""
    tally = aim()
    if tally is not None:
        tally.record(feature, changed)


def share_bounds(hits: int, n: int, z: float = 2.58) -> tuple[float, float]:
    """The Wilson score interval (99%, two-sided) of the share ``hits / n`` of a random sample.

    The aimed tests judge a share measured on a few dozen to a few hundred random cases, so they
    compare the floor with what the sample allows rather than with the raw ratio: a feature fails
    its floor only when its share is below it beyond sampling noise (6 of 26, 23%, may still be a
    third; 168 of 700, 24%, cannot), and skips fail only when surely above their ceiling.
    """
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def aimed(
    *features: str, least: float = 1 / 3, most_skipped: float = 0.1, fewest: int = 20
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate a hypothesis test (above ``@settings``/``@given``) to tally its cases.

    After the run it prints the tally and fails when more than ``most_skipped`` of the cases were
    skipped, or when one of ``features`` (what the test is about) was measured on fewer than
    ``fewest`` cases (the generator no longer reaches it) or changed the result in fewer than
    ``least`` of them (both beyond sampling noise: :func:`share_bounds`).  Other features measured are printed only.
    """

    def decorate(test: Callable[..., None]) -> Callable[..., None]:
        inner = test.hypothesis.inner_test  # type: ignore[attr-defined]

        @functools.wraps(inner)
        def counted(*args: Any, **kwargs: Any) -> None:
            try:
                inner(*args, **kwargs)  # a rejected case (assume, reject) raises: not counted
            except SkippedCase:
                pass  # counted as skipped
            tally = aim()
            if tally is not None:
                tally.cases += 1

        test.hypothesis.inner_test = counted  # type: ignore[attr-defined]

        @functools.wraps(test)
        def run(*args: Any, **kwargs: Any) -> None:
            tally = Aim(test.__name__)
            _current.append(tally)
            try:
                test(*args, **kwargs)
            finally:
                _current.pop()
            print("\n" + tally.report())
            assert tally.cases > 0, f"{tally.test}: no case ran"
            skipped = sum(tally.skips.values())
            assert share_bounds(skipped, tally.cases)[0] <= most_skipped, (
                f"{tally.test}: {skipped} of {tally.cases} cases skipped (at most "
                f"{most_skipped:.0%} may be, beyond sampling noise)\n{tally.report()}"
            )
            for feature in features:
                assert tally.measured[feature] >= fewest, (
                    f"{tally.test}: {feature} measured on {tally.measured[feature]} cases only "
                    f"(at least {fewest})\n{tally.report()}"
                )
                n = tally.measured[feature]
                assert share_bounds(tally.changed[feature], n)[1] >= least, (
                    f"{tally.test}: {feature} changed the result in {tally.changed[feature]} "
                    f"of {n} cases (at least {least:.0%} must, beyond sampling noise)\n{tally.report()}"
                )

        return run

    return decorate


TRUE: ast.Pred = ast.Compare("==", ast.Const(0), ast.Const(0))
FALSE: ast.Pred = ast.Compare("!=", ast.Const(0), ast.Const(0))
"""What a condition between events becomes when it is taken out: TRUE, or FALSE under a NOT
(so that the condition always holds)."""


def _map_patterns(p: ast.Pattern, f: Callable[[ast.Pattern], ast.Pattern]) -> ast.Pattern:
    """``p`` rebuilt bottom-up with ``f`` applied to every node."""
    changes = {
        name: _map_patterns(getattr(p, name), f)
        for name in ("pattern", "left", "right")
        if isinstance(getattr(p, name, None), ast.Pattern)
    }
    return f(replace(p, **changes) if changes else p)  # type: ignore[arg-type]


def _reads_other(expr: Any, var: str) -> bool:
    if isinstance(expr, ast.VarAttr):
        return expr.prev or expr.var != var
    return any(
        _reads_other(getattr(expr, name), var)
        for name in ("left", "right", "operand", "expr", "low", "high")
        if hasattr(expr, name)
    ) or any(_reads_other(v, var) for v in getattr(expr, "values", ()))


def _true_conditions(pred: ast.Pred, var: str, negated: bool = False) -> ast.Pred:
    if isinstance(pred, ast.PAnd | ast.POr):
        return replace(
            pred,
            left=_true_conditions(pred.left, var, negated),
            right=_true_conditions(pred.right, var, negated),
        )
    if isinstance(pred, ast.PNot):
        return replace(pred, operand=_true_conditions(pred.operand, var, not negated))
    if not _reads_other(pred, var):
        return pred
    return FALSE if negated else TRUE


def _true_filter(cond: ast.FilterExpr) -> ast.FilterExpr:
    if isinstance(cond, ast.FilterAtom):
        return replace(cond, pred=_true_conditions(cond.pred, cond.var))
    return replace(cond, left=_true_filter(cond.left), right=_true_filter(cond.right))


def _strip(p: ast.Pattern, feature: str) -> ast.Pattern:
    if feature == "UNLESS" and isinstance(p, ast.Unless):
        return p.left
    if feature == "nested selector" and isinstance(p, ast.Selector):
        return p.pattern
    if feature == "conditions" and isinstance(p, ast.Filter):
        return replace(p, condition=_true_filter(p.condition))
    return p


def has_unless(p: ast.Pattern) -> bool:
    found: list[bool] = []
    _map_patterns(p, lambda n: found.append(isinstance(n, ast.Unless)) or n)  # type: ignore[func-returns-value]
    return any(found)


def features_of(query: ast.Query) -> list[str]:
    """The features of ``query`` that :func:`without` can take out."""
    out: list[str] = []
    if query.select.strategy in ("STRICT", "NEXT", "LAST", "MAX"):
        out.append(query.select.strategy)
    if has_unless(query.where):
        out.append("UNLESS")
    if query.within is not None:
        out.append("WITHIN")
    if query.partition_by:
        out.append("PARTITION BY")
    if query.consume != "NONE":
        out.append("CONSUME BY")
    return out


def without(query: ast.Query, feature: str) -> ast.Query:
    """``query`` without ``feature`` (a strategy becomes ALL; conditions between events TRUE)."""
    if feature in ("STRICT", "NEXT", "LAST", "MAX"):
        return replace(query, select=replace(query.select, strategy="ALL"))
    if feature == "WITHIN":
        return replace(query, within=None)
    if feature == "PARTITION BY":
        return replace(query, partition_by=())
    if feature == "CONSUME BY":
        return replace(query, consume="NONE")
    if feature in ("UNLESS", "conditions", "nested selector"):
        return replace(query, where=_map_patterns(query.where, lambda p: _strip(p, feature)))
    raise ValueError(f"unknown feature {feature!r}")


def without_outer(p: ast.Pattern) -> ast.Pattern:
    """``p`` with every FILTER atom naming a variable its pattern does not bind taken out."""
    return _map_patterns(p, _without_outer_atoms)


def _without_outer_atoms(p: ast.Pattern) -> ast.Pattern:
    if not isinstance(p, ast.Filter):
        return p
    inner = binds(p.pattern)

    def keep(c: ast.FilterExpr) -> ast.FilterExpr | None:
        if isinstance(c, ast.FilterAnd):
            left, right = keep(c.left), keep(c.right)
            return left if right is None else right if left is None else replace(c, left=left, right=right)
        if isinstance(c, ast.FilterAtom):
            names = {c.var} | {r.var for r in _refs(c.pred)}
            return c if names <= inner else None
        return c

    cond = keep(p.condition)
    return p.pattern if cond is None else replace(p, condition=cond)


def _refs(node: object) -> list[ast.VarAttr]:
    if isinstance(node, ast.VarAttr):
        return [] if node.prev else [node]
    out: list[ast.VarAttr] = []
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(node, name, None)
        if child is not None:
            out += _refs(child)
    return out


def measure_feature(
    case: Case,
    expected: set[Any],
    features: list[str],
    stream_key: str | None = None,
) -> None:
    """Evaluate the case without one of ``features`` (the one measured least so far) on the
    oracle and record whether the result changed.  One extra evaluation per case keeps the cost
    flat; over a run every feature is measured about equally often."""
    tally = aim()
    if tally is None or not features:
        return
    query, events, times = case
    feature = min(features, key=lambda f: (tally.measured[f] + tally.unmeasured[f], f))
    variants = [without(query, feature)]
    if feature == "WITHIN":  # without a window the brute force may not finish: twice as wide
        variants.append(replace(query, within=wider(query.within)))
    for variant in variants:
        try:
            other = evaluate(variant, events, times=times, budget=MEASURE_BUDGET, stream_key=stream_key)
        except OracleBudgetExceeded:
            continue
        tally.record(feature, other != expected)
        return
    tally.unmeasured[feature] += 1


def measure_variant(
    case: Case, expected: set[Any], feature: str, other: ast.Query, stream_key: str | None = None
) -> None:
    """Record whether ``other`` (the case's query without ``feature``) gives another result on
    the oracle (unmeasured when it is too large for the brute force)."""
    tally = aim()
    if tally is None:
        return
    try:
        got = evaluate(other, case[1], times=case[2], budget=MEASURE_BUDGET, stream_key=stream_key)
    except OracleBudgetExceeded:
        tally.unmeasured[feature] += 1
        return
    tally.record(feature, got != expected)


MEASURE_BUDGET = 50_000
"""The oracle's budget for the query without a feature: a measure, not a check, kept cheap."""


def wider(within: ast.Window | None) -> ast.Window | None:
    """``within`` twice as wide (and one more): a window that cuts matches of the doubled one
    cuts matches of the query without a window too (under ALL; a rare strategy case aside)."""
    if isinstance(within, ast.EventsWindow):
        return ast.EventsWindow(2 * within.count + 1)
    if isinstance(within, ast.DurationWindow):
        return ast.DurationWindow(2 * within.nanos + 10**9)
    return within
