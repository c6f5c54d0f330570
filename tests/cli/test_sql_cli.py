"""``kleene sql``: exit codes, messages, outputs, ``--table``, and DuckDB absent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kleene.cli import main

ROWS = [{"id": i, "g": "ab"[i % 2], "v": v} for i, v in enumerate([5, 3, 1, 4, 6, 2, 7, 8, 1, 9])]
CLAUSE = """MATCH_RECOGNIZE (
  PARTITION BY g ORDER BY id
  MEASURES FIRST(id) AS first_id, LAST(id) AS last_id, COUNT(*) AS n
  PATTERN (DOWN+ UP+)
  DEFINE DOWN AS v < PREV(v), UP AS v > PREV(v)
)"""


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    with open(tmp_path / "rows.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in ROWS)
    return tmp_path


def expected() -> list[dict[str, object]]:
    from kleene.reference.match_recognize import match_recognize

    return match_recognize(ROWS, CLAUSE).to_pylist()  # type: ignore[no-any-return]


def test_rows_go_to_stdout_as_json_lines(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sql", f"SELECT * FROM 'rows.jsonl' {CLAUSE} AS m ORDER BY g, first_id"])
    out = capsys.readouterr().out
    assert code == 0
    got = [json.loads(line) for line in out.splitlines()]
    assert got == sorted(expected(), key=lambda r: (r["g"], r["first_id"]))
    assert len(got) >= 2


def test_table_option_and_parquet_output(data: Path) -> None:
    code = main(["sql", f"SELECT g, n FROM rows {CLAUSE} WHERE n > 100", "--table",
                 "rows=rows.jsonl", "--output", "out.parquet"])
    assert code == 0
    empty = pq.read_table(data / "out.parquet")
    assert empty.num_rows == 0 and empty.column_names == ["g", "n"]
    assert main(["sql", f"SELECT * FROM rows {CLAUSE}", "--table", "rows=rows.jsonl",
                 "-o", "out.arrow"]) == 0
    with pa.ipc.open_file(data / "out.arrow") as f:
        table = f.read_all()
    assert table.schema.field("n").type == pa.int64()
    assert sorted(table.to_pylist(), key=str) == sorted(expected(), key=str)


def test_a_statement_file(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (data / "q.sql").write_text(f"SELECT count(*) AS c FROM 'rows.jsonl' {CLAUSE};\n")
    assert main(["sql", "q.sql"]) == 0
    assert json.loads(capsys.readouterr().out) == {"c": len(expected())}


@pytest.mark.parametrize(("statement", "message"), [
    ("SELECT *\nFROM 'rows.jsonl' " + CLAUSE.replace("v < PREV(v)", "v < < PREV(v)"),
     "(line 6, column"),
    (f"SELECT * FROM 'rows.jsonl' {CLAUSE.replace('COUNT(*)', 'SUM(g)')}",
     "SUM needs numbers, not a string (string) (line 3, column"),
    ("DELETE FROM x", "only a SELECT (or WITH ... SELECT) statement runs here, not 'DELETE'"),
    (f"SELECT nope FROM 'rows.jsonl' {CLAUSE}", "kleene: SQL error: DuckDB: Binder Error"),
    ("SELECT * FROM read_json('rows.jsonl')", "kleene: SQL error: DuckDB: Permission Error"),
])
def test_bad_statements_exit_2_with_a_message(data: Path, capsys: pytest.CaptureFixture[str],
                                               statement: str, message: str) -> None:
    assert main(["sql", statement]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_the_caret_points_into_the_whole_statement(data: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    statement = "SELECT *\nFROM 'rows.jsonl' " + CLAUSE.replace("v > PREV(v)", "v > PREV(w)")
    assert main(["sql", statement]) == 2
    err = capsys.readouterr().err
    assert "unknown column 'w'" in err
    line = "  DEFINE DOWN AS v < PREV(v), UP AS v > PREV(w)"
    column = line.index("w)") + 1
    assert statement.split("\n")[5] == line
    assert f"(line 6, column {column})" in err
    assert err.rstrip().endswith(f"  {line}\n" + " " * (column + 1) + "^")


def test_bad_table_option(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", "SELECT 1", "--table", "rows"]) == 2
    assert "write NAME=FILE" in capsys.readouterr().err
    assert main(["sql", "SELECT 1", "--table", "rows=nowhere.csv"]) == 2
    assert "no such file 'nowhere.csv'" in capsys.readouterr().err


def test_without_duckdb_the_message_names_the_extra(data: Path) -> None:
    code = ("import sys; sys.modules['duckdb'] = None\n"
            "from kleene.cli import main\n"
            f"sys.exit(main(['sql', {f'SELECT * FROM {chr(39)}rows.jsonl{chr(39)} {CLAUSE}'!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=data)
    assert done.returncode == 1
    assert "pip install 'kleene[sql]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README.md's `kleene sql` example, on Oracle's ACME rows (E1 of the spec note)."""
    import datetime as dt
    import shlex

    monkeypatch.chdir(tmp_path)
    acme = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22]
    pq.write_table(pa.Table.from_pylist(
        [{"symbol": "ACME", "tstamp": dt.date(2011, 4, d + 1), "price": p}
         for d, p in enumerate(acme)]), tmp_path / "ticker.parquet")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("**`kleene sql`**", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    argv = shlex.split(block)
    assert argv[:2] == ["kleene", "sql"]
    assert main(argv[1:]) == 0
    out = pq.read_table(tmp_path / "matches.parquet").to_pylist()
    assert [(r["start_tstamp"], r["end_tstamp"]) for r in out] == [
        (dt.date(2011, 4, 11), dt.date(2011, 4, 13)), (dt.date(2011, 4, 14), dt.date(2011, 4, 18))]
