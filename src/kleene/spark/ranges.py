"""The parallel-ranges plan: every row copied into the later ranges within one window of it.

Each task then sees its range plus the window's overlap before it and emits only the
complex events that end in its own range (exact: :mod:`kleene.spark.batch`'s docstring).
"""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kleene.api import Query
from kleene.io.timecol import UNIT_NANOS
from kleene.language import ast
from kleene.spark.schema import POS, RANGE

__all__ = ["window_key", "with_overlap"]


def window_key(query: Query, time_type: T.DataType | None) -> Column | None:
    """The numeric value windows are measured in (None: positions, for EVENTS windows)."""
    window = query.ast.within
    if isinstance(window, ast.AttrWindow):
        return F.col(window.attr).cast("double")
    if isinstance(window, ast.DurationWindow):
        assert query.options.time_column is not None
        col = F.col(query.options.time_column)
        if isinstance(time_type, (T.TimestampType, T.TimestampNTZType)):
            return F.unix_micros(col.cast("timestamp")).cast("double")
        if isinstance(time_type, T.DateType):
            return (F.unix_date(col) * F.lit(86_400_000_000)).cast("double")
        return col.cast("double")
    return None


def _window_amount(query: Query, time_type: T.DataType | None, time_unit: str) -> float:
    """The window length in the units of :func:`window_key` (positions for EVENTS)."""
    window = query.ast.within
    if isinstance(window, ast.EventsWindow):
        return float(window.count)
    if isinstance(window, ast.AttrWindow):
        return float(window.amount)
    assert isinstance(window, ast.DurationWindow)
    if isinstance(time_type, (T.TimestampType, T.TimestampNTZType, T.DateType)):
        return window.nanos / 1_000
    return window.nanos / UNIT_NANOS[time_unit]


def with_overlap(
    positioned: DataFrame,
    query: Query,
    time_type: T.DataType | None,
    time_unit: str,
    starts: list[tuple[int, float]],
) -> DataFrame:
    """Copy every row into the later ranges whose start lies within one window of it.

    A row of range ``r`` with window key ``w`` belongs to ranges
    ``r .. last`` where ``last`` is the last range whose start key is at most
    ``w + window``.  The comparison has a little slack: extra history is
    harmless (a task only emits what ends in its own range), missing history
    would not be.
    """
    wkey = window_key(query, time_type)
    w = F.col(POS).cast("double") if wkey is None else wkey
    amount = _window_amount(query, time_type, time_unit)
    slack = 1.0 + abs(amount) * 1e-9
    limit = w + F.lit(amount + slack)
    # The number of range starts at or below the limit, minus one.  A sum of
    # comparisons (compiled by Spark's code generation) rather than a filter
    # with a lambda over an array, which Spark interprets row by row.
    last: Column = F.lit(-1).cast("long")
    for _, start in starts:
        if math.isfinite(start):
            last = last + F.when(F.lit(start) <= limit, 1).otherwise(0)
    copies = F.sequence(F.col(RANGE), F.greatest(F.col(RANGE), last))
    exploded = positioned.withColumn(RANGE, F.explode(copies))
    n = len(starts)
    target = _hash_to(exploded.sparkSession, n)
    spread = exploded.repartition(n, F.element_at(target, (F.col(RANGE) + 1).cast("int")))
    return spread.sortWithinPartitions(RANGE, POS)


def _hash_to(spark: Any, n: int) -> Column:
    """An array whose element ``r`` is a long that ``repartition(n, ...)`` sends to partition ``r``.

    Hash partitioning puts a value in ``pmod(hash(value), n)``; ``F.hash`` is
    that same Murmur3 hash, so a tiny job (no input read) finds one value per
    partition.  One range per task then, without ``repartitionByRange``,
    which would sample the exploded rows in a job of its own.  Only balance
    depends on this: the evaluator handles several ranges in one task too.
    """
    found: dict[int, int] = {}
    size = 32 * n
    while len(found) < n and size <= 1 << 24:
        rows = (
            spark.range(size)
            .select(F.pmod(F.hash("id"), F.lit(n)).alias("p"), F.col("id"))
            .groupBy("p")
            .agg(F.min("id").alias("v"))
            .collect()
        )
        found = {int(r["p"]): int(r["v"]) for r in rows}
        size *= 8
    return F.array(*[F.lit(found.get(r, r)).cast("long") for r in range(n)])
