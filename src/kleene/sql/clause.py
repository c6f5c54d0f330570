"""Evaluate one MATCH_RECOGNIZE clause over an Arrow table: :func:`evaluate_clause`.

``kleene sql`` and :mod:`kleene.spark.recognize` call only this function to run
a clause: the linear-time engine (:func:`kleene.runtime.match_recognize.evaluate`,
the same engine as :func:`kleene.match_recognize`), never the backtracking
reference evaluator, which is the tests' oracle.

The result is cast to the static schema (:func:`~kleene.language.match_recognize.
types.output_schema`), so that its column types never depend on the values (an
all-NULL measure keeps its type; Spark declared the schema before any row).
"""

from __future__ import annotations

import pyarrow as pa

from kleene.language.errors import DataError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.types import output_schema
from kleene.runtime.match_recognize import evaluate

__all__ = ["evaluate_clause"]


def evaluate_clause(mr: ast.MatchRecognize, table: pa.Table) -> pa.Table:
    """The result of ``mr`` over ``table``, with the columns and types of ``output_schema``."""
    schema = output_schema(mr, table.schema)
    result = evaluate(mr, table)
    try:
        return result.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise DataError(f"the MATCH_RECOGNIZE result does not fit its declared types "
                        f"{schema}: {err}") from None
