"""CORE's side of ``benchmarks.end_to_end``: what ``kleene run QUERY --input FILE --output OUT`` does, done with CORE.

Run under CORE's interpreter (``.venv-core/bin/python``, Python 3.13 with ``pycer``)::

    .venv-core/bin/python benchmarks/core_e2e.py QUERY --input events.csv --output out.jsonl [--report r.json]

It reads the file, builds CORE's events, sends them and gets CORE's output text exactly as the
side-by-side suite does (:func:`benchmarks.runner.core_evaluate`), then writes every complex
event with its events as JSON Lines, one line per complex event in order of end position, in
the layout of ``kleene run``: ``{"start", "end", "positions", "events": [row, ...]}``, plus
``"partition": {"attribute": value, ...}`` under ``PARTITION BY`` (an object keyed by the
attribute names, as kleene writes it).  Events are the input rows (taken from the
table by position, as kleene does; CORE's text prints doubles with six decimals only), each
rendered as JSON once.  CORE prints a complex event once per valuation: each is written once.

``--report`` receives a JSON object: ``events``, ``complex_events`` (written), ``printed``
(lines CORE printed), ``phases`` (seconds: ``read``, ``build`` (PyEvents), ``send``,
``get_output``, ``write`` (parse the text, write the file)) and ``engine`` (``send`` +
``get_output``: CORE's C++ side alone).

Standard library plus pyarrow and pycer: this module runs under CORE's interpreter.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.core_output import count_lines, ordered_complex_events  # noqa: E402
from benchmarks.runner import core_evaluate  # noqa: E402

_PARTITION = re.compile(r"\bPARTITION\s+BY\s+\[([^\]]*)\]", re.IGNORECASE)


def partition_attributes(query: str) -> list[str]:
    """The attributes of the query's (first) ``PARTITION BY [...]``, or [] without one."""
    m = _PARTITION.search(query)
    return [a.strip() for a in m.group(1).split(",")] if m else []


def write_jsonl(text: str, table: Any, partition: list[str], out: TextIO) -> int:
    """Write CORE's complex events (its output ``text``) as kleene's JSON Lines; return how many."""
    found = ordered_complex_events(text)  # CORE prints them by end position, as kleene writes them
    needed = sorted({p for _, _, positions in found for p in positions})
    rows = table.take(needed).to_pylist() if needed else []
    rendered = {p: json.dumps(row) for p, row in zip(needed, rows)}
    by_position = dict(zip(needed, rows)) if partition else {}
    for start, end, positions in found:
        events = ", ".join(rendered[p] for p in positions)
        tail = ""
        if partition:
            first = by_position[positions[0]]
            tail = ', "partition": ' + json.dumps({a: first[a] for a in partition})
        out.write(
            f'{{"start": {start}, "end": {end}, "positions": [{", ".join(map(str, positions))}], '
            f'"events": [{events}]{tail}}}\n'
        )
    return len(found)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query", help="the CEQL query text")
    parser.add_argument("--input", type=Path, required=True, help="events: .csv or .parquet")
    parser.add_argument("--output", type=Path, required=True, help="complex events as JSON Lines")
    parser.add_argument("--report", type=Path, help="write the counts and the time split here (JSON)")
    args = parser.parse_args(argv)
    run = core_evaluate(args.query, args.input, keep_table=True)
    started = time.perf_counter()
    with open(args.output, "w", encoding="utf-8") as out:
        written = write_jsonl(run.text, run.table, partition_attributes(args.query), out)
    phases = dict(run.phases, write=time.perf_counter() - started)
    if args.report is not None:
        report = {
            "events": run.events,
            "complex_events": written,
            "printed": count_lines(run.text),
            "phases": phases,
            "engine": phases["send"] + phases["get_output"],
        }
        args.report.write_text(json.dumps(report) + "\n")


if __name__ == "__main__":
    main()
