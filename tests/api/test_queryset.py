"""Several queries in one pass (kleene.compile_many): each gives exactly what it gives alone.

The property test draws two or three random queries (the whole CEL language
the engine evaluates, on one stream or on three named streams) and one
random stream, and checks that the QuerySet's complex events of each query
are exactly those of the query run alone (same events, same order) and the
oracle's.  Unit tests cover naming, the shared predicate table (evaluated
once per batch, counted), bad rows and max_delay.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import SUPPORTED_CEL, rows_of
from generators import STREAM_KEY, iteration_depth, queries, streams
from kleene.io.badrows import BadRowPolicy
from kleene.language import ast
from kleene.language.printer import to_ceql
from kleene.predicates.table import PredicateTable
from kleene.reference.oracle import OracleBudgetExceeded, evaluate

Event = dict[str, Any]


def runnable(q: ast.Query) -> ast.Query:
    """NEXT/LAST/MAX take no projection yet (test_query_errors): run them as SELECT *."""
    if q.select.strategy in ("NEXT", "LAST", "MAX") and q.select.items is not None:
        return replace(q, select=replace(q.select, items=None))
    return q


@st.composite
def query_sets(draw: st.DrawFn) -> tuple[list[ast.Query], list[Event], list[int], bool]:
    with_streams = draw(st.booleans())
    count = draw(st.integers(2, 3))
    qs = [runnable(draw(queries(3, SUPPORTED_CEL, with_streams))) for _ in range(count)]
    depth = max(iteration_depth(q.where) for q in qs)
    size = (24, 16, 12, 10)[min(depth, 3)]
    n = draw(st.integers(size // 2, size))
    evs, times = draw(streams(max_size=n, min_size=n, with_streams=with_streams))
    return qs, evs, times, with_streams


def options(with_streams: bool) -> dict[str, Any]:
    return {
        "time_column": "__t",
        "time_unit": "ns",
        "stream_column": STREAM_KEY if with_streams else None,
    }


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(query_sets())
def test_together_equals_alone_and_oracle(case: tuple[list[ast.Query], list[Event], list[int], bool]) -> None:
    qs, events, times, with_streams = case
    rows = rows_of(events, times)
    texts = {f"q{i}": to_ceql(q) for i, q in enumerate(qs)}
    together = kleene.compile_many(texts, **options(with_streams))
    got: dict[str, list[tuple[int, int, tuple[int, ...]]]] = defaultdict(list)
    ends = []
    for m in together.matches(rows):
        got[m.query].append((m.start, m.end, m.positions))
        ends.append(m.end)
    assert ends == sorted(ends), "complex events come in order of end position"
    for (name, text), q in zip(texts.items(), qs, strict=True):
        alone = kleene.compile(text, **options(with_streams))
        assert got[name] == [(m.start, m.end, m.positions) for m in alone.matches(rows)]
        try:
            expected = evaluate(
                q, events, times=times, budget=100_000,
                stream_key=STREAM_KEY if with_streams else None,
            )
        except OracleBudgetExceeded:
            continue
        if q.limit is None:
            assert set(got[name]) == expected
        else:
            assert set(got[name]) <= expected


STOCK = [
    {"type": "SELL", "name": "MSFT", "price": 101, "t": 0},
    {"type": "BUY", "name": "ORCL", "price": 20, "t": 1},
    {"type": "SELL", "name": "IBM", "price": 50, "t": 2},
    {"type": "BUY", "name": "AAPL", "price": 300, "t": 3},
    {"type": "SELL", "name": "X", "price": 150, "t": 4},
    {"type": "BUY", "name": "Y", "price": 1, "t": 5},
]

THREE = {
    "sell_buy": "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS",
    "cheap_buy": "SELECT * FROM S WHERE BUY FILTER BUY[price < 100]",
    "runs": "SELECT MAX * FROM S WHERE SELL as a; BUY+ as b FILTER a[price > 100] WITHIN 4 EVENTS",
}


def test_names_from_headers_keys_and_positions() -> None:
    qs = kleene.compile_many(
        ["QUERY first: SELECT * WHERE A\nSELECT * WHERE B", "SELECT * WHERE C"]
    )
    assert qs.names == ["first", "q2", "q3"]
    qs = kleene.compile_many({"f": "SELECT * WHERE A\nQUERY g: SELECT * WHERE B", "h": "SELECT * WHERE C"})
    assert qs.names == ["f#1", "g", "h"]


def test_duplicate_names_are_query_errors() -> None:
    with pytest.raises(kleene.QueryError, match="two queries are named 'a'") as err:
        kleene.compile_many("QUERY a: SELECT * WHERE A\nQUERY a: SELECT * WHERE B")
    assert err.value.line == 2


def test_compile_rejects_several_queries() -> None:
    with pytest.raises(kleene.QueryError, match="holds 2 queries; compile them together"):
        kleene.compile("SELECT * WHERE A SELECT * WHERE B")


def test_shared_predicate_table_is_evaluated_once_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = PredicateTable.evaluate

    def counting(self: PredicateTable, batch: pa.RecordBatch) -> Any:
        calls.append(batch.num_rows)
        return original(self, batch)

    monkeypatch.setattr(PredicateTable, "evaluate", counting)
    table = pa.Table.from_pylist(STOCK * 3)
    batches = table.to_batches(max_chunksize=6)
    assert len(batches) == 3
    qs = kleene.compile_many(THREE)
    # SELL, BUY, price > 100, price < 100: four distinct atoms for three queries.
    assert [g.predicates.width for g in qs.groups] == [4]
    together = list(qs.matches(batches))
    assert len(calls) == 3  # one evaluation per batch for all three queries
    calls.clear()
    alone = [list(kleene.compile(t).matches(batches)) for t in THREE.values()]
    assert len(calls) == 9
    for name, found in zip(THREE, alone, strict=True):
        assert [m[1:] for m in together if m.query == name] == [tuple(m) for m in found]


def test_union_beyond_64_atoms_spans_several_words() -> None:
    texts = [
        f"SELECT * WHERE (A FILTER A[v > {i}]) ; (B FILTER B[w < {i}])" for i in range(40)
    ]
    qs = kleene.compile_many(texts)
    (group,) = qs.groups
    assert group.predicates.width == 82 and len(group.predicates.tables) == 2
    rows = [{"type": "AB"[i % 2], "v": i % 50, "w": (7 * i) % 50} for i in range(60)]
    got: dict[str, list[Any]] = defaultdict(list)
    for m in qs.matches(rows):
        got[m.query].append(m[1:])
    for name, text in zip(qs.names, texts, strict=True):
        assert got[name] == [tuple(m) for m in kleene.compile(text).matches(rows)]


def test_run_push_and_output_carry_the_query_name() -> None:
    qs = kleene.compile_many(THREE)
    whole = [ce.to_dict() for ce in qs.run(STOCK)]
    pushed = [ce.to_dict() for e in STOCK for ce in qs.push(e)]
    assert pushed == whole
    assert {d["query"] for d in whole} == set(THREE)
    assert list(whole[0]) == ["query", "start", "end", "positions", "events"]


def test_a_bad_row_is_set_aside_only_for_the_queries_that_read_it() -> None:
    rows = [dict(r) for r in STOCK]
    rows[3]["price"] = None  # BUY AAPL: cheap_buy and sell_buy never read BUY's price
    policy = BadRowPolicy("skip")
    qs = kleene.compile_many(THREE, on_bad_row=policy)
    got = defaultdict(list)
    for m in qs.matches(rows):
        got[m.query].append(m[1:])
    for name, text in THREE.items():
        alone = kleene.compile(text, on_bad_row="skip")
        assert got[name] == [tuple(m) for m in alone.matches(rows)]
    assert policy.count == 1  # handed over once, though one query set it aside


def test_max_delay_is_shared() -> None:
    rows = [STOCK[1], STOCK[0], *STOCK[2:]]  # one second out of order
    qs = kleene.compile_many(THREE, time_column="t", max_delay="1 second")
    got = defaultdict(list)
    for m in qs.matches(rows):
        got[m.query].append(m[1:])
    for name, text in THREE.items():
        alone = kleene.compile(text, time_column="t", max_delay="1 second")
        assert got[name] == [tuple(m) for m in alone.matches(rows)]


def test_queries_reading_an_attribute_as_different_kinds_conform_apart() -> None:
    texts = {"num": "SELECT * WHERE A FILTER A[x > 1]", "text": "SELECT * WHERE A FILTER A[x LIKE '[a-z]']"}
    rows = [{"type": "A", "x": "5"}, {"type": "A", "x": "a"}, {"type": "A", "x": "0"}]
    qs = kleene.compile_many(texts, on_bad_row="skip")
    assert [g.members for g in qs.groups] == [(0,), (1,)]
    got = defaultdict(list)
    for m in qs.matches(rows):
        got[m.query].append(m.positions)
    assert got == {"num": [(0,)], "text": [(1,)]}
    assert qs.bad_rows.count == 1  # "a" is not a number: bad for `num` only
