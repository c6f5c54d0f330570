"""Counting complex events (``Query.count``, ``QuerySet.count``, the ``Count`` sink).

Two promises, tested apart:

* **Exact.** ``q.count(source)`` is ``len(list(q.run(source)))`` on random queries of the
  property generators: every strategy, LIMIT, windows of events and of time, PARTITION BY,
  CONSUME BY, projections; the tECS engine (both loops: the compiled twin and the Python one)
  and the register engine (runs, the windowed runtime and the pair join).  A query over a limit
  stops the count with the same error as the run.
* **Cheap.** Work counted, not timed (as in test_strategy_counts.py): under every strategy with
  ``LIMIT 1`` on the benchmark's iteration pattern, and under NEXT and LAST whatever the LIMIT,
  counting an end evaluates no tECS node below the output nodes (no dynamic program, no walk,
  no NEXT chain, no LAST selection: it reads the output nodes' maximum start), while listing the
  same ends reads matches whose size grows with the window.  Without LIMIT, ALL's count
  evaluates fewer nodes than the listed output has units (positions plus one per complex
  event).  MAX's gated classes (``A+ ; B``, where a start is maximal only once the earlier ones
  left the window) are the exception: their count walks to the first start the gate accepts,
  as the listing does, which costs that match's size (checked against the listed units).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_operation_counts import VISITS_PER_UNIT

import kleene
from against_oracle import SUPPORTED_CEL, Case, aimed, compile_case, feature_changed, rows_of
from generators import cases, condition_cases, pair_cases
from kleene.language import ast
from kleene.language.errors import LimitError
from kleene.language.printer import to_ceql
from kleene.runtime import engine as engine_module
from kleene.runtime import enumeration, strategies
from kleene.runtime.engine import Engine
from kleene.runtime.enumeration import Count
from kleene.runtime.nxt import NxtEvaluator


@contextmanager
def python_loop() -> Iterator[None]:
    """The engine's Python loop instead of its compiled twin (kleene.runtime._loop)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine_module, "LOOP", None)
        yield


def listed_and_counted(q: kleene.Query, rows: list[dict[str, Any]]) -> tuple[int, int]:
    """``len(list(q.run(rows)))`` and ``q.count(rows)``; a LimitError on both sides is the same
    answer (compared by its message)."""
    try:
        listed: Any = len(list(q.run(rows)))
    except LimitError as err:
        listed = str(err)
    try:
        counted: Any = q.count(rows)
    except LimitError as err:
        counted = str(err)
    return listed, counted


NONZERO = "count > 0"


def check_case(case: Case, **tuning: Any) -> None:
    query, events, times = case
    q = compile_case(query, **tuning)
    rows = rows_of(events, times)
    listed, counted = listed_and_counted(q, rows)
    assert counted == listed, to_ceql(query)
    if q.engine == "tecs":
        with python_loop():
            if isinstance(counted, int):
                assert q.count(rows) == counted
            else:
                with pytest.raises(LimitError):
                    q.count(rows)
    # A test where every count is 0 would compare nothing: aimed() asserts a third are not.
    feature_changed(NONZERO, isinstance(counted, int) and counted > 0)
    feature_changed(f"{query.select.strategy}, LIMIT {query.limit}: count > 0",
                    isinstance(counted, int) and counted > 0)


@aimed(NONZERO)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL))
def test_count_is_the_number_listed_tecs(case: Case) -> None:
    """The tECS engine: every strategy, LIMIT, window, PARTITION BY, CONSUME BY, both loops."""
    check_case(case)


@aimed(NONZERO)
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(condition_cases(), st.one_of(st.none(), st.integers(0, 8)))
def test_count_is_the_number_listed_registers(case: Case, window: int | None) -> None:
    """The register engine (conditions between events): its runs, and under ``WITHIN n EVENTS``
    its windowed runtime where the planner takes it."""
    if window is None:
        check_case(case)
        return
    query, events, times = case
    check_case((replace(query, within=ast.EventsWindow(window)), events, times), windowed=True)


@aimed(NONZERO)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(pair_cases())
def test_count_is_the_number_listed_pairs(case: Case) -> None:
    """The vectorized pair join (kleene.registers.pairs)."""
    assert compile_case(case[0]).session().engine.pairs is not None  # type: ignore[attr-defined]
    check_case(case)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(cases(full_cel=SUPPORTED_CEL, max_size=30), min_size=2, max_size=3))
def test_queryset_counts_per_query(group: list[Case]) -> None:
    """``QuerySet.count``: per query name, what the query lists alone on the same stream."""
    events, times = group[0][1], group[0][2]
    rows = rows_of(events, times)
    texts = [(f"q{i}", to_ceql(c[0])) for i, c in enumerate(group)]
    try:
        qs = kleene.compile_many(texts, time_column="__t", time_unit="ns")
        expected = {name: len(list(kleene.compile(t, time_column="__t", time_unit="ns").run(rows)))
                    for name, t in texts}
    except LimitError:
        return  # over a limit alone: covered by the single-query tests
    assert qs.count(rows) == expected


def test_a_limit_stops_the_count_as_it_stops_the_run() -> None:
    """``max_matches``: the count stops at the same event with the same error as the run."""
    rows = [{"type": "A"}] * 6 + [{"type": "B"}]
    q = kleene.compile("SELECT * FROM S WHERE A+ as a ; B as b", max_matches=20)
    with pytest.raises(LimitError) as listed:
        list(q.run(rows))
    with pytest.raises(LimitError) as counted:
        q.count(rows)
    assert str(counted.value) == str(listed.value)
    assert "max_matches" in str(counted.value)
    assert kleene.compile("SELECT * FROM S WHERE A+ as a ; B as b LIMIT 20", max_matches=20).count(rows) == 20
    assert kleene.compile("SELECT * FROM S WHERE A+ as a ; B as b").count(rows) == 63


def test_count_reads_files_and_names_queries(tmp_path: Any) -> None:
    """A file source, a QuerySet's names, and bad rows set aside as in the run."""
    path = tmp_path / "events.csv"
    path.write_text("type,v\nA,1\nB,2\nA,\nB,5\nA,3\nB,1\n")
    one = kleene.compile("SELECT * FROM S WHERE A as a ; B as b FILTER a[v > 0]", on_bad_row="skip")
    assert one.count(str(path)) == len(list(one.run(str(path)))) == 4
    assert one.bad_rows.count == 1
    qs = kleene.compile_many({"pairs": "SELECT * FROM S WHERE A as a ; B as b",
                              "next": "SELECT NEXT * FROM S WHERE A as a ; B as b"})
    assert qs.count(str(path)) == {"pairs": 6, "next": 3}


# ------------------------------------------------------------------ work, counted

QUERY = (
    "SELECT {s} * FROM S WHERE A as a ; B+ as b ; C as c FILTER a[v > 2] AND c[v < 8] "
    "WITHIN {w} EVENTS{limit}"
)
"""The benchmark's iteration pattern (test_strategy_counts.py): NEXT's match holds every B
since the earliest start in the window, ALL's matches are exponential in the window."""
WINDOWS = (10, 1_000, 10_000)
EVENTS = 12_000


@pytest.fixture(scope="module")
def batch() -> pa.RecordBatch:
    rng = random.Random(3)
    return pa.RecordBatch.from_pylist([{"type": rng.choice("ABCD"), "v": rng.randrange(10)} for _ in range(EVENTS)])


class Work:
    """What reading the complex events of each end costs, counted by wrapping the readers."""

    def __init__(self, mp: pytest.MonkeyPatch) -> None:
        self.dag: list[int] = []
        """Nodes the count's dynamic program evaluated, per call (enumeration.count_dag)."""
        self.walks = 0
        """Listing walks of the tECS (Columns.add_node or enumerate_node into a list)."""
        self.last = 0
        """LAST's selections (strategies.LAST_BELOW)."""
        self.chains = 0
        """NEXT's matches read (NxtEvaluator._match), and their positions in all."""
        self.positions = 0
        dag, last, match = enumeration.count_dag, strategies.LAST_BELOW, NxtEvaluator._match

        def counted_dag(*args: Any) -> int:
            memo: dict[int, int] = {}
            value = dag(*args[:5], memo)
            self.dag.append(len(memo))
            return value

        def counted_last(*args: Any) -> Any:
            self.last += 1
            return last(*args)

        def counted_match(ev: NxtEvaluator, *args: Any) -> tuple[int, ...]:
            found = match(ev, *args)
            self.chains += 1
            self.positions += len(found)
            return found

        mp.setattr(enumeration, "count_dag", counted_dag)
        mp.setattr(strategies, "LAST_BELOW", counted_last)
        mp.setattr(NxtEvaluator, "_match", counted_match)


def work(strategy: str, window: int, limit: str, batch: pa.RecordBatch, counting: bool) -> tuple[int, Work]:
    """The complex events of the query over ``batch`` (counted or listed), and the work."""
    with pytest.MonkeyPatch.context() as mp:
        w = Work(mp)
        q = kleene.compile(QUERY.format(s=strategy, w=window, limit=limit))
        found = q.count(batch) if counting else sum(1 for _ in q.matches(batch))
        return found, w


@pytest.mark.parametrize("strategy", ["ALL", "STRICT", "NEXT", "LAST", "MAX"])
def test_counting_with_limit_1_reads_no_node_below_the_ends(strategy: str, batch: pa.RecordBatch) -> None:
    """LIMIT 1: the count at an end is whether a match ends there, read off the output nodes."""
    growth = []
    for window in WINDOWS:
        listed, seen = work(strategy, window, " LIMIT 1", batch, counting=False)
        counted, w = work(strategy, window, " LIMIT 1", batch, counting=True)
        print(f"{strategy} w={window}: {counted} complex events; counting: {sum(w.dag)} DP nodes, "
              f"{w.last} selections, {w.chains} matches read; listing: {seen.last} selections, "
              f"{seen.chains} matches read ({seen.positions} positions)")
        assert counted == listed > 0
        assert (w.dag, w.last, w.chains) == ([], 0, 0)
        if strategy == "NEXT":
            assert seen.chains == listed
            growth.append(seen.positions)
        if strategy == "LAST":
            assert seen.last == listed
    if strategy == "NEXT":  # what counting saves: the listed matches grow with the window
        assert growth[-1] >= 20 * growth[0]


@pytest.mark.parametrize("strategy", ["NEXT", "LAST"])
def test_next_and_last_count_in_constant_time_without_limit(strategy: str, batch: pa.RecordBatch) -> None:
    """NEXT and LAST keep one complex event per end: counted in O(1) with or without LIMIT."""
    for window in (1_000,):
        listed, _ = work(strategy, window, "", batch, counting=False)
        counted, w = work(strategy, window, "", batch, counting=True)
        assert counted == listed > 0
        assert (w.dag, w.last, w.chains) == ([], 0, 0)


def test_all_counts_fewer_nodes_than_it_would_list(batch: pa.RecordBatch) -> None:
    """ALL without LIMIT (the output is exponential in the window): the count's dynamic program
    evaluates each node once per end, not once per complex event through it; from w = 10 to 20
    its work doubles while the output grows tenfold."""
    rows = batch.slice(0, 3_000)
    ratios = []
    for window in (10, 20):
        q = kleene.compile(QUERY.format(s="ALL", w=window, limit=""))
        units = sum(len(m.positions) + 1 for m in q.matches(rows))  # type: ignore[union-attr]
        with pytest.MonkeyPatch.context() as mp:
            w = Work(mp)
            counted = q.count(rows)
        print(f"ALL w={window}: {counted} complex events, {units} units listed, {sum(w.dag)} nodes counted")
        assert counted == sum(1 for _ in q.matches(rows))
        assert 0 < sum(w.dag) <= units
        ratios.append(units / sum(w.dag))
    assert ratios[1] >= 4 * ratios[0]


def test_the_count_sink_and_a_list_alternate_on_one_engine(batch: pa.RecordBatch) -> None:
    """NEXT's evaluators build matches again once the sink is a list again (and partitions made
    while counting too)."""
    text = ("SELECT NEXT * FROM S WHERE A as a ; B+ as b ; C as c FILTER a[v > 2] "
            "PARTITION BY [v] WITHIN 50 EVENTS")
    q = kleene.compile(text)
    rows = batch.slice(0, 4_000)
    whole = [(m.start, m.end, m.positions) for m in q.matches(rows)]  # type: ignore[union-attr]
    bits = q.plan.predicates.evaluate(rows)
    keys = [rows.column("v").to_pylist()]
    engine = q.plan.build_engine()
    assert isinstance(engine, Engine)
    got: list[Any] = []
    counted = 0
    for lo in range(0, rows.num_rows, 500):
        hi = lo + 500
        part = [k[lo:hi] for k in keys]
        positions = np.arange(lo, min(hi, rows.num_rows), dtype=np.int64)
        if lo // 500 % 2:
            sink = Count()
            engine.run_batch(rows.slice(lo, 500), bits[lo:hi], positions, None, part, sink)
            counted += sink.n
            got.extend([None] * sink.n)
        else:
            out: list[Any] = []
            engine.run_batch(rows.slice(lo, 500), bits[lo:hi], positions, None, part, out)
            got.extend((s, e, p) for s, e, p, _ in out)
    assert counted > 0
    assert len(got) == len(whole)
    assert all(g is None or g == w for g, w in zip(got, whole, strict=True))


def test_count_sink_takes_found_tuples() -> None:
    """Engines that cannot count append their complex events: a Count takes them as a list does."""
    sink = Count()
    sink.append((0, 1, (0, 1), None))
    sink.extend([(0, 2, (0, 2), None), (1, 2, (1, 2), None)])
    sink.extend((x, 3, (x, 3), None) for x in range(4))
    assert sink.add(5) == 5
    assert len(sink) == sink.n == 12


@pytest.mark.parametrize("limit", [1, 2, 1 << 62])
def test_count_node_counts_paths_inside_the_window(limit: int) -> None:
    """A hand-made tECS with sharing: two outputs over one union of three runs."""
    from kleene.runtime.tecs import BOTTOM, OUTPUT, UNION

    b5, b3, b1 = (BOTTOM, 5, 5), (BOTTOM, 3, 3), (BOTTOM, 1, 1)
    runs = [UNION, 5, b5, [UNION, 3, b3, b1]]
    top = [UNION, 5, (OUTPUT, 5, 7, runs), (OUTPUT, 5, 8, runs)]
    for tau, every in ((0, 6), (2, 4), (4, 2), (6, 0)):
        assert enumeration.count_node(top, tau, limit) == min(limit, every)
        listed: list[Any] = []
        enumeration.enumerate_node(top, tau, listed, limit, 9)
        assert len(listed) == min(limit, every)


def test_max_gated_counts_cost_no_more_than_listing(batch: pa.RecordBatch) -> None:
    """MAX on ``A+ ; B``: a gated class, counted by the dynamic program up to the first accepted
    start, within the bound the listing walk keeps per unit of output (test_strategy_counts.py):
    output-linear, not O(1) (its one match per end holds every A of the window)."""
    rows = batch.slice(0, 4_000)
    q = kleene.compile("SELECT MAX * FROM S WHERE A+ as a ; B as b WITHIN 100 EVENTS LIMIT 1")
    units = sum(len(m.positions) + 1 for m in q.matches(rows))  # type: ignore[union-attr]
    with pytest.MonkeyPatch.context() as mp:
        w = Work(mp)
        counted = q.count(rows)
    print(f"MAX A+ ; B, w=100: {counted} complex events, {units} units listed, {sum(w.dag)} nodes "
          f"counted in {len(w.dag)} gated counts")
    assert counted == sum(1 for _ in q.matches(rows)) > 0
    assert w.dag and sum(w.dag) <= VISITS_PER_UNIT * units  # the bound the listing walk keeps
