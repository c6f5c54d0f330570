"""The limits of kleene.limits on the register engine (queries with conditions between events).

Like the tECS engine (tests/runtime/test_limits.py), the register engine stops with a
LimitError naming ``max_states`` (its automaton while built), ``max_runs`` (its runs, or the
first events the pair join holds) and ``max_matches`` (complex events completed by one event).
A victim that could grow runs in a subprocess whose address space is capped (3 GB).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import kleene
from kleene import LimitError
from kleene_process import capped_run as capped

RISING = "SELECT * FROM S WHERE SELL as a ; BUY as b FILTER b[price > a.price]"
"""Without a window: the general runs (one per SELL); with ``WITHIN``: the pair join."""
EXPLOSIVE = (
    "SELECT * FROM S WHERE SELL as s ; BUY+ ; SELL as e FILTER e[price > s.price] WITHIN 24 EVENTS"
)
"""The issue's output bomb with a condition between events: the register engine's runs."""


def sells_then_a_buy(n: int) -> pa.Table:
    """``n`` SELLs at rising prices, then a BUY above them all: it completes ``n`` matches."""
    return pa.table(
        {"type": ["SELL"] * n + ["BUY"], "price": np.arange(n + 1, dtype=np.float64)}
    )


def sells_and_buys(n: int, buys_per_sell: int) -> pa.Table:
    pattern = ["SELL"] + ["BUY"] * buys_per_sell
    types = (pattern * (n // len(pattern) + 1))[:n]
    return pa.table({"type": types, "price": np.arange(n, dtype=np.float64)})


def test_the_register_automaton_stops_at_max_states() -> None:
    query = "SELECT * FROM S WHERE " + " ALL ".join(
        [f"(A as a{k} ; B as b{k} FILTER b{k}[x > a{k}.x])" for k in range(4)]
    )
    assert kleene.compile(query).engine == "registers"
    with pytest.raises(LimitError) as caught:
        kleene.compile(query, max_states=200)
    err = caught.value
    assert (err.limit, err.value) == ("max_states", 200)
    assert "the register automaton under construction passed 201 states" in str(err)
    assert "--max-states N" in str(err)
    kleene.compile(query, max_states=795)  # 795 states while built


def test_the_register_automaton_of_six_ands_stops_under_the_defaults() -> None:
    """Six iterations with conditions joined by AND: past 100,000 states (five: 41,030)."""
    query = "SELECT * FROM S WHERE " + " AND ".join(
        [f"(((A OR B) as a{k})+ FILTER a{k}[x > prev(a{k}).x])" for k in range(6)]
    )
    with pytest.raises(LimitError, match="passed 100,001 states: the limit is max_states = 100,000"):
        kleene.compile(query)


@pytest.mark.parametrize("partitioned", [False, True], ids=["runs", "partitioned runs"])
def test_register_runs_past_max_runs_stop_the_run(partitioned: bool) -> None:
    events = sells_then_a_buy(200)
    query = RISING + (" PARTITION BY [k] WITHIN 500 EVENTS" if partitioned else "")
    if partitioned:
        events = events.append_column("k", pa.array([0] * 201))
    with pytest.raises(LimitError) as caught:
        list(kleene.compile(query, max_runs=50).matches(events))
    err = caught.value
    assert (err.limit, err.value) == ("max_runs", 50)
    assert "51 runs alive at once passed the limit max_runs = 50" in str(err)
    assert "--max-runs N" in str(err)
    assert len(list(kleene.compile(query, max_runs=200).matches(events))) == 200


def test_the_pair_join_counts_its_first_events_as_runs() -> None:
    query = RISING + " WITHIN 1000 EVENTS"
    q = kleene.compile(query, max_runs=50)
    assert q.plan.register_runtime == "pairs"
    with pytest.raises(LimitError, match="200 first events waiting in the window alive at once passed the limit max_runs = 50"):
        list(q.matches(sells_then_a_buy(200)))
    assert len(list(kleene.compile(query, max_runs=200).matches(sells_then_a_buy(200)))) == 200


@pytest.mark.parametrize("runtime", ["merged", "pairs"])
def test_an_event_completing_more_than_max_matches_stops_the_register_engine(runtime: str) -> None:
    query = RISING + (" WITHIN 1000 EVENTS" if runtime == "pairs" else "")
    q = kleene.compile(query, max_matches=100)
    assert q.plan.register_runtime == runtime
    with pytest.raises(LimitError) as caught:
        list(q.matches(sells_then_a_buy(200)))
    err = caught.value
    assert (err.limit, err.value) == ("max_matches", 100)
    assert "the event at input position 200 completes more than 100 complex events" in str(err)
    assert "--max-matches N" in str(err)
    assert len(list(kleene.compile(query, max_matches=200).matches(sells_then_a_buy(200)))) == 200


@pytest.mark.parametrize("windowed", [False, True], ids=["runs", "windowed"])
def test_limit_below_max_matches_cuts_the_register_engine_instead(windowed: bool) -> None:
    events = sells_and_buys(40, 7)  # the SELL at 8 ends 2**7 - 1 matches, each a rising pair
    def compiled(text: str) -> kleene.Query:
        q = kleene.compile(text, max_matches=100)
        return q.tuned(register_runtime="windowed") if windowed else q

    narrow = EXPLOSIVE.replace("WITHIN 24", "WITHIN 10")  # the unrolled tree grows with it
    q = compiled(narrow)
    assert q.plan.register_runtime == ("windowed" if windowed else "merged")
    with pytest.raises(LimitError, match="input position 8 completes more than 100"):
        list(q.matches(events))
    cut = compiled(narrow + " LIMIT 5")
    per_end: dict[int, int] = {}
    for m in cut.matches(events):
        per_end[m.end] = per_end.get(m.end, 0) + 1
    assert per_end and max(per_end.values()) == 5


def test_the_register_output_bomb_stops_in_a_capped_process(tmp_path: object) -> None:
    """The complex events of ``SELL ; BUY+ ; SELL`` with a condition double at each BUY.  The
    runs no longer do (runs with equal state and registers are merged, kleene.registers.merged:
    --max-runs 20,000 is not reached); max_matches stops the output (exit 2, its message), in a
    process whose address space is capped at 3 GB."""
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    data = tmp_path / "stock.csv"
    rng = np.random.default_rng(16)
    types = np.where(rng.random(5_000) < 0.2, "SELL", "BUY")
    data.write_text("type,price\n" + "".join(f"{t},{i}\n" for i, t in enumerate(types)))
    out = tmp_path / "o.jsonl"
    done = capped(EXPLOSIVE, "--input", str(data), "--no-progress", "--max-runs", "20000",
                  "--max-matches", "50000", "--output", str(out))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "kleene: limit reached:" in done.stderr
    assert "completes more than 50,000 complex events" in done.stderr
    assert "--max-matches N" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
