"""CEQL over a Spark DataFrame, in batch: :func:`detect`.

The engine (:mod:`kleene.session`) is a sequential evaluator: it needs the events
of a stream in order, with positions.  Spark gives us neither order nor row
numbers, so the pipeline is:

1. **Positions.**  Rows are ordered by ``(time_column, row id)``; the row id
   is ``order_by`` if given, else ``monotonically_increasing_id()`` taken
   *before* any shuffle, so ties keep the input's partition order (for a file
   read: file order).  K - 1 bounds on those keys are sampled once and fixed
   as literals, which cuts the rows into K buckets (a pure function of each
   row); the rows per bucket (K numbers) are collected to the driver, and the
   position is ``rows in earlier buckets + row_number() in the bucket``.  No
   event data reaches the driver.
2. **Evaluation**, in one of three plans (see :func:`plan_for`):

   * ``partitioned`` (PARTITION BY, no ``CONSUME BY ANY``): repartition by the
     key, sort within partitions by position, and feed the task's rows, in
     Arrow batches, to one engine :class:`~kleene.session.Session`, which keeps
     one state per key itself (and releases keys whose runs left the
     window).  Exact, because a key's complex events depend only on its own
     substream, which the task sees whole and in order (positions stay
     global).  One session per key, dropped when the key changes in a
     (key, position) sort, was measured first: the engine's fixed cost per
     ``feed`` (about 1 ms: conforming, predicate set-up) made it 4x slower
     with 1,000 keys, since batches were cut at every key change.
   * ``ranges`` (no PARTITION BY, a window that bounds a match's span in
     positions, no CONSUME BY): the ordered stream is cut into the K position
     ranges of step 1 (the buckets).  Every row is also copied into each later
     range whose start is within one window of it, so each task sees its range
     plus the window-length overlap before it; a task emits only the complex
     events that *end* inside its own range.  Proved exact, for every pattern
     and strategy, by two facts (the argument in full: ``docs/spark.md``,
     "When the ranges plan is exact"):

     (a) *span*: a complex event ending at ``j`` only contains events in
         ``[reach(j), j]``, and the task's rows are exactly a contiguous
         stretch of the stream from at most ``reach(first own row)`` to the
         end of its range.  For ``n EVENTS`` ``reach(j) = j - n``; for a
         duration window the times never decrease along positions, so
         ``reach(j)`` is the first row with ``time >= time(j) - d``; for
         ``n [attr]`` the engine refuses an attribute that goes down
         (DataError, "goes backwards"), so on every input it accepts the
         attribute never decreases along positions either, and a decrease
         is seen by the task of the range it enters (the row before it is in
         that task's overlap).
     (b) *local decision*: whether a match ending at ``j`` is output depends
         only on the matches ending at ``j`` and the events inside its span:
         ALL/ANY keep it; STRICT tests the events between its start and end;
         NEXT, LAST and MAX compare matches with the same end *after* WITHIN
         (docs/cel-semantics.md, "Order of the clauses"), all inside the
         window; UNLESS looks for the negated pattern inside the span; AND
         and ALL are products over the match's own positions; a register
         holds an event of its own match; ``LIMIT`` counts per end event.
         CONSUME BY breaks (b): an output discards runs that started long
         before, so it goes to ``single``.
   * ``single``: everything else (no window, or CONSUME BY ANY/PARTITION
     where one output discards runs elsewhere, or a time column Spark cannot
     compare numerically): one task reads the whole stream in position order.

Bad rows follow the engine's default policy, ``error``: a row the query
cannot evaluate raises :class:`~kleene.language.errors.DataError` inside the
task, which fails the job with a message naming the row's position and
column.

Size: the driver's planning (positions, ranges, overlaps) and the executors' evaluator
are one protocol: the overlap the driver adds is what the evaluator trims, so they change together.
"""

from __future__ import annotations

import bisect
import math
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

import kleene
from kleene.api import Query
from kleene.io.timecol import UNIT_NANOS
from kleene.language import ast
from kleene.language.checks import check
from kleene.language.errors import KleeneError
from kleene.language.parser import parse
from kleene.language.schema import Schema
from kleene.options import InputOptions

PREFIX = "__kleene_"
RID = PREFIX + "rid"
PART = PREFIX + "part"
POS = PREFIX + "pos"
RANGE = PREFIX + "range"
WKEY = PREFIX + "wkey"

DEFAULT_QUERY_NAME = "q1"
"""The ``query`` column of an unnamed query: the name :func:`kleene.compile_many` gives it too."""

OUTPUT_FIELDS = ("query", "partition", "start", "end", "start_time", "end_time", "positions", "events")


# ------------------------------------------------------------------ schemas
def output_schema(
    input_schema: T.StructType,
    *,
    partition_by: Sequence[str] = (),
    time_column: str | None = None,
) -> T.StructType:
    """The schema of :func:`detect`'s result, derived from the input's.

    ``partition`` is a struct of the PARTITION BY attributes with their input
    types (a string column that is always null without PARTITION BY, so the
    result can be written to Parquet, which has no void type);
    ``start_time``/``end_time`` have the time column's type (long, null,
    without one); ``events`` is an array of structs with every input column.
    """
    by_name = {f.name: f for f in input_schema.fields}
    partition_type: T.DataType
    if partition_by:
        names = list(dict.fromkeys(partition_by))
        partition_type = T.StructType([T.StructField(a, by_name[a].dataType, True) for a in names])
    else:
        partition_type = T.StringType()
    time_type = by_name[time_column].dataType if time_column else T.LongType()
    event_type = T.StructType([T.StructField(f.name, f.dataType, True) for f in input_schema.fields])
    return T.StructType(
        [
            T.StructField("query", T.StringType(), True),
            T.StructField("partition", partition_type, True),
            T.StructField("start", T.LongType(), True),
            T.StructField("end", T.LongType(), True),
            T.StructField("start_time", time_type, True),
            T.StructField("end_time", time_type, True),
            T.StructField("positions", T.ArrayType(T.LongType(), True), True),
            T.StructField("events", T.ArrayType(event_type, True), True),
        ]
    )


def query_name(text: str, given: str | None = None) -> str:
    """The name in the result's ``query`` column: ``given``, else the text's ``QUERY name:`` header,
    else :data:`DEFAULT_QUERY_NAME` (never the text: a comment above the query is not a name)."""
    if given is not None:
        return given
    names = parse(text).names
    header = names[0] if names else None
    return header if header is not None else DEFAULT_QUERY_NAME


# --------------------------------------------------------------------- plan
@dataclass(frozen=True)
class Plan:
    """How a query is evaluated on Spark, and why (``reason`` is for humans and tests)."""

    mode: str  # "partitioned" | "ranges" | "single"
    reason: str


RANGES_EXACT_STRATEGIES = frozenset({"ALL", "ANY", "STRICT", "NEXT", "LAST", "MAX"})
"""The strategies the ranges plan is proved exact for (module docstring, fact (b)); a strategy
added to the language later goes to the single ordered task until its argument is written."""


def plan_for(query: Query, time_type: T.DataType | None, ranges: int) -> Plan:
    """Choose the evaluation plan; see the module docstring for why each is exact.

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
    if isinstance(window, ast.DurationWindow) and not _numeric_time(time_type):
        return Plan("single", "the time column is not numeric, a timestamp or a date")
    strategy = q.select.strategy
    if strategy not in RANGES_EXACT_STRATEGIES:
        return Plan("single", f"no exactness argument for the strategy {strategy}")
    return Plan("ranges", f"windowed, {strategy}, without CONSUME BY: parallel position ranges")


def _numeric_time(time_type: T.DataType | None) -> bool:
    return isinstance(
        time_type,
        (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
         T.DecimalType, T.TimestampType, T.TimestampNTZType, T.DateType),
    )


# ------------------------------------------------------------------- detect
def detect(
    df: DataFrame,
    query: str | Query,
    *,
    time_column: str | None = None,
    type_column: str | None = None,
    order_by: str | Sequence[str] | None = None,
    time_unit: str | None = None,
    schema: Schema | None = None,
    query_id: str | None = None,
    ranges: int | None = None,
    stream_column: str | None = None,
    options: InputOptions | None = None,
    position_column: str | None = None,
    task_reader: Callable[[], Iterator[pa.RecordBatch]] | None = None,
) -> DataFrame:
    """Run a CEQL query over ``df``; return one row per complex event (lazily).

    Positions are 0-based ranks in the order ``(time_column, order_by)``;
    without ``order_by`` a row id from ``monotonically_increasing_id()``,
    taken before any shuffle, breaks ties, so equal times keep the input's
    partition order (file order for a file read).  The result's schema is
    :func:`output_schema`; ``query`` holds ``query_id``, by default the
    query's name (its ``QUERY name:`` header, else ``"q1"``: :func:`query_name`).

    ``ranges`` is the number of position ranges (default: twice the default
    parallelism); it is also the number of partitions of the global sort.
    ``ranges=1`` forces the single ordered task, e.g. to measure the speed-up.
    ``stream_column`` names the column holding each event's stream (FROM
    and ``S>E``, as in :func:`kleene.compile`); positions count every row.
    The input options may also come as one ``options`` value (a compiled
    ``query`` brings its own), which single keywords override.
    ``position_column`` (an expression Spark resolves, hidden columns too)
    holds each row's position already: 0, 1, ... in the order ``(time_column,
    input order)``, e.g. ``_metadata.row_index`` of one Parquet file known to be
    sorted by time (``kleene run --engine spark`` checks that with pyarrow on the
    time column alone).  No job then orders the rows; it is trusted as given.
    A column of ``df`` named so is the positions only, not an attribute of the
    events (e.g. :data:`kleene.spark.textfile.ROW_COLUMN`, a text file's row index).
    The ranges plan, which needs the times where ranges start, ignores it.

    ``task_reader`` (with ``position_column``): a picklable function that
    yields the rows of ``df`` as Arrow batches, positions included, wherever
    it runs, e.g. a file read by kleene's reader
    (:func:`kleene.spark.textfile.read`).  The partitioned plan then runs
    ``defaultParallelism`` tasks that each read every row and keep the keys
    that hash to them (a deterministic hash of the key's values): no shuffle
    and no sort, since the rows come in position order; ``df`` serves the
    checks and the other plans.  For inputs that each task can read quickly.

    The query is compiled here, so query errors surface before any job runs;
    executors compile the text again (cheap, and nothing but text travels).
    Computing positions runs one small Spark job now (rows per partition).
    """
    if isinstance(query, Query):
        text, schema = query.text, schema or query.schema
        options = options or query.options
    else:
        text = query
    options = InputOptions.given(
        options,
        type_column=type_column,
        time_column=time_column,
        time_unit=time_unit,
        stream_column=stream_column,
    )
    type_column, time_column = options.type_column, options.time_column
    time_unit, stream_column = options.time_unit, options.stream_column
    compiled = kleene.compile(text, schema, options=options)
    source = df  # keeps a position column of the DataFrame itself
    if position_column is not None and position_column in df.columns:
        df = df.drop(position_column)  # the positions are not an attribute of the events
    columns = list(df.columns)
    for name in columns:
        if name.startswith(PREFIX):
            raise KleeneError(f"column names starting with {PREFIX!r} are reserved: {name!r}")
    order_cols = [order_by] if isinstance(order_by, str) else list(order_by or [])
    optional = [c for c in (time_column, stream_column) if c]
    typed = [type_column] if compiled.plan.type_column is not None else []  # not for `_` alone
    for name in [*typed, *optional, *order_cols]:
        if name not in columns:
            raise KleeneError(f"no column {name!r} in the input (columns: {', '.join(columns)})")
    if compiled.schema is None:
        # Fail on the driver, with the query's caret, rather than in every task.
        check(compiled.ast, text, Schema.from_arrow(to_arrow_schema(df.schema, timezone=_tz(df.sparkSession)), type_column, needs_type_column=bool(typed)))

    spark = df.sparkSession
    k = ranges if ranges is not None else 2 * spark.sparkContext.defaultParallelism
    k = max(1, int(k))
    time_type = df.schema[time_column].dataType if time_column else None
    plan = plan_for(compiled, time_type, k)

    in_order = None
    given = position_column is not None and plan.mode != "ranges"
    if given:
        pass  # the caller's positions: no order check
    elif not order_cols and not (plan.mode == "ranges" and isinstance(compiled.ast.within, ast.AttrWindow)):
        # (An attribute window is measured in a column that need not follow
        # the time order: its ranges come from the general path's statistics.)
        in_order = _input_order_positions(df, time_column, time_type)
    range_info: list[tuple[int, float]] | None = None
    if given:
        positioned = source.withColumn(POS, F.col(str(position_column)).cast("long"))
        if source is not df:
            positioned = positioned.drop(str(position_column))
    elif in_order is not None:
        positioned = in_order.positioned
        if plan.mode == "ranges":
            range_info = _position_ranges(in_order, k, compiled)
            positioned = positioned.withColumn(RANGE, _bucket_expr([POS], [(s,) for s, _ in range_info[1:]]))
    else:
        positioned, range_info = _positions(df, time_column, order_cols, k, compiled, time_type, plan)
    out_schema = output_schema(df.schema, partition_by=compiled.partition_by, time_column=time_column)
    evaluator = _Evaluator(
        text=text,
        schema=schema,
        options=options,
        columns=columns,
        mode=plan.mode,
        key_columns=[RANGE],
        range_starts=range_info,
        query_id=query_name(text, query_id),
        out_schema=to_arrow_schema(out_schema, timezone=_tz(spark)),
    )
    if plan.mode == "partitioned" and given and task_reader is not None:
        n = max(1, int(spark.sparkContext.defaultParallelism))
        each = KeysOfTask(
            read=task_reader, evaluate=evaluator, keys=list(dict.fromkeys(compiled.partition_by)),
            tasks=n, position_column=str(position_column), columns=columns,
        )
        return spark.range(n, numPartitions=n).mapInArrow(each, out_schema)
    if plan.mode == "partitioned":
        keys = list(dict.fromkeys(compiled.partition_by))
        # Position order, not (key, position): one session per task handles
        # the task's keys itself (see the module docstring for why).
        # An explicit number of partitions: adaptive execution would otherwise
        # coalesce a small shuffle into one task and lose all parallelism.
        prepared = positioned.repartition(k, *keys).sortWithinPartitions(POS)
    elif plan.mode == "ranges":
        assert range_info is not None
        prepared = _with_overlap(positioned, compiled, time_type, time_unit, range_info)
    else:
        prepared = positioned.repartition(1).sortWithinPartitions(POS)
    return prepared.mapInArrow(evaluator, out_schema)


def _tz(spark: Any) -> str:
    return str(spark.conf.get("spark.sql.session.timeZone") or "UTC")


def _positions(
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
    bucket = _bucket_expr(keys, _sample_bounds(df, keys, k))
    with_bucket = df.withColumn(PART, bucket)
    wkey = _window_key(query, time_type) if plan.mode == "ranges" else None
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
class _InOrder:
    """Input already in time order: positions from the row ids, and where runs start.

    ``run_starts`` holds (position, time) at the start of every run the
    order check saw (a run per Arrow batch at least, so every few thousand
    rows), in position order; ``time`` is in the units of
    :func:`_window_key` (0 without a time column).  They are the possible
    starts of parallel ranges whose start time is known without another job.
    """

    positioned: DataFrame
    run_starts: list[tuple[int, float]]
    total: int


def _input_order_positions(
    df: DataFrame, time_column: str | None, time_type: T.DataType | None
) -> _InOrder | None:
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
    :func:`_positions`.  Without a time column the input order is the order.
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
    return _InOrder(positioned, starts, total)


def _position_ranges(in_order: _InOrder, k: int, query: Query) -> list[tuple[int, float]]:
    """Up to ``k`` ranges of about equal size, cut where a run starts: (first position, start key).

    The start key is what :func:`_with_overlap` compares windows with: the
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


def _bucket_expr(keys: list[str], bounds: list[tuple[Any, ...]]) -> Column:
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


def _window_key(query: Query, time_type: T.DataType | None) -> Column | None:
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
    """The window length in the units of :func:`_window_key` (positions for EVENTS)."""
    window = query.ast.within
    if isinstance(window, ast.EventsWindow):
        return float(window.count)
    if isinstance(window, ast.AttrWindow):
        return float(window.amount)
    assert isinstance(window, ast.DurationWindow)
    if isinstance(time_type, (T.TimestampType, T.TimestampNTZType, T.DateType)):
        return window.nanos / 1_000
    return window.nanos / UNIT_NANOS[time_unit]


def _with_overlap(
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
    wkey = _window_key(query, time_type)
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


# ------------------------------------------------------------ the executors
class _Evaluator:
    """The ``mapInArrow`` function: feeds sessions, one per key (or range), in position order.

    A module-level class, so that cloudpickle ships it by reference plus its
    plain attributes; the query is recompiled from its text on the executor.
    """

    def __init__(
        self,
        *,
        text: str,
        schema: Schema | None,
        options: InputOptions,
        columns: list[str],
        mode: str,
        key_columns: list[str],
        range_starts: list[tuple[int, float]] | None,
        query_id: str,
        out_schema: pa.Schema,
    ) -> None:
        self.text = text
        self.schema = schema
        self.options = options
        self.time_column = options.time_column
        self.columns = columns
        self.mode = mode
        self.key_columns = key_columns
        self.range_first = [p for p, _ in range_starts] if range_starts else None
        self.query_id = query_id
        self.out_schema = out_schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        query = kleene.compile(self.text, self.schema, options=self.options)
        keyed = self.mode == "ranges"
        session = query.session()
        current: Any = object()  # no key equals it
        for batch in batches:
            if batch.num_rows == 0:
                continue
            positions = batch.column(POS).to_numpy(zero_copy_only=False).astype(np.int64)
            data = pa.RecordBatch.from_arrays(
                [batch.column(c) for c in self.columns], names=self.columns
            )
            if keyed:
                key_arrays = [batch.column(c) for c in self.key_columns]
                bounds = _segments(key_arrays)
            else:
                key_arrays, bounds = [], [0, batch.num_rows]
            out: list[pa.RecordBatch] = []
            for s, e in zip(bounds[:-1], bounds[1:]):
                if keyed:
                    key = tuple(a[s].as_py() for a in key_arrays)
                    if key != current:
                        # Sorted input: this key (or range) never comes back.
                        session, current = query.session(), key
                first_own = None
                if self.range_first is not None:
                    first_own = self.range_first[current[0]]
                # The bulk path: complex events in columns, no Python object per event.
                for found in session.feed_columns(data.slice(s, e - s), events=True, positions=positions[s:e]):
                    rows = found.to_arrow()
                    if first_own is not None:
                        # ends in the overlap: the previous range emits it
                        rows = rows.filter(pc.greater_equal(rows.column("end"), first_own))
                    if rows.num_rows:
                        out.append(self._batch(rows))
            yield from out

    def _batch(self, found: pa.RecordBatch) -> pa.RecordBatch:
        """The engine's columns (:meth:`~kleene.results.MatchBatch.to_arrow`) in :func:`output_schema`.

        Events get every input column in the input's types (a column outside
        ``SELECT a[x, y]`` is null); start and end times are the first and
        last events' times.
        """
        schema = self.out_schema
        n = found.num_rows
        names = found.schema.names
        events = found.column("events")
        event_type = schema.field("events").type.value_type
        flat = events.flatten()
        fields = []
        for f in event_type:
            index = flat.type.get_field_index(f.name)
            if index < 0:
                fields.append(pa.nulls(len(flat), f.type))
            else:
                fields.append(_cast(flat.field(index), f.type))
        struct = pa.StructArray.from_arrays(fields, fields=list(event_type))
        offsets = pc.subtract(events.offsets, events.offsets[0])  # (a sliced list starts past 0)
        events_out = pa.ListArray.from_arrays(offsets, struct, type=schema.field("events").type)
        time_type = schema.field("start_time").type
        if self.time_column is not None and flat.type.get_field_index(self.time_column) >= 0:
            times = _cast(flat.field(self.time_column), time_type)
            o = offsets.to_numpy()
            # A projection may keep no event of a match (`SELECT b` where an OR bound `a`):
            # its times are null, not the neighbour's (a null index takes a null).
            empty = o[1:] == o[:-1]
            start_time = times.take(pa.array(np.where(empty, 0, o[:-1]), mask=empty))
            end_time = times.take(pa.array(np.where(empty, 0, o[1:] - 1), mask=empty))
        else:
            start_time = end_time = pa.nulls(n, time_type)
        partition_type = schema.field("partition").type
        if "partition" in names:
            part = found.column("partition")
            partition = pa.StructArray.from_arrays(
                [_cast(part.field(i), f.type) for i, f in enumerate(partition_type)],
                fields=list(partition_type),
                mask=part.is_null(),
            )
        else:
            partition = pa.nulls(n, partition_type)
        arrays = [
            pa.array([self.query_id] * n, schema.field("query").type),
            partition,
            found.column("start"),
            found.column("end"),
            start_time,
            end_time,
            found.column("positions").cast(schema.field("positions").type),
            events_out,
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


class KeysOfTask:
    """The ``mapInArrow`` function of :func:`detect`'s ``task_reader`` route: task ``i`` of ``n``
    reads every row, keeps the PARTITION BY keys whose hash is ``i`` modulo ``n``, and evaluates
    them in position order (the reader's order) with the partitioned plan's evaluator."""

    def __init__(
        self,
        *,
        read: Callable[[], Iterator[pa.RecordBatch]],
        evaluate: _Evaluator,
        keys: list[str],
        tasks: int,
        position_column: str,
        columns: list[str],
    ) -> None:
        self.read = read
        self.evaluate = evaluate
        self.keys = keys
        self.tasks = tasks
        self.position_column = position_column
        self.columns = columns

    def __call__(self, ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        mine = [int(i) for batch in ids for i in batch.column(0).to_pylist()]
        yield from self.evaluate(self._kept(set(mine)))

    def _kept(self, mine: set[int]) -> Iterator[pa.RecordBatch]:
        if not mine:
            return
        names = [*self.columns, POS]
        for batch in self.read():
            keep = np.isin(key_hashes([batch.column(k) for k in self.keys]) % self.tasks, list(mine))
            if not keep.any():
                continue
            arrays = [batch.column(c) for c in self.columns]
            arrays.append(batch.column(self.position_column).cast(pa.int64()))
            yield pa.RecordBatch.from_arrays(arrays, names=names).filter(pa.array(keep))


def key_hashes(columns: list[pa.Array]) -> np.ndarray:
    """A hash of each row's key values, the same in every process (CRC-32 of each distinct value's
    ``repr``: Python's own string hash differs between processes)."""
    n = len(columns[0]) if columns else 0
    out = np.zeros(n, dtype=np.uint64)
    for column in columns:
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        codes = np.array(
            [zlib.crc32(repr(v).encode("utf-8")) for v in encoded.dictionary.to_pylist()], dtype=np.uint64
        )
        index = encoded.indices.to_numpy(zero_copy_only=False).astype(np.intp)
        out = (out * np.uint64(1_000_003) + codes[index]) % np.uint64(1 << 32)
    return out


def _cast(values: pa.Array, typ: pa.DataType) -> pa.Array:
    """The engine's column in the input's Spark type (it may have conformed, e.g. text to numbers)."""
    if values.type == typ:
        return values
    try:
        return values.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return _array(values.to_pylist(), typ)


def _array(values: list[Any], typ: pa.DataType) -> pa.Array:
    """``pa.array(values, typ)``, casting when the engine changed a value's kind.

    The engine hands events back after conforming the columns it reads (a
    numeric string becomes a number), so a value may not fit the input's type
    directly; it is then converted through Arrow's cast, back to the input type.
    """
    try:
        return pa.array(values, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return pa.array(values).cast(typ)


def _segments(arrays: list[pa.Array]) -> list[int]:
    """Boundaries of the runs of equal keys in sorted key columns: [0, ..., n]."""
    n = len(arrays[0])
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for arr in arrays:
        codes = pc.dictionary_encode(arr, null_encoding="encode").indices
        c = codes.to_numpy(zero_copy_only=False)
        change[1:] |= c[1:] != c[:-1]
    return [*np.flatnonzero(change).tolist(), n]
