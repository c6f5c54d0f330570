"""FILTERs naming a variable of an enclosing pattern (issue 18: the CEL thesis's φ4 and φ6 forms,
LP normal form): evaluated where that variable is bound, on the engine (kleene.language.scopes)
and the oracle (deferred checks), or refused with the reason (docs/semantics.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

import kleene
from against_oracle import aimed, check_against_oracle, feature_changed, oracle
from against_oracle import (
    without_outer as _without_outer,  # the name keeps the test's fixed sample (seeded by its source)
)
from generators import outer_scope_cases
from kleene.language import ast
from kleene.language.parser import parse_query
from kleene.language.scopes import lift_outer_conditions
from kleene.reference.oracle import evaluate
from refusals import assert_refused

ROWS = [
    {"type": t, "v": v, "id": i}
    for t, v, i in [("A", 5, 1), ("B", 7, 1), ("B", 3, 2), ("B", 8, 1), ("C", 1, 1), ("A", 2, 2), ("B", 4, 2), ("C", 9, 2)]
]


def _engine(text: str) -> set[tuple[int, int, tuple[int, ...]]]:
    return {(m.start, m.end, m.positions) for m in kleene.compile(text).matches(ROWS)}


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM S WHERE A AS a ; (B AS b FILTER b[id = a.id])+ ; C",
        "SELECT * FROM S WHERE (B AS b FILTER b[v > a.v]) ; C ; A AS a",
        "SELECT * FROM S WHERE A AS a ; ((B AS b FILTER a[v > 3]) OR (C AS b FILTER a[v <= 3]))",
        "SELECT * FROM S WHERE A AS a ; ((B AS b FILTER b[v > a.v]) OR C)+ ; C",
        "SELECT a FROM S WHERE A AS a ; (B FILTER a[id = 1] AND B[v > 4]) ; C",
        # under an OR of conditions: unfolded into an OR of patterns (kleene.language.normal_form)
        "SELECT * FROM S WHERE A AS a ; (B AS b FILTER b[v > a.v] OR b[id = 2]) ; C",
    ],
)
def test_outer_conditions_on_engine_and_oracle(text: str) -> None:
    got = _engine(text)
    assert got == evaluate(parse_query(text), ROWS)
    assert got  # the examples match something


def test_phi6_form_chooses_the_branch() -> None:
    text = "SELECT * FROM S WHERE A AS a ; ((B AS b FILTER a[v > 3]) OR (C AS b FILTER a[v <= 3]))"
    got = _engine(text)
    assert all(ROWS[end]["type"] == ("B" if ROWS[start]["v"] > 3 else "C") for start, end, _ in got)
    assert (0, 1, (0, 1)) in got and (5, 7, (5, 7)) in got and (0, 4, (0, 4)) not in got


def test_explain_names_what_the_lifted_condition_filters() -> None:
    text = "SELECT * FROM S WHERE A AS a ; ((B AS b FILTER a[v > 3]) OR (C AS b FILTER a[v <= 3]))"
    q = kleene.compile(text)
    assert q.engine == "registers"
    assert "the events of (C AS b), evaluated where its variables are bound" in q.explain()


def test_the_lift_is_shown_by_the_rewrite() -> None:
    where = parse_query("SELECT * WHERE A AS a ; (B AS b FILTER b[id = a.id])+ ; C").where
    made = lift_outer_conditions(where)
    lifted = made.pattern
    assert not made.stays and made.shown == {"scope1": "b"}
    # ((A AS a ; ...+) ; C): the nearest pattern binding a is the inner sequence
    assert isinstance(lifted, ast.Seq) and isinstance(lifted.left, ast.Filter)
    # b is every event of the FILTER's pattern: a fresh variable bound to it stands for it
    assert lifted.left.condition == ast.FilterAtom(
        "scope1", ast.Compare("==", ast.Attr("id"), ast.VarAttr("a", "id"))
    )
    assert isinstance(lifted.left.pattern, ast.Seq)
    assert lifted.left.pattern.right == ast.Iter(
        ast.As(ast.As(ast.EventType("B"), "b"), "scope1")
    )


@pytest.mark.parametrize(
    ("text", "needle", "message"),
    [
        (  # B is selected, so NOT(B ...) is not rewritten (tests/registers/test_negated_outer.py)
            "SELECT B WHERE A AS a ; NOT(B FILTER B[v > a.v]) ; C ; B",
            "a.v",
            "it is inside NOT(...), which kleene rewrites into the events that fail",
        ),
        (  # with a first, it runs (seeded monitor, tests/registers/test_negated_outer.py)
            "SELECT * WHERE (C ; A AS a) UNLESS (B FILTER B[v > a.v])",
            "a.v",
            "it is on the right of UNLESS and reads 'a', which is not the first event",
        ),
        (
            "SELECT * WHERE A AS a ; ((B AS b ; C FILTER b[v > a.v]) ; B AS b)",
            "a.v",
            "'b' is bound again outside this FILTER",
        ),
        (
            "SELECT * WHERE A AS a ; (B AS b FILTER b[v > prev(b).v AND v > a.v])+ ; C",
            "a.v",
            "it reads prev(...), which is local to this FILTER",
        ),
        (  # evaluated at (... ; A AS a), where b's several events come first
            "SELECT * WHERE A AS a ; ((B AS b FILTER b[v > a.v])+ ; A AS a)",
            "a.v",
            "'b' is bound to several events, so the condition cannot be moved onto 'a'",
        ),
        (
            "SELECT * WHERE (A AS a)+ ; (B AS b FILTER b[v > a.v])",
            "a.v",
            "variable 'a' is bound to several events here",
        ),
    ],
)
def test_refused_with_the_reason(
    text: str, needle: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_refused(text, needle, message, capsys)


@aimed("outer conditions")
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(outer_scope_cases())
def test_outer_conditions_equal_oracle(case: tuple[ast.Query, list[dict], list[int]]) -> None:
    """φ4/φ6-form queries: the engine (lifting) against the oracle (deferring).  Prints and
    asserts how often the outer conditions changed the result: the same query without them."""
    query, events, times = case
    expected = oracle(case)
    if expected is not None:
        variant = replace(query, where=_without_outer(query.where))
        feature_changed("outer conditions", evaluate(variant, events, times=times) != expected)
    check_against_oracle(case, aim_at=[])
