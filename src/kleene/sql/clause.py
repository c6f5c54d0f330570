"""Evaluate one MATCH_RECOGNIZE clause over an Arrow table: :func:`evaluate_clause`.

**The switch point.**  ``kleene sql`` and :mod:`kleene.spark.recognize` call
only this function to run a clause.  Today it calls the reference evaluator
(:func:`kleene.reference.match_recognize.match_recognize`: the standard's semantics
by backtracking, slow, exponential on some patterns and guarded by a step budget);
when the linear-time engine lands (issue 17, item 3) with the same signature and
output contract, the one call below is switched to it.

The result is cast to the static schema (:func:`~kleene.language.match_recognize.
types.output_schema`), so that its column types never depend on the values (an
all-NULL measure keeps its type; Spark declared the schema before any row).
"""

from __future__ import annotations

import pyarrow as pa

from kleene.language.errors import DataError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.types import output_schema
from kleene.reference.match_recognize import match_recognize as _evaluator

__all__ = ["evaluate_clause"]


def evaluate_clause(mr: ast.MatchRecognize, table: pa.Table) -> pa.Table:
    """The result of ``mr`` over ``table``, with the columns and types of ``output_schema``."""
    schema = output_schema(mr, table.schema)
    result = _evaluator(table, mr)  # the switch point: the engine's evaluate(mr, table) later
    try:
        return result.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise DataError(f"the MATCH_RECOGNIZE result does not fit its declared types "
                        f"{schema}: {err}") from None
