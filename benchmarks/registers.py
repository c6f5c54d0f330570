"""Throughput of queries with conditions between events (the register engine).

Run by hand (not a test)::

    python benchmarks/registers.py [--events 1000000] [--sweep-events 200000]
                                   [--windows 10 100 1000] [--runs 1] [--only NAME ...]
                                   [--runtime auto runs windowed]

Over the synthetic stock events of ``generate.py`` (BUY/SELL, 5 names, prices
uniform in [0, 200)), it reports events per second, complex events and the
events the runs actually saw (the rest were dropped by the vectorized unary
prefilter), for:

* ``pair``: ``SELL as a; BUY as b FILTER a[price > 100] AND b[price < a.price]
  WITHIN 10 EVENTS`` (the issue's first query; runs on the vectorized pair join);
* ``rising``: a rising-price iteration, for each window ``w`` of ``--windows``:
  a SELL above 150, then a run of consecutive trades of the same stock (``:+``
  in its partition) above the SELL's price, each higher than the previous one
  (``prev``), within ``w`` events; every such SELL stays a candidate for the
  whole window, so the live runs, and the work per event, grow linearly with
  ``w``;
* the SRT paper's stock patterns (TR §7, eq. 5-10), on our five names (INTC,
  AAPL, GOOG stand for the paper's INTC, RIMM, QQQ; MSFT, AAPL, GOOG, AMZN for
  q1's MSFT, ORCL, CSCO, AMAT) with windows small enough for our stream, where
  every name trades 20 times more often than in the paper's data: ``seq3``,
  ``seq6``, ``k3`` (Kleene), ``q1`` and ``q5`` (Kleene over both types).

``--runtime`` runs each query on several register runtimes side by side:
``runs`` (kleene.registers.runtime), ``windowed`` (the unrolled, lazily
determinized automaton of kleene.registers.window_runtime; count windows
only) or ``auto`` (the engine's choice).

Figures depend on the machine and its load; state them with that caveat.
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

PAIR = (
    "SELECT * FROM S WHERE SELL as a; BUY as b "
    "FILTER a[price > 100] AND b[price < a.price] WITHIN 10 EVENTS"
)
RISING = (
    "SELECT * FROM S WHERE SELL as s; (BUY OR SELL):+ as t "
    "FILTER s[price > 150] AND t[price > prev(t).price AND price > s.price] "
    "PARTITION BY [name] WITHIN {window} EVENTS"
)
PAPER = {
    "seq3": (
        "SELECT * FROM S WHERE SELL as a; BUY as b; BUY as c "
        "FILTER a[name = 'INTC'] AND b[name = 'AAPL'] AND c[name = 'GOOG' AND price > a.price] "
        "WITHIN 25 EVENTS"
    ),
    "seq6": (
        "SELECT * FROM S WHERE SELL as a; BUY as b; BUY as c; SELL as d; BUY as e; BUY as f "
        "FILTER a[name = 'INTC'] AND b[name = 'AAPL'] AND c[name = 'GOOG' AND price > a.price] "
        "AND d[name = 'MSFT'] AND e[name = 'AMZN'] AND f[name = 'INTC' AND price > d.price] "
        "WITHIN 25 EVENTS"
    ),
    "k3": (
        "SELECT * FROM S WHERE SELL as a; (BUY as b)+; BUY as c "
        "FILTER a[name = 'INTC'] AND b[name = 'AAPL' AND price < 500] "
        "AND c[name = 'GOOG' AND price > a.price] WITHIN 25 EVENTS"
    ),
    "q1": (
        "SELECT * FROM S WHERE SELL as a; BUY as b; BUY as c; SELL as d "
        "FILTER a[name = 'MSFT'] AND b[name = 'AAPL'] AND c[name = 'GOOG'] "
        "AND d[name = 'AMZN' AND price < a.price] WITHIN 25 EVENTS"
    ),
    "q5": (
        "SELECT * FROM S WHERE SELL as a; ((BUY OR SELL) as b)+; SELL as c "
        "FILTER a[name = 'MSFT'] AND b[name = 'GOOG' AND volume > 9000] "
        "AND c[name = 'AMZN' AND price < a.price] WITHIN 25 EVENTS"
    ),
}


def run_once(query: str, path: Path, runtime: str = "auto") -> tuple[str, int, int, float]:
    started = time.perf_counter()
    compiled = kleene.compile(query)
    if runtime != "auto" and compiled.register_runtime is not None:
        compiled = compiled.tuned(register_runtime=runtime)
    found = sum(1 for _ in compiled.matches(read_batches(path)))
    elapsed = time.perf_counter() - started
    engine = compiled.engine
    if compiled.register_runtime is not None:
        engine += f" ({compiled.register_runtime})"
    return engine, found, compiled.last_session.engine.steps, elapsed


def measure(name: str, query: str, path: Path, events: int, runs: int, runtime: str = "auto") -> None:
    results = [run_once(query, path, runtime) for _ in range(runs)]
    plan, found, steps, _ = results[0]
    seconds = statistics.median(r[3] for r in results)
    print(
        f"| {name} | {plan} | {events:,} | {found:,} | {steps:,} | {seconds:.2f} | "
        f"{events / seconds:,.0f} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--sweep-events", type=int, default=200_000, help="events for the window sweep")
    parser.add_argument("--windows", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--only", nargs="+", help="run only these (pair, rising, seq3, ...)")
    parser.add_argument(
        "--runtime", nargs="+", default=["auto"], choices=["auto", "runs", "windowed"],
        help="register runtimes to compare side by side (auto: the one the engine chooses)",
    )
    args = parser.parse_args()
    wanted = set(args.only or ["pair", "rising", *PAPER])
    path = generate(args.events)
    sweep = generate(args.sweep_events)
    print("| query | engine | events | complex events | events seen by runs | median s | events/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for runtime in args.runtime:
        if "pair" in wanted:
            measure("pair", PAIR, path, args.events, args.runs, runtime)
    if "rising" in wanted:
        for w in args.windows:
            for runtime in args.runtime:
                measure(
                    f"rising w={w}", RISING.format(window=w), sweep, args.sweep_events, args.runs,
                    runtime,
                )
    for name, query in PAPER.items():
        if name in wanted:
            for runtime in args.runtime:
                measure(name, query, path, args.events, args.runs, runtime)


if __name__ == "__main__":
    main()
