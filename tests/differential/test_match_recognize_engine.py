"""The MATCH_RECOGNIZE engine against the reference evaluator on random cases (hypothesis).

Random patterns (every quantifier greedy and reluctant, alternation, PERMUTE,
anchors, exclusion, the empty pattern), DEFINE conditions (physical and reading the
match), skip modes, rows-per-match modes and partitioned inputs, from
``tests/match_recognize_generators.py``.  Each test compares engine and reference on
two variants of a case that differ in one feature (reluctance, skip mode, empty
matches) and records how often the feature changed the result: the share is
printed and asserted (``aimed``), so that the comparisons keep exercising it.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from against_oracle import aimed, feature_changed, skip_case
from kleene.language.errors import DataError, QueryError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.parser import parse
from kleene.reference.match_recognize import SearchBudgetError, match_recognize
from kleene.runtime.match_recognize import evaluate
from match_recognize_generators import (
    Case,
    can_match_empty,
    cases,
    flip_greediness,
    has_quantifier,
)

BUDGET = 20_000
EXAMPLES = 700
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))

ONE_MEASURES = ("MATCH_NUMBER() AS m, COUNT(*) AS n, FIRST(t) AS f, LAST(t) AS l, "
                "CLASSIFIER() AS c, SUM(v) AS s, AVG(v) AS a, MAX(v) AS x, "
                "ARRAY_AGG(CLASSIFIER()) AS labels, PREV(v) AS p, LAST(v, 1) AS l1")
ALL_MEASURES = ("MATCH_NUMBER() AS m, CLASSIFIER() AS c, COUNT(*) AS n, FINAL COUNT(*) AS fn, "
                "SUM(v) AS s, FINAL MIN(v) AS fm, FIRST(v, 1) AS f1, NEXT(v) AS nx, "
                "NEXT(CLASSIFIER()) AS nc")
ROWS = ["ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH OMIT EMPTY MATCHES",
        "ALL ROWS PER MATCH WITH UNMATCHED ROWS"]
SKIPS = ["PAST LAST ROW", "TO NEXT ROW", "TO FIRST {v}", "TO LAST {v}"]


class Skipped(Exception):
    """The reference gave up (its step budget)."""


def outcome(case: Case, query: str) -> Any:
    """The engine's output, after checking that the reference gives the same (rows, column
    names and types) or the same error."""
    records = case.records()
    try:
        expected: Any = match_recognize(records, query, max_steps=BUDGET)
    except SearchBudgetError:
        raise Skipped("the reference's step budget") from None
    except (DataError, QueryError) as err:
        expected = err
    try:
        got: Any = evaluate(parse(query), pa.Table.from_pylist(records))
    except (DataError, QueryError) as err:
        got = err
    if isinstance(expected, Exception):
        assert type(got) is type(expected) and str(got) == str(expected), (query, got)
        return (type(got).__name__, str(got))
    assert not isinstance(got, Exception), (query, got)
    assert got.schema.names == expected.schema.names, query
    assert got.to_pylist() == expected.to_pylist(), query
    assert [f.type for f in got.schema] == [f.type for f in expected.schema], query
    return got.to_pylist()


def compare(case: Case, query: str, other: str, feature: str) -> None:
    try:
        first = outcome(case, query)
        second = outcome(case, other)
    except Skipped as why:
        skip_case(str(why), stop=True)
        return
    feature_changed(feature, first != second)


def measures(rows: str) -> str:
    return ONE_MEASURES if rows == "ONE ROW PER MATCH" else ALL_MEASURES


@aimed("reluctance", least=1 / 3, most_skipped=0.25)
@SETTINGS
@given(cases(exclusion=True, min_rows=4, max_rows=12), st.sampled_from(ROWS), st.sampled_from(SKIPS), st.data())
def test_engine_equals_reference_greedy_and_reluctant(case: Case, rows: str, skip: str,
                                                      data: st.DataObject) -> None:
    """Every quantifier flipped (greedy <-> reluctant) changes the result often enough."""
    if rows.endswith("UNMATCHED ROWS"):
        case = Case(_no_exclusion(case.pattern), case.defines, case.rows)
    skip = skip.format(v=data.draw(st.sampled_from(case.variables)))
    assume(has_quantifier(case.pattern))
    flipped = flip_greediness(case.pattern)
    compare(case, case.query(measures(rows), rows, skip),
            case.query(measures(rows), rows, skip, pattern=flipped), "reluctance")


@aimed("skip mode", least=1 / 3, most_skipped=0.25)
@SETTINGS
@given(cases(min_rows=4, max_rows=12), st.sampled_from(ROWS), st.sampled_from(SKIPS[1:]), st.data())
def test_engine_equals_reference_across_skip_modes(case: Case, rows: str, skip: str,
                                                   data: st.DataObject) -> None:
    """A skip mode other than PAST LAST ROW changes the result often enough."""
    skip = skip.format(v=data.draw(st.sampled_from(case.variables)))
    compare(case, case.query(measures(rows), rows, "PAST LAST ROW"),
            case.query(measures(rows), rows, skip), "skip mode")


@aimed("empty matches", least=1 / 3, most_skipped=0.25)
@SETTINGS
@given(cases(min_rows=4, max_rows=12).filter(lambda c: can_match_empty(c.pattern)),
       st.sampled_from(SKIPS), st.data())
def test_engine_equals_reference_with_and_without_empty_matches(
        case: Case, skip: str, data: st.DataObject) -> None:
    """SHOW EMPTY MATCHES against OMIT EMPTY MATCHES: the empty matches change the result."""
    skip = skip.format(v=data.draw(st.sampled_from(case.variables)))
    compare(case, case.query(ALL_MEASURES, "ALL ROWS PER MATCH SHOW EMPTY MATCHES", skip),
            case.query(ALL_MEASURES, "ALL ROWS PER MATCH OMIT EMPTY MATCHES", skip),
            "empty matches")


def _no_exclusion(p: ast.Pattern) -> ast.Pattern:
    from match_recognize_generators import strip_exclusions
    return strip_exclusions(p)


@pytest.mark.parametrize("pattern", ["()", "(() | A)", "(A* B*)*", "((){2,} | B)", "(A??)* B",
                                     "PERMUTE(A, B?, C*)", "^ A* $", "A{0} B", "(A | B){2,3}?"])
def test_degenerate_patterns_agree(pattern: str) -> None:
    rows = tuple((k, t, v) for t, (k, v) in enumerate(
        [(0, 1), (0, 2), (1, 0), (0, 3), (1, 1), (0, 0), (0, 2), (1, 3)]))
    for defines in [(), (("A", "v > PREV(v)"), ("B", "v <= 1")), (("A", "SUM(A.v) < 4"),)]:
        case = Case(parse(f"MEASURES COUNT(*) AS n PATTERN ({pattern})").pattern, defines, rows)
        for rows_mode in ROWS:
            try:
                outcome(case, case.query(measures(rows_mode), rows_mode, "TO NEXT ROW"))
            except Skipped:
                pass


def test_next_classifier_in_measures_sees_the_whole_match() -> None:
    """Trino testClassifierFunctionPastCurrentRow: under ALL ROWS PER MATCH (RUNNING),
    NEXT(CLASSIFIER()) reads the next row's label; in DEFINE there is none yet."""
    rows = [{"id": i + 1, "value": v} for i, v in enumerate([90, 80, 70, 80])]
    query = ("ORDER BY id MEASURES CLASSIFIER() AS label, NEXT(CLASSIFIER()) AS next_label "
             "ALL ROWS PER MATCH PATTERN (A B+ C+) "
             "DEFINE B AS B.value < PREV(B.value), C AS C.value > PREV(C.value)")
    got = evaluate(parse(query), pa.Table.from_pylist(rows)).to_pylist()
    assert [(r["label"], r["next_label"]) for r in got] == [
        ("A", "B"), ("B", "B"), ("B", "C"), ("C", None)]
    assert got == match_recognize(rows, query).to_pylist()
    define = "ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+) DEFINE A AS NEXT(CLASSIFIER()) = 'A'"
    assert evaluate(parse(define), pa.Table.from_pylist(rows)).num_rows == 0
