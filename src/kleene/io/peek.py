"""An input's schema read cheaply, without reading its rows: for checks made before a slow start.

``kleene run --engine spark`` checks the query against the input's columns
before it starts the JVM (8-30 s), so that a misspelt attribute or a missing
type column is reported as fast as the in-process CLI reports it.  The
schema comes from what costs milliseconds:

* Parquet: the footer (``pyarrow.parquet.read_schema``), exact;
* CSV: the header and the types Arrow infers from the first block (1 MiB);
* JSON Lines: the first line's object.

The text formats' types are a guess from a sample, so :func:`peek_schema`
says whether it is ``exact``; a column that is null throughout the sample
has no type yet, and callers should not conclude from a guess what a later
row could contradict.  Compressed text files are not peeked (None).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv

from kleene.io.csv_reader import csv_delimiter
from kleene.io.readers import detect_format

SAMPLE_BYTES = 1 << 20
"""How much of a CSV file the type inference reads (Arrow's block)."""

_COMPRESSED = {".gz", ".bz2", ".xz", ".zst", ".zip"}


@dataclass(frozen=True)
class Peeked:
    """An input's columns: ``schema``, and whether its types are certain (``exact``)."""

    schema: pa.Schema
    exact: bool

    @property
    def untyped(self) -> list[str]:
        """Columns whose type the sample does not tell (null in every sampled row)."""
        return [f.name for f in self.schema if pa.types.is_null(f.type)]


def peek_schema(path: str | Path, format: str | None = None) -> Peeked | None:
    """The schema of ``path`` (a file, or a directory of Parquet part files); None if not cheap.

    Raises what the readers raise for an unreadable file (:class:`OSError`,
    ``pyarrow.ArrowInvalid``); callers that only want a fast check may catch it
    and leave the reading to the slow path, which reports it properly.
    """
    p = Path(path)
    fmt = detect_format(p, format)
    if p.is_dir():
        if fmt != "parquet":
            return None
        parts = sorted(f for f in p.rglob("*.parquet") if not f.name.startswith(("_", ".")))
        if not parts:
            return None
        p = parts[0]
    if fmt == "parquet":
        import pyarrow.parquet as pq  # lazy, as in readers: every `kleene run` imports this module

        return Peeked(pq.read_schema(p), exact=True)
    if p.suffix.lower() in _COMPRESSED:
        return None
    if fmt == "csv":
        reader = pacsv.open_csv(
            p,
            read_options=pacsv.ReadOptions(block_size=SAMPLE_BYTES),
            parse_options=pacsv.ParseOptions(delimiter=csv_delimiter(p)),
        )
        try:
            return Peeked(reader.schema, exact=False)
        finally:
            reader.close()
    with p.open("rb") as f:
        for line in f:
            if line.strip():
                if not isinstance(json.loads(line), dict):
                    return None
                import pyarrow.json as pajson  # lazy, as pyarrow.parquet above

                # Arrow's JSON reader, as the in-process reader: ISO times become timestamps.
                return Peeked(pajson.read_json(io.BytesIO(line)).schema, exact=False)
    return None
