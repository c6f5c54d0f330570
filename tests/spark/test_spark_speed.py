"""What keeps ``kleene run --engine spark`` short: machine-independent figures (jobs, JVM options).

Wall times on a shared 2-core machine move by 2x with the load, so the speed work on the
flights benchmark (docs/benchmarks.md) is pinned here by what does not: how many Spark jobs a
run starts, that the Parquet schema comes from the footer (no inference job) and equals
Spark's own, and the JIT option a local session starts with.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kleene.cli import main
from kleene.cli.spark_run import (
    NANOS_AS_LONG,
    QUICK_JIT_ROWS,
    parquet_schema,
    quick_jit,
    row_index_positions,
)
from kleene.spark import textfile
from kleene.spark.session import (
    CACHE_ENV,
    DRIVER_JAVA_OPTIONS,
    DUMP_OPTION,
    QUICK_JIT,
    class_archive,
    session_settings,
)

QUERY = (
    "SELECT * FROM S WHERE DEP AS a ; DEP AS b FILTER a[delay > 60] AND b[delay > 60] "
    "PARTITION BY [carrier] WITHIN 1 hours"
)
MAX_JOBS = 3
"""Q1's jobs: the order check, the read and shuffle by carrier, the evaluation and write."""
SORTED_PARQUET_JOBS = 2
"""On one Parquet file in time order the positions are its row indexes: no order check
(above the size that every task reads: the read and shuffle by key, the evaluation and write)."""
EACH_TASK_JOBS = 1
"""A file in time order small enough for every task to read (``textfile.EACH_TASK_BYTES``):
each task reads it, keeps its keys, evaluates and writes; no shuffle."""


def departures(n: int = 600) -> pd.DataFrame:
    """Departures every 2 minutes, in time order, three carriers, every 17th cancelled."""
    times = pd.Timestamp("2013-01-01T05:00:00Z") + pd.to_timedelta(range(0, 2 * n, 2), unit="min")
    return pd.DataFrame(
        {
            "time": times,
            "type": ["CANCELLED" if i % 17 == 0 else "DEP" for i in range(n)],
            "carrier": [("UA", "AA", "B6")[i % 3] for i in range(n)],
            "delay": [float((i * 37) % 120) if i % 17 else float("nan") for i in range(n)],
            "flight": list(range(n)),
        }
    )


def jobs_of(spark: Any, argv: list[str]) -> int:
    """Run the CLI in this process's session; the number of Spark jobs it started."""
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    assert main(argv) == 0
    return len(set(tracker.getJobIdsForGroup(None)) - before)


def parsed(path: Path) -> list[Any]:
    files = sorted(path.glob("part-*")) if path.is_dir() else [path]
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    for r in rows:
        if isinstance(r.get("partition"), dict):
            r["partition"] = list(r["partition"].values())
    return sorted(rows, key=lambda r: (r["end"], r["start"], r["positions"]))


def test_q1_runs_in_one_job_on_a_sorted_parquet_file(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Q1 on a time-ordered pandas Parquet file: no schema inference, no sample or count, no order
    check (the file's row indexes are the positions), and no shuffle: every task reads the small
    file and keeps its carriers.  Above that size, Spark's reader and one shuffle (two jobs).  The
    same rows out of time order take the general path (order check, sort).  The same complex
    events every time.
    """
    data, shuffled = tmp_path / "flights.parquet", tmp_path / "shuffled.parquet"
    departures().to_parquet(data)
    departures().sample(frac=1.0, random_state=3).reset_index(drop=True).to_parquet(shuffled)
    common = ["run", QUERY, "--time-column", "time", "--no-progress"]
    assert main([*common, "--input", str(data), "-o", str(tmp_path / "py.jsonl")]) == 0
    expected = parsed(tmp_path / "py.jsonl")
    assert expected
    jobs = jobs_of(spark, [*common, "--input", str(data), "-o", str(tmp_path / "spark"), "--engine", "spark"])
    print(f"{jobs} Spark jobs on the sorted file")
    assert jobs == EACH_TASK_JOBS
    assert parsed(tmp_path / "spark") == expected
    with monkeypatch.context() as patch:
        patch.setattr(textfile, "EACH_TASK_BYTES", 0)
        jobs = jobs_of(spark, [*common, "--input", str(data), "-o", str(tmp_path / "large"), "--engine", "spark"])
    print(f"{jobs} Spark jobs on the sorted file read by Spark's reader")
    assert jobs == SORTED_PARQUET_JOBS
    assert parsed(tmp_path / "large") == expected
    jobs = jobs_of(spark, [*common, "--input", str(shuffled), "-o", str(tmp_path / "unsorted"), "--engine", "spark"])
    print(f"{jobs} Spark jobs on the shuffled file")
    assert jobs > MAX_JOBS  # the order check fails: the sample, counts and sort of the general path
    assert parsed(tmp_path / "unsorted") == expected  # times are distinct: the same positions


def test_row_indexes_are_positions_only_for_a_time_ordered_parquet_file(tmp_path: Path) -> None:
    frame = departures(50)
    frame.to_parquet(tmp_path / "sorted.parquet")
    frame.iloc[::-1].to_parquet(tmp_path / "reversed.parquet")
    frame.to_csv(tmp_path / "sorted.csv", index=False)
    pq.write_table(pa.table({"time": [1, None, 3]}), tmp_path / "nulls.parquet")
    pq.write_table(pa.table({"time": ["1", "2"]}), tmp_path / "texts.parquet")
    pq.write_table(pa.table({"time": [1.0, float("nan")]}), tmp_path / "nan.parquet")
    pq.write_table(pa.table({"time": [5, 5, 5]}), tmp_path / "ties.parquet")
    index = "_metadata.row_index"
    assert row_index_positions(str(tmp_path / "sorted.parquet"), "parquet", "time") == index
    assert row_index_positions(str(tmp_path / "ties.parquet"), "parquet", "time") == index  # ties: file order
    assert row_index_positions(str(tmp_path / "reversed.parquet"), "parquet", None) == index  # no time: file order
    for name in ("reversed", "nulls", "texts", "nan"):
        assert row_index_positions(str(tmp_path / f"{name}.parquet"), "parquet", "time") is None, name
    assert row_index_positions(str(tmp_path / "sorted.csv"), "csv", "time") is None
    assert row_index_positions(str(tmp_path), "parquet", "time") is None  # a directory


def test_parquet_schema_is_spark_s_own(spark: Any, tmp_path: Path) -> None:
    """The footer's schema equals what Spark infers, for every type it maps, nanoseconds included."""
    n = 3
    table = pa.table(
        {
            "b": pa.array([True, False, None]),
            "i8": pa.array([1, -2, None], pa.int8()),
            "i16": pa.array([1, -2, None], pa.int16()),
            "i32": pa.array([1, -2, None], pa.int32()),
            "i64": pa.array([1, -2, None], pa.int64()),
            "f32": pa.array([1.5, None, 2.0], pa.float32()),
            "f64": pa.array([1.5, None, 2.0], pa.float64()),
            "s": pa.array(["x", None, "z"]),
            "cat": pa.array(["x", "y", "x"]).dictionary_encode(),
            "d": pa.array([dt.date(2013, 1, 1)] * n, pa.date32()),
            "utc_us": pa.array([0, 1, 2], pa.timestamp("us", tz="UTC")),
            "naive_ms": pa.array([0, 1, 2], pa.timestamp("ms")),
            "utc_ns": pa.array([0, 1, 2], pa.timestamp("ns", tz="UTC")),
        }
    )
    data = tmp_path / "types.parquet"
    pq.write_table(table, data)
    saved = spark.conf.get(NANOS_AS_LONG, "false")
    spark.conf.set(NANOS_AS_LONG, "true")
    try:
        inferred = spark.read.parquet(str(data)).schema
    finally:
        spark.conf.set(NANOS_AS_LONG, saved)
    mine = parquet_schema(str(data), nanos_as_long=True)
    assert mine is not None
    assert mine == inferred
    assert mine["utc_ns"].dataType.typeName() == "long"
    # Nanoseconds as Spark's timestamps would fail to read: left to Spark (which reports it).
    assert parquet_schema(str(data), nanos_as_long=False) is None


@pytest.mark.parametrize(
    "column",
    [
        pa.array([1, 2], pa.uint32()),
        pa.array([Decimal("1.5"), None], pa.decimal128(5, 2)),
        pa.array([[1], [2, 3]]),
        pa.array([b"x", b"y"], pa.binary()),
        pa.array([{"x": 1}, {"x": 2}]),
    ],
    ids=["unsigned", "decimal", "list", "binary", "struct"],
)
def test_parquet_schema_leaves_other_types_to_spark(tmp_path: Path, column: pa.Array) -> None:
    data = tmp_path / "other.parquet"
    pq.write_table(pa.table({"time": pa.array([1, 2], pa.int64()), "x": column}), data)
    assert parquet_schema(str(data), nanos_as_long=True) is None
    assert parquet_schema(str(tmp_path), nanos_as_long=True) is None  # a directory


def test_a_small_input_starts_the_jvm_with_c1_only(tmp_path: Path) -> None:
    """``kleene run --engine spark`` asks for the C1-only JIT on a small input, not on a large one."""
    small, large = tmp_path / "small.parquet", tmp_path / "large.parquet"
    departures(100).to_parquet(small)
    pq.write_table(pa.table({"x": pa.array(range(QUICK_JIT_ROWS + 1), pa.int64())}), large)
    assert quick_jit(str(small), "parquet") and not quick_jit(str(large), "parquet")
    csv = tmp_path / "small.csv"
    departures(100).to_csv(csv, index=False)
    assert quick_jit(str(csv), "csv") and not quick_jit(str(tmp_path), "csv")
    assert session_settings("local[2]", quick_jit=True)[DRIVER_JAVA_OPTIONS] == QUICK_JIT
    assert DRIVER_JAVA_OPTIONS not in session_settings("local[2]")  # by default C2 as usual
    given = session_settings("local[2]", quick_jit=True, **{DRIVER_JAVA_OPTIONS: "-Xss4m"})
    assert given[DRIVER_JAVA_OPTIONS] == "-Xss4m"  # the caller's options replace it
    assert DRIVER_JAVA_OPTIONS not in session_settings("spark://cluster:7077", quick_jit=True)



def test_class_archive_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an archive the JVM is asked to build one at exit (a file of its own), then to map it."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    path = class_archive(QUICK_JIT)
    assert path.parent == tmp_path and path.suffix == ".jsa"
    building = session_settings("local[2]", quick_jit=True, class_archive=True)[DRIVER_JAVA_OPTIONS]
    assert building == f"{QUICK_JIT} {DUMP_OPTION}{path}.{os.getpid()}.tmp"
    path.write_bytes(b"x")
    mapping = session_settings("local[2]", quick_jit=True, class_archive=True)[DRIVER_JAVA_OPTIONS]
    assert mapping == f"{QUICK_JIT} -XX:SharedArchiveFile={path}"
    assert class_archive("") != path  # other JVM options, another archive
    plain = session_settings("local[2]", class_archive=True)[DRIVER_JAVA_OPTIONS]
    assert plain.startswith(DUMP_OPTION)
    assert DRIVER_JAVA_OPTIONS not in session_settings("spark://cluster:7077", class_archive=True)
    given = session_settings("local[2]", class_archive=True, **{DRIVER_JAVA_OPTIONS: "-Xss4m"})
    assert given[DRIVER_JAVA_OPTIONS] == "-Xss4m"


ARCHIVE_SCRIPT = """
import json, sys
from kleene.spark.session import DRIVER_JAVA_OPTIONS, local_session, session_settings, stop_session
log = sys.argv[1]
options = session_settings("local[1]", quick_jit=True, class_archive=True)[DRIVER_JAVA_OPTIONS]
if sys.argv[2] == "trace":  # which classes come from the archive
    options += f" -Xlog:class+load=info:file={sys.argv[3]}"
spark = local_session("local[1]", log_file=log, **{DRIVER_JAVA_OPTIONS: options})
assert spark.range(5).count() == 5
built = stop_session(spark)
print(json.dumps({"options": options, "built": None if built is None else str(built)}))
"""


@pytest.mark.skipif(
    "KLEENE_SPARK_ARCHIVE_TEST" not in os.environ,
    reason="two fresh JVMs, one of them writing the archive: 60-220 s; KLEENE_SPARK_ARCHIVE_TEST=1 runs it",
)
def test_the_class_archive_is_built_once_then_mapped(tmp_path: Path) -> None:
    """A real JVM builds the archive when :func:`stop_session` ends it; the next JVM maps from it
    most of the classes it loads (counted in the JVM's class-loading log), and builds nothing.

    Out of the default run for its time (docs/benchmarks.md, "Spark"); the CLI's subprocess
    test (tests/spark/test_spark_cli.py) goes through the same code with the venv's archive."""
    env = {**os.environ, CACHE_ENV: str(tmp_path / "cache")}

    def session(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-c", ARCHIVE_SCRIPT, str(tmp_path / "spark.log"), *args],
            capture_output=True, text=True, env=env, timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return dict(json.loads(done.stdout.splitlines()[-1]))

    first = session("build")
    assert DUMP_OPTION in first["options"] and first["built"] is not None
    archive = Path(first["built"])
    assert archive.parent == tmp_path / "cache" and archive.stat().st_size > 10_000_000
    assert [p.name for p in archive.parent.iterdir() if p.suffix == ".tmp"] == []  # renamed into place
    trace = tmp_path / "classes.log"
    second = session("trace", str(trace))
    assert f"-XX:SharedArchiveFile={archive}" in second["options"] and second["built"] is None
    lines = trace.read_text().splitlines()
    shared = sum("shared objects file" in line for line in lines)
    print(f"{shared} of {len(lines)} classes from the archives")
    assert sum("shared objects file (top)" in line for line in lines) > 2000  # the dynamic archive's
    assert shared > 0.6 * len(lines)  # measured 76%: the rest are generated classes (lambdas, codegen)
