"""``strict_types=True`` / ``--strict-types``: a name the input never holds is an error (exit 2)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kleene
from kleene_process import kleene_run as cli

ROWS = [{"type": "DEP", "price": 120.0}, {"type": "ARR", "price": 3.0}, {"type": "DEP", "price": 1.0}]
TYPO = "SELECT * FROM S WHERE DEP as a ; ARV as b"
MESSAGE = "event type 'ARV' never occurs in the input (column 'type' holds: ARR, DEP); did you mean 'ARR'?"



def test_at_the_end_of_an_iterable_input_with_the_names_and_a_caret() -> None:
    q = kleene.compile("SELECT * FROM S WHERE DEP", strict_types=True)
    assert len(list(q.run(ROWS))) == 2  # every name occurs: no error
    q = kleene.compile("SELECT * FROM S WHERE DEP as a OR ARV as b", strict_types=True)
    got = []
    with pytest.raises(kleene.UnseenNameError) as info:
        got.extend(q.run(ROWS))  # a generator of dicts has no cheap first look: at its end
    assert len(got) == 2  # the complex events found before the end came out
    err = info.value
    assert isinstance(err, kleene.QueryError)
    assert err.message == MESSAGE
    assert (err.line, err.column) == (1, 35)
    assert str(err).splitlines()[-1] == " " * 36 + "^"


def test_a_file_is_checked_before_the_first_complex_event(tmp_path: Path) -> None:
    csv = tmp_path / "f.csv"
    csv.write_text("type,price\nDEP,120\nARR,3\nDEP,1\n")
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "f.parquet")
    q = kleene.compile("SELECT * FROM S WHERE DEP OR ARV", strict_types=True)
    for path in (csv, tmp_path / "f.parquet"):
        with pytest.raises(kleene.UnseenNameError, match="'ARV' never occurs.*did you mean 'ARR'"):
            next(q.run(path))  # row 0 is a DEP, yet nothing comes out first
    with pytest.warns(kleene.UnseenNameWarning):  # without the option only the warning
        assert len(list(kleene.compile("SELECT * FROM S WHERE DEP OR ARV").run(csv))) == 2


def test_streams_and_several_queries() -> None:
    rows = [dict(r, s="A") for r in ROWS]
    q = kleene.compile("SELECT * FROM A, C WHERE DEP", stream_column="s", strict_types=True)
    with pytest.raises(kleene.UnseenNameError, match=r"stream 'C' never occurs .*holds: A\)") as info:
        list(q.run(rows))
    assert (info.value.line, info.value.column) == (1, 18)
    qs = kleene.compile_many({"ok": "SELECT * FROM S WHERE DEP", "typo": TYPO}, strict_types=True)
    with pytest.raises(kleene.UnseenNameError, match="^query typo: event type 'ARV'"):
        list(qs.run(pa.Table.from_pylist(ROWS)))
    declared = "CREATE STREAM S { EVENT DEP { price: double }, EVENT ARV { price: double } } "
    assert list(kleene.compile(declared + TYPO, strict_types=True).run(ROWS)) == []  # declared: no check


def test_cli_exit_2_before_the_run(tmp_path: Path) -> None:
    data = tmp_path / "f.csv"
    data.write_text("type,price\nDEP,120\nARR,3\n")
    out = tmp_path / "out.jsonl"
    proc = cli(TYPO, "--input", str(data), "--strict-types", "--output", str(out))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"kleene: query error: {MESSAGE} (line 1, column 34)",
        f"  {TYPO}",
        "  " + " " * 33 + "^",
    ]
    assert not out.exists()
    plain = cli(TYPO, "--input", str(data))
    assert plain.returncode == 0 and f"kleene: {MESSAGE}" in plain.stderr


def test_cli_compressed_input_is_checked_at_its_end_and_nothing_is_written(tmp_path: Path) -> None:
    data = tmp_path / "f.csv.gz"
    with gzip.open(data, "wt") as f:
        f.write("type,price\nDEP,120\nARR,3\n")
    out = tmp_path / "out.jsonl"
    proc = cli("SELECT * FROM S WHERE DEP OR ARV", "--input", str(data), "--strict-types", "-o", str(out))
    assert proc.returncode == 2 and MESSAGE in proc.stderr
    assert not out.exists()  # the complex event of row 0 was never committed


def test_cli_stream_named_on_the_command_line(tmp_path: Path) -> None:
    data = tmp_path / "f.csv"
    data.write_text("type,price,time\nDEP,120,1\nARR,3,2\n")
    proc = cli(
        "SELECT * FROM A, C WHERE DEP", "--input", f"A={data}", "--time-column", "time", "--strict-types"
    )
    assert proc.returncode == 2
    assert "stream 'C' never occurs in the input (column 'stream' holds: A)" in proc.stderr
    ok = cli("SELECT * FROM A WHERE DEP", "--input", f"A={data}", "--time-column", "time", "--strict-types")
    assert ok.returncode == 0 and ok.stdout.count("\n") == 1


def test_every_missing_name_is_reported_with_its_nearest(tmp_path: Path) -> None:
    """Not only the first: one run shows every typo (issue 15 review)."""
    rows = [{"type": "DEP", "s": "A"}, {"type": "ARR", "s": "A"}, {"type": "CANCELLED", "s": "A"}]
    text = "SELECT * FROM A, B WHERE dep AS a ; ARV AS b ; CANCELED AS c ; ZZZ AS d"
    q = kleene.compile(text, stream_column="s", strict_types=True)
    with pytest.raises(kleene.UnseenNameError) as info:
        list(q.run(pa.Table.from_pylist(rows)))
    err = info.value
    assert err.message == (
        "5 names never occur in the input: event type 'ARV' (did you mean 'ARR'?), "
        "event type 'CANCELED' (did you mean 'CANCELLED'?), event type 'ZZZ', "
        "event type 'dep' (did you mean 'DEP'?), stream 'B'; "
        "column 'type' holds: ARR, CANCELLED, DEP; column 's' holds: A"
    )
    assert (err.line, err.column) == (1, 37)  # the first one named: ARV
    qs = kleene.compile_many({"one": "SELECT * FROM S WHERE DEP ; ARV", "two": "SELECT * FROM S WHERE dep"},
                             strict_types=True)
    with pytest.raises(kleene.UnseenNameError) as info:
        list(qs.run(pa.Table.from_pylist(ROWS)))
    assert info.value.message == (
        "2 names never occur in the input: query one: event type 'ARV' (did you mean 'ARR'?), "
        "query two: event type 'dep' (did you mean 'DEP'?); column 'type' holds: ARR, DEP"
    )
    data = tmp_path / "f.csv"
    data.write_text("type,price\nDEP,120\nARR,3\n")
    proc = cli("SELECT * FROM S WHERE DPE ; arr", "--input", str(data), "--strict-types")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[0] == (
        "kleene: query error: 2 names never occur in the input: event type 'DPE' (did you mean 'DEP'?), "
        "event type 'arr' (did you mean 'ARR'?); column 'type' holds: ARR, DEP (line 1, column 23)"
    )
