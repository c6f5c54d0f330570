"""A Spark DataFrame given to the in-process engine (``Query.run(df)``).

A batch DataFrame is read through its Arrow stream (collected to the driver),
in the order Spark gives it; a streaming one is refused with a pointer to
:func:`kleene.spark.detect_stream`.  A real local SparkSession (the ``spark``
fixture of tests/conftest.py).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pandas as pd
import pytest

import kleene

QUERY = (
    "SELECT * FROM S WHERE DEP AS a ; DEP AS b FILTER a[dep_delay > 60] AND b[dep_delay > 60] "
    "PARTITION BY [carrier] WITHIN 1 hours"
)
T0 = dt.datetime(2013, 1, 1, 10, 0, tzinfo=dt.UTC)
ROWS = [
    {"type": "DEP", "carrier": c, "dep_delay": d, "time": T0 + dt.timedelta(minutes=m)}
    for c, d, m in [("UA", 70.0, 0), ("UA", 80.0, 10), ("AA", 90.0, 20), ("AA", 10.0, 30),
                    ("AA", 95.0, 70), ("UA", 75.0, 100)]
]


def test_a_batch_spark_dataframe_runs_in_process(spark: Any) -> None:
    df = spark.createDataFrame(pd.DataFrame(ROWS)).orderBy("time")
    q = kleene.compile(QUERY, time_column="time")
    found = [(c.start, c.end, c.positions, c.partition) for c in q.run(df)]
    assert found == [(0, 1, (0, 1), ("UA",)), (2, 4, (2, 4), ("AA",))]
    assert found == [(c.start, c.end, c.positions, c.partition) for c in q.run(ROWS)]
    table = q.to_arrow(df)
    assert table.column("carrier").to_pylist() == ["UA", "AA"]
    assert q.to_arrow(df, shape="events").column("dep_delay").to_pylist() == [70.0, 80.0, 90.0, 95.0]


def test_a_streaming_spark_dataframe_points_to_detect_stream(spark: Any) -> None:
    stream = spark.readStream.format("rate").load()
    q = kleene.compile("SELECT * FROM S WHERE A ; B")
    with pytest.raises(kleene.KleeneError, match=r"kleene\.spark\.detect_stream"):
        list(q.run(stream))
