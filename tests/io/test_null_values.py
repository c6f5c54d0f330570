"""--null-values / null_values=: more null tokens (R's NA), and the hint that names them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import kleene
from kleene.io.readers import read_table
from kleene.predicates.conform import not_a_number
from kleene_process import kleene_run as cli

FLIGHTS = "type,dep_delay,note\nDEP,10,a\nDEP,NA,null\nDEP,,NULL\nDEP,70,b\nDEP,N/A,c\n"
QUERY = "SELECT * FROM S WHERE DEP as a FILTER a[dep_delay > 60]"



def test_read_as_null_and_the_defaults_kept(tmp_path: Path) -> None:
    data = tmp_path / "f.csv"
    data.write_text(FLIGHTS)
    assert read_table(data).column("dep_delay").type == pa.string()  # NA is text by default
    table = pa.Table.from_batches(
        list(kleene.io.readers.read_batches(data, null_values=["NA", "N/A"]))
    )
    assert table.column("dep_delay").type == pa.int64()
    assert table.column("dep_delay").to_pylist() == [10, None, None, 70, None]
    assert table.column("note").to_pylist() == ["a", None, None, "b", "c"]  # null, NULL still nulls


def test_cli_hint_then_the_option(tmp_path: Path) -> None:
    data = tmp_path / "f.csv"
    data.write_text(FLIGHTS)
    proc = cli(QUERY, "--input", str(data))
    assert proc.returncode == 3
    assert proc.stderr == (
        "kleene: input error: bad input: 'NA' is not a number (if it means no value, read it as "
        "null: --null-values NA, null_values=['NA'] in Python) (row 1, column 'dep_delay')\n"
    )
    proc = cli(QUERY, "--input", str(data), "--null-values", "NA,N/A")
    assert proc.returncode == 3  # a null read by a predicate is still a bad row, but a true one
    assert proc.stderr == (
        "kleene: input error: bad input: null value (the query reads this attribute and the row "
        "has no value: --on-bad-row skip sets such rows aside and counts them, --on-bad-row "
        "quarantine FILE also keeps them; on_bad_row= in Python) (row 1, column 'dep_delay')\n"
    )
    proc = cli(QUERY, "--input", str(data), "--null-values", "NA, N/A", "--on-bad-row", "skip")
    assert proc.returncode == 0 and proc.stdout.count("\n") == 1
    assert proc.stderr == "kleene: 3 rows set aside: 3 null value in 'dep_delay'\n"
    bad = cli(QUERY, "--input", str(data), "--null-values", "NA,,x")
    assert bad.returncode == 2 and "--null-values: an empty token" in bad.stderr


def test_python_api_and_json_lines(tmp_path: Path) -> None:
    data = tmp_path / "f.csv"
    data.write_text(FLIGHTS)
    q = kleene.compile(QUERY, null_values=["NA", "N/A"], on_bad_row="skip")
    assert [ce.positions for ce in q.run(data)] == [(3,)]
    assert q.bad_rows.reasons == {"null value in 'dep_delay'": 3}
    lines = tmp_path / "f.jsonl"
    lines.write_text('{"type": "DEP", "dep_delay": 70}\n{"type": "DEP", "dep_delay": "NA"}\n')
    q = kleene.compile(QUERY, null_values=("NA",), on_bad_row="skip")
    assert [m.positions for m in q.matches(lines)] == [(0,)]
    assert q.bad_rows.reasons == {"null value in 'dep_delay'": 1}
    with pytest.raises(kleene.KleeneError, match="a list of texts"):
        kleene.compile(QUERY, null_values="NA")  # type: ignore[typeddict-item]


def test_the_hint_only_for_null_like_text() -> None:
    assert not_a_number("abc") == "'abc' is not a number"
    assert "--null-values -" in not_a_number("-")
    assert "--null-values NaN" not in not_a_number("12x")
    assert "null_values=['n/a']" in not_a_number(" n/a ")
