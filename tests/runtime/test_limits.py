"""The limits of kleene.limits: each stops its victim with a LimitError naming it, early.

Victims that could grow without bound run in a subprocess whose address space is capped
(``RLIMIT_AS``, 3 GB), so a broken limit fails the test instead of swapping the machine.  The
in-process tests use limits far below anything that could hurt.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import kleene
from kleene import LimitError
from kleene.automata.determinize import DEAD, LazyDFA
from kleene.io.badrows import BadRowPolicy
from kleene.io.reorder import ReorderBuffer
from kleene.limits import DEFAULT_MAX_MATCHES, Limits, default_max_memory, resident_bytes
from kleene.runtime import engine as engine_module
from kleene.runtime.tecs import UNION
from kleene_process import capped_run as capped

EIGHT_ALL = "SELECT * FROM S WHERE " + " ALL ".join(["(A ; B)"] * 8)
"""Issue 16: 123 characters that compiled for 60 s to 6,561 states and 3.1 GB."""
EXPLOSIVE = "SELECT * FROM S WHERE SELL ; BUY+ ; SELL WITHIN 24 EVENTS"


def sells_and_buys(n: int, buys_per_sell: int = 3) -> pa.Table:
    """SELL, then ``buys_per_sell`` BUYs, repeated: every SELL ends many SELL;BUY+;SELL matches."""
    pattern = ["SELL"] + ["BUY"] * buys_per_sell
    types = (pattern * (n // len(pattern) + 1))[:n]
    return pa.table({"type": types, "price": np.arange(n, dtype=np.float64)})


# ---------------------------------------------------------------- max_states


def test_a_product_past_max_states_stops_while_it_is_built() -> None:
    query = "SELECT * FROM S WHERE " + " ALL ".join(["(A ; B)"] * 5)
    start = time.perf_counter()
    with pytest.raises(LimitError) as caught:
        kleene.compile(query, max_states=500)
    assert time.perf_counter() - start < 5
    err = caught.value
    assert (err.limit, err.value) == ("max_states", 500)
    assert "passed 501 states" in str(err) and "--max-states N" in str(err)
    assert "max_states=N in Python" in str(err)
    kleene.compile(query)  # 4,110 states while built: under the default


def test_transitions_count_against_max_states() -> None:
    # 10,385 states and 131,073 transitions while built: the transitions pass 10 * 11,000 first.
    query = "SELECT * FROM S WHERE " + " AND ".join(["(A OR B)+"] * 8)
    with pytest.raises(LimitError, match=r"transitions \(at most 10 per allowed state\)"):
        kleene.compile(query, max_states=11_000)


def test_the_lazy_determinization_stops_at_max_states() -> None:
    # 11 CEA states; the subsets the input reaches (which events were A lately) are 18.
    q = kleene.compile("SELECT * FROM S WHERE (A OR B)+ : A : (A OR B) : (A OR B) : (A OR B)")
    assert q.plan.cea is not None and q.plan.cea.num_states == 11

    def reach(dfa: LazyDFA) -> int:
        rng = np.random.default_rng(1)
        states = {0}
        for _ in range(300):
            bits = int(rng.integers(1, 3))  # A or B
            states = {0} | {t for s in states for t in dfa.step(s, bits) if t != DEAD}
        return len(dfa.subsets)

    assert reach(LazyDFA(q.plan.cea)) == 18
    with pytest.raises(LimitError, match="the determinized automaton passed 13 states") as caught:
        reach(LazyDFA(q.plan.cea, Limits(max_states=12)))
    assert caught.value.limit == "max_states"


def test_the_issues_compilation_bomb_stops_with_exit_2_under_the_defaults(tmp_path: Path) -> None:
    data = tmp_path / "e.csv"
    data.write_text("type\nA\nB\n")
    start = time.perf_counter()
    done = capped(EIGHT_ALL, "--input", str(data), "--no-progress")
    assert done.returncode == 2, done.stderr
    assert time.perf_counter() - start < 60
    assert "kleene: limit reached:" in done.stderr and "--max-states N" in done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr


# ---------------------------------------------------------------- max_matches


@pytest.mark.parametrize("twin", [True, False], ids=["compiled loop", "python loop"])
@pytest.mark.parametrize("columnar", [True, False], ids=["columns", "list"])
def test_an_event_completing_more_than_max_matches_stops_the_run(
    twin: bool, columnar: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not twin:
        monkeypatch.setattr(engine_module, "LOOP", None)
    events = sells_and_buys(40, 7)  # SELL at 0, 8, 16...: the one at 8 ends 2**7 - 1 matches
    q = kleene.compile(EXPLOSIVE, max_matches=100)
    with pytest.raises(LimitError) as caught:
        if columnar:
            list(q.match_batches(events))
        else:
            list(q.matches(events))
    err = caught.value
    assert (err.limit, err.value) == ("max_matches", 100)
    assert "the event at input position 8 completes more than 100 complex events" in str(err)
    assert "LIMIT n" in str(err) and "--max-matches N" in str(err)
    fine = kleene.compile(EXPLOSIVE, max_matches=127)
    assert max(_per_end(fine, events.slice(0, 16)).values()) == 127


@pytest.mark.parametrize("twin", [True, False], ids=["compiled loop", "python loop"])
def test_limit_below_max_matches_cuts_instead(twin: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not twin:
        monkeypatch.setattr(engine_module, "LOOP", None)
    events = sells_and_buys(40, 7)
    q = kleene.compile(EXPLOSIVE + " LIMIT 5", max_matches=100)
    per_end = _per_end(q, events)
    assert per_end and max(per_end.values()) == 5


def _per_end(q: kleene.Query, events: pa.Table) -> dict[int, int]:
    counts: dict[int, int] = {}
    for m in q.matches(events):
        counts[m.end] = counts.get(m.end, 0) + 1
    return counts


def test_the_issues_output_bomb_stops_cleanly_under_the_defaults(tmp_path: Path) -> None:
    """SELL ; BUY+ ; SELL WITHIN 24 EVENTS reached 5.4 GB on a 650 KB file: now exit 2."""
    data = tmp_path / "stock.csv"
    rng = np.random.default_rng(16)
    types = np.where(rng.random(20_000) < 0.5, "SELL", "BUY")
    data.write_text("type,price\n" + "".join(f"{t},{i}\n" for i, t in enumerate(types)))
    done = capped(EXPLOSIVE, "--input", str(data), "--no-progress", "--output", str(tmp_path / "o.parquet"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "kleene: limit reached:" in done.stderr
    assert "--max-memory SIZE" in done.stderr or "--max-matches N" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "o.parquet").exists()


def test_max_memory_stops_a_growing_output(tmp_path: Path) -> None:
    data = tmp_path / "stock.csv"
    types = (["SELL"] + ["BUY"] * 17) * 400  # 2**17 - 1 complex events per SELL
    data.write_text("type\n" + "\n".join(types) + "\n")
    done = capped(
        EXPLOSIVE, "--input", str(data), "--no-progress", "--max-matches", str(DEFAULT_MAX_MATCHES),
        "--max-memory", "600MB",
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "past the limit max_memory = 600 MiB" in done.stderr
    assert "complex events (at input position" in done.stderr


# ---------------------------------------------------------------- max_runs


@pytest.mark.parametrize("twin", [True, False], ids=["compiled loop", "python loop"])
def test_partitions_past_max_runs_stop_the_run(twin: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not twin:
        monkeypatch.setattr(engine_module, "LOOP", None)
    n = 200
    # SELLs of n keys, then a BUY (without it, lookahead skips every SELL).
    events = pa.table({"type": ["SELL"] * n + ["BUY"], "key": [*range(n), -1]})
    query = "SELECT * FROM S WHERE SELL ; BUY PARTITION BY [key] WITHIN 1000 EVENTS"
    with pytest.raises(LimitError, match="51 partitions holding runs alive at once passed") as caught:
        list(kleene.compile(query, max_runs=50).matches(events))
    assert "--max-runs N" in str(caught.value)
    assert list(kleene.compile(query, max_runs=n + 1).matches(events)) == []  # keys differ


# ---------------------------------------------------------------- max_delay and memory


def test_the_reorder_buffer_stops_at_max_memory() -> None:
    buffer = ReorderBuffer("t", "s", 10**18, "1000 days", hold_memory=50_000)
    policy = BadRowPolicy("error")
    set_aside = policy.handle  # never called: no row is late or unreadable
    with pytest.raises(LimitError, match=r"for max_delay = 1000 days \(--max-delay\)") as caught:
        for k in range(100):
            batch = pa.record_batch({"t": np.arange(k * 1000, (k + 1) * 1000)})
            buffer.push(batch, final=False, set_aside=set_aside)
    assert caught.value.limit == "max_memory" and k < 10
    assert "--max-memory SIZE" in str(caught.value)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM S WHERE SELL as a ; BUY as b WITHIN 5 EVENTS",
        "SELECT * FROM S WHERE SELL as a ; BUY as b FILTER b[price > a.price] WITHIN 5 EVENTS",
    ],
    ids=["tecs", "registers"],
)
def test_every_engine_looks_at_max_memory_per_batch(query: str) -> None:
    events = sells_and_buys(100)
    q = kleene.compile(query, max_memory="1MB")  # less than any Python process holds
    with pytest.raises(LimitError, match="at input position 0, past the limit max_memory = 1 MiB"):
        list(q.matches(events))
    assert list(kleene.compile(query).matches(events))


def test_limits_are_options_and_checked() -> None:
    options = kleene.InputOptions(max_states=7, max_runs=8, max_matches=9, max_memory="1GB")
    assert options.limits == Limits(7, 8, 9, 1 << 30)
    assert kleene.InputOptions().limits.max_memory == default_max_memory()
    with pytest.raises(kleene.KleeneError, match="max_runs must be a positive integer"):
        kleene.InputOptions(max_runs=0)
    with pytest.raises(kleene.KleeneError, match="cannot read 'lots' as a size"):
        kleene.InputOptions(max_memory="lots")
    assert resident_bytes() is None or resident_bytes() > 1 << 20  # type: ignore[operator]


def test_cli_limit_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kleene.cli import main

    data = tmp_path / "e.csv"
    data.write_text("type\n" + "\n".join((["SELL"] + ["BUY"] * 7) * 5) + "\n")
    assert main(["run", EXPLOSIVE, "--input", str(data), "--max-matches", "10", "--no-progress"]) == 2
    assert "the limit is max_matches = 10 per event" in capsys.readouterr().err
    assert main(["run", EIGHT_ALL, "--input", str(data), "--max-states", "1000", "--no-progress"]) == 2
    assert "the limit is max_states = 1,000" in capsys.readouterr().err
    assert main(["run", EXPLOSIVE, "--input", str(data), "--max-runs", "0"]) == 2
    assert "must be at least 1" in capsys.readouterr().err


# ---------------------------------------------------------------- memory stays flat


def live_nodes(evaluators: list[Any]) -> int:
    """tECS nodes reachable from the evaluators' tables (what the window keeps alive)."""
    seen: set[int] = set()
    stack = [node for ev in evaluators for ul in ev.table.values() for node in ul]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node[0] == UNION:
            stack.extend((node[2], node[3]))
        elif len(node) > 3:
            stack.append(node[3])
    return len(seen)


def test_a_windowed_query_keeps_a_bounded_tecs() -> None:
    """Live tECS nodes and union records stay bounded by the window, not the stream."""
    q = kleene.compile("SELECT * FROM S WHERE SELL as a ; BUY+ as b ; SELL WITHIN 30 EVENTS LIMIT 3")
    rng = np.random.default_rng(5)
    peaks = []

    def batches() -> Iterator[pa.RecordBatch]:
        for k in range(40):
            types = np.where(rng.random(5000) < 0.3, "SELL", "BUY")
            yield pa.record_batch({"type": types})
            if k % 5 == 4:
                engine = q.last_session.engine  # type: ignore[attr-defined]
                peaks.append((live_nodes([engine.single]), len(engine.single.unions)))

    found = sum(len(b) for b in q.match_batches(batches()))
    assert found > 10_000
    nodes, unions = zip(*peaks)
    # Each of the 200,000 events makes tECS nodes: those before the window are let go.
    assert max(nodes) < 10_000 and max(unions) < 20_000, peaks


def test_idle_partition_keys_are_released() -> None:
    """100,000 keys, each seen now and then: a key whose window expired holds nothing."""
    q = kleene.compile("SELECT * FROM S WHERE SELL ; BUY PARTITION BY [key] WITHIN 50 EVENTS")
    rng = np.random.default_rng(7)
    held = []

    def batches() -> Iterator[pa.RecordBatch]:
        for _ in range(30):
            n = 10_000
            types = np.where(rng.random(n) < 0.5, "SELL", "BUY")
            yield pa.record_batch({"type": types, "key": rng.integers(0, 100_000, n)})
            held.append(len(q.last_session.engine.partitions))  # type: ignore[attr-defined]

    sum(len(b) for b in q.match_batches(batches()))
    # Keys in the last 50 events, plus those not swept yet (a sweep every 8,192 steps at least).
    assert max(held) < 20_000, held
    assert held[-1] <= 2 * held[2] + 1000, held
