"""MATCH_RECOGNIZE in Structured Streaming on a real local[2] session, against the in-process engine.

One scenario drives three clauses at once (PARTITION BY and none; ONE ROW and ALL ROWS;
skip modes PAST LAST ROW, TO NEXT ROW and TO LAST; WITHIN and none) over a directory of
JSON Lines files, one file per micro-batch, some rows a little behind the previous file,
a few far behind (late).  Phase 1 processes the first files and stops; phase 2 adds
files and restarts from the same checkpoints; a last file holds one far-future row of
its own partition, in the last file, moves the watermark past everything else (the
timers then fire in a batch without data).  Then:

* with WITHIN, the union of both phases equals :func:`kleene.match_recognize` over the
  on-time rows (the far-future row excluded: it is never released), row for row,
  MATCH_NUMBER() included, nothing duplicated;
* without WITHIN, each partition's output is the in-process result's first matches
  (a match still growing at the end is undecided in a stream);
* the late rows appear once each in the late-rows output, with reason ``late``.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import kleene
from kleene.language.errors import UnsupportedError
from kleene.spark.recognize_stream import (
    match_recognize_stream,
    release_order,
    start_match_recognize_stream,
)
from kleene.spark.stream import read_results

SCHEMA = "id long, name string, price double, ts long"
CLAUSES = {
    "part_one": "PARTITION BY name ORDER BY ts MEASURES MATCH_NUMBER() AS m, FIRST(A.id) AS a_id, "
    "LAST(B.id) AS b_id, COUNT(B.*) AS nb, AVG(B.price) AS avg_b, LAST(C.id) AS c_id "
    "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+ C?) WITHIN 30 "
    "DEFINE A AS price > 110, B AS price < PREV(price) OR SUM(B.price) < 250, C AS price > 130",
    "all_next": "ORDER BY ts MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c, COUNT(*) AS n, "
    "FINAL MAX(U.price) AS top ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW "
    "PATTERN (D+ U+) WITHIN 20 DEFINE D AS price < PREV(price), U AS price > PREV(price)",
    "no_within": "PARTITION BY name ORDER BY ts MEASURES MATCH_NUMBER() AS m, FIRST(id) AS s, "
    "LAST(id) AS e, COUNT(*) AS n ONE ROW PER MATCH AFTER MATCH SKIP TO LAST B "
    "PATTERN (A B+) DEFINE A AS price >= 100, B AS price > PREV(price) - 40",
}
SPAN = 40
"""Seconds of event time per file."""


@pytest.fixture(scope="module")
def stream_spark(spark: Any) -> Iterator[Any]:
    """The shared local[2] context with two shuffle partitions (two RocksDB instances per
    stateful micro-batch instead of four)."""
    session = spark.newSession()
    session.conf.set("spark.sql.shuffle.partitions", "2")
    yield session


def _file_rows(rng: random.Random, i: int, used: set[int], next_id: list[int]) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]]]:
    """On-time rows of file ``i`` (distinct times; some a few seconds behind the previous
    file) and late rows (30 s behind: the watermark is 10 s)."""
    base = SPAN * i
    rows = []
    while len(rows) < 30:
        behind = i > 0 and rng.random() < 0.1
        ts = rng.randrange(base - 5, base) if behind else rng.randrange(base, base + SPAN)
        if ts in used:
            continue
        used.add(ts)
        rows.append({"name": rng.choice("xy"), "price": float(rng.randrange(50, 150)), "ts": ts})
    late = [{"name": rng.choice("xy"), "price": 140.0, "ts": base - 30 - k}
            for k in range(2 if i in (3, 4) else 1 if i == 2 else 0)]
    everything = rows + late
    rng.shuffle(everything)
    for row in everything:
        row["id"] = next_id[0] = next_id[0] + 1
    return rows, late


def _drop(directory: Path, name: str, rows: list[dict[str, Any]]) -> None:
    """Write a file beside the input directory, then rename it in (atomic for the file
    source), each with its own modification time (the source takes the oldest first)."""
    tmp = directory.parent / f".{name}.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    stamp = time.time() + 2 * len(list(directory.iterdir()))
    os.utime(tmp, (stamp, stamp))
    tmp.rename(directory / f"{name}.json")


def _run(spark: Any, base: Path) -> None:
    """Each clause in turn (one at a time: on a loaded machine, concurrent queries' Python
    workers miss Spark's 10 s connect-back timeout).  A query that still fails that way is
    restarted from its checkpoint, which must (and is checked to) lose and duplicate nothing."""
    for name, clause in CLAUSES.items():
        for attempt in range(4):
            src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(
                str(base / "in"))
            results = match_recognize_stream(src, clause, watermark="10 seconds")
            query = start_match_recognize_stream(
                results, str(base / name / "out"), checkpoint=str(base / name / "ck"),
                late_rows_path=str(base / name / "late"), available_now=True)
            query.awaitTermination(300)
            error = query.exception()
            if error is None:
                break
            assert "failed to connect back" in str(error) and attempt < 3, str(error)[:2000]
            print(f"{name}: a Python worker missed the connect-back timeout; restarting")


def _rows(records: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(sorted(r.items())) for r in records)


def test_stream_restart_equals_in_process(stream_spark: Any, tmp_path: Path) -> None:
    spark = stream_spark
    rng = random.Random(11)
    (tmp_path / "in").mkdir()
    used: set[int] = set()
    next_id = [0]
    files = [_file_rows(rng, i, used, next_id) for i in range(5)]
    for i in range(3):
        _drop(tmp_path / "in", f"f{i}", files[i][0] + files[i][1])
    _run(spark, tmp_path)  # phase 1: stops when the three files are processed
    far = {"id": 10_000, "name": "zz", "price": 0.0, "ts": 10_000}  # with the last file
    for i in range(3, 5):
        _drop(tmp_path / "in", f"f{i}", files[i][0] + files[i][1] + [far] * (i == 4))
    _run(spark, tmp_path)  # phase 2: restarts from the checkpoints

    on_time = [r for rows, _ in files for r in rows]
    late = [r for _, rows in files for r in rows]
    table = pa.Table.from_pylist(on_time)
    for name, clause in CLAUSES.items():
        expected = kleene.match_recognize(table, clause).to_pylist()
        got = [{k: v for k, v in r.asDict().items() if k != "batch"}
               for r in read_results(spark, str(tmp_path / name / "out")).collect()]
        assert expected, name
        assert max(_rows(got).values()) == 1, f"{name}: duplicated output"
        if "WITHIN" in clause:
            assert _rows(got) == _rows(expected), name
        else:
            for part in "xy":
                mine = sorted((r for r in got if r["name"] == part), key=lambda r: r["m"])
                theirs = [r for r in expected if r["name"] == part]
                assert mine == theirs[: len(mine)], (name, part)
                assert len(mine) >= len(theirs) - 1, (name, part)  # only the last can wait
        late_rows = read_results(spark, str(tmp_path / name / "late")).collect()
        assert sorted(r["id"] for r in late_rows) == sorted(r["id"] for r in late), name
        assert len(late_rows) == 5 and {r["reason"] for r in late_rows} == {"late"}, name
        # RocksDB changelog checkpointing (kleene.spark.session.CHANGELOG): each commit wrote
        # the changed keys (N.changelog), not a zipped snapshot of the whole store per batch
        state = [f.name for f in (tmp_path / name / "ck" / "state").rglob("*") if f.is_file()]
        changelogs = [f for f in state if f.endswith(".changelog")]
        snapshots = [f for f in state if f.endswith(".zip")]
        assert changelogs and len(snapshots) < len(changelogs), (name, sorted(state))


@pytest.mark.parametrize(("clause", "message"), [
    ("ORDER BY ts MEASURES 1 AS x PATTERN (A $) DEFINE A AS price > 1", "the $ anchor"),
    ("ORDER BY ts MEASURES NEXT(price) AS x PATTERN (A) DEFINE A AS price > 1", "NEXT cannot"),
    ("ORDER BY ts DESC MEASURES 1 AS x PATTERN (A) DEFINE A AS price > 1", "cannot be DESC"),
])
def test_stream_refuses_what_it_cannot_do_exactly(stream_spark: Any, tmp_path: Path,
                                                  clause: str, message: str) -> None:
    (tmp_path / "in").mkdir()
    src = stream_spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))
    with pytest.raises(UnsupportedError, match=re.escape(message)) as err:
        match_recognize_stream(src, clause)
    assert "^" in str(err.value)  # the caret under the culprit


def test_release_order_is_time_then_contents_and_converts_only_tied_rows() -> None:
    """Rows are released by event time, ties by their contents' ``repr`` whatever the arrival
    order (the committed order of the previous version, written out here as the oracle); only
    the tied rows are converted to Python for it: none when the times are distinct."""
    rng = random.Random(5)
    with_ties = 0
    for trial in range(300):
        n = rng.randrange(0, 40)
        distinct = trial % 3 == 0
        times = rng.sample(range(1000), n) if distinct else [rng.randrange(8) for _ in range(n)]
        rows = pa.table({"name": [rng.choice(["a", "b", None]) for _ in range(n)],
                         "price": [rng.choice([1.0, 2.5, None, 10.0]) for _ in range(n)],
                         "id": [rng.randrange(20) for _ in range(n)]})
        texts = [repr(tuple(r.values())) for r in rows.to_pylist()]
        expected = sorted(range(n), key=lambda i: (times[i], texts[i]))
        order, tied = release_order(pa.array(times, pa.int64()), rows)
        assert order.to_pylist() == expected, trial
        counts = Counter(times)
        assert tied == sum(c for c in counts.values() if c > 1), trial
        with_ties += tied > 0
        if distinct:
            assert tied == 0
    assert with_ties > 150, with_ties  # the ties path ran often


def test_the_sink_runs_one_job_per_batch_plus_one_per_output_written(stream_spark: Any,
                                                                    tmp_path: Path) -> None:
    """The ``foreachBatch`` sink counts both kinds of rows in one job, then writes only what is
    there: Spark jobs of the run = micro-batches + outputs written (asking each output whether it
    was empty, as before, cost a job more per micro-batch: 9 jobs instead of 6 here).  Jobs are
    counted by the run's job group, which Structured Streaming sets to the run id."""
    (tmp_path / "in").mkdir()
    for i in range(2):
        rows = [{"id": 100 * i + k, "name": "xy"[k % 2], "price": float((k * 7) % 11),
                 "ts": 100 * i + k} for k in range(40)]
        if i == 1:
            rows.append({"id": 999, "name": "x", "price": 1.0, "ts": 5})  # behind the watermark
        _drop(tmp_path / "in", f"f{i}", rows)
    clause = ("PARTITION BY name ORDER BY ts MEASURES MATCH_NUMBER() AS m, COUNT(*) AS n "
              "ONE ROW PER MATCH PATTERN (A B+) WITHIN 30 DEFINE B AS price > PREV(price)")
    src = stream_spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(
        str(tmp_path / "in"))
    query = start_match_recognize_stream(
        match_recognize_stream(src, clause, watermark="0 seconds"), str(tmp_path / "out"),
        checkpoint=str(tmp_path / "ck"), late_rows_path=str(tmp_path / "late"), available_now=True)
    query.awaitTermination(300)
    assert query.exception() is None
    batches = len(query.recentProgress)
    written = [d for kind in ("out", "late") if (tmp_path / kind).exists()
               for d in (tmp_path / kind).iterdir() if d.name.startswith("batch=")]
    late = read_results(stream_spark, str(tmp_path / "late")).collect()
    assert [r["id"] for r in late] == [999]
    jobs = stream_spark.sparkContext.statusTracker().getJobIdsForGroup(str(query.runId))
    assert batches >= 2 and len(written) >= 3, (batches, written)
    assert len(jobs) == batches + len(written), (len(jobs), batches, len(written))
