"""Windowed unrolling and determinization (kleene.registers.sra, .unrolling, .determinize) and the windowed runtime.

The paper cases: SRT spec T9 (TR Fig 14), the RMA output-agnostic test (end
of RMA §6), RMA #4 (the run trace of Run (3)) and the register count the RMA
paper states for ``φ1`` under windows 2 and 3.  Then the windowed runtime
against the oracle on random queries.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
import kleene.registers.window_runtime as window_runtime
from against_oracle import aimed, check_against_oracle, compile_case, oracle, skip_case
from condition_cases import PHI1, S1, sensor
from generators import condition_cases, conjunction_cases
from kleene.language import ast
from kleene.language.parser import parse_query
from kleene.language.scopes import evaluated_form
from kleene.predicates.table import PredicateTable
from kleene.registers.automaton import compile_srt
from kleene.registers.determinize import determinize, recognizes, run_dsra, run_sra
from kleene.registers.sra import (
    SRA,
    TRUE,
    Condition,
    Formula,
    SRATransition,
    Symbol,
    from_srt,
    with_start_loop,
)
from kleene.registers.srt import SRT
from kleene.registers.unrolling import unroll


def srt_of(query: str) -> SRT:
    q = parse_query(query)
    return compile_srt(q.where, None)


def symbols(srt: SRT, events: tuple[dict[str, Any], ...]) -> list[Symbol]:
    """Events as the automata read them: the prefilter bits and the attributes the guards read."""
    batch = pa.RecordBatch.from_pylist([dict(e) for e in events])
    bits = PredicateTable(list(srt.event_types), list(srt.preds)).evaluate(batch).tolist()
    return [(b, tuple(e.get(a) for a in srt.attributes)) for b, e in zip(bits, events, strict=True)]


# ------------------------------------------------------------ SRT T9 (Fig 14)


def fig14() -> SRA:
    """An nSRA that reaches the subset {q1, q4} of TR Fig 14a after one event.

    q0 --⊤↓r0--> q1 and q0 --⊤↓r0--> q4 (the same event into the same
    register); from q1, ϕ1 (price above r0's) to q2 and ϕ2 (type a) to q3;
    from q4, ϕ3 (price equal to r0's) to q5.  Which of q1/q4 owns ϕ2 is not
    readable in the extraction; the construction only sees the union.
    Events are (type, price).
    """
    phi1 = Formula("ϕ1", lambda b, ev, regs: regs[0] is not None and ev[1] > regs[0][1])
    phi2 = Formula("ϕ2", lambda b, ev, regs: ev[0] == "a")
    phi3 = Formula("ϕ3", lambda b, ev, regs: regs[0] is not None and ev[1] == regs[0][1])
    w = frozenset({0})
    none: frozenset[int] = frozenset()
    ts = (
        SRATransition(0, Condition(TRUE), w, True, False, 1),
        SRATransition(0, Condition(TRUE), w, True, False, 4),
        SRATransition(1, Condition(phi1, (0,)), none, True, True, 2),
        SRATransition(1, Condition(phi2, ()), none, True, True, 3),
        SRATransition(4, Condition(phi3, (0,)), none, True, True, 5),
    )
    return SRA(6, 0, frozenset({2, 3, 5}), ts, 1, tuple(range(6)), (0,))


def test_t9_fig14_minterms() -> None:
    """SRT spec T9: the eight minterms of {q1, q4} and their targets (TR Fig 14b)."""
    dsra = determinize(fig14())
    q14 = dsra.state({1, 4})
    got = {
        tuple(sign for _, sign in sorted(t.minterm, key=lambda cs: cs[0].formula.name)):
            dsra.subsets[t.target]
        for t in dsra.out(q14)
    }
    T, F = True, False
    expected = {
        (T, T, F): {2, 3},
        (T, F, F): {2},
        (F, T, F): {3},
        (F, F, F): set(),
        (T, T, T): {2, 3, 5},
        (F, F, T): {5},
        (T, F, T): {2, 5},
        (F, T, T): {3, 5},
    }
    assert got == {k: frozenset(v) for k, v in expected.items()}
    assert sorted(c.formula.name for c in dsra.conditions(q14)) == ["ϕ1", "ϕ2", "ϕ3"]
    assert dsra.is_deterministic()  # TR Def 36
    assert dsra.finals == frozenset(i for i, s in enumerate(dsra.subsets) if s & {2, 3, 5})


def test_t9_same_language_on_random_strings() -> None:
    """T9: the dSRA accepts exactly the strings the nSRA accepts."""
    nsra = fig14()
    dsra = determinize(nsra)
    rng = random.Random(9)
    accepted = 0
    for _ in range(300):
        word = [(rng.choice("ab"), rng.randint(0, 3)) for _ in range(rng.randint(1, 3))]
        syms: list[Symbol] = [(0, e) for e in word]
        expected = recognizes(run_sra(nsra, syms))
        assert run_dsra(dsra, syms).accepting == expected, word
        accepted += expected
    assert 0 < accepted < 300


def test_determinize_refuses_too_many_conditions() -> None:
    many = tuple(
        SRATransition(0, Condition(Formula(f"f{i}", lambda b, ev, regs: True)), frozenset(),
                      True, True, 1)
        for i in range(13)
    )
    sra = SRA(2, 0, frozenset({1}), many, 0, (0, 1), ())
    try:
        determinize(sra)
    except ValueError as err:
        assert "2^13" in str(err)
    else:
        raise AssertionError("expected a ValueError")


# --------------------------------------------------------------- RMA cases


def test_rma_4_run_trace() -> None:
    """RMA #4: Run (3) of the Fig 1 RMA on t0..t3, with outputs ◦,•,◦,• and match {1,3}.

    ``[0,qs,♯] → [1,qs,♯] → [2,q1,t1] → [3,q1,t1] → [4,qf,t1]`` (0-based;
    registers hold the attributes the guards read, here ``id``).  The RMA is
    our compiler's SRT for φ1 in its streaming form: three states, one
    register, TRUE self-loops on qs and q1.
    """
    srt = srt_of(PHI1)
    sra = from_srt(srt, streaming=True)
    assert sra.num_states == 3 and sra.num_registers == 1
    qs = sra.initial
    (qf,) = sra.finals
    (q1,) = set(range(3)) - {qs, qf}
    loops = {t.source for t in sra.transitions if t.source == t.target and t.condition == Condition(TRUE)}
    assert loops == {qs, q1}
    syms = symbols(srt, S1[:4])
    runs = [t for t in run_sra(sra, syms) if t.accepting]
    assert {r.match for r in runs} == {frozenset({0, 3}), frozenset({1, 3})}  # RMA #3
    (run3,) = [r for r in runs if r.match == {1, 3}]
    t1 = (S1[1]["id"],)
    assert run3.configurations == (
        (0, qs, (None,)), (1, qs, (None,)), (2, q1, (t1,)), (3, q1, (t1,)), (4, qf, (t1,)),
    )
    assert run3.outputs == (False, True, False, True)


def test_rma_register_count_of_unrolled_phi1() -> None:
    """RMA §6: unrolled φ1 needs one register for WINDOW 2 and two for WINDOW 3.

    As in RMA Alg 6-8, the unrolled walks include the start state's TRUE
    loop: with three events, the T may be the first or the second one.
    """
    srt = srt_of(PHI1)
    for window, registers in ((2, 1), (3, 2)):
        sra = unroll(srt, window, streaming=True)
        assert sra.num_registers == registers
        assert sra.acyclic and sra.writes_once()
        assert set(sra.copy_of_register) == {0}
        assert max(sra.depth or ()) == window


def test_rma_output_agnostic_dsra() -> None:
    """RMA end of §6: φ1 WINDOW 2 on T(1) T(1) H(1).

    The unrolled RMA (with the start loop of Alg 6) reports {1,2}; its
    output-agnostic determinization has one run, which recognizes the stream
    at index 2 but marks {0,1,2}.
    """
    srt = srt_of(PHI1)
    urma = with_start_loop(unroll(srt, 2, streaming=True))
    syms = symbols(srt, sensor(("T", 1, 0), ("T", 1, 0), ("H", 1, 0)))
    assert [r.match for r in run_sra(urma, syms) if r.accepting] == [frozenset({1, 2})]
    dsra = determinize(urma)
    assert dsra.is_deterministic()
    run = run_dsra(dsra, syms)
    assert run.accepting
    assert run.match == {0, 1, 2}
    assert not run_dsra(dsra, syms[:2]).accepting
    # The subsets the run goes through (RMA Fig 3(b)): {qt}, {qt, qt,f}, {qt, qt,f},
    # {qt, qt,f,f'}; as states of the SRT they copy: {qs}, {qs, q1}, {qs, q1}, {qs, qf}.
    qs, q1, qf = srt.initial, srt.labelled[srt.initial][0].target, min(srt.finals)
    copies = [{urma.copy_of_state[n] for n in dsra.subsets[q]} for q in run.states]
    assert copies == [{qs}, {qs, q1}, {qs, q1}, {qs, qf}]
    assert [len(dsra.subsets[q]) for q in run.states] == [1, 2, 2, 2]


def test_start_loop_with_one_register_file_is_not_exact_from_window_3() -> None:
    """The finding of kleene.registers.determinize: φ1 WINDOW 3 on T(1) T(2) H(1).

    The match {0,2} exists (the unrolled RMA's runs find it; so do the
    oracle and the windowed runtime), but the determinized RMA with the
    root's start loop does not recognize the stream: the run entering the
    tree at T(2) overwrites the register copy that the run from T(1) reads.
    """
    srt = srt_of(PHI1)
    events = sensor(("T", 1, 0), ("T", 2, 0), ("H", 1, 0))
    syms = symbols(srt, events)
    urma = with_start_loop(unroll(srt, 3, streaming=True))
    assert [r.match for r in run_sra(urma, syms) if r.accepting] == [frozenset({0, 2})]
    assert not run_dsra(determinize(urma), syms).accepting
    # The pair join would be chosen for this shape.
    q = kleene.compile(PHI1 + " WITHIN 2 EVENTS").tuned(register_runtime="windowed")
    got = [(m.start, m.end, m.positions) for m in q.matches(pa.Table.from_pylist(list(events)))]
    assert got == [(0, 2, (0, 2))]


def test_unrolled_runs_equal_the_oracle_on_the_rma_window_cases() -> None:
    """RMA #6-#9 (φ1 WINDOW 2..5 on S1) through the unrolled SRA, run from every start."""
    srt = srt_of(PHI1)
    syms = symbols(srt, S1)
    expected = {
        2: set(),
        3: {(1, 3)},
        4: {(0, 3), (1, 3), (1, 4)},
        5: {(0, 3), (0, 4), (1, 3), (1, 4)},
    }
    for window, matches in expected.items():
        sra = unroll(srt, window)
        got = set()
        for start in range(len(syms)):
            for end in range(start + 1, len(syms) + 1):
                for r in run_sra(sra, syms[start:end]):
                    if r.accepting:
                        got.add(tuple(sorted(start + i for i in r.match)))
        assert got == matches, window


# ------------------------------------------------------- the windowed runtime


def test_runtime_choice_and_explain() -> None:
    rising = "SELECT * WHERE SELL as s ; BUY+ as b FILTER b[price > prev(b).price] WITHIN 10 EVENTS"
    assert kleene.compile(rising).register_runtime == "merged"  # measured faster (docs)
    windowed = kleene.compile(rising).tuned(windowed=True)  # where it applies: off by default
    assert windowed.register_runtime == "windowed"
    assert "unrolled" in windowed.explain()
    timed = kleene.compile(rising.replace("10 EVENTS", "10 SECONDS"), time_column="t")
    try:
        timed.tuned(register_runtime="windowed")
    except ValueError as err:
        assert "WITHIN n EVENTS" in str(err)
    else:
        raise AssertionError("expected a ValueError")
    pair = kleene.compile(
        "SELECT * WHERE SELL as a ; BUY as b FILTER b[price < a.price] WITHIN 10 EVENTS"
    )
    assert pair.register_runtime == "pairs"
    runs = kleene.compile(
        "SELECT * WHERE SELL as s ; BUY+ as b FILTER b[price > prev(b).price] WITHIN 1000 EVENTS"
    )
    assert runs.register_runtime == "merged"
    assert "runs merged by (state, registers)" in runs.explain()
    limited = kleene.compile(
        "SELECT * WHERE SELL as s ; BUY+ as b FILTER b[price > prev(b).price] "
        "WITHIN 1000 EVENTS LIMIT 3"
    )
    assert limited.register_runtime == "runs"
    assert "runs (state, registers" in limited.explain()
    unary = kleene.compile("SELECT * WHERE SELL ; BUY WITHIN 10 EVENTS")
    assert unary.register_runtime is None


@st.composite
def windowed_cases(draw: st.DrawFn) -> tuple[ast.Query, list[dict[str, Any]], list[int]]:
    """Random queries with conditions between events, under a window of 0-8 events."""
    query, events, times = draw(condition_cases())
    return replace(query, within=ast.EventsWindow(draw(st.integers(0, 8)))), events, times


@aimed("WITHIN")
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))  # 300 on shorter streams
@given(windowed_cases())
def test_windowed_runtime_equals_oracle(case: tuple[ast.Query, list[dict[str, Any]], list[int]]) -> None:
    compiled = compile_case(case[0], windowed=True)
    assert compiled.register_runtime in ("windowed", "pairs")
    check_against_oracle(case, aim_at=["WITHIN"], windowed=True)


@aimed()
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(conjunction_cases(), st.integers(0, 8))
def test_windowed_runtime_and_all_equal_oracle(
    case: tuple[ast.Query, list[dict[str, Any]], list[int]], window: int
) -> None:
    """AND/ALL products with conditions, unrolled and determinized lazily (UNLESS: runs)."""
    query = replace(case[0], within=ast.EventsWindow(window))
    compiled = compile_case(query, windowed=True)
    assert compiled.plan.srt is not None
    expected = ("runs",) if compiled.plan.srt.monitors else ("windowed", "pairs")
    assert compiled.register_runtime in expected
    check_against_oracle((query, case[1], case[2]), aim_at=[], windowed=True)


@aimed()
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))  # 200 on shorter streams
@given(windowed_cases(), st.integers(1, 6), st.sampled_from((0.0, 2.0)))
def test_windowed_runtime_cache_restarts_and_switch_to_runs(
    case: tuple[ast.Query, list[dict[str, Any]], list[int]], every: int, miss_limit: float
) -> None:
    """The subset cache starting over every few transitions, and the hand-over to runs
    (WindowedEngine._to_runs) after a few events, change nothing."""
    saved = (window_runtime.CACHE_LIMIT, window_runtime.WARM_UP, window_runtime.PERIOD,
             window_runtime.MISS_LIMIT)
    window_runtime.CACHE_LIMIT = every
    window_runtime.WARM_UP, window_runtime.PERIOD = every, every
    window_runtime.MISS_LIMIT = miss_limit  # 0: switch at the first measurement; 2: never
    try:
        check_against_oracle(case, aim_at=[], windowed=True)
    finally:
        (window_runtime.CACHE_LIMIT, window_runtime.WARM_UP, window_runtime.PERIOD,
         window_runtime.MISS_LIMIT) = saved


def _stock_rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"type": rng.choice(("BUY", "SELL")), "name": rng.choice("ABC"), "price": rng.randint(0, 60)}
        for _ in range(n)
    ]


def test_switch_to_runs_mid_stream_keeps_the_output() -> None:
    """Rising prices per name: windowed, switched to runs after 300 events, and runs agree."""
    query = (
        "SELECT * WHERE SELL as s ; (BUY OR SELL):+ as t FILTER s[price > 40] AND "
        "t[price > prev(t).price AND price > s.price] PARTITION BY [name] WITHIN 12 EVENTS"
    )
    table = pa.Table.from_pylist(_stock_rows(3000, 5))

    def run(runtime: str) -> tuple[list[tuple[int, int, tuple[int, ...]]], Any]:
        q = kleene.compile(query).tuned(register_runtime=runtime)
        got = [(m.start, m.end, m.positions) for m in q.matches(table.to_batches(max_chunksize=500))]
        return sorted(got, key=lambda m: (m[1], m)), q.last_session.engine  # order within an end may differ

    reference, _ = run("runs")
    assert len(reference) > 50
    windowed, engine = run("windowed")
    assert not engine.on_runs and windowed == reference
    saved = window_runtime.WARM_UP, window_runtime.PERIOD, window_runtime.MISS_LIMIT
    window_runtime.WARM_UP, window_runtime.PERIOD, window_runtime.MISS_LIMIT = 100, 200, 0.0
    try:
        switched, engine = run("windowed")
    finally:
        window_runtime.WARM_UP, window_runtime.PERIOD, window_runtime.MISS_LIMIT = saved
    assert engine.on_runs and engine.switched_at == 300
    assert switched == reference


# ------------------------------------- the unrolled and determinized automata


@st.composite
def small_windowed_queries(
    draw: st.DrawFn,
) -> tuple[ast.Query, list[dict[str, Any]], list[int]]:
    """All-matches queries (no partition, consumption, limit or selection) under 0-3 events."""
    query, events, times = draw(condition_cases(max_size=8))
    query = replace(
        query, select=ast.Select("ALL", query.select.items), partition_by=(),
        within=ast.EventsWindow(draw(st.integers(0, 3))), consume="NONE", limit=None,
    )
    return query, events, times


@aimed()
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(small_windowed_queries())
def test_unrolled_sra_runs_equal_the_oracle(
    case: tuple[ast.Query, list[dict[str, Any]], list[int]],
) -> None:
    """The runs of unroll(srt, n + 1), started at every event, give the oracle's matches."""
    query, events, times = case
    assert isinstance(query.within, ast.EventsWindow)

    expected = oracle(case)
    if expected is None:
        return  # counted
    items = query.select.items
    projection = None if items is None else frozenset(i.var for i in items)
    srt = compile_srt(evaluated_form(query.where), projection)
    sra = unroll(srt, query.within.count + 1)
    assert sra.acyclic
    syms = symbols(srt, tuple(events))
    got = set()
    for start in range(len(syms)):
        for end in range(start, min(len(syms), start + sra.num_states)):
            for run in run_sra(sra, syms[start : end + 1]):
                if run.accepting:
                    got.add((start, end, tuple(sorted(start + i for i in run.match))))
    assert got == expected


@aimed()
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(small_windowed_queries())
def test_determinized_sra_recognizes_what_the_unrolled_sra_does(
    case: tuple[ast.Query, list[dict[str, Any]], list[int]],
) -> None:
    """T9's language check on compiled queries: determinize(unroll(...)) vs the unrolled runs."""
    query, events, _ = case
    assert isinstance(query.within, ast.EventsWindow)

    srt = compile_srt(evaluated_form(query.where), None)
    sra = unroll(srt, min(query.within.count + 1, 3))
    try:
        dsra = determinize(sra, max_conditions=8)
    except ValueError:
        skip_case("too many conditions for an eager construction")
        return
    assert dsra.is_deterministic()
    syms = symbols(srt, tuple(events))
    for start in range(len(syms)):
        for end in range(start + 1, min(len(syms), start + 3) + 1):
            word = syms[start:end]
            assert run_dsra(dsra, word).accepting == recognizes(run_sra(sra, word))
