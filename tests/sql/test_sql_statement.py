"""SQL statements with MATCH_RECOGNIZE (kleene.sql): the tokenizer, the clause extraction, DuckDB.

Every statement runs for real (DuckDB, kleene's readers, the reference evaluator);
expected rows come from running the clause alone through the reference and
applying the rest of the statement by hand.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from kleene.language.errors import QueryError
from kleene.reference.match_recognize import match_recognize
from kleene.sql.duckdb_engine import SqlEngineError, run_sql
from kleene.sql.tokens import tokenize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from match_recognize_generators import Case, cases  # noqa: E402

ACME = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22]
TICKER = [{"symbol": "ACME", "tstamp": dt.date(2011, 4, d + 1), "price": p} for d, p in enumerate(ACME)]
TICKER += [{"symbol": "XYZ", "tstamp": dt.date(2011, 4, d + 1), "price": 30 - p}
           for d, p in enumerate(ACME[:10])]
V_SHAPE = """MATCH_RECOGNIZE (
    PARTITION BY symbol ORDER BY tstamp
    MEASURES STRT.tstamp AS start_tstamp, LAST(DOWN.tstamp) AS bottom_tstamp,
             LAST(UP.tstamp) AS end_tstamp
    ONE ROW PER MATCH
    AFTER MATCH SKIP TO LAST UP
    PATTERN (STRT DOWN+ UP+)
    DEFINE DOWN AS DOWN.price < PREV(DOWN.price),
           UP AS UP.price > PREV(UP.price)
)"""


def apr(day: int) -> dt.date:
    return dt.date(2011, 4, day)


@pytest.fixture
def ticker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.Table.from_pylist(TICKER), tmp_path / "ticker.parquet")
    with open(tmp_path / "names.csv", "w") as f:
        f.write("symbol,company\nACME,Acme Corp\nXYZ,Xyz Inc\n")
    return tmp_path


def test_oracle_v_shape_from_a_parquet_file_with_a_where(ticker: Path) -> None:
    out = run_sql(f"SELECT * FROM 'ticker.parquet' {V_SHAPE} AS m WHERE m.symbol = 'ACME' "
                  "ORDER BY start_tstamp").to_pylist()
    assert [(r["start_tstamp"], r["bottom_tstamp"], r["end_tstamp"]) for r in out] == [
        (apr(5), apr(6), apr(10)), (apr(10), apr(12), apr(13)), (apr(14), apr(16), apr(18))]


def test_the_rest_of_the_statement_runs_on_duckdb(ticker: Path) -> None:
    """A JOIN with another file, GROUP BY and an aggregate over the clause's result."""
    statement = f"""
        SELECT n.company, count(*) AS matches, min(m.start_tstamp) AS first_start
        FROM 'ticker.parquet' {V_SHAPE} AS m
        JOIN 'names.csv' AS n ON n.symbol = m.symbol
        GROUP BY n.company ORDER BY n.company"""
    out = run_sql(statement).to_pylist()
    alone = match_recognize(pa.Table.from_pylist(TICKER), V_SHAPE).to_pylist()
    expected = {}
    for r in alone:
        company = {"ACME": "Acme Corp", "XYZ": "Xyz Inc"}[r["symbol"]]
        n, first = expected.get(company, (0, r["start_tstamp"]))
        expected[company] = (n + 1, min(first, r["start_tstamp"]))
    assert [(r["company"], r["matches"], r["first_start"]) for r in out] == [
        (c, n, f) for c, (n, f) in sorted(expected.items())]
    assert len(expected) == 2


def test_named_tables_subqueries_and_two_clauses(ticker: Path) -> None:
    statement = f"""
        WITH s AS (SELECT 1 AS one)
        SELECT 'a' AS side, start_tstamp FROM ticks {V_SHAPE} AS a
        UNION ALL
        SELECT 'b', start_tstamp FROM (SELECT * FROM ticks WHERE symbol = 'XYZ') {V_SHAPE} b
        ORDER BY side, start_tstamp"""
    out = run_sql(statement, {"ticks": ticker / "ticker.parquet"}).to_pylist()
    alone = match_recognize(pa.Table.from_pylist(TICKER), V_SHAPE).to_pylist()
    want = sorted([("a", r["start_tstamp"]) for r in alone]
                  + [("b", r["start_tstamp"]) for r in alone if r["symbol"] == "XYZ"])
    assert [(r["side"], r["start_tstamp"]) for r in out] == want
    assert any(s == "b" for s, _ in want)


def test_a_common_table_expression_as_the_source(ticker: Path) -> None:
    statement = f"""
        WITH acme AS (SELECT * FROM 'ticker.parquet' WHERE symbol = 'ACME'),
             unused AS (SELECT 1 AS x)
        SELECT count(*) AS n FROM acme {V_SHAPE} m"""
    alone = match_recognize(pa.Table.from_pylist(TICKER), V_SHAPE).to_pylist()
    assert run_sql(statement).to_pylist() == [{"n": sum(r["symbol"] == "ACME" for r in alone)}]
    sub = statement.replace("FROM acme", "FROM (SELECT * FROM acme WHERE price > 0)")
    assert run_sql(sub).to_pylist() == [{"n": sum(r["symbol"] == "ACME" for r in alone)}]


def test_strings_comments_and_quoted_names_do_not_confuse_the_extraction(ticker: Path) -> None:
    statement = """SELECT 'MATCH_RECOGNIZE (' AS "a ) b", m."n" /* ) MATCH_RECOGNIZE ( */
        FROM 'ticker.parquet' MATCH_RECOGNIZE (  -- a comment: ) ( '
            PARTITION BY symbol ORDER BY tstamp
            MEASURES COUNT(*) AS "n"  /* nested /* ) */ comment */
            PATTERN (A B+) DEFINE B AS B.price > PREV(B.price) OR 'x)' = 'y)'
        ) m WHERE m.symbol = 'it''s' OR m.symbol = 'ACME' ORDER BY 2;"""
    out = run_sql(statement).to_pylist()
    alone = match_recognize(
        pa.Table.from_pylist(TICKER), "PARTITION BY symbol ORDER BY tstamp MEASURES COUNT(*) AS n "
        "PATTERN (A B+) DEFINE B AS B.price > PREV(B.price)").to_pylist()
    assert [r["n"] for r in out] == sorted(r["n"] for r in alone if r["symbol"] == "ACME")
    assert {r["a ) b"] for r in out} == {"MATCH_RECOGNIZE ("}


def test_from_inside_a_function_call_reads_no_file(ticker: Path) -> None:
    out = run_sql("SELECT trim(BOTH 'x' FROM 'xabcx') AS t, s.n FROM 'ticker.parquet' "
                  "MATCH_RECOGNIZE (MEASURES COUNT(*) AS n PATTERN (A+)) s").to_pylist()
    assert out == [{"t": "abc", "n": len(TICKER)}]


def caret(statement: str, **kw: Any) -> QueryError:
    with pytest.raises(QueryError) as info:
        run_sql(statement, **kw)
    return info.value


def test_clause_errors_are_positioned_in_the_whole_statement(ticker: Path) -> None:
    statement = "SELECT *\nFROM 'ticker.parquet' MATCH_RECOGNIZE (\n  ORDER BY tstamp\n" \
                "  MEASURES COUNT(*) AS n\n  PATTERN (A B+)\n  DEFINE B AS B.price <<  PREV(price)\n) m"
    err = caret(statement)
    assert (err.line, err.column) == (6, 24)
    assert str(err).endswith("\n    DEFINE B AS B.price <<  PREV(price)\n                         ^")
    unknown = caret(statement.replace("<<  PREV(price)", "< PREV(prize)"))
    assert "unknown column 'prize'" in unknown.message
    assert (unknown.line, unknown.column) == (6, 30)
    typed = caret(statement.replace("<<  PREV(price)", "< 'cheap'"))
    assert "cannot compare a number (int64) with a string" in typed.message
    assert (typed.line, typed.column) == (6, 25)


@pytest.mark.parametrize(("statement", "message", "at"), [
    ("COPY (SELECT 1) TO 'out.csv'", "only a SELECT (or WITH ... SELECT) statement", "COPY"),
    ("ATTACH 'x.db'", "only a SELECT", "ATTACH"),
    ("INSTALL httpfs", "only a SELECT", "INSTALL"),
    ("SELECT 1; DROP TABLE x", "one statement only", "DROP"),
    ("SELECT 'oops FROM x", "unterminated string", "'oops"),
    ("SELECT * FROM 'missing.csv'", "no such file: 'missing.csv'", "'missing.csv'"),
    ("SELECT * FROM (SELECT 1) AS x MATCH_RECOGNIZE (PATTERN (A))", "MATCH_RECOGNIZE must follow",
     "x MATCH"),
    ("SELECT (1", "unclosed '('", "(1"),
    ("SELECT 1 /* never closed", "unterminated comment", "/*"),
])
def test_statements_that_are_refused_with_a_caret(ticker: Path, statement: str, message: str,
                                                  at: str) -> None:
    err = caret(statement)
    assert message in err.message
    assert (err.line, err.column) == (1, statement.index(at) + 1)


def test_the_statement_cannot_reach_files_or_python_through_duckdb(ticker: Path) -> None:
    secret = pa.table({"x": [1]})  # noqa: F841 - what a replacement scan would find
    for statement in ["SELECT * FROM read_csv('names.csv')", "SELECT * FROM secret",
                      "SELECT * FROM read_parquet('ticker.parquet')"]:
        with pytest.raises(SqlEngineError, match="DuckDB: "):
            run_sql(statement)


def test_tokens_concatenate_back_to_the_text() -> None:
    text = "SELECT \"a\"\"b\", 'c''d', $q$ ) $q$, `x` -- end\n/* a /* b */ c */ 1.5e3 <> 2"
    tokens = tokenize(text)
    assert "".join(t.text for t in tokens) == text
    assert [t.kind for t in tokens if t.significant] == [
        "word", "quoted", "punct", "string", "punct", "string", "punct", "quoted", "number",
        "punct", "number"]


def test_dollar_is_an_anchor_inside_a_row_pattern_and_a_quote_outside() -> None:
    text = "SELECT $t$ ) $t$ FROM x MATCH_RECOGNIZE (PATTERN ($A$ | (^B)) DEFINE A AS '$A$')"
    tokens = [t for t in tokenize(text) if t.significant]
    assert [t.text for t in tokens if t.kind == "string"] == ["$t$ ) $t$", "'$A$'"]
    pattern = [t.text for t in tokens][7:16]
    assert pattern == ["(", "$", "A", "$", "|", "(", "^", "B", ")"]


def test_an_empty_parquet_file_keeps_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"id": pa.array([], pa.int64()), "v": pa.array([], pa.string())}), path)
    out = run_sql(f"SELECT * FROM '{path}' MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n "
                  "PATTERN (A+)) AS m")
    assert out.num_rows == 0 and out.column_names == ["n"]


def records(case: Case) -> pa.Table:
    return pa.Table.from_pylist(case.records())


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cases(max_rows=8))
def test_a_clause_through_duckdb_equals_the_clause_alone(case: Case) -> None:
    """Random clauses (the property tests' generators) as ``SELECT * FROM t MATCH_RECOGNIZE``:
    the same rows as the evaluator alone, in the same order."""
    query = case.query("MATCH_NUMBER() AS m, COUNT(*) AS n, FIRST(t) AS f, CLASSIFIER() AS c",
                       "ALL ROWS PER MATCH")
    table = records(case)
    try:
        alone = match_recognize(table, query)
    except Exception:  # noqa: BLE001 - a clause the evaluator refuses (e.g. SKIP loop)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        pq.write_table(table, f"{d}/t.parquet")
        got = run_sql(f"SELECT * FROM t MATCH_RECOGNIZE ({query})", {"t": f"{d}/t.parquet"})
    assert got.column_names == alone.column_names
    assert got.to_pylist() == alone.to_pylist()
