"""``kleene.match_recognize``: sources, outputs, errors, and that ``import kleene`` stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kleene
from kleene.reference.match_recognize import match_recognize as reference

PRICES = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22]
ROWS = [{"symbol": "ACME", "day": d + 1, "price": p} for d, p in enumerate(PRICES)]
V_SHAPE = """PARTITION BY symbol ORDER BY day
    MEASURES STRT.day AS start_day, LAST(DOWN.day) AS bottom_day, LAST(UP.day) AS end_day
    AFTER MATCH SKIP TO LAST UP PATTERN (STRT DOWN+ UP+)
    DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)"""
EXPECTED = [{"symbol": "ACME", "start_day": 5, "bottom_day": 6, "end_day": 10},
            {"symbol": "ACME", "start_day": 10, "bottom_day": 12, "end_day": 13},
            {"symbol": "ACME", "start_day": 14, "bottom_day": 16, "end_day": 18}]


def test_sources_of_every_kind(tmp_path: Path) -> None:
    import duckdb
    import pandas as pd
    import polars as pl

    table = pa.Table.from_pylist(ROWS)
    path = tmp_path / "ticker.parquet"
    pq.write_table(table, path)
    sources = [ROWS, table, table.to_reader(), pd.DataFrame(ROWS), pl.DataFrame(ROWS),
               str(path), path, duckdb.sql(f"SELECT * FROM '{path}'")]
    for source in sources:
        assert kleene.match_recognize(source, V_SHAPE).to_pylist() == EXPECTED, type(source)


def test_the_whole_clause_is_accepted_and_outputs_convert() -> None:
    whole = f"MATCH_RECOGNIZE ({V_SHAPE})"
    assert kleene.match_recognize(ROWS, whole).to_pylist() == EXPECTED
    frame = kleene.match_recognize(ROWS, V_SHAPE, output="pandas")
    assert list(frame["start_day"]) == [5, 10, 14]
    polars = kleene.match_recognize(ROWS, V_SHAPE, output="polars")
    assert polars["end_day"].to_list() == [10, 13, 18]
    with pytest.raises(kleene.KleeneError, match="output='csv'"):
        kleene.match_recognize(ROWS, V_SHAPE, output="csv")


def test_same_result_as_the_reference() -> None:
    assert kleene.match_recognize(ROWS, V_SHAPE).equals(reference(ROWS, V_SHAPE))


def test_query_errors_have_a_caret_and_data_errors_a_row() -> None:
    with pytest.raises(kleene.QueryError) as err:
        kleene.match_recognize(ROWS, "MEASURES COUNT(*) AS n PATTERN (A+) DEFINE B AS price > 1")
    assert "^" in str(err.value) and err.value.line == 1
    with pytest.raises(kleene.QueryError, match="unknown column 'cost'"):
        kleene.match_recognize(ROWS, "MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS cost > 1")
    bad_rows = [{"t": 1, "x": "a"}]
    for define in ("x + 1 > 0", "COUNT(A.*) + x > 0", "x / 2 = 1"):
        query = f"ORDER BY t MEASURES COUNT(*) AS n PATTERN (A) DEFINE A AS {define}"
        with pytest.raises(kleene.DataError) as bad:
            kleene.match_recognize(bad_rows, query)
        with pytest.raises(kleene.DataError) as expected:
            reference(bad_rows, query)
        assert bad.value.row == 0 and str(bad.value) == str(expected.value)
    with pytest.raises(kleene.DataError, match="not present in match 1") as skip:
        kleene.match_recognize(ROWS, "ORDER BY day MEASURES COUNT(*) AS n "
                               "AFTER MATCH SKIP TO LAST B PATTERN (A B?) DEFINE B AS price > 100")
    assert skip.value.row == 0


def test_importing_kleene_does_not_load_the_engine() -> None:
    code = ("import sys, kleene; print(sorted(m for m in sys.modules if 'match_recognize' in m "
            "or m == 'kleene.row_patterns'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = "import kleene; print(kleene.match_recognize.__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "kleene.row_patterns"
