"""Conditions between events: the SRT/RMA cases on the oracle and the engine, and the static checks."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import aimed, check_against_oracle, check_push_and_batches, compile_case
from condition_cases import CASES, REJECTED, S2, CondCase
from generators import (
    aimed_condition_cases,
    aimed_conjunction_cases,
    condition_cases,
    conjunction_cases,
    pair_cases,
)
from kleene.language import ast
from kleene.language.errors import QueryError
from kleene.language.parser import parse_query
from kleene.language.printer import to_ceql
from kleene.reference.oracle import evaluate


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
    query = "SELECT *\nWHERE (T as x)+ ; H as y\nFILTER x[id = y.id]"
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


# Conditions changed the result in 9% of the cases before the generators aimed, 33% with random
# streams; the stream is now drawn from the query (generators.planted_streams: matches of the
# pattern planted in it, so that the conditions decide), and prev(x) only where x can bind.
@aimed("conditions")
@settings(max_examples=320, deadline=None, suppress_health_check=list(HealthCheck))  # 700 on random streams (planted ones cost more)
@given(aimed_condition_cases())
def test_register_engine_equals_oracle(case: tuple[ast.Query, list[dict], list[int]]) -> None:
    """Random queries with conditions between events: the register engine against the oracle.

    Prints (``pytest -s``) and asserts how often the conditions between events changed the
    result: the same query with each of them replaced by TRUE, on the oracle.
    """
    query, events, times = case
    assert compile_case(query).engine == "registers"
    check_against_oracle(case, aim_at=["conditions"])


# 4% before the generators aimed, 13% with random streams (an AND of two random sides rarely
# matched both): the stream is drawn from the query as above.
@aimed("conditions")
@settings(max_examples=160, deadline=None, suppress_health_check=list(HealthCheck))  # 350 on random streams
@given(aimed_conjunction_cases())
def test_register_engine_and_all_unless_equal_oracle(
    case: tuple[ast.Query, list[dict], list[int]],
) -> None:
    """AND, ALL and UNLESS with conditions between events (inside a side, or around them)."""
    query, events, times = case
    assert compile_case(query).engine == "registers"
    check_against_oracle(case, aim_at=["conditions"])


# ------------------------------------------------------------ engine choice


def test_engine_choice_and_explain() -> None:
    unary = kleene.compile("SELECT * WHERE SELL as a ; BUY as b FILTER a[price > 100]")
    assert unary.engine == "tecs"
    assert "unary" in unary.explain()
    nary = kleene.compile("SELECT * WHERE SELL as a ; BUY as b FILTER a[price > 100] AND b[price < a.price]")
    assert nary.engine == "registers"
    text = nary.explain()
    assert "engine: registers" in text and "b[(price < a.price)]" in text and "registers: a" in text
    assert "runtime: runs" in text  # no window: no pair join
    # x.attr inside x[...] is the event itself: still unary.
    assert kleene.compile("SELECT * WHERE SELL as a FILTER a[a.price > 1]").engine == "tecs"


def test_cli_explain(capsys: pytest.CaptureFixture[str]) -> None:
    from kleene.cli import main

    assert main(["explain", "SELECT * WHERE T as x ; H as y FILTER y[id = x.id]"]) == 0
    assert "engine: registers" in capsys.readouterr().out
    assert main(["explain", "SELECT * WHERE (T as x)+ ; H as y FILTER x[id = y.id]"]) == 2
    assert "not bound yet" in capsys.readouterr().err


def test_cli_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from condition_cases import PHI1, S1
    from kleene.cli import main

    data = tmp_path / "s1.csv"
    data.write_text("type,id,value\n" + "".join(f"{e['type']},{e['id']},{e['value']}\n" for e in S1))
    assert main(["run", PHI1, "--input", str(data)]) == 0
    got = {tuple(json.loads(line)["positions"]) for line in capsys.readouterr().out.splitlines()}
    assert got == {(0, 3), (0, 4), (1, 3), (1, 4)}


def test_cli_and_api_run_all_and_unless_with_conditions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from kleene.cli import main

    rows = [
        {"type": "SELL", "price": 10, "volume": 0},
        {"type": "NEWS", "price": 0, "volume": 0},
        {"type": "BUY", "price": 9, "volume": 200},
        {"type": "BUY", "price": 11, "volume": 300},
    ]
    data = tmp_path / "stocks.csv"
    data.write_text(
        "type,price,volume\n" + "".join(f"{r['type']},{r['price']},{r['volume']}\n" for r in rows)
    )
    queries = {
        # The NEWS anywhere around a SELL followed by a cheaper BUY.
        "SELECT * FROM S WHERE (SELL as s ; BUY as b FILTER b[price < s.price]) ALL NEWS": [
            (0, 2, [0, 1, 2])
        ],
        # The same two events seen by both sides; the volume condition on the right side.
        "SELECT MAX b FROM S WHERE (SELL as s ; BUY as b FILTER b[price < s.price]) AND "
        "(SELL ; BUY as v FILTER v[volume > 100])": [(0, 2, [2])],
        # Unless a NEWS comes in between: the BUY at 3 is too expensive anyway.
        "SELECT * FROM S WHERE (SELL as s ; BUY as b FILTER b[price > s.price]) UNLESS NEWS": [],
        "SELECT * FROM S WHERE (SELL as s ; BUY as b FILTER b[price < s.price]) UNLESS "
        "(BUY as x FILTER x[volume > 250])": [(0, 2, [0, 2])],
    }
    for text, expected in queries.items():
        assert main(["run", text, "--input", str(data)]) == 0
        out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [(o["start"], o["end"], o["positions"]) for o in out] == expected
        compiled = kleene.compile(text)
        assert compiled.engine == "registers"
        got = [(m.start, m.end, list(m.positions)) for m in compiled.matches(pa.Table.from_pylist(rows))]
        assert got == expected


def test_only_relevant_events_are_visited() -> None:
    """The unary parts are a vectorized prefilter: other events never reach the runs."""
    q = kleene.compile(
        "SELECT * WHERE SELL as a ; BUY+ as b FILTER a[price > 100] AND b[price < a.price] "
        "WITHIN 6 EVENTS"
    )
    rows = [{"type": "SELL" if i % 2 else "BUY", "price": (i * 37) % 200} for i in range(400)]
    session = q.session()
    got = session.feed(pa.RecordBatch.from_pylist(rows), with_events=False)
    expected = evaluate(q.ast, rows)
    assert {(m.start, m.end, m.positions) for m in got} == expected
    relevant = sum(1 for r in rows if r["type"] == "BUY" or r["price"] > 100)
    assert session.engine.steps == relevant < len(rows)
    assert "only events some transition accepts are visited" in q.explain()


def test_with_unless_every_event_is_visited_and_explain_says_so() -> None:
    """UNLESS's monitors may start on any event, so the prefilter does not skip events; the
    engine's count of visited events and ``explain`` agree."""
    q = kleene.compile(
        "SELECT * WHERE (SELL as a ; BUY as b FILTER b[price < a.price]) UNLESS HOLD WITHIN 6 EVENTS"
    )
    rows = [{"type": ("SELL", "BUY", "HOLD", "NONE")[i % 4], "price": (i * 37) % 200} for i in range(400)]
    session = q.session()
    got = session.feed(pa.RecordBatch.from_pylist(rows), with_events=False)
    assert {(m.start, m.end, m.positions) for m in got} == evaluate(q.ast, rows)
    assert session.engine.steps == len(rows)
    assert "every event visited (UNLESS" in q.explain()


def test_partitions_consume_and_limit() -> None:
    text = "SELECT * WHERE T as x ; H as y FILTER y[value > x.value] PARTITION BY [id] CONSUME BY PARTITION"
    rows = [dict(e) for e in S2]
    got = run_engine(text, rows)
    assert got == evaluate(parse_query(text), rows)
    limited = kleene.compile(text.replace("CONSUME BY PARTITION", "LIMIT 1"))
    per_end = [m.end for m in limited.matches(pa.Table.from_pylist(rows))]
    assert len(per_end) == len(set(per_end))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(condition_cases(), conjunction_cases()))
def test_push_and_batches_agree(case: tuple[ast.Query, list[dict], list[int]]) -> None:
    """push(event), push_batch(...) in uneven slices and run(table) give the same output."""
    check_push_and_batches(case, [1, 4, 9])


@aimed()
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(pair_cases())
def test_pair_join_equals_oracle(case: tuple[ast.Query, list[dict], list[int]]) -> None:
    """Two-event patterns run on the vectorized pair join (kleene.registers.pairs)."""
    compiled = compile_case(case[0])
    assert compiled.session().engine.pairs is not None  # type: ignore[attr-defined]
    check_against_oracle(case)


def test_pair_join_across_batches() -> None:
    """The window index carries first events over batch boundaries."""
    query = "SELECT * WHERE SELL as a ; BUY as b FILTER b[price < a.price] WITHIN 5 EVENTS"
    rows = [{"type": "SELL" if (i * 7) % 3 else "BUY", "price": (i * 37) % 50} for i in range(200)]
    q = kleene.compile(query)
    assert q.session().engine.pairs is not None  # type: ignore[attr-defined]
    got = [(m.start, m.end, m.positions) for m in q.matches(pa.Table.from_pylist(rows).to_batches(7))]
    assert len(got) == len(set(got))
    assert [m[1] for m in got] == sorted(m[1] for m in got)
    assert set(got) == evaluate(parse_query(query), rows)


def test_runs_of_idle_partitions_leave_with_the_window() -> None:
    """Keys seen once must not keep their runs: a sweep drops what left the window."""
    from kleene.registers import runtime

    q = kleene.compile(
        "SELECT * WHERE T as x ; H+ as y FILTER y[value > x.value] PARTITION BY [id] WITHIN 5 EVENTS"
    )
    rows = [{"type": "T", "id": i, "value": 1} for i in range(3 * runtime.SWEEP_STEPS)]
    session = q.session()
    session.feed(pa.RecordBatch.from_pylist(rows), with_events=False)
    engine = session.engine
    assert isinstance(engine, runtime.RegisterEngine)
    assert sum(len(r) for r in engine.runs.values()) <= runtime.SWEEP_STEPS + 10


# SRT T16 (benchmark smoke test): the paper's stock pattern shapes, engine against oracle, on
# synthetic ticks where the three names stand for INTC, RIMM and QQQ.
T16 = {
    "seq3": "SELECT * WHERE SELL as a ; BUY as b ; BUY as c FILTER a[name = 'I'] AND b[name = 'R'] "
    "AND c[name = 'Q' AND price > a.price] WITHIN 12 EVENTS",
    "k3": "SELECT * WHERE SELL as a ; (BUY as b)+ ; BUY as c FILTER a[name = 'I'] AND "
    "b[name = 'R' AND price < 500] AND c[name = 'Q' AND price > a.price] WITHIN 10 EVENTS",
    "kn4": "SELECT * WHERE SELL as a ; (BUY as b ; (BUY as c)+)+ ; SELL as d FILTER a[name = 'I'] "
    "AND b[name = 'R'] AND c[name = 'Q'] AND d[name = 'M' AND price < a.price] WITHIN 10 EVENTS",
}


@pytest.mark.parametrize("name", sorted(T16))
def test_srt_t16_stock_patterns(name: str) -> None:
    import random

    rng = random.Random(17)
    rows = [
        {"type": rng.choice(["BUY", "SELL"]), "name": rng.choice("IRQM"), "price": rng.randint(1, 99)}
        for _ in range(150)
    ]
    expected = evaluate(parse_query(T16[name]), rows)
    assert expected, "the stream should produce complex events"
    assert run_engine(T16[name], rows) == expected


def test_bad_rows_read_by_conditions() -> None:
    """An attribute a condition reads must be valid on the events it reads it from."""
    from kleene.language.errors import DataError

    text = "SELECT * WHERE SELL as a ; BUY as b FILTER b[volume > 1 AND price < a.price] WITHIN 5 EVENTS"
    rows = [
        {"type": "SELL", "price": 10.0, "volume": 1},
        {"type": "BUY", "price": 5.0, "volume": 2},
        {"type": "SELL", "price": None, "volume": 3},  # a's price is read: bad row
    ]
    with pytest.raises(DataError) as info:
        list(kleene.compile(text).matches(pa.Table.from_pylist(rows)))
    assert info.value.row == 2 and info.value.column == "price"
    skipping = kleene.compile(text, on_bad_row="skip")
    got = [(m.start, m.end, m.positions) for m in skipping.matches(pa.Table.from_pylist(rows))]
    assert got == [(0, 1, (0, 1))]
    assert skipping.bad_rows.count == 1


def test_streams_and_several_queries() -> None:
    """S>E in a condition query (stream bits after the predicates), run alone and with others."""
    import random

    rng = random.Random(5)
    rows = [
        {"type": rng.choice("TH"), "id": rng.randint(1, 3), "value": rng.randint(0, 9),
         "src": rng.choice(["P", "Q"])}
        for _ in range(60)
    ]
    texts = {
        "related": "SELECT * FROM P, Q WHERE P>T as x ; NOT(Q>H) ; Q>T as y "
        "FILTER y[id = x.id] WITHIN 6 EVENTS",
        "pairs": "SELECT * FROM P, Q WHERE P>T as x ; Q>H as y FILTER y[value > x.value] "
        "WITHIN 4 EVENTS",
        "unary": "SELECT * FROM Q WHERE T as x ; H as y FILTER x[value > 5] WITHIN 3 EVENTS",
    }
    together = kleene.compile_many(texts, stream_column="src")
    got: dict[str, list[tuple[int, int, tuple[int, ...]]]] = {name: [] for name in texts}
    for m in together.matches(rows):
        got[m.query].append((m.start, m.end, m.positions))
    for name, text in texts.items():
        alone = kleene.compile(text, stream_column="src")
        assert alone.engine == ("tecs" if name == "unary" else "registers")
        assert got[name] == [(m.start, m.end, m.positions) for m in alone.matches(rows)]
        expected = evaluate(parse_query(text), rows, stream_key="src")
        assert expected, name
        assert set(got[name]) == expected, name


def test_several_queries_check_attributes_of_conditions() -> None:
    """compile_many sets aside the rows a condition between events cannot read, as compile does."""
    text = "SELECT * WHERE SELL as a ; BUY as b FILTER b[price < a.price] WITHIN 5 EVENTS"
    rows = [
        {"type": "SELL", "price": 10.0},
        {"type": "BUY", "price": 5.0},
        {"type": "SELL", "price": None},
        {"type": "BUY", "price": 1.0},
    ]
    qs = kleene.compile_many({"c": text, "u": "SELECT * WHERE BUY"}, on_bad_row="skip")
    got = [(m.query, m.start, m.end, m.positions) for m in qs.matches(pa.Table.from_pylist(rows))]
    assert [g for g in got if g[0] == "c"] == [("c", 0, 1, (0, 1)), ("c", 0, 3, (0, 3))]
    assert [g[3] for g in got if g[0] == "u"] == [(1,), (3,)]
