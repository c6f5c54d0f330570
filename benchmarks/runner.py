"""One engine, one query, one file, in a fresh process: prints one JSON line with the measurement.

Run by the harness (``benchmarks.suite``) as ``python -m benchmarks.runner --engine kleene|core
--query-file Q --input FILE`` from the repository root: under the project's ``.venv`` for
kleene, under ``.venv-core`` (Python 3.13, ``pycer``) for CORE.  A fresh process per run means
one run's heap cannot leak into the next measurement and peak memory is the run's own.

What is timed, as a user of each engine would experience it:

* **kleene**: compile the query, stream the Parquet/CSV file with ``kleene.io.readers.read_batches``,
  evaluate and enumerate every complex event into columns (``Query.match_batches``, the bulk
  path: start, end and positions as numpy arrays per input batch), counting them.
* **CORE**: read the same file with pyarrow, build one ``pycer.PyEvent`` per row (values
  positional, in declaration order), ``send_events`` them in chunks to a ``PyOfflineServer``,
  and ``get_output()`` (which finishes evaluation and returns every complex event as text),
  counting its lines.  CORE's stream declaration comes from the file's schema.

Library imports are not timed, including pandas, which pyarrow imports lazily at its first
conversion (:func:`preload_libraries`).  Peak memory is ``VmHWM`` from ``/proc/self/status``: the high-water mark of this process's own
address space, which (unlike ``ru_maxrss``) does not inherit the parent's size across exec.
``--dump FILE`` writes the complex events (``start end positions...`` per line, sorted) after
the timed part, for the agreement check.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple


def peak_rss_mib() -> float:
    """This process's peak resident set size (VmHWM) in MiB; ru_maxrss where /proc is absent."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_table(path: Path) -> Any:
    """The whole file as a pyarrow Table (CORE's side: a user loads the file, then builds events)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path)
    import pyarrow.csv as pacsv

    return pacsv.read_csv(path)


def run_kleene(query: str, path: Path, batch_size: int) -> tuple[int, int, float, list[tuple[int, ...]] | None, bool]:
    import kleene
    from kleene.io.readers import read_batches

    want = _DUMP
    started = time.perf_counter()
    events = 0
    compiled = kleene.compile(query)

    def counted():  # type: ignore[no-untyped-def]
        nonlocal events
        # Only the columns the query reads, strings as dictionaries: what
        # Query.match_batches(path) does (projection pushdown; the complex
        # events are positions, so no other column is needed).
        for batch in read_batches(path, batch_size=batch_size, columns=compiled.columns, dictionary=True):
            events += batch.num_rows
            yield batch

    found: list[tuple[int, ...]] | None = [] if want else None
    count = 0
    # The bulk path: complex events in columns (MatchBatch), the same ones as
    # Query.matches, without a Python object per complex event.
    for b in compiled.match_batches(counted()):
        count += len(b)
        if found is not None:
            flat = b.positions.tolist()
            bounds = b.offsets.tolist()
            found += [
                (s, e, *flat[lo:hi])
                for s, e, lo, hi in zip(b.start.tolist(), b.end.tolist(), bounds, bounds[1:])
            ]
    seconds = time.perf_counter() - started
    return events, count, seconds, found, False


CORE_CHUNK = 65536


def core_declaration(table: Any, type_column: str = "type") -> tuple[str, list[str], dict[str, int]]:
    """(CREATE STREAM text, attribute names in order, {type: position in declaration})."""
    import pyarrow as pa

    kinds = {pa.int64(): "int", pa.float64(): "double", pa.string(): "string", pa.large_string(): "string"}
    attrs = [f for f in table.schema if f.name != type_column]
    fields = ", ".join(f"{f.name}:{kinds[f.type]}" for f in attrs)
    types = sorted(str(t) for t in table.column(type_column).unique().to_pylist())
    decl = "CREATE STREAM S {\n" + ",\n".join(f"  EVENT {t} {{ {fields} }}" for t in types) + "\n}"
    return decl, [f.name for f in attrs], {t: i for i, t in enumerate(types)}


class CoreRun(NamedTuple):
    """One CORE evaluation of a file: its output text, time split, events sent, and the table if kept."""

    text: str
    phases: dict[str, float]
    events: int
    table: Any


def core_evaluate(query: str, path: Path, *, keep_table: bool = False) -> CoreRun:
    """What a Python user of CORE does: read the file with pyarrow, build one ``PyEvent`` per row,
    ``send_events`` them in chunks to a ``PyOfflineServer`` and ``get_output()`` (the text).

    ``phases`` splits the time: ``read`` (the file), ``build`` (declaration, query, PyEvents),
    ``send`` (``send_events``) and ``get_output``.  The table is freed before ``get_output``
    (peak memory) unless ``keep_table``, which returns it.
    """
    import pyarrow as pa
    import pycer  # type: ignore[import-not-found]

    started = time.perf_counter()
    table = read_table(path)
    read_done = time.perf_counter()
    decl, names, _ = core_declaration(table)
    server = pycer.PyOfflineServer()
    info = server.declare_stream(decl)
    type_id = {e.name: e.id for e in info.events_info}
    server.add_query(query)
    makers = {
        pa.int64(): pycer.PyIntValue,
        pa.float64(): pycer.PyDoubleValue,
        pa.string(): pycer.PyStringValue,
        pa.large_string(): pycer.PyStringValue,
    }
    ctors = [makers[table.schema.field(n).type] for n in names]
    PyEvent = pycer.PyEvent
    n_rows = table.num_rows
    sending = 0.0
    for lo in range(0, n_rows, CORE_CHUNK):
        part = table.slice(lo, CORE_CHUNK)
        types = [type_id[t] for t in part.column("type").to_pylist()]
        cols = [part.column(n).to_pylist() for n in names]
        batch = [
            PyEvent(t, [c(v) for c, v in zip(ctors, row)])
            for t, row in zip(types, zip(*cols))
        ]
        t0 = time.perf_counter()
        server.send_events(batch)
        sending += time.perf_counter() - t0
    kept = table if keep_table else None
    del table
    sent = time.perf_counter()
    text = server.get_output()
    phases = {
        "read": read_done - started,
        "build": sent - read_done - sending,
        "send": sending,
        "get_output": time.perf_counter() - sent,
    }
    return CoreRun(text, phases, n_rows, kept)


def run_core(query: str, path: Path, batch_size: int) -> tuple[int, int, float, list[tuple[int, ...]] | None, bool]:
    import pyarrow  # noqa: F401  (the libraries are imported before the timer)
    import pycer  # type: ignore[import-not-found]  # noqa: F401

    from benchmarks.core_output import complex_events, count_lines

    started = time.perf_counter()
    run = core_evaluate(query, path)
    count = count_lines(run.text)
    seconds = time.perf_counter() - started
    # get_output's share includes counting the lines
    _PHASES.update(run.phases, get_output=seconds - run.phases["read"] - run.phases["build"] - run.phases["send"])
    found = None
    if _DUMP:
        found = [(s, e, *p) for s, e, p in complex_events(run.text)]
    duplicates = found is not None and len(found) != count
    return run.events, count, seconds, found, duplicates


def preload_libraries() -> None:
    """Import, before the timer, what the engine's libraries import lazily on first use.

    pyarrow imports pandas at its first array conversion when pandas is
    installed: kleene's venv has it (PySpark needs it), CORE's has not.  That
    import (0.2-0.5 s) is a library import like ``import pyarrow``, which is
    not timed, so it is done here for both engines (a no-op without pandas).
    """
    try:
        import pandas  # noqa: F401
    except ImportError:
        pass


_DUMP = False
_PHASES: dict[str, float] = {}
"""CORE's time split: reading the file, building PyEvents, send_events(), get_output()."""


def main(argv: list[str] | None = None) -> None:
    global _DUMP
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("kleene", "core"), required=True)
    parser.add_argument("--query-file", type=Path, required=True)
    parser.add_argument("--input", type=Path, required=True)
    parser.add_argument("--batch-size", type=int, default=65536)
    parser.add_argument("--cpu", type=int, default=-1, help="pin to this CPU (-1: no pinning)")
    parser.add_argument("--dump", type=Path, help="write the complex events here (not timed)")
    args = parser.parse_args(argv)
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    _DUMP = args.dump is not None
    query = args.query_file.read_text()
    preload_libraries()
    baseline = peak_rss_mib()
    run = run_kleene if args.engine == "kleene" else run_core
    events, count, seconds, found, duplicates = run(query, args.input, args.batch_size)
    peak = peak_rss_mib()
    if found is not None and args.dump is not None:
        found.sort()
        args.dump.write_text("".join(" ".join(map(str, ce)) + "\n" for ce in found))
    result = {
        "engine": args.engine,
        "events": events,
        "complex_events": count,
        "distinct_complex_events": None if found is None else len(found),
        "seconds": seconds,
        "peak_mib": peak,
        "baseline_mib": baseline,
        "printed_duplicates": duplicates,
        "phases": _PHASES,
    }
    sys.stdout.write("\n" + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
