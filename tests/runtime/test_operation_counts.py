"""CORE's two complexity promises, counted: constant update per event, output-linear enumeration.

CORE (§4, Theorems 2-3) promises that, under data complexity, each event costs
a constant amount of work to fold into the tECS, whatever the stream length,
the window or the number of partial matches, and that the complex events
ending at an event are enumerated in time linear in their total size.  Timings
cannot check that on a shared machine; counting operations can, exactly and
on any machine:

* **nodes created per event**: after each event the tECS nodes reachable from
  the evaluators' union-lists and last outputs that were not reachable before
  are counted (the engine keeps no other reference to a node it creates).  The
  count must stay under a bound computed from the determinized automaton
  alone (:func:`creation_bound`) while the stream *and* the window grow 10x
  and 100x, and its average must not grow;
* **nodes visited per output**: the nodes the engine enumerated at each event
  are walked again by kleene's own enumeration (``enumerate_node``, the
  pure-Python reference of the compiled walk, whose output must equal the
  engine's), through a view that counts each read of a node's kind, i.e. each
  node the walk visits.  Visits per event must stay under ``VISITS_PER_UNIT``
  times the output's size (positions plus one per complex event).

The engine runs as in production (compiled twins when built): nothing is
added to it; the counting happens outside, on the structures it leaves.
Every event is fed as a batch of its own (with the lookahead off, so that no
event waits for the next batch), which makes "after each event" exact.
Results of the last run are in docs/reliability.md.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import kleene
from kleene.runtime.engine import Engine
from kleene.runtime.enumeration import enumerate_node
from kleene.runtime.evaluator import Evaluator
from kleene.runtime.tecs import OUTPUT, UNION, Node

SEC = 10**9

VISITS_PER_UNIT = 4
"""A tECS is 3-bounded (CORE Theorem 2): a walk meets at most 3 union nodes in a row, so
reaching each position of a complex event, and its bottom, costs at most 4 node visits."""


def creation_bound(states: int) -> int:
    """The most tECS nodes Algorithm 1 can create for one event, with ``states`` DFA states.

    Per event (kleene.runtime.evaluator.Evaluator.step): a bottom node and an output node for
    a run starting here; per active state, one output node, one merge of its union-list (at
    most ``states`` - 1 union nodes: a union-list holds at most one node per maximum start,
    and each state's list at most ``states`` entries) and two inserts (at most 3 union nodes
    each); per final state one more merge.  Depends on the query (its automaton) only.
    """
    return 2 + states * (1 + (states - 1) + 2 * 3) + states * (states - 1)


@dataclass
class Counts:
    created: list[int]
    """tECS nodes created at each event."""
    states: int
    """States of the determinized automaton at the end (the query's, never more than 2^|CEA|)."""
    visits: int = 0
    units: int = 0
    """Positions plus complex events enumerated (the output's size)."""
    worst_ratio: float = 0.0
    """The largest visits/units of one event."""
    outputs: int = 0


class Probe:
    """A read-only view of a tECS node that counts the walk's visits (reads of index 0)."""

    __slots__ = ("node", "tally")

    def __init__(self, node: Node, tally: list[int]) -> None:
        self.node = node
        self.tally = tally

    def __getitem__(self, i: int) -> Any:
        if i == 0:
            self.tally[0] += 1
        value = self.node[i]
        if i >= 2 and isinstance(value, tuple | list):  # a child node (index 2 of a bottom or
            return Probe(value, self.tally)  # an output node is a position, an int)
        return value


def stream(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` events of types A-D, a partition key ``k`` among 4, irregular times (0-2 s apart)."""
    rng = random.Random(seed)
    time = 0
    rows = []
    for _ in range(n):
        time += rng.randrange(0, 3) * SEC
        rows.append({"type": rng.choice("ABCD"), "k": rng.randrange(4), "ts": time})
    return rows


def reachable_new(roots: list[Node], seen: set[int], keep: list[Node]) -> int:
    """How many nodes below ``roots`` are not in ``seen`` (added to it; ``keep`` holds them so
    that their ids are never reused)."""
    new = 0
    todo = list(roots)
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        new += 1
        if node[0] == OUTPUT:
            todo.append(node[3])
        elif node[0] == UNION:
            todo += (node[2], node[3])
    return new


def run(text: str, n: int, *, seed: int = 7, enumerate_again: bool = False) -> Counts:
    """Feed ``n`` events one by one to the query's tECS engine, counting (see module doc)."""
    q = kleene.compile(text, time_column="ts", time_unit="ns").tuned(lookahead=False)
    assert q.engine == "tecs"
    rows = stream(n, seed)
    batch = pa.RecordBatch.from_pylist(rows)
    bits = q.plan.predicates.evaluate(batch)
    engine = q.plan.build_engine()
    assert isinstance(engine, Engine)
    settings = engine.settings
    times = np.array([r["ts"] for r in rows], dtype=np.int64) if "SECONDS" in text else None
    partitioned = settings.partitioned
    counts = Counts([], 0)
    seen: set[int] = set()
    keep: list[Node] = []
    for j in range(n):
        out: list[tuple[int, int, tuple[int, ...], Hashable]] = []
        steps = engine.steps
        keys = [[rows[j]["k"]]] if partitioned else None
        at = slice(j, j + 1)
        engine.run_batch(None, bits[at], np.arange(j, j + 1), None if times is None else times[at], keys, out)
        evaluators: list[Evaluator] = [engine.single, *engine.partitions.values()]  # type: ignore[list-item]
        roots = [node for ev in evaluators for ul in ev.table.values() for node in ul]
        roots += [node for ev in evaluators for node in ev.merged.values()]
        counts.created.append(reachable_new(roots, seen, keep))
        if enumerate_again and out and engine.steps > steps:
            ev = engine.partitions[(rows[j]["k"],)] if partitioned else engine.single
            time = j if times is None else int(times[j])
            tau = -(1 << 62) if settings.window is None else time - settings.window
            tally = [0]
            again: list[Any] = []
            for node in ev.merged.values():  # the nodes the engine enumerated at this event
                enumerate_node(Probe(node, tally), tau, again, 1 << 62, j, out[0][3])
            assert sorted(again) == sorted(out)  # the walk counted is the engine's output
            units = sum(len(f[2]) + 1 for f in out)
            counts.visits += tally[0]
            counts.units += units
            counts.outputs += len(out)
            counts.worst_ratio = max(counts.worst_ratio, tally[0] / units)
    counts.states = len(engine.dfa.subsets)
    return counts


QUERIES = {
    "sequence": "SELECT * FROM S WHERE A ; B ; C",
    "iteration": "SELECT * FROM S WHERE A ; B+ ; C",
    "iterated_or": "SELECT * FROM S WHERE (A OR B)+ ; C",
    "partitioned": "SELECT * FROM S WHERE A ; B+ ; C PARTITION BY [k]",
    "duration_window": "SELECT * FROM S WHERE A ; (B OR D)+ ; C",
}

SCALES = ((200, 8), (2_000, 80), (20_000, 800))
"""(events, window): the stream and the window grow 10x and 100x together."""


def windowed(name: str, window: int, limit: int | None) -> str:
    text = QUERIES[name]
    unit = "SECONDS" if name == "duration_window" else "EVENTS"
    return f"{text} WITHIN {window} {unit}" + ("" if limit is None else f" LIMIT {limit}")


@pytest.mark.parametrize("name", list(QUERIES))
def test_nodes_created_per_event_do_not_grow_with_stream_or_window(name: str) -> None:
    """LIMIT 2 keeps the enumeration small at 100x (the update does not depend on it)."""
    results = [run(windowed(name, w, 2), n) for n, w in SCALES]
    for (n, w), c in zip(SCALES, results, strict=True):
        bound = creation_bound(c.states)
        print(f"{name} n={n} window={w}: max {max(c.created)}, mean {np.mean(c.created):.3f} "
              f"nodes per event; {c.states} DFA states, bound {bound}")
        assert max(c.created) <= bound
    # From 1x to 10x the average rises while a wider window keeps runs alive in more states;
    # from there on it is flat, and so is the maximum.
    means = [float(np.mean(c.created)) for c in results]
    maxima = [max(c.created) for c in results]
    assert means[2] <= 1.1 * means[1], means
    assert maxima[2] <= maxima[1], maxima


@pytest.mark.parametrize("name", list(QUERIES))
def test_nodes_visited_per_output_are_linear_in_the_output(name: str) -> None:
    """The stream grows 10x and 100x under a fixed window: the visits per unit of output stay
    under the bound at every event, and their overall ratio does not grow."""
    window = 24 if name == "partitioned" else 6  # a partition holds a quarter of the events
    results = [run(windowed(name, window, None), n, enumerate_again=True) for n in (100, 1_000, 10_000)]
    ratios = []
    for c in results:
        assert c.outputs > 0
        ratios.append(c.visits / c.units)
        print(f"{name}: {c.outputs} complex events, {c.visits} visits for {c.units} units "
              f"(overall {c.visits / c.units:.3f}, worst event {c.worst_ratio:.3f})")
        assert c.worst_ratio <= VISITS_PER_UNIT
    assert ratios[2] <= 1.2 * ratios[0], ratios


def test_visits_grow_with_the_output_not_with_the_window() -> None:
    """A wider window gives more complex events per end: the visits follow the output."""
    results = [run(f"SELECT * FROM S WHERE A ; B WITHIN {w} EVENTS", 2_000, enumerate_again=True)
               for w in (8, 80, 800)]
    outputs = [c.outputs for c in results]
    assert outputs[0] * 50 < outputs[2]  # the window matters to the output
    for c in results:
        print(f"A ; B: {c.outputs} complex events, {c.visits} visits, worst {c.worst_ratio:.3f}")
        assert c.worst_ratio <= VISITS_PER_UNIT
        assert max(c.created) <= creation_bound(c.states)


def test_the_counters_see_a_walk_that_is_not_output_linear() -> None:
    """The visit counter is not blind.  A spine of 99 union nodes, each a left child of the
    next, breaks CORE's 3-boundedness (a safe union's left child is not a union): its one
    complex event (the bottom in the window; every right child starts before it and is
    pruned) costs 101 visits, far over the bound, and the ratio says so."""
    from kleene.runtime.tecs import BOTTOM

    # A left spine of unions over old bottoms: only the last bottom is in the window.
    node: Node = (BOTTOM, 100, 100)
    for t in range(99, 0, -1):
        node = [UNION, 100, node, (BOTTOM, t, t)]
    tally = [0]
    found: list[Any] = []
    enumerate_node(Probe(node, tally), 100, found, 1 << 62, 100)
    assert found == [(100, 100, (), None)]
    assert tally[0] == 1 + 99 + 1  # the FILTER check of the root, the spine and its bottom
    assert tally[0] / 1 > VISITS_PER_UNIT  # one unit of output (no position, one complex event)
