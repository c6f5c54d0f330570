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

The planning lives beside this module, one job each: :mod:`kleene.spark.schema` (names,
result schema), :mod:`kleene.spark.plan`, :mod:`kleene.spark.positions`,
:mod:`kleene.spark.ranges` (the overlap the driver adds) and :mod:`kleene.spark.evaluator`
(the executors, which trim that overlap); this module ties them together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

import kleene
from kleene.api import Query
from kleene.language import ast
from kleene.language.checks import check
from kleene.language.errors import KleeneError
from kleene.language.schema import Schema
from kleene.options import InputOptions
from kleene.spark.evaluator import Evaluator, KeysOfTask
from kleene.spark.plan import plan_for
from kleene.spark.positions import (
    bucket_expr,
    input_order_positions,
    position_ranges,
    ranked_positions,
)
from kleene.spark.ranges import with_overlap
from kleene.spark.schema import (
    POS,
    PREFIX,
    RANGE,
    output_schema,
    query_name,
)

__all__ = ["detect"]



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
        in_order = input_order_positions(df, time_column, time_type)
    range_info: list[tuple[int, float]] | None = None
    if given:
        positioned = source.withColumn(POS, F.col(str(position_column)).cast("long"))
        if source is not df:
            positioned = positioned.drop(str(position_column))
    elif in_order is not None:
        positioned = in_order.positioned
        if plan.mode == "ranges":
            range_info = position_ranges(in_order, k, compiled)
            positioned = positioned.withColumn(RANGE, bucket_expr([POS], [(s,) for s, _ in range_info[1:]]))
    else:
        positioned, range_info = ranked_positions(df, time_column, order_cols, k, compiled, time_type, plan)
    out_schema = output_schema(df.schema, partition_by=compiled.partition_by, time_column=time_column)
    evaluator = Evaluator(
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
        prepared = with_overlap(positioned, compiled, time_type, time_unit, range_info)
    else:
        prepared = positioned.repartition(1).sortWithinPartitions(POS)
    return prepared.mapInArrow(evaluator, out_schema)


def _tz(spark: Any) -> str:
    return str(spark.conf.get("spark.sql.session.timeZone") or "UTC")

