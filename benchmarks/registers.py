"""Throughput of queries with conditions between events (the register engine).

Run by hand (not a test)::

    python benchmarks/registers.py [--events 1000000] [--windows 100 1000 10000]
                                   [--budget 60] [--runs 1] [--only NAME ...]
                                   [--runtime auto runs windowed] [--check 1500]
                                   [--e2e-events 100000] [--count]

Over the synthetic stock events of ``generate.py`` (BUY/SELL, 5 names, prices
uniform in [0, 200)), each row runs in a child process capped at 3 GB of
address space, for at most ``--budget`` CPU seconds (a row that runs out
reports the events it got through: its output grows with the window, see
docs/benchmarks.md, "Registers"), and reports CPU and wall seconds, events
per CPU second, complex events, and the runs the engine tried (``touched``:
runs handed to an event by the run index, or candidate pairs of the pair
join) per event.  Complex events are taken with ``match_batches`` (the bulk
API: columns, no object per complex event).  The rows:

* ``pair``: ``SELL as a; BUY as b FILTER a[price > 100] AND b[price < a.price]
  WITHIN 10 EVENTS`` (the issue's pair query; the vectorized pair join), in
  process, and ``pair e2e``: the same through ``kleene run`` on
  ``--e2e-events`` events, CSV in, JSON Lines out, process start to exit,
  next to ``kleene run`` on one row (the start-up);
* ``rising w=…``: a rising-price iteration, for each window ``w`` of
  ``--windows``: a SELL above 150, then a run of consecutive trades of the
  same stock (``:+`` in its partition) above the SELL's price, each higher
  than the previous one (``prev``), within ``w`` events;
* the SRT paper's stock patterns (TR §7, eq. 5-10), at each window: ``seq3``,
  ``seq6``, ``seq9``, ``seq12``, ``k3`` to ``k12`` (Kleene), ``q1`` to ``q4`` (§5.7: thresholds on
  price in q2/q4, BUY OR SELL in q3/q4) and ``q5`` (Kleene over both types), on our
  five names (INTC, AAPL, GOOG stand for the paper's INTC, RIMM, QQQ; MSFT,
  AAPL, GOOG, AMZN for q1's MSFT, ORCL, CSCO, AMAT).

``--count``: the register rows count their complex events (``Query.count``) instead of listing
them, with no limit on the complex events of one event (:data:`COUNT_MATCHES`).  In the class of
kleene.registers.aggregate (rising, seq3, k3, q1 to q5) the count keeps no runs: ``nodes counted / event``
is then the tree nodes the aggregates touched per event and ``live runs at end`` the starts in
the window; elsewhere the merged runs add the window counts of their tECS nodes
(kleene.registers.counting) and the column is the tECS nodes the counts visited.
``--runtime auto noagg`` puts the two side by side (``noagg``: the merged runs' count).

``--check N``: each row's count of complex events on the first N events is
compared with the reference evaluator's (kleene.reference: every valuation of
the pattern, then the filters, i.e. ALL-then-filter); ``ok``, ``DIFF`` or
``-`` (the reference ran out of its budget).  ``--runtime`` runs the
register rows on several register runtimes side by side.

Figures depend on the machine and its load; state them with that caveat.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kleene  # noqa: E402
from generate import generate  # noqa: E402
from kleene.io.readers import read_batches  # noqa: E402
from startup import KLEENE, run_process  # noqa: E402

PAIR = (
    "SELECT * FROM S WHERE SELL as a; BUY as b "
    "FILTER a[price > 100] AND b[price < a.price] WITHIN 10 EVENTS"
)
MEMORY = 3_000_000_000
"""Address space of a row's child process (bytes)."""
def chunk(query: str) -> int:
    """Rows per batch handed to the engine: the complex events of a batch are held in columns
    until the batch is done, and at w = 10,000 one event of ``seq3`` completes ~50,000 of them;
    small batches cost time per batch, so they shrink only with the window.  A counted row
    starts there and doubles its batches up to the reader's 65,536 rows while one takes under
    0.25 CPU s (the budget is checked between batches)."""
    for w, rows in ((10_000, 256), (1000, 4096)):
        if f"WITHIN {w} EVENTS" in query:
            return rows
    return 65536
MAX_MATCHES = 2_000_000
"""Complex events one event may complete (default 1,000,000): past it the row stops with the
limit's message (seq6 at w = 1,000: one event completes tens of millions), which says that the
output, not the runs, is what does not fit."""
COUNT_MATCHES = 1 << 100_000
"""``max_matches`` of the counted rows: a count builds nothing per complex event, and Python's
integers do not overflow (k3 at w = 1,000 counts more than 2^62 complex events on one event: the
subsets of a hundred ``b``; at w = 10,000 more than 2^1,000)."""
RISING = (
    "SELECT * FROM S WHERE SELL as s; (BUY OR SELL):+ as t "
    "FILTER s[price > 150] AND t[price > prev(t).price AND price > s.price] "
    "PARTITION BY [name] WITHIN {window} EVENTS"
)
NAMES = ("INTC", "AAPL", "GOOG", "MSFT", "AMZN")
"""The five names of the synthetic stream, in the order the longer patterns cycle through them."""


def _chain(triples: int, kleene_middle: bool) -> str:
    """The SRT paper's ``seq`` (eq. 4-5) and ``k`` (eq. 6) patterns of length ``3 · triples``: per
    triple a SELL that writes a register, a BUY (iterated, ``+``, for ``k``) and a BUY whose price
    exceeds the register, each with a name of its own (cycling through :data:`NAMES`, as the
    paper's "more such expressions" on more companies)."""
    parts, conds = [], []
    for t in range(triples):
        x, y, z = (f"{v}{t}" for v in "xyz")
        n1, n2, n3 = (NAMES[(3 * t + i) % len(NAMES)] for i in range(3))
        parts += [f"SELL as {x}", f"(BUY as {y})+" if kleene_middle else f"BUY as {y}", f"BUY as {z}"]
        conds += [f"{x}[name = '{n1}']",
                  f"{y}[name = '{n2}'" + (" AND price < 500]" if kleene_middle else "]"),
                  f"{z}[name = '{n3}' AND price > {x}.price]"]
    return f"SELECT * FROM S WHERE {'; '.join(parts)} FILTER {' AND '.join(conds)} WITHIN {{window}} EVENTS"


def _q(middle: str, thresholds: bool) -> str:
    """The SRT paper's q1-q4 (§5.7): SELL, two BUYs (``middle``: ``BUY`` or ``(BUY OR SELL)``,
    q3/q4), SELL below the first SELL's price; q2/q4 add local thresholds on price."""
    lo, hi = (" AND price > 100", " AND price > 50") if thresholds else ("", "")
    return (
        f"SELECT * FROM S WHERE SELL as a; {middle} as b; {middle} as c; SELL as d "
        f"FILTER a[name = 'MSFT'{lo}] AND b[name = 'AAPL'{hi}] AND c[name = 'GOOG'{hi}] "
        "AND d[name = 'AMZN' AND price < a.price] WITHIN {window} EVENTS"
    )


PAPER = {
    "seq3": (
        "SELECT * FROM S WHERE SELL as a; BUY as b; BUY as c "
        "FILTER a[name = 'INTC'] AND b[name = 'AAPL'] AND c[name = 'GOOG' AND price > a.price] "
        "WITHIN {window} EVENTS"
    ),
    "seq6": (
        "SELECT * FROM S WHERE SELL as a; BUY as b; BUY as c; SELL as d; BUY as e; BUY as f "
        "FILTER a[name = 'INTC'] AND b[name = 'AAPL'] AND c[name = 'GOOG' AND price > a.price] "
        "AND d[name = 'MSFT'] AND e[name = 'AMZN'] AND f[name = 'INTC' AND price > d.price] "
        "WITHIN {window} EVENTS"
    ),
    "seq9": _chain(3, False),
    "seq12": _chain(4, False),
    "k3": (
        "SELECT * FROM S WHERE SELL as a; (BUY as b)+; BUY as c "
        "FILTER a[name = 'INTC'] AND b[name = 'AAPL' AND price < 500] "
        "AND c[name = 'GOOG' AND price > a.price] WITHIN {window} EVENTS"
    ),
    "k6": _chain(2, True),
    "k9": _chain(3, True),
    "k12": _chain(4, True),
    "q1": _q("BUY", False),
    "q2": _q("BUY", True),
    "q3": _q("(BUY OR SELL)", False),
    "q4": _q("(BUY OR SELL)", True),
    "q5": (
        "SELECT * FROM S WHERE SELL as a; ((BUY OR SELL) as b)+; SELL as c "
        "FILTER a[name = 'MSFT'] AND b[name = 'GOOG' AND volume > 9000] "
        "AND c[name = 'AMZN' AND price < a.price] WITHIN {window} EVENTS"
    ),
}


def run_row(
    query: str, path: Path, runtime: str, budget: float, check: int, count: bool = False
) -> dict[str, object]:
    """One row, in this (child) process: the figures as a dict (printed as JSON by ``--row``)."""
    import pyarrow.parquet as pq

    from kleene.language.parser import parse_query
    from kleene.reference.oracle import OracleBudgetExceeded, evaluate

    limit = COUNT_MATCHES if count else MAX_MATCHES
    compiled = kleene.compile(query, max_matches=limit)
    if runtime == "noagg":  # the merged runs' count, as before the aggregates
        compiled = compiled.tuned(aggregates=False)
    elif runtime != "auto" and compiled.register_runtime is not None:
        compiled = compiled.tuned(register_runtime=runtime)
    seen = [0]
    rows = [chunk(query)]
    cpu0, wall0 = time.process_time(), time.perf_counter()

    def batches():  # type: ignore[no-untyped-def]
        for batch in read_batches(path):  # 65,536 rows, as kleene run and Query.count read
            i = 0
            while i < batch.num_rows:
                now = time.process_time()
                if now - cpu0 > budget:
                    return
                piece = batch.slice(i, rows[0])
                i += piece.num_rows
                seen[0] += piece.num_rows
                yield piece
                if count and time.process_time() - now < 0.25:  # a count holds nothing: grow
                    rows[0] = min(65536, 2 * rows[0])  # to the reader's batches while the budget
                    # is still checked often enough on a slow row

    if count:
        found = compiled.count(batches())
    else:
        found = sum(len(b) for b in compiled.match_batches(batches()))  # the bulk API
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    engine = compiled.last_session.engine
    row: dict[str, object] = {
        "engine": compiled.engine + (f" ({compiled.register_runtime})" if compiled.register_runtime else ""),
        "events": seen[0], "found": found, "cpu": cpu, "wall": wall,
        "touched": getattr(engine, "touched", 0), "check": "-",
        "live": getattr(engine, "live", 0), "nodes": getattr(engine, "nodes", 0),
        "counted": getattr(engine, "count_work", [0])[0],
    }
    counter = getattr(engine, "counter", None)
    if counter is not None:  # counted by aggregates: no runs; tree nodes touched, starts alive
        row.update(engine=f"{row['engine']} + aggregates", touched=0, nodes=0,
                   live=counter.live, counted=counter.work[0])
    if check:
        table = pq.read_table(path).slice(0, check)
        events = table.to_pylist()
        if count:
            mine = kleene.compile(query, max_matches=limit).count(table)
        else:
            mine = sum(1 for _ in kleene.compile(query).matches(table))
        try:
            ref = len(evaluate(parse_query(query), events, times=list(range(len(events))), budget=2_000_000))
            row["check"] = "ok" if ref == mine else f"DIFF {mine} vs {ref}"
        except OracleBudgetExceeded:
            row["check"] = "-"
        except MemoryError:  # the reference's valuations (seq6 on 400 events), not the engine
            row["check"] = "- (reference out of memory)"
        row["check_found"] = mine
    return row


def measure(
    name: str, query: str, path: Path, runs: int, runtime: str, budget: float, check: int,
    count: bool = False,
) -> None:
    """Run a row ``runs`` times, each in a child process capped at :data:`MEMORY`; print medians."""
    results = []
    for _ in range(runs):
        cmd = [
            sys.executable, __file__, "--row", query, str(path), runtime, str(budget), str(check),
            "count" if count else "list",
        ]
        proc = subprocess.run(
            cmd, capture_output=True, text=True,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY)),
        )
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
            print(f"| {name} | {runtime} | failed: {tail} |", flush=True)
            return
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        check = 0  # once is enough
    first = results[0]
    cpu = statistics.median(float(r["cpu"]) for r in results)
    wall = statistics.median(float(r["wall"]) for r in results)
    events = int(first["events"])
    found = int(first["found"])
    shown = f"{found:,}" if found < 10**15 else f"≈ 10^{len(str(found)) - 1}"
    print(
        f"| {name} | {first['engine']} | {events:,} | {shown} | "
        f"{int(first['touched']) / max(events, 1):,.1f} | {int(first['live']):,} | "
        f"{int(first['nodes']) / max(events, 1):,.1f} | "
        + (f"{int(first['counted']) / max(events, 1):,.1f} | " if count else "")
        + f"{cpu:.2f} | {wall:.2f} | "
        f"{events / cpu:,.0f} | {first['check']} |",
        flush=True,
    )


def end_to_end(events: int, runs: int) -> None:
    """The pair query through ``kleene run``: CSV in, JSON Lines out, process start to exit."""
    import pyarrow.csv as pacsv

    from benchmarks import datasets

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        csv, one = d / "events.csv", d / "one.csv"
        table = datasets.synthetic(events, 0)
        pacsv.write_csv(table, csv)
        pacsv.write_csv(table.slice(0, 1), one)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        for label, source, n in (("start-up (1 row)", one, 1), ("pair e2e", csv, events)):
            cmd = [str(KLEENE), "run", PAIR, "--input", str(source), "--output", str(d / "out.jsonl")]
            run_process(cmd, cwd=d, log=d / "log", env=env)  # warm the page cache and the parser cache
            times = [run_process(cmd, cwd=d, log=d / "log", env=env) for _ in range(runs)]
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            lines = sum(1 for _ in open(d / "out.jsonl", "rb"))
            print(
                f"| {label} | kleene run | {n:,} | {lines:,} | - | - | - | {cpu:.2f} | {wall:.2f} | "
                f"{n / cpu:,.0f} | - |",
                flush=True,
            )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--row":
        query, path, runtime, budget, check, mode = sys.argv[2:8]
        row = run_row(query, Path(path), runtime, float(budget), int(check), mode == "count")
        print(json.dumps(row))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--windows", type=int, nargs="+", default=[100, 1000, 10_000])
    parser.add_argument("--budget", type=float, default=60.0, help="CPU seconds per row at most")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--check", type=int, default=1500, help="prefix checked against the reference")
    parser.add_argument("--e2e-events", type=int, default=100_000)
    parser.add_argument("--only", nargs="+", help="run only these (pair, e2e, rising, seq3, ...)")
    parser.add_argument(
        "--runtime", nargs="+", default=["auto"],
        choices=["auto", "merged", "runs", "windowed", "noagg"],
        help="register runtimes to compare side by side (auto: the one the engine chooses; "
        "noagg: the merged runs' count without the aggregates of kleene.registers.aggregate)",
    )
    parser.add_argument(
        "--count", action="store_true",
        help="count the register rows' complex events (Query.count) instead of listing them",
    )
    args = parser.parse_args()
    wanted = set(args.only or ["pair", "e2e", "rising", *PAPER])
    path = generate(args.events)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    counted = "| nodes counted / event " if args.count else ""
    print(
        "| query | engine | events | complex events | runs tried / event | live runs at end "
        f"| tECS nodes / event {counted}| CPU s | wall s | events / CPU s | count vs ALL-then-filter |"
    )
    print("|---|---|---:|---:|---:|---:|---:|" + ("---:|" if args.count else "") + "---:|---:|---:|---|")
    if "pair" in wanted:
        measure("pair", PAIR, path, args.runs, "auto", args.budget, args.check)
    if "e2e" in wanted:
        end_to_end(args.e2e_events, max(args.runs, 3))
    for w in args.windows:
        for name, query in {"rising": RISING, **PAPER}.items():
            if name in wanted:
                for runtime in args.runtime:
                    measure(
                        f"{name} w={w}", query.format(window=w), path, args.runs, runtime,
                        args.budget, args.check, args.count,
                    )


if __name__ == "__main__":
    main()
