"""kleene's process against CORE's process doing the same job, process start to exit, side by side.

    python -m benchmarks.end_to_end [--events 300000] [--runs 5] [--workloads W1 W3 ...]
                                    [--core-python .venv-core/bin/python] [--out DIR]

(``make bench-e2e``.)  The job: read N synthetic stock events from a CSV file
(:func:`benchmarks.datasets.synthetic`), find the complex events of a query, write each one
with its events to a file as JSON Lines.

* **kleene**: ``kleene run QUERY --input events.csv --output out.jsonl``, the installed script
  next to the running interpreter (:data:`benchmarks.startup.KLEENE`).
* **CORE**: ``.venv-core/bin/python benchmarks/core_e2e.py QUERY --input events.csv --output
  out.jsonl --report r.json``: pyarrow reads the file, one ``pycer.PyEvent`` per row,
  ``send_events``, ``get_output()``, then the complex events in kleene's JSON Lines layout
  (:mod:`benchmarks.core_e2e`).  Its report gives CORE's time split and its *engine-only*
  time, ``send_events`` + ``get_output()``: the C++ side without Python's reading and building.
  CORE runs in a private network namespace when possible (:func:`benchmarks.suite.private_network`;
  its offline server binds localhost ports): that prefix (``unshare``, ``sh``, ``ip``) is inside
  CORE's wall time, and its own cost is printed under the table.

Each run is timed from spawning the process to its exit (:func:`benchmarks.startup.run_process`).
``--warmup`` untimed rounds (default 1) come first: they warm the page cache and kleene's
parser cache.  Then ``--runs`` rounds, each over every workload, the two engines alternating
(kleene first in even rounds, CORE first in odd ones), so that the machine's noise hits both.
The first round's outputs are compared: the same complex events, and the files, sorted, byte
for byte the same (or a note says how they differ).  Every run's number of complex events must be the same for both engines: a mismatch
is printed loudly and the exit status is 1.

Reported per workload: the median wall seconds (min-max) of each process, kleene/CORE of those,
CORE's engine-only seconds (median) and kleene's wall over it, CPU seconds (user + system) of
each process, and CORE's in-process split.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.startup import KLEENE, ROOT, Timings, context, count_lines, csv_file, run_process
from benchmarks.suite import DEFAULT_CORE_PYTHON, private_network
from benchmarks.workloads import CORE_ISSUE

WORKLOADS = {
    "W1": CORE_ISSUE["C1"],
    "W2": CORE_ISSUE["C2"],
    "W3": (
        "SELECT * FROM S WHERE SELL as a; BUY+ as b; SELL as c "
        "FILTER a[price > 180] AND c[price < 20] WITHIN 10 EVENTS"
    ),
    "W4": "SELECT * FROM S WHERE (BUY:+) as b FILTER b[price > 150] PARTITION BY [name] WITHIN 30 EVENTS",
}
"""W1, W2: the core issue's stock queries (as the suite runs them); W3: Kleene iteration;
W4: contiguous iteration per stock name (``:+`` alone, which CORE keeps contiguous)."""
CORE_SCRIPT = ROOT / "benchmarks" / "core_e2e.py"
ENGINES = ("kleene", "core")
PHASES = ("read", "build", "send", "get_output", "write")


@dataclass
class Result:
    """The runs of both engines on one workload."""

    name: str
    times: dict[str, Timings] = field(default_factory=lambda: {e: Timings() for e in ENGINES})
    counts: dict[str, list[int]] = field(default_factory=lambda: {e: [] for e in ENGINES})
    core_reports: list[dict[str, object]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    mismatch: bool = False

    def count(self, engine: str) -> str:
        seen = sorted(set(self.counts[engine]))
        return " / ".join(f"{c:,}" for c in seen) if seen else "—"

    def core_median(self, key: str) -> float:
        return statistics.median(float(r["phases"][key] if key in PHASES else r[key]) for r in self.core_reports)  # type: ignore[index]


class Engines:
    """Starts one engine's process on one workload and reads back what it wrote."""

    def __init__(self, core_python: Path, data: Path, scratch: Path) -> None:
        self.core_python = core_python
        self.data = data
        self.scratch = scratch
        self.core_prefix = private_network()

    def output(self, name: str, engine: str) -> Path:
        return self.scratch / f"{name}.{engine}.jsonl"

    def command(self, name: str, engine: str) -> list[str]:
        query, out = WORKLOADS[name], str(self.output(name, engine))
        if engine == "kleene":
            return [str(KLEENE), "run", query, "--input", str(self.data), "--output", out]
        report = str(self.scratch / f"{name}.core.json")
        return [*self.core_prefix, str(self.core_python), str(CORE_SCRIPT), query,
                "--input", str(self.data), "--output", out, "--report", report]

    def run(self, result: Result, engine: str, timed: bool) -> int:
        """One run; returns the complex events written (the output file's lines)."""
        self.output(result.name, engine).unlink(missing_ok=True)
        wall, cpu = run_process(self.command(result.name, engine), cwd=self.scratch, log=self.scratch / f"{engine}.log")
        found = count_lines(self.output(result.name, engine))
        if timed:
            result.times[engine].add(wall, cpu)
            result.counts[engine].append(found)
            if engine == "core":
                result.core_reports.append(json.loads((self.scratch / f"{result.name}.core.json").read_text()))
        return found

    def prefix_cost(self, runs: int = 5) -> float | None:
        """Median seconds of the private-network prefix alone (``unshare ... true``), or None without one."""
        if not self.core_prefix:
            return None
        log = self.scratch / "prefix.log"
        return statistics.median(run_process([*self.core_prefix, "true"], cwd=self.scratch, log=log)[0] for _ in range(runs))


def compare_outputs(kleene_out: Path, core_out: Path) -> str:
    """'' when both files hold the same lines (in any order), else how they differ."""
    k, c = sorted(kleene_out.read_text().splitlines()), sorted(core_out.read_text().splitlines())
    if k == c:
        return ""
    positions = [{tuple(json.loads(line)["positions"]) for line in lines} for lines in (k, c)]
    if positions[0] == positions[1]:
        return "same complex events, but the JSON lines differ in text"
    only_k, only_c = sorted(positions[0] - positions[1]), sorted(positions[1] - positions[0])
    return f"complex events differ: only kleene {only_k[:3]} ({len(only_k)}), only CORE {only_c[:3]} ({len(only_c)})"


def loud(message: str) -> None:
    bar = "!" * 72
    print(f"\n{bar}\n!! {message}\n{bar}\n", file=sys.stderr, flush=True)


def markdown(results: list[Result]) -> str:
    head = (
        "| workload | complex events kleene | complex events CORE | kleene wall s | CORE wall s | kleene/CORE wall | "
        "CORE engine-only s | kleene wall / CORE engine-only | CPU s kleene / CORE | "
        "CORE in-process s: read / build / send / get_output / write |\n"
        "|---|---:|---:|---|---|---:|---:|---:|---|---|\n"
    )
    lines = []
    for r in results:
        k, c = r.times["kleene"], r.times["core"]
        if not k.wall or not c.wall:
            lines.append(f"| {r.name} | {r.count('kleene')} | {r.count('core')} | — | — | — | — | — | — | — |")
            continue
        engine = r.core_median("engine")
        split = " / ".join(f"{r.core_median(p):.2f}" for p in PHASES)
        flag = " **MISMATCH**" if r.mismatch else ""
        lines.append(
            f"| {r.name} | {r.count('kleene')}{flag} | {r.count('core')}{flag} | {k.cell()} | {c.cell()} | "
            f"{k.median / c.median:.2f} | {engine:.3f} | {k.median / engine:.2f} | "
            f"{statistics.median(k.cpu):.2f} / {statistics.median(c.cpu):.2f} | {split} |"
        )
    notes = [f"- {r.name}: {note}" for r in results for note in r.notes]
    return head + "\n".join(lines) + ("\n\nNotes:\n" + "\n".join(notes) if notes else "") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000, help="synthetic stock events in the CSV (default 300,000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per engine and workload; median reported (default 5)")
    parser.add_argument("--workloads", nargs="*", choices=sorted(WORKLOADS), help="default: all")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--core-python", type=Path, default=DEFAULT_CORE_PYTHON)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "end_to_end",
                        help="scratch directory: both engines' outputs, logs")
    args = parser.parse_args(argv)
    if not args.core_python.exists():
        print(f"CORE's interpreter {args.core_python} is missing: run `make venv-core` first", file=sys.stderr)
        return 2
    if not KLEENE.exists():
        print(f"{KLEENE} is missing: run this with the project's .venv/bin/python", file=sys.stderr)
        return 2
    scratch = args.out.resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    data = csv_file(args.events, args.seed)
    engines = Engines(args.core_python, data, scratch)
    results = [Result(name) for name in args.workloads or WORKLOADS]
    print(f"# kleene vs CORE, process start to exit: {len(results)} workloads, {args.events:,} events (CSV), "
          f"{args.runs} timed rounds after {args.warmup} untimed; {context()}", flush=True)
    for r in range(args.warmup + args.runs):
        timed = r >= args.warmup
        for res in results:
            order = ENGINES if r % 2 == 0 else ENGINES[::-1]
            found = {engine: engines.run(res, engine, timed) for engine in order}
            if found["kleene"] != found["core"]:
                res.mismatch = True
                loud(f"MISMATCH on {res.name}, round {r + 1}: kleene wrote {found['kleene']:,} complex events, CORE {found['core']:,}")
            if r == 0:
                problem = compare_outputs(engines.output(res.name, "kleene"), engines.output(res.name, "core"))
                if problem:
                    res.notes.append(problem)
                    res.mismatch = res.mismatch or problem.startswith("complex events differ")
                    if res.mismatch:
                        loud(f"MISMATCH on {res.name}: {problem}")
            if timed:
                k, c = res.times["kleene"].wall[-1], res.times["core"].wall[-1]
                print(f"round {r + 1} {res.name}: kleene {k:.2f} s, CORE {c:.2f} s ({found['kleene']:,} complex events)", flush=True)
    prefix = engines.prefix_cost()
    table = markdown(results)
    print(f"\n{args.events:,} synthetic stock events (CSV), median (min-max) of {args.runs} runs, every run a fresh "
          f"process timed from spawn to exit; {context()}\n")
    print(table)
    print("Queries:\n" + "\n".join(f"- {r.name}: `{WORKLOADS[r.name]}`" for r in results))
    if prefix is not None:
        print(f"\nCORE runs inside `unshare -rn` (private localhost); that prefix alone takes {prefix:.3f} s (median of 5).")
    if any(r.mismatch for r in results):
        loud("kleene and CORE DISAGREE: see the table's notes")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
