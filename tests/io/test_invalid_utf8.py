"""Invalid UTF-8 in a text column is a bad row (--on-bad-row), and the column stays text."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import kleene
from kleene.io import textfiles
from kleene.io.readers import read_table
from kleene.io.utf8 import INVALID_UTF8
from kleene_process import kleene_run as cli

CSV = b"type,name,price\nDEP,ok,1\nDEP,b\xe9d,2\nDEP,fine,3\n"
JSONL = (
    b'{"type": "DEP", "name": "ok", "price": 1}\n'
    b'{"type": "DEP", "name": "b\xe9d", "price": 2}\n'
    b'{"type": "DEP", "name": "fine", "price": 3}\n'
)



@pytest.fixture(params=["csv", "jsonl"])
def data(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / f"f.{request.param}"
    path.write_bytes(CSV if request.param == "csv" else JSONL)
    return path


def test_the_column_stays_text_and_the_row_is_marked(data: Path) -> None:
    table = read_table(data)
    assert table.schema.field("name").type == pa.string()
    assert table.column("name").to_pylist() == ["ok", "b\\xe9d", "fine"]
    assert table.column(INVALID_UTF8).to_pylist() == [None, "name", None]


def test_error_names_row_and_column(data: Path) -> None:
    # Before: a filter on 'name' said "unknown attribute 'name'" (the column was binary).
    proc = cli("SELECT * FROM S WHERE DEP as a FILTER a[name == 'fine']", "--input", str(data))
    assert proc.returncode == 3
    assert proc.stderr == "kleene: input error: bad input: invalid UTF-8 (row 1, column 'name')\n"
    q = kleene.compile("SELECT * FROM S WHERE DEP as a FILTER a[name == 'fine']")
    with pytest.raises(kleene.DataError, match=r"invalid UTF-8 \(row 1, column 'name'\)"):
        list(q.run(data))


def test_skip_counts_and_names_print_as_text(data: Path) -> None:
    proc = cli("SELECT * FROM S WHERE DEP as a", "--input", str(data), "--on-bad-row", "skip")
    assert proc.returncode == 0
    events = [json.loads(line)["events"][0] for line in proc.stdout.splitlines()]
    assert [e["name"] for e in events] == ["ok", "fine"]  # before: base64 ('b2s=')
    assert proc.stderr == "kleene: 1 row set aside: 1 invalid UTF-8 in 'name'\n"
    filtered = cli(
        "SELECT * FROM S WHERE DEP as a FILTER a[name == 'fine']", "--input", str(data), "--on-bad-row", "skip"
    )
    assert filtered.returncode == 0 and [json.loads(x)["positions"] for x in filtered.stdout.splitlines()] == [[2]]
    q = kleene.compile("SELECT * FROM S WHERE DEP as a FILTER a[name == 'fine']", on_bad_row="skip")
    assert [ce.positions for ce in q.run(data)] == [(2,)]
    assert q.bad_rows.reasons == {"invalid UTF-8 in 'name'": 1}
    assert [m.positions for m in q.matches(data)] == [(2,)]  # read for its columns only: the same


def test_quarantine_writes_the_row_with_the_bytes_escaped(data: Path, tmp_path: Path) -> None:
    target = tmp_path / "bad.jsonl"
    proc = cli("SELECT * FROM S WHERE DEP as a", "--input", str(data), "--on-bad-row", "quarantine", str(target))
    assert proc.returncode == 0 and proc.stdout.count("\n") == 2
    record = json.loads(target.read_text())
    assert record == {
        "row": 1, "column": "name", "reason": "invalid UTF-8",
        "values": {"type": "DEP", "name": "b\\xe9d", "price": 2},
    }


def test_in_the_type_column(tmp_path: Path) -> None:
    # Before: exit 0 and zero results, with no word.
    data = tmp_path / "f.csv"
    data.write_bytes(b"type,price\nDEP,1\nD\xe9P,2\nDEP,3\n")
    proc = cli("SELECT * FROM S WHERE DEP as a", "--input", str(data))
    assert proc.returncode == 3
    assert proc.stderr == "kleene: input error: bad input: invalid UTF-8 (row 1, column 'type')\n"
    proc = cli("SELECT * FROM S WHERE DEP as a", "--input", str(data), "--on-bad-row", "skip")
    assert [json.loads(x)["positions"] for x in proc.stdout.splitlines()] == [[0], [2]]
    assert proc.stderr == "kleene: 1 row set aside: 1 invalid UTF-8 in 'type'\n"


def test_a_later_csv_block_and_a_large_jsonl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes past Arrow's first block (the column was typed string) and the streaming path."""
    monkeypatch.setattr(textfiles, "BUFFER_BYTES", 1000)
    rows = 60_000
    data = tmp_path / "big.csv"
    body = b"".join(b"DEP,name%d,%d\n" % (i, i) for i in range(rows))
    data.write_bytes(b"type,name,price\n" + body + b"DEP,b\xff,1\nDEP,last,2\n")
    q = kleene.compile("SELECT * FROM S WHERE DEP as a FILTER a[name == 'last']", on_bad_row="skip")
    assert [ce.positions for ce in q.run(data)] == [(rows + 1,)]
    assert q.bad_rows.count == 1
    lines = tmp_path / "big.jsonl"
    lines.write_bytes(
        b"".join(b'{"type": "DEP", "name": "n%d"}\n' % i for i in range(rows)) + b'{"type": "DEP", "name": "\xff"}\n'
    )
    q = kleene.compile("SELECT * FROM S WHERE DEP as a FILTER a[name == 'n5']", on_bad_row="skip")
    assert [ce.positions for ce in q.run(lines)] == [(5,)]
    assert q.bad_rows.reasons == {"invalid UTF-8 in 'name'": 1}


def test_malformed_json_with_invalid_bytes_is_still_malformed(tmp_path: Path) -> None:
    data = tmp_path / "f.jsonl"
    data.write_bytes(b'{"type": "DEP"}\n{"type": "D\xe9P"\n')
    proc = cli("SELECT * FROM S WHERE DEP", "--input", str(data), "--on-bad-row", "skip")
    assert proc.returncode == 3 and "malformed JSON on line 2" in proc.stderr
