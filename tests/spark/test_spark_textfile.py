"""CSV and JSON Lines on ``--engine spark``: read by kleene's reader in a task, row index = position.

A text file in time order is read by :mod:`kleene.spark.textfile` (no Spark CSV parser, no
ordering job): Q1 then runs in as many Spark jobs as on a sorted Parquet file, with the
in-process engine's complex events; the same rows out of order take Spark's reader and the
general ordering path, with the same complex events.  The in-process reader's rules come
along: its null tokens, and invalid UTF-8 as a bad row (Spark's CSV parser would replace the
bytes with U+FFFD without a word).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from test_spark_speed import EACH_TASK_JOBS, QUERY, SORTED_PARQUET_JOBS, departures, jobs_of, parsed

from kleene.cli import main
from kleene.spark import detect, textfile
from kleene.spark.evaluator import key_hashes
from kleene.spark.textfile import ROW_COLUMN, read, scan, spark_schema, times_in_order


def written(frame: pd.DataFrame, path: Path) -> Path:
    """``frame`` as CSV (ISO times with ``Z``) or JSON Lines, by the suffix."""
    frame = frame.copy()
    frame["time"] = frame["time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_json(path, orient="records", lines=True)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_q1_on_a_sorted_text_file_runs_in_one_job(spark: Any, tmp_path: Path, suffix: str) -> None:
    """One job, the in-process complex events.  (CSV only: the same rows out of time order take
    Spark's reader and the general ordering path, with the same complex events.  A file above the
    size every task reads, read by one task and shuffled by carrier: the detect test below.)"""
    data = written(departures(), tmp_path / f"flights{suffix}")
    common = ["run", QUERY, "--time-column", "time", "--no-progress"]
    assert main([*common, "--input", str(data), "-o", str(tmp_path / "py.jsonl")]) == 0
    expected = parsed(tmp_path / "py.jsonl")
    assert expected
    jobs = jobs_of(spark, [*common, "--input", str(data), "-o", str(tmp_path / "spark"), "--engine", "spark"])
    print(f"{jobs} Spark jobs on the sorted {suffix} file")
    assert jobs == EACH_TASK_JOBS
    assert parsed(tmp_path / "spark") == expected
    if suffix != ".csv":
        return
    shuffled = written(departures().sample(frac=1.0, random_state=3), tmp_path / f"shuffled{suffix}")
    jobs = jobs_of(spark, [*common, "--input", str(shuffled), "-o", str(tmp_path / "unsorted"), "--engine", "spark"])
    print(f"{jobs} Spark jobs on the shuffled {suffix} file")
    assert jobs > SORTED_PARQUET_JOBS
    assert parsed(tmp_path / "unsorted") == expected  # times are distinct: the same positions


def test_key_hashes_are_the_same_in_every_process() -> None:
    """Each task keeps the keys that hash to it: the hash must not be Python's (salted per process)."""
    import zlib

    hashes = key_hashes([pa.array(["UA", "AA", None, "UA"])])
    assert hashes.tolist() == [zlib.crc32(b"'UA'"), zlib.crc32(b"'AA'"), zlib.crc32(b"None"), zlib.crc32(b"'UA'")]
    two = key_hashes([pa.array(["UA", "UA"]), pa.array([1, 2])])
    assert two[0] != two[1]
    assert key_hashes([pa.array(["UA"]), pa.array([1])])[0] == (zlib.crc32(b"'UA'") * 1_000_003 + zlib.crc32(b"1")) % (1 << 32)


def test_scan_finds_the_time_order_across_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 70_000  # more than one batch of the reader (65,536 rows)
    times = list(range(n))
    data = tmp_path / "t.csv"
    pd.DataFrame({"time": times, "type": "A"}).to_csv(data, index=False)
    found = scan(str(data), "csv", "time")
    assert found is not None and found.rows == n and found.in_time_order
    assert found.schema.names == ["time", "type"]
    late = times[:]
    late[66_000] = 65_000  # decreases inside the second batch only
    pd.DataFrame({"time": late, "type": "A"}).to_csv(data, index=False)
    unordered = scan(str(data), "csv", "time")
    assert unordered is not None and not unordered.in_time_order
    across = list(range(1, n + 1))
    across[65_536] = 0  # the second batch starts below the first one's end
    pd.DataFrame({"time": across, "type": "A"}).to_csv(data, index=False)
    scans = {t: scan(str(data), "csv", t) for t in ("time", None, "missing")}
    assert [s.in_time_order for s in scans.values() if s is not None] == [False, True, False]  # None: file order
    assert scan(str(tmp_path), "csv", "time") is None  # a directory: Spark's reader
    lines = written(departures(20), tmp_path / "d.jsonl")
    assert scan(str(lines), "jsonl", "time") is not None
    monkeypatch.setattr(textfile, "EACH_TASK_BYTES", lines.stat().st_size - 1)
    assert scan(str(lines), "jsonl", "time") is None  # a large JSON Lines file: Spark's reader
    assert scan(str(data), "csv", "time") is not None  # (a CSV file's types came from pyarrow before)
    (tmp_path / "empty.csv").write_text("time,type\n")
    assert scan(str(tmp_path / "empty.csv"), "csv", "time") is None


def test_times_in_order() -> None:
    assert times_in_order(pa.array([1, 1, 2]))
    assert not times_in_order(pa.array([2, 1]))
    assert not times_in_order(pa.array([1, None, 3]))
    assert not times_in_order(pa.array([1.0, float("nan")]))
    assert not times_in_order(pa.array(["1", "2"]))
    assert times_in_order(pa.chunked_array([[1], [2, 3]]))


def test_detect_takes_a_position_column_of_the_frame_and_drops_it(spark: Any, tmp_path: Path) -> None:
    """The row column is the positions, not an attribute of the events (one reading task, then
    the partitioned plan's shuffle by carrier: the route of a file too large for every task)."""
    data = written(departures(60), tmp_path / "d.csv")
    found = scan(str(data), "csv", "time")
    assert found is not None
    schema = spark_schema(found.schema)
    df, _ = read(spark, str(data), "csv", schema, rows=found.rows)
    assert df.columns[-1] == ROW_COLUMN and df.count() == 60
    assert [r[ROW_COLUMN] for r in df.select(ROW_COLUMN).collect()] == list(range(60))
    result = detect(df, QUERY, time_column="time", type_column="type", position_column=ROW_COLUMN).collect()
    assert result
    assert all(ROW_COLUMN not in e.asDict() for r in result for e in r["events"])
    assert sorted(e["flight"] for r in result for e in r["events"]) == sorted(
        p for r in result for p in r["positions"]
    )  # flight i is row i
    with pytest.raises(Exception, match="changed while Spark read it"):
        read(spark, str(data), "csv", schema, rows=61)[0].collect()


def test_null_tokens_are_the_in_process_reader_s(spark: Any, tmp_path: Path) -> None:
    """``null`` in a text column is no value in process; Spark's CSV parser kept it as text."""
    data = tmp_path / "gates.csv"
    data.write_text("time,type,gate\n1,DEP,A1\n2,DEP,null\n3,DEP,B2\n")
    common = ["run", "SELECT * FROM S WHERE DEP AS a", "--input", str(data), "--time-column", "time", "--no-progress"]
    assert main([*common, "-o", str(tmp_path / "py.jsonl")]) == 0
    assert main([*common, "-o", str(tmp_path / "spark"), "--engine", "spark"]) == 0
    expected = parsed(tmp_path / "py.jsonl")
    assert [e["gate"] for c in expected for e in c["events"]] == ["A1", None, "B2"]
    assert parsed(tmp_path / "spark") == expected


def test_invalid_utf8_is_a_bad_row_on_spark(spark: Any, tmp_path: Path, capsys: Any) -> None:
    """Exit 3, the row and column named, as in process (Spark's CSV parser gave U+FFFD, exit 0)."""
    data = tmp_path / "f.csv"
    data.write_bytes(b"time,type,name\n1,DEP,ok\n2,DEP,caf\xe9\n3,DEP,fine\n")
    common = ["run", "SELECT * FROM S WHERE DEP as a", "--input", str(data), "--time-column", "time"]
    assert main([*common, "-o", str(tmp_path / "py.jsonl")]) == 3
    in_process = capsys.readouterr().err
    assert main([*common, "--engine", "spark", "--output", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "kleene: input error: bad input: invalid UTF-8 (row 1, column 'name')" in err
    assert "bad input: invalid UTF-8" in in_process and "(row 1, column 'name')" in in_process
    assert "Traceback" not in err and not (tmp_path / "out").exists()
