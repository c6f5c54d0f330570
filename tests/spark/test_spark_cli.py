"""``kleene run --engine spark`` reads what the in-process engine reads and writes what it writes.

Every test runs the same command with both engines on the same file and compares the
outputs after parsing (JSON Lines: the lines as objects; the in-process ``partition``,
a list before the JSON Lines layout change, is compared by its values).  Spark's output
is a directory of part files written by Spark's writers.  One SparkSession (the
``spark`` fixture) serves the module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kleene.cli import main

QUERY = (
    "SELECT * FROM S WHERE DEP AS a ; DEP AS b FILTER a[delay > 60] AND b[delay > 60] "
    "PARTITION BY [carrier] WITHIN 1 hours"
)


def flights_frame(n: int = 400) -> pd.DataFrame:
    """Departures every few minutes; some at odd nanoseconds, a time zone besides UTC, no delay when cancelled."""
    times = pd.Timestamp("2013-01-01T05:00:00Z") + pd.to_timedelta(range(0, 3 * n, 3), unit="min")
    times = times.to_series().reset_index(drop=True)
    times.iloc[5] += pd.Timedelta(nanoseconds=1500)  # a sub-microsecond remainder
    times.iloc[7] += pd.Timedelta(microseconds=250)
    frame = pd.DataFrame(
        {
            "time": times,
            "type": ["CANCELLED" if i % 17 == 0 else "DEP" for i in range(n)],
            "carrier": [("UA", "AA", "B6")[i % 3] for i in range(n)],
            "delay": [float((i * 37) % 120) if i % 17 else float("nan") for i in range(n)],
            "flight": list(range(n)),
        }
    )
    frame["local"] = frame["time"].dt.tz_convert("America/New_York")
    return frame


def lines(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.glob("part-*")) if path.is_dir() else [path]
    return [json.loads(line) for f in files for line in f.read_text().splitlines()]


def normalised(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def one(e: dict[str, Any]) -> dict[str, Any]:
        part = e.get("partition")
        return dict(e, partition=list(part.values())) if isinstance(part, dict) else e

    return sorted(map(one, rows), key=lambda e: (e["end"], e["start"], e["positions"]))


def both(tmp_path: Path, data: Path, *extra: str, out: str = "out.jsonl") -> tuple[Path, Path]:
    common = ["run", QUERY, "--input", str(data), "--time-column", "time", "--no-progress", *extra]
    py, sp = tmp_path / f"py-{out}", tmp_path / f"spark-{out}"
    assert main([*common, "-o", str(py)]) == 0
    assert main([*common, "-o", str(sp), "--engine", "spark"]) == 0
    return py, sp


def test_pandas_nanosecond_parquet(spark: Any, tmp_path: Path) -> None:
    """A Parquet file written by pandas (TIMESTAMP(NANOS,true)) runs, times exact and zoned."""
    data = tmp_path / "flights.parquet"
    flights_frame().to_parquet(data)
    assert pq.read_schema(data).field("time").type == pa.timestamp("ns", tz="UTC")
    py, sp = both(tmp_path, data)
    assert sp.is_dir() and any(p.suffix == ".json" for p in sp.iterdir())
    expected, got = normalised(lines(py)), normalised(lines(sp))
    assert expected and got == expected
    times = {e["time"] for c in got for e in c["events"]}
    assert "2013-01-01T05:15:00.000001500+00:00" in times or "2013-01-01T05:21:00.000250+00:00" in times
    assert all(t.endswith("+00:00") for t in times)
    assert all(e["local"].endswith(("-05:00", "-04:00")) for c in got for e in c["events"])


def test_jsonl_input_keeps_the_in_process_times(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "flights.jsonl"
    frame = flights_frame().drop(columns=["local"])
    frame["time"] = frame["time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    frame.to_json(data, orient="records", lines=True)
    py, sp = both(tmp_path, data)
    expected = normalised(lines(py))
    assert expected and normalised(lines(sp)) == expected


def test_csv_input_keeps_the_time_zone(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "flights.csv"
    frame = flights_frame().drop(columns=["local"])
    frame["time"] = frame["time"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    frame.to_csv(data, index=False)
    py, sp = both(tmp_path, data)
    expected = normalised(lines(py))
    assert expected and normalised(lines(sp)) == expected
    assert all(e["time"].endswith("+00:00") for c in expected for e in c["events"])


def test_partition_is_an_object_keyed_by_attribute(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "flights.parquet"
    flights_frame().to_parquet(data)
    out = tmp_path / "o.jsonl"
    assert main(["run", QUERY, "--input", str(data), "--time-column", "time", "-o", str(out),
                 "--engine", "spark", "--no-progress"]) == 0
    rows = lines(out)
    assert rows and all(set(r["partition"]) == {"carrier"} for r in rows)
    assert {r["partition"]["carrier"] for r in rows} <= {"UA", "AA", "B6"}
    assert all(r["partition"]["carrier"] == r["events"][0]["carrier"] for r in rows)
    assert list(rows[0]) == ["start", "end", "positions", "events", "partition"]


def test_parquet_and_arrow_output_are_part_files(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "flights.csv"
    frame = flights_frame().drop(columns=["local"])
    frame["time"] = frame["time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    frame.to_csv(data, index=False)
    py, sp = both(tmp_path, data, out="out.parquet")
    expected = pq.read_table(py)

    def keys(table: pa.Table) -> list[tuple[Any, ...]]:
        rows = table.select(["start", "end", "positions", "partition"]).to_pylist()
        return sorted((r["end"], r["start"], tuple(r["positions"]), r["partition"]["carrier"]) for r in rows)

    parts = sorted(sp.glob("part-*.parquet"))
    assert sp.is_dir() and parts
    got = pa.concat_tables([pq.read_table(p) for p in parts])
    assert keys(got) == keys(expected) and expected.num_rows
    assert got.schema.names == ["start", "end", "positions", "events", "partition"]

    arrow_dir = tmp_path / "spark.arrow"
    assert main(["run", QUERY, "--input", str(data), "--time-column", "time", "--no-progress",
                 "-o", str(arrow_dir), "--engine", "spark"]) == 0
    files = sorted(arrow_dir.glob("part-*.arrow"))
    assert files
    table = pa.concat_tables([pa.ipc.open_file(f).read_all() for f in files])
    assert keys(table) == keys(expected)


def test_stdout_streams_the_same_lines(spark: Any, tmp_path: Path, capsys: Any) -> None:
    data = tmp_path / "flights.parquet"
    flights_frame().to_parquet(data)
    py = tmp_path / "py.jsonl"
    common = ["run", QUERY, "--input", str(data), "--time-column", "time", "--no-progress"]
    assert main([*common, "-o", str(py)]) == 0
    capsys.readouterr()
    assert main([*common, "--engine", "spark"]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert got and normalised(got) == normalised(lines(py))
    assert [(e["end"], e["start"]) for e in got] == sorted((e["end"], e["start"]) for e in got)


def test_unreadable_input_is_an_input_error(spark: Any, tmp_path: Path, capsys: Any) -> None:
    data = tmp_path / "broken.parquet"
    data.write_bytes(b"not a parquet file at all")
    code = main(["run", QUERY, "--input", str(data), "--time-column", "time", "--engine", "spark",
                 "-o", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "kleene: input error: cannot read" in err and "Traceback" not in err
    assert not (tmp_path / "o.jsonl").exists()


def test_failed_run_leaves_no_output(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"type": "SELL", "price": null}\n{"type": "BUY", "price": 3}\n')
    out = tmp_path / "o.jsonl"
    out.mkdir()
    (out / "part-old.json").write_text("{}\n")
    code = main(["run", "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 1]",
                 "--input", str(data), "--engine", "spark", "-o", str(out)])
    assert code == 3
    assert [p.name for p in out.iterdir()] == ["part-old.json"]  # the old output, untouched
    assert not [p for p in tmp_path.iterdir() if "kleene-" in p.name]  # no staging left


ARCHIVE_FIRST = (
    "kleene run: this first run on Spark also builds the JVM's class archive, "
    "so that the next ones start faster (about 30 CPU-seconds, once)"
)


def test_run_stderr_is_kleene_s_own_and_a_bad_row_says_what_works_on_spark(tmp_path: Path) -> None:
    """In a process of its own, ``kleene run --engine spark`` names Spark's log file and writes
    nothing else of Spark's on stderr; a null the filter reads stops it (exit 3) with the row,
    the column and what to do on Spark (not ``--on-bad-row skip``, which Spark does not have)."""
    import subprocess
    import sys

    data = tmp_path / "f.csv"
    data.write_text("time,type,delay\n1,DEP,70\n2,DEP,\n3,DEP,80\n")
    log = tmp_path / "spark.log"
    done = subprocess.run(
        [sys.executable, "-m", "kleene", "run", "SELECT * FROM S WHERE DEP as a FILTER a[delay > 60]",
         "--input", str(data), "--time-column", "time", "--engine", "spark", "--master", "local[1]",
         "--spark-log", str(log), "--output", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 3, done.stderr
    archive = [line for line in done.stderr.splitlines() if "class archive" in line]
    assert archive in ([], [ARCHIVE_FIRST, "kleene run: Spark's class archive is built"])  # first run only
    assert [line for line in done.stderr.splitlines() if line not in archive] == [
        f"kleene run: Spark's log: {log}",
        "kleene: input error: bad input: null value (--engine spark stops at the first bad row: "
        "filter such rows out of the input first, or run in process, where --on-bad-row skip sets "
        "them aside and counts them) (row 1, column 'delay')",
    ]
    assert log.stat().st_size > 0 and not (tmp_path / "out").exists()
