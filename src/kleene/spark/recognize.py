"""MATCH_RECOGNIZE on Spark: :func:`match_recognize` (a DataFrame) and :func:`sql` (a statement).

**Plan.**  Partitions are independent, so they are Spark's unit of work: the
input is grouped by the PARTITION BY columns (``groupBy(...).applyInArrow``; a
shuffle puts each partition whole in one task, ``spark.sql.shuffle.partitions``
tasks share them) and each partition's rows, as one Arrow table, go through
:func:`kleene.sql.clause.evaluate_clause` (the linear-time engine, as in process).
Without PARTITION BY the whole input is one group, so one task.  Within a
partition the evaluator sorts by ORDER BY; ties keep the input's order, which a
shuffle does not keep, so a row id (``monotonically_increasing_id()``, taken
before the shuffle: for a file read, file order) is attached first and each
group is put back in that order before evaluation.  The output schema is known
before any row is read (:func:`kleene.language.match_recognize.types.output_schema`),
so type errors are raised on the driver, with a caret, at the call.

The order of the result's rows is Spark's (SQL leaves it undefined); the rows are
those of the in-process evaluation.

:func:`sql` runs a whole statement: each ``<table or view or (subquery)>
MATCH_RECOGNIZE (...)`` is replaced by a temporary view of :func:`match_recognize`'s
result (:mod:`kleene.sql.statement`), and the rest runs on Spark SQL.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from kleene.language.match_recognize import ast
from kleene.language.match_recognize.parser import parse
from kleene.language.match_recognize.types import output_schema, resolve_column
from kleene.sql.clause import evaluate_clause
from kleene.sql.statement import Source, rewrite
from kleene.sql.tokens import Token

__all__ = ["match_recognize", "sql"]

RID = "__kleene_rid"
VIEW = "__kleene_match_recognize_"
_views = itertools.count(1)


def match_recognize(df: DataFrame, clause: str | ast.MatchRecognize) -> DataFrame:
    """The result of one MATCH_RECOGNIZE clause (its body, or ``MATCH_RECOGNIZE (...)``)
    over ``df``; the same rows as :func:`kleene.sql.clause.evaluate_clause` in process.

    Raises :class:`~kleene.language.errors.QueryError` (with a caret) for a bad clause
    or a type error against ``df``'s columns, before any job runs.
    """
    mr = parse(clause) if isinstance(clause, str) else clause
    if RID in df.columns:
        raise ValueError(f"the input has a column named {RID}, which kleene uses internally")
    conf = df.sparkSession.conf
    tz = conf.get("spark.sql.session.timeZone") or "UTC"
    large = (conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false") or "").lower() == "true"
    arrow_in = to_arrow_schema(df.schema, timezone=tz, prefers_large_types=large)
    out_schema = from_arrow_schema(output_schema(mr, arrow_in), prefer_timestamp_ntz=False)
    partition = [resolve_column(c, df.columns, mr.source) for c in mr.partition_by]
    with_id = df.withColumn(RID, F.monotonically_increasing_id())
    evaluate = _evaluator(mr, to_arrow_schema(out_schema, timezone=tz, prefers_large_types=large))
    grouped = with_id.groupBy(*[F.col(_quoted(c)) for c in partition])
    return grouped.applyInArrow(evaluate, out_schema)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _evaluator(mr: ast.MatchRecognize, schema: pa.Schema) -> Callable[[pa.Table], pa.Table]:
    """The ``applyInArrow`` function (a plain function: PySpark reads its type hints)."""

    def evaluate(table: pa.Table) -> pa.Table:
        ordered = table.sort_by(RID).drop_columns([RID])
        result = evaluate_clause(mr, ordered)
        return pa.Table.from_arrays(
            [result.column(i).cast(f.type) for i, f in enumerate(schema)], schema=schema)

    return evaluate


def sql(spark: SparkSession, statement: str) -> DataFrame:
    """Run a SELECT statement whose ``MATCH_RECOGNIZE`` clauses run on kleene (each over a
    table, a view or a subquery) and the rest on Spark SQL; returns the DataFrame.

    Each clause's result is registered as a temporary view named
    ``__kleene_match_recognize_<n>`` for the statement.  Raises
    :class:`~kleene.language.errors.QueryError` with a caret in ``statement`` for a
    bad clause, and only accepts one SELECT (or WITH ... SELECT) statement.
    """
    return spark.sql(rewrite(statement, _SparkEngine(spark)))


class _SparkEngine:
    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def file_table(self, path: str, token: Token, statement: str) -> str | None:
        return None  # Spark SQL reads files its own way (parquet.`path`); literals stay

    def clause(self, mr: ast.MatchRecognize, source: Source) -> str:
        df: Any = self.spark.sql(source.sql)
        name = f"{VIEW}{next(_views)}"
        match_recognize(df, mr).createOrReplaceTempView(name)
        return name
