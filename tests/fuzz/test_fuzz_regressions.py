"""Failures the fuzzers found (tests/fuzz), each kept fixed by its shrunk case."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kleene
from kleene_process import kleene_run

QUERY = "SELECT * WHERE SELL as a ; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS"


@pytest.mark.parametrize("breaker", ["\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
def test_query_error_shows_the_line_the_parser_counted(breaker: str) -> None:
    # str.splitlines() breaks lines at these characters, the parser only at "\n": the caret
    # was shown under a cut line ("SELECT *") while the column counted the whole one.
    text = f"SELECT *{breaker}WHERE A FILTER A[x = ]"
    with pytest.raises(kleene.QueryError) as err:
        kleene.compile(text)
    e = err.value
    assert (e.line, e.column) == (1, text.index("]") + 1)
    _, shown, caret = str(e).split("\n")
    assert shown == "  " + text
    assert caret.index("^") == shown.index("]")


def test_query_error_on_a_later_line_with_a_vertical_tab() -> None:
    text = "SELECT * FROM S\nWHERE SELL as a\nFILTER a[nam\x0be = 1]"
    with pytest.raises(kleene.QueryError) as err:
        kleene.compile(text)
    e = err.value
    assert (e.line, e.column) == (3, 14)
    _, shown, caret = str(e).split("\n")
    assert shown == "  FILTER a[nam\x0be = 1]"
    assert shown[caret.index("^")] == "e"


def test_unterminated_string_after_a_vertical_tab_is_named() -> None:
    with pytest.raises(kleene.QueryError, match="unterminated string") as err:
        kleene.compile("SELECT * WHERE A\x0bFILTER A[x = 'abc]")
    assert err.value.column == 31


def test_query_error_of_a_crlf_text_shows_no_carriage_return() -> None:
    with pytest.raises(kleene.QueryError) as err:
        kleene.compile("SELECT *\r\nWHERE A FILTER A[x = ]\r\n")
    assert err.value.line == 2
    assert str(err.value).split("\n")[1] == "  WHERE A FILTER A[x = ]"


def _bad_header_csv(tmp_path: Path, name: str = "bad.csv") -> Path:
    # the shrunk fuzz case: one byte of the header's "volume" set to 0xa4
    path = tmp_path / name
    path.write_bytes(b"type,price,name,vol\xa4me,t\nSELL,150,x,1,0\nBUY,10,y,2,1\n")
    return path


def test_csv_header_not_utf8_is_a_data_error(tmp_path: Path) -> None:
    path = _bad_header_csv(tmp_path)
    with pytest.raises(kleene.DataError, match=r"header .* is not valid UTF-8: column 4 \('vol\ufffdme'\)"):
        list(kleene.compile(QUERY).run(path))


def test_csv_header_not_utf8_exits_3_without_traceback(tmp_path: Path) -> None:
    for name in ("bad.csv", "bad.tsv"):
        path = _bad_header_csv(tmp_path, name)
        if name.endswith(".tsv"):
            path.write_bytes(path.read_bytes().replace(b",", b"\t"))
        done = kleene_run(QUERY, "--input", str(path), "--no-progress")
        assert done.returncode == 3, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith("kleene: input error: the header of")
        assert "is not valid UTF-8: column 4" in done.stderr


def test_csv_data_rows_not_utf8_stay_bad_rows(tmp_path: Path) -> None:
    # the header check reads only the header: bad bytes further down are still bad rows
    path = tmp_path / "rows.csv"
    path.write_bytes(b"type,price,name\nSELL,150,x\xa4\nBUY,10,y\nSELL,120,z\nBUY,11,w\n")
    q = kleene.compile("SELECT * WHERE SELL as a ; BUY as b FILTER a[name = 'z']", on_bad_row="skip")
    assert [ce.positions for ce in q.run(path)] == [(2, 3)]
    assert q.bad_rows.reasons == {"invalid UTF-8 in 'name'": 1}


# Arrow columns of types kleene does not compare (nested) or reads only in plain layouts (views):
# a numeric predicate over them raised ArrowNotImplementedError from pyarrow's compute kernels.
NESTED = {
    "list": pa.array([[1], [2], [3], [4]]),
    "struct": pa.array([{"x": 1}] * 4),
    "map": pa.array([[("a", 1)]] * 4, pa.map_(pa.string(), pa.int64())),
}


@pytest.mark.parametrize("kind", sorted(NESTED))
def test_numeric_predicate_over_a_nested_column_is_a_query_error(kind: str, tmp_path: Path) -> None:
    events = pa.table({"type": ["SELL", "BUY", "SELL", "BUY"], "price": NESTED[kind]})
    with pytest.raises(kleene.QueryError, match="'price'"):
        list(kleene.compile(QUERY).run(events))
    path = tmp_path / "nested.parquet"
    pq.write_table(events, path)
    done = kleene_run(QUERY, "--input", str(path), "--no-progress")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("kleene: query error:") and "Traceback" not in done.stderr


def test_string_view_columns_are_read_as_strings() -> None:
    types = pa.array(["SELL", "BUY", "SELL", "BUY"], pa.string_view())
    prices = pa.array(["150", "10", "120", "11"], pa.string_view())
    events = pa.table({"type": types, "price": prices})
    expected = [(0, 1), (0, 3), (2, 3)]
    for source in (events, events.to_batches()[0], events.to_reader(), events.to_batches()):
        assert sorted(ce.positions for ce in kleene.compile(QUERY).run(source)) == expected
    q = kleene.compile(QUERY)
    assert sorted(ce.positions for ce in q.push_batch(events)) == expected
