"""UNLESS without the limit of 10 atoms on its right side (issue 18, item 3): the tECS
construction splits transitions only where the negated side's outcome differs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

import kleene
from against_oracle import aimed, check_against_oracle, feature_changed
from generators import unless_atoms, wide_unless_cases
from kleene.language import ast


@pytest.mark.parametrize(
    "negated",
    [
        "B FILTER " + " AND ".join(f"B[v != {i}]" for i in range(11)),  # once over the limit of 10
        " OR ".join(f"(B FILTER B[v = {i}])" for i in range(16)),
        " OR ".join(f"T{i}" for i in range(30)) + " OR (B ; C FILTER C[v > 3])",
        "(B FILTER B[v > 2]) ; (B FILTER B[v > 5]) ; (C FILTER C[v < 9])",
    ],
)
def test_unless_with_many_predicates(negated: str) -> None:
    """UNLESS splits its transitions only where the negated side's outcome differs (issue 18:
    no limit of 10 atoms); the result is the oracle's."""
    import random

    from kleene.language.parser import parse_query
    from kleene.reference.oracle import evaluate

    rng = random.Random(7)
    rows = [{"type": rng.choice("ABC"), "v": rng.randint(0, 15)} for _ in range(40)]
    text = f"SELECT * FROM S WHERE A ; A UNLESS ({negated})"
    got = {(m.start, m.end, m.positions) for m in kleene.compile(text).matches(rows)}
    assert got == evaluate(parse_query(text), rows)
    assert got != evaluate(parse_query("SELECT * FROM S WHERE A ; A"), rows)  # UNLESS mattered


def test_unless_whose_automaton_grows_stops_at_max_states() -> None:
    """22 steps of distinct predicates on the right of UNLESS: the subsets of its runs grow
    exponentially; the construction stops with a LimitError naming --max-states."""
    negated = " ; ".join(f"(B FILTER B[v > {i}])" for i in range(22))
    with pytest.raises(kleene.LimitError, match="--max-states"):
        kleene.compile(f"SELECT * FROM S WHERE A ; A UNLESS ({negated})", max_states=20_000)


@aimed("UNLESS")
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(wide_unless_cases())
def test_wide_unless_equals_oracle(case: tuple[ast.Query, list[dict], list[int]]) -> None:
    """UNLESS over many predicates (issue 18: once at most 10) on the tECS engine, against the
    oracle.  Prints how often UNLESS changed the result (asserted: a third) and how often the
    right side tests more than 10 atoms."""
    query, _, _ = case
    feature_changed("more than 10 atoms right of UNLESS", unless_atoms(query.where) > 10)
    check_against_oracle(case, aim_at=["UNLESS"])
