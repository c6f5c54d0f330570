"""Runtime values: an expression's value over a batch (:class:`Vec`), read from Arrow columns.

Every stage after this one works on :class:`Vec`: a column converted once to
one representation per runtime kind (int64, float64, Arrow strings, numpy
bools, or undefined), with a validity mask that is ``None`` in the common
all-valid case.  Keeping the conversion and the mask helpers here lets the
arithmetic, the comparisons and the compiled nodes share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa

import kleene.kernels as pc

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# Runtime kinds: 'int' (int64 array, or an object array of Python ints once a
# result leaves int64), 'float' (float64, NaN always marked invalid), 'str'
# (a pyarrow string array), 'bool' (numpy bool) and 'null' (undefined on
# every row: missing column, unsupported type, a constant 1/0 ...).
RKind = Literal["int", "float", "str", "bool", "null"]
NUMS = ("int", "float")


def dict_parts(arr: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
    """(distinct values, per-row index into them, row validity) of a string array.

    Dictionary-encoded input is used as is; plain strings are encoded here, so
    that per-value work (a regex, a set lookup) runs once per distinct value
    and is broadcast back with a numpy ``take``.
    """
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    indices = arr.indices
    valid = _arrow_valid(indices)
    if valid is not None:
        indices = indices.fill_null(0)
    idx = np.asarray(indices).astype(np.intp, copy=False)
    dictionary = arr.dictionary
    if dictionary.null_count:  # a dictionary may itself hold nulls
        valid = and_valid(valid, np.asarray(dictionary.is_valid())[idx])
    return dictionary, idx, valid


@dataclass(slots=True)
class Vec:
    """An expression's value on every row of a batch, or one constant value.

    ``valid`` is None when every row is valid — the common case, which lets
    the hot path skip all mask arithmetic.
    """

    kind: RKind
    data: Any
    valid: np.ndarray | None = None
    scalar: bool = False
    parts: tuple[pa.Array, np.ndarray, np.ndarray | None] | None = None
    """Cached :func:`dict_parts` of a string column, shared by LIKE/IN/==."""
    shared: bool = False
    """A column several predicates read: comparisons go through its distinct values."""

    def dict_parts(self) -> tuple[pa.Array, np.ndarray, np.ndarray | None]:
        if self.parts is None:
            self.parts = dict_parts(self.data)
        return self.parts

    def is_object(self) -> bool:
        """An int column holding Python ints beyond int64 (the exact slow path)."""
        return not self.scalar and self.kind == "int" and self.data.dtype == object


NULL_SCALAR = Vec("null", None, None, True)


def null(n: int) -> Vec:
    return Vec("null", None, np.zeros(n, bool))


def and_valid(*masks: np.ndarray | None) -> np.ndarray | None:
    out: np.ndarray | None = None
    for m in masks:
        if m is not None:
            out = m if out is None else out & m
    return out


def invalidate(valid: np.ndarray | None, bad: np.ndarray) -> np.ndarray | None:
    if not bad.any():
        return valid
    return ~bad if valid is None else valid & ~bad


def row_valid(v: Vec) -> np.ndarray | None:
    return None if v.scalar else v.valid


def scalar(value: object) -> Vec:
    if isinstance(value, bool):
        return Vec("bool", value, None, True)
    if isinstance(value, int):
        return Vec("int", value, None, True)
    if isinstance(value, float):
        return NULL_SCALAR if value != value else Vec("float", value, None, True)
    if isinstance(value, str):
        return Vec("str", value, None, True)
    return NULL_SCALAR


def _arrow_valid(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return np.asarray(arr.is_valid())


def read_column(arr: pa.Array | pa.ChunkedArray) -> Vec:
    """Convert a batch column to the runtime representation of its kind."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_dictionary(t):
        if pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type):
            parts = dict_parts(arr)
            return Vec("str", arr, parts[2], parts=parts)
        return read_column(arr.dictionary_decode())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return Vec("str", arr, _arrow_valid(arr))
    if pa.types.is_string_view(t):
        return Vec("str", arr.cast(pa.large_string()), _arrow_valid(arr))
    if pa.types.is_boolean(t):
        valid = _arrow_valid(arr)
        return Vec("bool", np.asarray(arr.fill_null(False) if valid is not None else arr), valid)
    kind: RKind
    if pa.types.is_integer(t) or pa.types.is_temporal(t):
        kind = "int"
        try:
            if not pa.types.is_int64(t):
                arr = arr.cast(pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            if not pa.types.is_uint64(t):
                return null(len(arr))
            valid = _arrow_valid(arr)  # uint64 beyond int64: exact Python ints
            data = np.array(arr.fill_null(0).to_pylist(), dtype=object)
            return Vec("int", data, valid)
    elif pa.types.is_floating(t) or pa.types.is_decimal(t):
        kind = "float"
        try:
            if not pa.types.is_float64(t):
                arr = arr.cast(pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return null(len(arr))
    else:
        return null(len(arr))
    valid = _arrow_valid(arr)
    data = np.asarray(arr.fill_null(0) if valid is not None else arr)
    if kind == "float":
        valid = invalidate(valid, np.isnan(data))
    return Vec(kind, data, valid)


def fits(value: int) -> bool:
    return INT64_MIN <= value <= INT64_MAX


def is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))
