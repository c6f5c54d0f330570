"""Input and output around the engine: readers, time columns, the bad-row policy, the writer.

These do not need the engine: they pin down the promises the engine and the
CLI build on (one schema per file, rows keep their input position, malformed
input names its line, times become int64 nanoseconds, bad rows are counted
and never silently dropped, output is always valid JSON).
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import math
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kleene.io import textfiles
from kleene.io.badrows import BadRowPolicy
from kleene.io.json_text import dumps, jsonable
from kleene.io.readers import count_rows, detect_format, read_batches, read_table
from kleene.io.reorder import UNSORTED_HINT
from kleene.io.timecol import bad_reason, to_nanos
from kleene.io.writers import JsonlWriter, write_jsonl
from kleene.language.errors import DataError

ROWS = [
    {"type": "BUY", "name": "MSFT", "price": 101.5, "volume": 100},
    {"type": "SELL", "name": "INTC", "price": 42.0, "volume": 250},
    {"type": "BUY", "name": "AAPL", "price": 170.25, "volume": 75},
]
S = 1_000_000_000  # nanoseconds per second


def write_csv(path: Path, header: str, lines: list[str]) -> Path:
    path.write_text(header + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_jsonl_rows(path: Path, rows: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def table_of(path: Path, **kw: object) -> pa.Table:
    batches = list(read_batches(path, **kw))  # type: ignore[arg-type]
    assert len({b.schema for b in batches}) <= 1, "every batch of a file has one schema"
    return pa.Table.from_batches(batches)


# ------------------------------------------------------------------ formats
class TestFormats:
    def test_csv_infers_types(self, tmp_path: Path) -> None:
        p = write_csv(tmp_path / "s.csv", "type,name,price,volume", [",".join(map(str, r.values())) for r in ROWS])
        t = table_of(p)
        assert t.schema.field("price").type == pa.float64()
        assert t.schema.field("volume").type == pa.int64()
        assert t.to_pylist() == ROWS

    def test_jsonl_and_ndjson(self, tmp_path: Path) -> None:
        for name in ("s.jsonl", "s.ndjson", "s.json"):
            p = write_jsonl_rows(tmp_path / name, ROWS)
            assert table_of(p).to_pylist() == ROWS

    def test_parquet(self, tmp_path: Path) -> None:
        p = tmp_path / "s.parquet"
        pq.write_table(pa.Table.from_pylist(ROWS), p)
        assert table_of(p).to_pylist() == ROWS
        assert count_rows(p) == 3

    def test_format_overrides_extension(self, tmp_path: Path) -> None:
        p = write_jsonl_rows(tmp_path / "events.txt", ROWS)
        with pytest.raises(DataError, match="--format"):
            read_batches(p)
        assert table_of(p, format="jsonl").to_pylist() == ROWS
        assert detect_format("x.csv.gz") == "csv"
        assert detect_format("x.data", "ndjson") == "jsonl"
        with pytest.raises(DataError, match="unknown input format"):
            detect_format("x.csv", "xml")

    def test_missing_file_fails_before_iteration(self, tmp_path: Path) -> None:
        with pytest.raises(DataError, match="does not exist"):
            read_batches(tmp_path / "nope.csv")

    def test_gzip_text(self, tmp_path: Path) -> None:
        p = tmp_path / "s.jsonl.gz"
        with gzip.open(p, "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in ROWS)
        assert table_of(p).to_pylist() == ROWS
        q = tmp_path / "s.csv.gz"
        with gzip.open(q, "wt") as f:
            f.write("a,b\n1,x\n2,y\n")
        assert table_of(q).to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]

    def test_json_array_file(self, tmp_path: Path) -> None:
        p = tmp_path / "s.json"
        p.write_text(json.dumps(ROWS, indent=2))
        assert table_of(p).to_pylist() == ROWS

    def test_batches_are_bounded_and_keep_order(self, tmp_path: Path) -> None:
        lines = [f"{i},{i * 0.5}" for i in range(1000)]
        for p in (
            write_csv(tmp_path / "n.csv", "i,x", lines),
            write_jsonl_rows(tmp_path / "n.jsonl", [{"i": i, "x": i * 0.5} for i in range(1000)]),
        ):
            batches = list(read_batches(p, batch_size=64))
            assert all(0 < b.num_rows <= 64 for b in batches)
            assert pa.Table.from_batches(batches).column("i").to_pylist() == list(range(1000))
        pq.write_table(pa.table({"i": list(range(1000))}), tmp_path / "n.parquet")
        assert all(b.num_rows <= 64 for b in read_batches(tmp_path / "n.parquet", batch_size=64))

    def test_blank_csv_lines_are_not_rows(self, tmp_path: Path) -> None:
        p = write_csv(tmp_path / "b.csv", "a", ["1", "", "2"])
        assert table_of(p).column("a").to_pylist() == [1, 2]

    def test_count_rows(self, tmp_path: Path) -> None:
        assert count_rows(write_csv(tmp_path / "c.csv", "a", ["1", "2", "3"])) == 3
        assert count_rows(write_jsonl_rows(tmp_path / "c.jsonl", [{"a": 1}, {"a": 2}])) == 2
        assert count_rows(tmp_path / "c.unknown") is None

    def test_read_table(self, tmp_path: Path) -> None:
        assert read_table(write_jsonl_rows(tmp_path / "s.jsonl", ROWS)).num_rows == 3


# --------------------------------------------------------------- mixed types
class TestMixedTypes:
    def test_csv_column_mixed_in_a_later_block_becomes_string(self, tmp_path: Path) -> None:
        # Arrow fixes types from the first block; the bad value sits far beyond it.
        lines = [f"{i},{i}.5" for i in range(30_000)] + ["30000,n/a"]
        p = write_csv(tmp_path / "m.csv", "i,price", lines)
        t = table_of(p, batch_size=4096)
        assert t.schema.field("i").type == pa.int64()
        assert t.schema.field("price").type == pa.string()
        assert t.column("price")[0].as_py() == "0.5"
        assert t.column("price")[30_000].as_py() == "n/a"
        assert t.num_rows == 30_001

    def test_csv_int_then_float_widens_to_float(self, tmp_path: Path) -> None:
        lines = [str(i) for i in range(30_000)] + ["1.25"]
        t = table_of(write_csv(tmp_path / "f.csv", "x", lines))
        assert t.schema.field("x").type == pa.float64()
        assert t.column("x")[30_000].as_py() == 1.25

    def test_csv_null_first_block_then_values(self, tmp_path: Path) -> None:
        lines = [f"{i}," for i in range(30_000)] + ["30000,7"]
        t = table_of(write_csv(tmp_path / "z.csv", "i,late", lines))
        assert t.schema.field("late").type == pa.int64()
        assert t.column("late").null_count == 30_000

    def test_csv_second_pass_for_large_files(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(textfiles, "BUFFER_BYTES", 1)  # force the re-read path
        lines = [f"{i},{i}" for i in range(30_000)] + ["30000,x"]
        t = table_of(write_csv(tmp_path / "big.csv", "i,v", lines), batch_size=5000)
        assert t.schema.field("v").type == pa.string()
        assert t.num_rows == 30_001

    def test_csv_read_whole_or_streamed_gives_the_same_table(self, tmp_path: Path) -> None:
        """A small plain file is read whole (blocks parsed in parallel); the same file gzipped is
        streamed block by block: same types (widened alike), same rows, same batch sizes."""
        lines = [f"{i},{i},name{i % 5}" for i in range(30_000)] + ["30000,1.5,x", "30001,n/a,"]
        plain = write_csv(tmp_path / "w.csv", "i,v,s", lines)
        packed = tmp_path / "w.csv.gz"
        packed.write_bytes(gzip.compress(plain.read_bytes()))
        whole = list(read_batches(plain, batch_size=7000))
        streamed = list(read_batches(packed, batch_size=7000))
        assert [b.num_rows for b in whole] == [7000] * 4 + [2002]
        assert pa.Table.from_batches(whole).equals(pa.Table.from_batches(streamed).cast(whole[0].schema))
        assert pa.Table.from_batches(streamed).schema == whole[0].schema
        assert whole[0].schema.field("v").type == pa.string()

    def test_csv_nulls_and_nan(self, tmp_path: Path) -> None:
        t = table_of(write_csv(tmp_path / "n.csv", "name,price", ["MSFT,1.5", ",NaN", "NA,"]))
        assert t.column("name").to_pylist() == ["MSFT", None, "NA"]  # "NA" may be a real name
        price = t.column("price").to_pylist()
        assert price[0] == 1.5 and math.isnan(price[1]) and price[2] is None

    def test_jsonl_mixed_types_do_not_crash(self, tmp_path: Path) -> None:
        rows = [
            {"type": "BUY", "price": 1},
            {"type": "SELL", "price": 2.5},
            {"type": "BUY", "price": "n/a", "extra": True},
            {"type": "BUY"},
        ]
        t = table_of(write_jsonl_rows(tmp_path / "m.jsonl", rows))
        assert t.schema.field("price").type == pa.string()
        assert t.column("price").to_pylist() == ["1", "2.5", "n/a", None]
        assert t.column("extra").to_pylist() == [None, None, True, None]

    def test_jsonl_types_settled_across_chunks(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        ints: list[dict[str, object]] = [{"x": i} for i in range(100)]
        rows = ints + [{"x": 0.5}] + ints
        p = write_jsonl_rows(tmp_path / "c.jsonl", rows)
        for limit in (textfiles.BUFFER_BYTES, 1):  # buffered first pass, then forced second pass
            monkeypatch.setattr(textfiles, "BUFFER_BYTES", limit)
            t = table_of(p, batch_size=16)
            assert t.schema.field("x").type == pa.float64()
            assert t.column("x")[100].as_py() == 0.5 and t.num_rows == 201
            assert t.column("x")[101].as_py() == 0.0

    def test_jsonl_mixed_across_chunks_second_pass(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(textfiles, "BUFFER_BYTES", 1)
        rows: list[dict[str, object]] = [{"t": "2024-01-01T00:00:00", "v": i} for i in range(50)] + [{"t": "soon", "v": "x"}]
        t = table_of(write_jsonl_rows(tmp_path / "c.jsonl", rows), batch_size=10)
        assert t.schema.field("t").type == pa.string()
        assert t.column("t")[0].as_py() == "2024-01-01T00:00:00"  # the original text, not a re-rendering
        assert t.column("v").to_pylist()[-2:] == ["49", "x"]

    def test_jsonl_nan_kept_as_float(self, tmp_path: Path) -> None:
        p = tmp_path / "n.jsonl"
        p.write_text('{"p": 1.5}\n{"p": NaN}\n')
        values = table_of(p).column("p").to_pylist()
        assert values[0] == 1.5 and math.isnan(values[1])


# --------------------------------------------------------------- malformed
class TestMalformed:
    def test_malformed_jsonl_line_names_line_and_row(self, tmp_path: Path) -> None:
        p = tmp_path / "bad.jsonl"
        p.write_text('{"a": 1}\n\n{"a": 2}\n{"a": \n{"a": 4}\n')
        with pytest.raises(DataError, match="line 4") as err:
            list(read_batches(p))
        assert err.value.row == 2  # the blank line is not a row

    def test_malformed_jsonl_line_in_a_later_chunk(self, tmp_path: Path) -> None:
        p = tmp_path / "bad.jsonl"
        p.write_text("".join(f'{{"a": {i}}}\n' for i in range(100)) + "{oops}\n")
        with pytest.raises(DataError, match="line 101") as err:
            list(read_batches(p, batch_size=7))
        assert err.value.row == 100

    def test_jsonl_line_that_is_not_an_object(self, tmp_path: Path) -> None:
        p = tmp_path / "bad.jsonl"
        p.write_text('{"a": 1}\n[1, 2]\n')
        with pytest.raises(DataError, match="line 2.*not an object"):
            list(read_batches(p))

    def test_malformed_csv_row(self, tmp_path: Path) -> None:
        p = write_csv(tmp_path / "bad.csv", "a,b", ["1,2", "", "3,4,5", "6,7"])
        with pytest.raises(DataError, match="line 4") as err:
            list(read_batches(p))
        assert err.value.row == 1  # the blank line is not a row, as for Arrow

    def test_corrupt_parquet(self, tmp_path: Path) -> None:
        p = tmp_path / "bad.parquet"
        p.write_bytes(b"not parquet at all")
        with pytest.raises(DataError, match="Parquet"):
            list(read_batches(p))


# -------------------------------------------------------------------- time
class TestTime:
    def test_arrow_timestamps_any_unit_and_zone(self) -> None:
        base = dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.UTC)
        expected = int(base.timestamp()) * S
        for unit in ("s", "ms", "us", "ns"):
            for tz in (None, "UTC", "Europe/Paris"):
                arr = pa.array([base, None], pa.timestamp(unit, tz=tz))
                nanos, bad = to_nanos(arr)
                assert nanos[0] == expected and bad.tolist() == [False, True]

    def test_dates_and_chunked(self) -> None:
        nanos, bad = to_nanos(pa.chunked_array([pa.array([dt.date(1970, 1, 2)]), pa.array([None], pa.date32())]))
        assert nanos[0] == 86_400 * S and bad.tolist() == [False, True]

    def test_numbers_in_each_unit(self) -> None:
        assert to_nanos(pa.array([2]), "s").values.tolist() == [2 * S]
        assert to_nanos(pa.array([2]), "ms").values.tolist() == [2_000_000]
        assert to_nanos(pa.array([2]), "us").values.tolist() == [2_000]
        assert to_nanos(pa.array([2]), "ns").values.tolist() == [2]
        assert to_nanos(pa.array([1.5]), "s").values.tolist() == [1_500_000_000]
        assert to_nanos(pa.array([1.25]), "ms").values.tolist() == [1_250_000]

    def test_float_seconds_keep_precision(self) -> None:
        # 1.7e9 s * 1e9 exceeds float64's integer precision; the split keeps it.
        nanos = to_nanos(pa.array([1_700_000_000.5]), "s").values
        assert nanos[0] == 1_700_000_000_500_000_000

    def test_iso_strings(self) -> None:
        strings = [
            "2024-03-01T09:30:00",
            "2024-03-01 09:30:00.123456789",
            "2024-03-01T09:30:00Z",
            "2024-03-01T10:30:00+01:00",
            "2024-03-01",
            "20240301T093000",  # basic format: not Arrow's, Python parses it
        ]
        nanos, bad = to_nanos(pa.array(strings))
        t0 = int(dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.UTC).timestamp()) * S
        assert not bad.any()
        assert nanos.tolist() == [t0, t0 + 123_456_789, t0, t0, t0 - (9 * 3600 + 30 * 60) * S, t0]

    def test_numeric_strings_use_the_unit(self) -> None:
        nanos, bad = to_nanos(pa.array(["1500", "2.5"]), "ms")
        assert nanos.tolist() == [1_500_000_000, 2_500_000] and not bad.any()

    def test_bad_values_are_masked_not_raised(self) -> None:
        column = pa.array(["2024-03-01T09:30:00", "soon", None, "2024-13-45T00:00:00", "nan"] + ["2024-03-01T09:30:01"] * 100)
        nanos, bad = to_nanos(column)
        assert np.flatnonzero(bad).tolist() == [1, 2, 3, 4]
        assert nanos[5] - nanos[0] == S
        assert bad_reason(column, 2) == "null value"
        assert bad_reason(column, 1) == "unreadable time"

    def test_bad_numbers(self) -> None:
        nanos, bad = to_nanos(pa.array([1.0, float("nan"), float("inf"), None, 1e300]))
        assert bad.tolist() == [False, True, True, True, True]
        _, bad = to_nanos(pa.array([2**62, 1]), "s")  # overflows int64 nanoseconds
        assert bad.tolist() == [True, False]

    def test_unsupported_column_type(self) -> None:
        with pytest.raises(DataError, match="time column"):
            to_nanos(pa.array([True, False]), name="flag")
        with pytest.raises(ValueError, match="unit"):
            to_nanos(pa.array([1]), "minutes")

    def test_csv_iso_column_end_to_end(self, tmp_path: Path) -> None:
        p = write_csv(tmp_path / "t.csv", "time", ["2024-03-01T09:30:00Z", "2024-03-01T09:30:02Z"])
        nanos, bad = to_nanos(table_of(p).column("time"))
        assert nanos[1] - nanos[0] == 2 * S and not bad.any()


# ---------------------------------------------------------------- bad rows
class TestBadRows:
    def test_error_mode_raises_naming_row_and_column(self) -> None:
        policy = BadRowPolicy("error")
        with pytest.raises(DataError) as err:
            policy.handle(7, "price", "null value", {"price": None})
        assert err.value.row == 7 and err.value.column == "price"
        assert "row 7" in str(err.value) and "'price'" in str(err.value)

    def test_skip_counts_and_summarises(self) -> None:
        policy = BadRowPolicy("skip")
        policy.handle(1, "price", "null value")
        policy.handle(4, "price", "null value")
        policy.handle(9, "time", "timestamp goes backwards")
        assert policy.count == 3
        assert policy.summary() == (
            "3 rows set aside: 2 null value in 'price', 1 timestamp goes backwards in 'time'" + UNSORTED_HINT
        )

    def test_same_row_twice_counts_once(self) -> None:
        policy = BadRowPolicy("skip")
        policy.handle(3, "a", "null value")
        policy.handle(3, "b", "null value")
        assert policy.count == 1 and policy.records == 2
        assert policy.summary().startswith("1 row set aside: ")

    def test_quarantine_file(self, tmp_path: Path) -> None:
        path = tmp_path / "q.jsonl"
        path.write_text("stale line from an earlier run\n")
        with BadRowPolicy("quarantine", path) as policy:
            policy.handle(2, "price", "NaN value", {"price": float("nan"), "when": dt.datetime(2024, 1, 1)})
            policy.handle(5, None, "missing attribute", None)
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert records == [
            {"row": 2, "column": "price", "reason": "NaN value", "values": {"price": None, "when": "2024-01-01T00:00:00"}},
            {"row": 5, "column": None, "reason": "missing attribute", "values": None},
        ]
        assert str(path) in policy.summary()

    def test_quarantine_to_stream_and_validation(self) -> None:
        buf = io.StringIO()
        policy = BadRowPolicy("quarantine", buf)
        policy.handle(0, "x", "null value", {"x": None})
        policy.close()
        assert json.loads(buf.getvalue())["row"] == 0
        with pytest.raises(ValueError):
            BadRowPolicy("quarantine")
        with pytest.raises(ValueError):
            BadRowPolicy("drop")
        assert BadRowPolicy.coerce("skip").mode == "skip"
        assert BadRowPolicy().summary() == "no rows set aside"


# ------------------------------------------------------------------ writer
class _Event:
    def __init__(self, d: dict[str, object]) -> None:
        self.d = d

    def to_dict(self) -> dict[str, object]:
        return self.d


class TestWriter:
    def test_values_become_strict_json(self) -> None:
        value = {
            "nan": float("nan"),
            "inf": float("-inf"),
            "np_nan": np.float64("nan"),
            "np_int": np.int64(5),
            "np_bool": np.bool_(True),
            "arr": np.array([1.0, np.nan]),
            "ts": dt.datetime(2024, 3, 1, 9, 30, tzinfo=dt.UTC),
            "date": dt.date(2024, 3, 1),
            "bytes": b"\x00\xff",
            "dec": Decimal("1.10"),
            "nested": [{"x": float("nan")}],
            (1, 2): "tuple key",
        }
        out = json.loads(dumps(value))  # json.loads would accept NaN; check the text too
        assert "NaN" not in dumps(value) and "Infinity" not in dumps(value)
        assert out == {
            "nan": None,
            "inf": None,
            "np_nan": None,
            "np_int": 5,
            "np_bool": True,
            "arr": [1.0, None],
            "ts": "2024-03-01T09:30:00+00:00",
            "date": "2024-03-01",
            "bytes": "AP8=",
            "dec": "1.10",
            "nested": [{"x": None}],
            "[1, 2]": "tuple key",
        }

    def test_pandas_and_arrow_timestamps(self) -> None:
        pd = pytest.importorskip("pandas")
        ts = pa.array([1_700_000_000_123_456_789], pa.timestamp("ns", "UTC")).to_pylist()[0]
        assert json.loads(dumps({"t": ts}))["t"].startswith("2023-11-14T22:13:20.123456789")
        assert json.loads(dumps({"t": pd.NaT})) == {"t": None}

    def test_jsonable_plain(self) -> None:
        assert jsonable({"a": (1, 2.5, None, "x")}) == {"a": [1, 2.5, None, "x"]}

    def test_writer_to_path_and_stream(self, tmp_path: Path) -> None:
        events = [_Event({"start": i, "end": i, "positions": [i], "events": []}) for i in range(1500)]
        path = tmp_path / "out.jsonl"
        assert write_jsonl(events, path) == 1500
        lines = path.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 1500 and json.loads(lines[-1])["end"] == 1499
        buf = io.StringIO()
        with JsonlWriter(buf) as w:
            w.write({"name": "Zürich"})
        assert json.loads(buf.getvalue()) == {"name": "Zürich"}

    def test_writer_to_stdout(self, capsys: pytest.CaptureFixture[str]) -> None:
        with JsonlWriter("-") as w:
            w.write({"a": 1})
        assert capsys.readouterr().out == '{"a": 1}\n'


def test_skipped_rows_out_of_time_order_say_how_to_keep_them() -> None:
    from kleene.io.reorder import BACKWARDS

    policy = BadRowPolicy("skip")
    policy.handle(3, "price", "null value")
    assert "--sort" not in policy.summary()
    policy.handle(4, "time", BACKWARDS)
    assert policy.summary() == (
        "2 rows set aside: 1 null value in 'price', 1 timestamp goes backwards in 'time'; the input "
        "is not in time order: --sort sorts it by time first (sort=True in Python), --max-delay "
        "DURATION accepts disorder up to DURATION (max_delay=)"
    )
