"""The tree's own cost per node: record one counted row's calls to the tree, replay them on two
builds of the compiled twin side by side (run by hand, not a test; docs/benchmarks.md, "The
tree's cost per node")::

    python tests/registers/replay_tree.py NAME WINDOW [--events 200000] [--rounds 3]
        [--base PATH_TO_OTHER_BUILD/_vectortree.cpython-...so]

``NAME`` is a row of benchmarks/registers.py (``rising``, ``seq3``, ``q1``, ``k3``, ...).  The
row's count runs once over the first ``--events`` events of the benchmark's stock file with a
recording tree (the installed twin, every ``insert``, ``delete`` and ``step`` logged); then the
log is replayed ``--rounds`` times on each build, alternating, with no engine around it, and
the median CPU seconds per event and per tree node (``work``: nodes pushed or summed) are
printed.  Both builds must return the same counts and the same work, or the script fails.
Without ``--base`` only the installed twin is replayed.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import pyarrow.parquet as pq  # noqa: E402

import kleene  # noqa: E402
import registers as bench  # noqa: E402
from generate import generate  # noqa: E402
from kleene import native  # noqa: E402
from kleene.registers import aggregate  # noqa: E402


def load_build(path: str) -> ModuleType:
    """Another build of the twin, loaded beside the installed one under another name."""
    spec = importlib.util.spec_from_file_location("other._vectortree", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def record(name: str, window: int, events: int, twin: ModuleType) -> list[tuple[Any, ...]]:
    """The calls one count makes to its trees, in order."""
    log: list[tuple[Any, ...]] = []
    made = [0]

    class Recorder:
        def __init__(self, k: int, work: list[int], seed: int = 0) -> None:
            self.i = made[0]
            made[0] += 1
            log.append(("new", self.i, k, seed))
            self.tree = twin.VectorTree(k, work, seed)

        @property
        def size(self) -> int:
            return int(self.tree.size)

        def insert(self, value: Any, seq: int, vec: list[int]) -> None:
            log.append(("insert", self.i, value, seq, list(vec)))
            self.tree.insert(value, seq, vec)

        def delete(self, value: Any, seq: int) -> None:
            log.append(("delete", self.i, value, seq))
            self.tree.delete(value, seq)

        def step(self, cuts: list[Any], moves: list[Any]) -> Any:
            log.append(("step", self.i, cuts, moves))
            return self.tree.step(cuts, moves)

    query = (bench.RISING if name == "rising" else bench.PAPER[name]).format(window=window)
    table = pq.read_table(generate(1_000_000)).slice(0, events)
    saved = aggregate.TREE
    aggregate.TREE = Recorder
    try:
        kleene.compile(query, max_matches=bench.COUNT_MATCHES).count(table)
    finally:
        aggregate.TREE = saved
    return log


def replay(log: list[tuple[Any, ...]], twin: ModuleType) -> tuple[float, int, int]:
    """CPU seconds, complex events counted and tree work of one replay."""
    trees: dict[int, Any] = {}
    work, found = [0], 0
    start = time.process_time()
    for call in log:
        if call[0] == "step":
            found += trees[call[1]].step(call[2], call[3])
        elif call[0] == "insert":
            trees[call[1]].insert(call[2], call[3], call[4])
        elif call[0] == "delete":
            trees[call[1]].delete(call[2], call[3])
        else:
            trees[call[1]] = twin.VectorTree(call[2], work, call[3])
    return time.process_time() - start, found, work[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name")
    parser.add_argument("window", type=int)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", help="another build of _vectortree (a .so) to replay beside")
    args = parser.parse_args()
    twin = native.load("kleene.registers._vectortree")
    if twin is None:
        sys.exit("the compiled twin is not built here")
    builds = {"installed": twin}
    if args.base:
        builds = {"base": load_build(args.base), "installed": twin}
    log = record(args.name, args.window, args.events, twin)
    times: dict[str, list[float]] = {label: [] for label in builds}
    results = {}
    for _ in range(args.rounds):
        for label, mod in builds.items():
            cpu, found, work = replay(log, mod)
            times[label].append(cpu)
            results[label] = (found, work)
    assert len(set(results.values())) == 1, results
    found, work = results["installed"]
    print(f"{args.name} w={args.window}: {args.events:,} events, {len(log):,} tree calls, "
          f"{work / args.events:.1f} nodes / event, {found:,} complex events")
    for label in builds:
        cpu = statistics.median(times[label])
        print(f"  {label}: {cpu / args.events * 1e6:.3f} CPU us / event, "
              f"{cpu / work * 1e9:.1f} ns / node (median of {args.rounds})")


if __name__ == "__main__":
    main()
