"""Positions of the rows of a Spark DataFrame: 0-based ranks in ``(time, row id)`` order.

Two routes: :func:`input_order_positions` reads them off the row ids when the input is
already in time order (one cheap job); :func:`ranked_positions` samples bounds, counts
the rows per bucket and ranks them inside it (the general route).  The buckets are also
the ranges of the parallel-ranges plan (:mod:`kleene.spark.ranges`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kleene.api import Query
from kleene.language import ast
from kleene.spark.plan import Plan
from kleene.spark.ranges import window_key
from kleene.spark.schema import PART, POS, RANGE, RID

__all__ = ["RID_BITS", "InOrder", "bucket_expr", "input_order_positions", "position_ranges",
           "ranked_positions"]


def ranked_positions(
    df: DataFrame,
    time_column: str | None,
    order_cols: list[str],
    k: int,
    query: Query,
    time_type: T.DataType | None,
    plan: Plan,
) -> tuple[DataFrame, list[tuple[int, float]] | None]:
    """Add the position column (and the range id); return per-range (first position, start key).

    The order keys are cut into ``k`` buckets by bounds sampled once on the
    driver and then fixed as literals, so the bucket of a row is a pure
    function of its keys: the per-bucket counts (collected, ``k`` rows) and
    the positions computed by the next job agree.  (Spark's own
    ``repartitionByRange`` samples again in every job, and after a shuffle
    the samples differ, so its partitions cannot be counted in one job and
    numbered in another.)  Position = rows in earlier buckets + rank in the
    bucket.  Bucket ``r`` is also range ``r`` of the parallel-ranges plan.
    """
    if not order_cols:
        # Before any shuffle: the id then follows the input's partition order.
        df = df.withColumn(RID, F.monotonically_increasing_id())
        order_cols = [RID]
    keys = ([time_column] if time_column else []) + order_cols
    bucket = bucket_expr(keys, _sample_bounds(df, keys, k))
    with_bucket = df.withColumn(PART, bucket)
    wkey = window_key(query, time_type) if plan.mode == "ranges" else None
    aggs = [F.count(F.lit(1)).alias("n")]
    if wkey is not None:
        aggs.append(F.min(wkey).alias("w"))
    stats = {int(r["p"]): r for r in with_bucket.groupBy(F.col(PART).alias("p")).agg(*aggs).collect()}
    nparts = max(stats, default=-1) + 1
    offsets: list[int] = []
    total = 0
    for p in range(nparts):
        offsets.append(total)
        total += int(stats[p]["n"]) if p in stats else 0
    offset_of = F.array(*[F.lit(o).cast("long") for o in offsets]) if offsets else F.array(F.lit(0))
    rank = F.row_number().over(
        Window.partitionBy(PART).orderBy(*[F.col(c).asc_nulls_first() for c in keys])
    )
    # One Spark partition per bucket, by explicit number: the window's shuffle
    # would otherwise be coalesced by adaptive execution into a single task.
    positioned = with_bucket.repartitionByRange(k, F.col(PART)).withColumn(
        POS, F.element_at(offset_of, (F.col(PART) + 1).cast("int")) + rank.cast("long") - 1
    )
    positioned = positioned.drop(RID)  # (only ordered the window; no need to shuffle it)
    if plan.mode != "ranges":
        return positioned.drop(PART), None
    # Range start keys; an empty range takes the next range's start (so the
    # sequence stays sorted), and the last ones +inf.
    starts: list[tuple[int, float]] = []
    nxt = math.inf
    for p in reversed(range(nparts)):
        if p in stats:
            nxt = float(stats[p]["w"]) if wkey is not None else float(offsets[p])
        starts.append((offsets[p], nxt))
    starts.reverse()
    return positioned.withColumnRenamed(PART, RANGE), starts


RID_BITS = 33
"""``monotonically_increasing_id()`` is the partition index times 2**33 plus the row's index in it."""


@dataclass(frozen=True)
class InOrder:
    """Input already in time order: positions from the row ids, and where runs start.

    ``run_starts`` holds (position, time) at the start of every run the
    order check saw (a run per Arrow batch at least, so every few thousand
    rows), in position order; ``time`` is in the units of
    :func:`window_key` (0 without a time column).  They are the possible
    starts of parallel ranges whose start time is known without another job.
    """

    positioned: DataFrame
    run_starts: list[tuple[int, float]]
    total: int


def input_order_positions(
    df: DataFrame, time_column: str | None, time_type: T.DataType | None
) -> InOrder | None:
    """Positions without sorting, when the input is already in time order (else None).

    Event logs usually arrive in time order.  The row id then *is* the order
    ``(time, row id)``: one cheap job reads the row ids and the time column
    and reports runs of consecutive row ids with their first and last time
    and whether the times never decrease inside the run.  If the runs tile
    every input partition and the times never decrease from one run to the
    next in row-id order (ties are fine: the row id orders them the same
    way), a row's position is the rows of earlier partitions plus its index
    in its own, both read off its row id.  This saves the sample and the
    global sort, the two costliest jobs, and gives exactly the positions of
    :func:`ranked_positions`.  Without a time column the input order is the order.
    """
    with_id = df.withColumn(RID, F.monotonically_increasing_id())
    part = F.shiftright(F.col(RID), RID_BITS)
    index = F.col(RID).bitwiseAND(F.lit((1 << RID_BITS) - 1))
    time: Column = F.lit(0).cast("long")
    kind = "long"  # integral times are compared exactly, not as doubles
    if time_column is not None:
        if isinstance(time_type, (T.TimestampType, T.TimestampNTZType)):
            time = F.unix_micros(F.col(time_column).cast("timestamp"))
        elif isinstance(time_type, T.DateType):
            # microseconds, as the window key of a duration window
            time = F.unix_date(F.col(time_column)).cast("long") * F.lit(86_400_000_000)
        elif isinstance(time_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            time = F.col(time_column).cast("long")
        elif isinstance(time_type, (T.FloatType, T.DoubleType)):
            time, kind = F.col(time_column).cast("double"), "double"
        else:
            return None
    runs = (
        with_id.select(part.alias("p"), index.alias("i"), time.alias("t"))
        .mapInArrow(
            _ordered_runs,
            f"p long, i long, last_i long, ordered boolean, first {kind}, last {kind}",
        )
        .collect()
    )
    counts: dict[int, int] = {}
    previous: Any = None
    ordered = sorted(runs, key=lambda r: (r["p"], r["i"]))
    for r in ordered:
        if not r["ordered"] or r["i"] != counts.get(r["p"], 0):
            return None  # times decrease, or the runs do not tile the partition
        if previous is not None and r["first"] < previous:
            return None
        previous = r["last"]
        counts[r["p"]] = r["last_i"] + 1
    offsets = [0] * (max(counts, default=0) + 1)
    total = 0
    for p in sorted(counts):
        offsets[p] = total
        total += counts[p]
    offset_of = F.array(*[F.lit(o).cast("long") for o in offsets])
    positioned = with_id.withColumn(POS, F.element_at(offset_of, (part + 1).cast("int")) + index).drop(RID)
    starts = [(offsets[r["p"]] + r["i"], float(r["first"])) for r in ordered]
    return InOrder(positioned, starts, total)


def position_ranges(in_order: InOrder, k: int, query: Query) -> list[tuple[int, float]]:
    """Up to ``k`` ranges of about equal size, cut where a run starts: (first position, start key).

    The start key is what :func:`with_overlap` compares windows with: the
    position for an EVENTS window, the time of the range's first row for a
    duration window (known exactly, since a run's first time is).
    """
    by_time = isinstance(query.ast.within, ast.DurationWindow)
    runs = in_order.run_starts
    if not runs:
        return [(0, 0.0)]
    firsts = [p for p, _ in runs]
    chosen = [0]
    for j in range(1, k):
        c = bisect.bisect_left(firsts, j * in_order.total // k)
        if c < len(runs) and c > chosen[-1]:
            chosen.append(c)
    return [(runs[c][0], runs[c][1] if by_time else float(runs[c][0])) for c in chosen]


def _ordered_runs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Runs of consecutive row ids (same partition, index + 1 each row) in the rows given.

    Per run: partition, first and last index, whether its times never
    decrease (and are never null), first and last time.
    """
    for batch in batches:
        if not batch.num_rows:
            continue
        p = batch.column(0).to_numpy()
        i = batch.column(1).to_numpy()
        t = batch.column(2)
        valid = np.ones(len(p), dtype=bool) if not t.null_count else ~np.asarray(t.is_null())
        times = t.fill_null(0).to_numpy(zero_copy_only=False) if t.null_count else t.to_numpy()
        cut = np.flatnonzero((p[1:] != p[:-1]) | (i[1:] != i[:-1] + 1)) + 1
        starts = np.concatenate(([0], cut))
        ends = np.concatenate((cut, [len(p)])) - 1
        steps_ok = np.concatenate(([True], times[1:] >= times[:-1]))
        steps_ok &= valid
        # ordered per run: every step inside the run is non-decreasing (the
        # run's first row is compared with nothing before it)
        steps_ok[starts] = valid[starts]
        bad = np.cumsum(~steps_ok)
        bad_before = np.concatenate(([0], bad))[starts]
        ordered = bad[ends] - bad_before == 0
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(p[starts]),
                pa.array(i[starts]),
                pa.array(i[ends]),
                pa.array(ordered),
                pa.array(times[starts]),
                pa.array(times[ends]),
            ],
            names=["p", "i", "last_i", "ordered", "first", "last"],
        )


def _sample_bounds(df: DataFrame, keys: list[str], k: int) -> list[tuple[Any, ...]]:
    """``k - 1`` increasing bounds on the order keys, from a sample (one small job).

    Only balance depends on the sample; correctness does not (any bounds give
    a consistent numbering).
    """
    if k < 2:
        return []
    sample = [tuple(r) for r in df.select(*keys).sample(fraction=_fraction(df, k), seed=17).collect()]
    sample = sorted((r for r in sample if r[0] is not None), key=_nulls_first)
    if not sample:
        return []
    bounds: list[tuple[Any, ...]] = []
    for i in range(1, k):
        b = sample[min(len(sample) - 1, i * len(sample) // k)]
        if not bounds or _nulls_first(b) > _nulls_first(bounds[-1]):
            bounds.append(b)
    return bounds


def _nulls_first(row: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is not None, v) for v in row)


def _fraction(df: DataFrame, k: int) -> float:
    n = df.count()
    return 1.0 if n == 0 else min(1.0, 200.0 * k / n)


def bucket_expr(keys: list[str], bounds: list[tuple[Any, ...]]) -> Column:
    """The number of bounds at or below the row's keys (lexicographic, nulls first)."""
    if not bounds:
        return F.lit(0).cast("long")
    total: Column = F.lit(0).cast("long")
    for b in bounds:
        total = total + F.when(_at_or_above(keys, b), 1).otherwise(0)
    return total


def _at_or_above(keys: list[str], bound: tuple[Any, ...]) -> Column:
    """keys >= bound, lexicographically; a null key is below every bound."""
    cond: Column = F.lit(True)
    for name, value in reversed(list(zip(keys, bound))):
        col = F.col(name)
        if value is None:
            cond = col.isNotNull() | cond
        else:
            cond = (col > F.lit(value)) | ((col == F.lit(value)) & cond)
    return F.coalesce(cond, F.lit(False))
