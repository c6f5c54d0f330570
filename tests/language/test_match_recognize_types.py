"""Static output types of MATCH_RECOGNIZE (``output_schema``) against what the evaluator returns.

The reference evaluator builds its measures from Python values, which Arrow types
by inference; ``output_schema`` must predict the same columns, in the same order,
with the same types wherever the result holds a value (an all-NULL column is typed
``null`` by inference and must cast to the predicted type).  Checked on random
clauses (the generators of the property tests, with random measures over int,
float, string and bool columns) and on every worked example E1-E17, plus each
type error with its caret.
"""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kleene.language.errors import KleeneError, QueryError
from kleene.language.match_recognize.parser import parse
from kleene.language.match_recognize.types import output_schema
from kleene.reference import match_recognize as reference

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "differential"))

from match_recognize_generators import Case, cases  # noqa: E402

MEASURES = (
    "MATCH_NUMBER() AS m", "CLASSIFIER() AS c", "FIRST({x}.v) AS fa", "SUM(v) AS sv",
    "AVG({x}.f) AS af", "COUNT(*) AS n", "ARRAY_AGG(s) AS arr", "MAX(s) AS ms",
    "LAST(f, 1) * 2 AS lf", "v / 2 AS h", "CASE WHEN v > 1 THEN f ELSE v END AS cw",
    "ROUND(f) AS r", "ROUND(f, 1) AS r1", "PREV(s) AS ps", "v > 2 AS gt",
    "COALESCE(PREV(v), 0) AS cp", "NULL AS nothing", "MOD(v, 2) AS md", "UPPER(s) AS us",
    "ABS(v - 2) AS av", "b AND v > 1 AS bv", "FINAL LAST({x}.b) AS lb", "MIN({x}.f) AS mf",
    "SUM(f) AS sf", "v + f AS vf", "-v AS neg", "ARRAY_AGG(CLASSIFIER()) AS labels",
)


def records(case: Case) -> pa.Table:
    rows = case.records()
    for r in rows:
        r["f"] = r["v"] / 2
        r["s"] = "xyz"[r["v"] % 3]
        r["b"] = r["v"] % 2 == 0
    return pa.Table.from_pylist(rows)


def has_null_type(t: pa.DataType) -> bool:
    if pa.types.is_null(t):
        return True
    return pa.types.is_list(t) and has_null_type(t.value_type)


def agree(result: pa.Table, schema: pa.Schema) -> int:
    """Assert ``result`` fits ``schema``; return how many columns were compared strictly."""
    assert result.column_names == schema.names
    strict = 0
    for name in schema.names:
        got, want = result.schema.field(name).type, schema.field(name).type
        if has_null_type(got):
            assert result.column(name).cast(want).to_pylist() == result.column(name).to_pylist()
        elif pa.types.is_integer(got) and pa.types.is_floating(want):
            # CASE/COALESCE of ints and floats: the values decide what Arrow infers
            assert result.column(name).cast(want).to_pylist() == result.column(name).to_pylist()
        else:
            assert got == want, f"{name}: the evaluator gave {got}, output_schema says {want}"
            strict += 1
    return strict


STATS: Counter[str] = Counter()


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(cases(max_rows=8), st.lists(st.sampled_from(MEASURES), min_size=1, max_size=4, unique=True),
       st.sampled_from(["ONE ROW PER MATCH", "ALL ROWS PER MATCH",
                        "ALL ROWS PER MATCH WITH UNMATCHED ROWS"]), st.data())
def test_output_schema_agrees_with_the_evaluator_on_random_clauses(
        case: Case, measures: list[str], rows: str, data: st.DataObject) -> None:
    chosen = [m.format(x=data.draw(st.sampled_from(case.variables))) for m in measures]
    names = [m.rsplit(" AS ", 1)[1] for m in chosen]
    if len(set(names)) < len(names):
        return
    query = case.query(", ".join(chosen), rows)
    table = records(case)
    try:
        result = reference.match_recognize(table, query)
    except (KleeneError, RecursionError):
        STATS["evaluator refused"] += 1
        return
    STATS["cases"] += 1
    STATS["strict columns"] += agree(result, output_schema(parse(query), table.schema))
    STATS["rows"] += result.num_rows


def test_the_random_cases_compared_types_often() -> None:
    """Run after the property: most cases must have produced rows with typed columns."""
    print(dict(STATS))
    if STATS["cases"]:
        assert STATS["strict columns"] >= STATS["cases"]
        assert STATS["rows"] > STATS["cases"]


def _worked_examples() -> list[tuple[str, Any, dict[str, Any]]]:
    import test_match_recognize_reference as examples

    found = []
    for name, fn in inspect.getmembers(examples, inspect.isfunction):
        if not name.startswith("test_e"):
            continue
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        if not marks:
            if not inspect.signature(fn).parameters:
                found.append((name, fn, {}))
            continue
        argnames = [a.strip() for a in marks[0].args[0].split(",")]
        for values in marks[0].args[1]:
            values = values if isinstance(values, tuple) else (values,)
            found.append((name, fn, dict(zip(argnames, values, strict=True))))
    return found


def test_output_schema_agrees_with_the_evaluator_on_every_worked_example(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import test_match_recognize_reference as examples

    checked: list[str] = []

    def checking(source: Any, query: str, **kw: Any) -> pa.Table:
        table = source if isinstance(source, pa.Table) else pa.Table.from_pylist(list(source))
        result = reference.match_recognize(table, query, **kw)
        agree(result, output_schema(parse(query), table.schema))
        checked.append(query)
        return result

    monkeypatch.setattr(examples, "match_recognize", checking)
    for _, fn, kwargs in _worked_examples():
        fn(**kwargs)
    print(f"{len(checked)} evaluations of {len(set(checked))} worked-example clauses")
    assert len(checked) >= 40, len(checked)
    assert len({q for q in checked}) >= 20


ROWS = pa.schema([("id", pa.int64()), ("s", pa.string()), ("v", pa.float64()),
                  ("t", pa.timestamp("us")), ("b", pa.bool_())])


def error_of(text: str) -> QueryError:
    with pytest.raises(QueryError) as info:
        output_schema(parse(text), ROWS)
    return info.value


@pytest.mark.parametrize(("text", "message", "at"), [
    ("ORDER BY id MEASURES nope AS x PATTERN (A)", "unknown column 'nope'", "nope"),
    ("ORDER BY id MEASURES 1 AS one PATTERN (A) DEFINE A AS s > 3",
     "cannot compare a string (string) with a number", "3"),
    ("ORDER BY id MEASURES SUM(A.s) AS x PATTERN (A)", "SUM needs numbers, not a string", "A.s"),
    ("ORDER BY id MEASURES AVG(s) AS x PATTERN (A)", "AVG needs numbers", "s)"),
    ("ORDER BY id MEASURES s + 1 AS x PATTERN (A)", "'+' needs numbers, not a string", "s +"),
    ("ORDER BY id MEASURES 1 AS one PATTERN (A) DEFINE A AS v = 1 OR v",
     "OR needs a boolean, not a number", "v\n"),
    ("ORDER BY id MEASURES CASE WHEN b THEN s ELSE v END AS x PATTERN (A)",
     "CASE mixes a string (string) with a number (double)", "v END"),
    ("ORDER BY id MEASURES v AND b AS x PATTERN (A)", "AND needs a boolean, not a number", "v AND"),
    ("ORDER BY id MEASURES LOWER(v) AS x PATTERN (A)", "LOWER needs a string", "v)"),
    ("ORDER BY id MEASURES t > 3 AS x PATTERN (A)", "cannot compare a time", "3"),
    ("ORDER BY id MEASURES s IN (1, 2) AS x PATTERN (A)", "IN: cannot compare", "1"),
    ("ORDER BY id MEASURES 1 AS s ALL ROWS PER MATCH PATTERN (A)",
     "measure 's' has the name of an output column", "s ALL"),
    ("ORDER BY s MEASURES 1 AS one PATTERN (A B) WITHIN 10 seconds", "WITHIN with a time unit needs a timestamp",
     "WITHIN"),
])
def test_type_errors_have_a_caret(text: str, message: str, at: str) -> None:
    text = text if not at.endswith("\n") else text + "\n"
    column = text.index(at) + 1
    err = error_of(text)
    assert message in err.message
    assert (err.line, err.column) == (1, column)
    assert str(err).endswith("\n  " + text.split("\n")[0] + "\n  " + " " * (column - 1) + "^")


def test_types_of_measures_over_every_input_type() -> None:
    text = ("PARTITION BY s ORDER BY t MEASURES t - PREV(t) AS gap, FIRST(t) AS start, "
            "COUNT(A.*) AS n, ARRAY_AGG(v) AS vs, AVG(id) AS mean, id / 2 AS half, "
            "MATCH_NUMBER() AS m, CLASSIFIER() AS c, COALESCE(id, v) AS co ALL ROWS PER MATCH "
            "PATTERN (A+)")
    schema = output_schema(parse(text), ROWS)
    assert schema == pa.schema([
        ("s", pa.string()), ("t", pa.timestamp("us")), ("gap", pa.duration("us")),
        ("start", pa.timestamp("us")), ("n", pa.int64()), ("vs", pa.list_(pa.float64())),
        ("mean", pa.float64()), ("half", pa.int64()), ("m", pa.int64()), ("c", pa.string()),
        ("co", pa.float64()), ("id", pa.int64()), ("v", pa.float64()), ("b", pa.bool_())])
    one = output_schema(parse(text.replace("ALL ROWS PER MATCH", "ONE ROW PER MATCH")), ROWS)
    assert one.names == ["s", "gap", "start", "n", "vs", "mean", "half", "m", "c", "co"]
