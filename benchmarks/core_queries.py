"""End-to-end throughput on the CORE paper's stock queries (read, evaluate, enumerate).

For each query, the Parquet file of synthetic stock events (see
``generate.py``; created if missing) is read with kleene's streaming reader,
evaluated with ``kleene.compile(query).matches(batches)``, and every complex
event is enumerated and counted.  Each run starts from the file, so the
figure includes reading, as a user of ``kleene run`` would experience it.
The median of ``--runs`` runs is reported as a Markdown table.

``matches()`` yields complex events without their events' data: it measures
the engine, not the cost of building Python dicts for output.

Usage: ``python benchmarks/core_queries.py [--events N] [--runs R] [--batch-size B]``
(``make bench`` runs it with the defaults).  Run by hand, never by the tests.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kleene  # noqa: E402
from generate import generate  # noqa: E402
from kleene.io.readers import read_batches  # noqa: E402

QUERIES = {
    "a[price > 100]": "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS",
    "a[price > 199] AND b[price < 1]": (
        "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 199] AND b[price < 1] WITHIN 10 EVENTS"
    ),
}


def run_once(query: str, path: Path, batch_size: int) -> tuple[int, int, float]:
    """(events read, complex events, seconds) for one end-to-end run."""
    started = time.perf_counter()
    events = 0

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal events
        for batch in read_batches(path, batch_size=batch_size):
            events += batch.num_rows
            yield batch

    compiled = kleene.compile(query)
    complex_events = sum(1 for _ in compiled.matches(counted()))
    return events, complex_events, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the stream (default 1,000,000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per query; the median is reported (default 3)")
    parser.add_argument("--batch-size", type=int, default=65536, help="rows per batch read (default 65536)")
    args = parser.parse_args()

    path = generate(args.events)
    print(f"data: {path} ({args.events:,} events); {args.runs} runs per query, median reported")
    print(f"python {platform.python_version()} on {platform.machine()} ({platform.processor() or platform.system()})\n")
    print("| query | events | complex events | median seconds | events/s |")
    print("|---|---:|---:|---:|---:|")
    for label, query in QUERIES.items():
        runs = [run_once(query, path, args.batch_size) for _ in range(args.runs)]
        counts = {(n, c) for n, c, _ in runs}
        assert len(counts) == 1, f"runs disagree: {counts}"
        (n, c), = counts
        median = statistics.median(s for _, _, s in runs)
        print(f"| `{label}` | {n:,} | {c:,} | {median:.3f} | {n / median:,.0f} |", flush=True)
    print("\nqueries:")
    for label, query in QUERIES.items():
        print(f"- `{label}`: `{query}`")


if __name__ == "__main__":
    main()
