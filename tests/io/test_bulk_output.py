"""The bulk path (MatchBatch, Arrow, JSON Lines per batch) against the readable path and the oracle.

``Query.match_batches`` enumerates the tECS into columns; it must give exactly
the complex events of ``Query.matches`` in the same order, on every query the
generators draw (every operator, strategy, partitions, windows, CONSUME BY,
LIMIT, several streams, conditions between events) and however the input is
cut into batches.  ``JsonlWriter.write_batch`` must write, byte for byte, what
``JsonlWriter.write`` writes for each ``ComplexEvent``, and ``to_arrow`` must
hold the same data as ``ComplexEvent.to_dict``.  Every test runs twice: with the compiled
twins of the engine's loop, of the step, of the walk and of the JSON Lines layout
(kleene/native.py), and with their pure-Python originals.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import threading
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kleene
from against_oracle import (
    SUPPORTED_CEL,
    Case,
    aimed,
    compile_case,
    oracle,
    pieces,
    prepared,
    rows_of,
)
from generators import STREAM_KEY, cases, condition_cases
from kleene.cli import main
from kleene.io.json_text import dumps
from kleene.io.jsonl_bulk import json_rows, json_values
from kleene.io.writers import JsonlWriter
from kleene.results import MatchBatch, ragged_take
from kleene.runtime.enumeration import Columns, enumerate_node
from kleene.runtime.tecs import BOTTOM, OUTPUT, UNION

pytestmark = pytest.mark.usefixtures("twins")  # compiled twins, then pure Python (conftest.py)

SLOW = settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))




def bulk_matches(query: Any, source: Any) -> list[Any]:
    return [m for b in query.match_batches(source) for m in b.matches()]


def jsonl_of_objects(query: Any, source: Any, ascii_only: bool = False) -> str:
    out = io.StringIO()
    writer = JsonlWriter(out)
    writer._ascii = ascii_only
    for ce in query.run(source):
        writer.write(ce)
    writer.flush()
    return out.getvalue()


def jsonl_of_batches(query: Any, source: Any, ascii_only: bool = False) -> str:
    out = io.StringIO()
    writer = JsonlWriter(out)
    writer._ascii = ascii_only
    for b in query.match_batches(source, events=True):
        writer.write_batch(b)
    writer.flush()
    return out.getvalue()


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(full_cel=SUPPORTED_CEL), st.lists(st.integers(0, 40), max_size=4))
def test_bulk_equals_matches_whole_language(case: Case, cuts: list[int]) -> None:
    """Same complex events, same order, whatever the operators, strategy and batching."""
    query, table, _ = prepared(case)
    q = compile_case(query)
    assert bulk_matches(q, pieces(table, cuts)) == list(q.matches(table))


@SLOW
@given(cases(full_cel=SUPPORTED_CEL, with_streams=True), st.lists(st.integers(0, 40), max_size=3))
def test_bulk_equals_matches_several_streams(case: Case, cuts: list[int]) -> None:
    query, table, _ = prepared(case)
    q = compile_case(query, STREAM_KEY)
    assert bulk_matches(q, pieces(table, cuts)) == list(q.matches(table))


@SLOW
@given(condition_cases(), st.lists(st.integers(0, 40), max_size=3))
def test_bulk_equals_matches_register_engine(case: Case, cuts: list[int]) -> None:
    """Conditions between events (register engine) fill the columns through Found tuples."""
    query, table, _ = prepared(case)
    q = compile_case(query)
    assert bulk_matches(q, pieces(table, cuts)) == list(q.matches(table))


@aimed()
@SLOW
@given(cases())
def test_bulk_equals_oracle(case: Case) -> None:
    """The bulk path's set of complex events is the formal semantics' (LIMIT: n per end)."""
    query, events, times = case
    expected = oracle(case)
    if expected is None:
        return  # counted
    q = compile_case(query)
    got = []
    for b in q.match_batches(pa.Table.from_pylist(rows_of(events, times))):
        flat = b.positions.tolist()
        for i, (s, e) in enumerate(zip(b.start.tolist(), b.end.tolist())):
            got.append((s, e, tuple(flat[b.offsets[i] : b.offsets[i + 1]])))
    assert len(got) == len(set(got))
    if query.limit is None:
        assert set(got) == expected
    else:
        assert set(got) <= expected
        per_end = Counter(end for _, end, _ in expected)
        assert Counter(end for _, end, _ in got) == Counter(
            {e: min(c, query.limit) for e, c in per_end.items()}
        )


@SLOW
@given(cases(full_cel=SUPPORTED_CEL), st.lists(st.integers(0, 40), max_size=3), st.booleans())
def test_jsonl_batches_byte_for_byte(case: Case, cuts: list[int], ascii_only: bool) -> None:
    """write_batch writes exactly the lines of write(ComplexEvent): projections, partitions."""
    query, table, _ = prepared(case)
    q = compile_case(query)
    assert jsonl_of_batches(q, pieces(table, cuts), ascii_only) == jsonl_of_objects(
        q, table, ascii_only
    )


@SLOW
@given(cases(full_cel=SUPPORTED_CEL), st.lists(st.integers(0, 40), max_size=3))
def test_arrow_holds_the_complex_events(case: Case, cuts: list[int]) -> None:
    query, table, _ = prepared(case)
    q = compile_case(query)
    rows = [r for rb in q.run_arrow(pieces(table, cuts)) for r in rb.to_pylist()]
    expected = [ce.to_dict() for ce in q.run(table)]
    assert rows == expected  # the struct's fields are the JSON object's keys


def test_query_set_bulk_merges_in_end_order() -> None:
    texts = {
        "pairs": "SELECT * FROM S WHERE A as a; B as b WITHIN 4 EVENTS",
        "runs": "SELECT * FROM S WHERE A as a; B+ as b FILTER b[v > 2] PARTITION BY [k] WITHIN 5 EVENTS",
        "last": "SELECT LAST * FROM S WHERE B as b; A as a",
    }
    rng = np.random.default_rng(3)
    n = 300
    table = pa.table(
        {
            "type": rng.choice(["A", "B", "C"], n).tolist(),
            "v": rng.integers(0, 9, n).tolist(),
            "k": rng.integers(0, 3, n).tolist(),
            "s": rng.choice(["x", "é\"\\", "\u2028"], n).tolist(),
        }
    )
    qs = kleene.compile_many(texts)
    batches = table.to_batches(max_chunksize=37)
    expected = list(qs.matches(table))
    assert {m.query for m in expected} == set(texts)
    assert [m for b in qs.match_batches(batches) for m in b.matches()] == expected
    assert jsonl_of_batches(qs, batches) == jsonl_of_objects(qs, table)
    rows = [r for rb in qs.run_arrow(batches) for r in rb.to_pylist()]
    assert [(r["query"], r["start"], r["end"], r["positions"]) for r in rows] == [
        (m.query, m.start, m.end, list(m.positions)) for m in expected
    ]


def test_out_of_order_input_on_the_bulk_path() -> None:
    """max_delay: rows are reordered by time before evaluation; both paths agree."""
    rows = [
        {"type": "A", "t": 1}, {"type": "B", "t": 3}, {"type": "A", "t": 2},
        {"type": "B", "t": 5}, {"type": "A", "t": 4}, {"type": "B", "t": 9},
    ]
    text = "SELECT * FROM S WHERE A as a; B as b WITHIN 3 seconds"
    q = kleene.compile(text, time_column="t", max_delay="2 seconds")
    table = pa.Table.from_pylist(rows)
    batches = table.to_batches(max_chunksize=2)
    assert bulk_matches(q, batches) == list(q.matches(table))
    assert jsonl_of_batches(q, batches) == jsonl_of_objects(q, table)
    assert len(list(q.matches(table))) > 0


def test_few_events_among_many_rows_render_only_their_rows() -> None:
    """A selective query over large batches: the lines render just the events' rows (not every
    stored row, see EventRows.rendered), byte for byte what the readable path writes, with
    SELECT's projection and PARTITION BY too."""
    from kleene import results

    n = 4000
    rows = [
        {"type": "SELL" if i % 2 else "BUY", "name": f"n{i % 7}", "price": float(i % 1000), "t": i}
        for i in range(n)
    ]
    table = pa.Table.from_pylist(rows)
    for text in (
        "SELECT * FROM S WHERE SELL as a ; BUY as b FILTER a[price > 996] AND b[price < 2] WITHIN 4 EVENTS",
        "SELECT a[name] FROM S WHERE SELL as a ; BUY as b FILTER a[price > 996] WITHIN 3 EVENTS",
        "SELECT * FROM S WHERE SELL as a ; SELL as b FILTER a[price > 990] PARTITION BY [name] WITHIN 20 EVENTS",
    ):
        q = kleene.compile(text)
        batches = table.to_batches(max_chunksize=1000)
        found = list(q.match_batches(batches, events=True))
        assert found and all(
            len(b.positions) * results.FEW_ROWS < len(b.events) for b in found  # type: ignore[arg-type]
        ), "the case must take the few-rows path"
        assert jsonl_of_batches(q, batches) == jsonl_of_objects(q, table)


def test_values_render_as_dumps_does() -> None:
    """Every column type renders as json.dumps (via kleene.io.json_text.dumps) renders it."""
    table = pa.table(
        {
            "i": pa.array([1, None, -(2**63)], pa.int64()),
            "u": pa.array([0, 2**64 - 1, None], pa.uint64()),
            "f": pa.array([1.0, float("nan"), float("inf")]),
            "g": pa.array([1e16, None, -0.0], pa.float64()),
            "h": pa.array([0.1, 2.5, None], pa.float32()),
            "b": pa.array([True, None, False]),
            "s": pa.array(["plain", "quote\" back\\ tab\t é \u2028 😀", None]),
            "d": pa.array(["x", "y", "x"]).dictionary_encode(),
            "ts": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5), None, dt.datetime(1970, 1, 1)]),
            "day": pa.array([dt.date(2024, 2, 29), None, dt.date(1, 1, 1)]),
            "dec": pa.array([Decimal("1.10"), None, Decimal("-3")], pa.decimal128(5, 2)),
            "bin": pa.array([b"\x00\xff", None, b""]),
            "lst": pa.array([[1, 2], None, []]),
            "n": pa.nulls(3),
        }
    )
    for ascii_only in (False, True):
        expected = [dumps(row, ensure_ascii=ascii_only) for row in table.to_pylist()]
        assert json_rows(table, ensure_ascii=ascii_only).to_pylist() == expected
        for name in table.column_names:
            col = table.column(name)
            assert json_values(col, ensure_ascii=ascii_only).to_pylist() == [
                dumps(v, ensure_ascii=ascii_only) for v in col.to_pylist()
            ]
    for line in expected:
        json.loads(line)  # strict JSON: NaN and infinities became null


def test_columns_walk_gives_what_the_readable_walk_gives() -> None:
    """A hand-built tECS (Figure 4 style): order, window pruning and limit of both walks agree."""
    runs = [(OUTPUT, t, t, (BOTTOM, t, t)) for t in (0, 1, 2)]  # runs started (and marked) at 0, 1, 2
    o1 = (OUTPUT, 1, 3, runs[1])
    o0 = (OUTPUT, 0, 4, runs[0])
    u = [UNION, 2, runs[2], [UNION, 1, o1, o0]]
    top = (OUTPUT, 2, 6, (OUTPUT, 2, 5, u))
    for tau in (0, 1, 2, 3):
        for limit in (1, 2, 3, 10):
            listed: list[Any] = []
            n1 = enumerate_node(top, tau, listed, limit, 7, ("k",))
            cols = Columns()
            n2 = enumerate_node(top, tau, cols, limit, 7, ("k",))
            assert n1 == n2 == len(listed)
            batch = MatchBatch.from_columns(cols)
            assert [tuple(m) for m in batch.matches()] == listed
    listed = []
    enumerate_node(top, 0, listed, 10, 7)
    assert [(s, p) for s, _, p, _ in listed] == [(2, (2, 5, 6)), (1, (1, 3, 5, 6)), (0, (0, 4, 5, 6))]


def test_ragged_take() -> None:
    flat = np.array([10, 11, 20, 30, 31, 32])
    starts = np.array([0, 2, 3])
    lengths = np.array([2, 1, 3])
    offsets, values = ragged_take(starts, lengths, flat, np.array([2, 0, 1]))
    assert offsets.tolist() == [0, 3, 5, 6]
    assert values.tolist() == [30, 31, 32, 10, 11, 20]


def test_cli_writes_parquet_and_the_same_jsonl(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 2000
    pq.write_table(
        pa.table(
            {
                "type": rng.choice(["SELL", "BUY"], n).tolist(),
                "price": rng.uniform(0, 200, n).round(2).tolist(),
                "name": rng.choice(["MSFT", "INTC"], n).tolist(),
            }
        ),
        tmp_path / "in.parquet",
    )
    query = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] PARTITION BY [name] WITHIN 10 EVENTS"
    args = ["run", query, "--input", str(tmp_path / "in.parquet"), "--no-progress", "--batch-size", "300"]
    assert main([*args, "--output", str(tmp_path / "out.parquet")]) == 0
    assert main([*args, "--output", str(tmp_path / "out.jsonl")]) == 0
    assert main([*args, "--output", str(tmp_path / "out.bin"), "--output-format", "arrow"]) == 0
    table = pq.read_table(tmp_path / "out.parquet")
    q = kleene.compile(query)
    expected = [ce.to_dict() for ce in q.run(pq.read_table(tmp_path / "in.parquet"))]
    assert len(expected) > 100
    got = table.to_pylist()
    assert got == expected
    assert set(got[0]["partition"]) == {"name"}
    with pa.ipc.open_file(tmp_path / "out.bin") as f:
        assert f.read_all().equals(table)
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == expected
    assert lines == [dumps(e) for e in expected]


def test_cli_parquet_without_complex_events(tmp_path: Path) -> None:
    pq.write_table(pa.table({"type": ["A", "A"]}), tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    assert main(["run", "SELECT * FROM S WHERE A as a; B as b", "--input",
                 str(tmp_path / "in.parquet"), "--output", str(out), "--no-progress"]) == 0
    table = pq.read_table(out)
    assert table.num_rows == 0 and table.column_names == ["start", "end", "positions"]


def test_parquet_needs_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq.write_table(pa.table({"type": ["A", "B"]}), tmp_path / "in.parquet")
    code = main(["run", "SELECT * FROM S WHERE A as a; B as b", "--input",
                 str(tmp_path / "in.parquet"), "--output-format", "parquet", "--no-progress"])
    assert code == 2
    assert "--output FILE" in capsys.readouterr().err


def test_float_repr_matches_python() -> None:
    values = [0.1, 1e16, 1e-7, 123456789.0, -0.0, 5e-324, 1.7976931348623157e308]
    assert json_values(pa.array(values)).to_pylist() == [repr(v) for v in values]
    assert all(math.isfinite(v) for v in values)


def test_benchmark_runner_counts_and_dumps_with_the_bulk_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """benchmarks/runner.py's kleene side (match_batches) = Query.matches, for the CORE comparison."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    from benchmarks import datasets, runner
    from benchmarks.workloads import CORE_ISSUE

    path = tmp_path / "synthetic.parquet"
    pq.write_table(datasets.synthetic(3000, 5), path)
    monkeypatch.setattr(runner, "_DUMP", True)
    events, count, _, found, _ = runner.run_kleene(CORE_ISSUE["C1"], path, 700)
    expected = [(m.start, m.end, *m.positions) for m in kleene.compile(CORE_ISSUE["C1"]).matches(pq.read_table(path))]
    assert events == 3000 and count == len(expected) > 1000
    assert found == expected


def test_parquet_never_drops_fields_silently(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Several queries whose events differ in shape: a clear error, never a lossy cast."""
    (tmp_path / "in.csv").write_text("type,v,s\nA,1,x\nB,2,y\nA,3,z\nB,4,w\nC,5,u\nC,6,t\n")
    out = tmp_path / "out.parquet"
    args = ["run", "SELECT a[v] FROM S WHERE A as a; B as b", "SELECT * FROM S WHERE C as c",
            "--input", str(tmp_path / "in.csv"), "--batch-size", "2", "--no-progress"]
    assert main([*args, "--output", str(out)]) == 1
    assert "different shapes" in capsys.readouterr().err
    assert not out.exists()
    # Same shapes (a null field added to a later batch is lossless): fine.
    args[1] = "SELECT * FROM S WHERE A as a; B as b"
    assert main([*args, "--output", str(out)]) == 0
    rows = pq.read_table(out).to_pylist()
    assert [r["query"] for r in rows] == ["q1", "q1", "q1", "q2", "q2"]
    assert rows[-1]["events"] == [{"type": "C", "v": 6, "s": "t"}]


def test_jsonl_partition_is_an_object_keyed_by_the_attributes(tmp_path: Path) -> None:
    """``"partition": {"name": "MSFT", "desk": 1}``, like Parquet's struct: the bulk layout
    (compiled and pure), the readable path, the CLI, and several queries with different keys."""
    rows = [
        {"type": "SELL", "name": "MSFT", "desk": 1, "price": 101.0},
        {"type": "SELL", "name": "INTC", "desk": 2, "price": 120.0},
        {"type": "BUY", "name": "MSFT", "desk": 1, "price": 99.0},
        {"type": "BUY", "name": "INTC", "desk": 2, "price": 3.0},
    ]
    query = "SELECT * FROM S WHERE SELL as a; BUY as b PARTITION BY [name, desk]"
    q = kleene.compile(query)
    bulk = jsonl_of_batches(q, rows).splitlines()
    assert bulk == jsonl_of_objects(q, rows).splitlines()
    assert [json.loads(line)["partition"] for line in bulk] == [
        {"name": "MSFT", "desk": 1}, {"name": "INTC", "desk": 2}
    ]
    assert bulk[0].endswith('], "partition": {"name": "MSFT", "desk": 1}}')
    qs = kleene.compile_many(
        {"both": query, "name": query.replace(", desk]", "]"), "none": query.split(" PARTITION")[0]}
    )
    lines = [json.loads(line) for line in jsonl_of_batches(qs, rows).splitlines()]
    assert [(d["query"], d.get("partition")) for d in lines if d["end"] == 2] == [
        ("both", {"name": "MSFT", "desk": 1}), ("name", {"name": "MSFT"}), ("none", None), ("none", None)
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    assert main(["run", query, "--input", str(source), "--output", str(out), "--no-progress"]) == 0
    assert out.read_text().splitlines() == bulk


PAIR = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] AND b[price < a.price] WITHIN 5 EVENTS"


def test_a_file_gets_its_batches_written_behind_with_the_same_bytes(tmp_path: Path) -> None:
    """To a file it opened, JsonlWriter lays each batch's lines out and writes them in a thread
    (kleene.io._jsonl), while the next batch is evaluated: the same bytes as the writer that
    writes in the caller (a stream given to it), and an error of that thread comes out of the
    writer's next call."""
    from kleene.io import jsonl_bulk

    table = pa.table({"type": ["SELL", "BUY", "SELL", "BUY", "BUY"] * 400, "price": [120.0, 40.0, 150.5, 99.0, 1e-7] * 400})
    batches = table.to_batches(max_chunksize=300)
    query = kleene.compile(PAIR)
    path, given_stream = tmp_path / "out.jsonl", io.StringIO()
    behind, inline = JsonlWriter(path), JsonlWriter(given_stream)
    for found in query.match_batches(batches, events=True):
        behind.write_batch(found)
        inline.write_batch(found)
    behind.close()
    inline.flush()
    compiled = jsonl_bulk._jsonl is not None
    assert (behind.laid_out_behind >= 2) == compiled and behind.count > 1000
    assert inline.laid_out_behind == 0
    assert path.read_text() == given_stream.getvalue()
    if compiled and Path("/dev/full").exists():  # every write fails there: ENOSPC
        full = JsonlWriter("/dev/full")
        with pytest.raises(OSError, match="No space left"):
            try:
                for found in query.match_batches(batches, events=True):
                    full.write_batch(found)
            finally:
                full.close()
        assert full.laid_out_behind >= 1
        full.close()  # again, as kleene run's abort does after a failed commit: nothing to do


def test_a_signal_while_the_writers_thread_starts_leaves_nothing_to_join(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM (kleene.cli's Terminated) or Ctrl-C raised inside ``Thread.start``, before the
    writer's thread started: the writer keeps no thread, so the abort's ``close`` does not fail
    with "cannot join thread before it is started" (the status would be 1, not 143: it happened
    in tests/cli/test_signals.py about once in four runs)."""
    import threading

    from kleene.io import jsonl_bulk

    if jsonl_bulk._jsonl is None:
        pytest.skip("the lines are laid out in a thread only by the compiled twin")
    table = pa.table({"type": ["SELL", "BUY"] * 50, "price": [120.0, 40.0] * 50})
    found = next(iter(kleene.compile(PAIR).match_batches(table.to_batches(), events=True)))
    started = threading.Thread.start

    def interrupted(self: threading.Thread) -> None:
        if self.name == "kleene-jsonl":
            raise KeyboardInterrupt
        started(self)

    writer = JsonlWriter(tmp_path / "out.jsonl")
    monkeypatch.setattr(threading.Thread, "start", interrupted)
    with pytest.raises(KeyboardInterrupt):
        writer.write_batch(found)
    monkeypatch.undo()
    writer.close()  # as the abort does
    assert writer.laid_out_behind == 0


def test_large_batches_render_their_float_columns_in_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """json_rows renders the floating-point columns of a large batch in a thread while it renders
    the others: the rows are those of dumps, and those of the serial rendering."""
    from kleene.io import jsonl_bulk

    n = jsonl_bulk.PARALLEL_ROWS + 5
    prices = [1.0, float("nan"), None, 1e16, 0.1, -2.5e-7, float("inf"), 123.456][:8] * (n // 8 + 1)
    batch = pa.record_batch({
        "type": pa.array(["SELL", "BUY", None, "é"] * (n // 4 + 1))[:n],
        "price": pa.array(prices[:n], pa.float64()),
        "volume": pa.array(range(n), pa.int64()),
        "ratio": pa.array([0.5, None] * (n // 2 + 1), pa.float32())[:n],
    })
    threads: list[tuple[str, str]] = []
    render = jsonl_bulk.json_values

    def spy(arr: Any, **kwargs: Any) -> pa.Array:
        threads.append((str(arr.type), threading.current_thread().name))
        return render(arr, **kwargs)

    monkeypatch.setattr(jsonl_bulk, "json_values", spy)
    parallel = json_rows(batch).to_pylist()
    assert sorted(threads) == sorted([("double", "kleene-json-floats"), ("float", "kleene-json-floats"),
                                      ("string", "MainThread"), ("int64", "MainThread")])
    monkeypatch.setattr(jsonl_bulk, "PARALLEL_ROWS", n + 1)
    threads.clear()
    assert json_rows(batch).to_pylist() == parallel
    assert {name for _, name in threads} == {"MainThread"}
    assert parallel == [dumps(row) for row in batch.to_pylist()]
