"""kleene.spark.match_recognize and kleene.spark.sql against the in-process evaluation.

A real local SparkSession (the ``spark`` fixture, ``local[2]``); each clause runs
on Spark (partitions grouped into tasks) and in process
(:func:`kleene.sql.clause.evaluate_clause`), and the rows must be the same (Spark's
row order is undefined, so both sides are sorted).
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kleene.language.errors import QueryError
from kleene.language.match_recognize.parser import parse
from kleene.sql.clause import evaluate_clause

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from match_recognize_generators import Case, cases  # noqa: E402

ACME = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22]
TICKER = pa.Table.from_pylist(
    [{"symbol": s, "tstamp": dt.datetime(2011, 4, d + 1), "price": p if s == "ACME" else 40 - p}
     for s in ("ACME", "XYZ") for d, p in enumerate(ACME)])
V_SHAPE = """PARTITION BY symbol ORDER BY tstamp
    MEASURES STRT.tstamp AS start_tstamp, LAST(DOWN.tstamp) AS bottom_tstamp,
             LAST(UP.tstamp) AS end_tstamp, ARRAY_AGG(price) AS prices, CLASSIFIER() AS c
    AFTER MATCH SKIP TO LAST UP
    PATTERN (STRT DOWN+ UP+)
    DEFINE DOWN AS DOWN.price < PREV(DOWN.price), UP AS UP.price > PREV(UP.price)"""


def naive(value: Any) -> Any:
    """Spark's timestamps come back in UTC with a time zone; the input's were naive UTC."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def rows(table: pa.Table) -> list[str]:
    return sorted(repr(sorted((k, naive(v)) for k, v in r.items())) for r in table.to_pylist())


def spark_rows(df: Any) -> list[str]:
    return rows(df.toArrow())


def both(spark: Any, table: pa.Table, clause: str) -> tuple[list[str], list[str]]:
    import kleene.spark

    out = kleene.spark.match_recognize(spark.createDataFrame(table), clause)
    return spark_rows(out), rows(evaluate_clause(parse(clause), table))


def test_oracle_v_shape_on_spark(spark: Any) -> None:
    got, want = both(spark, TICKER, V_SHAPE)
    assert got == want
    assert len(want) == 6  # three matches per symbol


def test_all_rows_per_match_without_partition_by(spark: Any) -> None:
    clause = V_SHAPE.replace("PARTITION BY symbol ORDER BY tstamp", "ORDER BY tstamp, symbol") \
        .replace("AFTER MATCH", "ALL ROWS PER MATCH AFTER MATCH")
    got, want = both(spark, TICKER, clause)
    assert got == want
    assert len(want) > 10


@settings(max_examples=6, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cases(max_rows=40), st.lists(st.integers(0, 5), min_size=40, max_size=40),
       st.sampled_from(["ONE ROW PER MATCH", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"]),
       st.sampled_from(["PAST LAST ROW", "TO NEXT ROW"]))
def test_random_clauses_on_spark_equal_the_in_process_result(
        spark: Any, case: Case, keys: list[int], per_match: str, skip: str) -> None:
    table = pa.Table.from_pylist(
        [{**r, "k": keys[i]} for i, r in enumerate(case.records())])
    clause = case.query("MATCH_NUMBER() AS m, COUNT(*) AS n, FIRST(t) AS f, SUM(v) AS s",
                        per_match, skip)
    try:
        want = rows(evaluate_clause(parse(clause), table))
    except Exception:  # noqa: BLE001 - a clause the evaluator refuses (step budget, SKIP loop)
        return
    import kleene.spark

    assert spark_rows(kleene.spark.match_recognize(spark.createDataFrame(table), clause)) == want


def test_ties_in_order_by_keep_the_input_order(spark: Any) -> None:
    """Every row has the same ORDER BY key, so the input order decides the labels; the
    input is spread over 8 Spark partitions that the grouping shuffle merges.  (In local
    mode the shuffle happens to read map outputs in order, so this passes even without
    the row-id sort; on a cluster fetches come in any order and the sort is what holds.)"""
    import kleene.spark

    values = [(i * 7919) % 13 for i in range(400)]
    table = pa.table({"i": list(range(400)), "k": [i % 2 for i in range(400)], "t": [0] * 400,
                      "v": values})
    clause = ("PARTITION BY k ORDER BY t MEASURES ARRAY_AGG(v) AS vs, COUNT(*) AS n "
              "PATTERN (A B+) DEFINE B AS v > PREV(v)")
    df = spark.createDataFrame(table).repartitionByRange(8, "i")
    got = spark_rows(kleene.spark.match_recognize(df, clause))
    assert got == rows(evaluate_clause(parse(clause), table))
    assert len(got) > 50


def test_sql_statement_with_views_ctes_subqueries_and_joins(spark: Any) -> None:
    import kleene.spark

    spark.createDataFrame(TICKER).createOrReplaceTempView("ticker")
    spark.createDataFrame([("ACME", "Acme Corp"), ("XYZ", "Xyz Inc")],
                          "symbol string, company string").createOrReplaceTempView("names")
    statement = f"""
        WITH xyz AS (SELECT * FROM ticker WHERE symbol = 'XYZ')
        SELECT n.company, count(*) AS matches
        FROM ticker MATCH_RECOGNIZE ({V_SHAPE}) AS m
        JOIN names n ON n.symbol = m.symbol
        GROUP BY n.company
        UNION ALL
        SELECT 'only XYZ', count(*) FROM (SELECT * FROM xyz WHERE price > 0)
            MATCH_RECOGNIZE ({V_SHAPE}) x"""
    got = sorted(tuple(r) for r in kleene.spark.sql(spark, statement).collect())
    alone = evaluate_clause(parse(V_SHAPE), TICKER).to_pylist()
    per = {"Acme Corp": sum(r["symbol"] == "ACME" for r in alone),
           "Xyz Inc": sum(r["symbol"] == "XYZ" for r in alone)}
    assert got == sorted([*per.items(), ("only XYZ", per["Xyz Inc"])])


def test_errors_come_with_a_caret_before_any_job(spark: Any) -> None:
    import kleene.spark

    df = spark.createDataFrame(TICKER)
    with pytest.raises(QueryError) as info:
        kleene.spark.match_recognize(df, "ORDER BY tstamp MEASURES SUM(symbol) AS s PATTERN (A)")
    assert "SUM needs numbers, not a string" in info.value.message
    assert info.value.column == 30
    df.createOrReplaceTempView("ticker")
    statement = "SELECT *\n  FROM ticker MATCH_RECOGNIZE (ORDER BY tstamp MEASURES x AS y PATTERN (A))"
    with pytest.raises(QueryError) as info:
        kleene.spark.sql(spark, statement)
    assert "unknown column 'x'" in info.value.message
    assert (info.value.line, info.value.column) == (2, statement.split("\n")[1].index("x AS") + 1)
    with pytest.raises(QueryError, match="only a SELECT"):
        kleene.spark.sql(spark, "DROP VIEW ticker")
