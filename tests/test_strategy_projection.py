"""NEXT, LAST and MAX with a projection: the strategy on whole matches, then SELECT's projection.

The engine runs the strategy on ``SELECT *``'s automaton and replays each
chosen match to project it (runtime/projection.py); the oracle applies the
strategy to full matches, then projects (docs/cel-semantics.md).
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import kleene
from strategies import cases
from test_engine_vs_oracle import SUPPORTED_CEL, Case, check_against_oracle


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL), st.sampled_from(["NEXT", "LAST", "MAX"]))
def test_strategy_with_projection_equals_oracle(case: Case, strategy: str) -> None:
    query, events, times = case
    assume(query.select.items is not None)
    query = replace(query, select=replace(query.select, strategy=strategy))
    check_against_oracle((query, events, times))


def _run(query: str, types: str) -> list[tuple[int, int, tuple[int, ...]]]:
    rows = [{"type": t} for t in types.split()]
    return [(m.start, m.end, m.positions) for m in kleene.compile(query).matches(pa.Table.from_pylist(rows))]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [("NEXT", [(0, 2, (2,))]), ("LAST", [(1, 2, (2,))]), ("MAX", [(0, 2, (2,)), (1, 2, (2,))])],
)
def test_projection_keeps_the_chosen_match_start(strategy: str, expected: list[object]) -> None:
    # docs/cel-semantics.md: the strategy picks a full match, the projection keeps b only.
    assert sorted(_run(f"SELECT {strategy} b FROM S WHERE A AS a ; B AS b", "A A B")) == expected


def test_one_match_several_valuations() -> None:
    # {0,1} is one match with two valuations: x = {0} or x = {1}.
    query = "SELECT NEXT x FROM S WHERE (A AS x ; A) OR (A ; A AS x)"
    assert sorted(_run(query, "A A")) == [(0, 1, (0,)), (0, 1, (1,))]


def test_matches_projecting_alike_are_output_once() -> None:
    # MAX keeps {0,1,3} and {0,2,3}; SELECT a, c projects both to {0,3}.
    query = "SELECT MAX a, c FROM S WHERE A AS a ; (B OR C) AS b ; D AS c"
    assert _run(query, "A B C D") == [(0, 3, (0, 3))]


def test_select_none_after_a_strategy() -> None:
    assert _run("SELECT LAST NONE FROM S WHERE A ; B", "A A B") == [(1, 2, ())]
