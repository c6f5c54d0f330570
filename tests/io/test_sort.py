"""--sort / sort=True: an unsorted file evaluated in time order, within a memory limit."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import kleene
from kleene.io.reorder import SortMemoryError
from kleene.options import parse_size
from kleene_process import kleene_run as cli

UNSORTED = "type,time,n\nA,3,0\nB,1,1\nA,2,2\nB,2,3\nA,1,4\n"
QUERY = "SELECT * FROM S WHERE A as a; B as b WITHIN 1 seconds"



def test_unsorted_file_error_points_to_sort_and_max_delay(tmp_path: Path) -> None:
    data = tmp_path / "u.csv"
    data.write_text(UNSORTED)
    proc = cli(QUERY, "--input", str(data), "--time-column", "time")
    assert proc.returncode == 3
    assert proc.stderr == (
        "kleene: input error: bad input: timestamp goes backwards; the input is not in time order: "
        "--sort sorts it by time first (sort=True in Python), --max-delay DURATION accepts "
        "disorder up to DURATION (max_delay=) (row 1, column 'time')\n"
    )
    skipped = cli(QUERY, "--input", str(data), "--time-column", "time", "--on-bad-row", "skip")
    assert "4 timestamp goes backwards in 'time'" in skipped.stderr  # the count keeps its short reason


def test_cli_sort_is_stable_and_positions_follow_time(tmp_path: Path) -> None:
    data = tmp_path / "u.csv"
    data.write_text(UNSORTED)
    proc = cli(QUERY, "--input", str(data), "--time-column", "time", "--sort")
    assert proc.returncode == 0, proc.stderr
    import json

    found = [json.loads(line) for line in proc.stdout.splitlines()]
    # Sorted stream: B1 (row 1), A1 (row 4: ties keep input order), A2, B2, A3.
    assert [f["positions"] for f in found] == [[2, 3], [1, 3]]
    assert [[e["n"] for e in f["events"]] for f in found] == [[2, 3], [4, 3]]


def test_cli_usage_and_the_memory_limit(tmp_path: Path) -> None:
    data = tmp_path / "u.csv"
    data.write_text(UNSORTED)
    no_time = cli(QUERY, "--input", str(data), "--sort")
    assert no_time.returncode == 2 and "--sort orders the input by time: give --time-column" in no_time.stderr
    both = cli(QUERY, "--input", str(data), "--time-column", "time", "--sort", "--max-delay", "1 seconds")
    assert both.returncode == 2 and "choose one" in both.stderr
    bad = cli(QUERY, "--input", str(data), "--time-column", "time", "--sort", "--sort-memory", "10x")
    assert bad.returncode == 2 and "cannot read '10x' as a size" in bad.stderr
    out = tmp_path / "out.jsonl"
    small = cli(
        QUERY, "--input", str(data), "--time-column", "time", "--sort", "--sort-memory", "10", "-o", str(out)
    )
    assert small.returncode == 1
    assert small.stderr.startswith(
        "kleene: error: sorting by time holds the whole input in memory, and it passed the limit "
        "of 10 bytes (--sort-memory, sort_memory= in Python) at input row 4"
    )
    assert "--max-delay" in small.stderr and not out.exists()


def test_python_api_sorts_any_source_with_input_rows_in_messages() -> None:
    times = [("A", "3"), ("B", "1"), ("A", "2"), ("B", "?"), ("B", "2"), ("A", "1")]
    rows = [{"type": t, "time": None if x == "?" else f"2024-01-01T00:00:0{x}"} for t, x in times]
    rows[3]["time"] = "not a time"
    q = kleene.compile(QUERY, time_column="time", sort=True, on_bad_row="skip")
    batches = [pa.RecordBatch.from_pylist(rows[:2]), pa.RecordBatch.from_pylist(rows[2:])]
    assert [ce.positions for ce in q.run(rows)] == [(2, 3), (1, 3)]
    assert q.bad_rows.reasons == {"unreadable timestamp in 'time'": 1}
    assert [m.positions for m in q.matches(batches)] == [(2, 3), (1, 3)]  # batching changes nothing
    unsorted = kleene.compile(QUERY, time_column="time", on_bad_row="skip")
    assert [ce.positions for ce in unsorted.run(rows)] != [(2, 3), (1, 3)]
    with pytest.raises(SortMemoryError, match="limit of 1 bytes"):
        list(kleene.compile(QUERY, time_column="time", sort=True, sort_memory=1).run(rows[:3]))
    assert isinstance(SortMemoryError("x"), kleene.KleeneError)
    with pytest.raises(kleene.KleeneError, match="pass time_column"):
        kleene.compile(QUERY, sort=True)
    with pytest.raises(kleene.KleeneError, match="choose one"):
        kleene.compile(QUERY, time_column="time", sort=True, max_delay="1 seconds")


def test_several_queries_share_the_sorted_stream() -> None:
    rows = [{"type": t, "time": x} for t, x in [("A", 3), ("B", 1), ("A", 2), ("B", 2), ("A", 1)]]
    qs = kleene.compile_many({"ab": QUERY, "b": "SELECT * FROM S WHERE B"}, time_column="time", sort=True)
    assert [(ce.query, ce.positions) for ce in qs.run(rows)] == [
        ("b", (0,)), ("ab", (2, 3)), ("ab", (1, 3)), ("b", (3,))
    ]


def test_sizes() -> None:
    assert parse_size("4GB") == 4 << 30
    assert parse_size("512 MiB") == 512 << 20
    assert parse_size("1.5k") == 1536
    assert parse_size(1000) == 1000
    for bad in ("", "x", "4 XB", 0, "0"):
        with pytest.raises(kleene.KleeneError):
            parse_size(bad)  # type: ignore[arg-type]
