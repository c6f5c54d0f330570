"""The MATCH_RECOGNIZE engine's own properties: the compiled fast-path loop against its
pure-Python twin, linear work (counted, not timed), the automaton's shape, and the
merging of threads on the general path.  Equality with the reference is in
tests/differential/test_match_recognize_engine*.py.
"""

from __future__ import annotations

import pickle
import shutil
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kleene import native
from kleene.automata.row_pattern import CHECK, MARK, MATCH, SPLIT, VAR, compile_pattern
from kleene.language.match_recognize.checks import pattern_variables
from kleene.language.match_recognize.parser import parse
from kleene.runtime.match_recognize import evaluate
from kleene.runtime.match_recognize.scan import MAX_REGISTERS, MAX_SEEN, scan
from kleene.runtime.match_recognize.threads import Stats
from match_recognize_generators import patterns

_scan = native.load("kleene.runtime._mr_scan")


def run(rows: Any, query: str) -> tuple[list[dict[str, Any]], Stats]:
    stats = Stats()
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows)
    return evaluate(parse(query), table, stats).to_pylist(), stats


def test_the_fast_path_twin_is_built() -> None:
    """Where a C++ compiler is, setup.py builds it (the 1 M rows/s figures depend on it)."""
    if native.PURE_PYTHON or not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("pure Python asked for, or no C++ compiler here")
    assert _scan is not None


@pytest.mark.skipif(_scan is None, reason="the compiled twin is not built here")
@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(patterns(), st.lists(st.lists(st.booleans(), min_size=12, max_size=12), min_size=3,
                            max_size=3), st.integers(0, 3), st.integers(0, 7))
def test_the_compiled_loop_equals_its_twin(pattern: Any, bits: list[list[bool]], skip: int,
                                           mask: int) -> None:
    labels = pattern_variables(pattern)
    program = compile_pattern(pattern, labels)
    assume(program.registers <= MAX_REGISTERS and len(program) << program.registers <= MAX_SEEN)
    truth = bits[: len(labels)]
    n = len(truth[0])
    twin_steps, steps = [0, 0], [0, 0]
    expected = scan(program.ops, program.a, program.b, program.registers, truth, n, skip, mask,
                    twin_steps)
    assert _scan is not None
    got = _scan.scan(program.ops, program.a, program.b, program.registers,
                     np.array(truth, dtype=np.uint8).reshape(len(truth), n), n, skip, mask,
                     steps)
    assert [list(x) if isinstance(x, list) else x for x in got] == list(expected)
    assert steps == twin_steps


def test_the_automaton_lists_greedy_before_reluctant_choices() -> None:
    greedy = compile_pattern(parse("MEASURES COUNT(*) AS n PATTERN (A*)").pattern, ["A"])
    reluctant = compile_pattern(parse("MEASURES COUNT(*) AS n PATTERN (A*?)").pattern, ["A"])
    assert greedy.ops == reluctant.ops == (SPLIT, MARK, VAR, CHECK, 0 + 2, MATCH)
    assert greedy.a[0] == 1 and greedy.b[0] == 5  # one more iteration first
    assert reluctant.a[0] == 5 and reluctant.b[0] == 1  # stop first
    bounded = compile_pattern(parse("MEASURES COUNT(*) AS n PATTERN (A{2,4})").pattern, ["A"])
    assert bounded.ops.count(VAR) == 4 and bounded.registers == 4


REPEATED = "ORDER BY t MEASURES COUNT(*) AS n {rows} PATTERN ({pattern}) DEFINE {define}"


@pytest.mark.parametrize("pattern, define, rows", [
    ("A+ B+", "A AS v = 1, B AS v = 1", "ONE ROW PER MATCH"),
    ("A+ B+", "A AS v = 1, B AS v = 1", "ALL ROWS PER MATCH"),
    ("A+? B+?", "A AS v = 1, B AS v = 1", "ONE ROW PER MATCH"),
    ("A+ B+", "A AS v = PREV(v), B AS SUM(B.v) > 0", "ONE ROW PER MATCH"),
    ("A+ B+", "A AS LAST(A.v, 1) IS NULL OR v >= LAST(A.v, 1), B AS v = 1", "ONE ROW PER MATCH"),
    ("A+ C", "A AS v = 1, C AS v = 2", "ONE ROW PER MATCH"),  # every search fails
    ("(A | B)+ C", "A AS v = 1, B AS v = 1, C AS v = 2", "ONE ROW PER MATCH"),
])
def test_work_per_row_does_not_grow_with_the_rows(pattern: str, define: str, rows: str) -> None:
    """Trino's 49 s case and its relatives: thread steps per row and threads alive at once
    are the same at 1,000 and 10,000 rows of repeated values (a backtracking matcher does
    quadratic or exponential work here)."""
    query = REPEATED.format(pattern=pattern, define=define, rows=rows)
    per_row = []
    for n in (1_000, 10_000):
        table = pa.table({"t": np.arange(n), "v": np.ones(n, dtype=np.int64)})
        _, stats = run(table, query)
        per_row.append((stats.steps / n, stats.max_threads))
    (small, threads_small), (large, threads_large) = per_row
    assert large <= small * 1.05 + 0.01, per_row
    assert threads_large == threads_small <= 4, per_row


def test_greedy_a_plus_b_plus_over_repeated_values_is_one_match() -> None:
    out, stats = run([{"t": i, "v": 1} for i in range(5_000)],
                     REPEATED.format(pattern="A+ B+", define="A AS v = 1, B AS v = 1",
                                     rows="ONE ROW PER MATCH"))
    assert out == [{"n": 5_000}]
    assert stats.steps <= 3 * 5_000


def test_threads_with_equal_summaries_merge_and_different_ones_do_not() -> None:
    """(A | B)+ with a running SUM: two labellings with equal sums merge (one thread per
    state and sum), so the thread count is bounded by the distinct sums, not 2**rows."""
    rows = [{"t": i, "v": 1} for i in range(40)]
    out, stats = run(rows, "ORDER BY t MEASURES COUNT(*) AS n PATTERN ((A | B)+ C) "
                           "DEFINE A AS SUM(A.v) >= 0, B AS SUM(B.v) >= 0, C AS v = 2")
    assert out == []
    assert stats.max_threads <= 3 * 41  # a thread per (VAR state, SUM(A.v)), never 2**40


def test_a_define_reading_labels_through_prev_classifier_keeps_paths_apart() -> None:
    rows = [{"t": i, "v": i % 3} for i in range(9)]
    query = ("ORDER BY t MEASURES ARRAY_AGG(CLASSIFIER()) AS c PATTERN ((A | B)+) "
             "DEFINE A AS PREV(CLASSIFIER()) IS NULL OR PREV(CLASSIFIER()) = 'B', "
             "B AS PREV(CLASSIFIER()) = 'A'")
    out, _ = run(rows, query)
    assert out == [{"c": ["A", "B", "A", "B", "A", "B", "A", "B", "A"]}]


def test_the_summary_of_a_thread_pickles() -> None:
    """Thread state is plain tuples (for a state store later)."""
    from kleene.runtime.match_recognize.summary import Layout

    layout = Layout({"A": frozenset("A")})
    layout.add([parse("MEASURES SUM(A.v) AS s PATTERN (A+)").measures[0].expr])
    assert pickle.loads(pickle.dumps(layout.empty())) == layout.empty()
