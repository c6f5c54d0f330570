"""What the text readers (CSV, JSON Lines) share: a file's bytes, decompressed by its extension;
how many bytes of batches a first pass may keep; batches cut to the size asked for.

:data:`BUFFER_BYTES` is read at each call (``textfiles.BUFFER_BYTES``) by the CSV and JSON Lines
readers and :func:`kleene.io.readers.cheap_columns`, so that one setting (a test's) moves all three.
"""

from __future__ import annotations

import bz2
import lzma
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

import pyarrow as pa

COMPRESSION = (".gz", ".bz2", ".xz")
"""The extensions of the compressed text files kleene reads (a ``.gz``, ``.bz2`` or ``.xz`` after
the format's own)."""


BUFFER_BYTES = 64 << 20
"""Up to this many bytes of batches are kept from the first pass (no second read)."""


def open_text_source(path: Path) -> IO[bytes]:
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


def rebatch(batches: Iterator[pa.RecordBatch], batch_size: int) -> Iterator[pa.RecordBatch]:
    """Cut batches longer than ``batch_size`` (zero-copy slices); drop empty ones."""
    for batch in batches:
        n = batch.num_rows
        if n <= batch_size:
            if n:
                yield batch
            continue
        for start in range(0, n, batch_size):
            yield batch.slice(start, batch_size)
