"""kleene.spark.detect against the in-process engine, on a real local SparkSession.

Each test runs the same query both ways over generated data and compares the
complex events (interval, positions and events' data).  The reference is
``kleene.compile(q).run(table sorted by (time, id))``: the order that
defines positions on Spark.  One session (the ``spark`` fixture) serves the
whole file, because starting the JVM costs more than all tests together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv  # noqa: F401  (pa.csv)
import pyarrow.parquet as pq
import pytest

import kleene  # noqa: E402
from kleene.cli import main  # noqa: E402
from kleene.spark import detect, output_schema, plan_for  # noqa: E402
from kleene.spark.positions import input_order_positions, position_ranges  # noqa: E402

NAMES = ["MSFT", "INTC", "AAPL", "GOOG", "AMZN"]


def make_events(n: int, seed: int = 0, null_names: bool = False) -> pa.Table:
    """n stock events; times have ties (so the id breaks them); rows shuffled."""
    rng = np.random.default_rng(seed)
    names: list[Any] = list(rng.choice(NAMES, n))
    if null_names:
        for i in rng.choice(n, n // 50, replace=False):
            names[int(i)] = None
    table = pa.table(
        {
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "type": pa.array(rng.choice(["BUY", "SELL"], n)),
            "name": pa.array(names, pa.string()),
            "price": pa.array(np.round(rng.uniform(0, 200, n), 2)),
            "ts": pa.array(np.cumsum(rng.integers(0, 3, n)).astype(np.int64)),
        }
    )
    return table.take(pa.array(rng.permutation(n)))  # Spark must sort


def reference(query: str, table: pa.Table, **kw: Any) -> list[tuple[Any, ...]]:
    ordered = table.sort_by([("ts", "ascending"), ("id", "ascending")])
    q = kleene.compile(query, **kw)
    return sorted(_key(c.start, c.end, c.positions, c.events, c.partition) for c in q.run(ordered))


def on_spark(df: Any, query: str, **kw: Any) -> list[tuple[Any, ...]]:
    rows = detect(df, query, order_by="id", **kw).collect()
    out = []
    for r in rows:
        part = tuple(r["partition"]) if r["partition"] is not None else None
        events = [e.asDict() for e in r["events"]]
        out.append(_key(r["start"], r["end"], tuple(r["positions"]), events, part))
    return sorted(out)


def _key(start: int, end: int, positions: Any, events: Any, partition: Any) -> tuple[Any, ...]:
    evs = tuple(tuple(sorted((k, v) for k, v in e.items() if v is not None)) for e in events)
    return (end, start, tuple(positions), evs, partition)


@pytest.fixture(scope="module")
def events() -> pa.Table:
    return make_events(5000, seed=1, null_names=True)


@pytest.fixture(scope="module")
def events_df(spark: Any, events: pa.Table) -> Any:
    return spark.createDataFrame(events.to_pandas())


PARTITIONED = [
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] PARTITION BY [name] WITHIN 10 EVENTS",
    "SELECT * FROM S WHERE SELL as a; BUY+ as b FILTER a[price > 190] AND b[price < 20] "
    "PARTITION BY [name] WITHIN 4 seconds",
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 150] PARTITION BY [name] "
    "WITHIN 30 EVENTS CONSUME BY PARTITION",
    # Conditions between events (register engine), per key.
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER b[price < a.price - 50] "
    "PARTITION BY [name] WITHIN 10 EVENTS",
    # CONSUME BY ANY crosses partitions: evaluated by the single ordered task.
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 150] PARTITION BY [name] "
    "WITHIN 30 EVENTS CONSUME BY ANY",
]


@pytest.mark.parametrize("query", PARTITIONED)
def test_partitioned_matches_engine(spark: Any, events: pa.Table, events_df: Any, query: str) -> None:
    expected = reference(query, events, time_column="ts")
    assert expected, "the data should produce complex events"
    assert on_spark(events_df, query, time_column="ts") == expected


RANGED = [
    # events window
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS",
    # time window, iteration, projection
    "SELECT a, c FROM S WHERE SELL as a; BUY+ as b; SELL as c FILTER a[price > 180] AND c[price < 30] "
    "WITHIN 6 seconds",
    # attribute window, contiguity
    "SELECT * FROM S WHERE SELL as a : BUY as b FILTER b[price < 50] WITHIN 3 [ts]",
    # conditions between events (register engine): registers hold events of the same match,
    # all inside the window, so the overlap of one window makes ranges exact too
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] AND b[price < a.price] "
    "WITHIN 10 EVENTS",
    "SELECT * FROM S WHERE SELL as s; BUY+ as b FILTER b[price > prev(b).price] AND "
    "b[price > s.price] WITHIN 5 EVENTS",
    # LIMIT counts per end event: local to a range too
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 12 EVENTS LIMIT 2",
]


@pytest.mark.parametrize("query", RANGED)
def test_parallel_ranges_match_engine(spark: Any, events: pa.Table, events_df: Any, query: str) -> None:
    from pyspark.sql import functions as F

    compiled = kleene.compile(query, time_column="ts")
    assert plan_for(compiled, events_df.schema["ts"].dataType, 4).mode == "ranges"
    expected = reference(query, events, time_column="ts")
    assert len(expected) > 20
    result = detect(events_df, query, time_column="ts", order_by="id", ranges=4)
    tasks = result.select(F.spark_partition_id().alias("p")).distinct().count()
    assert tasks >= 3, "the ranges should be evaluated by several tasks"
    assert on_spark(events_df, query, time_column="ts", ranges=4) == expected


def test_ranges_forced_single_gives_the_same(spark: Any, events: pa.Table, events_df: Any) -> None:
    query = RANGED[0]
    assert on_spark(events_df, query, time_column="ts", ranges=1) == reference(query, events, time_column="ts")


def test_unwindowed_query_runs_in_one_task(spark: Any) -> None:
    table = make_events(800, seed=2)
    query = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 190] AND b[price < 10]"
    compiled = kleene.compile(query)
    assert plan_for(compiled, None, 4).mode == "single"
    df = spark.createDataFrame(table.to_pandas())
    expected = reference(query, table, time_column="ts")
    assert len(expected) > 10
    assert on_spark(df, query, time_column="ts") == expected


def test_positions_without_order_by_follow_input_order(spark: Any, tmp_path: Path) -> None:
    """No time column, no order_by: positions are the file's row order."""
    table = make_events(300, seed=3).sort_by("id")
    path = tmp_path / "ev.parquet"
    pq.write_table(table, path)
    query = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 5 EVENTS"
    rows = detect(spark.read.parquet(str(path)), query).collect()
    got = sorted((r["start"], r["end"], tuple(r["positions"])) for r in rows)
    want = sorted((c.start, c.end, c.positions) for c in kleene.compile(query).run(table))
    assert got == want and got
    assert all(r["start_time"] is None and r["partition"] is None for r in rows)


@pytest.fixture(scope="module")
def ordered_parquet(spark: Any, events: pa.Table, tmp_path_factory: Any) -> Any:
    """The events in time order, as one Parquet file read in several partitions."""
    ordered = events.sort_by([("ts", "ascending"), ("id", "ascending")])
    path = tmp_path_factory.mktemp("ordered") / "events.parquet"
    pq.write_table(ordered, path, row_group_size=600)
    saved = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "16k")
    try:
        df = spark.read.parquet(str(path)).cache()
        assert df.rdd.getNumPartitions() >= 3
        df.count()
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", saved)
    return df


@pytest.mark.parametrize("query", [PARTITIONED[0], PARTITIONED[1], PARTITIONED[3]])
def test_time_ordered_input_needs_no_sort(
    events: pa.Table, events_df: Any, ordered_parquet: Any, query: str
) -> None:
    """Input already in time order, no order_by: positions from the row ids, same output."""
    ts = events_df.schema["ts"].dataType
    assert input_order_positions(ordered_parquet, "ts", ts) is not None
    assert input_order_positions(events_df, "ts", ts) is None  # shuffled: the general path
    rows = detect(ordered_parquet, query, time_column="ts").collect()
    got = sorted(
        _key(r["start"], r["end"], tuple(r["positions"]), [e.asDict() for e in r["events"]],
             tuple(r["partition"]) if r["partition"] is not None else None)
        for r in rows
    )
    assert got == reference(query, events, time_column="ts")


@pytest.mark.parametrize("query", [RANGED[0], RANGED[1], RANGED[4]])
def test_time_ordered_input_parallel_ranges(
    events: pa.Table, ordered_parquet: Any, query: str
) -> None:
    """Parallel ranges over time-ordered input: ranges cut at run starts, no sort, same output."""
    from pyspark.sql import functions as F

    compiled = kleene.compile(query, time_column="ts")
    in_order = input_order_positions(ordered_parquet, "ts", ordered_parquet.schema["ts"].dataType)
    assert in_order is not None
    starts = position_ranges(in_order, 4, compiled)
    assert len(starts) == 4 and starts[0][0] == 0
    if "seconds" in query:  # a duration window starts each range at its first row's time
        times = events.sort_by([("ts", "ascending"), ("id", "ascending")])["ts"].to_pylist()
        assert [t for _, t in starts] == [float(times[p]) for p, _ in starts]
    result = detect(ordered_parquet, query, time_column="ts", ranges=4)
    assert result.select(F.spark_partition_id().alias("p")).distinct().count() >= 3
    rows = result.collect()
    got = sorted(
        _key(r["start"], r["end"], tuple(r["positions"]), [e.asDict() for e in r["events"]], None)
        for r in rows
    )
    expected = reference(query, events, time_column="ts")
    assert len(expected) > 20
    assert got == expected


def test_time_ordered_timestamps_parallel_ranges(events: pa.Table, ordered_parquet: Any) -> None:
    """The same with a timestamp time column: range starts and overlap in microseconds."""
    from pyspark.sql import functions as F

    query = RANGED[1]  # WITHIN 6 seconds
    df = ordered_parquet.withColumn("ts", F.timestamp_seconds("ts"))
    rows = detect(df, query, time_column="ts", ranges=4).collect()
    got = sorted((r["end"], r["start"], tuple(r["positions"])) for r in rows)
    assert got == [k[:3] for k in reference(query, events, time_column="ts")]


def test_output_schema_and_times(spark: Any) -> None:
    table = make_events(200, seed=4).sort_by("id")
    df = spark.createDataFrame(table.to_pandas())
    query = "SELECT * FROM S WHERE SELL as a; BUY as b PARTITION BY [name] WITHIN 3 EVENTS"
    result = detect(df, query, time_column="ts", order_by="id", query_id="q1")
    assert result.schema == output_schema(df.schema, partition_by=("name",), time_column="ts")
    row = result.first()
    assert row is not None and row["query"] == "q1"
    assert row["start_time"] == row["events"][0]["ts"] and row["end_time"] == row["events"][-1]["ts"]
    assert row["partition"]["name"] == row["events"][0]["name"]


def test_query_error_is_raised_on_the_driver(spark: Any, events_df: Any) -> None:
    with pytest.raises(kleene.QueryError):
        detect(events_df, "SELECT * FROM S WHERE SELL as a FILTER a[nosuch > 1]")


def test_bad_row_fails_the_job_naming_the_row(spark: Any) -> None:
    df = spark.createDataFrame(
        [(0, "SELL", None), (1, "BUY", 5.0)], "id long, type string, price double"
    )
    result = detect(df, "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 1]", order_by="id")
    with pytest.raises(Exception, match=r"DataError.*row 0"):
        result.collect()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cli_spark_engine_matches_python_engine(spark: Any, tmp_path: Path) -> None:
    table = make_events(1500, seed=5, null_names=True).sort_by("id")
    data = tmp_path / "events.parquet"
    pq.write_table(table, data)
    query = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 120] PARTITION BY [name] WITHIN 8 EVENTS"
    py_out, spark_out = tmp_path / "py.jsonl", tmp_path / "spark.jsonl"
    common = ["run", query, "--input", str(data), "--time-column", "ts", "--no-progress"]
    assert main([*common, "-o", str(py_out)]) == 0
    assert main([*common, "-o", str(spark_out), "--engine", "spark", "--master", "local[2]"]) == 0
    py = _lines(py_out)
    assert py, "the query should produce complex events"
    assert spark_out.is_dir(), "Spark writes a directory of part files"
    parts = [_lines(p) for p in sorted(spark_out.glob("part-*.json"))]

    def order(e: dict[str, Any]) -> tuple[Any, ...]:
        return (e["end"], e["start"], e["positions"])

    def listed(e: dict[str, Any]) -> dict[str, Any]:  # the partition object, compared by its values
        part = e.get("partition")
        return dict(e, partition=list(part.values())) if isinstance(part, dict) else e

    sp = [listed(e) for part in parts for e in part]
    assert sorted(sp, key=order) == sorted(map(listed, py), key=order)
    for part in parts:  # each part file in (end, start) order
        assert [(e["end"], e["start"]) for e in part] == sorted((e["end"], e["start"]) for e in part)


def test_cli_spark_engine_bad_row_exit_code(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"type": "SELL", "price": null}\n{"type": "BUY", "price": 3}\n')
    code = main(["run", "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 1]",
                 "--input", str(data), "--engine", "spark", "-o", str(tmp_path / "o.jsonl")])
    assert code == 3
    assert not (tmp_path / "o.jsonl").exists()


def test_timestamp_time_column_matches_engine(spark: Any) -> None:
    """The README's example: a CSV whose ISO times Spark infers as timestamps."""
    root = Path(__file__).resolve().parents[2] / "examples"
    query = (root / "stock.ceql").read_text()
    df = spark.read.csv(str(root / "stock.csv"), header=True, inferSchema=True)
    assert df.schema["time"].dataType.typeName() == "timestamp"
    got = sorted((r["start"], r["end"], tuple(r["positions"])) for r in detect(df, query, time_column="time").collect())
    table = pa.csv.read_csv(root / "stock.csv")
    expected = sorted((c.start, c.end, c.positions) for c in kleene.compile(query, time_column="time").run(table))
    assert got == expected and len(got) == 7


@pytest.mark.parametrize(
    "query",
    [
        # ranges plan: the window overlap counts every row (positions are global)
        "SELECT * FROM S1, S2 WHERE S1>SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS",
        # partitioned plan; S3's rows are not in the query's stream
        "SELECT * FROM S1 WHERE SELL as a : BUY as b FILTER a[price > 100] PARTITION BY [name]",
    ],
)
def test_stream_column_passes_through(spark: Any, events: pa.Table, query: str) -> None:
    table = events.append_column(
        "src", pa.array([("S1", "S2", "S3")[i % 3] for i in events.column("id").to_pylist()])
    )
    df = spark.createDataFrame(table.to_pandas())
    expected = reference(query, table, time_column="ts", stream_column="src")
    assert len(expected) > 10
    assert expected != reference(query, table, time_column="ts")  # the streams matter
    assert on_spark(df, query, time_column="ts", stream_column="src", ranges=4) == expected


def test_query_column_holds_the_query_name(spark: Any, events_df: Any) -> None:
    """The ``query`` column is the name (header, given, or q1), never the text or its comment."""
    body = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] PARTITION BY [name] WITHIN 3 EVENTS"
    named = f"-- sells then buys, per ticker\nQUERY sell_buy: {body}"
    unnamed = f"-- sells then buys, per ticker\n{body}"
    assert {r["query"] for r in detect(events_df, named, time_column="ts").select("query").collect()} == {"sell_buy"}
    assert {r["query"] for r in detect(events_df, unnamed, time_column="ts").select("query").collect()} == {"q1"}
    given = detect(events_df, named, time_column="ts", query_id="mine").select("query").distinct().collect()
    assert [r["query"] for r in given] == ["mine"]
