"""The selection strategies' complexity promises, counted rather than timed (issue 18, item 5).

Every strategy (ALL, STRICT, NEXT, LAST, MAX) promises constant work per event in the data and
output-linear reading of what it selects.  Timings cannot check that on a shared machine;
counting can, exactly.  The same stream is fed one event per batch (lookahead off, so "after
each event" is exact) under windows of 10, 1,000 and 10,000 events, and per event we count,
outside the engine, on the structures it leaves:

* **runs touched**: the entries the strategy's evaluator steps at the next event (ALL, STRICT,
  LAST: the active DFA states; MAX: its classes and the automaton states it tracks for
  super-runs; NEXT: its groups' entries);
* **nodes created**: tECS nodes (ALL, STRICT, LAST, MAX) or chain nodes (NEXT) reachable from
  the evaluator that were not before (a node the engine made and dropped within one event is
  not seen, which only lowers the count; the bound is on what stays);
* **LAST's selection**: the tECS nodes its dynamic program evaluates at each end
  (``kleene.runtime.strategies.LAST_BELOW``, counted by wrapping it): the nodes made since the
  ends before, not the window;
* **MAX's gated enumeration**: the nodes the walk visits per unit of output (positions plus
  one per complex event), with :class:`Probe` of test_operation_counts.py.

Each count must stay under a bound that depends on the query's automaton only, at every window,
and its average must not grow with the window, while the number of starts inside the window
(the runs a naive evaluation would keep apart) grows about 1,000-fold: the test asserts that
growth too, so that a window that binds nothing cannot make it pass.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from test_operation_counts import VISITS_PER_UNIT, Probe, creation_bound

import kleene
from kleene import native
from kleene.runtime import strategies
from kleene.runtime.engine import Engine
from kleene.runtime.enumeration import enumerate_filtered, enumerate_node
from kleene.runtime.maximal import MaxEvaluator
from kleene.runtime.nxt import NxtEvaluator
from kleene.runtime.tecs import FILTER, OUTPUT, UNION, Node

STRATEGIES = ("ALL", "STRICT", "NEXT", "LAST", "MAX")
WINDOWS = (10, 1_000, 10_000)
LIMIT = 2
EVENTS = 12_000
"""Longer than the largest window, so that every window is full for a while."""

QUERY = (
    "SELECT {s} * FROM S WHERE A as a ; B+ as b ; C as c FILTER a[v > 2] AND c[v < 8] "
    "WITHIN {w} EVENTS LIMIT {limit}"
)
"""The benchmark's iteration pattern (``SELL as a; BUY+ as b; SELL as c`` with filters), on
types A-D: B+ makes ALL's output exponential (LIMIT 2 bounds what is read) and NEXT's and MAX's
matches as long as the window."""


def stream(n: int, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"type": rng.choice("ABCD"), "v": rng.randrange(10)} for _ in range(n)]


@dataclass
class Counts:
    touched: list[int] = field(default_factory=list)
    created: list[int] = field(default_factory=list)
    dp: list[int] = field(default_factory=list)
    """LAST: nodes its dynamic program evaluated, per end."""
    visits: int = 0
    units: int = 0
    outputs: int = 0
    starts: list[int] = field(default_factory=list)
    """Runs started (a: an A with v > 2) inside the window, per event: what the window holds."""
    bound_touched: int = 0
    bound_created: int = 0


def _reach(roots: list[Any], seen: set[int], keep: list[Any], chains: bool) -> int:
    """How many nodes below ``roots`` are new (tECS nodes, or NEXT's ``[pos, time, older]``)."""
    new = 0
    todo = list(roots)
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        new += 1
        if chains:
            todo.append(node[2])
        elif node[0] == OUTPUT:
            todo.append(node[3])
        elif node[0] == UNION:
            todo += (node[2], node[3])
    return new


def run(strategy: str, window: int, rows: list[dict[str, Any]]) -> Counts:
    """Feed ``rows`` one by one to the strategy's engine under ``window``, counting (module doc)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _run(strategy, window, rows, monkeypatch)


def _run(strategy: str, window: int, rows: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> Counts:
    q = kleene.compile(QUERY.format(s=strategy, w=window, limit=LIMIT)).tuned(lookahead=False)
    assert q.engine == "tecs"
    batch = pa.RecordBatch.from_pylist(rows)
    bits = q.plan.predicates.evaluate(batch)
    engine = q.plan.build_engine()
    assert isinstance(engine, Engine)
    counts = Counts()
    dp: list[int] = []

    def counted_last(root: Node, tau: int | float, memo: dict[int, Any]) -> Any:
        before = len(memo)
        value = inner(root, tau, memo)
        dp.append(len(memo) - before)
        return value

    inner = strategies.LAST_BELOW
    monkeypatch.setattr(strategies, "LAST_BELOW", counted_last)
    last_outputs: list[Node] = []
    max_step = MaxEvaluator.step

    def kept_step(self: MaxEvaluator, pos: int, time: int | float, bits: int, tau: int | float) -> list[Node]:
        last_outputs[:] = max_step(self, pos, time, bits, tau)
        return last_outputs[:]

    monkeypatch.setattr(MaxEvaluator, "step", kept_step)
    seen: set[int] = set()
    keep: list[Any] = []
    unions_seen: tuple[int, int] = (0, 0)
    started = np.cumsum([r["type"] == "A" and r["v"] > 2 for r in rows])
    for j in range(len(rows)):
        counts.starts.append(int(started[j] - (started[j - window] if j >= window else 0)))
        out: list[tuple[int, int, tuple[int, ...], Hashable]] = []
        dp.clear()
        engine.run_batch(None, bits[j : j + 1], np.arange(j, j + 1), None, None, out)
        ev = engine.single
        if dp:
            counts.dp.append(sum(dp))
        counts.outputs += len(out)
        if isinstance(ev, NxtEvaluator):
            counts.touched.append(sum(len(g.chains) for g in ev.groups))
            counts.created.append(_reach([c for g in ev.groups for c in g.chains], seen, keep, True))
            continue
        if isinstance(ev, MaxEvaluator):
            counts.touched.append(len(ev.runs) + len(ev.plain) + len(ev.gates))
            roots = [n for ul in ev.runs.values() for n in ul]
        else:
            counts.touched.append(len(ev.table))
            roots = [n for ul in ev.table.values() for n in ul] + list(ev.merged.values())
        # The union nodes made at this event are at the end of ``unions`` (a sweep replaces
        # the list by the ones still in reach, all seen before).
        unions = ev.unions
        start = unions_seen[1] if unions_seen[0] == id(unions) else 0
        roots += unions[start:]
        unions_seen = (id(unions), len(unions))
        counts.created.append(_reach(roots, seen, keep, False))
        if isinstance(ev, MaxEvaluator) and out:
            _walk_again(last_outputs, j - window, j, out, counts)
    states = len(engine.dfa.subsets)
    if isinstance(engine.single, NxtEvaluator):
        rules = engine.single.rules
        counts.bound_touched = max(len(c) for c in rules.configs) * len(rules.configs) if rules.configs else 0
        # Per group and entry, at most one new chain node; one more for a new group.
        counts.bound_created = counts.bound_touched + 1
    elif isinstance(engine.single, MaxEvaluator):
        rules = engine.single.rules
        classes = len(rules.keys)
        # Its classes, the DFA states of every run (for super-runs), one gate per set P in use.
        counts.bound_touched = classes + states + len({g for g in rules.gates if g})
        counts.bound_created = creation_bound(classes + states)
    else:
        counts.bound_touched = states
        counts.bound_created = creation_bound(states)
    return counts


def _walk_again(outputs: list[Node], tau: int, end: int, out: list[Any], counts: Counts) -> None:
    """Walk the nodes MAX output at ``end`` again through a :class:`Probe`, counting visits.

    The same walks as the engine's (``enumerate_filtered`` for a gated class, ``enumerate_node``
    otherwise), with the same LIMIT: what they find must be the engine's output.
    """
    tally = [0]
    again: list[Any] = []
    for node in outputs:
        room = LIMIT - len(again)
        if room <= 0:
            break
        if node[0] == FILTER:
            _, top, inner, late, hi = node
            again += enumerate_filtered((FILTER, top, Probe(inner, tally), late, hi), tau, room, end)
        else:
            enumerate_node(Probe(node, tally), tau, again, room, end)
    assert sorted(again) == sorted(out)
    counts.visits += tally[0]
    counts.units += sum(len(f[2]) + 1 for f in out)


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return stream(EVENTS)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_work_per_event_does_not_grow_with_the_window(strategy: str, rows: list[dict[str, Any]]) -> None:
    results = {w: run(strategy, w, rows) for w in WINDOWS}
    for w, c in results.items():
        print(
            f"{strategy} w={w}: runs touched max {max(c.touched)} mean {np.mean(c.touched):.2f} "
            f"(bound {c.bound_touched}); nodes created max {max(c.created)} mean "
            f"{np.mean(c.created):.2f} (bound {c.bound_created}); outputs {c.outputs}"
            + (f"; LAST's selection: max {max(c.dp)} mean {np.mean(c.dp):.2f} nodes per end" if c.dp else "")
        )
        assert c.outputs > 0
        assert max(c.touched) <= c.bound_touched
        assert max(c.created) <= c.bound_created
    small, large = results[WINDOWS[0]], results[WINDOWS[-1]]
    assert np.mean(large.starts) >= 500 * np.mean(small.starts)  # the window does bind
    # From 10 to 10,000 events of window (1,000x) the averages stay within a small factor: a
    # wider window keeps runs alive in more states, nothing more.
    assert np.mean(large.touched) <= 3 * np.mean(small.touched) + 2
    assert np.mean(large.created) <= 3 * np.mean(small.created) + 2
    if strategy == "MAX":
        for w, c in results.items():
            print(f"MAX w={w}: {c.visits} nodes visited for {c.units} units of output")
            assert c.visits <= VISITS_PER_UNIT * c.units
    if strategy == "LAST":
        assert max(large.dp) <= 4 * max(results[1_000].dp) + 8
        assert np.mean(large.dp) <= 3 * np.mean(small.dp) + 4


_last = native.load("kleene.runtime._last")


@pytest.mark.skipif(_last is None, reason="the compiled twins are not built here")
@pytest.mark.parametrize("window", [5, 40])
def test_last_twin_selects_what_the_python_original_selects(window: int, rows: list[dict[str, Any]]) -> None:
    """LAST with ``kleene.runtime._last`` and with the pure-Python ``_last_below``: the same
    complex events, on a stream where LAST chooses (it keeps fewer than ALL)."""
    batch = pa.RecordBatch.from_pylist(rows[:3_000])
    text = QUERY.format(s="LAST", w=window, limit=LIMIT)
    found = {}
    for name, below in (("python", strategies.PURE_LAST_BELOW), ("compiled", _last.last_below)):  # type: ignore[union-attr]
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(strategies, "LAST_BELOW", below)
            session = kleene.compile(text).session()
            found[name] = [m.positions for m in session.feed(batch, with_events=False)]  # type: ignore[union-attr]
    every = kleene.compile(QUERY.format(s="ALL", w=window, limit=1000)).session().feed(batch, with_events=False)
    assert found["python"] == found["compiled"]
    assert 0 < len(found["python"]) < len(every)
