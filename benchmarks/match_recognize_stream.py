"""MATCH_RECOGNIZE streaming throughput: rows/s in micro-batches of ``--batch`` rows.

Two measurements over the same rows (``benchmarks/match_recognize.py``'s random walk, 10
symbols, and its V shape and running-SUM clauses, WITHIN added so that every search ends):

* ``inprocess``: the incremental engine as each state partition runs it: per micro-batch
  and per PARTITION BY key, load the state from bytes, feed the batch's rows, save the
  state as bytes; CPU time (``time.process_time``), against the batch engine over the same
  rows (``kleene.match_recognize``); the outputs must agree row for row.
* ``spark``: :func:`kleene.spark.match_recognize_stream` end to end on ``local[2]``: one
  Parquet file of ``--batch`` rows per micro-batch (``maxFilesPerTrigger`` 1,
  ``availableNow``), written by :func:`~kleene.spark.start_match_recognize_stream`; wall time
  of the query (the session started before), rows/s, matches counted against in process.

Run::

    .venv/bin/python benchmarks/match_recognize_stream.py --rows 200000 --batch 10000
    .venv/bin/python benchmarks/match_recognize_stream.py --engine spark --rows 100000

Results go to docs/benchmarks.md, "MATCH_RECOGNIZE in Structured Streaming".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kleene  # noqa: E402
from kleene.language.match_recognize.parser import parse  # noqa: E402
from kleene.runtime.match_recognize.incremental import Incremental, PartitionState  # noqa: E402
from match_recognize import walk  # noqa: E402

CLAUSES = {
    "v_shape": """PARTITION BY symbol ORDER BY t
MEASURES MATCH_NUMBER() AS m, STRT.t AS start_t, LAST(DOWN.t) AS bottom_t, LAST(UP.t) AS end_t
ONE ROW PER MATCH AFTER MATCH SKIP TO LAST UP
PATTERN (STRT DOWN+ UP+) WITHIN 1000
DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)""",
    "running": """PARTITION BY symbol ORDER BY t
MEASURES MATCH_NUMBER() AS m, FIRST(t) AS start_t, COUNT(*) AS n, AVG(B.price) AS mean
ONE ROW PER MATCH PATTERN (A B+ C) WITHIN 1000
DEFINE B AS SUM(B.step) < 20 AND AVG(B.price) > 0, C AS price < PREV(price)""",
}


def in_process(name: str, table: pa.Table, batch: int, repeat: int) -> None:
    clause = CLAUSES[name]
    mr = parse(clause)
    times, batch_times = [], []
    for _ in range(repeat):
        t0 = time.process_time()
        engine = Incremental(mr, table.schema)
        states: dict[int, bytes] = {}
        outs = []
        for lo in range(0, table.num_rows, batch):
            chunk = table.slice(lo, batch)
            for key in pc.unique(chunk.column("symbol")).to_pylist():
                rows = chunk.filter(pc.equal(chunk.column("symbol"), key))
                raw = states.get(key)
                state = None if raw is None else PartitionState.from_bytes(raw)
                out, state = engine.feed(state, rows)
                states[key] = state.to_bytes()
                outs.append(out)
        for raw in states.values():  # the watermark passes everything
            out, _ = engine.feed(PartitionState.from_bytes(raw), None, horizon=10**12)
            outs.append(out)
        times.append(time.process_time() - t0)
        t0 = time.process_time()
        expected = kleene.match_recognize(table, clause)
        batch_times.append(time.process_time() - t0)
    got = pa.concat_tables(outs)
    key = ["symbol", "m"]
    assert got.sort_by([(k, "ascending") for k in key]).to_pylist() == \
        expected.sort_by([(k, "ascending") for k in key]).to_pylist(), name
    stream, whole = statistics.median(times), statistics.median(batch_times)
    print(f"| {name} | {table.num_rows:,} | {batch:,} | {got.num_rows:,} | {stream:.2f} s | "
          f"{table.num_rows / stream:,.0f} | {whole:.2f} s | {table.num_rows / whole:,.0f} |")


def on_spark(name: str, table: pa.Table, batch: int) -> None:
    from kleene.spark import local_session
    from kleene.spark.recognize_stream import match_recognize_stream, start_match_recognize_stream

    spark = local_session("local[2]", app_name="kleene-mr-stream-bench",
                          **{"spark.sql.shuffle.partitions": "2"})
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "in").mkdir()
        for i, lo in enumerate(range(0, table.num_rows, batch)):
            path = base / "in" / f"f{i:05d}.parquet"
            pq.write_table(table.slice(lo, batch), path)
            os.utime(path, (1e9 + i, 1e9 + i))
        far = pa.table({"symbol": [99], "t": [10**9], "price": [0], "step": [0]})
        pq.write_table(far.cast(table.schema), base / "in" / "f99999.parquet")
        os.utime(base / "in" / "f99999.parquet", (2e9, 2e9))
        src = spark.readStream.schema(spark.read.parquet(str(base / "in")).schema) \
            .option("maxFilesPerTrigger", 1).parquet(str(base / "in"))
        results = match_recognize_stream(src, CLAUSES[name], watermark="0 seconds")
        t0 = time.perf_counter()
        query = start_match_recognize_stream(
            results, str(base / "out"), checkpoint=str(base / "ck"),
            late_rows_path=str(base / "late"), available_now=True)
        query.awaitTermination()
        wall = time.perf_counter() - t0
        assert query.exception() is None
        got = spark.read.parquet(str(base / "out")).filter("symbol <> 99").count()
    expected = kleene.match_recognize(table, CLAUSES[name]).num_rows
    assert got == expected, (got, expected)
    print(f"| {name} (Spark local[2]) | {table.num_rows:,} | {batch:,} | {got:,} | "
          f"{wall:.1f} s wall | {table.num_rows / wall:,.0f} | | |")
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engine", choices=["inprocess", "spark"], default="inprocess")
    parser.add_argument("--clause", choices=sorted(CLAUSES), nargs="*", default=sorted(CLAUSES))
    args = parser.parse_args()
    table = walk(args.rows)
    print(f"load: {os.getloadavg()}")
    print("| clause | rows | rows per micro-batch | matches | streamed (CPU) | rows/s | "
          "batch engine (CPU) | rows/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.clause:
        if args.engine == "spark":
            on_spark(name, table, args.batch)
        else:
            in_process(name, table, args.batch, args.repeat)


if __name__ == "__main__":
    main()
