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

How each format is streamed:

* CSV: :func:`pyarrow.csv.open_csv`.  Arrow fixes each column's type from the
  first block and fails if a later block disagrees.  So a first pass reads the
  file and, on such a failure, reads it once as text to settle every column's
  type (null → int → float → string; :func:`_survey`) and starts over; the batches of the pass that succeeds are kept if
  they are small (below :data:`BUFFER_BYTES`), and otherwise the file is read
  a second time with the settled types.  Small files are thus read once;
  large ones twice, in constant memory.  An uncompressed file below
  :data:`BUFFER_BYTES` is read whole by :func:`pyarrow.csv.read_csv`, which
  parses its blocks in parallel (2-3x faster than streaming one block after
  another), with the same widening.
* JSON Lines: lines are read in chunks of ``batch_size``; a chunk is parsed
  by Arrow's JSON reader when it can, and by :mod:`json` line by line when
  Arrow cannot (mixed types, NaN, a malformed line, which is then located
  exactly).  The same first-pass/second-pass scheme settles one schema.
  A ``.json`` file holding one JSON array of objects is accepted too (it is
  loaded whole).
* Parquet: :meth:`pyarrow.parquet.ParquetFile.iter_batches`, one row group at
  a time (memory is bounded by the largest row group).

**Projection pushdown.**  A query reads a few columns (``Query.columns``);
when the events' data is not needed, ``columns=`` reads only those: Parquet
decodes only their column chunks and CSV parses only their fields, which is
most of the reading time on wide files.  ``dictionary=True`` reads Parquet
string columns as dictionary arrays, as they are stored: no string is built
per row, and every comparison then runs on the few distinct values.

Size: one reader per format (CSV, JSON Lines, Parquet) with the shared
decompression, type widening and line-numbered errors; each format is short, the shared
error reporting is what makes them agree.
"""

from __future__ import annotations

import bz2
import csv
import io
import json
import lzma
import os
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, cast

import pyarrow as pa
import pyarrow.csv as pcsv

from kleene.io.nesting import MAX_JSON_DEPTH, too_deep
from kleene.io.utf8 import INVALID_UTF8, decode_batch, fix_row, is_valid
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
_COMPRESSION = (".gz", ".bz2", ".xz")

BUFFER_BYTES = 64 << 20
"""Up to this many bytes of batches are kept from the first pass (no second read)."""

# CSV cells that mean "no value".  Deliberately short: "NA" or "n/a" may be
# real strings (a country code, a product name), and "NaN" must stay a float
# NaN so the bad-row policy can report it as such rather than as a null.
CSV_NULLS = ["", "null", "NULL"]


# ------------------------------------------------------------------ formats
def detect_format(path: str | Path, format: str | None = None) -> str:
    """``csv``, ``jsonl`` or ``parquet``: from ``format`` if given, else from the extension."""
    if format is not None:
        fmt = _ALIASES.get(format.lower(), format.lower())
        if fmt not in FORMATS:
            raise DataError(f"unknown input format {format!r}; expected csv, jsonl or parquet")
        return fmt
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in _COMPRESSION:
        suffixes.pop()
    if suffixes and suffixes[-1] in _EXTENSIONS:
        return _EXTENSIONS[suffixes[-1]]
    raise DataError(
        f"cannot tell the format of {str(path)!r} from its extension; "
        "use .csv, .jsonl, .ndjson, .json or .parquet, or pass --format"
    )


def csv_delimiter(path: Path) -> str:
    """A tab for ``.tsv`` files (``x.tsv.gz`` too), else a comma."""
    return "\t" if ".tsv" in [s.lower() for s in path.suffixes] else ","


def _open_text_source(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed if its extension says so."""
    suffix = path.suffix.lower()
    if suffix == ".gz":
        import gzip  # only for .gz inputs (start-up time of the others)

        return cast(IO[bytes], gzip.open(path, "rb"))
    if suffix == ".bz2":
        return cast(IO[bytes], bz2.open(path, "rb"))
    if suffix == ".xz":
        return cast(IO[bytes], lzma.open(path, "rb"))
    return open(path, "rb")  # noqa: SIM115


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
    :data:`CSV_NULLS` in CSV; in JSON Lines a string equal to one is a null.
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
        return _guarded(p, _read_parquet(p, batch_size, wanted, dictionary))
    if fmt == "csv":
        return _guarded(p, _read_csv(p, batch_size, wanted, [*CSV_NULLS, *null_values]))
    batches = _read_jsonl(p, batch_size)
    if null_values:
        batches = _nulled(batches, list(null_values))
    return _guarded(p, batches if wanted is None else _select(batches, wanted))


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
        elif path.suffix.lower() in _COMPRESSION and isinstance(exc, (EOFError, zlib.error, lzma.LZMAError, OSError)):
            detail = f"truncated or corrupt {path.suffix.lower()} data: {detail}"
        after = f" after its first {rows:,} rows" if rows else ""
        raise DataError(f"cannot read {str(path)!r}{after}: {detail}") from exc


def _nulled(batches: Iterator[pa.RecordBatch], tokens: list[str]) -> Iterator[pa.RecordBatch]:
    """JSON Lines strings equal to a null token become nulls (in every batch: one schema)."""
    import pyarrow.compute as pc

    value_set = pa.array(tokens, pa.string())
    for batch in batches:
        for i, field in enumerate(batch.schema):
            if pa.types.is_string(field.type) and field.name != INVALID_UTF8:
                column = batch.column(i)
                nulled = pc.if_else(pc.is_in(column, value_set=value_set), None, column)
                batch = batch.set_column(i, field, nulled)
        yield batch


def _select(batches: Iterator[pa.RecordBatch], wanted: frozenset[str]) -> Iterator[pa.RecordBatch]:
    wanted = wanted | {INVALID_UTF8}
    for batch in batches:
        yield batch.select([n for n in batch.schema.names if n in wanted])


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
    :data:`BUFFER_BYTES` (read whole, in parallel for CSV).  A larger or
    compressed text file would be parsed twice, so it is not read here.
    ``--strict-types`` reads the type and stream columns this way.
    """
    p = Path(path)
    fmt = detect_format(p, format)
    if not p.is_file():
        return None
    if fmt != "parquet" and (p.suffix.lower() in _COMPRESSION or p.stat().st_size > BUFFER_BYTES):
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
        if p.suffix.lower() in _COMPRESSION:
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


def _rebatch(batches: Iterator[pa.RecordBatch], batch_size: int) -> Iterator[pa.RecordBatch]:
    """Cut batches longer than ``batch_size`` (zero-copy slices); drop empty ones."""
    for batch in batches:
        n = batch.num_rows
        if n <= batch_size:
            if n:
                yield batch
            continue
        for start in range(0, n, batch_size):
            yield batch.slice(start, batch_size)


# ------------------------------------------------------------------ parquet
def _threads() -> bool:
    """Decode a row group's columns on several threads only when this process may use several
    CPUs: pinned to one, the threads only add their hand-offs (about 10% of a selective
    query's read)."""
    return len(os.sched_getaffinity(0)) > 1 if hasattr(os, "sched_getaffinity") else True

def _read_parquet(
    path: Path, batch_size: int, wanted: frozenset[str] | None = None, dictionary: bool = False
) -> Iterator[pa.RecordBatch]:
    # Imported here: only Parquet inputs pay its start-up cost (most CLI runs read CSV).
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
        names = None if wanted is None else [n for n in schema.names if n in wanted]
        if dictionary:
            strings = [
                f.name
                for f in schema
                if (names is None or f.name in names)
                and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))
            ]
            if strings:
                pf.close()
                pf = pq.ParquetFile(path, read_dictionary=strings)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"cannot read {str(path)!r} as Parquet: {exc}") from exc
    threads = _threads()
    with pf:
        try:
            # One row group at a time: a single iter_batches over the whole file
            # keeps allocations from every row group alive until the end (peak
            # memory then grows with the file), which a streaming reader must not.
            group = 0
            for group in range(pf.num_row_groups):
                for batch in pf.iter_batches(
                    batch_size=batch_size, row_groups=[group], columns=names, use_threads=threads
                ):
                    _check_text(batch, path, group)
                    yield batch
        except (pa.ArrowException, OSError) as exc:  # a corrupt page is an OSError from Arrow
            raise DataError(
                f"cannot read {str(path)!r} as Parquet (row group {group} of "
                f"{pf.num_row_groups}): {exc}"
            ) from exc


def _check_text(batch: pa.RecordBatch, path: Path, group: int) -> None:
    """Arrow does not check that a Parquet string column holds UTF-8: a corrupt page can hand
    the writers bytes no string may hold.  Checked per batch (a dictionary column: its few
    distinct values only)."""
    for field, column in zip(batch.schema, batch.columns):
        values = column.dictionary if pa.types.is_dictionary(field.type) else column
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            continue
        try:
            values.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise DataError(
                f"cannot read {str(path)!r} as Parquet (row group {group}): column "
                f"{field.name!r} holds invalid UTF-8, a corrupt file ({exc})"
            ) from exc


# ---------------------------------------------------------------------- csv
_CSV_INVALID_UTF8 = re.compile(r"In CSV column #(\d+): CSV conversion error to string: invalid UTF8")
_CSV_CONVERSION = re.compile(r"In CSV column #(\d+): .*CSV conversion error to ([^:]+): invalid value '(.*)'", re.S)


def _csv_options(
    path: Path, column_types: dict[str, pa.DataType], include: list[str] | None, nulls: list[str]
) -> dict[str, Any]:
    delimiter = csv_delimiter(path)
    return {
        "parse_options": pcsv.ParseOptions(delimiter=delimiter),
        "convert_options": pcsv.ConvertOptions(
            column_types=column_types,
            include_columns=include,
            null_values=nulls,
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    }


def _csv_reader(
    path: Path,
    batch_size: int,
    column_types: dict[str, pa.DataType],
    include: list[str] | None,
    nulls: list[str],
) -> pcsv.CSVStreamingReader:
    block = max(1 << 20, min(16 << 20, batch_size * 128))
    return pcsv.open_csv(
        # Arrow decompresses .gz and .bz2 from the name, not .xz: that one is opened here.
        lzma.open(path, "rb") if path.suffix.lower() == ".xz" else path,
        read_options=pcsv.ReadOptions(block_size=block),
        **_csv_options(path, column_types, include, nulls),
    )


def _csv_whole(
    path: Path,
    batch_size: int,
    column_types: dict[str, pa.DataType],
    include: list[str] | None,
    nulls: list[str],
) -> list[pa.RecordBatch]:
    """A small file read at once: Arrow parses its 1 MiB blocks in parallel."""
    table = pcsv.read_csv(path, **_csv_options(path, column_types, include, nulls))
    return table.combine_chunks().to_batches(max_chunksize=batch_size)


def _widen(current: str, value: str) -> pa.DataType:
    """The next type to try for a CSV column that failed to convert ``value`` to ``current``."""
    if current == "null":
        try:
            int(value)
            return pa.int64()
        except ValueError:
            pass
    if current in ("null", "int64"):
        try:
            float(value)
            return pa.float64()
        except ValueError:
            pass
    return pa.string()


def _ladder(inferred: pa.DataType) -> list[pa.DataType]:
    """The types a column Arrow inferred as ``inferred`` may widen to, narrowest first (as
    :func:`_widen` steps): null, int64, float64, string; any other type only to string."""
    steps = [pa.null(), pa.int64(), pa.float64(), pa.string()]
    return steps[steps.index(inferred) :] if inferred in steps else [inferred, pa.string()]


def _fits(column: pa.ChunkedArray | pa.Array, typ: pa.DataType) -> bool:
    if pa.types.is_null(typ):
        return column.null_count == len(column)
    if pa.types.is_string(typ):
        return True
    try:
        column.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def _survey(
    path: Path, column_types: dict[str, pa.DataType], include: list[str] | None, nulls: list[str]
) -> dict[str, pa.DataType] | None:
    """Every column's type from one pass over the file read as text: for each column the
    narrowest step of its :func:`_ladder` that all its values convert to.

    Called at the first conversion failure, instead of widening that column and reading the
    file again, once per column that needs it (10 such columns were 11 passes).  Arrow's cast
    and its CSV converter may disagree on a rare spelling: the caller then widens as before,
    so this only saves passes.  None when the survey cannot be made (invalid UTF-8 read as text).
    """
    try:
        inferred = _csv_reader(path, 1 << 16, column_types, include, nulls).schema
        ladders = {f.name: _ladder(f.type) for f in inferred if f.name not in column_types}
        as_text = {**column_types, **{name: pa.string() for name in ladders}}
        for batch in _csv_reader(path, 1 << 16, as_text, include, nulls):
            for name, ladder in ladders.items():
                column = batch.column(name)
                while len(ladder) > 1 and not _fits(column, ladder[0]):
                    ladder.pop(0)
    except pa.ArrowException:
        return None
    return {**column_types, **{name: ladder[0] for name, ladder in ladders.items()}}


def _read_csv(
    path: Path, batch_size: int, wanted: frozenset[str] | None, nulls: list[str]
) -> Iterator[pa.RecordBatch]:
    _check_csv_header(path)
    column_types: dict[str, pa.DataType] = {}
    # Arrow names a failing column by its place in the file, included or not.
    include = None if wanted is None else [n for n in _csv_header(path) if n in wanted]
    whole = path.suffix.lower() not in _COMPRESSION and path.stat().st_size <= BUFFER_BYTES
    surveyed = False
    for _attempt in range(10_000):
        kept: list[pa.RecordBatch] | None = []
        size = 0
        try:
            if whole:
                kept = _csv_whole(path, batch_size, column_types, include, nulls)
                break
            reader = _csv_reader(path, batch_size, column_types, include, nulls)
            schema = reader.schema
            for batch in reader:
                if kept is not None:
                    kept.append(batch)
                    size += batch.nbytes
                    if size > BUFFER_BYTES:
                        kept = None
        except pa.ArrowInvalid as exc:
            utf8 = _CSV_INVALID_UTF8.search(str(exc))
            if utf8 is not None:  # a later block has invalid bytes: read the column as bytes
                names = _csv_header(path)
                index = int(utf8.group(1))
                if index >= len(names) or column_types.get(names[index]) == pa.binary():
                    raise _csv_error(path, exc) from exc
                column_types[names[index]] = pa.binary()
                continue
            match = _CSV_CONVERSION.search(str(exc))
            if match is None:
                raise _csv_error(path, exc) from exc
            if not surveyed:  # settle every column's type in one pass, not one pass per column
                surveyed = True
                found = _survey(path, column_types, include, nulls)
                if found is not None and found != column_types:
                    column_types = found
                    continue
            names = _csv_header(path)
            index = int(match.group(1))
            if index >= len(names):
                raise _csv_error(path, exc) from exc
            widened = _widen(match.group(2).strip(), match.group(3))
            if column_types.get(names[index]) == widened:
                raise _csv_error(path, exc) from exc
            column_types[names[index]] = widened
            continue
        except pa.ArrowException as exc:
            raise _csv_error(path, exc) from exc
        break
    else:  # pragma: no cover - each retry widens a column, so this cannot loop forever
        raise DataError(f"cannot settle the column types of {str(path)!r}")

    if kept is not None:
        yield from map(decode_batch, _rebatch(iter(kept), batch_size))
        return
    settled = {field.name: field.type for field in schema}
    try:
        for batch in _rebatch(iter(_csv_reader(path, batch_size, settled, include, nulls)), batch_size):
            yield decode_batch(batch)
    except pa.ArrowException as exc:
        raise _csv_error(path, exc) from exc


def _csv_header(path: Path) -> list[str]:
    with _open_text_source(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
        delimiter = csv_delimiter(path)
        return next(csv.reader(text, delimiter=delimiter), [])


def _check_csv_header(path: Path) -> None:
    """Refuse a CSV header that is not UTF-8, naming the column.

    Arrow keeps the header's bytes as column names, and reading such a name
    later fails inside pyarrow with a bare UnicodeDecodeError (found by
    fuzzing: tests/fuzz).  Bad bytes in the data rows are bad rows instead
    (:mod:`kleene.io.utf8`).  A file that cannot be read here is left to the
    reader proper, which reports it.
    """
    try:
        with _open_text_source(path) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="")
            header = next(csv.reader(text, delimiter=csv_delimiter(path)), [])
    except (OSError, EOFError, ValueError, csv.Error, lzma.LZMAError, zlib.error):
        return
    for number, name in enumerate(header, 1):
        if any("\udc80" <= ch <= "\udcff" for ch in name):
            shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            raise DataError(
                f"the header of {str(path)!r} is not valid UTF-8: column {number} ({shown!r})"
            )


def _csv_error(path: Path, exc: Exception) -> DataError:
    """Turn Arrow's CSV error into one that names the line (and row) at fault.

    Arrow's streaming reader does not know line numbers, so on a parse error
    the file is scanned again with :mod:`csv` to find the first record whose
    field count differs from the header's.
    """
    message = str(exc)
    if "CSV parse error" in message:
        try:
            with _open_text_source(path) as raw:
                text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
                delimiter = csv_delimiter(path)
                reader = csv.reader(text, delimiter=delimiter)
                header = next(reader, [])
                row_index = 0
                for record in reader:
                    if not record:  # a blank line: Arrow skips it, so it is no row
                        continue
                    if len(record) != len(header):
                        return DataError(
                            f"malformed CSV on line {reader.line_num} of {str(path)!r}: "
                            f"expected {len(header)} fields, got {len(record)}",
                            row=row_index,
                        )
                    row_index += 1
        except (OSError, csv.Error):
            pass
    return DataError(f"cannot read {str(path)!r} as CSV: {message}")


# -------------------------------------------------------------------- jsonl
Chunk = list[tuple[int, bytes]]  # (1-based line number, line) for the non-blank lines


def _line_chunks(path: Path, chunk_rows: int) -> Iterator[Chunk]:
    """Non-blank lines of a JSON Lines file in chunks, with their line numbers.

    A file whose first character is ``[`` is one JSON array: it is loaded
    whole and each element becomes a "line" numbered by its 1-based index.
    """
    with _open_text_source(path) as f:
        head = f.read(4096)
        if head.lstrip()[:1] == b"[":
            yield from _array_chunks(path, head + f.read(), chunk_rows)
            return
        f.seek(0)
        chunk: Chunk = []
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            chunk.append((number, line.rstrip(b"\r\n")))
            if len(chunk) >= chunk_rows:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def _array_chunks(path: Path, data: bytes, chunk_rows: int) -> Iterator[Chunk]:
    try:
        items = json.loads(data)
    except RecursionError as exc:
        raise DataError(
            f"{str(path)!r} is nested too deep to read (kleene's limit for JSON values: "
            f"{MAX_JSON_DEPTH} levels)"
        ) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        where = f" on line {line}" if line else ""
        raise DataError(f"malformed JSON{where} of {str(path)!r}: {exc}") from exc
    if not isinstance(items, list):
        raise DataError(f"{str(path)!r} is neither JSON Lines nor a JSON array of objects")
    for start in range(0, len(items), chunk_rows):
        yield [
            (k + 1, json.dumps(item).encode()) for k, item in enumerate(items[start : start + chunk_rows], start=start)
        ]


def _parse_chunk_arrow(chunk: Chunk) -> pa.Table | None:
    """The chunk parsed by Arrow's JSON reader, or None if Arrow cannot (the slow path can)."""
    import pyarrow.json as pjson  # lazy: only JSON inputs pay its start-up cost

    data = b"\n".join(line for _, line in chunk)
    try:
        table = pjson.read_json(
            io.BytesIO(data),
            read_options=pjson.ReadOptions(block_size=len(data) + 1, use_threads=True),
        )
    except pa.ArrowException:
        return None
    if table.num_rows != len(chunk):
        return None
    return table


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _parse_chunk_python(chunk: Chunk, first_row: int, path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for offset, (number, line) in enumerate(chunk):
        invalid = False
        try:
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:  # a bad row (kleene.io.utf8), unless the JSON is bad too
                text = line.decode("utf-8", "surrogateescape")
                invalid = True
            value = json.loads(text)
            # A "\ud800" escape decodes to a lone surrogate, which no UTF-8 text holds: a bad
            # row like invalid bytes (it made Arrow's conversion fail with a traceback).
            invalid = invalid or (_SURROGATE_ESCAPE.search(text) is not None)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(
                f"malformed JSON on line {number} of {str(path)!r}: {exc}",
                row=first_row + offset,
            ) from exc
        if not isinstance(value, dict):
            raise DataError(
                f"line {number} of {str(path)!r} is a JSON {type(value).__name__}, not an object",
                row=first_row + offset,
            )
        rows.append(fix_row(value) if invalid else value)
    return rows


def _python_type(values: list[Any]) -> pa.DataType:
    """The Arrow type for one column of Python values; mixed kinds give strings."""
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.null()
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int}:
        if all(-(1 << 63) <= v < (1 << 63) for v in values if v is not None):
            return pa.int64()
        return pa.float64()
    if kinds <= {int, float}:
        return pa.float64()
    if kinds == {str}:
        return pa.string()
    if kinds <= {dict} or kinds <= {list}:
        try:
            return pa.array(values).type
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return pa.string()
    return pa.string()


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def _column(values: list[Any], typ: pa.DataType) -> pa.Array:
    if pa.types.is_string(typ):
        return pa.array([_as_text(v) for v in values], pa.string())
    if pa.types.is_floating(typ):
        return pa.array([None if v is None else float(v) for v in values], typ)
    if pa.types.is_timestamp(typ):
        # Arrow parsed these from ISO strings in other chunks: parse the same way.
        return pa.array([_as_text(v) for v in values], pa.string()).cast(typ)
    return pa.array(values, typ)


def _table_from_rows(rows: list[dict[str, Any]], schema: pa.Schema | None) -> pa.Table:
    names: dict[str, None] = dict.fromkeys(schema.names) if schema is not None else {}
    for row in rows:
        for key in row:
            names.setdefault(key, None)
    arrays, fields = [], []
    for name in names:
        values = [row.get(name) for row in rows]
        typ = schema.field(name).type if schema is not None and name in schema.names else _python_type(values)
        arrays.append(_column(values, typ))
        fields.append(pa.field(name, typ))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _unify_types(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    numeric = (pa.types.is_integer, pa.types.is_floating)
    if any(f(a) for f in numeric) and any(f(b) for f in numeric):
        return pa.float64()
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b) and a.tz == b.tz:
        return pa.timestamp("ns", tz=a.tz)
    return pa.string()


def _unify(schema: pa.Schema | None, other: pa.Schema) -> pa.Schema:
    if schema is None:
        return other
    fields = {f.name: f.type for f in schema}
    for f in other:
        fields[f.name] = _unify_types(fields[f.name], f.type) if f.name in fields else f.type
    return pa.schema([pa.field(n, t) for n, t in fields.items()])


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table | None:
    """``table`` cast to ``schema`` (missing columns null), or None if that would lose text."""
    arrays = []
    for field in schema:
        if field.name not in table.column_names:
            arrays.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        if column.type != field.type:
            if pa.types.is_string(field.type) and not pa.types.is_null(column.type):
                # Casting a parsed number or timestamp back to text would not give
                # the original text; let the Python path render it instead.
                return None
            try:
                column = column.cast(field.type)
            except pa.ArrowException:
                return None
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=schema)


def _parse_chunk(chunk: Chunk, first_row: int, path: Path, schema: pa.Schema | None) -> pa.Table:
    """One chunk as a table (of ``schema`` when given): Arrow if possible, else Python.

    Arrow's JSON reader would replace invalid UTF-8 with U+FFFD, silently: a
    chunk holding some goes the Python way, which marks those rows (kleene.io.utf8).
    """
    data = b"\n".join(line for _, line in chunk)
    deep = too_deep(data)
    if deep is not None:
        index, depth = deep
        raise DataError(
            f"line {chunk[index][0]} of {str(path)!r} is nested {depth} levels deep, over "
            f"kleene's limit of {MAX_JSON_DEPTH} for JSON Lines (kleene.io.nesting.MAX_JSON_DEPTH)",
            row=first_row + index,
        )
    valid = is_valid(data)
    table = _parse_chunk_arrow(chunk) if valid else None
    if table is not None:
        if schema is None:
            return table
        conformed = _conform(table, schema)
        if conformed is not None:
            return conformed
    rows = _parse_chunk_python(chunk, first_row, path)
    table = _table_from_rows(rows, schema)
    return table if schema is None else table.select(schema.names)


def _read_jsonl(path: Path, batch_size: int) -> Iterator[pa.RecordBatch]:
    schema: pa.Schema | None = None
    kept: list[pa.Table] | None = []
    size = 0
    row = 0
    try:
        for chunk in _line_chunks(path, batch_size):
            table = _parse_chunk(chunk, row, path, None)
            row += len(chunk)
            schema = _unify(schema, table.schema)
            if kept is not None:
                kept.append(table)
                size += table.nbytes
                if size > BUFFER_BYTES:
                    kept = None
    except OSError as exc:
        raise DataError(f"cannot read {str(path)!r}: {exc}") from exc
    if schema is None:
        return
    if kept is not None:
        conformed = [_conform(t, schema) for t in kept]
        if all(t is not None for t in conformed):
            for t in conformed:
                assert t is not None
                yield from _rebatch(iter(t.to_batches()), batch_size)
            return
    # Second pass: parse again, now straight into the settled schema.
    row = 0
    for chunk in _line_chunks(path, batch_size):
        table = _parse_chunk(chunk, row, path, schema)
        row += len(chunk)
        yield from _rebatch(iter(table.combine_chunks().to_batches()), batch_size)
