"""MATCH_RECOGNIZE in process: rows/s of the engine, side by side with the reference evaluator.

Workloads (issue 17): Oracle's V shape ``PATTERN (STRT DOWN+ UP+)`` with PREV conditions
per symbol over a random walk of prices; ``A B+ C`` with a running SUM/AVG condition
(the general path: DEFINE reads the match); ``A+ B+`` over rows of one repeated value
(Trino took 49 s on 5,000 rows, trinodb/trino#18036); each also with ALL ROWS PER MATCH
and with reluctant quantifiers.  CPU time (``time.process_time``), the median of
``--repeat`` runs; the reference evaluator runs only at the sizes given by
``--reference-rows`` and gives up past ``--reference-seconds`` (a SIGALRM), shown as
"gave up".  Run::

    .venv/bin/python benchmarks/match_recognize.py --rows 5000 1000000 10000000

Results go to docs/benchmarks.md, section "MATCH_RECOGNIZE in process".
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

V_SHAPE = """PARTITION BY symbol ORDER BY t
MEASURES STRT.t AS start_t, LAST(DOWN.t) AS bottom_t, LAST(UP.t) AS end_t
{rows} AFTER MATCH SKIP TO LAST UP
PATTERN (STRT DOWN+{q} UP+{q})
DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)"""

RUNNING = """PARTITION BY symbol ORDER BY t
MEASURES FIRST(t) AS start_t, COUNT(*) AS n, AVG(B.price) AS mean
{rows} PATTERN (A B+{q} C)
DEFINE B AS SUM(B.step) < 20 AND AVG(B.price) > 0, C AS price < PREV(price)"""

REPEATED = """ORDER BY t MEASURES COUNT(*) AS n {rows} PATTERN (A+{q} B+{q})
DEFINE A AS v = 1, B AS v = 1"""

ONE, ALL = "ONE ROW PER MATCH", "ALL ROWS PER MATCH"

WORKLOADS: list[tuple[str, str, str, str]] = [
    ("V shape, PREV per symbol", "walk", V_SHAPE, ONE),
    ("V shape, ALL ROWS", "walk", V_SHAPE, ALL),
    ("V shape, reluctant", "walk", V_SHAPE.replace("{q}", "?"), ONE),
    ("A B+ C, running SUM/AVG", "walk", RUNNING, ONE),
    ("A B+ C, running SUM/AVG, ALL ROWS", "walk", RUNNING, ALL),
    ("A B+ C, running SUM/AVG, reluctant", "walk", RUNNING.replace("{q}", "?"), ONE),
    ("A+ B+, repeated values", "repeated", REPEATED, ONE),
    ("A+ B+, repeated values, ALL ROWS", "repeated", REPEATED, ALL),
    ("A+? B+?, repeated values", "repeated", REPEATED.replace("{q}", "?"), ONE),
]


def walk(n: int, symbols: int = 10) -> pa.Table:
    """A random walk of prices per symbol (rows interleaved across symbols)."""
    rng = np.random.default_rng(17)
    step = rng.integers(-3, 4, n)
    sym = np.arange(n) % symbols
    price = np.zeros(n, dtype=np.int64)
    for s in range(symbols):
        where = sym == s
        price[where] = np.cumsum(step[where]) + 10_000
    return pa.table({"symbol": sym, "t": np.arange(n), "price": price,
                     "step": np.abs(step)})


def repeated(n: int) -> pa.Table:
    return pa.table({"t": np.arange(n), "v": np.ones(n, dtype=np.int64)})


class GaveUp(Exception):
    pass


def timed(fn: Callable[[], Any], seconds: float | None) -> tuple[float, Any]:
    def alarm(*_: Any) -> None:
        raise GaveUp

    if seconds:
        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        start = time.process_time()
        out = fn()
        return time.process_time() - start, out
    finally:
        if seconds:
            signal.setitimer(signal.ITIMER_REAL, 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[5_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference-rows", type=int, nargs="*", default=[5_000])
    ap.add_argument("--reference-seconds", type=float, default=120.0)
    ap.add_argument("--general-max-rows", type=int, default=1_000_000,
                    help="skip the running SUM/AVG workloads above this size")
    ap.add_argument("--only", nargs="*", default=None,
                    help="run only the workloads whose name is one of these")
    args = ap.parse_args()

    from kleene.language.match_recognize.parser import parse
    from kleene.native import compiled
    from kleene.reference.match_recognize import match_recognize as reference
    from kleene.runtime.match_recognize import evaluate

    print(f"load average {os.getloadavg()}, compiled twins {compiled()}")
    print("| workload | rows | matches (output rows) | engine CPU s | engine rows/s | "
          "reference CPU s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, data, text, rows_mode in WORKLOADS:
        if args.only is not None and name not in args.only:
            continue
        query = text.format(rows=rows_mode, q="")
        mr = parse(query)
        for n in args.rows:
            if "SUM" in name and n > args.general_max_rows:
                continue
            table = walk(n) if data == "walk" else repeated(n)
            times = []
            out: Any = None
            runs = args.repeat if n < 1_000_000 or ("SUM" not in name and n == 1_000_000) else 1
            for _ in range(runs):
                seconds, out = timed(lambda m=mr, t=table: evaluate(m, t), None)
                times.append(seconds)
            engine = statistics.median(times)
            ref = "-"
            if n in args.reference_rows:
                try:
                    seconds, ref_out = timed(lambda t=table, q=query: reference(t, q),
                                             args.reference_seconds)
                    assert ref_out.equals(out), name
                    ref = f"{seconds:.3f}"
                except GaveUp:
                    ref = f"gave up after {args.reference_seconds:.0f} s"
                except Exception as err:  # noqa: BLE001 - e.g. the reference's step budget
                    ref = f"{type(err).__name__}"
            print(f"| {name} | {n:,} | {out.num_rows:,} | {engine:.3f} | {n / engine:,.0f} | "
                  f"{ref} |", flush=True)


if __name__ == "__main__":
    main()
