"""The names and the result schema that :func:`kleene.spark.detect` and the streaming path share.

Internal columns start with :data:`PREFIX`; an input column named so is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import types as T

from kleene.language.parser import parse

PREFIX = "__kleene_"
RID = PREFIX + "rid"
PART = PREFIX + "part"
POS = PREFIX + "pos"
RANGE = PREFIX + "range"
WKEY = PREFIX + "wkey"

DEFAULT_QUERY_NAME = "q1"
"""The ``query`` column of an unnamed query: the name :func:`kleene.compile_many` gives it too."""

OUTPUT_FIELDS = ("query", "partition", "start", "end", "start_time", "end_time", "positions", "events")


def output_schema(
    input_schema: T.StructType,
    *,
    partition_by: Sequence[str] = (),
    time_column: str | None = None,
) -> T.StructType:
    """The schema of :func:`kleene.spark.detect`'s result, derived from the input's.

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
