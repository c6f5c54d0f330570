"""``kleene run --count``: the number of complex events per query, as text, no events written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kleene.cli import main

ROOT = Path(__file__).resolve().parents[2]
STOCK = str(ROOT / "examples" / "stock.csv")
QUERY = str(ROOT / "examples" / "stock.ceql")
ITERATION = "SELECT {s} * FROM S WHERE SELL as a ; BUY+ as b ; SELL as c WITHIN 6 EVENTS"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def listed(capsys: pytest.CaptureFixture[str], *args: str) -> int:
    code, out, _ = run(capsys, *args)
    assert code == 0
    return len([json.loads(line) for line in out.splitlines() if line.strip()])


@pytest.mark.parametrize("strategy", ["", "STRICT", "NEXT", "LAST", "MAX"])
def test_count_prints_the_number_of_lines_run_prints(capsys: pytest.CaptureFixture[str], strategy: str) -> None:
    query = ITERATION.format(s=strategy)
    code, out, err = run(capsys, "run", query, "--input", STOCK, "--count")
    assert code == 0, err
    assert out == f"{listed(capsys, 'run', query, '--input', STOCK)}\n"
    assert int(out) > 0


def test_count_of_the_demo_query(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "run", QUERY, "--input", STOCK, "--time-column", "time", "--count")
    assert (code, out, err) == (0, "7\n", "")


def test_several_queries_one_line_each(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """One line per query, ``NAME<TAB>NUMBER``, in query order; ``--output`` gets the same text."""
    nxt = ITERATION.format(s="NEXT")
    code, out, err = run(capsys, "run", QUERY, nxt, "--input", STOCK, "--time-column", "time", "--count")
    assert code == 0, err
    alone = listed(capsys, "run", nxt, "--input", STOCK)
    assert out == f"stock\t7\nq2\t{alone}\n"
    target = tmp_path / "counts.txt"
    code, out, _ = run(capsys, "run", QUERY, nxt, "--input", STOCK, "--time-column", "time", "--count",
                       "--output", str(target))
    assert (code, out) == (0, "")
    assert target.read_text() == f"stock\t7\nq2\t{alone}\n"


def test_bad_rows_are_counted_and_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    events = tmp_path / "events.csv"
    events.write_text("type,price\nSELL,120\nBUY,\nBUY,40\nSELL,130\nBUY,50\n")
    query = "SELECT * FROM S WHERE SELL as a ; BUY as b FILTER b[price < 100]"
    code, out, err = run(capsys, "run", query, "--input", str(events), "--count")
    assert code == 3
    assert "row 1" in err and "'price'" in err
    code, out, err = run(capsys, "run", query, "--input", str(events), "--count", "--on-bad-row", "skip")
    assert (code, out) == (0, "3\n")
    assert "1 row set aside" in err


def test_unseen_type_says_no_complex_events(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "run", "SELECT * FROM S WHERE SELL as a ; BYU as b", "--input", STOCK, "--count")
    assert (code, out) == (0, "0\n")
    assert "kleene: no complex events" in err
    assert "did you mean 'BUY'" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--output-format", "parquet"], "--count writes numbers as text: leave out --output-format"),
        (["--engine", "spark"], "--count runs in this process: leave out --engine spark"),
    ],
)
def test_count_refuses_what_it_cannot_honour(capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    code, out, err = run(capsys, "run", ITERATION.format(s=""), "--input", STOCK, "--count", *extra)
    assert code == 2
    assert out == ""
    assert message in err


def test_bad_query_exits_2_with_a_caret(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "run", "SELECT * FROM S WHERE SELL as a ;; BUY", "--input", STOCK, "--count")
    assert code == 2
    assert out == ""
    assert "^" in err
