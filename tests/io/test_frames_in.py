"""DataFrames in: polars (eager and lazy), DuckDB relations and pandas feed every entry point.

Real polars and DuckDB (the ``dev`` extra).  Each source must give exactly the
complex events that the same rows give as plain Arrow built from Python values.
polars exports strings as ``string_view`` and categoricals as
``dictionary<string_view>``, which Arrow's kernels do not all take: kleene casts
them to plain layouts on entry (:func:`kleene.io.sources.plain_layout`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import kleene
from kleene.io.sources import plain_type

NY = "America/New_York"
T0 = dt.datetime(2013, 1, 1, 10, 0, tzinfo=dt.UTC)
DELAYS = [70.0, 80.0, 90.0, 10.0, 95.0, 75.0, 65.0, 20.0]
CARRIERS = ["UA", "UA", "AA", "AA", "AA", "UA", "B6", "B6"]
MINUTES = [0, 10, 20, 30, 70, 100, 110, 120]

# The issue's flights query: two late departures of one carrier within an hour.
FLIGHTS = (
    "SELECT * FROM S WHERE DEP AS a ; DEP AS b FILTER a[dep_delay > 60] AND b[dep_delay > 60] "
    "PARTITION BY [carrier] WITHIN 1 hours"
)
EXPECTED = [(0, 1, (0, 1), ("UA",)), (2, 4, (2, 4), ("AA",))]


def flights_rows() -> list[dict[str, Any]]:
    return [
        {"type": "DEP", "carrier": c, "dep_delay": d, "time": T0 + dt.timedelta(minutes=m)}
        for c, d, m in zip(CARRIERS, DELAYS, MINUTES)
    ]


def flights_polars() -> pl.DataFrame:
    """The type column first, with values of three letters: the issue's ValueError case."""
    return pl.DataFrame(flights_rows()).with_columns(
        pl.col("time").dt.convert_time_zone(NY),
        pl.col("carrier").cast(pl.Categorical).alias("carrier_cat"),
        pl.col("carrier").cast(pl.Enum(["AA", "B6", "UA"])).alias("carrier_enum"),
    )


def quads(events: Any) -> list[tuple[Any, ...]]:
    return [(c.start, c.end, c.positions, c.partition) for c in events]


def test_the_issue_case_a_polars_frame_runs() -> None:
    q = kleene.compile(FLIGHTS, time_column="time")
    df = flights_polars()
    found = list(q.run(df))
    assert quads(found) == EXPECTED
    assert quads(q.run(pa.Table.from_pylist(flights_rows()))) == EXPECTED
    first = found[0].events[0]
    assert first["carrier_cat"] == "UA" and first["carrier_enum"] == "UA"
    assert first["time"] == T0 and str(first["time"].tzinfo) == NY  # the zone is kept
    assert quads(q.matches(df)) == EXPECTED


@pytest.mark.parametrize("column", ["carrier_cat", "carrier_enum"])
def test_polars_categoricals_filter_and_partition(column: str) -> None:
    q = kleene.compile(FLIGHTS.replace("[carrier]", f"[{column}]").replace(
        "a[dep_delay > 60]", f"a[dep_delay > 60 AND {column} != 'UA']"), time_column="time")
    assert quads(q.run(flights_polars())) == [(2, 4, (2, 4), ("AA",))]


def test_view_types_are_cast_to_plain_layouts() -> None:
    schema = pa.RecordBatchReader.from_stream(flights_polars()).schema
    assert pa.types.is_string_view(schema.field("carrier").type)  # what polars exports
    (batch,) = kleene.to_batches(flights_polars())
    assert batch.schema.field("carrier").type == pa.large_string()
    assert batch.schema.field("carrier_cat").type.value_type == pa.large_string()
    assert batch.schema.field("time").type == pa.timestamp("us", NY)
    nested = pa.struct([("s", pa.string_view()), ("l", pa.list_view(pa.binary_view()))])
    assert plain_type(nested) == pa.struct([("s", pa.large_string()), ("l", pa.list_(pa.large_binary()))])


def test_polars_lazy_frame_and_a_list_of_frames() -> None:
    q = kleene.compile(FLIGHTS, time_column="time")
    df = flights_polars()
    assert quads(q.run(df.lazy().filter(pl.col("type") == "DEP"))) == EXPECTED
    assert quads(q.run([df.slice(0, 3), df.slice(3)])) == EXPECTED
    assert quads(q.run(iter([df.slice(0, 5).to_pandas(), df.slice(5)]))) == EXPECTED


def test_duckdb_relation_from_sql() -> None:
    con = duckdb.connect()
    rel = con.sql(
        """
        SELECT 'DEP' AS type, carrier, dep_delay::DECIMAL(6, 1) AS dep_delay,
               TIMESTAMPTZ '2013-01-01 10:00:00+00' + minutes * INTERVAL 1 MINUTE AS time
        FROM (VALUES ('UA', 70, 0), ('UA', 80, 10), ('AA', 90, 20), ('AA', 10, 30),
                     ('AA', 95, 70), ('UA', 75, 100), ('B6', 65, 110), ('B6', 20, 120))
             AS t(carrier, dep_delay, minutes)
        ORDER BY minutes
        """
    )
    q = kleene.compile(FLIGHTS, time_column="time")
    found = list(q.run(rel))
    assert quads(found) == EXPECTED
    assert found[0].events[0]["time"] == T0
    assert quads(q.matches(rel)) == EXPECTED
    assert quads(kleene.compile_many({"late": FLIGHTS}, time_column="time").run(rel)) == EXPECTED


def test_push_batch_takes_frames_and_equals_run() -> None:
    q = kleene.compile(FLIGHTS, time_column="time")
    df = flights_polars()
    pushed = q.push_batch(df.slice(0, 4)) + q.push_batch(df.slice(4).to_pandas())
    assert quads(pushed) == EXPECTED
    qs = kleene.compile_many({"late": FLIGHTS}, time_column="time")
    assert [(c.query, c.positions) for c in qs.push_batch(df)] == [("late", (0, 1)), ("late", (2, 4))]


def test_pandas_categorical_and_zoned_times() -> None:
    frame = pd.DataFrame(flights_rows())
    frame["time"] = frame["time"].dt.tz_convert(NY)
    frame["carrier"] = frame["carrier"].astype("category")
    q = kleene.compile(FLIGHTS, time_column="time")
    assert quads(q.run(frame)) == EXPECTED


def test_several_inputs_merged_by_time_from_frames() -> None:
    rows = flights_rows()
    left = pl.DataFrame([r for i, r in enumerate(rows) if i % 2 == 0])
    con = duckdb.connect()
    right_rows = pa.Table.from_pylist([r for i, r in enumerate(rows) if i % 2 == 1])  # noqa: F841
    right = con.sql("SELECT * FROM right_rows")
    # DuckDB names UTC "Etc/UTC", Python "UTC": the same instants, merged in the first's zone.
    merged = list(kleene.merge_streams([(None, left), (None, right)], time_column="time"))
    assert [d for b in merged for d in b.column("dep_delay").to_pylist()] == DELAYS
    q = kleene.compile(FLIGHTS, time_column="time")
    assert quads(q.run(merged)) == EXPECTED


def test_sources_that_are_not_tables_are_named() -> None:
    q = kleene.compile(FLIGHTS, time_column="time")
    df = flights_polars()
    with pytest.raises(kleene.KleeneError, match="iterable of tuple: give event dicts"):
        list(q.run(df.rows()))
    with pytest.raises(kleene.KleeneError, match="Series: its Arrow stream is not a table"):
        list(q.run(iter(df)))
    with pytest.raises(kleene.KleeneError, match="Series: its Arrow stream is not a table"):
        list(kleene.to_batches(df.get_column("carrier")))


def test_every_entry_point_takes_a_polars_frame() -> None:
    """run, matches, match_batches, run_arrow, to_arrow, push_batch, QuerySet's, to_batches."""
    df = flights_polars()
    q = kleene.compile(FLIGHTS, time_column="time")
    ends = [e for _, e, _, _ in EXPECTED]
    assert [e for b in q.match_batches(df, events=True) for e in b.end.tolist()] == ends
    assert [e for rb in q.run_arrow(df) for e in rb.column("end").to_pylist()] == ends
    assert q.to_arrow(df).column("end").to_pylist() == ends
    qs = kleene.compile_many({"late": FLIGHTS}, time_column="time")
    assert [m.end for m in qs.matches(df)] == ends
    assert [e for rb in qs.run_arrow(df.lazy()) for e in rb.column("end").to_pylist()] == ends
    assert sum(b.num_rows for b in kleene.to_batches(df.lazy())) == df.height
