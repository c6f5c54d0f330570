"""Values as strict JSON text: the value rules every JSON kleene writes follows.

Event attributes come out of Arrow and numpy as values that :mod:`json` does
not know (datetimes, numpy scalars, bytes, Decimals) or would write as invalid
JSON (``NaN``, ``Infinity``).  Every line kleene writes must parse with any
JSON reader, so values are converted here: datetimes and dates to ISO-8601
strings, NaN and infinities to ``null``, bytes to base64, numpy scalars and
arrays to Python numbers and lists, Decimals to strings (no precision lost).

The common case (plain Python values) is serialised by a single
``json.dumps`` call; only values that fail it take the slower, converting path.
The writers (:mod:`kleene.io.writers`), the bulk layout (:mod:`kleene.io.jsonl_bulk`) and the
quarantine file (:mod:`kleene.io.badrows`) all render through :func:`dumps`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import numpy as np


def _default(value: Any) -> Any:
    """``json.dumps`` hook for types it does not know (NaN is handled elsewhere)."""
    if isinstance(value, dt.datetime):
        if value != value:  # pandas.NaT is a datetime that is not equal to itself
            return None
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (bytes, bytearray, memoryview)):
        import base64  # only for bytes values (start-up time of every run)

        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


def jsonable(value: Any) -> Any:
    """Return ``value`` converted (recursively) to plain JSON types.

    Non-finite floats become ``None``; mapping keys become strings.  Used on
    the slow path, and by the quarantine file, whose ``values`` come straight
    from input rows and may contain anything.
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return jsonable(_default(value))


def dumps(obj: Any, *, ensure_ascii: bool = False) -> str:
    """Serialise ``obj`` as strict JSON (no NaN), converting exotic values."""
    try:
        return json.dumps(obj, default=_default, allow_nan=False, ensure_ascii=ensure_ascii)
    except (ValueError, TypeError):
        # NaN/Infinity somewhere, or a non-string key, or a circular/odd value:
        # convert everything explicitly and try again.
        return json.dumps(jsonable(obj), allow_nan=False, ensure_ascii=ensure_ascii)


def dumps_line(obj: Any, *, ensure_ascii: bool = False) -> str:
    """:func:`dumps` plus the newline of JSON Lines."""
    return dumps(obj, ensure_ascii=ensure_ascii) + "\n"
