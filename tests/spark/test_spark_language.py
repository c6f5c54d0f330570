"""kleene.spark.detect over the whole language, on random queries, against the in-process engine.

Random queries (the differential tests' generators: every CEL operator, every strategy,
conditions between events, CONSUME BY, LIMIT, projections) get a window of every kind and
maybe PARTITION BY, and run over one random stream of a few hundred events on a real local
SparkSession, with few rows per position range (``ranges=`` large for the input), so that range
boundaries are many.  Every query's complex events (interval, positions, partition, events'
data) must equal the engine's over the whole stream, sorted by (time, id).

Spark's fixed cost is paid few times: the results of all queries of a batch are unioned and
collected by one job.  The test prints how many cases produced complex events, which plan each
took, and how many cases a plan that is not the one under test gets wrong (the stream cut at
the range boundaries without overlap, and the query without its strategy or CONSUME BY), so that
a broken overlap or planner would show.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from dataclasses import replace
from functools import reduce
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kleene
from kleene.language.errors import KleeneError
from kleene.language.printer import to_ceql
from kleene.spark import detect, plan_for

N_EVENTS = 360
RANGES = 9
"""40 rows per range: a window of up to 8 events or seconds crosses many boundaries."""
MAX_OUTPUT = 3000
"""A query with more complex events than this on the stream is left out (counted)."""


CASES = {
    "shuffled": int(os.environ.get("KLEENE_SPARK_CASES", "14")),
    "ordered": int(os.environ.get("KLEENE_SPARK_CASES", "10")),
}
"""Queries per input (``KLEENE_SPARK_CASES`` for a longer run, documented in docs/reliability.md)."""


def make_stream(seed: int, n: int = N_EVENTS) -> pa.Table:
    """Events with the generators' attributes (type, v, w, s, k), times ``ts`` in seconds with
    ties, and ``m``, which never goes down either (the engine refuses an attribute window on an
    attribute that does) but moves unlike ``ts``."""
    rng = random.Random(seed)
    ts, m, rows = 0, 0, []
    for i in range(n):
        ts += rng.choice((0, 1, 1, 2))
        m += rng.choice((0, 0, 1, 3))
        rows.append({
            "id": i, "type": rng.choice("AABBCCD"), "v": rng.randrange(10), "w": rng.randrange(10),
            "s": rng.choice("xyz"), "k": rng.randrange(3), "ts": ts, "m": m,
        })
    return pa.Table.from_pylist(rows)


PREDICATES = ("v > 3", "v < 6", "w >= 4", "s = 'x'", "s != 'y'", "v + w > 8", "w % 2 = 0")


def _unit(rng: random.Random, var: str, types: str = "ABC") -> str:
    """One event bound to ``var``, maybe filtered inline."""
    text = f"{rng.choice(types)} as {var}"
    return text


def _where(rng: random.Random) -> tuple[str, list[str]]:
    """A pattern of one of the shapes below (every operator of the language), and its filters."""
    a, b, c = _unit(rng, "a"), _unit(rng, "b"), _unit(rng, "c")
    t = rng.choice("ABC")
    shapes = [
        (f"{a} ; {b}", "ab"),
        (f"{a} ; {b}+ ; {c}".replace(f"{b}+", f"({b})+"), "abc"),
        (f"{a} : {b}", "ab"),
        (f"{a} ; ({b}):+ ; {c}", "abc"),
        (f"({a} OR {b}) ; {c}", "abc"),
        (f"{a} ; NOT({t}) ; {b}", "ab"),
        (f"{a} ; ({b})* ; {c}", "abc"),
        (f"{a} ; ({b}){{1,3}} ; {c}", "abc"),
        (f"({a} ; {b}) AND ({a} ; _ as d)", "abd"),
        (f"({a} ; {b}) ALL {c}", "abc"),
        (f"({a} ; {b}) UNLESS {t}", "ab"),
        (f"({a} ; ({b})+) UNLESS ({t} ; {t})", "ab"),
        (f"_ as a ; {b} ; {c}", "abc"),
    ]
    where, variables = rng.choice(shapes)
    filters = [f"{v}[{rng.choice(PREDICATES)}]" for v in variables if v != "d" and rng.random() < 0.4]
    if rng.random() < 0.45:  # a condition between events: the register engine
        later = rng.choice([v for v in variables if v not in "ad"])
        op = rng.choice((">", "<", "!=", ">="))
        filters.append(f"{later}[{rng.choice('vw')} {op} a.{rng.choice('vw')}]")
    return where, filters


def random_query(rng: random.Random) -> str:
    """A query aimed at output: two or three events of common types, a window of every kind,
    each strategy, maybe PARTITION BY, CONSUME BY, LIMIT or a projection."""
    where, filters = _where(rng)
    strategy = rng.choice(("", "", "ANY ", "NEXT ", "NEXT ", "LAST ", "LAST ", "MAX ", "MAX ", "STRICT "))
    items = rng.choice(("*", "*", "*", "a", "a, b", "b"))
    text = f"SELECT {strategy}{items} FROM S WHERE {where}"
    if filters:
        text += " FILTER " + " AND ".join(filters)
    partitioned = rng.random() < 0.3
    if partitioned:
        text += " PARTITION BY [k]"
    # (no query without a window: on hundreds of events the runs of `A ; B+ ; C` would be exponential;
    # tests/spark/test_spark_batch.py runs unwindowed queries)
    window = rng.choice(("events", "events", "time", "time", "attr_ts", "attr_m"))
    limit = rng.random() < 0.12
    if window == "events":
        text += f" WITHIN {rng.randint(1, 8)} EVENTS"
    elif window == "time":
        text += f" WITHIN {rng.randint(1, 8)} seconds"
    elif window == "attr_ts":
        text += f" WITHIN {rng.randint(1, 8)} [ts]"
    elif window == "attr_m":  # an attribute that never goes down, but is not the time
        text += f" WITHIN {rng.randint(0, 6)} [m]"
    roll = rng.random()
    if roll < 0.15:
        text += " CONSUME BY ANY"
    elif roll < 0.25 and partitioned:
        text += " CONSUME BY PARTITION"
    if limit:
        text += f" LIMIT {rng.randint(1, 3)}"
    return text


def draw_queries(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct query texts, the same every run."""
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        out[random_query(rng)] = None
    return list(out)


def _key(start: int, end: int, positions: Any, events: Any, partition: Any) -> tuple[Any, ...]:
    evs = tuple(tuple(sorted((k, v) for k, v in e.items() if v is not None)) for e in events)
    return (end, start, tuple(positions), evs, partition)


def engine_run(q: kleene.Query, table: pa.Table, cap: int | None = None) -> list[tuple[Any, ...]] | None:
    """The engine's complex events over the whole stream, fed 40 rows at a time; None once more
    than ``cap`` (an explosive query is left out before it fills memory)."""
    session = q.session()
    out: list[tuple[Any, ...]] = []
    data = table.combine_chunks()
    for lo in range(0, data.num_rows, 40):
        piece = data.slice(lo, 40).to_batches()[0]
        found = session.feed(piece, positions=np.arange(lo, lo + piece.num_rows))
        out += [_key(c.start, c.end, c.positions, c.events, c.partition) for c in found]
        if cap is not None and len(out) > cap:
            return None
    out += [_key(c.start, c.end, c.positions, c.events, c.partition) for c in session.flush()]
    return sorted(out)


def cut_run(q: kleene.Query, table: pa.Table, ranges: int) -> list[tuple[Any, ...]]:
    """The stream cut into ``ranges`` pieces evaluated apart, no overlap: what ranges would give
    without the overlap (positions kept global)."""
    n = table.num_rows
    out = []
    for r in range(ranges):
        lo, hi = r * n // ranges, (r + 1) * n // ranges
        if hi > lo:
            piece = table.slice(lo, hi - lo).combine_chunks().to_batches()[0]
            found = q.session().feed(piece, positions=np.arange(lo, hi))
            out += [_key(c.start, c.end, c.positions, c.events, c.partition) for c in found]
    return sorted(out)


def on_spark(results: list[Any]) -> dict[str, list[tuple[Any, ...]]]:
    got: dict[str, list[tuple[Any, ...]]] = {}
    for r in results:
        part = tuple(json.loads(r["partition"]).values()) if r["partition"] is not None else None
        events = [e.asDict() for e in r["events"]]
        got.setdefault(r["query"], []).append(_key(r["start"], r["end"], tuple(r["positions"]), events, part))
    return {k: sorted(v) for k, v in got.items()}


@pytest.fixture(scope="module")
def stream() -> pa.Table:
    return make_stream(11)


@pytest.fixture(scope="module")
def shuffled_df(spark: Any, stream: pa.Table) -> Any:
    """The stream shuffled (positions by the general path: sample, buckets, ranks), cached."""
    rng = random.Random(3)
    order = list(range(stream.num_rows))
    rng.shuffle(order)
    df = spark.createDataFrame(stream.take(pa.array(order)).to_pandas()).cache()
    df.count()
    return df


@pytest.fixture(scope="module")
def ordered_df(spark: Any, stream: pa.Table, tmp_path_factory: Any) -> Any:
    """The stream in time order, one Parquet file read in several partitions (the fast path)."""
    path = tmp_path_factory.mktemp("language") / "events.parquet"
    pq.write_table(stream, path, row_group_size=40)
    saved = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2k")
    try:
        df = spark.read.parquet(str(path)).cache()
        df.count()
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", saved)
    assert df.rdd.getNumPartitions() >= 4
    return df


def _prepare(texts: list[str], table: pa.Table, skipped: Counter[str]) -> list[tuple[str, kleene.Query, list[Any]]]:
    cases = []
    for text in texts:
        try:
            q = kleene.compile(text, time_column="ts")
        except KleeneError as err:
            skipped[f"rejected: {str(err).splitlines()[0][:60]}"] += 1
            continue
        expected = engine_run(q, table, MAX_OUTPUT)
        if expected is None:
            skipped[f"more than {MAX_OUTPUT} complex events"] += 1
            continue
        cases.append((text, q, expected))
    return cases


@pytest.mark.parametrize("path", ["shuffled", "ordered"])
def test_random_queries_match_engine(
    spark: Any, stream: pa.Table, shuffled_df: Any, ordered_df: Any, path: str
) -> None:
    from pyspark.sql import functions as F

    started = time.perf_counter()
    texts = draw_queries(CASES[path], seed=10 if path == "shuffled" else 4)
    skipped: Counter[str] = Counter()
    cases = _prepare(texts, stream, skipped)
    df = shuffled_df if path == "shuffled" else ordered_df
    order_by = "id" if path == "shuffled" else None
    time_type = df.schema["ts"].dataType
    plans: Counter[str] = Counter()
    frames = []
    for i, (_text, q, _) in enumerate(cases):
        plans[plan_for(q, time_type, RANGES).mode] += 1
        found = detect(df, q, order_by=order_by, ranges=RANGES, query_id=f"c{i}")
        # (one union for every query: the partition struct's type differs, JSON does not)
        frames.append(found.withColumn("partition", F.to_json(F.col("partition")) if q.partition_by
                                       else F.col("partition")))
    planned = time.perf_counter()
    results = reduce(lambda a, b: a.unionByName(b), frames).collect()
    collected = time.perf_counter()
    got = on_spark(results)
    produced = cut_differs = strategy_matters = consume_matters = 0
    wrong = []
    for i, (text, q, expected) in enumerate(cases):
        if got.get(f"c{i}", []) != expected:
            wrong.append(text)
        produced += bool(expected)
        if q.ast.within is not None and not q.partition_by and cut_run(q, stream, RANGES) != expected:
            cut_differs += 1
        if q.ast.select.strategy not in ("ALL", "ANY") or q.ast.consume != "NONE":
            plain = kleene.compile(to_ceql(replace(q.ast, select=replace(q.ast.select, strategy="ALL"),
                                                   consume="NONE")), time_column="ts")
            if engine_run(plain, stream, 3 * MAX_OUTPUT) != expected:
                if q.ast.consume != "NONE":
                    consume_matters += 1
                else:
                    strategy_matters += 1
    print(f"\n{path}: {len(cases)} cases ({dict(skipped)} left out), plans {dict(plans)}; "
          f"{produced} produced complex events; the stream cut at {RANGES} boundaries without "
          f"overlap differs in {cut_differs}; the strategy changes the output in {strategy_matters}, "
          f"CONSUME BY in {consume_matters}; {planned - started:.0f} s to plan, "
          f"{collected - planned:.0f} s for the Spark job")
    assert not wrong, f"{len(wrong)} queries differ on Spark, the first: {wrong[0]}"
    assert len(cases) >= 0.8 * len(texts)
    assert produced >= len(cases) // 2
    assert cut_differs >= 3, "the cases should cross range boundaries"
    assert plans["ranges"] >= len(cases) // 3 and plans["single"] and plans["partitioned"]
