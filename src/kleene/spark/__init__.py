"""kleene on Spark: CEQL over DataFrames, in batch (:func:`detect`) and streaming (:func:`detect_stream`).

Importing this package imports PySpark and pandas, the optional extra
``kleene[spark]``; without them it raises
:class:`~kleene.language.errors.MissingDependencyError` saying what to
install.  The core engine (``import kleene``) never imports either.  See
``docs/spark.md``.
"""

from __future__ import annotations

from kleene.language.errors import MissingDependencyError

try:
    import pandas  # noqa: F401  (kleene.spark.stream's state processor works on DataFrames)
    import pyspark  # noqa: F401
except ImportError as exc:
    raise MissingDependencyError(
        f"kleene on Spark needs PySpark and pandas, the optional extra: pip install 'kleene[spark]' ({exc})",
        name=exc.name,
    ) from exc

from kleene.spark.batch import DEFAULT_QUERY_NAME, detect, output_schema, plan_for, query_name
from kleene.spark.session import active_session, ensure_importable, local_session
from kleene.spark.stream import detect_stream

__all__ = [
    "DEFAULT_QUERY_NAME",
    "active_session",
    "detect",
    "detect_stream",
    "ensure_importable",
    "local_session",
    "output_schema",
    "plan_for",
    "query_name",
]
