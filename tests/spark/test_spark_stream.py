"""Streaming on a real local SparkSession: restart from the checkpoint, exactness, late events.

One scenario drives three queries at once (partitioned; not partitioned;
not partitioned with CONSUME BY ANY) over a directory of JSON Lines files,
one file per micro-batch.  Phase 1 processes the first files and stops;
phase 2 adds files and restarts from the same checkpoints.  The union of
both phases must equal the in-process engine over the on-time rows sorted
by (time, id): nothing lost, nothing duplicated.  Injected late rows must
appear in the late-events output, with their count.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import kleene  # noqa: E402
from kleene.language.errors import UnsupportedError  # noqa: E402
from kleene.spark.stream import detect_stream, read_results, start_stream  # noqa: E402

SCHEMA = "id long, name string, type string, price double, ts long"
QUERIES = {
    "part": "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] "
    "PARTITION BY [name] WITHIN 30 seconds",
    "single": "SELECT * FROM S WHERE SELL as a; BUY as b; BUY as c FILTER a[price > 120] "
    "WITHIN 15 seconds",
    "consume": "SELECT * FROM S WHERE SELL as a; BUY as b FILTER b[price < 80] "
    "WITHIN 20 seconds CONSUME BY ANY",
    # a condition between events: the register engine, replayed the same way
    "registers": "SELECT * FROM S WHERE SELL as a; BUY as b FILTER b[price < a.price - 60] "
    "PARTITION BY [name] WITHIN 30 seconds",
}
SPAN = 40
"""Seconds of event time per file."""


@pytest.fixture(scope="module")
def stream_spark(spark: Any) -> Iterator[Any]:
    """The shared local[2] context, with its own SQL conf: two state partitions, not four.

    Every shuffle partition of a stateful operator is a RocksDB instance per
    micro-batch; two keep the test quick without changing the shared session.
    """
    session = spark.newSession()
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session


def _file_rows(
    rng: random.Random, i: int, next_id: list[int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """On-time rows of file ``i`` (shuffled, a few slightly behind the previous file) and late rows."""
    base = SPAN * i
    rows = []
    for _ in range(45):
        jitter = rng.random() < 0.1 and i > 0
        ts = rng.randrange(base - 5, base) if jitter else rng.randrange(base, base + SPAN)
        rows.append(
            {
                "name": rng.choice("xyz"),
                "type": rng.choice(["SELL", "BUY", "BUY", "OTHER"]),
                "price": float(rng.randrange(50, 150)),
                "ts": ts,
            }
        )
    late = []
    if i in (2, 4, 5):  # watermark at file i is (max time before it) - 10 s >= base - 11
        for _ in range(2 if i != 2 else 1):
            late.append(
                {"name": rng.choice("xyz"), "type": "SELL", "price": 200.0, "ts": base - 30}
            )
    rng.shuffle(rows)
    everything = rows + late
    rng.shuffle(everything)
    for row in everything:
        row["id"] = next_id[0] = next_id[0] + 1
    return rows, late


def _drop(directory: Path, name: str, rows: list[dict[str, Any]]) -> None:
    """Write a file next to the input directory, then rename it in (atomic for the file source)."""
    tmp = directory.parent / f".{name}.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # The file source takes files oldest first; files written within the same
    # second would tie, so give each its own modification time.
    stamp = time.time() + 2 * len(list(directory.iterdir()))
    os.utime(tmp, (stamp, stamp))
    tmp.rename(directory / f"{name}.json")


def _run(spark: Any, base: Path) -> None:
    queries = []
    for name, text in QUERIES.items():
        src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(base / "in"))
        res = detect_stream(src, text, time_column="ts", id_column="id", watermark="10 seconds")
        queries.append(
            start_stream(
                res,
                str(base / name / "out"),
                checkpoint=str(base / name / "ck"),
                late_events_path=str(base / name / "late"),
                available_now=True,
            )
        )
    for q in queries:
        q.awaitTermination(120)
        assert q.exception() is None


def _key(events: list[dict[str, Any]], start_time: Any, end_time: Any) -> tuple[Any, ...]:
    return (tuple(e["id"] for e in events), start_time, end_time)


def test_stream_restart_matches_engine(stream_spark: Any, tmp_path: Path) -> None:
    spark = stream_spark
    rng = random.Random(7)
    (tmp_path / "in").mkdir()
    next_id = [0]
    on_time: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    files = [_file_rows(rng, i, next_id) for i in range(7)]
    for i in range(4):
        _drop(tmp_path / "in", f"f{i}", files[i][0] + files[i][1])
    _run(spark, tmp_path)  # phase 1: stops when the four files are processed

    for i in range(4, 7):
        _drop(tmp_path / "in", f"f{i}", files[i][0] + files[i][1])
    # A far-future row of a type no query reads moves the watermark past everything else.
    _drop(
        tmp_path / "in",
        "f9",
        [{"id": 10_000, "name": "x", "type": "NOOP", "price": 0.0, "ts": 10_000}],
    )
    _run(spark, tmp_path)  # phase 2: restarts from the checkpoints

    for rows, lates in files:
        on_time += rows
        late += lates
    table = pa.Table.from_pylist(sorted(on_time, key=lambda r: (r["ts"], r["id"])))
    for name, text in QUERIES.items():
        expected = [
            (_key(list(ce.events), ce.events[0]["ts"], ce.events[-1]["ts"]), ce.positions)
            for ce in kleene.compile(text, time_column="ts").run(table)
        ]
        out = read_results(spark, str(tmp_path / name / "out")).collect()
        got = [
            (
                _key([e.asDict() for e in r["events"]], r["start_time"], r["end_time"]),
                tuple(r["positions"]),
            )
            for r in out
        ]
        assert expected, name
        assert len(got) == len(set(got)), f"{name}: duplicated output"
        assert Counter(k for k, _ in got) == Counter(k for k, _ in expected), name
        if "PARTITION BY" not in text:
            # Not partitioned: streaming positions are the batch positions.
            assert sorted(got) == sorted(expected), name
        late_rows = read_results(spark, str(tmp_path / name / "late")).collect()
        assert len(late_rows) == len(late) == 5, name
        assert sorted(r["id"] for r in late_rows) == sorted(r["id"] for r in late), name
        assert {r["reason"] for r in late_rows} == {"late"}


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM S WHERE SELL as a; BUY as b",
        "SELECT * FROM S WHERE SELL as a; BUY as b PARTITION BY [name] WITHIN 3 EVENTS",
        "SELECT * FROM S WHERE SELL as a; BUY as b PARTITION BY [name] WITHIN 3 seconds CONSUME BY ANY",
    ],
)
def test_stream_rejects_inexact_queries(stream_spark: Any, tmp_path: Path, text: str) -> None:
    src = stream_spark.readStream.schema(SCHEMA).json(str(tmp_path))
    with pytest.raises(UnsupportedError):
        detect_stream(src, text, time_column="ts")


def test_stream_cli_available_now(stream_spark: Any, tmp_path: Path) -> None:
    """``kleene stream --available-now`` over a directory: results, late rows and a summary."""
    import argparse
    import io

    from kleene.cli.stream import add_stream_parser

    parser = argparse.ArgumentParser(prog="kleene")
    add_stream_parser(parser.add_subparsers(dest="command"))
    inp = tmp_path / "in"
    inp.mkdir()
    rng = random.Random(3)
    next_id = [0]
    files = [_file_rows(rng, i, next_id) for i in range(3)]
    for i, (rows, late) in enumerate(files):
        _drop(inp, f"f{i}", rows + late)
    _drop(inp, "f9", [{"id": 10_000, "name": "x", "type": "NOOP", "price": 0.0, "ts": 10_000}])
    text = QUERIES["part"]
    args = parser.parse_args(
        [
            "stream",
            text,
            "--input-dir",
            str(inp),
            "--output-dir",
            str(tmp_path / "out"),
            "--checkpoint",
            str(tmp_path / "ck"),
            "--time-column",
            "ts",
            "--id-column",
            "id",
            "--schema",
            SCHEMA,
            "--available-now",
            "--max-files-per-trigger",
            "1",
            "--master",
            "local[2]",
        ]
    )
    err = io.StringIO()
    assert args.handler(args, err) == 0
    on_time = sorted((r for rows, _ in files for r in rows), key=lambda r: (r["ts"], r["id"]))
    expected = list(kleene.compile(text, time_column="ts").run(pa.Table.from_pylist(on_time)))
    assert f"{len(expected)} complex events" in err.getvalue()
    assert "1 late events" in err.getvalue()
    late = read_results(stream_spark, str(tmp_path / "out" / "_late")).collect()
    assert [r["id"] for r in late] == [files[2][1][0]["id"]]


def test_stream_cli_stderr_is_kleene_s_own(tmp_path: Path) -> None:
    """In a process of its own (its own JVM), ``kleene stream`` writes to stderr only its own
    lines: the log file's path, one progress line per micro-batch and the summary; Spark's,
    py4j's and the Python workers' lines go to the log file."""
    import subprocess
    import sys

    inp = tmp_path / "in"
    inp.mkdir()
    rng = random.Random(5)
    next_id = [0]
    for i in range(2):
        rows, late = _file_rows(rng, i, next_id)
        _drop(inp, f"f{i}", rows + late)
    log = tmp_path / "spark.log"
    done = subprocess.run(
        [sys.executable, "-m", "kleene", "stream", QUERIES["part"], "--input-dir", str(inp),
         "--output-dir", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"),
         "--time-column", "ts", "--id-column", "id", "--schema", SCHEMA, "--available-now",
         "--max-files-per-trigger", "1", "--master", "local[1]", "--spark-log", str(log)],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"kleene stream: Spark's log: {log}"
    assert all(line.startswith("kleene stream: ") for line in lines), done.stderr
    batches = [line for line in lines if line.startswith("kleene stream: batch ")]
    assert len(batches) >= 2 and "rows in" in batches[0]
    assert "complex events in" in lines[-2] and "late events in" in lines[-1]
    for noise in ("WARN", "log4j", "py4j", "Traceback", "pyspark", "INFO"):
        assert noise not in done.stderr
    logged = log.read_text()
    assert "log4j" in logged or "WARN" in logged  # Spark's lines are in the log file
