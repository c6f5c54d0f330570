"""Parquet files as Arrow record batches, one row group at a time.

:meth:`pyarrow.parquet.ParquetFile.iter_batches` over one row group at a time (memory is
bounded by the largest row group); only the columns asked for are decoded, and with
``dictionary`` string columns come as dictionary arrays, as they are stored.  String columns are
checked to hold UTF-8 (Arrow does not check).  :mod:`kleene.io.readers` picks this reader by the
file's extension.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from kleene.language.errors import DataError


def _threads() -> bool:
    """Decode a row group's columns on several threads only when this process may use several
    CPUs: pinned to one, the threads only add their hand-offs (about 10% of a selective
    query's read)."""
    return len(os.sched_getaffinity(0)) > 1 if hasattr(os, "sched_getaffinity") else True


def read_parquet(
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
