"""``kleene run --engine spark`` checks the query against the input's schema before Spark starts.

Each run is a subprocess whose environment cannot start Spark (no ``java``,
no ``bash`` on the PATH, no JAVA_HOME): an error that comes back with the
in-process CLI's message and exit code was found before the JVM.  The control
(a correct query, same environment) shows that reaching Spark fails there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

QUERY = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 3 EVENTS"
TYPO = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[prise > 100] WITHIN 3 EVENTS"


def _no_spark_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME", "PATH")}
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    env["PATH"] = str(empty)
    return env


def _kleene(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kleene", "run", *args, "--engine", "spark", "--no-progress",
         "-o", str(tmp_path / "out.jsonl")],
        capture_output=True, text=True, env=_no_spark_env(tmp_path), timeout=120,
    )


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    table = pa.table({"type": ["SELL", "BUY"], "price": [120.0, 3.0], "ts": [1, 2]})
    paths = {"parquet": tmp_path / "ev.parquet", "csv": tmp_path / "ev.csv", "jsonl": tmp_path / "ev.jsonl"}
    pq.write_table(table, paths["parquet"])
    paths["csv"].write_text("type,price,ts\nSELL,120.0,1\nBUY,3.0,2\n")
    paths["jsonl"].write_text('{"type": "SELL", "price": 120.0, "ts": 1}\n{"type": "BUY", "price": 3.0, "ts": 2}\n')
    return paths


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_unknown_attribute_before_spark(tmp_path: Path, inputs: dict[str, Path], fmt: str) -> None:
    done = _kleene(tmp_path, TYPO, "--input", str(inputs[fmt]))
    assert done.returncode == 2, done.stderr
    assert "kleene: query error: unknown attribute 'prise'" in done.stderr
    assert "^" in done.stderr and "Traceback" not in done.stderr


def test_missing_type_column_before_spark(tmp_path: Path, inputs: dict[str, Path]) -> None:
    done = _kleene(tmp_path, QUERY, "--input", str(inputs["parquet"]), "--type-column", "kind")
    assert done.returncode == 3, done.stderr
    assert "no event type column 'kind'" in done.stderr and "--type-column" in done.stderr


def test_missing_time_column_before_spark(tmp_path: Path, inputs: dict[str, Path]) -> None:
    done = _kleene(tmp_path, QUERY, "--input", str(inputs["csv"]), "--time-column", "tme")
    assert done.returncode == 3, done.stderr
    assert "kleene: input error: the time column is missing (column 'tme')" in done.stderr


def test_missing_input_file_as_in_process(tmp_path: Path) -> None:
    done = _kleene(tmp_path, QUERY, "--input", str(tmp_path / "nope.csv"))
    assert done.returncode == 3, done.stderr
    assert "does not exist" in done.stderr and "Traceback" not in done.stderr


def test_a_correct_query_does_reach_spark(tmp_path: Path, inputs: dict[str, Path]) -> None:
    """The control: with no error to find, the run goes on to Spark, which cannot start here."""
    done = _kleene(tmp_path, QUERY, "--input", str(inputs["parquet"]))
    assert done.returncode not in (0, 2, 3), done.stderr


def test_null_sample_column_is_not_judged(tmp_path: Path) -> None:
    """A CSV column empty in the sampled block has no type yet: the pre-check concludes nothing
    (Spark's whole-file schema decides), so the run goes on to Spark."""
    data = tmp_path / "ev.csv"
    data.write_text("type,price,note\nSELL,120.0,\nBUY,3.0,\n")
    done = _kleene(tmp_path, "SELECT * FROM S WHERE SELL as a FILTER a[note = 'x']", "--input", str(data))
    assert done.returncode not in (0, 2, 3), done.stderr


@pytest.mark.parametrize(
    "policy", [["--on-bad-row", "skip"], ["--on-bad-row", "quarantine", "Q"], ["--quarantine", "Q"]]
)
def test_skip_and_quarantine_are_refused_before_spark(
    tmp_path: Path, inputs: dict[str, Path], policy: list[str]
) -> None:
    """Spark has only the ``error`` policy: asking for another is a usage error before the JVM
    (this environment cannot start one), with what to do instead; no quarantine file appears."""
    quarantine = tmp_path / "bad.jsonl"
    args = [str(quarantine) if a == "Q" else a for a in policy]
    done = _kleene(tmp_path, QUERY, "--input", str(inputs["csv"]), *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "kleene run: error: --engine spark supports only --on-bad-row error (it stops at the "
        "first bad row): --on-bad-row skip and quarantine are for the in-process engine (leave "
        "out --engine spark), or filter such rows out of the input first"
    )
    assert not quarantine.exists() and not (tmp_path / "out.jsonl").exists()
