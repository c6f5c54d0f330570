"""Several queries in one pass (``kleene.compile_many``) against running each query alone.

The queries are stock queries of the CORE paper's kind over the same synthetic
stock events (``generate.py``), sharing most of their atoms (SELL, BUY, price
thresholds).  Reported: seconds for the set in one pass, seconds for the
queries one after the other (each reading the file again, as separate
``kleene run`` calls would), the number of predicate-table evaluations of
each, and a check that both give the same complex events per query.

Usage: ``python benchmarks/several_queries.py [--events N] [--runs R]``.  Run by
hand, never by the tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kleene  # noqa: E402
from generate import generate  # noqa: E402
from kleene.io.readers import read_batches  # noqa: E402
from kleene.predicates.table import PredicateTable  # noqa: E402

SETS = {
    # Many complex events: enumeration dominates, sharing saves reading and predicates only.
    "output-heavy": {
        "sell_buy": "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS",
        "runs": "SELECT * FROM S WHERE SELL as a; BUY+ as b; SELL as c FILTER a[price > 150] AND c[price < 50] WITHIN 8 EVENTS",
        "pairs": "SELECT * FROM S WHERE SELL as a : SELL as b FILTER a[price > 100] AND b[price > 100]",
    },
    # Selective queries over shared atoms: reading and predicates dominate.
    "selective": {
        f"q{i}": (
            f"SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > {199 - i % 3}] AND "
            f"b[price < {1 + i % 2}] AND a[name = 'MSFT'] WITHIN 10 EVENTS"
        )
        for i in range(8)
    },
}
QUERIES: dict[str, str] = {}

_evaluations = 0
_original = PredicateTable.evaluate


def _counting(self: PredicateTable, batch: object) -> object:
    global _evaluations
    _evaluations += 1
    return _original(self, batch)  # type: ignore[arg-type]


PredicateTable.evaluate = _counting  # type: ignore[method-assign]


def together(path: Path) -> tuple[Counter[str], float, int]:
    global _evaluations
    _evaluations = 0
    started = time.perf_counter()
    qs = kleene.compile_many(QUERIES)
    counts = Counter(m.query for m in qs.matches(read_batches(path)))
    return counts, time.perf_counter() - started, _evaluations


def alone(path: Path) -> tuple[Counter[str], float, int]:
    global _evaluations
    _evaluations = 0
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    for name, text in QUERIES.items():
        counts[name] = sum(1 for _ in kleene.compile(text).matches(read_batches(path)))
    return counts, time.perf_counter() - started, _evaluations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    path = generate(args.events)
    for name, queries in SETS.items():
        QUERIES.clear()
        QUERIES.update(queries)
        print(f"## {name}\n")
        compare(path, args)
        print()


def compare(path: Path, args: argparse.Namespace) -> None:
    rows = []
    for label, fn in (("one pass (compile_many)", together), ("each query alone", alone)):
        runs = [fn(path) for _ in range(args.runs)]
        rows.append((label, runs[0][0], statistics.median(r[1] for r in runs), runs[0][2]))
    assert rows[0][1] == rows[1][1], f"results differ: {rows[0][1]} vs {rows[1][1]}"
    print(f"{args.events:,} events, {len(QUERIES)} queries, median of {args.runs} runs\n")
    print("| mode | seconds | events/s (per query) | predicate evaluations |")
    print("|---|---:|---:|---:|")
    for label, _, seconds, evaluations in rows:
        print(f"| {label} | {seconds:.2f} | {args.events * len(QUERIES) / seconds:,.0f} | {evaluations} |")
    print("\ncomplex events per query:", dict(rows[0][1]))


if __name__ == "__main__":
    main()
