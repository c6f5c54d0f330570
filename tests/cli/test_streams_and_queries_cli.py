"""Several streams (FROM S1, S2; S>E; inputs merged by time) and several queries, API and CLI.

The worked example of docs/semantics.md ("Several streams") is a unit test
here, and so is the merge order (time, then input order, then row order).
Expected outputs are written out by hand from the documented semantics.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import kleene
from kleene.cli import main

# The docs/semantics.md example: two temperature sensors and a door, merged by time.
SENSORS = [
    {"t": 0, "type": "T", "v": 30},
    {"t": 2, "type": "T", "v": 45},
]
DOOR = [
    {"t": 1, "type": "OPEN", "v": 0},
    {"t": 2, "type": "T", "v": 99},  # a door event that happens to have type T
]
MERGED = [  # by time; at t=2 the sensors (given first) come before the door
    {**SENSORS[0], "stream": "Sensors"},
    {**DOOR[0], "stream": "Door"},
    {**SENSORS[1], "stream": "Sensors"},
    {**DOOR[1], "stream": "Door"},
]


def merged() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for batch in kleene.merge_streams({"Sensors": SENSORS, "Door": DOOR}, time_column="t"):
        out.extend(batch.to_pylist())
    return out


def positions(query: str, rows: list[dict[str, Any]]) -> list[tuple[int, ...]]:
    """The positions of the complex events, sorted (the order within one end is enumeration order)."""
    return sorted(m.positions for m in kleene.compile(query, stream_column="stream").matches(rows))


def test_merge_is_by_time_then_input_then_row() -> None:
    assert merged() == MERGED


def test_merge_streams_keeps_rows_of_one_input_in_their_order() -> None:
    a = [{"t": 5, "type": "A", "i": i} for i in range(3)]
    b = [{"t": 5, "type": "B", "i": i} for i in range(2)]
    rows = [r for batch in kleene.merge_streams([("A", a), ("B", b)], time_column="t") for r in batch.to_pylist()]
    assert [(r["stream"], r["i"]) for r in rows] == [("A", 0), ("A", 1), ("A", 2), ("B", 0), ("B", 1)]
    # Batches of different sizes, interleaved times: still one sorted, stable stream.
    x = pa.Table.from_pylist([{"t": t, "type": "X"} for t in (0, 1, 1, 4, 9)])
    y = pa.Table.from_pylist([{"t": t, "type": "Y"} for t in (1, 2, 9)])
    out = [
        (r["t"], r["stream"])
        for batch in kleene.merge_streams({"X": x.to_batches(max_chunksize=2), "Y": y.to_batches(max_chunksize=1)}, time_column="t")
        for r in batch.to_pylist()
    ]
    assert out == [(0, "X"), (1, "X"), (1, "X"), (1, "Y"), (2, "Y"), (4, "X"), (9, "X"), (9, "Y")]


def test_merge_errors() -> None:
    with pytest.raises(kleene.KleeneError, match="merged by time"):
        list(kleene.merge_streams({"A": SENSORS, "B": DOOR}, time_column=None))
    with pytest.raises(kleene.DataError, match="already has a column 'stream'"):
        list(kleene.merge_streams({"A": MERGED, "B": DOOR}, time_column="t"))


def test_from_reads_only_its_streams_positions_stay_global() -> None:
    rows = merged()
    # Sensors only: the door events are not in the query's stream, so the two
    # T readings are contiguous (`:`), and positions are those of the merged input.
    assert positions("SELECT * FROM Sensors WHERE T : T", rows) == [(0, 2)]
    # Both streams: OPEN sits between them, so `T : T` only pairs 2 and 3.
    assert positions("SELECT * FROM Sensors, Door WHERE T : T", rows) == [(2, 3)]
    # Sensors>T matches T events of Sensors only; plain T any stream of FROM.
    assert positions("SELECT * FROM Sensors, Door WHERE T ; Sensors>T", rows) == [(0, 2)]
    assert positions("SELECT * FROM Sensors, Door WHERE Sensors>T ; T", rows) == [(0, 2), (0, 3), (2, 3)]
    # NOT(...) is one event of the query's stream: with FROM Sensors no OPEN exists.
    assert positions("SELECT * FROM Sensors WHERE T ; NOT(T)", rows) == []
    assert positions("SELECT * FROM Sensors, Door WHERE T ; NOT(T)", rows) == [(0, 1)]
    # No FROM: every stream.
    assert positions("SELECT * WHERE OPEN ; Door>T", rows) == [(1, 3)]
    # WITHIN n EVENTS counts global positions (as under PARTITION BY): the
    # door event between the two readings counts.
    assert positions("SELECT * FROM Sensors WHERE T ; T WITHIN 1 EVENTS", rows) == []
    assert positions("SELECT * FROM Sensors WHERE T ; T WITHIN 2 EVENTS", rows) == [(0, 2)]


def test_without_a_stream_column_the_input_is_one_stream() -> None:
    q = kleene.compile("SELECT * FROM Sensors WHERE Sensors>T ; T")
    assert sorted(m.positions for m in q.matches(MERGED)) == [(0, 2), (0, 3), (2, 3)]


def test_stream_bad_rows() -> None:
    rows = [dict(r) for r in MERGED]
    rows[1]["stream"] = None
    q = kleene.compile("SELECT * WHERE T ; T", stream_column="stream", on_bad_row="skip")
    assert sorted(m.positions for m in q.matches(rows)) == [(0, 2), (0, 3), (2, 3)]
    assert q.bad_rows.count == 1
    with pytest.raises(kleene.DataError, match="null value.*row 1.*'stream'"):
        list(kleene.compile("SELECT * WHERE T", stream_column="stream").matches(rows))
    with pytest.raises(kleene.DataError, match="the stream column is missing"):
        list(kleene.compile("SELECT * WHERE T", stream_column="src").matches(rows))


def test_a_stream_outside_from_is_a_query_error() -> None:
    with pytest.raises(kleene.QueryError, match="stream 'Door' is not in the FROM clause"):
        kleene.compile("SELECT * FROM Sensors WHERE Door>T")


# --------------------------------------------------------------------- CLI


def write_csv(path: Path, rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0])
    path.write_text("\n".join([",".join(cols)] + [",".join(str(r[c]) for c in cols) for r in rows]) + "\n")
    return str(path)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]], str]:
    code = main(["run", *args, "--no-progress"])
    out = capsys.readouterr()
    return code, [json.loads(line) for line in out.out.splitlines()], out.err


def test_cli_streams_merged_by_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sensors = write_csv(tmp_path / "sensors.csv", SENSORS)
    door = write_csv(tmp_path / "door.csv", DOOR)
    code, lines, err = cli(
        capsys, "SELECT * FROM Sensors WHERE T : T",
        "--input", f"Sensors={sensors}", "--input", f"Door={door}", "--time-column", "t",
    )
    assert code == 0, err
    assert [line["positions"] for line in lines] == [[0, 2]]
    assert [e["stream"] for e in lines[0]["events"]] == ["Sensors", "Sensors"]
    # The same merged stream, given as one file carrying its stream column.
    both = write_csv(tmp_path / "both.csv", MERGED)
    code, lines2, _ = cli(capsys, "SELECT * FROM Sensors WHERE T : T", "--input", both, "--stream-column", "stream")
    assert code == 0 and lines2 == lines


def test_cli_several_inputs_need_a_time_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_csv(tmp_path / "a.csv", SENSORS)
    code, _, err = cli(capsys, "SELECT * WHERE T", "--input", f"A={a}", "--input", f"B={a}")
    assert code == 2 and "--time-column" in err


def test_cli_several_queries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_csv(tmp_path / "events.csv", [{k: v for k, v in r.items()} for r in MERGED])
    (tmp_path / "pair.ceql").write_text("SELECT * WHERE T ; T FILTER T[v > 40]\n")
    (tmp_path / "many.ceql").write_text(
        "QUERY opened: SELECT * WHERE OPEN\nQUERY sensed: SELECT * FROM Sensors WHERE T\n"
    )
    code, lines, err = cli(
        capsys, str(tmp_path / "pair.ceql"), str(tmp_path / "many.ceql"), "SELECT * WHERE Door>T",
        "--input", data, "--stream-column", "stream",
    )
    assert code == 0, err
    got = [(line["query"], line["positions"]) for line in lines]
    assert got == [
        ("sensed", [0]),
        ("opened", [1]),
        ("sensed", [2]),
        ("pair", [2, 3]),
        ("q4", [3]),
    ]
    # Each query alone gives its own lines, without the query field.
    for name, text in [("pair", str(tmp_path / "pair.ceql")), ("q4", "SELECT * WHERE Door>T")]:
        code, alone, _ = cli(capsys, text, "--input", data, "--stream-column", "stream")
        assert [line["positions"] for line in alone] == [p for q, p in got if q == name]
        assert all("query" not in line for line in alone)


def test_cli_duplicate_query_names_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_csv(tmp_path / "events.csv", MERGED)
    code, _, err = cli(capsys, "QUERY a: SELECT * WHERE T", "QUERY a: SELECT * WHERE OPEN", "--input", data)
    assert code == 2 and "two queries are named 'a'" in err
