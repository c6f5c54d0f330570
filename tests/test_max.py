"""SELECT MAX on its own evaluator (runtime/maximal.py) against the oracle."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
from hypothesis import HealthCheck, given, settings

import kleene
from kleene.language import ast
from kleene.runtime import maximal
from strategies import cases
from test_engine_vs_oracle import SUPPORTED_CEL, Case, check_against_oracle


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL))
def test_max_equals_oracle(case: Case) -> None:
    query, events, times = case
    query = replace(query, select=ast.Select("MAX", None))
    check_against_oracle((query, events, times))


def _positions(query: str, types: str) -> list[tuple[int, ...]]:
    rows = [{"type": t} for t in types.split()]
    return [m.positions for m in kleene.compile(query).matches(pa.Table.from_pylist(rows))]


def test_dominated_run_comes_back_when_its_dominator_leaves_the_window() -> None:
    # At 3 the window is [1, 3]: {0,1,2,3} is out, so {1,2,3} is maximal; at 4 only {2,4} is inside.
    query = "SELECT MAX * FROM S WHERE A+ ; B WITHIN 2 EVENTS"
    assert _positions(query, "A A A B B") == [(1, 2, 3), (2, 4)]
    assert _positions(query, "A A A B A B") == [(1, 2, 3), (4, 5)]


def test_same_start_super_run_kills_for_good() -> None:
    # {0,2,3} is dominated by {0,1,2,3}, which leaves the window with it.
    assert _positions("SELECT MAX * FROM S WHERE A ; B+ ; C", "A B B C") == [(0, 1, 2, 3)]


def test_the_maximal_evaluator_is_used() -> None:
    q = kleene.compile("SELECT MAX * FROM S WHERE A ; B+ ; C WITHIN 5 EVENTS")
    session = q.session()
    session.feed(pa.Table.from_pylist([{"type": "A"}]).to_batches()[0])
    assert isinstance(session.engine.single, maximal.MaxEvaluator)
