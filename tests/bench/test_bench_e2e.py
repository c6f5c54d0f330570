"""Smoke tests of the process benchmarks: ``benchmarks.startup`` and ``benchmarks.end_to_end``.

Each script runs for real (fresh ``kleene`` and CORE processes) on a few hundred events with
one timed run; the tests check the tables' structure and that kleene and CORE agree on the
complex events, never a time.  CORE's side needs ``.venv-core`` (``make venv-core``, a
prerequisite of ``make test``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import core_e2e, datasets, end_to_end, startup  # noqa: E402
from benchmarks.workloads import CORE_ISSUE  # noqa: E402

import kleene  # noqa: E402

CORE_PYTHON = ROOT / ".venv-core" / "bin" / "python"
EVENTS = 400
WALL = re.compile(r"^(\d+\.\d+) \((\d+\.\d+)-(\d+\.\d+)\)$")


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the Markdown table in ``text``, as cells."""
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    assert len(lines) >= 2 and set(lines[1]) <= set("|-: "), text
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]]


def wall(cell: str) -> tuple[float, float, float]:
    m = WALL.match(cell)
    assert m, cell
    median, low, high = (float(x) for x in m.groups())
    assert 0 < low <= median <= high
    return median, low, high


def expected(query: str) -> int:
    """The complex events of ``query`` on the test's stream, in-process."""
    return sum(1 for _ in kleene.compile(query).matches(datasets.synthetic(EVENTS, 0)))


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path / "data")
    return tmp_path


def test_startup_table(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert startup.main(["--runs", "1", "--warmup", "0", "--events", str(EVENTS), "--out", str(data_dir / "st")]) == 0
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert [r[0] for r in rows] == [
        "`python -c pass` (the interpreter alone)",
        '`python -c "import kleene"`',
        "`kleene run C2` on the header-only CSV",
        f"`kleene run C2` on {EVENTS:,} events",
    ]
    for r in rows:
        wall(r[2])
        assert float(r[3]) >= 0
    assert [r[1] for r in rows] == ["—", "—", "0", str(expected(CORE_ISSUE["C2"]))]
    assert "load average" in out and "commit" in out


def test_end_to_end_table_and_agreement(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert CORE_PYTHON.exists(), "CORE's venv is missing: `make venv-core` (a prerequisite of `make test`)"
    argv = ["--runs", "1", "--warmup", "0", "--events", str(EVENTS), "--out", str(data_dir / "e2e"), "--core-python", str(CORE_PYTHON)]
    assert end_to_end.main(argv) == 0
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert [r[0] for r in rows] == list(end_to_end.WORKLOADS)
    for r in rows:
        name, k_count, c_count = r[0], r[1], r[2]
        assert k_count == c_count == f"{expected(end_to_end.WORKLOADS[name]):,}", r
        k_wall, c_wall = wall(r[3])[0], wall(r[4])[0]
        assert float(r[5]) == pytest.approx(k_wall / c_wall, abs=0.01)
        engine_only = float(r[6])
        assert 0 < engine_only < c_wall
        assert len(r[9].split(" / ")) == len(end_to_end.PHASES)
    assert sum(int(r[1].replace(",", "")) for r in rows) > 100  # the workloads did find complex events
    assert "Notes:" not in out  # the two engines' JSON Lines files hold the same lines
    assert "MISMATCH" not in out


def test_end_to_end_fails_loudly_on_a_mismatch(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """CORE given another query (price > 150): the counts differ, the run says so and exits 1."""
    original = end_to_end.Engines.command

    def other_query_for_core(self: end_to_end.Engines, name: str, engine: str) -> list[str]:
        cmd = original(self, name, engine)
        return [c.replace("price > 100", "price > 150") for c in cmd] if engine == "core" else cmd

    monkeypatch.setattr(end_to_end.Engines, "command", other_query_for_core)
    argv = ["--runs", "1", "--warmup", "0", "--events", str(EVENTS), "--workloads", "W1", "--out", str(data_dir / "e2e"),
            "--core-python", str(CORE_PYTHON)]
    assert end_to_end.main(argv) == 1
    captured = capsys.readouterr()
    assert "MISMATCH on W1" in captured.err
    assert "**MISMATCH**" in captured.out and "complex events differ" in captured.out


def test_compare_outputs_and_partition_attributes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"positions": [0, 1]}\n{"positions": [2]}\n')
    b.write_text('{"positions": [2]}\n{"positions": [0, 1]}\n')
    assert end_to_end.compare_outputs(a, b) == ""
    b.write_text('{"positions": [2]}\n{"positions":  [0, 1]}\n')
    assert end_to_end.compare_outputs(a, b) == "same complex events, but the JSON lines differ in text"
    b.write_text('{"positions": [2]}\n')
    assert end_to_end.compare_outputs(a, b).startswith("complex events differ: only kleene [(0, 1)] (1)")
    assert core_e2e.partition_attributes(end_to_end.WORKLOADS["W4"]) == ["name"]
    assert core_e2e.partition_attributes("SELECT * FROM S WHERE A PARTITION BY [name, volume]") == ["name", "volume"]
    assert core_e2e.partition_attributes(CORE_ISSUE["C1"]) == []
