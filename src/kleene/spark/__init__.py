"""kleene on Spark: CEQL over DataFrames, in batch (:func:`detect`) and streaming (:func:`detect_stream`).

Importing this package imports PySpark; the core engine (``import kleene``)
never does.  See ``docs/spark.md``.
"""

from __future__ import annotations

from typing import Any

from kleene.spark.batch import detect, output_schema, plan_for
from kleene.spark.session import ensure_importable, local_session

try:  # the streaming half lands separately; batch must work without it
    from kleene.spark.stream import detect_stream
except ImportError as _exc:  # pragma: no cover - only until stream.py exists
    _stream_error = _exc

    def detect_stream(*args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
        """Placeholder until :mod:`kleene.spark.stream` is available."""
        raise ImportError(f"kleene.spark.stream is not available: {_stream_error}")


__all__ = ["detect", "detect_stream", "ensure_importable", "local_session", "output_schema", "plan_for"]
