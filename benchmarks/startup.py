"""Wall time of the ``kleene run`` process as a user runs it, process start to exit.

    python -m benchmarks.startup [--runs 10] [--events 300000] [--out benchmarks/results/startup]

(``make bench-startup``.)  Each command is started with ``subprocess`` and timed from just
before the process is spawned to its exit (``os.wait4``), so the figure holds what the user
waits for: the interpreter's start, the imports, compiling the query, reading the file,
evaluating, writing the output, and the interpreter's exit.  The commands, round-robin
(``--runs`` rounds, after ``--warmup`` untimed ones (default 1) that warm the page cache and
kleene's parser cache, as any run after a user's first one finds them):

* ``python -c pass``: the interpreter alone (a floor, for reference);
* ``python -c "import kleene"``;
* ``kleene run C2 --input empty.csv --output out.jsonl``: the header-only CSV of the synthetic
  stock stream, so everything but the events;
* ``kleene run C2 --input synthetic_<N>.csv --output out.jsonl``: CORE's selective stock query
  (``benchmarks.workloads.CORE_ISSUE["C2"]``) over N synthetic stock events
  (``benchmarks.datasets.synthetic``), complex events as JSON Lines with their events.

``--pair [--against OTHER_KLEENE]`` (issue 18) times instead the pair query
``SELL as a; BUY as b FILTER a[price > 100] AND b[price < a.price] WITHIN 10 EVENTS`` through
``kleene run`` on one row (the start-up) and on ``--pair-events`` events (default 100,000),
CSV in, JSON Lines out, next to the same commands of another installation (``--against``,
e.g. ``/work/main/.venv/bin/kleene``), alternating in the same loop (``--runs`` rounds, default
5 here); both outputs must hold the same complex events.  Reported: median wall and CPU
seconds and events per wall second, process start to exit.

``kleene`` is the installed script next to the running interpreter
(``Path(sys.executable).parent / "kleene"``): run this with ``.venv/bin/python``.  Reported per
command: median, min and max wall seconds, and the median CPU seconds (user + system) of the
process.  The helpers here (:func:`run_process`, :func:`context`) also serve
``benchmarks.end_to_end``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.csv as pacsv

from benchmarks import datasets
from benchmarks.suite import machine
from benchmarks.workloads import CORE_ISSUE

ROOT = Path(__file__).resolve().parent.parent
KLEENE = Path(sys.executable).parent / "kleene"
"""The installed ``kleene`` script of the running interpreter's environment."""


@dataclass
class Timings:
    """Wall and CPU seconds of the runs of one process."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def add(self, wall: float, cpu: float) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    def cell(self) -> str:
        """``median (min-max)`` of the wall seconds."""
        return f"{self.median:.3f} ({min(self.wall):.3f}-{max(self.wall):.3f})"


def run_process(cmd: Sequence[str], *, cwd: Path, log: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run ``cmd`` to its exit: (wall seconds, CPU seconds of the process and its waited-for children).

    stdout and stderr go to ``log``.  A non-zero exit raises ``RuntimeError`` with the log's tail.
    """
    with open(log, "wb") as sink:
        started = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"{Path(cmd[0]).name} exited {proc.returncode}: " + " | ".join(tail))
    return wall, usage.ru_utime + usage.ru_stime


def count_lines(path: Path) -> int:
    """Lines of a file (complex events of a JSON Lines output)."""
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def commit() -> str:
    """The checkout's commit, with ``+changes`` when the working tree differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "?"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def context() -> str:
    """Date, commit and machine (with its load average), for the header of a table."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{now}, commit {commit()}; {machine()}"


def csv_file(n: int, seed: int = 0) -> Path:
    """The synthetic stock stream's N events as CSV (``benchmarks/data``, reused when present)."""
    return datasets.write("synthetic", n, seed, formats=("csv",))["csv"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per command; median, min, max reported (default 10)")
    parser.add_argument("--events", type=int, default=300_000, help="events in the stream of the full run (default 300,000)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "startup", help="scratch directory")
    parser.add_argument("--pair", action="store_true", help="time the pair query of issue 18 instead")
    parser.add_argument("--pair-events", type=int, default=100_000, help="events of the pair run (default 100,000)")
    parser.add_argument("--against", type=Path, help="another installation's kleene script, timed side by side")
    args = parser.parse_args(argv)
    if args.pair:
        return pair(args)
    if not KLEENE.exists():
        print(f"{KLEENE} is missing: run this with the project's .venv/bin/python", file=sys.stderr)
        return 2
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    empty = out / "empty.csv"
    pacsv.write_csv(datasets.synthetic(0, args.seed), empty)  # the header only
    full = csv_file(args.events, args.seed)
    query = CORE_ISSUE["C2"]
    output = out / "out.jsonl"
    python = sys.executable
    commands = {
        "`python -c pass` (the interpreter alone)": [python, "-c", "pass"],
        '`python -c "import kleene"`': [python, "-c", "import kleene"],
        "`kleene run C2` on the header-only CSV": [str(KLEENE), "run", query, "--input", str(empty), "--output", str(output)],
        f"`kleene run C2` on {args.events:,} events": [str(KLEENE), "run", query, "--input", str(full), "--output", str(output)],
    }
    found: dict[str, int] = {}
    timings = {label: Timings() for label in commands}
    print(f"# {len(commands)} commands, {args.runs} timed rounds after {args.warmup} untimed; {context()}", flush=True)
    for r in range(args.warmup + args.runs):
        for label, cmd in commands.items():
            wall, cpu = run_process(cmd, cwd=out, log=out / "log.txt")
            if cmd[0] == str(KLEENE):
                found[label] = count_lines(output)
            if r >= args.warmup:
                timings[label].add(wall, cpu)
    print(f"\n{args.runs} runs each, every one a fresh process; {context()}\n")
    print("| command | complex events | wall s, median (min-max) | CPU s (user + sys), median |")
    print("|---|---:|---|---:|")
    for label, t in timings.items():
        ces = f"{found[label]:,}" if label in found else "—"
        print(f"| {label} | {ces} | {t.cell()} | {statistics.median(t.cpu):.3f} |")
    print(f"\nC2 = `{query}`; kleene = `{KLEENE}`; data = `{full}`; "
          "output: JSON Lines with the events, to a file")
    return 0


PAIR = (
    "SELECT * FROM S WHERE SELL as a; BUY as b "
    "FILTER a[price > 100] AND b[price < a.price] WITHIN 10 EVENTS"
)
"""Issue 18's pair query (``benchmarks.registers.PAIR``)."""


def pair(args: argparse.Namespace) -> int:
    """The pair query through ``kleene run``, this installation and ``--against``, alternating."""
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    full = csv_file(args.pair_events, args.seed)
    one = out / "one.csv"
    pacsv.write_csv(datasets.synthetic(1, args.seed), one)
    scripts = {"this checkout": KLEENE}
    if args.against is not None:
        scripts[f"`{args.against}`"] = args.against
    # Python's bytecode cache written and read, as for a user (not a read-only install).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = args.runs if args.runs != 10 else 5
    rows = [(name, script, source, n) for source, n in ((one, 1), (full, args.pair_events))
            for name, script in scripts.items()]
    timings = {(name, n): Timings() for name, _, _, n in rows}
    found: dict[tuple[str, int], bytes] = {}
    print(f"# pair query, {runs} timed rounds after {args.warmup} untimed, alternating; {context()}", flush=True)
    for r in range(args.warmup + runs):
        for name, script, source, n in rows:
            output = out / f"pair-{len(found)}.jsonl"
            cmd = [str(script), "run", PAIR, "--input", str(source), "--output", str(output)]
            wall, cpu = run_process(cmd, cwd=out, log=out / "log.txt", env=env)
            if r == 0:
                found[(name, n)] = output.read_bytes()
            if r >= args.warmup:
                timings[(name, n)].add(wall, cpu)
    for n in (1, args.pair_events):
        outputs = {found[(name, n)] for name in scripts}
        if len(outputs) != 1:
            print(f"the installations' outputs differ on {n:,} events", file=sys.stderr)
            return 1
    print(f"\n{runs} runs each, every one a fresh process; {context()}\n")
    print("| `kleene run` of the pair query | events | complex events | wall s, median (min-max) "
          "| CPU s, median | events / wall s |")
    print("|---|---:|---:|---|---:|---:|")
    for name, _, _, n in rows:
        t = timings[(name, n)]
        complex_events = found[(name, n)].count(b"\n")
        rate = f"{n / t.median:,.0f}" if n > 1 else "-"
        print(f"| {name} | {n:,} | {complex_events:,} | {t.cell()} | {statistics.median(t.cpu):.3f} | {rate} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
