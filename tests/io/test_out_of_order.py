"""Bounded out-of-order input (``max_delay``): buffered, released in time order, late rows reported."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import aimed, oracle
from generators import cases
from kleene.io.badrows import BadRowPolicy
from kleene.language.printer import to_ceql

QUERY = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 5 seconds"


def ids(events: Any) -> set[tuple[int, ...]]:
    return {tuple(e["id"] for e in ce.events) for ce in events}


def stream() -> list[dict[str, Any]]:
    rows = [
        ("SELL", 150.0, 0), ("BUY", 1.0, 2), ("SELL", 120.0, 3), ("BUY", 2.0, 4),
        ("SELL", 130.0, 9), ("BUY", 3.0, 12),
    ]  # fmt: skip
    return [{"id": i, "type": t, "price": p, "t": ts} for i, (t, p, ts) in enumerate(rows)]


def test_disordered_input_gives_the_ordered_result() -> None:
    ordered = stream()
    expected = ids(kleene.compile(QUERY, time_column="t").run(ordered))
    shuffled = [ordered[i] for i in (1, 0, 3, 2, 5, 4)]  # each at most 3 s late
    got = list(kleene.compile(QUERY, time_column="t", max_delay="3 seconds").run(shuffled))
    assert ids(got) == expected == {(0, 1), (0, 3), (2, 3), (4, 5)}
    # positions follow time order: the released stream is the ordered one
    assert {ce.positions for ce in got} == {(0, 1), (0, 3), (2, 3), (4, 5)}


def test_late_event_is_an_error_naming_its_input_row() -> None:
    rows = stream()
    late = rows[:5] + [{"id": 9, "type": "SELL", "price": 101.0, "t": 1}] + rows[5:]
    with pytest.raises(kleene.DataError) as err:
        list(kleene.compile(QUERY, time_column="t", max_delay="3 seconds").run(late))
    assert err.value.row == 5 and err.value.column == "t" and "late event" in str(err.value)
    assert "more than 3 seconds (max_delay)" in str(err.value)  # the user's words, not nanoseconds


def test_late_event_skipped_or_quarantined_and_counted(tmp_path: Path) -> None:
    rows = stream()
    late = rows[:5] + [{"id": 9, "type": "SELL", "price": 101.0, "t": 1}] + rows[5:]
    q = kleene.compile(QUERY, time_column="t", max_delay="3 seconds", on_bad_row="skip")
    assert ids(q.run(late)) == {(0, 1), (0, 3), (2, 3), (4, 5)}
    assert q.bad_rows.count == 1 and "late event" in q.bad_rows.summary()
    target = tmp_path / "late.jsonl"
    policy = BadRowPolicy("quarantine", target)
    list(kleene.compile(QUERY, time_column="t", max_delay="3 seconds", on_bad_row=policy).run(late))
    policy.close()
    (line,) = target.read_text().splitlines()
    assert json.loads(line)["row"] == 5 and json.loads(line)["values"]["id"] == 9


def test_push_holds_events_until_the_watermark_then_flush() -> None:
    q = kleene.compile(QUERY, time_column="t", max_delay="3 seconds")
    out = []
    for row in stream():
        out.extend(q.push(row))
    assert ids(out) == {(0, 1), (0, 3), (2, 3)}  # the BUY at 12 s is held back (watermark 9 s)
    assert ids(q.flush()) == {(4, 5)}


def test_max_delay_needs_a_time_column() -> None:
    with pytest.raises(kleene.KleeneError, match="time_column"):
        kleene.compile("SELECT * FROM S WHERE A ; B", max_delay="1 second")
    with pytest.raises(kleene.QueryError):
        kleene.compile(QUERY, time_column="t", max_delay="2 bananas")


@aimed()
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(), st.integers(0, 10**6))
def test_bounded_shuffle_equals_oracle_on_sorted_stream(case: Any, seed: int) -> None:
    """Rows displaced by less than the delay give the oracle's result on the ordered stream."""
    query, events, times = case
    expected = oracle(case)
    if expected is None:
        return  # counted
    delay = 3 * 10**9
    rng = random.Random(seed)
    # Arrival key: time plus a displacement below the delay, increasing within
    # equal times so that release order (time, arrival) is the original order.
    shifts = sorted(rng.uniform(0, delay) for _ in events)
    rows = [dict(e, __t=t, __id=i) for i, (e, t) in enumerate(zip(events, times))]
    groups: dict[int, list[float]] = {}
    for r in rows:
        groups.setdefault(r["__t"], []).append(shifts.pop(rng.randrange(len(shifts))))
    for lst in groups.values():
        lst.sort(reverse=True)
    arrival = sorted(rows, key=lambda r: r["__t"] + groups[r["__t"]].pop())
    q = kleene.compile(to_ceql(query), time_column="__t", time_unit="ns", max_delay=f"{delay} nanoseconds")
    got = {(ce.start, ce.end, ce.positions) for ce in q.run(arrival)}
    assert q.bad_rows.count == 0  # nothing is late
    if query.limit is None:
        assert got == expected  # released in the original order: the same positions
    else:
        assert got <= expected


def test_cli_max_delay(tmp_path: Path) -> None:
    from kleene.cli import main

    data = tmp_path / "in.jsonl"
    rows = stream()
    data.write_text("\n".join(json.dumps(rows[i]) for i in (1, 0, 3, 2, 5, 4)) + "\n")
    out = tmp_path / "out.jsonl"
    code = main(["run", QUERY, "--input", str(data), "--time-column", "t", "--max-delay", "3 seconds",
                 "--output", str(out), "--no-progress"])
    assert code == 0
    got = {tuple(e["id"] for e in json.loads(line)["events"]) for line in out.read_text().splitlines()}
    assert got == {(0, 1), (0, 3), (2, 3), (4, 5)}
