"""Turn a time column, whatever its type, into int64 nanoseconds since the epoch.

Time windows (``WITHIN 10 seconds``) compare event times, and the engine does
that on one representation: int64 nanoseconds, the unit CORE uses.  Input
files carry time in many shapes: Arrow timestamps of any unit and time zone
(Parquet, or CSV columns pyarrow recognised), ISO-8601 strings (JSON, or CSV
columns that mix formats), plain numbers in seconds, milliseconds,
microseconds or nanoseconds.  :func:`to_nanos` accepts all of them.

It never raises for a bad *value*: it returns a mask of the rows whose time is
null or unparsable, so that the engine can apply the user's bad-row policy
(stop, skip or quarantine) with the row number; :func:`bad_reason` words the
reason for one of them.  It raises :class:`DataError` only when the column as
a whole cannot hold times (a boolean column, say), because then every row is
bad and the column was most likely named by mistake.

Conversions are vectorized (Arrow casts, numpy arithmetic).  Strings that the
Arrow cast rejects are isolated by bisection, so a few bad values in a
million cost a few dozen extra casts, and are then retried one by one with
Python's ``datetime.fromisoformat`` and as numbers in ``unit``.  Times without
a zone are taken as UTC.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.language.errors import DataError

UNIT_NANOS: dict[str, int] = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_INT64_MAX = np.iinfo(np.int64).max
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

# A string that ends with a UTC designator or an offset, after a time of day.
# (Anchored on the time so that the day of "2024-01-05" is not read as "-05".)
_AWARE = r"[T t]\d{1,2}(:\d{2}){0,2}([.,]\d+)?\s*([Zz]|[+-]\d{2}(:?\d{2})?)$"
_ISO_SHAPE = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}(:\d{2}(:\d{2}([.,]\d+)?)?)?\s*([Zz]|[+-]\d{2}(:?\d{2})?)?)?$"
_INTEGER = r"^[+-]?\d+$"
_FLOAT = r"^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$|^[+-]?(nan|inf|infinity)$"
_LONG_FRACTION = re.compile(r"[.,]\d{7,}")
_LEAF = 32  # slices this small are parsed value by value


class Nanos(NamedTuple):
    """Result of :func:`to_nanos`: ``values`` is meaningless where ``bad`` is True."""

    values: np.ndarray
    bad: np.ndarray


def _check_unit(unit: str) -> int:
    try:
        return UNIT_NANOS[unit]
    except KeyError:
        raise ValueError(f"unknown time unit {unit!r}; expected one of s, ms, us, ns") from None


def to_nanos(column: pa.Array | pa.ChunkedArray, unit: str = "s", *, name: str | None = None) -> Nanos:
    """Convert ``column`` to int64 nanoseconds since 1970-01-01T00:00:00Z.

    ``unit`` applies to numeric columns (and to numeric strings): it is the
    unit the numbers are in.  Floats are accepted for every unit and rounded
    to the nearest nanosecond.  ``name`` only serves error messages.

    Returns ``Nanos(values, bad)``: two numpy arrays of the column's length,
    ``bad`` True for nulls, NaN, unparsable strings and out-of-range values.
    """
    factor = _check_unit(unit)
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 1:
            return to_nanos(column.chunk(0), unit, name=name)
        parts = [to_nanos(chunk, unit, name=name) for chunk in column.chunks]
        if not parts:
            return Nanos(np.zeros(0, np.int64), np.zeros(0, bool))
        return Nanos(np.concatenate([p.values for p in parts]), np.concatenate([p.bad for p in parts]))

    arr: pa.Array = column
    typ = arr.type
    if pa.types.is_dictionary(typ):
        arr = arr.dictionary_decode()
        typ = arr.type
    if pa.types.is_null(typ):
        return Nanos(np.zeros(len(arr), np.int64), np.ones(len(arr), bool))
    if pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        arr = arr.cast(pa.string())
        typ = arr.type
    if pa.types.is_timestamp(typ) or pa.types.is_duration(typ) or pa.types.is_time64(typ):
        return _scaled_ints(arr.cast(pa.int64()), UNIT_NANOS[typ.unit])
    if pa.types.is_time32(typ):
        return _scaled_ints(arr.cast(pa.int32()).cast(pa.int64()), UNIT_NANOS[typ.unit])
    if pa.types.is_date32(typ):
        return _scaled_ints(arr.cast(pa.int32()).cast(pa.int64()), 86_400 * UNIT_NANOS["s"])
    if pa.types.is_date64(typ):
        return _scaled_ints(arr.cast(pa.int64()), UNIT_NANOS["ms"])
    if pa.types.is_integer(typ):
        if pa.types.is_uint64(typ):
            big = pc.fill_null(pc.greater(arr, pa.scalar(_INT64_MAX, pa.uint64())), False)
            arr = pc.if_else(big, pa.scalar(None, pa.uint64()), arr).cast(pa.int64())
        return _scaled_ints(arr.cast(pa.int64()), factor)
    if pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return _scaled_floats(arr.cast(pa.float64()), factor)
    if pa.types.is_string(typ):
        return _parse_strings(arr, factor)
    raise DataError(
        f"a time column must hold timestamps, ISO-8601 strings or numbers, not {typ}",
        column=name,
    )


def _null_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), bool)
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _scaled_ints(arr: pa.Array, factor: int) -> Nanos:
    """``arr * factor`` in int64, with nulls and overflows marked bad."""
    bad = _null_mask(arr)
    raw = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if factor == 1:
        return Nanos(raw.copy() if not raw.flags.writeable else raw, bad)
    limit = _INT64_MAX // factor
    overflow = (raw > limit) | (raw < -limit)
    if overflow.any():
        bad = bad | overflow
        raw = np.where(overflow, 0, raw)
    return Nanos(raw * np.int64(factor), bad)


def _scaled_floats(arr: pa.Array, factor: int) -> Nanos:
    """Floats in some unit to int64 ns, splitting whole and fractional parts.

    Splitting keeps the nanosecond digits: ``1.7e9`` seconds times ``1e9``
    exceeds float64's 53-bit precision, but the whole seconds times 1e9 in
    int64 plus the rounded fraction does not lose anything.
    """
    bad = _null_mask(arr)
    raw = np.asarray(arr.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
    with np.errstate(invalid="ignore"):
        whole = np.floor(raw)
        limit = float(_INT64_MAX // factor)
        invalid = ~np.isfinite(raw) | (whole >= limit) | (whole <= -limit)
    if invalid.any():
        bad = bad | invalid
        raw = np.where(invalid, 0.0, raw)
        whole = np.where(invalid, 0.0, whole)
    frac = np.rint((raw - whole) * factor).astype(np.int64)
    return Nanos(whole.astype(np.int64) * np.int64(factor) + frac, bad)


def _parse_strings(arr: pa.StringArray, factor: int) -> Nanos:
    """ISO-8601 strings (and numeric strings, read in ``unit``) to nanoseconds.

    Arrow's cast is fast when it succeeds, but a failing cast can cost far
    more than a successful one (a naive string cast to a zoned type is slow
    to fail), so strings are first sorted by shape with vectorized regexes
    and each group is cast to the type that fits it.
    """
    n = len(arr)
    bad = _null_mask(arr)
    trimmed = pc.utf8_trim_whitespace(arr)

    def mask(pattern: str) -> np.ndarray:
        found = pc.match_substring_regex(trimmed, pattern, ignore_case=True)
        return np.asarray(pc.fill_null(found, False).to_numpy(zero_copy_only=False), dtype=bool)

    todo = ~bad
    shaped = todo & mask(_ISO_SHAPE)
    aware = shaped & mask(_AWARE)
    naive = shaped & ~aware
    if not (todo & ~shaped).any() and not (aware.any() and naive.any()):
        # The common case: one consistent ISO-8601 form throughout.
        typ = pa.timestamp("ns", tz="UTC") if aware.any() else pa.timestamp("ns")
        try:
            fast = trimmed.cast(typ).cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        else:
            return Nanos(np.asarray(fast.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64), bad)

    values = np.zeros(n, np.int64)
    rest = todo & ~shaped
    if rest.any():
        # Numbers written as strings (JSON columns of mixed types end up like this).
        integral = rest & mask(_INTEGER)
        numeric = rest & mask(_FLOAT) & ~integral
        if integral.any():
            idx = np.flatnonzero(integral)
            try:
                ints = trimmed.take(pa.array(idx)).cast(pa.int64())
            except pa.ArrowInvalid:  # more digits than int64 holds: read as floats
                numeric |= integral
            else:
                part = _scaled_ints(ints, factor)
                values[idx], bad[idx] = part.values, part.bad
        if numeric.any():
            idx = np.flatnonzero(numeric)
            part = _scaled_floats(trimmed.take(pa.array(idx)).cast(pa.float64()), factor)
            values[idx], bad[idx] = part.values, part.bad
        rest &= ~(integral | numeric)
        # Other ISO forms and garbage go to Python one by one, so a column of
        # garbage costs one failed parse per value, not many failed casts.
        odd = np.flatnonzero(rest)
        texts = trimmed.take(pa.array(odd, pa.int64())).to_pylist()
        for i, text in zip(odd.tolist(), texts, strict=True):
            value = _parse_one(text, pa.timestamp("ns"))
            if value is None:
                bad[i] = True
            else:
                values[i] = value
    # Strings shaped like Arrow's ISO-8601 go to its cast, by zone-ness.
    for zoned in (False, True):
        idx = np.flatnonzero(aware if zoned else naive)
        if len(idx) == 0:
            continue
        target = pa.timestamp("ns", tz="UTC") if zoned else pa.timestamp("ns")
        _bisect_cast(trimmed.take(pa.array(idx)), idx, target, values, bad)
    return Nanos(values, bad)


def _bisect_cast(
    strings: pa.Array,
    idx: np.ndarray,
    target: pa.DataType,
    values: np.ndarray,
    bad: np.ndarray,
) -> None:
    """Cast ``strings`` (rows ``idx`` of the column) to ``target``, isolating failures.

    Arrow's cast is all-or-nothing, so on failure the slice is halved until
    the slices are small; their values are then parsed one at a time by
    :func:`_parse_one`.  A handful of bad values among millions thus costs a
    few dozen casts instead of a Python loop over the column.
    """
    stack = [(0, len(strings))]
    while stack:
        lo, hi = stack.pop()
        part = strings.slice(lo, hi - lo)
        try:
            cast = part.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            if hi - lo <= _LEAF:
                for k, text in enumerate(part.to_pylist(), start=lo):
                    value = _parse_one(text, target)
                    if value is None:
                        bad[idx[k]] = True
                    else:
                        values[idx[k]] = value
            else:
                mid = (lo + hi) // 2
                stack.append((mid, hi))
                stack.append((lo, mid))
            continue
        values[idx[lo:hi]] = np.asarray(cast.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


def _parse_one(text: str, target: pa.DataType) -> int | None:
    """One string that Arrow's cast rejected (with its neighbours): try Python's parser.

    ``datetime.fromisoformat`` accepts every ISO-8601 form Arrow does and more
    (basic format, ``Z``, offsets), but keeps only microseconds; when the text
    has more fractional digits, Arrow parses it alone to keep the nanoseconds.
    """
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if _LONG_FRACTION.search(text):
        for typ in (target, pa.timestamp("ns", tz="UTC"), pa.timestamp("ns")):
            try:
                return int(pa.array([text]).cast(typ).cast(pa.int64())[0].as_py())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    delta = parsed - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def bad_reason(column: pa.Array | pa.ChunkedArray, index: int) -> str:
    """Why row ``index`` of a time column is bad, in words fit for a bad-row report."""
    value: Any = column[index].as_py()
    if value is None:
        return "null value"
    if isinstance(value, float) and value != value:
        return "NaN value"
    return "unreadable time"


def describe_value(column: pa.Array | pa.ChunkedArray, index: int) -> str:
    """The offending value itself, for an error message that shows it."""
    return repr(column[index].as_py())
