"""Conditions in any order (issue 18, item 3): a condition over single events is accepted on any
of its variables and evaluated when the last of them is bound (docs/semantics.md, "Conditions
between events")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import kleene
from against_oracle import aimed, check_against_oracle, compile_case
from generators import across_cases, earlier_variable_cases
from kleene.language import ast
from kleene.language.conditions import atoms, on_later_variables, problem, var_attrs
from kleene.language.errors import QueryError
from kleene.language.parser import parse_query
from kleene.reference.oracle import evaluate

EARLY = "SELECT * FROM S WHERE SELL as a ; BUY as b ; SELL as c FILTER a[2 * c.price >= price]"
LATE = "SELECT * FROM S WHERE SELL as a ; BUY as b ; SELL as c FILTER c[2 * price >= a.price]"
ROWS = [
    {"type": t, "price": p}
    for t, p in [("SELL", 10), ("BUY", 3), ("SELL", 4), ("SELL", 6), ("BUY", 1), ("SELL", 2)]
]


def _matches(text: str) -> set[tuple[int, int, tuple[int, ...]]]:
    return {(m.start, m.end, m.positions) for m in kleene.compile(text).matches(ROWS)}


def test_condition_on_the_earlier_variable_means_the_same() -> None:
    got = _matches(EARLY)
    assert got == _matches(LATE) == evaluate(parse_query(EARLY), ROWS)
    assert (0, 3, (0, 1, 3)) in got and (0, 2, (0, 1, 2)) not in got  # 2 * 4 < 10 <= 2 * 6
    assert "evaluated on the variable bound last" in kleene.compile(EARLY).explain()


def test_moved_onto_the_last_of_three_variables() -> None:
    where = parse_query(
        "SELECT * WHERE A as a ; B as b ; C as c FILTER b[v < a.v + c.v]"
    ).where
    moved = on_later_variables(where)
    assert isinstance(moved, ast.Filter) and isinstance(moved.condition, ast.FilterAtom)
    assert moved.condition.var == "c"
    assert {(r.var, r.name) for r in var_attrs(moved.condition.pred)} == {("a", "v"), ("b", "v")}


def test_cli_accepts_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kleene.cli import main

    data = tmp_path / "s.csv"
    data.write_text("type,price\n" + "".join(f"{r['type']},{r['price']}\n" for r in ROWS))
    assert main(["run", EARLY, "--input", str(data)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert len(lines) == len(_matches(LATE)) > 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # x binds several events: "every x before y" needs all of them kept for y's arrival.
        (
            "SELECT * WHERE (T as x)+ ; H as y FILTER x[id = y.id]",
            "'x' is bound to several events, so the condition cannot be moved onto 'y'",
        ),
        # x and y are the same event: no variable is bound after the other.
        (
            "SELECT * WHERE (T as x) as y FILTER y[id = x.id]",
            "no variable of the condition is matched after all the others",
        ),
    ],
)
def test_still_refused_where_no_variable_comes_last(
    text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from kleene.cli import main

    with pytest.raises(QueryError) as info:
        kleene.compile(text)
    assert message in info.value.message
    assert main(["explain", text]) == 2
    assert message in capsys.readouterr().err


def _needs_the_move(where: ast.Pattern) -> bool:
    """Some condition reads a variable bound after the one it is written on."""
    if isinstance(where, ast.Filter):
        for atom in atoms(where.condition):
            if any(problem(where.pattern, atom, r, movable=False) for r in var_attrs(atom.pred)):
                return True
    return any(
        _needs_the_move(getattr(where, name))
        for name in ("pattern", "left", "right")
        if isinstance(getattr(where, name, None), ast.Pattern)
    )


@aimed("conditions")
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(earlier_variable_cases())
def test_earlier_variable_conditions_equal_oracle(case: tuple[ast.Query, list[dict], list[int]]) -> None:
    """Random queries whose condition is written on an earlier variable than one it reads: the
    engine (which moves it) against the oracle (which evaluates it as written).  Prints and
    asserts how often the condition changed the result (at least a third)."""
    query, _, _ = case
    assert _needs_the_move(query.where)
    assert compile_case(query).engine == "registers"
    check_against_oracle(case, aim_at=["conditions"])


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM S WHERE (SELL as a ALL BUY as b) FILTER b[price < a.price]",
        "SELECT * FROM S WHERE ((SELL as a ; BUY) AND (SELL ; BUY as b)) FILTER a[price > 2 * b.price + 3]",
        "SELECT * FROM S WHERE (SELL as a ALL (SELL OR BUY) as b) FILTER b[price >= a.price]",
    ],
)
def test_across_and_all_in_either_order(text: str) -> None:
    """One event on each side of AND/ALL: the condition is decided by whichever comes second
    (or on the one event both are), as the oracle's valuation semantics says."""
    got = _matches(text)
    assert got == evaluate(parse_query(text), ROWS)
    unconditioned = text.split(" FILTER")[0]
    assert got != _matches(unconditioned)  # the condition decided something


def test_across_in_both_orders_is_seen() -> None:
    text = "SELECT * FROM S WHERE (SELL as a ALL BUY as b) FILTER b[price < a.price]"
    got = _matches(text)
    assert (0, 1, (0, 1)) in got  # SELL 10 then BUY 3: decided by the BUY
    assert (1, 2, (1, 2)) in got  # BUY 3 then SELL 4: decided by the SELL
    assert (1, 5, (1, 5)) not in got  # BUY 3 then SELL 2: 3 < 2 fails on the SELL


@aimed("conditions")
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(across_cases())
def test_across_conditions_equal_oracle(case: tuple[ast.Query, list[dict], list[int]]) -> None:
    """Conditions between the sides of AND/ALL, one event each: engine against oracle, and how
    often the condition changed the result (at least a third)."""
    query, _, _ = case
    assert compile_case(query).engine == "registers"
    check_against_oracle(case, aim_at=["conditions"])

