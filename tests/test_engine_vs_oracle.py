"""The engine against the brute-force oracle on random queries and streams.

Every generated case is a random query (all implemented constructs: `;`,
`:`, OR, `+`, `:+`, AS, FILTER with unary predicates, projection, PARTITION
BY, windows, CONSUME BY, LIMIT) rendered to CEQL text, and a random stream of
up to 30 events.  The engine must output exactly the oracle's set of complex
events, each once.  Hypothesis draws new cases on every run (no fixed seed),
so the suite explores more of the space over time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings

import kleene
from kleene.language import ast
from kleene.language.printer import to_ceql
from kleene.reference.oracle import OracleBudgetExceeded, evaluate
from strategies import STREAM_KEY, cases

Case = tuple[ast.Query, list[dict[str, Any]], list[int]]


def rows_of(events: list[dict[str, Any]], times: list[int]) -> list[dict[str, Any]]:
    return [dict(e, __t=t) for e, t in zip(events, times)]


def compile_case(query: ast.Query, stream_column: str | None = None, **tuning: Any) -> kleene.Query:
    """The case's query; ``tuning`` (kleene.planning.Tuning) picks another evaluation path."""
    q = kleene.compile(
        to_ceql(query), time_column="__t", time_unit="ns", stream_column=stream_column
    )
    return q.tuned(**tuning) if tuning else q


SUPPORTED_CEL = frozenset(
    {"not", "star", "and", "all", "unless", "STRICT", "NEXT", "LAST", "MAX"}
)
"""The constructs beyond the core language (all of them are evaluated by the engine)."""


def check_against_oracle(case: Case, stream_key: str | None = None, **tuning: Any) -> None:
    query, events, times = case
    try:
        expected = evaluate(query, events, times=times, budget=200_000, stream_key=stream_key)
    except OracleBudgetExceeded:
        return  # rare: a case too large for brute force
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


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(cases())
def test_engine_equals_oracle(case: Case) -> None:
    check_against_oracle(case)


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(cases(full_cel=SUPPORTED_CEL))
def test_engine_equals_oracle_whole_language(case: Case) -> None:
    """2,000 cases per run over the whole language: every operator and strategy."""
    check_against_oracle(case)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(cases(full_cel=SUPPORTED_CEL, with_streams=True))
def test_engine_equals_oracle_several_streams(case: Case) -> None:
    """Events of three named streams; FROM lists some of them; atoms may be qualified ``S>E``."""
    check_against_oracle(case, stream_key=STREAM_KEY)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_one_event_and_batch_apis_agree(case: Case) -> None:
    """push(event), push_batch(...) in uneven slices and run(table) give the same output."""
    query, events, times = case
    rows = rows_of(events, times)
    whole = [ce.to_dict() for ce in compile_case(query).run(pa.Table.from_pylist(rows))]
    one = compile_case(query)
    singles = [ce.to_dict() for row in rows for ce in one.push(row)]
    sliced = compile_case(query)
    pieces = []
    cut = [0, 1, 4, 9, 17, len(rows)]
    for lo, hi in zip(cut, cut[1:]):
        if lo < hi:
            pieces.extend(ce.to_dict() for ce in sliced.push_batch(pa.Table.from_pylist(rows[lo:hi])))
    assert singles == whole
    assert pieces == whole
