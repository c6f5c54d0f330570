"""The CEL thesis §13 table on the real engine: every row gives the thesis's output."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_oracle_cel import THESIS_TABLE

import kleene
from against_oracle import aimed, skip_case
from kleene.language import ast
from kleene.language.printer import to_ceql
from kleene.reference.selection import last_less
from kleene.runtime.strategies import last_better


@pytest.mark.parametrize(("name", "qry", "stream", "expected"), THESIS_TABLE, ids=[c[0] for c in THESIS_TABLE])
def test_thesis_table_on_engine(name: str, qry: ast.Query, stream: tuple, expected: frozenset) -> None:
    text = to_ceql(qry)
    got = {(m.start, m.end, m.positions) for m in kleene.compile(text).matches(pa.Table.from_pylist(list(stream)))}
    assert got == expected


def test_not_and_star_examples() -> None:
    rows = [{"type": t} for t in "ABXBC"]
    q = kleene.compile("SELECT * FROM S WHERE A ; NOT(B) ; C")
    assert {m.positions for m in q.matches(rows)} == {(0, 2, 4)}
    q = kleene.compile("SELECT * FROM S WHERE A ; B* ; C")
    assert {m.positions for m in q.matches(rows)} == {(0, 4), (0, 1, 4), (0, 3, 4), (0, 1, 3, 4)}
    q = kleene.compile("SELECT * FROM S WHERE A : B* : X")
    assert {m.positions for m in q.matches(rows)} == {(0, 1, 2)}


def test_unless_example() -> None:
    rows = [{"type": t} for t in "AXBAB"]
    q = kleene.compile("SELECT * FROM S WHERE A ; B UNLESS X")
    assert {m.positions for m in q.matches(rows)} == {(3, 4)}  # (0, 2) and (0, 4) contain X


@aimed()
@settings(max_examples=500, deadline=None)
@given(st.lists(st.frozensets(st.integers(0, 12), min_size=1), min_size=2, max_size=2, unique=True), st.booleans())
def test_strategy_orders_match_the_oracle(sets: list[frozenset[int]], share: bool) -> None:
    """LAST's chain comparison equals the oracle's order, with or without shared tails."""

    def chain(ps: frozenset[int], tail: Any = None) -> Any:
        for p in sorted(ps):
            tail = (p, tail)
        return tail

    a, b = sets
    if share:  # a common older part, as the tECS shares it
        common = frozenset(range(0, 3))
        base = chain(common)
        a, b = common | {p + 3 for p in a}, common | {p + 3 for p in b}
        ca, cb = chain(a - common, base), chain(b - common, base)
    else:
        ca, cb = chain(a), chain(b)
    if a == b:
        skip_case("two equal sets")
        return
    assert last_better((0, 0, ca), (0, 0, cb)) == last_less(b, a)
