"""NEXT, LAST and MAX with a projection: the strategy on whole matches, then SELECT's projection.

The engine runs the strategy on ``SELECT *``'s automaton and replays each
chosen match to project it (runtime/projection.py); the oracle applies the
strategy to full matches, then projects (docs/cel-semantics.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import SUPPORTED_CEL, Case, aimed, check_against_oracle
from generators import cases


@aimed("NEXT", "LAST", "MAX")
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["NEXT", "LAST", "MAX"]).flatmap(lambda s: cases(full_cel=SUPPORTED_CEL, strategy=s)))
def test_strategy_with_projection_equals_oracle(case: Case) -> None:
    """Prints (``pytest -s``) and asserts how often the strategy changed the projected result."""
    query, events, times = case
    assume(query.select.items is not None)
    check_against_oracle((query, events, times), aim_at=[query.select.strategy])


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


# ------------------------------------------- with conditions between events (register engine)

STOCKS = [
    {"type": "SELL", "price": 10},  # 0
    {"type": "BUY", "price": 9},  # 1
    {"type": "BUY", "price": 8},  # 2
    {"type": "SELL", "price": 7},  # 3
    {"type": "SELL", "price": 12},  # 4
]
ISSUE = "FROM S WHERE SELL as a; BUY+ as b; SELL as c FILTER c[price < a.price] WITHIN 10 EVENTS"


def _stocks(query: str, rows: list[dict[str, object]] = STOCKS) -> list[tuple[int, int, tuple[int, ...]]]:
    compiled = kleene.compile(query)
    assert compiled.engine == "registers"
    got = compiled.matches(pa.Table.from_pylist(rows))
    return sorted((m.start, m.end, m.positions) for m in got)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        # Whole matches ending at 3: {0,1,3}, {0,2,3}, {0,1,2,3}; at 4 none (12 > 10).
        # NEXT, LAST and MAX all choose {0,1,2,3} (it wins where it differs from either other
        # match), and so does no strategy once projected on a, c: this case alone cannot tell
        # them apart (the next test can).
        ("NEXT", [(0, 3, (0, 3))]),
        ("LAST", [(0, 3, (0, 3))]),
        ("MAX", [(0, 3, (0, 3))]),
    ],
)
def test_issue_query_with_a_projection(strategy: str, expected: list[object]) -> None:
    assert _stocks(f"SELECT {strategy} a, c {ISSUE}") == expected


TWO_SELLS = [
    {"type": "SELL", "price": 10},  # 0
    {"type": "SELL", "price": 10},  # 1
    {"type": "BUY", "price": 9},  # 2
    {"type": "BUY", "price": 8},  # 3
    {"type": "SELL", "price": 5},  # 4
]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        # Whole matches ending at 4: a in {0, 1}, b a non-empty part of {2, 3}: six of them,
        # six projections on a, b.  NEXT keeps {0,2,3,4} (0 is the first difference with any
        # match starting at 1), LAST {1,2,3,4} (1 is the last difference), MAX both.  Every
        # strategy gives another result: one ignored, or swapped for another, shows here.
        ("ALL", [(0, 4, (0, 2)), (0, 4, (0, 2, 3)), (0, 4, (0, 3)),
                 (1, 4, (1, 2)), (1, 4, (1, 2, 3)), (1, 4, (1, 3))]),
        ("NEXT", [(0, 4, (0, 2, 3))]),
        ("LAST", [(1, 4, (1, 2, 3))]),
        ("MAX", [(0, 4, (0, 2, 3)), (1, 4, (1, 2, 3))]),
    ],
)  # fmt: skip
def test_issue_query_tells_the_strategies_apart(strategy: str, expected: list[object]) -> None:
    assert _stocks(f"SELECT {strategy} a, b {ISSUE}", TWO_SELLS) == expected


@pytest.mark.parametrize("strategy", ["NEXT", "LAST", "MAX"])
def test_projection_of_the_chosen_whole_match(strategy: str) -> None:
    # NEXT (earliest events first), LAST (latest first) and MAX all choose the whole
    # match {0,1,2,3}; its b events are {1,2}.
    assert _stocks(f"SELECT {strategy} b {ISSUE}") == [(0, 3, (1, 2))]


def test_register_engine_chooses_before_projecting() -> None:
    # Whole matches ending at 4: {0,2,4}, {0,3,4}, {1,2,4}, {1,3,4}, all projecting to
    # {4} on c.  NEXT keeps {0,2,4}, LAST {1,3,4}: the start of the complex event is the
    # chosen whole match's (choosing among projections could not tell them apart).
    rows = [
        {"type": "SELL", "price": 10},
        {"type": "SELL", "price": 10},
        {"type": "BUY", "price": 9},
        {"type": "BUY", "price": 9},
        {"type": "SELL", "price": 5},
    ]
    query = "SELECT {} c FROM S WHERE SELL as a; BUY as b; SELL as c FILTER c[price < a.price]"
    got = {}
    for strategy in ("NEXT", "LAST", "MAX"):
        compiled = kleene.compile(query.format(strategy))
        got[strategy] = sorted(
            (m.start, m.end, m.positions) for m in compiled.matches(pa.Table.from_pylist(rows))
        )
    assert got["NEXT"] == [(0, 4, (4,))]  # {0,2,4}
    assert got["LAST"] == [(1, 4, (4,))]  # {1,3,4}
    assert got["MAX"] == [(0, 4, (4,)), (1, 4, (4,))]  # all four are maximal


def test_register_engine_projects_every_valuation_of_the_chosen_match() -> None:
    # {0,1,2,3} is one whole match with two valuations (x = {1} or x = {2}); NEXT
    # chooses it over {0,1,3} and {0,2,3}, and each valuation gives its projection.
    rows = [{"type": t, "v": v} for t, v in [("A", 5), ("B", 0), ("B", 0), ("C", 1)]]
    query = (
        "SELECT NEXT x FROM S WHERE A as a ; ((B AS x ; B) OR (B ; B AS x)) ; C as c "
        "FILTER c[v < a.v]"
    )
    compiled = kleene.compile(query)
    assert compiled.engine == "registers"
    got = sorted((m.start, m.end, m.positions) for m in compiled.matches(pa.Table.from_pylist(rows)))
    assert got == [(0, 3, (1,)), (0, 3, (2,))]


def test_register_engine_strategy_with_projection_from_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kleene.cli import main

    data = tmp_path / "stocks.csv"
    data.write_text("type,price\n" + "".join(f"{r['type']},{r['price']}\n" for r in STOCKS))
    assert main(["run", f"SELECT MAX b {ISSUE}", "--input", str(data)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [(json.loads(x)["start"], json.loads(x)["positions"]) for x in lines] == [(0, [1, 2])]
