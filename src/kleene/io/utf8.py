"""Invalid UTF-8 in a text file: a bad row, not a change of the column's type.

Arrow's CSV reader types a column holding one invalid byte sequence as
*binary* (a filter on it then finds no string attribute, and every value is
written as base64), and its JSON reader silently replaces such bytes with
U+FFFD.  kleene's readers instead keep text columns as strings and mark the
rows at fault in one extra column, :data:`INVALID_UTF8`, that names the first
column of each such row holding invalid bytes (null on good rows).  The
session removes that column and hands the marked rows to the bad-row policy
(``--on-bad-row``), so they are named (error), counted (skip) or written to
the quarantine file, with the invalid bytes shown as ``\\xNN`` escapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

INVALID_UTF8 = "__kleene_invalid_utf8__"
"""The column naming, per row, the first column that holds invalid UTF-8 (null: none)."""

REASON = "invalid UTF-8"


def is_valid(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8 (Arrow's vectorized check: no Python string is built)."""
    try:
        pa.array([data], pa.binary()).cast(pa.string())
    except pa.ArrowInvalid:
        return False
    return True


def decode_binary(arr: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A binary column as strings, and the rows whose bytes are not UTF-8.

    Invalid values become their text with ``\\xNN`` escapes (Python's
    ``backslashreplace``), so a quarantined row shows what was there.  Each
    distinct value is decoded once.
    """
    try:
        return arr.cast(pa.string()), np.zeros(len(arr), bool)
    except pa.ArrowInvalid:
        pass
    encoded = arr.dictionary_encode()
    texts: list[str | None] = []
    bad: list[bool] = []
    for value in encoded.dictionary.to_pylist():
        try:
            texts.append(value.decode("utf-8"))
            bad.append(False)
        except UnicodeDecodeError:
            texts.append(value.decode("utf-8", "backslashreplace"))
            bad.append(True)
    out = pa.array(texts, pa.string()).take(encoded.indices)
    valid = np.asarray(encoded.indices.is_valid())
    index = np.asarray(encoded.indices.fill_null(0)).astype(np.intp)
    flags = np.array(bad, bool)[index] & valid if bad else np.zeros(len(arr), bool)
    return out, flags


def decode_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Binary columns of a CSV batch (Arrow's sign of invalid UTF-8) back to strings, and
    :data:`INVALID_UTF8` appended (for every batch of a file that has such a column, so all
    its batches share one schema)."""
    flagged: list[str | None] = [None] * batch.num_rows
    any_binary = False
    for i, field in enumerate(batch.schema):
        if not (pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type)):
            continue
        any_binary = True
        text, bad = decode_binary(batch.column(i))
        batch = batch.set_column(i, pa.field(field.name, pa.string()), text)
        for row in np.flatnonzero(bad).tolist():
            if flagged[row] is None:
                flagged[row] = field.name
    if not any_binary:
        return batch
    return batch.append_column(INVALID_UTF8, pa.array(flagged, pa.string()))


def unmark(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, list[tuple[int, str]]]:
    """``batch`` without :data:`INVALID_UTF8`, and its marked rows as (row, column) pairs."""
    marks = batch.column(INVALID_UTF8)
    batch = batch.drop_columns([INVALID_UTF8])
    if marks.null_count == len(marks):
        return batch, []
    columns = marks.to_pylist()
    return batch, [(row, columns[row]) for row in np.flatnonzero(np.asarray(marks.is_valid())).tolist()]


def surrogates_fixed(value: Any) -> tuple[Any, bool]:
    """A JSON value decoded with ``surrogateescape``, its invalid bytes as ``\\xNN`` escapes,
    and whether it held any."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value, False
        except UnicodeEncodeError:
            return _escaped(value), True
    if isinstance(value, list):
        fixed = [surrogates_fixed(v) for v in value]
        return [v for v, _ in fixed], any(b for _, b in fixed)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        bad = False
        for k, v in value.items():
            key, bad_key = surrogates_fixed(k)
            out[key], bad_value = surrogates_fixed(v)
            bad = bad or bad_key or bad_value
        return out, bad
    return value, False


def _escaped(value: str) -> str:
    """A string holding surrogates as ``\\xNN`` escapes of its bytes: an invalid byte read with
    ``surrogateescape``, or a lone surrogate a JSON ``\\ud800`` escape spelled (no UTF-8
    holds it: its three bytes as CESU would have them)."""
    raw = b"".join(
        ch.encode("utf-8", "surrogatepass")
        if "\ud800" <= ch <= "\udfff" and not "\udc80" <= ch <= "\udcff"
        else ch.encode("utf-8", "surrogateescape")
        for ch in value
    )
    return raw.decode("utf-8", "backslashreplace")


def fix_row(row: dict[str, Any]) -> dict[str, Any]:
    """A JSON Lines row read with ``surrogateescape``: invalid bytes escaped, and
    :data:`INVALID_UTF8` naming the first column that held some."""
    out: dict[str, Any] = {}
    first: str | None = None
    for k, v in row.items():
        key, bad_key = surrogates_fixed(k)
        out[key], bad_value = surrogates_fixed(v)
        if (bad_key or bad_value) and first is None:
            first = key
    if first is not None:
        out[INVALID_UTF8] = first
    return out
