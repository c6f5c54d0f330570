"""Each selection strategy on 1 M stock events at windows of 100, 1,000 and 10,000: issue 18's protocol.

Run by hand (not a test)::

    python benchmarks/strategies.py [--events 1000000] [--windows 100 1000 10000] [--runs 3]
                                    [--strategies ALL STRICT NEXT LAST MAX] [--budget 30]
                                    [--patterns sequence iteration] [--limit 1]
                                    [--check-events 20000] [--no-check]

Queries (over the stock events of ``generate.py``), for ``<s>`` each of ALL, STRICT, NEXT, LAST,
MAX and ``<w>`` each window::

    SELECT <s> * FROM S WHERE SELL as a; BUY as b; SELL as c      (sequence)
    SELECT <s> * FROM S WHERE SELL as a; BUY+ as b; SELL as c     (iteration)
        FILTER a[price > 150] AND c[price < 50] WITHIN <w> EVENTS LIMIT 1

**LIMIT 1** (at most one complex event per end, the CORE paper's per-trigger LIMIT): under ALL
the number of matches ending at an event is quadratic in the window on the sequence and
exponential on the iteration, so no engine can list them; with LIMIT 1 every strategy outputs one
complex event per end where it has any (MAX, which may have several, its first), and the rate is
that of the update and the selection.  A NEXT or MAX match on the iteration still holds every
``BUY`` between ``a`` and ``c``: reading it costs its size, which grows with the window.

**Rates are CPU time** (``time.process_time`` around ``Session.feed``, the events already in
memory as Arrow batches of 65,536), the median of ``--runs``; ``--budget`` CPU seconds bounds a
run (it stops after the batch that crosses it; the table marks such rows "prefix").

**Each row both ways.**  *Listed*: the complex events as ``Match`` objects with their positions
(what ``kleene run`` writes, less the events' data).  *Counted*: the same session in count-only
mode (``Session.count_only``, what ``Query.count`` and ``kleene run --count`` use), where the
engine adds to a number instead of building complex events.  The two counts must be equal (the
script stops otherwise), as must, on the check prefix, the count and ALL-then-filter.

**Counts checked against ALL-then-filter.**  Before timing, on the first ``--check-events``
events and at windows where ALL can list every match (``CHECK_WINDOWS``), the script runs ALL
without LIMIT, groups its complex events by end, keeps those the strategy's definition keeps
(the oracle's :func:`kleene.reference.oracle.select_matches`, written apart from the engine), and
requires the strategy's own output (without LIMIT) to be exactly that set; it prints the counts.
At the timed windows it checks what ALL-then-filter implies for LIMIT 1: NEXT, LAST and MAX have
a complex event at exactly the ends where ALL has one, so their counts equal ALL's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kleene  # noqa: E402
from generate import generate  # noqa: E402
from kleene.language.parser import parse_query  # noqa: E402
from kleene.reference.selection import select_matches  # noqa: E402

PATTERNS = {
    "sequence": "SELL as a; BUY as b; SELL as c",
    "iteration": "SELL as a; BUY+ as b; SELL as c",
}
QUERY = (
    "SELECT {strategy} * FROM S WHERE {pattern} "
    "FILTER a[price > 150] AND c[price < 50] WITHIN {window} EVENTS{limit}"
)
STRATEGIES = ("ALL", "STRICT", "NEXT", "LAST", "MAX")
CHECK_WINDOWS = {"sequence": (100,), "iteration": (8, 16)}
"""Windows at which ALL lists every match of the check prefix in seconds (2^(BUYs in the window)
matches per start on the iteration)."""
BATCH = 65_536


def query(strategy: str, pattern: str, window: int, limit: int | None) -> str:
    return QUERY.format(
        strategy=strategy,
        pattern=PATTERNS[pattern],
        window=window,
        limit="" if limit is None else f" LIMIT {limit}",
    )


def run_once(
    text: str, batches: list[pa.RecordBatch], budget: float, counting: bool = False
) -> tuple[int, int, int, int, float]:
    """Complex events, their positions in all (0 when counted), events stepped, events read,
    CPU seconds.  ``counting``: the session only counts (``Session.count_only``)."""
    session = kleene.compile(text).session()
    counts = session.count_only() if counting else []
    found = size = read = 0
    seconds = 0.0
    for batch in batches:
        started = time.process_time()
        matches = session.feed(batch, with_events=False)
        seconds += time.process_time() - started
        found += len(matches)
        size += sum(len(m.positions) for m in matches)  # type: ignore[union-attr]
        read += batch.num_rows
        if seconds > budget:
            break
    if counting:
        found = counts[0].n
    return found, size, session.engine.steps, read, seconds


def complex_events(text: str, table: pa.Table) -> set[tuple[int, ...]]:
    """Every complex event of ``text`` on ``table``, as its positions."""
    session = kleene.compile(text).session()
    out: set[tuple[int, ...]] = set()
    for batch in table.to_batches(max_chunksize=BATCH):
        out.update(tuple(m.positions) for m in session.feed(batch, with_events=False))  # type: ignore[union-attr]
    out.update(tuple(m.positions) for m in session.flush(with_events=False))  # type: ignore[union-attr]
    return out


def check(table: pa.Table, pattern: str, strategies: list[str]) -> None:
    """Each strategy's complex events equal ALL's, filtered by the strategy's definition."""
    for window in CHECK_WINDOWS[pattern]:
        every = complex_events(query("ALL", pattern, window, None), table)
        by_end: dict[int, list[frozenset[int]]] = defaultdict(list)
        for positions in every:
            by_end[positions[-1]].append(frozenset(positions))
        line = [f"ALL {len(every):,}"]
        for strategy in strategies:
            if strategy == "ALL":
                continue
            ast_strategy = parse_query(query(strategy, pattern, window, None)).select.strategy
            expected = {
                tuple(sorted(m))
                for group in by_end.values()
                for m in select_matches(ast_strategy, group, range(table.num_rows))
            }
            got = complex_events(query(strategy, pattern, window, None), table)
            counted = kleene.compile(query(strategy, pattern, window, None)).count(table)
            if counted != len(expected):
                raise SystemExit(
                    f"{strategy} on {pattern} at w={window}: counted {counted:,} complex events, "
                    f"ALL-then-filter {len(expected):,}"
                )
            if got != expected:
                raise SystemExit(
                    f"{strategy} on {pattern} at w={window}: {len(got):,} complex events, "
                    f"ALL-then-filter {len(expected):,} ({len(got - expected)} extra, "
                    f"{len(expected - got)} missing)"
                )
            line.append(f"{strategy} {len(got):,}")
        print(
            f"check, first {table.num_rows:,} events, {pattern}, w={window}: "
            + ", ".join(line)
            + " (each equal to ALL-then-filter, listed and counted)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--windows", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    parser.add_argument("--patterns", nargs="+", choices=sorted(PATTERNS), default=list(PATTERNS))
    parser.add_argument("--limit", type=int, default=1, help="LIMIT of the timed queries (default 1)")
    parser.add_argument("--budget", type=float, default=float("inf"), help="CPU seconds per run (at most)")
    parser.add_argument("--check-events", type=int, default=20_000, help="prefix for the ALL-then-filter check")
    parser.add_argument("--no-check", action="store_true", help="skip the ALL-then-filter check")
    args = parser.parse_args()
    table = pq.read_table(generate(args.events)).slice(0, args.events)
    batches = table.to_batches(max_chunksize=BATCH)
    for pattern in args.patterns:
        if not args.no_check:
            check(table.slice(0, args.check_events), pattern, args.strategies)
        print(
            f"\n**Pattern** `{PATTERNS[pattern]}`, a[price > 150], c[price < 50], LIMIT {args.limit}, "
            f"{args.events:,} events, CPU time, median of {args.runs}\n"
        )
        print(
            "| strategy | window | events stepped | listed: events read | complex events | their "
            "positions | median CPU s | events/s | counted: events read | complex events | median "
            "CPU s | events/s |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        counts: dict[int, dict[str, int]] = defaultdict(dict)
        for strategy in args.strategies:
            for window in args.windows:
                text = query(strategy, pattern, window, args.limit)
                cells = []
                for counting in (False, True):
                    runs = [run_once(text, batches, args.budget, counting) for _ in range(args.runs)]
                    rate = statistics.median(r[3] / max(r[4], 1e-9) for r in runs)
                    seconds = statistics.median(r[4] for r in runs)
                    found, size, stepped, read, _ = runs[0]
                    prefix = "" if read == args.events else " (prefix)"
                    if not prefix:
                        listed = counts[window].get((strategy, "listed"))
                        if counting and listed is not None and listed != found:
                            raise SystemExit(
                                f"{strategy} at w={window}: counted {found:,}, listed {listed:,} "
                                "complex events"
                            )
                        counts[window][strategy, "counted" if counting else "listed"] = found
                    positions = "" if counting else f" {size:,} |"
                    cells.append(f" {read:,}{prefix} | {found:,} |{positions} {seconds:.2f} | {rate:,.0f} |")
                print(f"| {strategy} | {window:,} | {stepped:,} |" + "".join(cells), flush=True)
        if args.limit == 1:
            for window, by in counts.items():
                same = {f"{s} {how}": n for (s, how), n in by.items() if s in ("ALL", "NEXT", "LAST", "MAX")}
                if len(set(same.values())) > 1:
                    raise SystemExit(f"w={window}: one complex event per end, yet counts differ: {same}")
                print(f"\nw={window:,}: {', '.join(f'{s} {n:,}' for s, n in same.items())} complex events (equal: one per end with a match)")


if __name__ == "__main__":
    main()
