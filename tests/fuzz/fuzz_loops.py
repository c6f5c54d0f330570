"""The two fuzz loops: query texts through the compiler, damaged files through the readers.

Both are deterministic for a seed (the cases, not the timings), and return a
:class:`~fuzz_harness.Tally`.  ``tests/fuzz/test_fuzz.py`` runs them short in
the test suite; ``tests/fuzz/run.py`` runs them long.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

from fuzz_files import QUERIES, corrupt, write_seeds
from fuzz_harness import LIMITS, Case, Outcome, Tally, Worker, run_cli
from fuzz_queries import GrammarGenerator, corpus, mutate

Progress = Callable[[int, Tally], None]


STOCK = Path(__file__).resolve().parents[2] / "examples" / "stock.csv"


def _argv_safe(text: str) -> bool:
    """Can ``text`` be one command-line argument (no NUL, encodable as the OS encodes argv)?"""
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


def fuzz_queries(
    seed: int,
    cases: int,
    worker: Worker,
    *,
    run_share: float = 0.5,
    cli_share: float = 0.02,
    progress: Progress | None = None,
) -> Tally:
    """``cases`` query texts: a third from the grammar, the rest mutations of valid queries
    (the corpus and generated texts that compiled).  Each is compiled; ``run_share`` of those
    that compile also run over the worker's small stream; ``cli_share`` of the cases go through
    ``kleene run`` over examples/stock.csv instead (exit 2 with the caret on stderr)."""
    rng = random.Random(seed)
    gen = GrammarGenerator()
    valid = corpus()
    tally = Tally()
    for i in range(cases):
        if rng.random() < 1 / 3:
            text, damages = gen.text(rng), ("grammar",)
        else:
            text, damages = mutate(rng, rng.choice(valid)), ("mutation",)
        if rng.random() < cli_share and _argv_safe(text):
            outcome = run_cli([text, "--input", str(STOCK), "--time-column", "time"],
                              timeout=worker.timeout * 3, memory=worker.memory)
            if outcome.status in ("hang", "crash") or outcome.type == "MemoryError":
                outcome = _blame(worker, text, outcome)
            tally.add(Case("query-cli", "query", damages, text), outcome)
            if progress is not None:
                progress(i + 1, tally)
            continue
        run = rng.random() < run_share
        outcome = worker.ask({"op": "compile", "text": text, "run": run})
        if outcome.status in ("hang", "crash") or outcome.type == "MemoryError":
            outcome = _blame(worker, text, outcome)
        tally.add(Case("query", "query", (*damages, *(["run"] if run else [])), text), outcome)
        if outcome.status == "ok" and damages == ("grammar",) and len(valid) < 500:
            valid.append(text)
        if progress is not None:
            progress(i + 1, tally)
    return tally


def _blame(worker: Worker, text: str, outcome: Outcome) -> Outcome:
    """A compilation or run that hung or ran out of memory: was it the parser?  If the text
    parses quickly, it is the compiler or the engine growing without a limit (issue 16 item 5)."""
    parsed = worker.ask({"op": "parse", "text": text})
    if parsed.fine:
        return Outcome(outcome.status, LIMITS, outcome.message, outcome.traceback, outcome.returncode)
    return outcome


def fuzz_files(
    seed: int,
    cases: int,
    folder: Path,
    worker: Worker,
    *,
    cli_share: float = 0.25,
    cli_timeout: float = 30.0,
    keep: Path | None = None,
    progress: Progress | None = None,
) -> Tally:
    """``cases`` damaged files, each run with one of :data:`~fuzz_files.QUERIES`: through the
    Python API in the worker, or (``cli_share`` of the cases, text and Parquet formats) through
    ``kleene run`` in its own process.  Arrow IPC files go through the API as a
    RecordBatchReader (kleene has no Arrow file reader of its own).  A failing file is copied
    to ``keep`` (if given) for replay."""
    rng = random.Random(seed)
    seeds = write_seeds(folder / "seeds")
    kinds = sorted(seeds)
    tally = Tally()
    for i in range(cases):
        kind = rng.choice(kinds)
        data, damages = corrupt(rng, kind, seeds[kind].read_bytes())
        path = folder / f"case-{i % 2}{''.join(seeds[kind].suffixes)}"
        path.write_bytes(data)
        query = rng.choice(QUERIES)
        if kind.startswith("arrow"):
            mode = "file" if kind == "arrow-file" else "stream"
            case = Case("ipc", kind, tuple(damages), str(path))
            outcome = worker.ask({"op": "ipc", "path": str(path), "mode": mode, "query": query})
        elif rng.random() < cli_share:
            case = Case("cli", kind, tuple(damages), str(path))
            args = [query, "--input", str(path)]
            if rng.random() < 0.3:
                args += ["--on-bad-row", "skip"]
            if rng.random() < 0.3:
                args += ["--output", str(folder / rng.choice(("out.jsonl", "out.parquet", "out.arrow")))]
            outcome = run_cli(args, timeout=cli_timeout, memory=worker.memory)
        else:
            case = Case("api", kind, tuple(damages), str(path))
            outcome = worker.ask({"op": "file", "path": str(path), "query": query})
        before = tally.new_failures
        tally.add(case, outcome)
        if keep is not None and tally.new_failures > before:
            keep.mkdir(parents=True, exist_ok=True)
            saved = keep / f"seed{seed}-case{i}{''.join(seeds[kind].suffixes)}"
            shutil.copyfile(path, saved)
            tally.failures[outcome.signature()][-1] = (
                Case(case.kind, case.format, case.damages, str(saved)), outcome
            )
        if progress is not None:
            progress(i + 1, tally)
    return tally
