"""Short, deterministic fuzz runs (fixed seeds): the query parser and compiler, and the readers.

Every generated or mutated query must compile or raise kleene's QueryError with a line, a
column and a caret; every damaged file must give a result or kleene's own error (exit 2 or 3
with a ``kleene`` message from ``kleene run``), never another exception, a traceback, a
crash or a hang; there is no allow-list.  Longer runs: ``tests/fuzz/run.py``, results in
docs/reliability.md (``## Fuzzing``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_harness import Case, Outcome, Tally, Worker, judge_cli
from fuzz_loops import fuzz_files, fuzz_queries

MEMORY = 2_000_000_000


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    w = Worker(timeout=10, memory=MEMORY)
    yield w
    w.close()


def test_query_fuzzing(worker: Worker) -> None:
    tally = fuzz_queries(seed=16, cases=1000, worker=worker, cli_share=0.01)
    print(tally.summary())
    assert tally.new_failures == 0, tally.summary()
    # the run reaches both the compiler (and the engine) and the error paths
    ok = tally.cases["query ok"]
    assert ok >= 100 and tally.cases["query kleene"] >= 600, tally.summary()
    assert tally.cases["query-cli ok"] + tally.cases["query-cli kleene"] >= 5, tally.summary()


def test_file_fuzzing(worker: Worker, tmp_path: Path) -> None:
    tally = fuzz_files(seed=16, cases=60, folder=tmp_path, worker=worker, cli_share=0.2)
    print(tally.summary())
    assert tally.new_failures == 0, tally.summary()
    kinds = {k.split()[0] for k in tally.cases}
    assert kinds == {"api", "cli", "ipc"}, tally.summary()
    assert tally.cases["api ok"] + tally.cases["cli ok"] >= 3, tally.summary()


# ------------------------------------------- the harness notices what it must
def test_worker_sees_a_crash_a_hang_memory_and_a_stray_exception() -> None:
    w = Worker(timeout=1, memory=MEMORY)
    try:
        crash = w.ask({"op": "selftest", "do": "crash"})
        assert crash.status == "crash" and crash.returncode == -11
        assert w.ask({"op": "selftest", "do": "hang"}).status == "hang"  # 1 s, then 4 s
        grow = w.ask({"op": "selftest", "do": "grow"})
        assert grow.status == "exception" and grow.type == "MemoryError"
        stray = w.ask({"op": "selftest", "do": "raise"})
        assert stray.status == "exception" and stray.type == "ValueError"
        assert w.ask({"op": "compile", "text": "SELECT * WHERE A"}).status == "ok"  # restarted
        assert w.restarts >= 3  # the crash, the hang and its confirmation
    finally:
        w.close()


def test_worker_checks_the_shape_of_query_errors(worker: Worker) -> None:
    bad = worker.ask({"op": "compile", "text": "SELECT * WHERE (("})
    assert bad.status == "kleene" and bad.type == "QueryError"


def test_cli_judgement() -> None:
    assert judge_cli(0, "").status == "ok"
    assert judge_cli(3, "kleene: input error: bad (row 1)\n").status == "kleene"
    assert judge_cli(2, "kleene: query error: x (line 1, column 2)\n  ab\n   ^\n").status == "kleene"
    assert judge_cli(1, "kleene: error: something\n").status == "exception"  # 1 is not 2 or 3
    tb = "Traceback (most recent call last):\n  File \"x\", line 1\nValueError: boom\n"
    judged = judge_cli(1, tb)
    assert judged.status == "exception" and judged.type == "ValueError"
    assert judge_cli(3, "kleene: input error\n" + tb).status == "exception"
    assert judge_cli(-11, "").status == "crash"


def test_every_failure_counts() -> None:
    """No allow-list: a RecursionError, a crash and a stray exception are each a new failure."""
    query = Case("query", "query", ("mutation",), "SELECT * WHERE A")
    csv = Case("cli", "csv", ("flip_bits",), "x.csv")
    tally = Tally()
    tally.add(query, Outcome("exception", "RecursionError"))
    tally.add(csv, Outcome("crash", returncode=-11))
    tally.add(csv, Outcome("exception", "KeyError"))
    tally.add(csv, Outcome("kleene", returncode=3))
    assert tally.new_failures == 3
