"""The parallel-ranges plan at its boundaries, with ranges of 10 rows (``ranges=12`` over 120).

Times are the row ids (one event a second), so ``n EVENTS``, ``n seconds`` and ``n [ts]`` reach
equally far back, and the ranges of the general path (a full sample: bounds at every 10th row)
start at 0, 10, 20, ...  Each query is compared with the in-process engine over the whole
stream, all in one Spark job; each must also be one that the stream cut at the boundaries
*without* overlap gets wrong (so the overlap is what the test checks), and each strategy one
that changes the output.  See docs/spark.md, "When the ranges plan is exact".
"""

from __future__ import annotations

import random
from dataclasses import replace
from functools import reduce
from typing import Any

import pyarrow as pa
import pytest
from test_spark_language import cut_run, engine_run, on_spark

import kleene
from kleene.language.printer import to_ceql
from kleene.spark import detect, plan_for
from kleene.spark.plan import RANGES_EXACT_STRATEGIES

N, RANGES = 120, 12
WIDTH = N // RANGES

BOUNDARY_QUERIES = [
    # a window exactly the overlap width, and one past it, one of two ranges
    f"SELECT * FROM S WHERE A as a ; B as b WITHIN {WIDTH} EVENTS",
    f"SELECT * FROM S WHERE A as a ; B as b ; C as c FILTER c[v > 4] WITHIN {WIDTH + 1} EVENTS",
    f"SELECT * FROM S WHERE A as a ; B as b FILTER a[v > 6] WITHIN {2 * WIDTH + 5} EVENTS",
    f"SELECT * FROM S WHERE A as a ; B as b FILTER b[v < 3] WITHIN {WIDTH} seconds",
    f"SELECT * FROM S WHERE A as a ; C as c FILTER c[w > a.w] WITHIN {WIDTH} [ts]",
    # strategies choosing among matches whose starts lie in the previous range
    f"SELECT NEXT * FROM S WHERE A as a ; B+ as b ; C as c WITHIN {WIDTH} EVENTS",
    f"SELECT LAST * FROM S WHERE A as a ; B+ as b ; C as c WITHIN {WIDTH} EVENTS",
    f"SELECT MAX * FROM S WHERE A as a ; B+ as b ; C as c WITHIN {WIDTH} seconds",
    f"SELECT STRICT * FROM S WHERE A as a ; (B OR C)+ as b WITHIN {WIDTH} EVENTS",
    f"SELECT NEXT a, c FROM S WHERE A as a ; B as b ; C as c FILTER c[v > a.v] WITHIN {WIDTH + 3} EVENTS",
    # UNLESS across a boundary, contiguity at the boundary
    f"SELECT * FROM S WHERE (A as a ; C as c) UNLESS B WITHIN {WIDTH} EVENTS",
    f"SELECT * FROM S WHERE A as a : B+ as b : C as c WITHIN {WIDTH} EVENTS",
    # CONSUME BY: the single ordered task (cut, it would be wrong)
    f"SELECT NEXT * FROM S WHERE A as a ; C as c WITHIN {WIDTH} EVENTS CONSUME BY ANY",
    # a projection that keeps no event of some matches (their times are null)
    f"SELECT b FROM S WHERE (A as a OR B as b) ; C as c WITHIN {WIDTH} EVENTS",
]


def boundary_stream() -> pa.Table:
    rng = random.Random(5)
    rows = [{"id": i, "type": rng.choice("AABBBCCD"), "v": rng.randrange(10), "w": rng.randrange(10),
             "ts": i} for i in range(N)]
    return pa.Table.from_pylist(rows)


@pytest.mark.parametrize("strategy", sorted(RANGES_EXACT_STRATEGIES))
def test_strategies_go_to_ranges_consume_by_does_not(strategy: str) -> None:
    pick = "" if strategy == "ALL" else f"{strategy} "
    q = kleene.compile(f"SELECT {pick}* FROM S WHERE A as a ; B as b WITHIN 5 EVENTS")
    plan = plan_for(q, None, 8)
    assert plan.mode == "ranges" and strategy in plan.reason
    consumed = kleene.compile(f"SELECT {pick}* FROM S WHERE A as a ; B as b WITHIN 5 EVENTS CONSUME BY ANY")
    assert plan_for(consumed, None, 8) == plan_for(consumed, None, 8)
    assert plan_for(consumed, None, 8).mode == "single"
    assert "CONSUME BY" in plan_for(consumed, None, 8).reason


def test_boundaries_match_engine(spark: Any) -> None:
    from pyspark.sql import functions as F

    table = boundary_stream()
    rng = random.Random(1)
    order = list(range(N))
    rng.shuffle(order)
    df = spark.createDataFrame(table.take(pa.array(order)).to_pandas())
    time_type = df.schema["ts"].dataType
    frames, cases = [], []
    for i, text in enumerate(BOUNDARY_QUERIES):
        q = kleene.compile(text, time_column="ts")
        expected = engine_run(q, table)
        assert expected, text
        assert cut_run(q, table, RANGES) != expected, f"the boundaries should matter: {text}"
        strategy = q.ast.select.strategy
        if strategy != "ALL":
            plain = kleene.compile(to_ceql(replace(q.ast, select=replace(q.ast.select, strategy="ALL"))),
                                   time_column="ts")
            assert engine_run(plain, table) != expected, f"the strategy should matter: {text}"
        want = "single" if q.ast.consume != "NONE" else "ranges"
        assert plan_for(q, time_type, RANGES).mode == want, text
        cases.append((text, expected))
        frames.append(detect(df, q, order_by="id", ranges=RANGES, query_id=f"b{i}")
                      .withColumn("partition", F.col("partition").cast("string")))
    rows = reduce(lambda a, b: a.unionByName(b), frames).collect()
    got = on_spark(rows)
    for i, (text, expected) in enumerate(cases):
        assert got.get(f"b{i}", []) == expected, text
    nulls = [r for r in rows if r["query"] == f"b{len(BOUNDARY_QUERIES) - 1}" and not r["events"]]
    assert nulls and all(r["start_time"] is None and r["end_time"] is None for r in nulls)
