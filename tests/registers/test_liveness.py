"""Registers no guard reads any more are dropped from merged runs (kleene.registers.liveness).

* **Which.** On the SRT paper's seq6 shape, ``a``'s register is dropped after ``c`` (its last
  reader) and nothing else; where every register is read at the end (seq3) nothing is dropped.
* **Same results, fewer runs.** With the drops, seq6's merged runs are one per ``d.price``
  after ``d`` instead of one per pair ``(a.price, d.price)``: the live runs stay under the
  distinct prices' bound at every window, while the same engine without the drops keeps the
  pairs (more than the bound); the listing and the count are the same both ways.  The merged
  engine's property tests (test_merged.py, test_count_merged.py) run through the drops too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import kleene
from kleene.registers import merged
from kleene.registers.liveness import dead_after

SEQ6 = (
    "SELECT * FROM S WHERE A as a; B as b; C as c; D as d; E as e; F as f "
    "FILTER c[price > a.price] AND f[price > d.price] WITHIN {w} EVENTS"
)
SEQ3 = "SELECT * FROM S WHERE A as a; B as b; C as c FILTER c[price > a.price] WITHIN 10 EVENTS"
PRICES = 10


def _srt(query: str) -> Any:
    return kleene.compile(query).tuned(aggregates=False).plan.srt


def test_a_is_dropped_after_its_last_reader() -> None:
    srt = _srt(SEQ6.format(w=100))
    a = srt.variable_registers["a"]
    drops = dead_after(srt)
    dropped = {v: set() for v in "abcdef"}
    for ts in srt.labelled:
        for t in ts:
            (v,) = set(t.variables) & set(dropped)
            dropped[v].update(drops.get(id(t), ()))
    # c reads a.price and no one after it; d's register is read by f, never dropped
    assert dropped == {"a": set(), "b": set(), "c": {a}, "d": set(), "e": set(), "f": set()}


def test_nothing_is_dropped_where_every_register_is_read_at_the_end() -> None:
    assert dead_after(_srt(SEQ3)) == {}


def _stream(n: int, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    kind = np.array(list("ABCDEFX"))[rng.choice(7, n, p=[0.1, 0.02, 0.1, 0.1, 0.02, 0.1, 0.56])]
    return pa.table({"type": kind, "price": rng.integers(0, PRICES, n)})


def _run(query: str, table: pa.Table, listed: bool = True) -> dict[str, int]:
    """Complex events listed (or -1) and counted, live runs at the end and runs tried."""
    compiled = kleene.compile(query, max_matches=1 << 200).tuned(
        aggregates=False, register_runtime="merged"
    )
    counted = compiled.count(table)
    engine = compiled.last_session.engine
    found = -1
    if listed:
        found = sum(len(b) for b in compiled.match_batches(table.to_batches(max_chunksize=500)))
    return {"found": found, "counted": counted, "live": engine.live, "touched": engine.touched}


def test_seq6_runs_merge_once_a_is_dead(monkeypatch: pytest.MonkeyPatch) -> None:
    """Live runs at the end: at most a price per state before ``d`` (``a.price``, 3 states) and
    one per ``d.price`` after it (2 states), while without the drops they are pairs."""
    table = _stream(4000)
    bound = 3 * PRICES + 2 * PRICES
    rows = {w: _run(SEQ6.format(w=w), table, listed=w <= 100) for w in (10, 100, 1000)}
    for w, row in rows.items():
        print(w, row)
        assert row["found"] in (-1, row["counted"])
        assert row["live"] <= bound
    monkeypatch.setattr(merged, "dead_after", lambda srt: {})
    for w in (100, 1000):
        without = _run(SEQ6.format(w=w), table, listed=w <= 100)
        print(f"without the drops, w={w}", without)
        assert without["found"] == rows[w]["found"]
        assert without["counted"] == rows[w]["counted"]
    assert without["live"] > 2 * bound
    assert without["touched"] > 2 * rows[1000]["touched"]
