"""Cost of each selection strategy against ALL, and how it varies with the window.

Run by hand (not a test)::

    python benchmarks/strategies.py [--events 1000000] [--windows 100 1000 10000] [--runs 3]
                                    [--strategies ALL STRICT NEXT LAST MAX] [--budget 60]
                                    [--pattern iteration|sequence|chain] [--limit 1000]
                                    [--end-filter "price < 50"]

Query (over the stock events of ``generate.py``), ``--pattern iteration`` (the default)::

    SELECT <strategy> * FROM S WHERE SELL as a; BUY+ as b; SELL as c
    FILTER a[price > 150] AND c[price < 50] WITHIN <w> EVENTS LIMIT 1000

and ``--pattern sequence`` the same with ``BUY as b``, whose matches have three events whatever
the window (so the output does not grow with it).  ``--pattern chain`` is ``BUY+ as a; SELL as c``
(the ``A+ ; B`` shape): a run that started at an earlier ``a`` can take every event of a later
one, so under MAX each start is dominated by the one before it until that one leaves the window.

``LIMIT 1000`` (at most 1,000 complex events per triggering event, the CORE paper's protocol)
keeps ALL finite: with ``BUY+`` the number of matches is exponential in the window.  Reports
events per second (median of ``--runs``), complex events, and the number of events that went
through the automaton (the rest were skipped as inert), and the positions of all complex events
output: with ``BUY+`` a NEXT match holds every ``BUY`` between ``a`` and ``c``, so its size grows
with the window, and ALL's and MAX's matches grow in number and size.  ``--budget`` seconds bounds a
run: it stops after the batch that crosses the budget and reports the events it read, their
rate and the complex events found so far (the table marks such runs "prefix").  The time spent
enumerating complex events (the engine's ``enumerate_node``, timed) is reported apart, with the rate
without it: the update cost per event, when the output itself grows with the window.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kleene  # noqa: E402
from generate import generate  # noqa: E402
from kleene.io.readers import read_batches  # noqa: E402
from kleene.runtime import engine  # noqa: E402

PATTERNS = {
    "iteration": "SELL as a; BUY+ as b; SELL as c",
    "sequence": "SELL as a; BUY as b; SELL as c",
    "chain": "BUY+ as a; SELL as c",
}
QUERY = (
    "SELECT {strategy} * FROM S WHERE {pattern} "
    "FILTER a[price > 150] AND c[{end}] WITHIN {window} EVENTS LIMIT {limit}"
)
STRATEGIES = ("ALL", "STRICT", "NEXT", "LAST", "MAX")


class _Timed:
    """The engine's ``enumerate_node``, timed: the enumeration's share of a run (its output)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.inner = engine.enumerate_node

    def __call__(self, *args: object) -> int:
        started = time.perf_counter()
        try:
            return self.inner(*args)  # type: ignore[arg-type]
        finally:
            self.seconds += time.perf_counter() - started


def run_once(query: str, path: Path, budget: float) -> tuple[int, int, int, int, float, float]:
    """Complex events, their positions in all, events stepped, events read, seconds, of which enumeration."""
    timed = _Timed()
    engine.enumerate_node = timed  # type: ignore[assignment]
    try:
        return _run(query, path, budget) + (timed.seconds,)
    finally:
        engine.enumerate_node = timed.inner  # type: ignore[assignment]


def _run(query: str, path: Path, budget: float) -> tuple[int, int, int, int, float]:
    started = time.perf_counter()
    compiled = kleene.compile(query)
    session = compiled.session()
    found = size = read = 0
    for batch in read_batches(path):
        matches = session.feed(batch, with_events=False)
        found += len(matches)
        size += sum(len(m.positions) for m in matches)  # type: ignore[union-attr]
        read += batch.num_rows
        if time.perf_counter() - started > budget:
            break
    return found, size, session.engine.steps, read, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--windows", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    parser.add_argument("--pattern", choices=sorted(PATTERNS), default="iteration")
    parser.add_argument(
        "--limit",
        type=int,
        default=1000,
        help="LIMIT of the query (1 measures the update cost of a strategy: one output per end)",
    )
    parser.add_argument(
        "--end-filter",
        default="price < 50",
        help="the filter of c (e.g. 'price < 1': few ends, so the rate is the update's, not the output's)",
    )
    parser.add_argument("--budget", type=float, default=float("inf"), help="seconds per run (at most)")
    args = parser.parse_args()
    path = generate(args.events)
    print(
        f"{args.events:,} events from {path.name}; pattern `{PATTERNS[args.pattern]}`, "
        f"c[{args.end_filter}], LIMIT {args.limit}\n"
    )
    print(
        "| strategy | window | events read | complex events | their positions | events stepped | median s "
        "| events/s | of which enumeration s | events/s without enumeration |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for strategy in args.strategies:
        for window in args.windows:
            query = QUERY.format(
                strategy=strategy,
                pattern=PATTERNS[args.pattern],
                window=window,
                limit=args.limit,
                end=args.end_filter,
            )
            runs = [run_once(query, path, args.budget) for _ in range(args.runs)]
            rate = statistics.median(r[3] / r[4] for r in runs)
            update = statistics.median(r[3] / max(r[4] - r[5], 1e-9) for r in runs)
            found, size, stepped, read, seconds, enumerating = runs[0]
            prefix = "" if read == args.events else " (prefix)"
            print(
                f"| {strategy} | {window:,} | {read:,}{prefix} | {found:,} | {size:,} | {stepped:,} | "
                f"{seconds:.2f} | {rate:,.0f} | {enumerating:.2f} | {update:,.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
