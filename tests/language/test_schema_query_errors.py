"""Query errors only the input's schema reveals, and the atom limit: exit 2 with a caret."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kleene
from kleene.predicates.conform import textual
from kleene_process import kleene_run as cli

FLIGHTS = "type,carrier,dep_delay\nDEP,AA,10\nDEP,UA,NA\nARR,AA,70\n"



def test_cli_text_column_compared_with_a_number_is_a_query_error(tmp_path: Path) -> None:
    data = tmp_path / "f.csv"
    data.write_text(FLIGHTS)
    query = "SELECT * FROM S WHERE DEP as a FILTER a[carrier > 60]"
    proc = cli(query, "--input", str(data))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "kleene: query error: cannot compare a string with a number: column 'carrier' holds text "
        "(such as 'AA'), not numbers (line 1, column 41)",
        f"  {query}",
        "  " + " " * 40 + "^",
    ]
    # A number column with an R-style NA stays a number column: that row is bad input.
    proc = cli("SELECT * FROM S WHERE DEP as a FILTER a[dep_delay > 60]", "--input", str(data))
    assert proc.returncode == 3
    assert "'NA' is not a number (if it means no value" in proc.stderr
    assert proc.stderr.endswith("(row 1, column 'dep_delay')\n")


def test_every_source_whose_schema_tells(tmp_path: Path) -> None:
    table = pa.table({"type": ["DEP", "DEP"], "carrier": ["AA", "UA"], "n": ["70", "5"]})
    pq.write_table(table, tmp_path / "f.parquet")
    sources: list[object] = [table, tmp_path / "f.parquet", table.to_pylist()]
    pd = pytest.importorskip("pandas")
    sources.append(pd.DataFrame(table.to_pydict()))
    for source in sources:
        q = kleene.compile("SELECT * FROM S WHERE DEP as a FILTER a[carrier > 60]")
        with pytest.raises(kleene.QueryError, match="column 'carrier' holds text") as info:
            list(q.run(source))
        assert (info.value.line, info.value.column) == (1, 41)
        # Numbers written as text are still numbers, per value.
        ok = kleene.compile("SELECT * FROM S WHERE DEP as a FILTER a[n > 60]")
        assert [ce.positions for ce in ok.run(source)] == [(0,)]
    arithmetic = kleene.compile("SELECT * FROM S WHERE DEP as a FILTER a[carrier * 2 > 60]")
    with pytest.raises(kleene.QueryError, match="arithmetic '\\*' needs a number, not a string: column"):
        list(arithmetic.run(table))
    rng = kleene.compile("SELECT * FROM S WHERE DEP as a FILTER a[carrier IN RANGE(1, 2)]")
    with pytest.raises(kleene.QueryError, match="IN RANGE needs a number"):
        list(rng.run(table))


def test_the_reverse_number_column_with_a_string_literal() -> None:
    table = pa.table({"type": ["DEP"], "dep_delay": [10]})
    q = kleene.compile("SELECT * FROM S WHERE DEP as a FILTER a[dep_delay == 'late']")
    with pytest.raises(kleene.QueryError, match="cannot compare a number with a string") as info:
        list(q.run(table))
    assert info.value.column == 41


def test_what_counts_as_text() -> None:
    assert textual(pa.array(["AA", None, "UA"])) == "AA"
    assert textual(pa.array(["AA", "12"])) is None  # some numbers: the data decides, per row
    assert textual(pa.array(["NA", " n/a ", None, ""])) is None  # only null-like tokens
    assert textual(pa.array(["NA", "AA"])) == "AA"
    assert textual(pa.array([None, None], pa.string())) is None
    assert textual(pa.array(["AA", "UA"]).dictionary_encode()) == "AA"
    assert textual(pa.array([1, 2])) is None


def many(n: int) -> str:
    return " AND ".join(f"a[x != {i}]" for i in range(n))


def test_too_many_atoms_is_a_query_error_at_the_first_atom_past_the_limit(tmp_path: Path) -> None:
    kleene.compile("SELECT * FROM S WHERE A as a FILTER " + many(63))  # 1 type + 63 = 64 bits
    text = "SELECT * FROM S WHERE A as a FILTER " + many(70)
    with pytest.raises(kleene.QueryError) as info:
        kleene.compile(text)
    err = info.value
    assert err.message.startswith(
        "too many atoms: the query needs 71 (1 event types, 70 distinct predicates, 0 streams), "
        "at most 64 are supported, and this predicate is number 65."
    )
    assert "a[x > 1 AND y < 2] is one predicate" in err.message
    assert text[err.column - 1 :].startswith("x != 63]")
    conditions = "SELECT * FROM S WHERE A as a ; B as b FILTER b[x < a.x] AND " + many(70).replace("a[", "b[")
    with pytest.raises(kleene.QueryError, match="too many atoms") as info:
        kleene.compile(conditions)  # the register engine counts its unary atoms the same way
    assert conditions[info.value.column - 1 :].startswith("x != 62]")  # 2 types + 62 = 64
    data = tmp_path / "f.csv"
    data.write_text("type,x\nA,1\n")
    proc = cli(text, "--input", str(data))
    assert proc.returncode == 2
    assert proc.stderr.startswith("kleene: query error: too many atoms: the query needs 71")
    assert proc.stderr.splitlines()[-1].index("^") == 2 + err.column - 1
