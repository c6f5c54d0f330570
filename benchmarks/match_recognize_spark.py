"""kleene.spark.match_recognize on local[1] (pinned to one core) against local[2].

The issue's target (issue 17): on 10 M rows in 1,000 partitions, ``local[2]`` at
least 1.6x faster than ``local[1]`` pinned with ``taskset -c 0``.  The rows are
K partitions (``symbol``) of random-walk prices (``price``) ordered by ``t``;
the clause is Oracle's V shape with PREV conditions per symbol (``--query
v_shape``) or one of the issue's other benchmark queries.  Each master runs in
its own process (a fresh JVM: ``python benchmarks/match_recognize_spark.py
--child ...``), reads the same Parquet file, and counts the result (every partition is
evaluated: Spark cannot count a Python UDF's rows without running it); the job's wall time is measured inside the child (the
session start excluded), and the CPU time of the whole process tree (JVM and Python
workers) from /proc around the job (``cpu_s_job``).  The in-process evaluation
(:func:`kleene.sql.clause.evaluate_clause`, the same call Spark's tasks make) runs
once on the same rows for the row count to agree and a rows/s figure.

``--comparator PYTHON``: the interpreter of a virtualenv holding PyPI's
``pandas-match-recognize`` (it downgrades numpy, so not kleene's; make one with
``python -m venv /tmp/pmr && /tmp/pmr/bin/pip install pandas-match-recognize``).
Its ``match_recognize`` then runs on the same rows (a CSV copy) with the same
clause; its time and row count are reported beside kleene's.  Absent: skipped
with a message.  ``--comparator-check`` runs every query of the issue's
benchmark list through it on small inputs and says which it supports and whether
its rows agree with kleene's.

Examples::

    python benchmarks/match_recognize_spark.py --rows 50000 --partitions 100
    python benchmarks/match_recognize_spark.py --rows 10000000 --partitions 1000   # the target
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

HERE = Path(__file__).resolve()

QUERIES = {
    "v_shape": """PARTITION BY symbol ORDER BY t
        MEASURES FIRST(t) AS start_t, LAST(DOWN.t) AS bottom_t, LAST(UP.t) AS end_t
        ONE ROW PER MATCH AFTER MATCH SKIP TO LAST UP
        PATTERN (STRT DOWN+ UP+)
        DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)""",
    "running_avg": """PARTITION BY symbol ORDER BY t
        MEASURES FIRST(t) AS start_t, LAST(t) AS end_t, AVG(B.price) AS mean
        PATTERN (A B+ C)
        DEFINE A AS price > 100, B AS SUM(B.price) < 1000 AND AVG(B.price) > 90,
               C AS price > LAST(B.price)""",
    "repeated": """PARTITION BY symbol ORDER BY t
        MEASURES FIRST(t) AS start_t, LAST(t) AS end_t, COUNT(*) AS n
        PATTERN (A+ B+)
        DEFINE A AS flat = 1, B AS flat = 1""",
    "v_shape_all_rows": """PARTITION BY symbol ORDER BY t
        MEASURES CLASSIFIER() AS label, MATCH_NUMBER() AS m
        ALL ROWS PER MATCH AFTER MATCH SKIP TO LAST UP
        PATTERN (STRT DOWN+ UP+)
        DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)""",
    "v_shape_reluctant": """PARTITION BY symbol ORDER BY t
        MEASURES FIRST(t) AS start_t, LAST(t) AS end_t
        PATTERN (STRT DOWN+? UP+?)
        DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)""",
}


def make_rows(rows: int, partitions: int, seed: int = 0) -> pa.Table:
    """``partitions`` random walks of about ``rows / partitions`` steps, interleaved by t."""
    rng = np.random.default_rng(seed)
    symbol = rng.integers(0, partitions, rows)
    steps = rng.normal(0, 1, rows)
    price = 100 + np.cumsum(steps)  # one walk; each partition's rows are a sample of it
    return pa.table({"symbol": symbol.astype(np.int64), "t": np.arange(rows, dtype=np.int64),
                     "price": np.round(price, 2), "flat": np.ones(rows, dtype=np.int64)})


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system, of the processes and their reaped children) of ``root`` and
    every process under it, from /proc: the driver, the JVM and Spark's Python workers."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(x) for x in fields[11:15]) / tick

    def under(pid: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = parents.get(pid, 0)
        return False

    return sum(t for pid, t in times.items() if under(pid))


def child(args: argparse.Namespace) -> None:
    """One master: time the job (the session's start excluded); print a JSON line."""
    import kleene.spark
    from kleene.spark.session import local_session

    spark = local_session(args.child, app_name="kleene-mr-bench",
                          **{"spark.sql.shuffle.partitions": str(args.shuffle_partitions),
                             "spark.driver.memory": "2g"})
    df = spark.read.parquet(args.data)
    spark.range(1).collect()  # the JVM is warm before the clock starts
    cpu, start = tree_cpu(os.getpid()), time.perf_counter()
    result = kleene.spark.match_recognize(df, QUERIES[args.query])
    count = result.count()
    wall, cpu = time.perf_counter() - start, tree_cpu(os.getpid()) - cpu
    print(json.dumps({"master": args.child, "rows_out": count, "wall_s": round(wall, 3),
                      "cpu_s_job": round(cpu, 1)}))
    spark.stop()


def run_master(master: str, args: argparse.Namespace, data: Path) -> dict[str, Any]:
    cmd = [sys.executable, str(HERE), "--child", master, "--data", str(data), "--query",
           args.query, "--shuffle-partitions", str(args.shuffle_partitions)]
    pin = "0" if master == "local[1]" else "0,1"
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", pin, *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{master} failed:\n{done.stderr[-3000:]}")
    line = [x for x in done.stdout.splitlines() if x.startswith("{")][-1]
    found = json.loads(line)
    found["pinned"] = pin
    return found


def in_process(table: pa.Table, query: str) -> dict[str, Any]:
    from kleene.language.match_recognize.parser import parse
    from kleene.sql.clause import evaluate_clause

    start, cpu = time.perf_counter(), time.process_time()
    out = evaluate_clause(parse(QUERIES[query]), table)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"rows_out": out.num_rows, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "rows_per_s": round(table.num_rows / max(wall, 1e-9))}


COMPARATOR = r"""
import json, sys, time
import pandas as pd
from pandas_match_recognize import match_recognize
df = pd.read_csv(sys.argv[1])
query = sys.argv[2]
start = time.perf_counter()
try:
    out = match_recognize(f"SELECT * FROM t MATCH_RECOGNIZE ({query})", df)
    print(json.dumps({"rows_out": len(out), "wall_s": round(time.perf_counter() - start, 3),
                      "rows": json.loads(out.to_json(orient="records"))}))
except Exception as err:
    print(json.dumps({"error": f"{type(err).__name__}: {err}"[:300]}))
"""


def comparator(python: str | None, csv: Path, query: str, timeout: float) -> dict[str, Any]:
    if not python:
        return {"skipped": "no --comparator interpreter given (pandas-match-recognize lives in "
                           "its own virtualenv: it downgrades numpy)"}
    probe = subprocess.run([python, "-c", "import pandas_match_recognize"], capture_output=True)
    if probe.returncode != 0:
        return {"skipped": f"pandas-match-recognize is not importable by {python}"}
    try:
        done = subprocess.run([python, "-c", COMPARATOR, str(csv), query], capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": done.stderr[-300:]}


def comparator_check(args: argparse.Namespace, work: Path) -> None:
    """Each benchmark query through pandas-match-recognize on small inputs, against kleene."""
    from kleene.language.match_recognize.parser import parse
    from kleene.sql.clause import evaluate_clause

    table = make_rows(args.check_rows, 4, seed=1)
    csv = work / "check.csv"
    pcsv.write_csv(table, csv)
    for name, query in QUERIES.items():
        mine = evaluate_clause(parse(query), table)
        theirs = comparator(args.comparator, csv, query, args.comparator_timeout)
        rows = theirs.pop("rows", None)
        verdict = "error" if "error" in theirs or "skipped" in theirs else "ran"
        if rows is not None:
            key = [c for c in mine.column_names if c not in ("label",)]
            a = sorted(tuple(r.get(c) for c in key) for r in mine.to_pylist())
            b = sorted(tuple(r.get(c) for c in key) for r in rows)
            verdict = "agrees" if a == b else f"differs ({len(b)} rows, kleene {len(a)})"
        print(json.dumps({"check": name, "rows_in": table.num_rows, "kleene_rows": mine.num_rows,
                          "pandas_match_recognize": verdict, **theirs}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=1_000)
    ap.add_argument("--query", choices=sorted(QUERIES), default="v_shape")
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--shuffle-partitions", type=int, default=8)
    ap.add_argument("--no-in-process", action="store_true", help="skip the in-process run")
    ap.add_argument("--comparator", metavar="PYTHON",
                    help="interpreter with pandas-match-recognize installed")
    ap.add_argument("--comparator-timeout", type=float, default=600)
    ap.add_argument("--comparator-check", action="store_true",
                    help="only check which benchmark queries pandas-match-recognize supports")
    ap.add_argument("--check-rows", type=int, default=400)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory(prefix="kleene-mr-bench-") as d:
        work = Path(d)
        if args.comparator_check:
            comparator_check(args, work)
            return
        table = make_rows(args.rows, args.partitions)
        data = work / "rows.parquet"
        pq.write_table(table, data)
        load = os.getloadavg()
        print(json.dumps({"rows": args.rows, "partitions": args.partitions, "query": args.query,
                          "cores": os.cpu_count(), "load_1m": round(load[0], 2)}))
        results = {}
        for master in args.masters.split(","):
            results[master] = run_master(master, args, data)
            print(json.dumps(results[master]))
        if "local[1]" in results and "local[2]" in results:
            speedup = results["local[1]"]["wall_s"] / max(results["local[2]"]["wall_s"], 1e-9)
            print(json.dumps({"speedup_local2_over_local1": round(speedup, 2), "target": 1.6}))
        if not args.no_in_process:
            mine = in_process(table, args.query)
            print(json.dumps({"in_process": mine}))
            counts = {r["rows_out"] for r in results.values()} | {mine["rows_out"]}
            if len(counts) != 1:
                raise SystemExit(f"row counts differ: {counts}")
        if args.comparator:
            csv = work / "rows.csv"
            pcsv.write_csv(table, csv)
            theirs = comparator(args.comparator, csv, QUERIES[args.query], args.comparator_timeout)
            theirs.pop("rows", None)
            print(json.dumps({"pandas_match_recognize": theirs}))
        else:
            print(json.dumps({"pandas_match_recognize": comparator(None, work, "", 0)}))


if __name__ == "__main__":
    main()
