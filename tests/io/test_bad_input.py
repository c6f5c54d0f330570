"""Bad input rows: an error naming row and column, or set aside and counted (issue item 9)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import kleene
from kleene.io.badrows import BadRowPolicy

QUERY = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS"
TIMED = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 5 seconds"


def good() -> list[dict[str, Any]]:
    return [
        {"type": "SELL", "price": 150.0, "t": 0},
        {"type": "BUY", "price": 10.0, "t": 1},
        {"type": "SELL", "price": 120.0, "t": 2},
        {"type": "BUY", "price": 11.0, "t": 3},
    ]


def matches(q: kleene.Query, rows: list[dict[str, Any]] | pa.Table) -> set[tuple[int, ...]]:
    return {ce.positions for ce in q.run(rows)}


def test_clean_input_reference() -> None:
    assert matches(kleene.compile(QUERY), good()) == {(0, 1), (0, 3), (2, 3)}


@pytest.mark.parametrize(
    ("bad_value", "reason"),
    [(None, "null"), (math.nan, "NaN")],
)
def test_null_and_nan_raise_naming_row_and_column(bad_value: Any, reason: str) -> None:
    rows = good()
    rows[2]["price"] = bad_value
    with pytest.raises(kleene.DataError) as err:
        list(kleene.compile(QUERY).run(rows))
    assert err.value.row == 2 and err.value.column == "price"
    assert "row 2" in str(err.value) and "price" in str(err.value)
    assert reason.lower() in str(err.value).lower()


def test_missing_attribute_raises() -> None:
    # the attribute is missing from the whole input: a query error (unknown attribute)
    rows = [{k: v for k, v in r.items() if k != "price"} for r in good()]
    with pytest.raises(kleene.QueryError):
        list(kleene.compile(QUERY).run(rows))
    # a row whose type the predicate reads lacks it in a later batch: a data error
    q = kleene.compile(QUERY)
    q.push_batch(pa.Table.from_pylist(good()[:2]))
    with pytest.raises(kleene.DataError) as err:
        q.push({"type": "SELL", "t": 9})
    assert err.value.row == 2 and err.value.column == "price"


def test_wrong_type_raises() -> None:
    table = pa.table(
        {"type": ["SELL", "BUY", "SELL", "BUY"], "price": ["150", "10", "abc", "11"]}
    )
    with pytest.raises(kleene.DataError) as err:
        list(kleene.compile(QUERY).run(table))
    assert err.value.row == 2 and err.value.column == "price"


def test_rows_of_types_the_predicate_does_not_read_are_not_bad() -> None:
    rows = good()
    rows[1]["price"] = None  # a BUY: a[price > 100] only reads SELL events
    assert matches(kleene.compile(QUERY), rows) == {(0, 1), (0, 3), (2, 3)}


def test_timestamp_going_backwards_raises() -> None:
    rows = good()
    rows[2]["t"] = -5
    with pytest.raises(kleene.DataError) as err:
        list(kleene.compile(TIMED, time_column="t").run(rows))
    assert err.value.row == 2 and err.value.column == "t"
    assert "backwards" in str(err.value)


def test_skip_sets_rows_aside_and_counts_them() -> None:
    rows = good()
    rows[2]["price"] = None
    q = kleene.compile(QUERY, on_bad_row="skip")
    assert matches(q, rows) == {(0, 1), (0, 3)}  # row 2 is gone, positions keep their numbers
    assert q.bad_rows.count == 1
    assert "null" in q.bad_rows.summary()


def test_skip_timestamp_backwards() -> None:
    rows = good()
    rows[2]["t"] = -5
    q = kleene.compile(TIMED, time_column="t", on_bad_row="skip")
    assert matches(q, rows) == {(0, 1), (0, 3)}
    assert q.bad_rows.count == 1


def test_quarantine_writes_each_bad_row(tmp_path: Path) -> None:
    rows = good()
    rows[0]["price"] = math.nan
    rows[2]["price"] = "cheap"
    target = tmp_path / "bad.jsonl"
    policy = BadRowPolicy("quarantine", target)
    q = kleene.compile(QUERY, on_bad_row=policy)
    assert matches(q, rows) == set()
    policy.close()
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert [(x["row"], x["column"]) for x in lines] == [(0, "price"), (2, "price")]
    assert policy.count == 2


def test_bad_row_with_unread_type_in_contiguous_pattern_is_set_aside_not_adjacent() -> None:
    """A set-aside row is not part of the stream: `:` sees its neighbours as adjacent."""
    q = kleene.compile("SELECT * FROM S WHERE SELL : BUY FILTER SELL[price > 0]", on_bad_row="skip")
    rows = [
        {"type": "SELL", "price": 1.0},
        {"type": "SELL", "price": None},
        {"type": "BUY", "price": 1.0},
    ]
    assert matches(q, rows) == {(0, 2)}
