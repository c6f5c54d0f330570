"""Reading only the query's columns (projection pushdown) changes no complex event.

``Query.matches(path)`` and ``Query.match_batches(path)`` read just
:attr:`kleene.Query.columns` of a file, Parquet strings as dictionaries.  The
property test runs random queries of the whole language, with and without
conditions between events, over random streams written to Parquet (in small
row groups, so several batches) and CSV with columns no query reads, and
compares with the same stream given as a whole table.  The unit tests pin the
reader options, the column lists, the quarantine (which keeps whole rows) and
the engine's sort-free numbering of bit vectors.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import aimed, skip_case
from generators import cases, condition_cases
from kleene.io.badrows import BadRowPolicy
from kleene.io.readers import read_batches
from kleene.language import ast
from kleene.language.printer import to_ceql
from kleene.runtime.visits import DENSE_CODES, distinct

SUPPORTED_CEL = frozenset({"not", "star", "and", "all", "unless", "STRICT", "NEXT", "LAST", "MAX"})


def table_of(events: list[dict[str, Any]], times: list[int], extra: list[str]) -> pa.Table:
    """The stream with a time column and two columns no query reads."""
    rows = [dict(e, __t=t, zz=x, yy=i * 7) for i, (e, t, x) in enumerate(zip(events, times, extra))]
    return pa.Table.from_pylist(rows)


def found(q: kleene.Query, source: Any) -> list[tuple[int, int, tuple[int, ...]]]:
    return [(m.start, m.end, m.positions) for m in q.matches(source)]


def check_case(case: tuple[ast.Query, list[dict[str, Any]], list[int]], data: st.DataObject) -> None:
    query, events, times = case
    if not events:
        skip_case("no events")
        return
    if query.select.strategy in ("NEXT", "LAST", "MAX") and query.select.items is not None:
        query = replace(query, select=replace(query.select, items=None))
    extra = data.draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=len(events), max_size=len(events)))
    table = table_of(events, times, extra)
    q = kleene.compile(to_ceql(query), time_column="__t", time_unit="ns")
    expected = found(q, table)
    with tempfile.TemporaryDirectory() as tmp:
        parquet = Path(tmp) / "s.parquet"
        pq.write_table(table, parquet, row_group_size=data.draw(st.integers(1, 8)))
        assert found(q, parquet) == expected
        assert found(q, str(parquet)) == expected
        bulk = [
            (s, e, tuple(b.positions[lo:hi].tolist()))
            for b in q.match_batches(parquet)
            for s, e, lo, hi in zip(b.start.tolist(), b.end.tolist(), b.offsets[:-1].tolist(), b.offsets[1:].tolist())
        ]
        assert bulk == expected
        csv = Path(tmp) / "s.csv"
        pacsv.write_csv(table, csv)
        assert found(q, csv) == expected


@aimed()
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL), st.data())
def test_pushdown_keeps_the_complex_events(case: Any, data: st.DataObject) -> None:
    check_case(case, data)


@aimed()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(condition_cases(), st.data())
def test_pushdown_keeps_the_complex_events_with_conditions(case: Any, data: st.DataObject) -> None:
    check_case(case, data)


def test_query_columns_name_what_the_query_reads() -> None:
    q = kleene.compile(
        "SELECT * FROM S WHERE SELL as a; BUY as b FILTER b[price < a.price] AND a[volume > 3] "
        "PARTITION BY [name] WITHIN 5 seconds",
        time_column="ts",
    )
    assert q.columns == ("type", "price", "volume", "ts", "name")
    q = kleene.compile("SELECT * FROM S WHERE SELL; NOT(BUY FILTER BUY[v > 1]); SELL WITHIN 9 [t]")
    assert q.columns == ("type", "v", "t")
    both = kleene.compile_many(
        "QUERY one: SELECT * FROM S WHERE A FILTER A[x > 1]\nQUERY two: SELECT * FROM S WHERE B FILTER B[y > 1]"
    )
    assert both.columns == ("type", "x", "y")


def sample(tmp_path: Path) -> pa.Table:
    table = pa.table(
        {
            "type": ["A", "B", "A"],
            "skip": [1, 2, 3],
            "name": ["x", "y", "x"],
            "n": [1.5, 2.5, 3.5],
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    pacsv.write_csv(table, tmp_path / "t.csv")
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in table.to_pylist()))
    return table


@pytest.mark.parametrize("suffix", ["parquet", "csv", "jsonl"])
def test_read_batches_reads_only_the_columns_asked_for(tmp_path: Path, suffix: str) -> None:
    table = sample(tmp_path)
    got = pa.Table.from_batches(list(read_batches(tmp_path / f"t.{suffix}", columns=["n", "type", "nope"])))
    assert got.column_names == ["type", "n"]  # the file's order; unknown names left out
    assert got.to_pylist() == table.select(["type", "n"]).to_pylist()


def test_dictionary_reads_parquet_strings_as_dictionaries(tmp_path: Path) -> None:
    table = sample(tmp_path)
    got = pa.Table.from_batches(list(read_batches(tmp_path / "t.parquet", dictionary=True)))
    assert pa.types.is_dictionary(got.schema.field("type").type)
    assert pa.types.is_dictionary(got.schema.field("name").type)
    assert got.schema.field("n").type == pa.float64()
    assert got.to_pylist() == table.to_pylist()


def test_csv_widening_still_names_the_right_column_when_columns_are_left_out(tmp_path: Path) -> None:
    # `code` looks like integers in the first block and turns to words later:
    # Arrow names the failing column by its place in the file, not among the
    # included ones, and the reader must widen `code`, not another column.
    lines = ["skip,type,code"] + [f"s{i},A,{i}" for i in range(5000)] + ["s,A,word"]
    path = tmp_path / "w.csv"
    path.write_text("\n".join(lines) + "\n")
    got = pa.Table.from_batches(list(read_batches(path, columns=["type", "code"], batch_size=1000)))
    assert got.column_names == ["type", "code"]
    assert got.schema.field("code").type == pa.string()
    assert got.column("code")[-1].as_py() == "word"


def test_a_missing_column_is_still_reported_by_the_query(tmp_path: Path) -> None:
    sample(tmp_path)
    q = kleene.compile("SELECT * FROM S WHERE A FILTER A[price > 1]")
    with pytest.raises(kleene.QueryError, match="price"):
        list(q.matches(tmp_path / "t.parquet"))


def test_quarantine_keeps_whole_rows_when_reading_a_file(tmp_path: Path) -> None:
    table = pa.table({"type": ["A", "A"], "note": ["keep me", "me too"], "v": ["1", "bad"]})
    pq.write_table(table, tmp_path / "q.parquet")
    target = tmp_path / "bad.jsonl"
    policy = BadRowPolicy("quarantine", target)
    q = kleene.compile("SELECT * FROM S WHERE A FILTER A[v > 0]", on_bad_row=policy)
    assert [(m.start, m.end) for m in q.matches(tmp_path / "q.parquet")] == [(0, 0)]
    policy.close()
    (line,) = [json.loads(x) for x in target.read_text().splitlines()]
    assert line["row"] == 1
    assert "keep me" not in json.dumps(line) and "me too" in json.dumps(line)


@pytest.mark.parametrize("top", [3, DENSE_CODES - 1, DENSE_CODES, 1 << 63])
def test_distinct_numbers_bit_vectors_like_unique(top: int) -> None:
    rng = np.random.default_rng(top % 1000)
    choices = np.array(sorted({0, 1, top, top // 2, top // 3}), dtype=np.uint64)
    bits = choices[rng.integers(0, len(choices), 500)]
    values, codes = distinct(bits)
    uniq, inverse = np.unique(bits, return_inverse=True)
    assert values == uniq.tolist()
    assert codes.tolist() == inverse.reshape(-1).tolist()
    assert distinct(np.zeros(0, np.uint64))[0] == []
