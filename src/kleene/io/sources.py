"""Every kind of source a user holds, as a stream of Arrow RecordBatches.

A path is read by :func:`~kleene.io.readers.read_batches`; pyarrow tables,
batches and readers pass through; pandas, polars, DuckDB and any other object
that exports Arrow's PyCapsule stream (``__arrow_c_stream__``) are read
without a copy where Arrow allows; event dicts are batched.  Nothing here
imports pandas: a DataFrame is recognised only when pandas is already loaded.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from kleene.io.readers import read_batches
from kleene.language.errors import KleeneError

DICT_BATCH = 4096
"""Events per batch when the source is an iterable of dicts."""


def pushdown(columns: tuple[str, ...], policy_mode: str, *, events: bool) -> tuple[str, ...] | None:
    """The columns to read from a file: all (None) when the output or the quarantine needs whole rows."""
    return None if events or policy_mode == "quarantine" else columns


def to_batches(
    source: Any, columns: Iterable[str] | None = None, *, null_values: Sequence[str] = ()
) -> Iterator[pa.RecordBatch]:
    """Normalize every supported source into RecordBatches.

    ``source``: a file path (CSV, JSON Lines, Parquet), a pyarrow Table,
    RecordBatch or RecordBatchReader, a pandas DataFrame, any object with
    ``__arrow_c_stream__`` or ``__arrow_c_array__`` (polars, DuckDB, ...), or
    an iterable of batches, tables or event dicts.  A file path is read with
    :func:`~kleene.io.readers.read_batches`; with ``columns`` (the callers that
    need no event data pass the query's), only those columns, strings as
    dictionaries (projection pushdown); ``null_values``: more null tokens for
    a text file.
    """
    if isinstance(source, (str, os.PathLike)):
        wanted = None if columns is None else tuple(columns)
        yield from read_batches(
            os.fspath(source), columns=wanted, dictionary=wanted is not None, null_values=null_values
        )
        return
    if isinstance(source, pa.RecordBatch):
        yield source
        return
    if isinstance(source, pa.Table):
        yield from source.to_batches()
        return
    if isinstance(source, pa.RecordBatchReader):
        yield from source
        return
    pd = sys.modules.get("pandas")  # a DataFrame means pandas is imported: never import it here
    if pd is not None and isinstance(source, pd.DataFrame):
        yield from pa.Table.from_pandas(source, preserve_index=False).to_batches()
        return
    if hasattr(source, "__arrow_c_stream__"):  # Arrow's PyCapsule interface: read, not copied
        yield from pa.RecordBatchReader.from_stream(source)
        return
    if hasattr(source, "__arrow_c_array__"):
        yield pa.record_batch(source)
        return
    if isinstance(source, Mapping):
        raise KleeneError("a single event: use Query.push(event)")
    if not isinstance(source, Iterable):
        raise KleeneError(f"cannot read events from {type(source).__name__}")
    it = iter(source)
    first = next(it, None)
    if first is None:
        return
    if isinstance(first, (pa.RecordBatch, pa.Table)):
        # Batches are consumed one at a time, never read ahead: memory stays
        # that of one batch, and progress reporting follows the evaluation.
        for item in itertools.chain([first], it):
            if isinstance(item, pa.Table):
                yield from item.to_batches()
            else:
                yield item
        return
    rows = itertools.chain([first], it)
    while chunk := list(itertools.islice(rows, DICT_BATCH)):
        yield from_dicts(chunk)


def from_dicts(rows: list[Mapping[str, Any]]) -> pa.RecordBatch:
    """A batch from event dicts; a column whose values mix types is kept as strings.

    The conform step then parses the strings it needs as numbers and sets
    aside, with a reason, the rows it cannot parse: mixed input is reported,
    never silently coerced or dropped.
    """
    try:
        return pa.RecordBatch.from_pylist([dict(e) for e in rows])
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    names = list(dict.fromkeys(k for e in rows for k in e))
    arrays = []
    for name in names:
        values = [e.get(name) for e in rows]
        try:
            arrays.append(pa.array(values))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arrays.append(pa.array([None if v is None else str(v) for v in values], pa.string()))
    return pa.RecordBatch.from_arrays(arrays, names=names)
