"""Stream events from CSV, JSON Lines and Parquet files as Arrow record batches.

The engine evaluates predicates column-wise over batches, so input is read as
:class:`pyarrow.RecordBatch` es, never as one table: a file of any size is
processed in bounded memory.  Three promises matter to the rest of kleene:

* **One schema.**  Every batch of one file has the same schema, so the engine
  can compile its predicates once.  Types are inferred, but a column whose
  values do not all fit one type (numbers and words, say) is kept as strings
  rather than failing or guessing: the engine then parses the values it needs
  as numbers and reports the rows whose value is of the wrong type through
  the bad-row policy (:mod:`kleene.predicates.conform`).
* **Every row keeps its place.**  Row ``i`` of the input (0-based, blank
  lines and the CSV header not counted) is row ``i`` of the concatenated
  batches: rows are never dropped or reordered here, because complex events
  name their events by input position.
* **Malformed input fails loudly**, with a :class:`DataError` that names the
  row and the line of the file.  Invalid UTF-8 is not malformed input but a
  bad row: a text column stays a string column, and the rows at fault are
  marked in an extra column that the session hands to the bad-row policy
  (:mod:`kleene.io.utf8`).

This module is the entry point: it tells the format from the extension and hands the file to
the reader of that format, which keeps these promises its own way:
:mod:`kleene.io.csv_reader` (CSV and TSV), :mod:`kleene.io.jsonl_reader` (JSON Lines, and a
``.json`` array) and :mod:`kleene.io.parquet_reader` (one row group at a time); the text readers
share :mod:`kleene.io.textfiles` (decompression, the first pass's buffer).  Any failure to read
the file below them becomes a :class:`DataError` naming the file (:func:`_guarded`).

**Projection pushdown.**  A query reads a few columns (``Query.columns``);
when the events' data is not needed, ``columns=`` reads only those: Parquet
decodes only their column chunks and CSV parses only their fields, which is
most of the reading time on wide files.  ``dictionary=True`` reads Parquet
string columns as dictionary arrays, as they are stored: no string is built
per row, and every comparison then runs on the few distinct values.
"""

from __future__ import annotations

import lzma
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa

from kleene.io import textfiles
from kleene.io.csv_reader import CSV_NULLS, read_csv
from kleene.io.textfiles import COMPRESSION
from kleene.language.errors import DataError

FORMATS = ("csv", "jsonl", "parquet")


_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".parq": "parquet",
}


_ALIASES = {"json": "jsonl", "ndjson": "jsonl", "jsonlines": "jsonl", "pq": "parquet", "tsv": "csv"}


def detect_format(path: str | Path, format: str | None = None) -> str:
    """``csv``, ``jsonl`` or ``parquet``: from ``format`` if given, else from the extension."""
    if format is not None:
        fmt = _ALIASES.get(format.lower(), format.lower())
        if fmt not in FORMATS:
            raise DataError(f"unknown input format {format!r}; expected csv, jsonl or parquet")
        return fmt
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in COMPRESSION:
        suffixes.pop()
    if suffixes and suffixes[-1] in _EXTENSIONS:
        return _EXTENSIONS[suffixes[-1]]
    raise DataError(
        f"cannot tell the format of {str(path)!r} from its extension; "
        "use .csv, .jsonl, .ndjson, .json or .parquet, or pass --format"
    )


def read_batches(
    path: str | Path,
    *,
    format: str | None = None,
    batch_size: int = 65536,
    columns: Sequence[str] | None = None,
    dictionary: bool = False,
    null_values: Sequence[str] = (),
) -> Iterator[pa.RecordBatch]:
    """Yield the events of ``path`` as record batches of at most ``batch_size`` rows.

    ``columns``: only these columns, in the file's order (names the file lacks
    are left out, so that the query's own checks report them).  ``dictionary``:
    Parquet string columns come as dictionary arrays (other formats ignore it).
    ``null_values``: more texts that mean "no value" (``NA``), besides
    :data:`~kleene.io.csv_reader.CSV_NULLS` in CSV; in JSON Lines a string equal to one is a null.
    Parquet is typed and has its own nulls: it ignores them.

    The format comes from the extension (``.csv``, ``.tsv``, ``.jsonl``,
    ``.ndjson``, ``.json``, ``.parquet``; optionally compressed with ``.gz``,
    ``.bz2`` or ``.xz`` for the text formats) unless ``format`` says otherwise.
    A missing file or an unknown format raises :class:`DataError` right away,
    not at the first ``next()``, so callers can fail before starting work.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    p = Path(path)
    fmt = detect_format(p, format)
    if not p.exists():
        raise DataError(f"input file {str(p)!r} does not exist")
    if p.is_dir():
        raise DataError(f"input {str(p)!r} is a directory, not a file")
    wanted = None if columns is None else frozenset(columns)
    if fmt == "parquet":
        from kleene.io.parquet_reader import read_parquet  # lazy: most CLI runs read CSV

        return _guarded(p, read_parquet(p, batch_size, wanted, dictionary))
    if fmt == "csv":
        return _guarded(p, read_csv(p, batch_size, wanted, [*CSV_NULLS, *null_values]))
    from kleene.io.jsonl_reader import read_jsonl  # lazy, as Parquet's

    return _guarded(p, read_jsonl(p, batch_size, wanted, null_values))


_UNREADABLE = (
    OSError, EOFError, zlib.error, lzma.LZMAError, pa.ArrowException, RecursionError, UnicodeDecodeError
)
"""What decoding a damaged file raises below kleene: a truncated or corrupt ``.gz``/``.bz2``/
``.xz`` stream (EOFError, zlib.error, OSError), a corrupt Parquet page (OSError from Arrow:
"Corrupt snappy compressed data"), an unreadable disk block (OSError), column names that
are not UTF-8 (UnicodeDecodeError from Arrow, which cannot hold such a name)."""


def _guarded(path: Path, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches``, with every failure to read ``path`` a :class:`DataError` naming the file
    and how many rows were read before it (exit 3), never a traceback."""
    rows = 0
    try:
        for batch in batches:
            yield batch
            rows += batch.num_rows
    except _UNREADABLE as exc:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, UnicodeDecodeError):
            detail = f"a column name is not valid UTF-8 ({detail})"
        elif path.suffix.lower() in COMPRESSION and isinstance(exc, (EOFError, zlib.error, lzma.LZMAError, OSError)):
            detail = f"truncated or corrupt {path.suffix.lower()} data: {detail}"
        after = f" after its first {rows:,} rows" if rows else ""
        raise DataError(f"cannot read {str(path)!r}{after}: {detail}") from exc


def read_table(path: str | Path, *, format: str | None = None) -> pa.Table:
    """The whole file as one table (for small inputs, tests and notebooks)."""
    batches = list(read_batches(path, format=format))
    if batches:
        return pa.Table.from_batches(batches)
    if detect_format(Path(path), format) == "parquet" and Path(path).is_file():
        import pyarrow.parquet as pq  # lazy: every `kleene run` imports this module

        return pq.read_schema(path).empty_table()  # no rows, but the footer's columns
    return pa.table({})


def cheap_columns(
    path: str | Path, columns: Sequence[str], *, format: str | None = None
) -> list[pa.RecordBatch] | None:
    """``columns`` of the whole file when they can be read cheaply before a run; else None.

    Cheap means: a Parquet file (only those column chunks are decoded, strings
    as dictionaries), or an uncompressed CSV or JSON Lines file of at most
    :data:`~kleene.io.textfiles.BUFFER_BYTES` (read whole, in parallel for CSV).  A larger or
    compressed text file would be parsed twice, so it is not read here.
    ``--strict-types`` reads the type and stream columns this way.
    """
    p = Path(path)
    fmt = detect_format(p, format)
    if not p.is_file():
        return None
    if fmt != "parquet" and (p.suffix.lower() in COMPRESSION or p.stat().st_size > textfiles.BUFFER_BYTES):
        return None
    return list(read_batches(p, format=fmt, columns=columns, dictionary=True, batch_size=1 << 20))


def count_rows(path: str | Path, *, format: str | None = None) -> int | None:
    """Number of rows of ``path``, cheaply; ``None`` when it cannot be known cheaply.

    Exact for Parquet (file metadata).  For text files it counts newlines
    (fast, but a full scan; a CSV value spanning lines makes it an
    overestimate), which is good enough for a progress bar; compressed text
    files give ``None``.
    """
    p = Path(path)
    try:
        fmt = detect_format(p, format)
    except DataError:
        return None
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq  # lazy, as in _read_parquet

            return int(pq.ParquetFile(p).metadata.num_rows)
        if p.suffix.lower() in COMPRESSION:
            return None
        lines = 0
        last = b"\n"
        with open(p, "rb") as f:
            while block := f.read(1 << 22):
                lines += block.count(b"\n")
                last = block[-1:]
        if last != b"\n":
            lines += 1
        return max(lines - 1, 0) if fmt == "csv" else lines
    except (OSError, pa.ArrowException):
        return None
