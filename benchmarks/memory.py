"""Peak memory of a windowed query at 1 M and 5 M events: it must not grow with the stream.

A windowed query only ever needs the events inside its window, so the
engine releases everything older, and the reader streams the file in
batches: peak memory should be (nearly) the same for 1 M and 5 M events.
Each size runs in a fresh subprocess (``--child``) so that one measurement
cannot inherit the other's heap, and reports its peak resident set size
(``resource.getrusage(...).ru_maxrss``).  On Linux a child's ``ru_maxrss``
starts from its parent's resident size at fork time, so the parent stays
small on purpose: it imports nothing but the standard library, and the data
files are generated beforehand by ``generate.py`` in a subprocess of its own.

``--keys K`` adds a column ``key`` (the event's id spread over K values) and runs
:data:`PARTITIONED_QUERY` (or ``--query``): K partitions, each released when its window expires
and made again when its key comes back.  The last results are in docs/reliability.md ("Limits
and memory"); the test suite checks the same thing without timing or RSS
(``tests/runtime/test_limits.py``: live tECS nodes and partitions stay bounded).

Usage: ``python benchmarks/memory.py [--sizes 1000000 5000000] [--query Q] [--events-data]
[--keys 100000]``
Run by hand, never by the tests.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_QUERY = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS"
PARTITIONED_QUERY = (
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] "
    "PARTITION BY [key] WITHIN 200000 EVENTS"
)


def peak_rss_mib() -> float:
    """Peak RSS of this process in MiB (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def child(path: Path, query: str, with_events: bool, keys: int) -> None:
    """Run the query over ``path`` and print one JSON line with counts and peak RSS."""
    from collections.abc import Iterator

    import pyarrow as pa

    import kleene
    from kleene.io.readers import read_batches

    baseline = peak_rss_mib()  # after imports, before any data
    compiled = kleene.compile(query)

    def keyed() -> Iterator[pa.RecordBatch]:
        for batch in read_batches(path):
            ids = batch.column("id").to_numpy()
            yield batch.append_column("key", pa.array((ids * 7919) % keys))

    source = keyed() if keys else read_batches(path)
    results = compiled.run(source) if with_events else compiled.matches(source)
    count = sum(1 for _ in results)
    print(json.dumps({"complex_events": count, "peak_mib": peak_rss_mib(), "baseline_mib": baseline}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--query", default=DEFAULT_QUERY)
    parser.add_argument("--events-data", action="store_true", help="use run() (with event data) instead of matches()")
    parser.add_argument("--keys", type=int, default=0, help="partition keys (a key column; default query: PARTITION BY [key])")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.keys and args.query == DEFAULT_QUERY:
        args.query = PARTITIONED_QUERY
    if args.child is not None:
        child(args.child, args.query, args.events_data, args.keys)
        return

    print(f"query: {args.query}")
    print(f"API: {'run()' if args.events_data else 'matches()'}\n")
    print("| events | complex events | peak RSS (MiB) | after imports (MiB) |")
    print("|---:|---:|---:|---:|")
    peaks: list[float] = []
    for n in args.sizes:
        path = HERE / "data" / f"stock_{n}.parquet"  # generate.data_path, without importing numpy here
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--events", str(n)], check=True, capture_output=True)
        cmd = [sys.executable, __file__, "--child", str(path), "--query", args.query, "--keys", str(args.keys)]
        if args.events_data:
            cmd.append("--events-data")
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        peaks.append(result["peak_mib"])
        print(f"| {n:,} | {result['complex_events']:,} | {result['peak_mib']:.1f} | {result['baseline_mib']:.1f} |", flush=True)
    if len(peaks) >= 2:
        ratio = peaks[-1] / peaks[0]
        verdict = "within 10%" if ratio <= 1.10 else "MORE than 10% above"
        print(f"\npeak at {args.sizes[-1]:,} / peak at {args.sizes[0]:,} = {ratio:.3f} ({verdict})")


if __name__ == "__main__":
    main()
