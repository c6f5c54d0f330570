"""The files ``kleene run`` writes besides its results (issue 16): ``--quarantine`` is created
only when the run starts, never through a symbolic link, never on an input or the output;
``--output`` never on an input.  Each case was a way to lose data before."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kleene.cli import main
from kleene.io.badrows import BadRowPolicy

EVENTS = "type,price\nSELL,1\nBUY,\nSELL,3\nBUY,4\n"  # row 1: no price, a bad row
QUERY = "SELECT * FROM S WHERE BUY AS b FILTER b[price > 0]"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "events.csv"
    path.write_text(EVENTS)
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["run", *args])
    return code, capsys.readouterr().err


def test_a_query_that_does_not_compile_leaves_the_quarantine_file_alone(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    code, err = run(
        capsys, "SELECT * WHERE ((", "--input", str(data), "--quarantine", str(precious)
    )
    assert code == 2 and "query error" in err
    assert precious.read_text() == "keep me\n"
    code, err = run(
        capsys, QUERY, "--input", str(tmp_path / "missing.csv"), "--quarantine", str(precious)
    )
    assert code == 3 and "does not exist" in err
    assert precious.read_text() == "keep me\n"


def test_the_quarantine_file_is_never_written_through_a_link(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    link = tmp_path / "bad.jsonl"
    link.symlink_to(precious)
    code, err = run(capsys, QUERY, "--input", str(data), "--quarantine", str(link))
    assert code == 2
    assert f"--quarantine {str(link)!r} is a symbolic link" in err
    assert precious.read_text() == "keep me\n"
    # The library refuses it too (O_NOFOLLOW), whoever calls it.
    with pytest.raises(OSError, match="symbolic link"):
        BadRowPolicy("quarantine", link)
    assert precious.read_text() == "keep me\n"


def test_the_quarantine_file_cannot_be_an_input(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = data.parent / "." / data.name  # another spelling of the same file
    code, err = run(capsys, QUERY, "--input", str(data), "--on-bad-row", "quarantine", str(same))
    assert code == 2
    assert f"--quarantine {str(same)!r} is the input file {str(data)!r}" in err
    assert data.read_text() == EVENTS
    hard = data.parent / "hard.csv"
    os.link(data, hard)  # a hard link: the same file under another name
    code, err = run(capsys, QUERY, "--input", str(data), "--quarantine", str(hard))
    assert code == 2 and "is the input file" in err
    assert data.read_text() == EVENTS


def test_the_quarantine_file_cannot_be_the_output(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    code, err = run(
        capsys, QUERY, "--input", str(data), "--quarantine", str(out), "--output", str(out)
    )
    assert code == 2
    assert f"--output {str(out)!r} and --quarantine {str(out)!r} are the same file" in err
    assert not out.exists()


def test_the_output_cannot_be_an_input(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, QUERY, "--input", str(data), "--output", str(data))
    assert code == 2 and f"--output {str(data)!r} is the input file" in err
    assert data.read_text() == EVENTS


def test_spark_output_and_log_cannot_be_the_input(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked before Spark starts (no JVM in this test)."""
    code, err = run(
        capsys, QUERY, "--input", str(data), "--engine", "spark", "--spark-log", str(data)
    )
    assert code == 2 and f"--spark-log {str(data)!r} is the input file" in err
    code, err = run(capsys, QUERY, "--input", str(data), "--engine", "spark", "--output", str(data))
    assert code == 2 and f"--output {str(data)!r} is the input file" in err
    assert data.read_text() == EVENTS


def test_a_run_writes_its_quarantine_file_when_it_starts(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The good path still works: an old file is replaced by this run's rows, and the summary
    names the file that holds them."""
    quarantine = tmp_path / "bad.jsonl"
    quarantine.write_text("left over from an earlier run\n")
    out = tmp_path / "out.jsonl"
    code, err = run(
        capsys, QUERY, "--input", str(data), "--quarantine", str(quarantine), "--output", str(out)
    )
    assert code == 0
    assert f"1 row set aside: 1 null value in 'price' (written to {quarantine})" in err
    rows = [json.loads(line) for line in quarantine.read_text().splitlines()]
    assert [(r["row"], r["column"]) for r in rows] == [(1, "price")]
    assert len(out.read_text().splitlines()) == 1


def test_a_deferred_policy_opens_at_its_first_bad_row(tmp_path: Path) -> None:
    """A library user's deferred policy never loses a row for want of open()."""
    target = tmp_path / "q.jsonl"
    policy = BadRowPolicy("quarantine", target, deferred=True)
    assert not target.exists()
    policy.handle(4, "price", "null value", {"price": None})
    policy.close()
    assert json.loads(target.read_text())["row"] == 4


def test_a_plot_cannot_overwrite_its_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "events.png"  # an odd name, read as CSV by --format
    data.write_text(EVENTS)
    code = main(["plot", QUERY, "--input", str(data), "--format", "csv", "--output", str(data)])
    assert code == 2 and "is the input file" in capsys.readouterr().err
    assert data.read_text() == EVENTS
