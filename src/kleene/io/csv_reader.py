"""CSV (and TSV) files as Arrow record batches of one schema, with line-numbered errors.

Streamed by :func:`pyarrow.csv.open_csv`.  Arrow fixes each column's type from the
first block and fails if a later block disagrees.  So a first pass reads the
file and, on such a failure, reads it once as text to settle every column's
type (null → int → float → string; :func:`_survey`) and starts over; the batches of the pass that
succeeds are kept if they are small (below :data:`kleene.io.textfiles.BUFFER_BYTES`), and
otherwise the file is read a second time with the settled types.  Small files are thus read
once; large ones twice, in constant memory.  An uncompressed file below that size is read
whole by :func:`pyarrow.csv.read_csv`, which parses its blocks in parallel (2-3x faster than
streaming one block after another), with the same widening.  Only the columns asked for are
parsed (``include_columns``).  :mod:`kleene.io.readers` picks this reader by the file's extension.
"""

from __future__ import annotations

import csv
import io
import lzma
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv

from kleene.io import textfiles
from kleene.io.textfiles import COMPRESSION, open_text_source, rebatch
from kleene.io.utf8 import decode_batch
from kleene.language.errors import DataError

# CSV cells that mean "no value".  Deliberately short: "NA" or "n/a" may be
# real strings (a country code, a product name), and "NaN" must stay a float
# NaN so the bad-row policy can report it as such rather than as a null.
CSV_NULLS = ["", "null", "NULL"]


def csv_delimiter(path: Path) -> str:
    """A tab for ``.tsv`` files (``x.tsv.gz`` too), else a comma."""
    return "\t" if ".tsv" in [s.lower() for s in path.suffixes] else ","


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


def read_csv(
    path: Path, batch_size: int, wanted: frozenset[str] | None, nulls: list[str]
) -> Iterator[pa.RecordBatch]:
    _check_csv_header(path)
    column_types: dict[str, pa.DataType] = {}
    # Arrow names a failing column by its place in the file, included or not.
    include = None if wanted is None else [n for n in _csv_header(path) if n in wanted]
    whole = path.suffix.lower() not in COMPRESSION and path.stat().st_size <= textfiles.BUFFER_BYTES
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
                    if size > textfiles.BUFFER_BYTES:
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
        yield from map(decode_batch, rebatch(iter(kept), batch_size))
        return
    settled = {field.name: field.type for field in schema}
    try:
        for batch in rebatch(iter(_csv_reader(path, batch_size, settled, include, nulls)), batch_size):
            yield decode_batch(batch)
    except pa.ArrowException as exc:
        raise _csv_error(path, exc) from exc


def _csv_header(path: Path) -> list[str]:
    with open_text_source(path) as raw:
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
        with open_text_source(path) as raw:
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
            with open_text_source(path) as raw:
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
