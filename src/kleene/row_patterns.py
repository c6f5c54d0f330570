"""``kleene.match_recognize``: SQL's MATCH_RECOGNIZE over in-process data.

Loaded lazily by ``kleene.__getattr__`` so that ``import kleene`` stays light.  The
source is read with kleene's readers (:func:`kleene.io.sources.to_batches`: a file
path, Arrow tables and readers, anything with ``__arrow_c_stream__`` such as polars
and DuckDB results, pandas); a list of dicts becomes a table as the reference
evaluator builds it, so that both give the same types.  The clause runs on the
linear-time engine (:func:`kleene.runtime.match_recognize.evaluate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from kleene.frames import to_pandas, to_polars
from kleene.io.sources import to_batches
from kleene.language.errors import KleeneError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.parser import parse
from kleene.runtime.match_recognize import evaluate

__all__ = ["OUTPUTS", "match_recognize", "to_table"]

OUTPUTS = ("arrow", "pandas", "polars")


def to_table(source: Any) -> pa.Table:
    """``source`` as one Arrow table (see the module docstring for what it may be)."""
    if isinstance(source, pa.Table):
        return source
    if isinstance(source, list) and all(isinstance(r, Mapping) for r in source):
        return pa.Table.from_pylist(source)
    batches = list(to_batches(source))
    if not batches:
        raise KleeneError(f"no rows and no columns in the {type(source).__name__} given: "
                          "MATCH_RECOGNIZE needs a table")
    return pa.Table.from_batches(batches)


def match_recognize(source: Any, query: str | ast.MatchRecognize, *,
                    output: str = "arrow") -> Any:
    """Run one MATCH_RECOGNIZE clause (its body, or the whole ``MATCH_RECOGNIZE (...)``)
    over ``source``; return an Arrow table, or a pandas/polars DataFrame (``output``).

    Raises :class:`~kleene.QueryError` (line, column, caret) for a bad clause or a column
    the input lacks, :class:`~kleene.DataError` naming the input row for bad data (an
    AFTER MATCH SKIP TO a variable absent from a match, ``1 + 'x'``).
    """
    if output not in OUTPUTS:
        raise KleeneError(f"output={output!r}: choose one of {', '.join(OUTPUTS)}")
    mr = parse(query) if isinstance(query, str) else query
    result = evaluate(mr, to_table(source))
    if output == "pandas":
        return to_pandas(result)
    if output == "polars":
        return to_polars(result)
    return result
