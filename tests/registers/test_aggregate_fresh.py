"""Counting by aggregates past the first event's registers (kleene.registers.freshness, issue 18).

The aggregates' class (tests/registers/test_aggregate.py) extended to registers a run at a state
holds for every start alike: *empty* ones (``prev(b)`` before the first ``b``) and *fresh* ones
(written by every transition into a state that is not stationary: the partition's previous
event, e.g. ``prev(b)`` inside ``(B OR C):+`` or ``b`` after ``b :``).  A conjunct over those has
one truth per event; contiguity (``:``) kills the runs at non-stationary states on every event
of their partition that no transition takes, including the ones the prefilter would skip.

* **Exact.** On random queries of the extended class (contiguous iterations with ``prev()``
  conditions, ``:`` between variables, with and without PARTITION BY and WITHIN) the aggregate
  count equals the merged runs' count, the listed number and the reference evaluator's; the
  previous-event condition and the contiguity each change the count in at least a third of the
  cases (printed and asserted).  Hand-worked streams too.
* **Cheap.** Tree nodes touched per event on the rising row of benchmarks/registers.py stay under
  ``c · log2(w) · pieces`` from w = 10 to 10,000.
* **Refused.** Conditions on a register written mid-pattern and read after a gap (seq6's ``d``),
  or mixing the first event's registers with the previous event's, keep the merged runs' count
  (tests/registers/test_aggregate.py, ``REFUSED``, and below).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_aggregate import counted, oracle_count

import kleene
from against_oracle import aimed, feature_changed
from kleene import native
from kleene.registers import aggregate
from kleene.registers.aggregate import AggregateCounter
from kleene.registers.vectortree import VectorTree

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from generate import make_table  # noqa: E402
from registers import COUNT_MATCHES, PAPER, RISING  # noqa: E402

SHAPES = [
    "A as a; (B OR C){it} as b FILTER b[{prev} AND v > a.v]",
    "A as a {c} (B OR C) as b {c} (B OR C) as c FILTER c[{fresh}]",
    "A as a; B as b {c} C as c FILTER c[v >= a.v AND {fresh}]",
    "A{it} as a FILTER a[{prev_a}]",
    "A as a; (B OR C){it} as b; A as c FILTER b[{prev}] AND c[v <= a.v]",
    "A as a {c} (B OR C){it} as b FILTER b[{prev}]",
    "A as a; ((B as b {c} C as c) FILTER c[{fresh}])+",
]
PREV = ["v > prev(b).v", "v <= prev(b).v", "prev(b).v = v", "v >= prev(b).v + 1", "prev(b).v * 2 > v"]
FRESH = ["v > b.v", "v <= b.v", "b.v = v", "v + 1 > b.v * 2"]
TRUE = "v >= 0"
TAILS = ["", " WITHIN 4 EVENTS", " WITHIN 8 EVENTS", " WITHIN 3 [t]"]
PREVIOUS = "the previous-event condition changes the count"
CONTIGUITY = "contiguity changes the count"


def fill(shape: str, contiguous: bool, cond: str | None, prev: str, fresh: str) -> str:
    """The shape with its operators (``:``/``:+``, or ``;``/``+``) and conditions (or TRUE)."""
    return shape.format(
        c=":" if contiguous else ";", it=":+" if contiguous else "+",
        prev=cond or prev, prev_a=(cond or prev).replace("(b)", "(a)"), fresh=cond or fresh,
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, str, list[dict[str, Any]]]:
    """``(query, without the previous-event condition, without contiguity, events)``: values 0-3
    and 1.5, partitions 0/1, X events that no transition takes (the prefilter skips them)."""
    shape = draw(st.sampled_from(SHAPES))
    prev, fresh = draw(st.sampled_from(PREV)), draw(st.sampled_from(FRESH))
    tail = draw(st.sampled_from(["", " PARTITION BY [k]"])) + draw(st.sampled_from(TAILS))
    rows = []
    for types in ("AA", "BCBCX", "ABC", "CBCBX"):
        rows += draw(st.lists(
            st.tuples(st.sampled_from(types), st.sampled_from([0, 1, 2, 3, 1.5]),
                      st.sampled_from([0, 0, 0, 1]), st.integers(0, 1)),
            min_size=1, max_size=5,
        ))
    t, events = 0, []
    for kind, v, k, dt in rows:
        t += dt
        events.append({"type": kind, "v": v, "k": k, "t": t})
    head = "SELECT * FROM S WHERE "
    query = head + fill(shape, True, None, prev, fresh) + tail
    bare = head + fill(shape, True, TRUE, prev, fresh) + tail
    loose = head + fill(shape, False, None, prev, fresh) + tail
    return query, bare, loose, events


SCHEMA = pa.schema([("type", pa.string()), ("v", pa.float64()), ("k", pa.int64()), ("t", pa.int64())])


@aimed(PREVIOUS, CONTIGUITY)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_fresh_count_equals_runs_listing_and_oracle(case: tuple[str, str, str, list[dict[str, Any]]]) -> None:
    query, bare, loose, events = case
    table = pa.Table.from_pylist(events, schema=SCHEMA)
    n, engine = counted(query, table)
    assert engine.counter is not None, query  # every shape is in the extended class
    runs = kleene.compile(query).tuned(aggregates=False)
    assert runs.count(table) == n, query
    assert runs.last_session.engine.counter is None
    listed = len(list(kleene.compile(query).matches(table)))
    expected = oracle_count(query, events)
    assert n == listed == expected, query
    feature_changed(PREVIOUS, expected != oracle_count(bare, events))
    feature_changed(CONTIGUITY, expected != oracle_count(loose, events))


def stream(rows: list[tuple[str, Any]], keys: list[int] | None = None) -> pa.Table:
    table = pa.Table.from_pylist([{"type": t, "v": float(v)} for t, v in rows])
    return table if keys is None else table.append_column("k", pa.array(keys))


def aggregated(query: str, table: pa.Table) -> int:
    """The count by aggregates, checked against the merged runs' count."""
    n, engine = counted("SELECT * FROM S WHERE " + query, table)
    assert isinstance(engine.counter, AggregateCounter), query
    runs = kleene.compile("SELECT * FROM S WHERE " + query).tuned(aggregates=False)
    assert runs.count(table) == n, query
    return n


def test_hand_worked_rising_iteration() -> None:
    """``A(1) B(2) C(3) B(2) C(4)`` under ``A as a; (B OR C):+ as b FILTER b[v > prev(b).v AND
    v > a.v]``: the iteration starts at any event after a(1) (the ``;``) and each next one must
    be the very next event and rise: from B(2): {2}, {2,3}; from C(3): {3}; B(2) after C(3) does
    not rise, so from B(2) at 4: {2}, {2,4}; from C(4): {4}: 6 complex events.  With an X
    between C(3) and B(2) nothing changes (3 > 2 fails anyway); with an X between B(2) and
    C(3), {2,3} is gone (contiguity): 5."""
    q = "A as a; (B OR C):+ as b FILTER b[v > prev(b).v AND v > a.v]"
    assert aggregated(q, stream([("A", 1), ("B", 2), ("C", 3), ("B", 2), ("C", 4)])) == 6
    assert aggregated(q, stream([("A", 1), ("B", 2), ("X", 9), ("C", 3), ("B", 2), ("C", 4)])) == 5
    assert aggregated(q, stream([("A", 1), ("B", 2), ("C", 3), ("X", 9), ("B", 2), ("C", 4)])) == 6


def test_hand_worked_partitions_keep_their_own_previous_event() -> None:
    """Partition 0: ``A(0) B(1) B(2)``, partition 1: ``B(5)`` in between.  In partition 0 the
    iteration ``B:+`` rises 1 -> 2 as consecutive events of the partition (B(5) is another
    partition's, so it neither breaks the contiguity nor is the previous event): {1}, {1,2},
    {2}: 3.  Without PARTITION BY, B(5) is between them: {1}, {1,5}, {5}, {2} (5 > 2 fails): 4."""
    q = "A as a; B:+ as b FILTER b[v > prev(b).v]"
    table = stream([("A", 0), ("B", 1), ("B", 5), ("B", 2)], keys=[0, 0, 1, 0])
    assert aggregated(q + " PARTITION BY [k]", table) == 3
    assert aggregated(q, table) == 4
    # A row whose key is null belongs to no partition: B(9) takes no part in the contiguity of
    # partition 0, which still rises 1 -> 2 ({1}, {1,2}, {2}: 3, as the merged runs count).
    nulls = pa.Table.from_pylist([{"type": t, "v": float(v), "k": k} for t, v, k in
                                  [("A", 0, 0), ("B", 1, 0), ("B", 9, None), ("B", 2, 0)]])
    assert aggregated(q + " PARTITION BY [k]", nulls) == 3


def test_hand_worked_contiguous_variables_compare_with_the_previous_one() -> None:
    """``A as a : B as b : C as c FILTER c[v > b.v]`` over ``A(0) B(1) C(2) A(0) B(3) C(2)``:
    the first triple (2 > 1) matches, the second (2 > 3) does not: 1.  With ``c[v >= a.v AND
    v > b.v]`` under ``A as a; B as b : C as c`` (a key conjunct and a fresh one on one
    transition): (a, b, c) with b right before c: b=B(1), c=C(2) with a=A(0) at 0: 1;
    b=B(3), c=C(2) fails 2 > 3: so 1 in all."""
    table = stream([("A", 0), ("B", 1), ("C", 2), ("A", 0), ("B", 3), ("C", 2)])
    assert aggregated("A as a : B as b : C as c FILTER c[v > b.v]", table) == 1
    assert aggregated("A as a; B as b : C as c FILTER c[v >= a.v AND v > b.v]", table) == 1


def test_hand_worked_prev_of_a_single_event_is_vacuous() -> None:
    """``A as a; B as b; C as c FILTER b[v > prev(b).v] AND c[v > a.v]``: ``prev(b)`` is empty
    at ``b`` (one event: nothing before it), so the conjunct holds (a register written after the
    first event, never read after: in the class).  ``A(1) B(0) A(3) B(0) C(2)``: the start A(1)
    has two Bs before C(2) > 1 (2), A(3) fails 2 > 3: 2."""
    table = stream([("A", 1), ("B", 0), ("A", 3), ("B", 0), ("C", 2)])
    assert aggregated("A as a; B as b; C as c FILTER b[v > prev(b).v] AND c[v > a.v]", table) == 2


def test_hand_worked_first_variable_iteration() -> None:
    """``A:+ as a FILTER a[v > prev(a).v]`` over ``A(1) A(2) A(2) A(3)``: rising runs of
    consecutive events: {1}, {1,2}, {2}, {2}, {2,3}, {3}: 6 (every single event, and the pairs
    1->2 and 2->3; 2->2 does not rise, so no triple)."""
    table = stream([("A", 1), ("A", 2), ("A", 2), ("A", 3)])
    assert aggregated("A:+ as a FILTER a[v > prev(a).v]", table) == 6


def test_explain_names_the_previous_event_checks() -> None:
    text = kleene.compile(RISING.format(window=100)).explain()
    line = [x for x in text.splitlines() if x.startswith("counting")][0]
    assert "aggregates over register values" in line and "ordered by s.price" in line, line
    assert "once per event: price > prev(t).price (the partition's previous event)" in line, line
    assert "every event of a partition visited (':')" in line, line


def test_seq6_stays_outside_with_the_reason() -> None:
    """seq6's ``f[price > d.price]`` reads ``d``, written mid-pattern and read after gaps."""
    compiled = kleene.compile(PAPER["seq6"].format(window=50))
    line = [x for x in compiled.explain().splitlines() if x.startswith("counting")][0]
    assert "no aggregates" in line and "written after the first event and before a gap" in line
    table = make_table(600)
    assert compiled.count(table) == len(list(kleene.compile(PAPER["seq6"].format(window=50)).matches(table)))
    assert compiled.last_session.engine.counter is None


_twin = native.load("kleene.registers._vectortree")


@pytest.mark.skipif(_twin is None, reason="the compiled twins are not built here")
def test_compiled_tree_is_the_python_tree_on_the_rising_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled twin and the pure-Python tree: same count, same nodes touched."""
    table = make_table(6_000)
    for w in (10, 300, 3000):
        got = {}
        for tree in (VectorTree, _twin.VectorTree):  # type: ignore[union-attr]
            monkeypatch.setattr(aggregate, "TREE", tree)
            n, engine = counted(RISING.format(window=w), table, max_matches=COUNT_MATCHES)
            assert engine.counter is not None and engine.counter.tree is tree
            got[tree] = (n, engine.counter.work[0])
        assert got[VectorTree] == got[_twin.VectorTree] and got[VectorTree][0] > 0, w  # type: ignore[union-attr]


def rising_work(w: int, table: pa.Table) -> dict[str, float]:
    compiled = kleene.compile(RISING.format(window=w), max_matches=COUNT_MATCHES)
    found = compiled.count(table)
    counter = compiled.last_session.engine.counter
    assert isinstance(counter, AggregateCounter)
    if w <= 1000:
        runs = kleene.compile(RISING.format(window=w), max_matches=COUNT_MATCHES).tuned(aggregates=False)
        assert runs.count(table) == found
    return {"found": found, "work": counter.work[0] / counter.steps,
            "pieces": counter.pieces / counter.steps, "peak": counter.peak}


def test_rising_tree_work_per_event_is_logarithmic_in_the_window() -> None:
    """30,000 stock events, windows of 10 to 10,000 events: the starts in the window grow about
    a hundredfold, tree nodes touched per event stay under ``3 · log2(w) · pieces + 4``
    (pieces: the key ranges an event moves, at most 2: ``price > s.price``)."""
    table = make_table(30_000)
    rows = {w: rising_work(w, table) for w in (10, 100, 1000, 10_000)}
    for w, row in rows.items():
        print("rising", w, row)
        assert row["pieces"] <= 2
        assert row["work"] <= 3 * math.log2(w) * row["pieces"] + 4
    assert rows[10_000]["peak"] >= 100 * rows[10]["peak"]
    assert rows[10_000]["found"] > rows[100]["found"] > 0
