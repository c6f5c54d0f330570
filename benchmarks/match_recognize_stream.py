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
  Then where the time went: the first micro-batch (Python workers start, plans compile)
  apart from the steady ones (rows/s of the batches after the first), and the CPU seconds
  per steady micro-batch of the JVM and of the Python workers (read from ``/proc`` for
  this process's descendants), the state commit and the operator's update time (Spark's
  progress reports, medians).

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
import threading
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
        marks: list[tuple[int, float, float, float]] = []  # batch done, wall, JVM, Python CPU

        def poll() -> None:
            while query.isActive:
                progress = query.lastProgress
                done = progress["batchId"] if progress else -1
                if not marks or marks[-1][0] != done:
                    marks.append((done, time.perf_counter() - t0, *tree_cpu()))
                time.sleep(0.2)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        query.awaitTermination()
        wall = time.perf_counter() - t0
        poller.join()
        assert query.exception() is None
        report_progress(query.recentProgress, marks, batch)
        got = spark.read.parquet(str(base / "out")).filter("symbol <> 99").count()
    expected = kleene.match_recognize(table, CLAUSES[name]).num_rows
    assert got == expected, (got, expected)
    print(f"| {name} (Spark local[2]) | {table.num_rows:,} | {batch:,} | {got:,} | "
          f"{wall:.1f} s wall | {table.num_rows / wall:,.0f} | | |")
    spark.stop()


def tree_cpu() -> tuple[float, float]:
    """CPU seconds (user + system) so far of this process's descendants: the JVM, the
    Python workers (Linux ``/proc``; zeros elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[float, str]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
        info[int(entry)] = ((int(fields[11]) + int(fields[12])) / tick, command)
    jvm = python = 0.0
    stack = list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        cpu, command = info.get(pid, (0.0, ""))
        if "java" in command:
            jvm += cpu
        elif "pyspark" in command:
            python += cpu
        stack.extend(children.get(pid, []))
    return jvm, python


def report_progress(progress: list[dict], marks: list[tuple[int, float, float, float]],
                    batch: int) -> None:
    """Where a Spark run's time went: first micro-batch against the steady ones."""
    first = next((m for m in marks if m[0] >= 0), None)
    last = marks[-1] if marks else None
    steady = [p for p in progress if p["batchId"] >= 1 and p["numInputRows"] >= batch]
    if first is None or last is None or not steady or last[0] <= first[0]:
        return
    rows = sum(p["numInputRows"] for p in progress if p["batchId"] > first[0])
    span = last[0] - first[0]
    ops = [p["stateOperators"][0] for p in steady if p["stateOperators"]]
    print(f"first micro-batch {first[1]:.1f} s; then {rows:,} rows in {last[1] - first[1]:.1f} s "
          f"({rows / (last[1] - first[1]):,.0f} rows/s); per later micro-batch: JVM "
          f"{(last[2] - first[2]) / span:.2f} s CPU, Python workers {(last[3] - first[3]) / span:.2f}"
          f" s CPU, trigger {statistics.median(p['durationMs']['triggerExecution'] for p in steady):,.0f}"
          f" ms, state update {statistics.median(o['allUpdatesTimeMs'] for o in ops):,.0f} ms, "
          f"commit {statistics.median(o['commitTimeMs'] for o in ops):,.0f} ms (medians)")


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
