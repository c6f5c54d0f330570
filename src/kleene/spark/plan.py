"""Which plan runs a CEQL query on Spark (partitioned, ranges or single) and why.

Why each plan is exact: :mod:`kleene.spark.batch`'s docstring and ``docs/spark.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import types as T

from kleene.api import Query
from kleene.language import ast


@dataclass(frozen=True)
class Plan:
    """How a query is evaluated on Spark, and why (``reason`` is for humans and tests)."""

    mode: str  # "partitioned" | "ranges" | "single"
    reason: str


RANGES_EXACT_STRATEGIES = frozenset({"ALL", "ANY", "STRICT", "NEXT", "LAST", "MAX"})
"""The strategies the ranges plan is proved exact for (module docstring, fact (b)); a strategy
added to the language later goes to the single ordered task until its argument is written."""


def plan_for(query: Query, time_type: T.DataType | None, ranges: int) -> Plan:
    """Choose the evaluation plan; see :mod:`kleene.spark.batch` for why each is exact.

    Parallel ranges only where the argument holds: a window of a known kind, no CONSUME BY, a
    strategy of :data:`RANGES_EXACT_STRATEGIES`; everything else runs in one ordered task.
    """
    q = query.ast
    if query.partition_by:
        if q.consume == "ANY":
            return Plan("single", "CONSUME BY ANY discards runs across partitions")
        return Plan("partitioned", "one session per PARTITION BY key")
    if q.within is None:
        return Plan("single", "without a window a complex event may span the whole stream")
    if q.consume != "NONE":
        return Plan("single", "CONSUME BY makes an output depend on earlier outputs")
    if ranges < 2:
        return Plan("single", "one range requested")
    window = q.within
    if not isinstance(window, (ast.EventsWindow, ast.DurationWindow, ast.AttrWindow)):
        return Plan("single", f"no exactness argument for the window {window!r}")
    if isinstance(window, ast.DurationWindow) and not numeric_time(time_type):
        return Plan("single", "the time column is not numeric, a timestamp or a date")
    strategy = q.select.strategy
    if strategy not in RANGES_EXACT_STRATEGIES:
        return Plan("single", f"no exactness argument for the strategy {strategy}")
    return Plan("ranges", f"windowed, {strategy}, without CONSUME BY: parallel position ranges")


def numeric_time(time_type: T.DataType | None) -> bool:
    return isinstance(
        time_type,
        (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
         T.DecimalType, T.TimestampType, T.TimestampNTZType, T.DateType),
    )
