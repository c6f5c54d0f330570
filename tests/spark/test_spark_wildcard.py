"""``detect()`` with the wildcard event ``_`` on a DataFrame without a type column."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import kleene
from kleene.spark import detect

ROWS = [
    {"id": i, "carrier": c, "dep_delay": d, "ts": i * 600}
    for i, (c, d) in enumerate(
        [("UA", 70), ("AA", 90), ("UA", 10), ("UA", 65), ("AA", 80), ("AA", 61), ("UA", 99)]
    )
]
QUERY = (
    "SELECT * WHERE _ AS a ; _ AS b FILTER a[dep_delay > 60] AND b[dep_delay > 60] "
    "PARTITION BY [carrier] WITHIN 1 hours"
)


def test_a_wildcard_query_needs_no_type_column(spark: Any) -> None:
    df = spark.createDataFrame(ROWS)
    assert "type" not in df.columns
    rows = detect(df, QUERY, time_column="ts", time_unit="s", order_by="id").collect()
    got = sorted((r["start"], r["end"], tuple(r["positions"]), tuple(r["partition"])) for r in rows)
    table = pa.Table.from_pylist(ROWS)
    want = sorted(
        (c.start, c.end, c.positions, tuple(c.partition or ()))
        for c in kleene.compile(QUERY, time_column="ts", time_unit="s").run(table)
    )
    # UA delayed at 0, 3, 6 and AA at 1, 4, 5, ten minutes apart: every pair within the hour
    assert got == want and len(got) == 6
    assert {r[3] for r in got} == {("UA",), ("AA",)}
    # A query that names a type still needs the column, and says which one.
    with pytest.raises(kleene.KleeneError, match="no column 'type'"):
        detect(df, "SELECT * WHERE DEP ; _", time_column="ts", time_unit="s", order_by="id")
