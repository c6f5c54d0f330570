"""kleene on Spark: CEQL over DataFrames, in batch (:func:`detect`) and streaming (:func:`detect_stream`).

MATCH_RECOGNIZE in batch: :func:`match_recognize` (a clause over a DataFrame) and
:func:`sql` (a statement whose clauses run on kleene, the rest on Spark SQL), in
:mod:`kleene.spark.recognize`; in Structured Streaming: :func:`match_recognize_stream`
and :func:`start_match_recognize_stream`, in :mod:`kleene.spark.recognize_stream`.

Importing this package imports PySpark (and finds pandas), the optional extra
``kleene[spark]``; without them it raises
:class:`~kleene.language.errors.MissingDependencyError` saying what to
install.  The core engine (``import kleene``) never imports either.  See
``docs/spark.md``.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from kleene.language.errors import MissingDependencyError

try:
    import pyspark  # noqa: F401
except ImportError as exc:
    raise MissingDependencyError(
        f"kleene on Spark needs PySpark and pandas, the optional extra: pip install 'kleene[spark]' ({exc})",
        name=exc.name,
    ) from exc
try:
    _pandas_found = find_spec("pandas") is not None
except (ImportError, ValueError):  # a finder that refuses it, or a module without a spec
    _pandas_found = False
if not _pandas_found:
    # Looked up, not imported: the Python workers import this package to run the batch
    # evaluator, which needs no pandas, and importing it costs each worker about a second.
    raise MissingDependencyError(
        "kleene on Spark needs PySpark and pandas, the optional extra: pip install 'kleene[spark]' "
        "(No module named 'pandas')",
        name="pandas",
    )

from kleene.spark.batch import detect
from kleene.spark.plan import plan_for
from kleene.spark.schema import DEFAULT_QUERY_NAME, output_schema, query_name
from kleene.spark.session import active_session, ensure_importable, local_session, stop_session


def __getattr__(name: str) -> Any:
    """``detect_stream`` is imported on first use: the streaming module imports pandas;
    ``match_recognize`` and ``sql`` (MATCH_RECOGNIZE) load its parser only when used."""
    if name == "detect_stream":
        from kleene.spark.stream import detect_stream

        return detect_stream
    if name in ("match_recognize_stream", "start_match_recognize_stream"):
        from kleene.spark import recognize_stream

        return getattr(recognize_stream, name)
    if name in ("match_recognize", "sql"):
        from kleene.spark import recognize as module

        return getattr(module, name)
    raise AttributeError(f"module 'kleene.spark' has no attribute {name!r}")


__all__ = [
    "DEFAULT_QUERY_NAME",
    "active_session",
    "detect",
    "detect_stream",
    "ensure_importable",
    "local_session",
    "match_recognize",
    "match_recognize_stream",
    "output_schema",
    "plan_for",
    "query_name",
    "sql",
    "start_match_recognize_stream",
    "stop_session",
]
