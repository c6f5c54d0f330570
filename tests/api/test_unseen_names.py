"""A name the query expects that the input never holds is said, never left as silence."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import kleene
from kleene.seen import nearest

ROWS = [{"type": "DEP", "price": 120.0, "s": "A"}, {"type": "ARR", "price": 3.0, "s": "B"}]


def unseen(text: str, rows: list[dict[str, object]] = ROWS, **options: object) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(kleene.compile(text, **options).run(rows))  # type: ignore[arg-type]
    return [str(w.message) for w in caught if issubclass(w.category, kleene.UnseenNameWarning)]


def test_a_misspelled_event_type_is_named_with_the_nearest_one() -> None:
    assert unseen("SELECT * FROM S WHERE DPE as a ; ARR as b") == [
        "event type 'DPE' never occurs in the input (column 'type' holds: ARR, DEP); "
        "did you mean 'DEP'?"
    ]
    lower = unseen("SELECT * FROM S WHERE dep as a ; ARR as b")
    assert len(lower) == 1 and "did you mean 'DEP'?" in lower[0]
    far = unseen("SELECT * FROM S WHERE DEP as a ; LANDING as b")
    assert len(far) == 1 and "did you mean" not in far[0]


def test_no_warning_when_every_name_occurs_or_nothing_was_read() -> None:
    assert unseen("SELECT * FROM S WHERE DEP as a ; ARR as b") == []
    assert unseen("SELECT * FROM S WHERE DPE", rows=[]) == []  # an empty input is said by its size
    declared = "CREATE STREAM S { EVENT DEP { price: double }, EVENT ARR { price: double } } "
    assert unseen(declared + "SELECT * FROM S WHERE DEP as a ; ARR as b") == []


def test_streams_and_several_queries() -> None:
    rows = [dict(r) for r in ROWS]
    found = unseen("SELECT * FROM A, C WHERE DEP", rows=rows, stream_column="s")
    assert found == ["stream 'C' never occurs in the input (column 's' holds: A, B)"]
    qs = kleene.compile_many({"ok": "SELECT * FROM S WHERE DEP", "typo": "SELECT * FROM S WHERE ARV"})
    with pytest.warns(kleene.UnseenNameWarning, match="query typo: event type 'ARV'.*'ARR'"):
        list(qs.run(pa.Table.from_pylist(ROWS)))


def test_dictionary_columns_and_the_nearest_name() -> None:
    table = pa.table({"type": pa.array(["DEP", "ARR", "DEP"]).dictionary_encode(), "price": [1.0, 2.0, 3.0]})
    with pytest.warns(kleene.UnseenNameWarning, match="holds: ARR, DEP"):
        list(kleene.compile("SELECT * FROM S WHERE CXL").matches(table))
    assert nearest("dep", ["ARR", "DEP"]) == "DEP"
    assert nearest("DEPT", ["ARR", "DEP"]) == "DEP"
    assert nearest("ZZZ", ["ARR", "DEP"]) is None


def test_the_cli_says_so_on_stderr(tmp_path: Path) -> None:
    data = tmp_path / "f.csv"
    data.write_text("type,price\nDEP,120\nARR,3\n")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "kleene", "run", "SELECT * FROM S WHERE DPE as a ; ARR as b",
         "--input", str(data)],
        capture_output=True, text=True, timeout=60, cwd=root,
    )
    assert proc.returncode == 0 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "kleene: no complex events",
        "kleene: event type 'DPE' never occurs in the input (column 'type' holds: ARR, DEP); "
        "did you mean 'DEP'?",
    ]


def test_no_message_once_the_column_held_too_many_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recording stops at MAX_NAMES names: a name first met after that is not called missing."""
    from kleene import seen

    monkeypatch.setattr(seen, "MAX_NAMES", 3)
    rows = [{"type": t, "price": 1.0} for t in ("A", "B", "C", "D")]
    batches = [pa.RecordBatch.from_pylist(rows[:3]), pa.RecordBatch.from_pylist(rows[3:])]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(kleene.compile("SELECT * FROM S WHERE D").run(batches))
    assert [w for w in caught if issubclass(w.category, kleene.UnseenNameWarning)] == []
    assert unseen("SELECT * FROM S WHERE E", rows=rows[:2]) != []  # under the cap it still speaks
