"""The compiled twin of the engine's per-event loop (kleene.runtime._loop) against Engine.loop.

Random queries (every strategy, PARTITION BY, CONSUME BY, LIMIT, windows of events and of time)
over random streams cut into random batches: both loops must give the same complex events in
the same order, on the readable path (a list) and on the bulk path (Columns), and leave the
engine in the same state (steps, tau, partitions and their active states, the per-state counts).
Then, at the engine's level, what the generators do not make: float times, sparse candidates,
keys with nulls, and the configurations the twin declines (the Python loop then runs).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import SUPPORTED_CEL, Case, compile_case, pieces, prepared
from generators import cases
from kleene import native
from kleene.runtime import engine as engine_module
from kleene.runtime.engine import Engine
from kleene.runtime.enumeration import Columns

_loop = native.load("kleene.runtime._loop")
needs_twin = pytest.mark.skipif(_loop is None, reason="the compiled loop is not built here")


def state(engine: Any) -> tuple[Any, ...]:
    """What the loop leaves behind in an engine (its partitions in their order)."""
    def ev_state(ev: Any) -> tuple[Any, ...]:
        return (type(ev).__name__, list(ev.table.keys()), ev.active_key)

    return (
        engine.steps,
        engine.tau,
        [(k, ev_state(ev)) for k, ev in engine.partitions.items()],
        ev_state(engine.single),
        dict(engine._counts),
        engine._global,
        engine._sweep_at,
    )


@contextmanager
def loop(twin: bool) -> Iterator[list[bool]]:
    """The engine's loop: the twin (each call's answer, whether it took the call, is recorded in
    the list yielded) or, with ``twin`` False, the Python loop only."""
    saved = engine_module.LOOP
    took: list[bool] = []

    def recorded(*args: Any) -> bool:
        took.append(bool(saved(*args)))  # type: ignore[misc]
        return took[-1]

    engine_module.LOOP = recorded if twin else None
    try:
        yield took
    finally:
        engine_module.LOOP = saved


def run(query: kleene.Query, batches: list[Any], twin: bool, bulk: bool) -> tuple[Any, Any]:
    """The complex events of ``query`` (a list, or the bulk path's columns) and the engine's state."""
    with loop(twin) as took:
        if bulk:
            got: Any = [
                (b.start.tolist(), b.end.tolist(), [list(p) for p in b.positions_list()], b.partition)
                for b in query.match_batches(batches)
            ]
        else:
            got = list(query.matches(batches))
    engine = query.last_session.engine
    if twin and isinstance(engine, Engine) and engine.steps:
        assert took and all(took) == (engine.projector is None)  # the twin took what it covers
    return got, state(engine)


@needs_twin
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL), st.lists(st.integers(0, 40), max_size=3), st.booleans())
def test_loop_twin_gives_the_same_complex_events_and_state(case: Case, cuts: list[int], bulk: bool) -> None:
    ast_query, table, _ = prepared(case)
    query = compile_case(ast_query)
    batches = pieces(table, cuts)
    compiled = run(query, batches, twin=True, bulk=bulk)
    pure = run(query, batches, twin=False, bulk=bulk)
    assert compiled == pure


@needs_twin
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL), st.lists(st.integers(0, 40), max_size=3))
def test_loop_twin_without_skipping_or_lookahead(case: Case, cuts: list[int]) -> None:
    """Every event stepped (no visit lists), and the loop over all of a batch (no candidates)."""
    ast_query, table, _ = prepared(case)
    batches = pieces(table, cuts)
    for tuning in ({"skip_inert": False}, {"lookahead": False}):
        query = compile_case(ast_query, **tuning)
        assert run(query, batches, twin=True, bulk=True) == run(query, batches, twin=False, bulk=True)


def engine_of(text: str, **options: Any) -> tuple[Engine, Any]:
    """A fresh engine for ``text`` and the predicates that make its bit vectors."""
    session = kleene.compile(text, **options).session()
    assert isinstance(session.engine, Engine)
    return session.engine, session.plan.predicates


STOCK = "SELECT * FROM S WHERE (B:+) as b FILTER b[x > 2] PARTITION BY [k] WITHIN 5 EVENTS"


def random_batches(seed: int, *, times: str | None, keys: str) -> list[dict[str, Any]]:
    """Events A, B, C with x in 0..4 and keys in 0..4 (4 is null with ``keys="nulls"``), as the
    engine takes them; ``keys="tuple"``: key columns that are not lists."""
    rng = np.random.default_rng(seed)
    out, pos, t = [], 0, 0.0
    for size in rng.integers(1, 400, 8).tolist():
        k = rng.integers(0, 5, size).tolist()
        rows = pa.RecordBatch.from_pydict({
            "type": rng.choice(["A", "B", "B", "C"], size).tolist(),
            "x": rng.integers(0, 5, size).tolist(),
            "k": [None if v == 4 and keys == "nulls" else v for v in k],
        })
        positions = np.arange(pos, pos + size, dtype=np.int64)
        pos += size
        batch: dict[str, Any] = {"rows": rows, "positions": positions, "times": None}
        if times == "float":
            batch["times"] = t + np.cumsum(rng.uniform(0.0, 1.5, size))
            t = float(batch["times"][-1])
        elif times == "int":
            batch["times"] = positions * 3
        column = rows.column("k").to_pylist()
        batch["keys"] = [tuple(column) if keys == "tuple" else column]
        out.append(batch)
    return out


def feed(window: float, batches: list[dict[str, Any]], twin: bool) -> tuple[Any, list[bool], int]:
    """The batches given straight to Engine.run_batch, into a list and into columns: the complex
    events, the engines' states, whether the twin took each call, and the steps.  The window is
    ``window`` units of the times given (positions when None)."""
    got = []
    with loop(twin) as took:
        for out in ([], Columns()):
            engine, predicates = engine_of(STOCK)
            engine.settings = replace(engine.settings, window=window)
            for b in batches:
                bits = predicates.evaluate(b["rows"])
                engine.run_batch(b["rows"], bits, b["positions"], b["times"], b["keys"], out)
            if isinstance(out, Columns):
                out = [out.starts.tolist(), out.lengths.tolist(), out.flat.tolist(), out.run_ends,
                       out.run_keys, out.run_counts]
            got.append((out, state(engine)))
    return got, took, engine.steps


@needs_twin
@pytest.mark.parametrize("times,window", [("float", 3), ("int", 9), (None, 7), ("int", 7.5), ("float", 2.5)])
@pytest.mark.parametrize("keys", ["plain", "nulls", "tuple"])
@pytest.mark.parametrize("seed", [0, 1])
def test_loop_twin_at_the_engine(times: str | None, window: float, keys: str, seed: int) -> None:
    """Float and int times and windows, nulls in keys, keys that are not lists (the twin declines
    them)."""
    batches = random_batches(seed, times=times, keys=keys)
    compiled, ran, steps = feed(window, batches, True)
    pure, _, pure_steps = feed(window, batches, False)
    assert compiled == pure
    assert steps == pure_steps > 0
    assert len(compiled[0][0]) > 0
    # Key columns that are not lists are declined (the lookahead's tail holds lists: taken).
    assert ran and (not all(ran)) == (keys == "tuple")


@needs_twin
def test_loop_twin_declines_what_it_does_not_take() -> None:
    """A projector, positions that are not int64, bad candidates: False, and nothing done."""
    engine, _ = engine_of("SELECT * FROM S WHERE A as a; B as b WITHIN 5 EVENTS")
    plan = engine_module.Visits(engine.dfa, np.zeros(3, dtype=np.uint64), True)
    out: list[Any] = []
    pos = np.arange(3, dtype=np.int64)
    assert not _loop.steps(engine, plan, pos.astype(np.int32), None, None, None, out)  # type: ignore[union-attr]
    assert not _loop.steps(engine, plan, pos, pos.astype(np.int16), None, None, out)  # type: ignore[union-attr]
    assert not _loop.steps(engine, plan, pos, None, None, np.array([0, 1, 7]), out)  # type: ignore[union-attr]
    assert not _loop.steps(engine, plan, pos, None, [[1, 2]], None, out)  # type: ignore[union-attr]
    assert engine.steps == 0 and out == []
    projected, _ = engine_of("SELECT LAST a FROM S WHERE A as a; B as b WITHIN 5 EVENTS")
    if projected.projector is not None:
        assert not _loop.steps(projected, plan, pos, None, None, None, out)  # type: ignore[union-attr]
    assert _loop.steps(engine, plan, pos, None, None, None, out)  # type: ignore[union-attr]


def test_loop_switch() -> None:
    """The twin is what the engine uses when built, and nothing when pure Python is asked for."""
    assert (engine_module.LOOP is None) == (_loop is None)
    if _loop is not None:
        assert engine_module.LOOP is _loop.steps
