"""The Python API: every kind of source gives the same complex events."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import kleene

QUERY = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 3 EVENTS"
ROWS: list[dict[str, Any]] = [
    {"type": "SELL", "name": "MSFT", "price": 101.0},
    {"type": "BUY", "name": "ORCL", "price": 20.0},
    {"type": "SELL", "name": "IBM", "price": 50.0},
    {"type": "BUY", "name": "AAPL", "price": 300.0},
    {"type": "SELL", "name": "X", "price": 150.0},
    {"type": "BUY", "name": "Y", "price": 1.0},
]
EXPECTED = [(0, 1, (0, 1)), (0, 3, (0, 3)), (4, 5, (4, 5))]


class CapsuleStream:
    """A producer that exposes nothing but Arrow's PyCapsule stream, as polars and DuckDB do."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._table.__arrow_c_stream__(requested_schema)


def triples(events: Any) -> list[tuple[int, int, tuple[int, ...]]]:
    return [(ce.start, ce.end, ce.positions) for ce in events]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(ROWS, id="dicts"),
        pytest.param(iter(ROWS), id="iterator of dicts"),
        pytest.param(pa.Table.from_pylist(ROWS), id="table"),
        pytest.param(pa.Table.from_pylist(ROWS).to_batches(max_chunksize=2), id="batches"),
        pytest.param(pd.DataFrame(ROWS), id="pandas"),
        pytest.param(pa.Table.from_pylist(ROWS).to_reader(max_chunksize=4), id="reader"),
        pytest.param(CapsuleStream(pa.Table.from_pylist(ROWS)), id="arrow c stream"),
    ],
)
def test_every_source_gives_the_same_complex_events(source: Any) -> None:
    q = kleene.compile(QUERY)
    assert triples(q.run(source)) == EXPECTED
    assert triples(q.matches(pa.Table.from_pylist(ROWS))) == EXPECTED


def test_complex_event_carries_its_events() -> None:
    (first, *_) = kleene.compile(QUERY).run(ROWS)
    assert first.events == (ROWS[0], ROWS[1])
    assert first.to_dict() == {
        "start": 0,
        "end": 1,
        "positions": [0, 1],
        "events": [ROWS[0], ROWS[1]],
    }


def test_incremental_push_equals_run() -> None:
    q = kleene.compile(QUERY)
    pushed = [ce for row in ROWS for ce in q.push(row)]
    assert triples(pushed) == EXPECTED
    # the query's own state goes on: a new SELL and BUY continue the stream at position 6
    more = q.push_batch(pa.Table.from_pylist([{"type": "SELL", "name": "Z", "price": 120.0},
                                             {"type": "BUY", "name": "W", "price": 5.0}]))
    assert set(triples(more)) == {(6, 7, (6, 7)), (4, 7, (4, 7))}


def test_projection_and_partition_key() -> None:
    q = kleene.compile(
        "SELECT b[price] FROM S WHERE SELL as a; BUY as b PARTITION BY [name] WITHIN 10 EVENTS"
    )
    rows = [
        {"type": "SELL", "name": "A", "price": 1.0},
        {"type": "SELL", "name": "B", "price": 2.0},
        {"type": "BUY", "name": "A", "price": 3.0},
    ]
    (ce,) = q.run(rows)
    assert (ce.start, ce.end, ce.positions, ce.partition) == (0, 2, (2,), ("A",))
    assert ce.events == ({"type": "BUY", "price": 3.0},)
    assert ce.to_dict()["partition"] == {"name": "A"}  # keyed like Parquet's struct


def test_schema_from_create_stream() -> None:
    text = (
        "CREATE STREAM S { EVENT SELL { name:string, price:double }, "
        "EVENT BUY { name:string, price:double } }\n" + QUERY
    )
    assert triples(kleene.compile(text).run(ROWS)) == EXPECTED
    with pytest.raises(kleene.QueryError) as err:
        kleene.compile(text.replace("a[price > 100]", "a[volume > 100]"))
    assert err.value.line == 2 and "volume" in err.value.message


def test_unsupported_constructs_are_rejected_not_run() -> None:
    for text in (
        "SELECT * FROM S WHERE SELL AS s; NOT(BUY AS b FILTER b[price > prev(b).price]) ; SELL",
    ):
        with pytest.raises(kleene.UnsupportedError, match="not supported yet"):
            kleene.compile(text)


def test_time_window_needs_a_time_column() -> None:
    with pytest.raises(kleene.QueryError, match="time_column"):
        kleene.compile("SELECT * FROM S WHERE SELL; BUY WITHIN 5 seconds")


def test_session_with_explicit_positions() -> None:
    """Edges that number rows themselves (Spark: by time, then row id) pass positions."""
    q = kleene.compile(QUERY)
    session = q.session()
    table = pa.Table.from_pylist(ROWS)
    first = session.feed(table.slice(0, 3).to_batches()[0], positions=[10, 11, 15])
    rest = session.feed(table.slice(3).to_batches()[0], positions=[16, 20, 21])
    assert triples(first + rest) == [(10, 11, (10, 11)), (20, 21, (20, 21))]  # WITHIN 3 on positions
    with pytest.raises(kleene.KleeneError, match="increase"):
        session.feed(table.slice(0, 1).to_batches()[0], positions=[5])


def test_kleene_to_batches_is_the_one_source_normaliser() -> None:
    table = pa.Table.from_pylist(ROWS)
    for source in (ROWS, table, CapsuleStream(table), table.to_reader(), pd.DataFrame(ROWS)):
        got = pa.Table.from_batches(list(kleene.to_batches(source)))
        assert got.column("price").to_pylist() == table.column("price").to_pylist()
    with pytest.raises(kleene.KleeneError, match="Query.push"):
        list(kleene.to_batches(ROWS[0]))


def test_input_options_are_one_value_that_keywords_override() -> None:
    rows = [dict(r, t=1000 * i) for i, r in enumerate(ROWS)]
    timed = QUERY.replace("3 EVENTS", "2 seconds")
    options = kleene.InputOptions(time_column="t", time_unit="ms")
    by_value = kleene.compile(timed, options=options)
    by_keywords = kleene.compile(timed, time_column="t", time_unit="ms")
    assert by_value.options == by_keywords.options == options
    assert triples(by_value.run(rows)) == triples(by_keywords.run(rows)) == [(0, 1, (0, 1)), (4, 5, (4, 5))]
    # A keyword overrides the value's field: seconds make every event 1000 s apart.
    assert triples(kleene.compile(timed, options=options, time_unit="s").run(rows)) == []
    qs = kleene.compile_many({"a": timed}, options=options)
    assert qs.options == options
    with pytest.raises(kleene.KleeneError, match="time_column"):
        kleene.InputOptions(max_delay="1 seconds")


def test_strategy_with_projection_on_the_bulk_path() -> None:
    """NEXT with a projection projects each batch's chosen matches: match_batches (what
    `kleene run` uses) gives the same complex events as matches()."""
    q = kleene.compile("SELECT NEXT a FROM S WHERE SELL as a ; BUY as b")
    table = pa.Table.from_pylist(ROWS)
    expected = [(m.start, m.end, m.positions) for m in q.matches(table)]
    assert expected and all(len(p) == 1 for _, _, p in expected)
    got = [(m.start, m.end, m.positions) for b in q.match_batches(table.to_batches(max_chunksize=2)) for m in b.matches()]
    assert got == expected


def test_tuning_changes_the_path_not_the_result() -> None:
    q = kleene.compile(QUERY)
    plain = q.tuned(lookahead=False, skip_inert=False)
    assert plain.plan.tuning.lookahead is False and q.plan.tuning.lookahead is True
    assert triples(plain.matches(ROWS)) == triples(q.matches(ROWS)) == EXPECTED
    assert plain.last_session.engine.steps >= q.last_session.engine.steps
