"""Counting by aggregates over register values (kleene.registers.aggregate, issue 18 item 2).

* **Exact.** On random queries of the class (the first variable's registers compared with the
  current event by ``< <= > >= =``, windows of events and of time, PARTITION BY, iterations and
  ORs), the aggregate count equals the merged runs' count, the listed number and the reference
  evaluator's number; the register condition changes the count in at least a third of the cases
  (printed and asserted by ``aimed``).  Hand-worked streams too.
* **Cheap.** Work counted, not timed: tree nodes touched per visited event stay under
  ``c · log2(w) · pieces`` from w = 10 to 10,000 on seq3 and k3, while the starts in the window
  grow a thousandfold.
* **Refused.** Queries outside the class keep the merged runs' count (``explain`` says why).
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

import kleene
from against_oracle import aimed, feature_changed
from kleene import native
from kleene.cli import main
from kleene.language.parser import parse_query
from kleene.reference.oracle import evaluate
from kleene.registers import aggregate
from kleene.registers.aggregate import AggregateCounter, aggregate_plan
from kleene.registers.merged import MergedEngine
from kleene.registers.vectortree import VectorTree

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from generate import make_table  # noqa: E402
from registers import PAPER  # noqa: E402

SHAPES = [
    "A as a; B as b; C as c FILTER c[{cond}]",
    "A as a; (B as b)+; C as c FILTER c[{cond}]",
    "A as a; B as b; (C as c)+ FILTER c[{cond}]",
    "A as a; (B OR C) as b; C as c FILTER b[{cond}]",
    "A as a; ((B OR C) as b)+; C as c FILTER c[{cond}] AND b[{cond2}]",
    "A as a; B+ as b; C as c FILTER b[{cond}]",
    "(A as a; B as b) OR (A as a; C as b); C as c FILTER c[{cond}]",
    "A as a; B as b; C as c FILTER b[{cond2}] AND c[{cond}]",
]
CONDS = [
    ["v > a.v", "v <= a.v", "v = a.v", "a.v < v", "v >= a.v AND v - 1 <= a.v"],
    ["a.v * 2 >= v + 1", "v < a.v * 2", "a.v * 2 = v"],
]
"""Groups of conditions with one register side (the class compares with one expression)."""
TRUE = "v >= 0"
WINDOWS = ["", " WITHIN 3 EVENTS", " WITHIN 6 EVENTS", " WITHIN 12 EVENTS", " WITHIN 4 [t]"]
CHANGED = "the register condition changes the count"


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, str, list[dict[str, Any]]]:
    """``(query, the query with its conditions always true, events)``; values 0-3 and 1.5 (ints and floats
    compare as one kind; nulls and NaN are bad rows, so a key is always defined here)."""
    shape = draw(st.sampled_from(SHAPES))
    group = draw(st.sampled_from(CONDS))
    cond, cond2 = draw(st.sampled_from(group)), draw(st.sampled_from(group))
    tail = draw(st.sampled_from(["", "", " PARTITION BY [k]"])) + draw(st.sampled_from(WINDOWS))
    rows = []
    for types in ("AAAX", "ABB", "BCCX", "ACB"):
        rows += draw(st.lists(
            st.tuples(st.sampled_from(types), st.sampled_from([0, 1, 2, 3, 1.5]),
                      st.sampled_from([0, 0, 1]), st.integers(0, 2)),
            min_size=1, max_size=5,
        ))
    t, events = 0, []
    for kind, v, k, dt in rows:
        t += dt
        events.append({"type": kind, "v": v, "k": k, "t": t})
    query = "SELECT * FROM S WHERE " + shape.format(cond=cond, cond2=cond2) + tail
    bare = "SELECT * FROM S WHERE " + shape.format(cond=TRUE, cond2=TRUE) + tail
    return query, bare, events


def oracle_count(query: str, events: list[dict[str, Any]]) -> int:
    return len(evaluate(parse_query(query), events, times=list(range(len(events)))))


def counted(query: str, table: pa.Table, **kwargs: Any) -> tuple[int, MergedEngine]:
    compiled = kleene.compile(query, **kwargs)
    n = compiled.count(table)
    engine = compiled.last_session.engine
    assert isinstance(engine, MergedEngine)
    return n, engine


@aimed(CHANGED)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_aggregate_count_equals_runs_listing_and_oracle(case: tuple[str, str, list[dict[str, Any]]]) -> None:
    query, bare, events = case
    schema = pa.schema([("type", pa.string()), ("v", pa.float64()), ("k", pa.int64()), ("t", pa.int64())])
    table = pa.Table.from_pylist(events, schema=schema)
    n, engine = counted(query, table)
    assert engine.counter is not None, query  # every shape is in the class
    runs = kleene.compile(query).tuned(aggregates=False)
    assert runs.count(table) == n, query
    assert runs.last_session.engine.counter is None
    listed = len(list(kleene.compile(query).matches(table)))
    expected = oracle_count(query, events)
    assert n == listed == expected, query
    feature_changed(CHANGED, expected != oracle_count(bare, events))


def stream(rows: list[tuple[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist([{"type": t, "v": v} for t, v in rows])


def test_hand_worked_counts() -> None:
    """``A(1) B A(3) B C(2)``: the start A(1) has two Bs before C(2) > 1 (2 complex events),
    A(3) fails 2 > 3; within 3 events the C's window starts after A(1): none.  With ``B+`` the
    Bs after A(1) are any non-empty subset of two (3), A(3) still fails."""
    events = stream([("A", 1), ("B", 0), ("A", 3), ("B", 0), ("C", 2)])
    seq = "SELECT * FROM S WHERE A as a; B as b; C as c FILTER c[v > a.v]"
    assert counted(seq, events)[0] == 2
    assert counted(seq + " WITHIN 3 EVENTS", events)[0] == 0
    plus = "SELECT * FROM S WHERE A as a; B+ as b; C as c FILTER c[v > a.v]"
    assert counted(plus, events)[0] == 3
    # = and <=: C(3) equals A(3) (one B after it), and is >= ... A(1) too (two Bs)
    more = stream([("A", 1), ("B", 0), ("A", 3), ("B", 0), ("C", 3)])
    assert counted(seq.replace("v > a.v", "v = a.v"), more)[0] == 1
    assert counted(seq.replace("v > a.v", "a.v <= v"), more)[0] == 3
    # strings compare as strings
    names = pa.Table.from_pylist([{"type": t, "v": v} for t, v in
                                  [("A", "x"), ("A", "z"), ("B", ""), ("C", "y")]])
    assert counted(seq, names)[0] == 1
    assert counted(seq.replace("v > a.v", "v <= a.v"), names)[0] == 1


def test_counts_beyond_int64_are_exact() -> None:
    """``A; B+; C`` over one A, 70 Bs and a C: 2^70 − 1, through the tree's Python ints."""
    events = stream([("A", 0)] + [("B", 0)] * 70 + [("C", 1)])
    n, engine = counted("SELECT * FROM S WHERE A as a; B+ as b; C as c FILTER c[v > a.v]", events,
                        max_matches=1 << 80)
    assert engine.counter is not None
    assert n == 2**70 - 1


def test_max_matches_applies_to_the_number_counted() -> None:
    events = stream([("A", 0)] + [("B", 0)] * 30 + [("C", 1)])
    with pytest.raises(kleene.LimitError, match="max_matches"):
        counted("SELECT * FROM S WHERE A as a; B+ as b; C as c FILTER c[v > a.v]", events,
                max_matches=1000)


def work(name: str, w: int, table: pa.Table) -> dict[str, float]:
    compiled = kleene.compile(PAPER[name].format(window=w), max_matches=1 << 100_000)
    found = compiled.count(table)
    counter = compiled.last_session.engine.counter
    assert isinstance(counter, AggregateCounter)
    runs = kleene.compile(PAPER[name].format(window=w), max_matches=1 << 100_000).tuned(aggregates=False)
    if w <= 100:
        assert runs.count(table) == found
    return {"found": found, "work": counter.work[0] / counter.steps,
            "pieces": counter.pieces / counter.steps, "steps": counter.steps,
            "most": max(len(t.trees) for t in counter.parts.values()), "peak": counter.peak}


@pytest.mark.parametrize("name", ["seq3", "k3"])
def test_tree_work_per_event_is_logarithmic_in_the_window(name: str) -> None:
    """30,000 stock events, windows of 10 to 10,000 events: the starts in the window grow from
    5 to about 1,000, tree nodes touched per visited event stay under
    ``3 · log2(w) · pieces`` (pieces: the key ranges an event moves, at most 2 here)."""
    table = make_table(30_000)
    rows = {w: work(name, w, table) for w in (10, 100, 1000, 10_000)}
    for w, row in rows.items():
        print(name, w, {**row, "found": f"~10^{len(str(row['found'])) - 1}"})
        assert row["pieces"] <= 2
        assert row["work"] <= 3 * math.log2(w) * row["pieces"] + 4
    assert rows[10_000]["peak"] >= 500 > 50 * rows[10]["peak"]
    assert rows[10_000]["found"] > 100 * rows[100]["found"] > 0


AGGREGATED = ["seq3", "k3", "q1", "q2", "q3", "q4", "q5"]
"""The SRT paper's stock patterns (benchmarks/registers.py) the aggregates count; the others
(seq6 to seq12, k6 to k12) write a second register mid-pattern."""


@pytest.mark.parametrize("name", list(PAPER))
def test_the_srt_papers_patterns(name: str) -> None:
    """Each benchmarked pattern: counted by aggregates exactly when listed in :data:`AGGREGATED`
    (else ``explain`` says why not), equal to the merged runs' count on 3,000 stock events, and
    for the aggregated ones without an iteration to the reference evaluator's on 120
    (ALL-then-filter)."""
    table = make_table(3000)
    query = PAPER[name].format(window=40)
    compiled = kleene.compile(query, max_matches=1 << 10_000)
    n = compiled.count(table)
    engine = compiled.last_session.engine
    assert (engine.counter is not None) == (name in AGGREGATED), name
    if name not in AGGREGATED:
        line = [x for x in compiled.explain().splitlines() if x.startswith("counting")]
        assert line and "written after the first" in line[0], line
        return
    assert n == kleene.compile(query, max_matches=1 << 10_000).tuned(aggregates=False).count(table) > 0
    if "+" in query:  # the reference lists every subset of an iteration: the shapes above cover it
        return
    small = make_table(120)
    query = PAPER[name].format(window=12)
    events = small.to_pylist()
    ref = evaluate(parse_query(query), events, times=list(range(len(events))), budget=2_000_000)
    assert kleene.compile(query).count(small) == len(ref)


REFUSED = {
    "A as a; B:+ as b FILTER b[v > prev(b).v + a.v]": "the previous event's together",
    "A as a; B+ as b; C as c FILTER b[v > prev(b).v] AND c[v > a.v]": "written after the first",
    "A as a; B as b; C as c FILTER c[v != a.v]": "not a comparison",
    "A as a; B as b; C as c FILTER c[v > a.v AND v < a.w]": "more than one register expression",
    "A as a; B as b; C as c FILTER b[v > a.v] AND c[v > b.v]": "written after the first",
    "A as a; (B as b OR B as e); C as c FILTER c[v > a.v]": "same complex event",
    "A as a; B as b; C as c FILTER c[v > a.v] SELECT_AC": "same complex event",
    "A as a; B as b; C as c : C as d FILTER d[v > b.v]": "written after the first",
}


@pytest.mark.parametrize("pattern", list(REFUSED))
def test_outside_the_class_the_merged_runs_count(pattern: str) -> None:
    """Refused queries keep the merged runs' count (same number as listed), and explain says why."""
    head = "SELECT a, c" if pattern.endswith(" SELECT_AC") else "SELECT *"
    query = f"{head} FROM S WHERE {pattern.removesuffix(' SELECT_AC')} WITHIN 5 EVENTS"
    events = stream([(t, v) for t, v in zip("ABABCBCAC", [1, 2, 0, 3, 2, 1, 3, 0, 1], strict=True)])
    events = events.append_column("w", pa.array([2] * 9))
    compiled = kleene.compile(query)
    assert compiled.register_runtime == "merged"
    n = compiled.count(events)
    assert compiled.last_session.engine.counter is None
    assert n == len(list(kleene.compile(query).matches(events)))
    line = [x for x in compiled.explain().splitlines() if x.startswith("counting")]
    assert line and "no aggregates" in line[0] and REFUSED[pattern] in line[0], line


def test_limit_and_strategies_are_refused() -> None:
    q = kleene.compile("SELECT * FROM S WHERE A as a; B as b; C as c FILTER c[v > a.v] WITHIN 5 EVENTS")
    srt = q.plan.srt
    assert srt is not None
    assert aggregate_plan(srt, strategy="ALL", limit=None, consume="NONE")[0] is not None
    assert aggregate_plan(srt, strategy="ALL", limit=3, consume="NONE")[0] is None
    assert aggregate_plan(srt, strategy="NEXT", limit=None, consume="NONE")[0] is None
    assert aggregate_plan(srt, strategy="ALL", limit=None, consume="ANY")[0] is None


def test_explain_and_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``kleene explain`` names the aggregates; ``kleene run --count`` counts through them the
    number ``kleene run`` lists."""
    query = "SELECT * FROM S WHERE A as a; B+ as b; C as c FILTER c[v > a.v] WITHIN 6 EVENTS"
    path = tmp_path / "s.csv"
    path.write_text("type,v\n" + "\n".join(f"{t},{v}" for t, v in
                                           zip("ABABCBCACB", [1, 2, 0, 3, 2, 1, 3, 0, 1, 4], strict=True)) + "\n")
    assert main(["explain", query]) == 0
    out = capsys.readouterr().out
    assert "counting (count, --count): aggregates over register values" in out
    assert "ordered by a.v" in out
    assert main(["run", query, "--input", str(path), "--count"]) == 0
    n = int(capsys.readouterr().out)
    assert main(["run", query, "--input", str(path)]) == 0
    assert n == len(capsys.readouterr().out.splitlines()) > 0


_twin = native.load("kleene.registers._vectortree")


@pytest.mark.skipif(_twin is None, reason="the compiled twins are not built here")
@pytest.mark.parametrize("name", ["seq3", "q5"])
def test_compiled_tree_is_the_python_tree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled twin (kleene.registers._vectortree) and the pure-Python tree give the same
    count and touch the same nodes (same priorities, same splits), at windows short and long,
    with and without partitions."""
    table = make_table(8_000)
    table = table.append_column("k", pa.array([i % 3 // 2 for i in range(len(table))]))
    for w in (10, 300, 3000):
        query = PAPER[name].format(window=w)
        if w == 300:
            query = query.replace(" WITHIN", " PARTITION BY [k] WITHIN")
        got = {}
        for tree in (VectorTree, _twin.VectorTree):  # type: ignore[union-attr]
            monkeypatch.setattr(aggregate, "TREE", tree)
            n, engine = counted(query, table, max_matches=1 << 100_000)
            assert engine.counter is not None and engine.counter.tree is tree
            got[tree] = (n, engine.counter.work[0])
        assert got[VectorTree] == got[_twin.VectorTree] and got[VectorTree][0] > 0, (name, w)  # type: ignore[union-attr]


def _roots(engine: MergedEngine) -> list[Any]:
    counter = engine.counter
    assert counter is not None
    return [tree.root for part in counter.parts.values() for tree in part.trees.values()]


@pytest.mark.skipif(_twin is None, reason="the compiled twins are not built here")
def test_compiled_tree_switches_from_int64_to_limbs_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """The twin keeps vectors, sums and tags in int64 while they fit and switches a node (or a
    tag) to uint64 limbs on overflow: a ``B+`` of 70 events counts 2^70 - 1 exactly (not a
    wrapped int64), and on a random k3-like stream whose count passes 2^63 the twin equals the
    pure-Python tree in count and nodes touched; below 2^63 no node leaves int64, and no node
    goes to Python ints (counts are never negative)."""
    query = "SELECT * FROM S WHERE A as a; B+ as b; C as c FILTER c[v > a.v] WITHIN {w} EVENTS"
    schema = pa.schema([("type", pa.string()), ("v", pa.float64())])
    exact = pa.Table.from_pylist([{"type": "A", "v": 1.0}] + [{"type": "B", "v": 0.0}] * 70
                                 + [{"type": "C", "v": 2.0}], schema=schema)
    rng = __import__("random").Random(7)
    stream = pa.Table.from_pylist([{"type": rng.choice("AABBBBBC"), "v": float(rng.randint(0, 5))}
                                   for _ in range(600)], schema=schema)
    for table, w, expected in ((exact, 100, 2**70 - 1), (stream, 120, None), (stream, 12, None)):
        got = {}
        for tree in (VectorTree, _twin.VectorTree):  # type: ignore[union-attr]
            monkeypatch.setattr(aggregate, "TREE", tree)
            n, engine = counted(query.format(w=w), table, max_matches=1 << 100_000)
            assert engine.counter is not None and engine.counter.tree is tree
            got[tree] = (n, engine.counter.work[0])
            if tree is not VectorTree:
                wide = [root.limbs for root in _roots(engine)]
                assert wide and all(wide) == (n >= 1 << 63), (w, n, wide)
                assert not any(root.big for root in _roots(engine))
        assert got[VectorTree] == got[_twin.VectorTree], w  # type: ignore[union-attr]
        n = got[VectorTree][0]
        if expected is not None:
            assert n == expected
        assert (n >= 1 << 63) == (w > 12), (w, n)
