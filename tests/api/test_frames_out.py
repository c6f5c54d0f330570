"""Results as DataFrames: ``to_arrow``/``to_pandas``/``to_polars`` in the two shapes.

The oracle is the readable path of the same query: ``matches()`` for the
matches shape and ``run()`` (ComplexEvent.events) for the events shape; the
tables must hold exactly those complex events, in the same order.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import kleene

STOCK = Path(__file__).resolve().parents[2] / "examples" / "stock.csv"
RISING = (
    "QUERY rising: SELECT * FROM S WHERE SELL AS a ; BUY AS b FILTER a[price > 100] "
    "PARTITION BY [name] WITHIN 10 seconds"
)
NEXT = "SELECT b[volume] FROM S WHERE SELL AS a ; BUY AS b WITHIN 2 events"
PAIR = "SELECT * FROM S WHERE SELL AS a ; BUY AS b PARTITION BY [name, desk] WITHIN 4 events"


def stock_batches() -> list[pa.RecordBatch]:
    """examples/stock.csv and a ``desk`` column, in batches of 7 rows: complex events complete
    in several batches."""
    table = pacsv.read_csv(STOCK)
    desk = pa.array(["A" if i % 3 else "B" for i in range(table.num_rows)])
    return table.append_column("desk", desk).to_batches(max_chunksize=7)


def test_matches_shape_is_one_row_per_complex_event() -> None:
    q = kleene.compile(RISING, time_column="time")
    assert q.name == "rising"
    table = q.to_arrow(stock_batches())
    assert table.column_names == [
        "query", "match_id", "start", "end", "start_time", "end_time", "positions", "name"
    ]
    expected = list(q.matches(stock_batches()))
    assert len(expected) > 3
    assert table.column("match_id").to_pylist() == list(range(len(expected)))
    assert set(table.column("query").to_pylist()) == {"rising"}
    got = zip(*(table.column(c).to_pylist() for c in ("start", "end", "positions", "name")))
    assert [(s, e, tuple(p), (n,)) for s, e, p, n in got] == [
        (m.start, m.end, m.positions, m.partition) for m in expected
    ]


def test_events_shape_is_one_row_per_complex_event_and_event() -> None:
    q = kleene.compile(RISING, time_column="time")
    table = q.to_arrow(stock_batches(), shape="events")
    assert table.column_names[:3] == ["query", "match_id", "position"]
    expected = [
        {"query": "rising", "match_id": i, "position": p, **event}
        for i, ce in enumerate(q.run(stock_batches()))
        for p, event in zip(ce.positions, ce.events)
    ]
    assert table.to_pylist() == expected


def test_several_queries_name_their_rows_and_share_partition_columns() -> None:
    qs = kleene.compile_many({"rising": RISING, "next": NEXT, "pair": PAIR}, time_column="time")
    table = qs.to_arrow(stock_batches())
    assert table.column_names == [
        "query", "match_id", "start", "end", "start_time", "end_time", "positions", "name", "desk"
    ]
    expected = list(qs.matches(stock_batches()))
    assert {m.query for m in expected} == {"rising", "next", "pair"}
    rows = table.to_pylist()
    assert [(r["query"], r["start"], r["end"], tuple(r["positions"])) for r in rows] == [
        (m.query, m.start, m.end, m.positions) for m in expected
    ]
    for r, m in zip(rows, expected):
        key = {"rising": ("name",), "pair": ("name", "desk"), "next": ()}[m.query]
        assert tuple(r[k] for k in key) == (m.partition or ())
        assert all(r[k] is None for k in {"name", "desk"} - set(key))
    events = qs.to_arrow(stock_batches(), shape="events")
    flat = [
        (i, ce.query, p, event)
        for i, ce in enumerate(qs.run(stock_batches()))
        for p, event in zip(ce.positions, ce.events)
    ]
    got = events.to_pylist()
    assert [(r["match_id"], r["query"], r["position"]) for r in got] == [f[:3] for f in flat]
    # SELECT b[volume] gives the type and volume only; the other columns are null there.
    for r, (_, _, _, event) in zip(got, flat):
        assert {k: r[k] for k in event} == event
        assert all(r[k] is None for k in set(r) - set(event) - {"match_id", "query", "position"})


def test_pandas_and_polars_frames_ready_for_group_by() -> None:
    q = kleene.compile(RISING, time_column="time")
    expected = {
        i: sum(e["price"] for e in ce.events) / len(ce.events)
        for i, ce in enumerate(q.run(STOCK))
    }
    frame = q.to_pandas(STOCK, shape="events")
    assert isinstance(frame, pd.DataFrame)
    assert str(frame["time"].dt.tz) == "UTC"
    assert frame.groupby("match_id")["price"].mean().to_dict() == pytest.approx(expected)
    polars = q.to_polars(STOCK, shape="events")
    assert isinstance(polars, pl.DataFrame)
    means = polars.group_by("match_id").agg(pl.col("price").mean()).sort("match_id")
    assert dict(means.iter_rows()) == pytest.approx(expected)
    matches = q.to_polars(STOCK)
    assert matches.schema["positions"] == pl.List(pl.Int64)
    assert matches.height == len(expected)
    assert list(q.to_pandas(STOCK)["name"]) == matches["name"].to_list()


def test_inputs_as_frames_give_the_same_tables() -> None:
    q = kleene.compile(RISING, time_column="time")
    table = q.to_arrow(STOCK, shape="events")
    frame = pl.read_csv(STOCK, try_parse_dates=True)
    assert q.to_arrow(frame, shape="events").column("match_id").equals(table.column("match_id"))
    assert q.to_polars(frame)["positions"].to_list() == table.group_by("match_id", use_threads=False).aggregate(
        [("position", "list")]).column("position_list").to_pylist()


def test_no_complex_event_still_has_the_columns() -> None:
    q = kleene.compile(RISING.replace("price > 100", "price > 1000"), time_column="time")
    assert q.to_arrow(STOCK).column_names == [
        "query", "match_id", "start", "end", "start_time", "end_time", "positions", "name"
    ]
    assert q.to_arrow(STOCK).num_rows == 0
    assert q.to_polars(STOCK, shape="events").columns == ["query", "match_id", "position"]


def test_unknown_shape_and_clashing_names_are_errors() -> None:
    q = kleene.compile(RISING, time_column="time")
    with pytest.raises(kleene.KleeneError, match="unknown result shape 'rows': 'matches' or 'events'"):
        q.to_arrow(STOCK, shape="rows")
    rows = [{"type": "SELL", "position": 1, "price": 101.0}, {"type": "BUY", "position": 2, "price": 1.0}]
    clash = kleene.compile("SELECT * FROM S WHERE SELL AS a ; BUY AS b")
    assert clash.to_arrow(rows).num_rows == 1
    with pytest.raises(kleene.KleeneError, match="an event attribute is named 'position'.*rename it"):
        clash.to_arrow(rows, shape="events")


def test_a_missing_frame_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    q = kleene.compile(RISING, time_column="time")
    monkeypatch.setitem(sys.modules, "polars", None)  # what Python does for an uninstalled package
    with pytest.raises(kleene.KleeneError, match=r"need polars: pip install polars") as err:
        q.to_polars(STOCK)
    assert isinstance(err.value, ImportError)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(kleene.KleeneError, match=r"need pandas: pip install pandas"):
        q.to_pandas(STOCK)


def test_arrow_results_import_no_frame_library() -> None:
    """(pandas is not checked: pyarrow itself loads it when installed, already at compile time.)"""
    code = (
        "import sys, kleene; "
        f"q = kleene.compile({RISING!r}, time_column='time'); "
        f"q.to_arrow({str(STOCK)!r}, shape='events'); "
        "print(sorted(m for m in ('polars', 'duckdb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"




def test_positions_only_from_a_file_read_the_selected_attributes() -> None:
    """matches() reads only the query's columns of a file: SELECT b[volume]'s attribute is one
    of them (it used to be left out, and the schema check then called it unknown)."""
    q = kleene.compile(NEXT)
    assert "volume" in q.columns
    assert len(list(q.matches(STOCK))) == len(list(q.run(STOCK))) > 0
    qs = kleene.compile_many({"rising": RISING, "next": NEXT}, time_column="time")
    assert qs.to_arrow(STOCK).num_rows == len(list(qs.run(STOCK)))


def test_matches_shape_has_the_first_and_last_event_times() -> None:
    """``start_time``/``end_time``: the time column's values of each complex event's first and last
    event (issue 15 review), as the readable path's events hold them, in every frame library."""
    for source in (STOCK, stock_batches()):
        q = kleene.compile(RISING, time_column="time")
        table = q.to_arrow(source)
        expected = [(ce.events[0]["time"], ce.events[-1]["time"]) for ce in q.run(STOCK)]
        assert len(expected) > 3 and any(a != b for a, b in expected)
        assert table.schema.field("start_time").type == pa.timestamp("s", tz="UTC")
        assert list(zip(table.column("start_time").to_pylist(),
                        table.column("end_time").to_pylist())) == expected
    # Several queries, one of them projecting the time away (SELECT b[volume]): the input's times
    # at each complex event's first and last position.
    times = pa.Table.from_batches(stock_batches()).column("time").to_pylist()
    qs = kleene.compile_many({"rising": RISING, "next": NEXT, "pair": PAIR}, time_column="time")
    rows = qs.to_arrow(stock_batches()).to_pylist()
    assert {r["query"] for r in rows} == {"rising", "next", "pair"}
    assert [(r["start_time"], r["end_time"]) for r in rows] == [
        (times[r["positions"][0]], times[r["positions"][-1]]) for r in rows
    ]
    frame = q.to_pandas(STOCK)
    assert str(frame["end_time"].dt.tz) == "UTC"
    assert (frame["end_time"] >= frame["start_time"]).all()
    polars = q.to_polars(STOCK)
    assert polars["start_time"].to_list() == [a for a, _ in expected_times(q)]
    untimed = kleene.compile("SELECT * FROM S WHERE SELL AS a ; BUY AS b WITHIN 2 events")
    assert "start_time" not in untimed.to_arrow(STOCK).column_names  # no time column: no times


def expected_times(q: kleene.Query) -> list[tuple[object, object]]:
    return [(ce.events[0]["time"], ce.events[-1]["time"]) for ce in q.run(STOCK)]
