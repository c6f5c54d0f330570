"""Conditions between events: the SRT/RMA cases on the oracle and the engine, and the static checks."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

import kleene
from condition_cases import CASES, REJECTED, CondCase
from kleene.language import ast
from kleene.language.errors import QueryError
from kleene.language.parser import parse_query
from kleene.language.printer import to_ceql
from kleene.reference.oracle import evaluate
from strategies import condition_cases
from test_engine_vs_oracle import check_against_oracle, compile_case


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_on_oracle(case: CondCase) -> None:
    assert evaluate(parse_query(case.query), list(case.events)) == set(case.expected)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_on_oracle_unoptimised(case: CondCase) -> None:
    """Without the oracle's shortcuts (every variable tracked, no early window cut)."""
    got = evaluate(parse_query(case.query), list(case.events), optimise=False)
    assert got == set(case.expected)


@pytest.mark.parametrize("name,query,message", REJECTED, ids=[r[0] for r in REJECTED])
def test_rejected_with_position(name: str, query: str, message: str) -> None:
    with pytest.raises(QueryError) as info:
        kleene.compile(query)
    err = info.value
    assert message in err.message
    assert err.line == 1 and err.column >= 1
    assert "^" in str(err)


def test_error_points_at_the_reference() -> None:
    query = "SELECT *\nWHERE T as x ; H as y\nFILTER x[id = y.id]"
    with pytest.raises(QueryError) as info:
        kleene.compile(query)
    assert (info.value.line, info.value.column) == (3, 15)


def test_attribute_of_other_variable_is_checked_against_the_schema() -> None:
    query = (
        "CREATE STREAM S { EVENT T { id: int }, EVENT H { id: int, value: double } } "
        "SELECT * FROM S WHERE T as x ; H as y FILTER y[value > x.value]"
    )
    with pytest.raises(QueryError, match="unknown attribute 'value'"):
        kleene.compile(query)


def test_kinds_are_checked_across_events() -> None:
    query = (
        "CREATE STREAM S { EVENT T { id: int, name: string }, EVENT H { id: int } } "
        "SELECT * FROM S WHERE T as x ; H as y FILTER y[id = x.name]"
    )
    with pytest.raises(QueryError, match="cannot compare a number with a string"):
        kleene.compile(query)


def test_printer_round_trip() -> None:

    text = "SELECT * WHERE SELL as s ; (BUY as b)+ FILTER b[price > prev(b).price AND volume >= 2 * s.volume]"
    q = parse_query(text)
    assert parse_query(to_ceql(q)) == q


def run_engine(query: str, events: list[dict]) -> set[tuple[int, int, tuple[int, ...]]]:
    q = kleene.compile(query)
    got = [(m.start, m.end, m.positions) for m in q.matches(pa.Table.from_pylist(events))]
    assert len(got) == len(set(got)), "a complex event was output twice"
    return set(got)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_on_engine(case: CondCase) -> None:
    assert run_engine(case.query, [dict(e) for e in case.events]) == set(case.expected)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(condition_cases())
def test_register_engine_equals_oracle(case: tuple[ast.Query, list[dict], list[int]]) -> None:
    """Random queries with conditions between events: the register engine against the oracle."""
    query, events, times = case
    assert compile_case(query).engine == "registers"
    check_against_oracle(case)
