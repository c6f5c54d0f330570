"""Throughput of ``kleene.spark.detect`` (local[1], local[2]) against the in-process engine.

Run by hand (not a test)::

    python benchmarks/spark_batch.py [--events 10000000] [--keys 1000] [--rounds 2] [--pin]

It generates seeded stock events with ``--keys`` ticker names (Parquet under
``benchmarks/data/``, reused when present), then reports events per second:

* the in-process engine (``kleene.compile(q).run`` over the Parquet batches);
* ``detect`` on a PARTITION BY query with ``local[1]`` and ``local[2]``, each
  in a fresh Python process (a fresh JVM and session), written to Spark's
  ``noop`` sink so that only reading, ordering and evaluation are timed;
* the parallel-ranges plan on a non-partitioned windowed query, ``local[2]``,
  against the same query forced into one ordered task (``ranges=1``).

Each configuration runs in ``--rounds`` fresh sessions, alternating
(local[1], local[2], local[1], ...), so that a change in the machine's load
hits both alike.  Per session: start-up (JVM launch, first job) is excluded;
the first ``detect`` (cold: Python workers start, the JVM compiles its hot
code) is reported apart from the ``--repeat`` warm runs; the figures are
medians.  Besides wall time, the CPU time of the whole process tree (driver,
JVM, Python workers) is reported: on a shared machine it shows the work done
independently of the load.  ``--pin`` adds local[1] pinned to one CPU with
``taskset``: local[1] is one *task* thread, but the JVM's other threads
(Arrow writer, JIT compiler, GC) and the Python worker run beside it, so
unpinned it uses more than one core.
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


def tree_cpu_seconds() -> float:
    """CPU time (user + system) of this process and all its live descendants: the JVM, the Python workers.

    The machine is shared, so wall times vary with the others' load; CPU
    time says how much work a configuration does, independent of waiting.
    """
    procs: dict[int, tuple[int, int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            rest = stat[stat.rindex(")") + 2 :].split()
            procs[int(d)] = (int(rest[1]), sum(int(x) for x in rest[11:15]))
    me, ticks = os.getpid(), 0
    for pid, (_, cpu) in procs.items():
        p = pid
        while p and p != me:
            p = procs.get(p, (0, 0))[0]
        if p == me:
            ticks += cpu
    return ticks / os.sysconf("SC_CLK_TCK") + sum(os.times()[:2])


def spark_worker(path: Path, master: str, query: str, repeat: int, ranges: int | None) -> dict[str, Any]:
    """Runs in a child process: one fresh session, a first (cold) run, then ``repeat`` timed warm runs.

    The first run in a session also pays the Python workers' start (fork,
    imports) and the JVM's just-in-time compilation of the Parquet reader,
    shuffle and Arrow code; it is reported separately (``cold``).  It counts
    the complex events.
    """
    from kleene.spark import detect, local_session

    t = time.perf_counter()
    spark = local_session(master, **{"spark.driver.memory": "6g", "spark.sql.shuffle.partitions": "8"})
    spark.range(10).count()
    startup = time.perf_counter() - t

    def job() -> Any:
        return detect(spark.read.parquet(str(path)), query, time_column="ts", time_unit="ms", ranges=ranges)

    t, c = time.perf_counter(), tree_cpu_seconds()
    count = job().count()
    cold, cold_cpu = time.perf_counter() - t, tree_cpu_seconds() - c
    times, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), tree_cpu_seconds()
        job().write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - t)
        cpus.append(tree_cpu_seconds() - c)
    spark.stop()
    return {"seconds": times, "cpu": cpus, "cold": cold, "cold_cpu": cold_cpu, "startup": startup,
            "complex_events": count, "load": os.getloadavg()[0]}


def run_child(path: Path, master: str, query: str, repeat: int, ranges: int | None, pin: bool) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", str(path), master, query, str(repeat), str(ranges or 0)]
    if pin:
        cmd = ["taskset", "-c", "0", *cmd]  # the JVM and the Python workers inherit the affinity
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
    parser.add_argument("--repeat", type=int, default=1, help="warm runs per session")
    parser.add_argument("--rounds", type=int, default=2,
                        help="sessions per configuration, alternating (local[1], local[2], ...)")
    parser.add_argument("--pin", action="store_true",
                        help="also run local[1] pinned to one CPU (taskset -c 0): one core, not one task")
    parser.add_argument("--skip-in-process", action="store_true")
    parser.add_argument("--skip-partitioned", action="store_true")
    parser.add_argument("--skip-ranges", action="store_true")
    args = parser.parse_args()
    n = args.events
    path = generate(n, args.keys)
    print(f"data: {path} ({n:,} events, {args.keys} keys); load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")

    def report(label: str, runs: list[dict[str, Any]]) -> float:
        warm = [s for r in runs for s in r["seconds"]]
        cpu = [s for r in runs for s in r["cpu"]]
        med = statistics.median(warm)
        loads = ", ".join(f"{r['load']:.1f}" for r in runs)
        print(f"{label:<40} warm {med:6.2f}s {n / med:>10,.0f} ev/s, cpu {statistics.median(cpu):5.1f}s | "
              f"cold {statistics.median(r['cold'] for r in runs):5.1f}s cpu "
              f"{statistics.median(r['cold_cpu'] for r in runs):5.1f}s | "
              f"{runs[0]['complex_events']:,} complex events; warm runs {', '.join(f'{s:.1f}' for s in warm)}; "
              f"load {loads}", flush=True)
        return med

    if not args.skip_in_process:
        res = in_process(path, PARTITIONED, max(args.rounds, 1))
        print(f"{'in-process engine (partitioned)':<40} {res['seconds']:6.2f}s {n / res['seconds']:>10,.0f} ev/s "
              f"({res['complex_events']:,} complex events; runs {', '.join(f'{s:.1f}' for s in res['runs'])})",
              flush=True)
    if not args.skip_partitioned:
        configs = [("detect local[1] (partitioned)", "local[1]", False),
                   ("detect local[2] (partitioned)", "local[2]", False)]
        if args.pin:
            configs.insert(1, ("detect local[1] on 1 CPU (partitioned)", "local[1]", True))
        results: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in configs}
        for _ in range(args.rounds):
            for label, master, pin in configs:
                results[label].append(run_child(path, master, PARTITIONED, args.repeat, None, pin))
        med = {label: report(label, runs) for label, runs in results.items()}
        two = med["detect local[2] (partitioned)"]
        print(f"speed-up local[1] -> local[2]: {med['detect local[1] (partitioned)'] / two:.2f}x")
        if args.pin:
            print(f"speed-up 1 CPU -> 2 CPUs: {med['detect local[1] on 1 CPU (partitioned)'] / two:.2f}x")
    if not args.skip_ranges:
        single: list[dict[str, Any]] = []
        ranged: list[dict[str, Any]] = []
        for _ in range(args.rounds):
            single.append(run_child(path, "local[2]", RANGED, args.repeat, 1, False))
            ranged.append(run_child(path, "local[2]", RANGED, args.repeat, None, False))
        one = report("local[2] windowed, one ordered task", single)
        many = report("local[2] windowed, parallel ranges", ranged)
        print(f"speed-up of parallel ranges: {one / many:.2f}x")


if __name__ == "__main__":
    main()
