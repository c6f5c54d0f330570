"""Shrink a stream on which kleene and CORE disagree to a minimal example (delta debugging).

Given a workload and the file on which the two engines' sets of complex events differ, this
keeps the prefix up to the first differing complex event, moves the start forward while the
disagreement persists, then removes chunks of events (halves, quarters, ... single events)
while it persists (ddmin, Zeller & Hildebrandt 2002).  Every candidate is renumbered so that
``id`` is again the row position.  kleene runs in-process, CORE through the harness's runner
(a fresh ``.venv-core`` process per candidate), so the budget of candidates is bounded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from benchmarks.suite import Runner
    from benchmarks.workloads import Workload

ComplexEvents = set[tuple[int, ...]]


def renumber(table: pa.Table) -> pa.Table:
    """The same events with ``id`` = row position (what the CORE output parser relies on)."""
    at = table.schema.get_field_index("id")
    return table.set_column(at, "id", pa.array(range(table.num_rows), pa.int64()))


def kleene_set(query: str, table: pa.Table) -> ComplexEvents:
    import kleene

    return {(m.start, m.end, *m.positions) for m in kleene.compile(query).matches(table)}


class Judge:
    """Runs both engines on candidate streams and remembers how many it tried."""

    def __init__(self, kleene_query: str, core_query: str, runner: Runner, budget: int) -> None:
        self.kq, self.cq, self.runner, self.budget = kleene_query, core_query, runner, budget
        self.tried = 0

    def outputs(self, table: pa.Table) -> tuple[ComplexEvents, ComplexEvents]:
        from benchmarks.suite import read_dump

        table = renumber(table)
        path = self.runner.scratch / "shrink.parquet"
        dump = self.runner.scratch / "shrink.core.ces"
        pq.write_table(table, path)
        self.runner.run("core", self.cq, path, dump=dump)
        self.tried += 1
        return kleene_set(self.kq, table), read_dump(dump)

    def differs(self, table: pa.Table) -> bool:
        if self.tried >= self.budget or table.num_rows == 0:
            return False
        k, c = self.outputs(table)
        return k != c


def shrink(table: pa.Table, judge: Judge) -> pa.Table:
    """A small sub-stream (events in their order) on which the engines still disagree."""
    k, c = judge.outputs(table)
    diff = sorted(k ^ c, key=lambda ce: (ce[1], ce[0]))
    if not diff:
        return table
    cur = table.slice(0, diff[0][1] + 1)
    if not judge.differs(cur):
        cur = table
    # Move the start forward (binary search; disagreement is usually local to a window).
    lo, hi = 0, cur.num_rows - 1
    while lo < hi and judge.tried < judge.budget:
        mid = (lo + hi + 1) // 2
        if judge.differs(cur.slice(mid)):
            lo = mid
        else:
            hi = mid - 1
    cur = cur.slice(lo)
    # ddmin over the remaining rows.
    keep = list(range(cur.num_rows))
    chunk = max(1, len(keep) // 2)
    while chunk >= 1 and judge.tried < judge.budget:
        i, removed = 0, False
        while i < len(keep) and judge.tried < judge.budget:
            trial = keep[:i] + keep[i + chunk :]
            if trial and judge.differs(cur.take(trial)):
                keep, removed = trial, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return renumber(cur.take(keep))


def shrink_and_report(w: Workload, protocol: str, data: Path, runner: Runner, budget: int = 120) -> str:
    """Markdown: the query, the minimal stream, and each engine's complex events on it."""
    table = pq.read_table(data) if data.suffix == ".parquet" else pacsv.read_csv(data)
    judge = Judge(w.query(protocol), w.core_text(protocol), runner, budget)
    small = shrink(table, judge)
    k, c = judge.outputs(small)
    rows = "\n".join(str(r) for r in small.to_pylist())
    return (
        f"### Disagreement on `{w.name}` ({judge.tried} candidate streams tried)\n\n"
        f"kleene query:\n```\n{w.query(protocol)}\n```\nCORE query:\n```\n{w.core_text(protocol)}\n```\n"
        f"minimal stream ({small.num_rows} events, `id` = position):\n```\n{rows}\n```\n"
        f"kleene: {sorted(k)}\n\nCORE: {sorted(c)}\n\nonly kleene: {sorted(k - c)}; only CORE: {sorted(c - k)}\n"
    )
