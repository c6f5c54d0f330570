"""Skipping inert events: sound (same output) and effective (few events stepped)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings

import kleene
from generators import cases
from kleene.automata.compile import compile_pattern
from kleene.automata.determinize import DEAD, LazyDFA
from kleene.language.parser import parse_query
from kleene.language.printer import to_ceql
from kleene.predicates.atoms import Atoms


def stock(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "type": np.where(rng.integers(0, 2, n) == 1, "SELL", "BUY"),
            "price": rng.uniform(0, 200, n),
        }
    )


def run(query: str, source: Any, *, skip: bool) -> tuple[list[kleene.Match], int]:
    q = kleene.compile(query, time_column="__t", time_unit="ns").tuned(skip_inert=skip)
    out = list(q.matches(source))
    return out, q.last_session.engine.steps


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_skipping_never_changes_the_output(case: tuple[Any, list[dict[str, Any]], list[int]]) -> None:
    query, events, times = case
    rows = [dict(e, __t=t) for e, t in zip(events, times)]
    text = to_ceql(query)
    with_skip, stepped = run(text, rows, skip=True)
    without, all_steps = run(text, rows, skip=False)
    # Same complex events at the same ends; among those with the same end, the lookahead may
    # order ties differently (docs/semantics.md, LIMIT n), so under LIMIT only the number per
    # end is the same, each one a complex event of the query without LIMIT.
    ends = [m.end for m in with_skip]
    assert ends == sorted(ends) and Counter(ends) == Counter(m.end for m in without)
    if query.limit is None:
        assert Counter(with_skip) == Counter(without)
    else:
        everything = set(run(to_ceql(replace(query, limit=None)), rows, skip=False)[0])
        assert set(with_skip) <= everything and len(set(with_skip)) == len(with_skip)
    assert stepped <= all_steps


def test_selective_query_steps_few_events() -> None:
    table = stock(20_000)
    query = (
        "SELECT * FROM S WHERE SELL as a; BUY as b "
        "FILTER a[price > 199] AND b[price < 1] WITHIN 10 EVENTS"
    )
    with_skip, stepped = run(query, table, skip=True)
    without, all_steps = run(query, table, skip=False)
    assert with_skip == without
    assert all_steps == 20_000
    assert stepped < 20_000 * 0.02  # only rare SELLs over 199 and what follows them


def test_partitioned_skipping_is_sound() -> None:
    rng = np.random.default_rng(3)
    table = stock(5_000).append_column("name", pa.array(rng.choice(["A", "B", "C"], 5_000)))
    query = (
        "SELECT * FROM S WHERE SELL as a ; BUY as b FILTER a[price > 190] "
        "PARTITION BY [name] WITHIN 30 EVENTS"
    )
    with_skip, stepped = run(query, table, skip=True)
    without, _ = run(query, table, skip=False)
    assert with_skip == without and with_skip
    assert stepped < 5_000 * 0.5


def inert_after_first(query: str, first: dict[str, bool], other: dict[str, bool]) -> bool:
    """Is an event with bits ``other`` inert for the state reached after ``first``?"""
    where = parse_query(query).where
    atoms = Atoms()
    atoms.collect(where)
    dfa = LazyDFA(compile_pattern(where, atoms))

    def bits(types: dict[str, bool]) -> int:
        return sum(atoms.type_mask(t) for t, on in types.items() if on)

    marked, _ = dfa.step(0, bits(first))
    assert marked != DEAD
    return dfa.inert(marked, bits(other))


def test_inertness_depends_on_contiguity() -> None:
    # With `;` a C event leaves the run waiting for B unchanged; with `:` it kills it.
    assert inert_after_first("SELECT * FROM S WHERE A ; B", {"A": True}, {"A": False})
    assert not inert_after_first("SELECT * FROM S WHERE A : B", {"A": True}, {"A": False})
    # an event that moves the run on is never inert
    assert not inert_after_first("SELECT * FROM S WHERE A ; B", {"A": True}, {"B": True})


def test_expired_partitions_are_released() -> None:
    """Keys that never come back must not keep an evaluator forever (bounded memory)."""
    n = 60_000
    table = pa.table(
        {
            "type": ["SELL", "BUY", "BUY"] * (n // 3),
            "price": [150.0, 10.0, 10.0] * (n // 3),
            "name": [i // 3 for i in range(n)],  # every key appears 3 times, then never again
        }
    )
    q = kleene.compile(
        "SELECT * FROM S WHERE SELL as a ; BUY as b FILTER a[price > 100] "
        "PARTITION BY [name] WITHIN 5 EVENTS"
    )
    assert sum(1 for _ in q.matches(table)) == 2 * (n // 3)
    assert len(q.last_session.engine.partitions) < 10_000  # 20,000 keys were seen
