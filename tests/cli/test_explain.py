"""``kleene explain``: it reads no data, so it needs no data flags, and the ones it is given show."""

from __future__ import annotations

from pathlib import Path

import pytest

import kleene
from kleene.cli import main

TIMED = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 seconds"


def explain(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["explain", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_time_window_is_explained_without_time_column(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = explain(capsys, TIMED)
    assert code == 0, err
    assert "engine: tecs" in out
    assert "window: WITHIN 10 seconds; running it needs a time column (--time-column" in out
    assert "reads columns: type, price (event type in 'type')" in out


def test_the_data_flags_show_what_they_change(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = explain(
        capsys, TIMED, "--time-column", "ts", "--time-unit", "ms", "--type-column", "kind"
    )
    assert code == 0, err
    assert "window: WITHIN 10 seconds, on the time column 'ts' (unit ms if numeric)" in out
    assert "reads columns: kind, price, ts (event type in 'kind')" in out
    query = "SELECT * FROM S1, S2 WHERE S1>SELL as a; S2>BUY as b PARTITION BY [name]"
    code, out, err = explain(capsys, query, "--stream-column", "src")
    assert code == 0, err
    assert "streams: from the column 'src', reading S1, S2" in out
    assert "partitions: one per value of name" in out
    assert "src" in out.splitlines()[-1]


def test_the_example_query_file(capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[2]
    code, out, err = explain(capsys, str(root / "examples" / "stock.ceql"))
    assert code == 0, err
    assert "reads columns: type, name, price" in out


def test_several_queries_are_explained_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "two.ceql"
    f.write_text(
        "QUERY up: SELECT * WHERE SELL as a; BUY as b\n"
        "QUERY pair: SELECT * WHERE T as x ; H as y FILTER y[id = x.id]\n"
    )
    code, out, err = explain(capsys, str(f))
    assert code == 0, err
    assert "query up:\nengine: tecs" in out and "query pair:\nengine: registers" in out


def test_a_bad_query_is_still_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = explain(capsys, "SELECT * WHERE SELL as a FILTER b[price > 1]")
    assert code == 2 and out == ""
    assert "query error" in err and "^" in err


def test_running_still_needs_the_time_column(capsys: pytest.CaptureFixture[str]) -> None:
    """Only explaining goes without: compile() (and so `kleene run`) still asks for it."""
    with pytest.raises(kleene.UnsupportedError, match="time_column"):
        kleene.compile(TIMED)


def test_a_wildcard_query_reads_no_type_column(capsys: pytest.CaptureFixture[str]) -> None:
    query = "SELECT * WHERE _ as a; _ as b FILTER a[delay > 60] PARTITION BY [carrier]"
    code, out, err = explain(capsys, query)
    assert code == 0, err
    assert "reads columns: delay, carrier (no event type column: every event pattern is _)" in out
