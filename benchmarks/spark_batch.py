"""Throughput of ``kleene.spark.detect`` (local[1], local[2]) against the in-process engine.

Run by hand (not a test)::

    python benchmarks/spark_batch.py [--events 10000000] [--keys 1000] [--repeat 3]

It generates seeded stock events with ``--keys`` ticker names (Parquet under
``benchmarks/data/``, reused when present), then reports events per second:

* the in-process engine (``kleene.compile(q).run`` over the Parquet batches);
* ``detect`` on a PARTITION BY query with ``local[1]`` and ``local[2]``, each
  in a fresh Python process (a fresh JVM and session), written to Spark's
  ``noop`` sink so that only reading, ordering and evaluation are timed;
* the parallel-ranges plan on a non-partitioned windowed query, ``local[2]``,
  against the same query forced into one ordered task (``ranges=1``).

Figures are medians of ``--repeat`` warm runs; session start-up (JVM launch,
first job) is excluded and reported separately.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DATA_DIR = Path(__file__).resolve().parent / "data"
PARTITIONED = (
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] PARTITION BY [name] WITHIN 10 EVENTS"
)
RANGED = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 190] AND b[price < 10] WITHIN 10 EVENTS"


def data_path(n: int, keys: int) -> Path:
    return DATA_DIR / f"spark_{n}_{keys}keys.parquet"


def generate(n: int, keys: int, seed: int = 0) -> Path:
    """Seeded events: type BUY/SELL, name among ``keys`` tickers, price, volume, ts (ms, increasing)."""
    path = data_path(n, keys)
    if path.exists():
        return path
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    names = np.array([f"S{i:04d}" for i in range(keys)])
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, _schema()) as writer:
        chunk, t0 = 1_000_000, 1_700_000_000_000
        for lo in range(0, n, chunk):
            m = min(chunk, n - lo)
            ts = t0 + np.cumsum(rng.integers(0, 3, m, dtype=np.int64))
            t0 = int(ts[-1])
            writer.write_table(
                pa.table(
                    {
                        "type": pa.array(np.array(["BUY", "SELL"])[rng.integers(0, 2, m)]),
                        "name": pa.array(names[rng.integers(0, keys, m)]),
                        "price": pa.array(rng.uniform(0.0, 200.0, m)),
                        "volume": pa.array(rng.integers(1, 10_001, m, dtype=np.int64)),
                        "ts": pa.array(ts),
                    },
                    schema=_schema(),
                ),
                row_group_size=131_072,
            )
    os.replace(tmp, path)
    return path


def _schema() -> pa.Schema:
    return pa.schema(
        [("type", pa.string()), ("name", pa.string()), ("price", pa.float64()),
         ("volume", pa.int64()), ("ts", pa.int64())]
    )


def in_process(path: Path, query: str, repeat: int) -> dict[str, Any]:
    import kleene

    times, count = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        q = kleene.compile(query, time_column="ts", time_unit="ms")
        batches = pq.ParquetFile(path).iter_batches(batch_size=65_536)
        count = sum(1 for _ in q.run(batches))
        times.append(time.perf_counter() - t)
    return {"seconds": statistics.median(times), "runs": times, "complex_events": count}


def spark_worker(path: Path, master: str, query: str, repeat: int, ranges: int | None) -> dict[str, Any]:
    """Runs in a child process: one fresh session, ``repeat`` timed jobs."""
    from kleene.spark import detect, local_session

    t = time.perf_counter()
    spark = local_session(master, **{"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": "8"})
    spark.range(10).count()
    startup = time.perf_counter() - t
    times = []
    count = 0
    for _ in range(repeat):
        t = time.perf_counter()
        df = spark.read.parquet(str(path))
        detect(df, query, time_column="ts", time_unit="ms", ranges=ranges).write.format("noop").mode(
            "overwrite"
        ).save()
        times.append(time.perf_counter() - t)
    count = detect(spark.read.parquet(str(path)), query, time_column="ts", time_unit="ms", ranges=ranges).count()
    spark.stop()
    return {"seconds": statistics.median(times), "runs": times, "startup": startup, "complex_events": count}


def run_child(path: Path, master: str, query: str, repeat: int, ranges: int | None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(path), master, query, str(repeat), str(ranges or 0)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, path, master, query, repeat, ranges = sys.argv
        res = spark_worker(Path(path), master, query, int(repeat), int(ranges) or None)
        print(json.dumps(res))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-in-process", action="store_true")
    args = parser.parse_args()
    n = args.events
    path = generate(n, args.keys)
    print(f"data: {path} ({n:,} events, {args.keys} keys)")

    def report(label: str, res: dict[str, Any]) -> None:
        extra = f", start-up {res['startup']:.1f}s" if "startup" in res else ""
        print(f"{label:<38} {res['seconds']:7.2f}s  {n / res['seconds']:>12,.0f} ev/s  "
              f"({res['complex_events']:,} complex events; runs {', '.join(f'{s:.1f}' for s in res['runs'])}{extra})",
              flush=True)

    if not args.skip_in_process:
        report("in-process engine (partitioned)", in_process(path, PARTITIONED, args.repeat))
    one = run_child(path, "local[1]", PARTITIONED, args.repeat, None)
    report("detect local[1] (partitioned)", one)
    two = run_child(path, "local[2]", PARTITIONED, args.repeat, None)
    report("detect local[2] (partitioned)", two)
    print(f"speed-up local[1] -> local[2]: {one['seconds'] / two['seconds']:.2f}x")
    single = run_child(path, "local[2]", RANGED, args.repeat, 1)
    report("local[2] windowed, one ordered task", single)
    ranged = run_child(path, "local[2]", RANGED, args.repeat, None)
    report("local[2] windowed, parallel ranges", ranged)
    print(f"speed-up of parallel ranges: {single['seconds'] / ranged['seconds']:.2f}x")


if __name__ == "__main__":
    main()
