"""Streaming restarts after SIGKILL: nothing lost, nothing duplicated, positions compared.

A driver process (``stream_kill_driver.py``: its own JVM and Python workers, in a process group
of its own) runs five streaming queries over a directory of JSON Lines files, one file per
micro-batch, one query after the other, and is killed with SIGKILL, the whole group at once, at a point of the run: when a
micro-batch's sink starts (offsets logged, state not computed), between the state commit and
the sink's last write, after the sink wrote everything but before the commit log, or at a
random moment (inside a task, during a checkpoint or a state upload).  Each kill is followed by a
restart from the same checkpoints; the last run goes to the end.  Then, for each query, the
complex events written (``start_stream``'s directories, read with pyarrow) must equal the
in-process engine's over the on-time rows sorted by (time, id), each exactly once, with their
positions: global positions without PARTITION BY, positions in the key's substream with it
(streaming numbers the released events per key).  The late rows must each appear once.

The queries: partitioned and not, with conditions between events (register engine), with the
strategies NEXT, LAST and MAX, UNLESS, CONSUME BY, and the three kinds of window.

``KLEENE_KILL_SEEDS`` (e.g. ``1-12``) runs more seeds than the default one; the results of the
last long run are in docs/reliability.md ("Spark batch and streaming restarts").
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pds
import pytest
from kill_points import run_driver, run_schedule

import kleene

DRIVER = Path(__file__).resolve().parent / "stream_kill_driver.py"
QUERIES = {
    "plain": "SELECT * FROM S WHERE SELL as a; BUY as b; BUY as c FILTER a[price > 120] "
    "WITHIN 15 seconds",
    "part_registers": "SELECT * FROM S WHERE SELL as a; BUY as b FILTER b[price < a.price - 40] "
    "PARTITION BY [name] WITHIN 30 seconds",
    "next_registers": "SELECT NEXT * FROM S WHERE SELL as a; BUY+ as b FILTER b[price > a.price] "
    "WITHIN 12 EVENTS",
    "part_last_consume": "SELECT LAST * FROM S WHERE SELL as a; BUY+ as b; SELL as c "
    "FILTER c[price > a.price] PARTITION BY [name] WITHIN 25 seconds CONSUME BY PARTITION",
    "max_unless_attr": "SELECT MAX * FROM S WHERE (SELL as a; BUY+ as b) UNLESS OTHER "
    "FILTER a[price > 90] WITHIN 20 [ts]",
}
DEFAULT = ("part_last_consume", "next_registers", "max_unless_attr")
"""The default run's queries (partitioned and not, registers, strategies, CONSUME BY, the three
windows); a run with ``KLEENE_KILL_SEEDS`` set adds the other two."""
SPAN = 40
"""Seconds of event time per file."""


def _queries() -> dict[str, str]:
    if "KLEENE_KILL_SEEDS" in os.environ:
        return QUERIES
    return {name: QUERIES[name] for name in DEFAULT}


def _files() -> int:
    return 7 if "KLEENE_KILL_SEEDS" in os.environ else 4


def _seeds() -> list[int]:
    text = os.environ.get("KLEENE_KILL_SEEDS", "2")
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


def _file_rows(rng: random.Random, i: int, next_id: list[int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """On-time rows of file ``i`` (shuffled, some a little behind the previous file) and late rows."""
    base = SPAN * i
    rows = []
    for _ in range(40):
        jitter = rng.random() < 0.1 and i > 0
        ts = rng.randrange(base - 5, base) if jitter else rng.randrange(base, base + SPAN)
        rows.append({"name": rng.choice("xy"), "type": rng.choice(["SELL", "BUY", "BUY", "OTHER"]),
                     "price": float(rng.randrange(50, 150)), "ts": ts})
    # the watermark at file i is at least (the last file's largest time) - 10 s >= base - 11
    late = [{"name": rng.choice("xy"), "type": "SELL", "price": 140.0, "ts": base - 30}
            for _ in range(1 + rng.randrange(2) if i >= 2 else 0)]
    everything = rows + late
    rng.shuffle(everything)
    for row in everything:
        row["id"] = next_id[0] = next_id[0] + 1
    return rows, late


def _write_inputs(directory: Path, rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every file, oldest first by modification time; a last row moves the watermark past all."""
    directory.mkdir()
    next_id = [0]
    on_time: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    stamp = time.time() - 1000
    files = [_file_rows(rng, i, next_id) for i in range(_files())]
    files.append(([{"id": 100_000, "name": "x", "type": "NOOP", "price": 0.0, "ts": 100_000}], []))
    for i, (rows, lates) in enumerate(files):
        path = directory / f"f{i}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows + lates))
        os.utime(path, (stamp + 10 * i, stamp + 10 * i))  # the file source takes oldest first
        on_time += rows
        late += lates
    return on_time, late


def _expected(text: str, on_time: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """The engine's complex events: (partition, positions, event ids, start and end time)."""
    q = kleene.compile(text, time_column="ts")
    rows = sorted(on_time, key=lambda r: (r["ts"], r["id"]))
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["name"] if q.partition_by else None, []).append(r)
    found: Counter[tuple[Any, ...]] = Counter()
    for key, substream in groups.items():  # streaming numbers each key's released events
        for ce in q.run(pa.Table.from_pylist(substream)):
            ids = tuple(e["id"] for e in ce.events)
            found[(key, tuple(ce.positions), ids, ce.events[0]["ts"], ce.events[-1]["ts"])] += 1
    return found


def _written(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return pds.dataset(str(path), format="parquet", partitioning="hive").to_table().to_pylist()


def _got(path: Path, partitioned: bool) -> Counter[tuple[Any, ...]]:
    found: Counter[tuple[Any, ...]] = Counter()
    for r in _written(path):
        key = r["partition"]["name"] if partitioned else None
        ids = tuple(e["id"] for e in r["events"])
        found[(key, tuple(r["positions"]), ids, r["start_time"], r["end_time"])] += 1
    return found


def kill_and_restart(base: Path, seed: int) -> dict[str, Any]:
    """One seed: the inputs, two kills (three for odd seeds) at drawn points, a last run; returns
    a summary."""
    rng = random.Random(seed)
    on_time, late = _write_inputs(base / "in", rng)
    points = ["before_write", "between_writes", "after_writes", "timer"]
    schedule: list[dict[str, Any]] = []
    for point in rng.sample(points, 2 + (seed % 2)):
        if point == "timer":
            schedule.append({"kill": "timer", "delay": round(rng.uniform(0.5, 15.0), 2)})
        else:  # the n-th sink call of the run, over the five queries
            schedule.append({"kill": point, "batch": rng.randrange(1, 4 * len(_queries()))})
    log = base / "driver.log"
    config = {"base": str(base), "queries": _queries()}
    killed = run_schedule(lambda kill: run_driver(DRIVER, base, config, kill, log), schedule, log)
    summary: dict[str, Any] = {"seed": seed, "schedule": schedule, "killed": killed, "complex": {}}
    for name, text in _queries().items():
        expected = _expected(text, on_time)
        got = _got(base / name / "out", "PARTITION BY" in text)
        assert expected, f"{name}: the input should produce complex events"
        lost, extra = expected - got, got - expected
        assert not lost and not extra, (
            f"seed {seed}, {name}: {sum(lost.values())} lost, {sum(extra.values())} duplicated "
            f"or wrong (first lost {next(iter(lost), None)}, first extra {next(iter(extra), None)})"
        )
        assert late, "the input should have late rows"
        late_ids = Counter(r["id"] for r in _written(base / name / "late"))
        assert late_ids == Counter(r["id"] for r in late), f"seed {seed}, {name}: late rows"
        summary["complex"][name] = sum(expected.values())
    return summary


@pytest.mark.parametrize("seed", _seeds())
def test_sigkill_and_restart_loses_and_duplicates_nothing(tmp_path: Path, seed: int) -> None:
    summary = kill_and_restart(tmp_path, seed)
    print(f"\nseed {seed}: {summary['killed']} of {len(summary['schedule'])} runs killed "
          f"({summary['schedule']}); complex events per query {summary['complex']}")
    assert summary["killed"] >= 1, "a kill should land before the end of the run"
