"""Bring a batch's columns to the kinds a query needs, and find the bad rows.

Predicates (:mod:`kleene.predicates`) evaluate an undefined value —
a null, a NaN, a missing column, a string where a number is needed — as
*false*.  That is a sound default, but silently evaluating a broken row
"somehow" would change the complex events a user gets, so before the
predicates run, :func:`conform` checks every column the query reads on the
rows where it matters and lists the problems; the engine hands those rows to
the bad-row policy (:mod:`kleene.io.badrows`).

At the same time it casts each required column to one representation of its
kind, so that the predicate stage sees few, fast column types:

==========  ==============================================================
kind        accepted input                     -> output column
==========  ==============================================================
number      integers                           -> int64 (uint64 beyond
                                                  int64 is kept as is)
            floats, decimals                   -> float64
            timestamps, dates, durations       -> kept as is (compared by
                                                  their integer value)
            strings (CSV: ``"12.5"``)          -> parsed per value: int64 if
                                                  every parsable value is an
                                                  integer, else float64.
                                                  Syntax: Python's ``float``
                                                  without ``_`` separators,
                                                  surrounding blanks ignored
                                                  (``" 12"``, ``"1e3"``,
                                                  ``"inf"``); ``"nan"`` parses
                                                  and is then reported as NaN
string      strings, dictionary strings        -> kept as is
            integers                           -> their decimal text (``123``
                                                  -> ``"123"``): CSV readers
                                                  infer integer columns for
                                                  codes and ids, and an
                                                  integer has one canonical
                                                  text.  Floats are *not*
                                                  converted (``1.0`` or
                                                  ``"1"``?) and are bad
boolean     booleans                           -> kept as is
            strings ``true`` / ``false``       -> bool (any case, blanks
                                                  ignored)
==========  ==============================================================

Anything else is bad on every non-null row ("a boolean where a number is
expected").  An empty or blank string counts as a null for the number and
boolean kinds (that is how CSV writes a missing value); for the string kind
it is a valid, empty string.  A value that is bad is replaced by null in the
output column, so the predicates see it as undefined on the rows that were
not required to be valid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

import kleene.kernels as pc

KINDS = ("number", "string", "boolean")

_INT_RE = r"^[+-]?[0-9]+$"
_NUMBER_RE = (
    r"^[+-]?([0-9]+\.?[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|inf|infinity|nan)$"
)

NULL_LIKE = frozenset(
    ["na", "n/a", "n.a.", "nan", "null", "none", "nil", "-", "--", "?", "#n/a", "missing", "undefined"]
)
"""Texts that often mean "no value" in files (compared case-insensitively, blanks trimmed):
a column of these is not called text, and a number column holding one suggests
``--null-values``."""

MISSING = "missing attribute"
NULL = "null value"
NAN = "NaN value"


@dataclass(frozen=True)
class Requirement:
    """What a query needs of one attribute.

    ``kind`` is ``'number'``, ``'string'`` or ``'boolean'``.  Rows whose type
    is in ``event_types`` must carry a valid value of that kind; with
    ``event_types=None`` every row must.
    """

    kind: str
    event_types: frozenset[str] | None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}; expected one of {KINDS}")


# A problem found in one column: a row mask and how to word it for those rows.
_Reasons = Callable[[np.ndarray], Sequence[str]]
_Problem = tuple[np.ndarray, _Reasons]


def _fixed(reason: str) -> _Reasons:
    return lambda rows: [reason] * len(rows)


def _per_value(arr: pa.Array, template: str) -> _Reasons:
    """Reasons quoting the offending value; computed for the bad rows only."""

    def reasons(rows: np.ndarray) -> list[str]:
        values = arr.take(pa.array(rows, pa.int64())).to_pylist()
        return [template.format(v) for v in values]

    return reasons


def not_a_number(value: object) -> str:
    """The reason for a text that is no number; for a null-like one (``NA``), how to read it
    as null."""
    reason = f"{value!r} is not a number"
    if isinstance(value, str) and value.strip().lower() in NULL_LIKE:
        token = value.strip()
        reason += (
            f" (if it means no value, read it as null: --null-values {token}, "
            f"null_values=[{token!r}] in Python)"
        )
    return reason


def _not_numbers(arr: pa.Array) -> _Reasons:
    def reasons(rows: np.ndarray) -> list[str]:
        return [not_a_number(v) for v in arr.take(pa.array(rows, pa.int64())).to_pylist()]

    return reasons


def _mask(arr: pa.Array) -> np.ndarray:
    """Arrow booleans (nulls = false) as numpy."""
    if arr.null_count:
        arr = pc.fill_null(arr, False)
    return np.asarray(arr)


def _nulls(arr: pa.Array) -> np.ndarray:
    """Null rows; for dictionary arrays also rows whose dictionary entry is null."""
    if pa.types.is_dictionary(arr.type) and arr.dictionary.null_count:
        indices = arr.indices
        entry_null = np.asarray(arr.dictionary.is_null())
        return _nulls(indices) | entry_null[np.asarray(indices.fill_null(0)).astype(np.intp)]
    if arr.null_count == 0:
        return np.zeros(len(arr), bool)
    return np.asarray(pc.is_null(arr))


def _is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _describe(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_boolean(t):
        return "a boolean"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "a number"
    if _is_string(t):
        return "a string"
    return f"a value of type {t}"


def _wrong_type(arr: pa.Array, kind: str, out_type: pa.DataType) -> tuple[pa.Array, list[_Problem]]:
    """A column that cannot hold the kind at all: every non-null value is bad."""
    null = _nulls(arr)
    problems: list[_Problem] = [(null, _fixed(NULL))]
    problems.append((~null, _fixed(f"{_describe(arr.type)} where a {kind} is expected")))
    return pa.nulls(len(arr), out_type), problems


# ------------------------------------------------------------------ parsing


def _parse_numbers(text: pa.Array) -> tuple[pa.Array, list[_Problem]]:
    """Parse a plain string array: (int64 or float64 array, problems).

    The fast path lets Arrow cast the whole column, which succeeds when every
    value is well formed (Arrow's number syntax is exactly ``_NUMBER_RE``);
    only columns with bad values (or ``+5``, which Arrow's int cast rejects)
    pay for the regular expressions that say which rows are bad.
    """
    trimmed = pc.utf8_trim_whitespace(text)
    try:
        floats = trimmed.cast(pa.float64())
    except pa.ArrowInvalid:
        floats = None
    if floats is not None and not _mask(pc.starts_with(trimmed, "+")).any():
        null_only: _Problem = (_nulls(text), _fixed(NULL))
        # All well formed: integers iff only digits follow an optional '-'.
        # (Checked first: a failing int cast is ten times slower than this.)
        digits = pc.ascii_is_decimal(pc.ascii_ltrim(trimmed, "-"))
        if pc.all(digits).as_py() is not False:
            try:
                return trimmed.cast(pa.int64()), [null_only]
            except pa.ArrowInvalid:  # beyond int64
                pass
        return floats, [null_only, (_mask(pc.is_nan(floats)), _fixed(NAN))]
    null = _nulls(text) | _mask(pc.equal(trimmed, ""))
    is_number = _mask(pc.match_substring_regex(trimmed, _NUMBER_RE, ignore_case=True))
    is_int = _mask(pc.match_substring_regex(trimmed, _INT_RE))
    bad = ~null & ~is_number
    problems: list[_Problem] = [
        (null, _fixed(NULL)),
        (bad, _not_numbers(text)),
    ]
    out: pa.Array | None = None
    if np.array_equal(is_int, is_number):  # every parsable value is an integer
        digits = pc.replace_substring_regex(trimmed, r"^\+", "")
        try:
            out = pc.if_else(pa.array(is_int), digits, None).cast(pa.int64())
        except pa.ArrowInvalid:  # beyond int64: fall back to floats
            out = None
    if out is None:
        out = pc.if_else(pa.array(is_number), trimmed, None).cast(pa.float64())
        problems.append((_mask(pc.is_nan(out)), _fixed(NAN)))
    return out, problems


def _parse_booleans(text: pa.Array) -> tuple[pa.Array, list[_Problem]]:
    lowered = pc.utf8_lower(pc.utf8_trim_whitespace(text))
    null = _nulls(text) | _mask(pc.equal(lowered, ""))
    true = _mask(pc.equal(lowered, "true"))
    false = _mask(pc.equal(lowered, "false"))
    bad = ~null & ~true & ~false
    out = pc.if_else(pa.array(true | false), pa.array(true), None)
    return out, [(null, _fixed(NULL)), (bad, _per_value(text, "{!r} is not a boolean"))]


def _via_dictionary(
    arr: pa.Array, parse: Callable[[pa.Array], tuple[pa.Array, list[_Problem]]]
) -> tuple[pa.Array, list[_Problem]]:
    """Parse each distinct string once, then spread the result over the rows."""
    if not pa.types.is_dictionary(arr.type):
        return parse(arr)
    dictionary = arr.dictionary
    if not _is_string(dictionary.type):
        dictionary = dictionary.cast(pa.string())
    values, value_problems = parse(dictionary)
    indices = arr.indices
    out = values.take(indices)
    row_null = _nulls(indices)
    idx = np.asarray(indices.fill_null(0)).astype(np.intp)
    problems: list[_Problem] = [(row_null, _fixed(NULL))]
    for mask, reasons in value_problems:
        if len(mask) == 0:
            continue
        rows_mask = mask[idx] & ~row_null

        def per_row(rows: np.ndarray, reasons: _Reasons = reasons) -> Sequence[str]:
            return reasons(idx[rows])

        problems.append((rows_mask, per_row))
    return out, problems


# ------------------------------------------------------------------ by kind


def _to_number(arr: pa.Array) -> tuple[pa.Array, list[_Problem]]:
    t = arr.type
    null: _Problem = (_nulls(arr), _fixed(NULL))
    if pa.types.is_integer(t):
        try:
            return pc.cast(arr, pa.int64()), [null]
        except pa.ArrowInvalid:  # uint64 beyond int64: the predicates read it exactly
            return arr, [null]
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        out = pc.cast(arr, pa.float64())
        return out, [null, (_mask(pc.is_nan(out)), _fixed(NAN))]
    if pa.types.is_temporal(t):
        return arr, [null]
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.int64()), [null]
    if _is_string(t) or (pa.types.is_dictionary(t) and _is_string(t.value_type)):
        return _via_dictionary(arr, _parse_numbers)
    if pa.types.is_dictionary(t):
        return _to_number(arr.dictionary_decode())
    return _wrong_type(arr, "number", pa.int64())


def _to_string(arr: pa.Array) -> tuple[pa.Array, list[_Problem]]:
    t = arr.type
    null: _Problem = (_nulls(arr), _fixed(NULL))
    if _is_string(t) or (pa.types.is_dictionary(t) and _is_string(t.value_type)):
        return arr, [null]
    if pa.types.is_integer(t):
        return arr.cast(pa.string()), [null]
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.string()), [null]
    if pa.types.is_dictionary(t):
        return _to_string(arr.dictionary_decode())
    return _wrong_type(arr, "string", pa.string())


def _to_boolean(arr: pa.Array) -> tuple[pa.Array, list[_Problem]]:
    t = arr.type
    null: _Problem = (_nulls(arr), _fixed(NULL))
    if pa.types.is_boolean(t):
        return arr, [null]
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.bool_()), [null]
    if _is_string(t) or (pa.types.is_dictionary(t) and _is_string(t.value_type)):
        return _via_dictionary(arr, _parse_booleans)
    if pa.types.is_dictionary(t):
        return _to_boolean(arr.dictionary_decode())
    return _wrong_type(arr, "boolean", pa.bool_())


_CONVERT: dict[str, Callable[[pa.Array], tuple[pa.Array, list[_Problem]]]] = {
    "number": _to_number,
    "string": _to_string,
    "boolean": _to_boolean,
}


def _of_types(col: pa.Array, types: frozenset[str]) -> np.ndarray:
    """Rows whose event type is one of ``types`` (null types are not)."""
    value_set = pa.array(sorted(types), pa.string())
    if pa.types.is_dictionary(col.type):
        dictionary = col.dictionary
        if not _is_string(dictionary.type):
            dictionary = dictionary.cast(pa.string())
        per_value = _mask(pc.is_in(dictionary, value_set=value_set))
        indices = col.indices
        if len(per_value) == 0:
            return np.zeros(len(col), bool)
        out: np.ndarray = per_value[np.asarray(indices.fill_null(0)).astype(np.intp)]
        return out & ~_nulls(indices)
    if not _is_string(col.type):
        col = col.cast(pa.string())
    return _mask(pc.is_in(col, value_set=value_set))


# ------------------------------------------------------------------ text


def textual(arr: pa.Array | pa.ChunkedArray) -> str | None:
    """An example value if the string column ``arr`` holds text, not numbers; else None.

    Text: some non-blank value, none of which parses as a number, and not
    all of them null-like (:data:`NULL_LIKE`: a number column written with
    ``NA`` for its missing values is still a number column).  The checker
    then rejects a comparison of the column with a number as a query error;
    a column with some numbers is left to the data (its other values are bad rows).
    """
    t = arr.type.value_type if pa.types.is_dictionary(arr.type) else arr.type
    if not _is_string(t):  # before pc.unique, which has no kernel for lists, structs, maps
        return None
    values = pc.unique(arr)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    trimmed = pc.utf8_trim_whitespace(values.drop_null())
    trimmed = trimmed.filter(pc.not_equal(trimmed, ""))
    if len(trimmed) == 0:
        return None
    if _mask(pc.match_substring_regex(trimmed, _NUMBER_RE, ignore_case=True)).any():
        return None
    for value in trimmed.to_pylist():
        if value.lower() not in NULL_LIKE:
            return str(value)
    return None


# --------------------------------------------------------------------- main


def conform(
    batch: pa.RecordBatch,
    requirements: Mapping[str, Requirement],
    *,
    type_column: str | None = "type",
) -> tuple[pa.RecordBatch, list[tuple[int, str, str]]]:
    """Cast the required columns of ``batch`` to their kinds and list the bad rows.

    Returns the conformed batch (same rows, in the same order; columns that
    are not required are untouched; a missing column stays missing) and the
    problems ``(row_within_batch, column, reason)`` sorted by row, then by
    column (the type column first, then in the order of ``requirements``),
    one per (row, column).  A row is checked for an attribute only if its
    type is in the requirement's ``event_types`` (every row for ``None``);
    the type column is checked on every row: missing (``"missing
    attribute"``) or null (``"null value"``).  Rows of an unknown type are
    not bad: they simply match no event type of the query.  ``type_column``
    None: the query reads no type (its only event pattern is ``_``), so no row
    is checked for one.

    The work is whole-column kernels; Python only runs for rows that are bad
    (to word the reason) and per distinct value of dictionary columns.
    """
    n = batch.num_rows
    names = batch.schema.names
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        index.setdefault(name, i)  # a duplicated name: the first wins
    found: list[tuple[np.ndarray, int, str, _Reasons]] = []

    type_col: pa.Array | None = None
    if type_column is None:
        pass  # the query names no event type (only the wildcard `_`): no type is read
    elif type_column in index:
        type_col = batch.column(index[type_column])
        found.append((_nulls(type_col), -1, type_column, _fixed(NULL)))
    else:
        found.append((np.ones(n, bool), -1, type_column, _fixed(MISSING)))

    applies_cache: dict[frozenset[str], np.ndarray] = {}

    def rows_of(req: Requirement) -> np.ndarray:
        """The rows whose type reads the attribute (only needed when some row has a problem)."""
        if req.event_types is None:
            return np.ones(n, bool)
        if type_col is None:
            return np.zeros(n, bool)  # every row is already bad for its type
        applies = applies_cache.get(req.event_types)
        if applies is None:
            applies = applies_cache[req.event_types] = _of_types(type_col, req.event_types)
        return applies

    for order, (attr, req) in enumerate(requirements.items()):
        if attr not in index:
            found.append((rows_of(req), order, attr, _fixed(MISSING)))
            continue
        i = index[attr]
        arr = batch.column(i)
        out, problems = _CONVERT[req.kind](arr)
        for mask, reasons in problems:
            if mask.any():  # the usual case, no problem, costs no type lookup
                found.append((mask & rows_of(req), order, attr, reasons))
        if out is not arr:
            old = batch.schema.field(i)
            field = pa.field(old.name, out.type, nullable=True, metadata=old.metadata)
            batch = batch.set_column(i, field, out)

    entries: list[tuple[int, int, str, str]] = []
    for mask, order, column, reasons in found:
        rows = np.flatnonzero(mask)
        if len(rows):
            entries.extend(
                (row, order, column, reason)
                for row, reason in zip(rows.tolist(), reasons(rows), strict=True)
            )
    entries.sort(key=lambda e: (e[0], e[1]))
    result: list[tuple[int, str, str]] = []
    seen: set[tuple[int, str]] = set()
    for row, _, column, reason in entries:
        if (row, column) not in seen:  # e.g. the type column also required as an attribute
            seen.add((row, column))
            result.append((row, column, reason))
    return batch, result
