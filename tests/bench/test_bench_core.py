"""The benchmark suite against CORE (``benchmarks/``): generators, workloads, output parser, harness.

* The generators are deterministic per seed and have the documented schemas and distributions.
* Every workload query parses and runs on kleene (both protocols), agrees with the brute-force
  oracle on small streams that contain matches (planted pattern events among generated ones),
  and the long sequences (n = 12, 24, where brute force is out of reach) find exactly the
  planted complex event.
* The CORE output parser reads real CORE output (``tests/data/core_output_*.txt``, printed by
  ``pycer`` 0.1.6's ``PyOfflineServer.get_output()``).
* Differential: kleene and CORE (``.venv-core``, created by ``make venv-core``, a prerequisite
  of ``make test``) on small generated data, through the harness's runner: same sets of
  complex events.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import core_output, datasets, workloads  # noqa: E402
from benchmarks.shrink import Judge, kleene_set, renumber, shrink  # noqa: E402
from benchmarks.suite import Runner, compare, limit_of, read_dump  # noqa: E402

import kleene  # noqa: E402
from kleene.language.parser import parse_query  # noqa: E402
from kleene.reference.oracle import evaluate  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data"
EVERY = workloads.all_workloads()


# --------------------------------------------------------------------------- generators


@pytest.mark.parametrize("name", sorted(datasets.GENERATORS))
def test_generators_are_deterministic_per_seed(name: str) -> None:
    make = datasets.GENERATORS[name]
    a, b, c = make(3000, 0), make(3000, 0), make(3000, 1)
    assert a.equals(b)
    assert not a.equals(c)
    assert a.num_rows == 3000
    assert a.column_names[:2] == ["type", "id"]
    assert a.column("id").to_pylist() == list(range(3000))


def test_stock_schema_and_distributions() -> None:
    t = datasets.stock(datasets.STOCK_DAY_EVENTS, 0)
    assert t.schema == pa.schema(
        [("type", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("price", pa.float64()),
         ("volume", pa.int64()), ("stock_time", pa.int64())]
    )
    time = t.column("stock_time").to_numpy()
    assert np.all(np.diff(time) >= 0)
    # one trading day: 09:30 to 16:00, in milliseconds
    assert time[0] >= datasets.STOCK_OPEN_MS and time[-1] < datasets.STOCK_OPEN_MS + datasets.STOCK_DAY_MS
    counts = {d["values"]: d["counts"] for d in pc.value_counts(t.column("name")).to_pylist()}
    assert set(counts) == set(datasets.STOCK_NAMES)
    for name, share in zip(datasets.STOCK_NAMES, datasets.STOCK_SHARE):
        assert abs(counts[name] / t.num_rows - share) < 0.005
    sells = pc.sum(pc.equal(t.column("type"), "SELL")).as_py() / t.num_rows
    assert 0.49 < sells < 0.51
    assert set(t.column("volume").to_pylist()) <= set(datasets.STOCK_LOTS)
    # Q2's price thresholds split their names' trades (neither always nor never true)
    for name, threshold in (("MSFT", 26.0), ("ORCL", 11.14), ("AMAT", 18.92)):
        prices = t.filter(pc.equal(t.column("name"), name)).column("price").to_numpy()
        assert 0.1 < float(np.mean(prices > threshold)) < 0.9


def test_stock_repeats_the_day() -> None:
    t = datasets.stock(datasets.STOCK_DAY_EVENTS + 1000, 3)
    time = t.column("stock_time").to_numpy()
    assert np.all(np.diff(time) >= 0)
    day2 = time[datasets.STOCK_DAY_EVENTS :]
    assert day2.min() >= datasets.MS_PER_DAY + datasets.STOCK_OPEN_MS


def test_smart_homes_schema_and_distributions() -> None:
    n = datasets.HOME_PLUGS * 3600  # one hour
    t = datasets.smart_homes(n, 0)
    assert t.column_names == ["type", "id", "plug_timestamp", "value", "plug_id", "household_id"]
    assert set(t.column("type").to_pylist()) == {"LOAD"}
    ts = t.column("plug_timestamp").to_numpy()
    plugs = list(zip(t.column("household_id").to_pylist(), t.column("plug_id").to_pylist()))
    # every plug reports once per second (1 Hz), 85 plugs in 17 households 0..16
    assert len(set(plugs)) == datasets.HOME_PLUGS
    assert {h for h, _ in plugs} == set(range(datasets.HOME_HOUSEHOLDS))
    assert np.all(np.bincount(ts - ts[0]) == datasets.HOME_PLUGS)
    assert len(set(plugs[: datasets.HOME_PLUGS])) == datasets.HOME_PLUGS
    value = t.column("value").to_numpy()
    assert value.min() >= 0.0
    assert 76 * 0.7 < value.mean() < 76 * 1.3  # the dataset's mean load is 76 W
    assert 0.15 < float(np.mean(value > 76)) < 0.6


def test_taxi_schema_and_distributions() -> None:
    t = datasets.taxi(50_000, 0)
    assert t.column_names == ["type", "id", "pickup_loc", "dropoff_loc", "pickup_datetime", "dropoff_datetime"]
    drop = t.column("dropoff_datetime").to_numpy()
    assert np.all(np.diff(drop) >= 0)  # drop-off order
    assert np.all(t.column("pickup_datetime").to_numpy() < drop)
    zones = {z for z, _, _ in datasets.TAXI_ZONES}
    assert set(t.column("pickup_loc").to_pylist()) <= zones
    assert set(t.column("dropoff_loc").to_pylist()) <= zones
    rate = t.num_rows / (drop[-1] - drop[0])
    assert 0.5 * datasets.TAXI_RATE < rate < 1.5 * datasets.TAXI_RATE
    legs = set(zip(t.column("pickup_loc").to_pylist(), t.column("dropoff_loc").to_pylist()))
    assert set(datasets.TAXI_CHAIN) <= legs


def test_synthetic_is_the_core_issue_stream() -> None:
    t = datasets.synthetic(20_000, 0)
    price = t.column("price").to_numpy()
    assert price.min() >= 0 and price.max() < 200
    assert set(t.column("type").to_pylist()) == {"BUY", "SELL"}
    assert len(set(t.column("name").to_pylist())) == 5


def test_files_parquet_and_csv_hold_the_same_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    paths = datasets.write("taxi", 500, 2)
    assert paths["parquet"].parent == tmp_path
    assert pq.read_table(paths["parquet"]).equals(pacsv.read_csv(paths["csv"]))
    assert pq.read_table(paths["parquet"]).equals(datasets.taxi(500, 2))


# --------------------------------------------------------------------------- workloads


def test_every_paper_workload_is_there() -> None:
    names = [w.name for w in EVERY]
    assert len(names) == len(set(names)) == 3 * (5 + 5 + 3) + 7 + 2
    for p in ("S", "H", "T"):
        for n in workloads.NS:
            assert f"{p}{n}" in names and f"{p}{n}'" in names
        assert {f"{p}3'x2", f"{p}3'x3", f"{p}3'x4"} <= set(names)
    assert {f"Q{i}" for i in range(1, 8)} | {"C1", "C2"} <= set(names)
    assert [w.name for w in workloads.select(["sweep"]) if w.dataset == "taxi"] == ["T3'", "T3'x2", "T3'x3", "T3'x4"]


def test_query_texts_follow_the_paper() -> None:
    by = {w.name: w for w in EVERY}
    assert by["S3"].text == (
        "SELECT * FROM S\n  WHERE (SELL as T1; BUY as T2; BUY as T3)\n"
        "  FILTER T1[name = 'INTC'] AND T2[name = 'RIMM'] AND T3[name = 'QQQ']\n  WITHIN 10000 [stock_time]"
    )
    assert "(LOAD as L1; LOAD as L2; LOAD as L3; LOAD as NE) as L" in by["H3'"].text
    assert "NE[household_id = 1000]" in by["H3'"].text and "WITHIN 40 [plug_timestamp]" in by["H3'x4"].text
    assert "loc24[pickup_loc = 'Midwood' AND dropoff_loc = 'Gravesend']" in by["T24"].text
    assert by["C2"].query("paper") == by["C2"].text  # the core issue's queries run as written
    assert by["Q3"].query("paper").count("CONSUME BY ANY") == 1
    assert by["S3"].query("paper").endswith("CONSUME BY ANY\n  LIMIT 1000")
    assert by["S3"].query("all") == by["S3"].text


def test_core_gets_attribute_windows_widened_by_one() -> None:
    by = {w.name: w for w in EVERY}
    assert "WITHIN 30001 [stock_time]" in by["Q1"].core_text()
    assert "WITHIN 11 [plug_timestamp]" in by["H6"].core_text("all")
    assert by["C1"].core_text() == by["C1"].text  # WITHIN n EVENTS is inclusive in both


@pytest.fixture(scope="module")
def small_files() -> dict[str, pa.Table]:
    return {name: make(800, 5) for name, make in datasets.GENERATORS.items()}


@pytest.mark.parametrize("protocol", workloads.PROTOCOLS)
def test_every_workload_parses_and_runs_on_kleene(protocol: str, small_files: dict[str, pa.Table]) -> None:
    for w in EVERY:
        q = kleene.compile(w.query(protocol))
        found = list(q.matches(small_files[w.dataset]))
        assert len(found) == len(set(found)), w.name
        if w.family in ("P'", "sweep"):
            assert found == [], w.name  # NE never occurs


# Planted streams: the pattern's events (in order, inside the window) among generated events.


def _pattern_rows(w: workloads.Workload) -> list[dict[str, Any]]:
    """Rows realising the workload's pattern once (for P'_n: its first n events)."""
    if w.dataset == "stock" and w.family in ("P", "P'", "sweep"):
        return [{"type": workloads.STOCK_TYPES_BY_POSITION[k], "name": workloads.STOCK_NAMES_BY_POSITION[k]} for k in range(w.n)]
    if w.dataset == "smart_homes":
        return [{"household_id": workloads.HOUSEHOLDS_BY_POSITION[k], "value": 100.0} for k in range(w.n)]
    if w.dataset == "taxi":
        return [{"pickup_loc": a, "dropoff_loc": b} for a, b in workloads.TAXI_LEGS[: w.n]]
    if w.family == "Q":
        rows: list[dict[str, Any]] = [
            {"type": "SELL", "name": "MSFT", "price": 27.0, "volume": 4000},
            {"type": "BUY", "name": "ORCL", "price": 12.0, "volume": 4000},
            {"type": "BUY", "name": "CSCO", "price": 20.0, "volume": 4000},
            {"type": "SELL", "name": "QQQ", "price": 42.0, "volume": 4000},
            {"type": "SELL", "name": "AMAT", "price": 19.0, "volume": 4000},
        ]
        return rows
    return [{"type": "SELL", "price": 199.5}, {"type": "BUY", "price": 0.5}]  # C1, C2


TIME = {"stock": "stock_time", "smart_homes": "plug_timestamp", "taxi": "dropoff_datetime", "synthetic": "time"}


def planted(w: workloads.Workload, noise: int, copies: int, seed: int) -> list[dict[str, Any]]:
    """``copies`` of the pattern rows among ``noise`` generated rows; windows cut the longer streams."""
    rng = np.random.default_rng(seed)
    base = datasets.GENERATORS[w.dataset](noise + copies * 30, seed).to_pylist()
    pattern = _pattern_rows(w)
    rows = base[:noise]
    for c in range(copies):
        at = int(rng.integers(0, len(rows) + 1))
        for k, over in enumerate(pattern):
            rows.insert(at, dict(base[noise + 30 * c + k], **over))
            at += 1 + int(rng.integers(0, 2))  # the next pattern event right after, or one later
            at = min(at, len(rows))
    if w.dataset in workloads.WINDOW:
        window = workloads.WINDOW[w.dataset][0] * max(w.factor, 3 if w.family == "Q" else 1)
        span = window * len(rows) / (2 * len(pattern))  # a planted copy (≤ 2 rows per event) fits
        for i, row in enumerate(rows):
            row[TIME[w.dataset]] = math.floor(i * span / len(rows))
    for i, row in enumerate(rows):
        row["id"] = i
    return rows


def oracle_size(w: workloads.Workload) -> tuple[int, int]:
    """(noise events, copies of the pattern) small enough for brute force.

    Where every event can be bound to every variable (smart homes: all LOAD; taxi: all TRIP;
    Q4-Q6's BUY OR SELL; Q7's iteration), brute force enumerates subsets: keep those short.
    """
    if w.name == "Q7" or (w.dataset in ("smart_homes", "taxi") and w.n >= 6):
        return 3, 1
    if w.dataset in ("smart_homes", "taxi"):
        return 3, 2
    if w.family == "Q":
        return 6, 2
    return (10, 2) if w.n <= 6 else (4, 1)


SMALL = [w for w in EVERY if w.n <= 9]


@pytest.mark.parametrize("w", SMALL, ids=[w.name for w in SMALL])
def test_workload_agrees_with_the_oracle(w: workloads.Workload) -> None:
    noise, copies = oracle_size(w)
    for seed in (0, 1):
        rows = planted(w, noise, copies, seed)
        for protocol in workloads.PROTOCOLS:
            text = w.query(protocol)
            expected = evaluate(parse_query(text), rows, budget=2_000_000)
            got = {(m.start, m.end, m.positions) for m in kleene.compile(text).matches(rows)}
            assert got == expected, (w.name, protocol, seed)
            if w.family in ("P", "Q", "core") and protocol == "all":
                assert expected, f"{w.name}: the planted pattern must match"


LONG = [w for w in EVERY if w.n >= 12]


@pytest.mark.parametrize("w", LONG, ids=[w.name for w in LONG])
def test_long_sequences_find_exactly_the_planted_match(w: workloads.Workload) -> None:
    """n = 12, 24: brute force is out of reach, but the planted stream has exactly one match."""
    pattern = _pattern_rows(w)
    noise = {"stock": {"name": "NONE"}, "smart_homes": {"household_id": 99}, "taxi": {"pickup_loc": "Nowhere"}}[w.dataset]
    template = datasets.GENERATORS[w.dataset](1, 0).to_pylist()[0]
    rows = []
    for over in pattern:
        rows.append(dict(template, **noise))
        rows.append(dict(template, **over))
    time, window = TIME[w.dataset], workloads.WINDOW[w.dataset][0]
    for i, row in enumerate(rows):
        row["id"], row[time] = i, (i * window) // len(rows)  # the whole stream inside one window
    for protocol in workloads.PROTOCOLS:
        q = w.query(protocol)
        got = [(m.start, m.end, m.positions) for m in kleene.compile(q).matches(rows)]
        if w.family == "P":
            assert got == [(1, len(rows) - 1, tuple(range(1, len(rows), 2)))], (w.name, protocol)
        else:
            assert got == []
        # one event of the pattern missing: no match
        assert list(kleene.compile(q).matches(rows[:-1])) == []
        # stretched beyond the window: no match
        wide = [dict(r, **{time: r[time] * 3}) for r in rows]  # spans ~3 windows
        assert list(kleene.compile(q).matches(wide)) == []


# --------------------------------------------------------------------------- CORE output


def test_core_output_parser_on_real_output() -> None:
    text = (DATA / "core_output_stock.txt").read_text()
    assert core_output.count_lines(text) == 4
    assert core_output.complex_events(text) == {(0, 1, (0, 1)), (0, 3, (0, 3)), (4, 5, (4, 5)), (0, 5, (0, 5))}
    # attribute window: CORE prints attribute values as the interval; positions come from the ids
    taxi = (DATA / "core_output_taxi.txt").read_text()
    assert core_output.parse_line(taxi.splitlines()[0]) == ((100, 105), (0, 1))
    assert core_output.complex_events(taxi) == {(0, 1, (0, 1)), (2, 3, (2, 3))}
    # one line per valuation: `SELL AS a OR SELL` prints the same complex event twice
    dup = (DATA / "core_output_duplicates.txt").read_text()
    assert core_output.count_lines(dup) == 2
    assert core_output.complex_events(dup) == {(0, 0, (0,))}


def test_core_output_failure_is_raised() -> None:
    text = (DATA / "core_output_failure.txt").read_text()
    with pytest.raises(core_output.CoreOutputError, match="Failed to process"):
        core_output.complex_events(text)
    assert core_output.complex_events("") == set()


def test_compare_allows_only_a_different_choice_under_limit() -> None:
    a = {(0, 5, 0, 5), (1, 5, 1, 5), (2, 6, 2, 6)}
    b = {(0, 5, 0, 5), (3, 5, 3, 5), (2, 6, 2, 6)}
    assert compare(a, a, None) == ""
    assert compare(a, b, 2) == ""  # end 5: both hit LIMIT 2, with different choices
    assert "only kleene [(1, 5, 1, 5)]" in compare(a, b, None)
    assert "only CORE [(2, 6, 2, 6)]" in compare(a - {(2, 6, 2, 6)}, b, 2)
    assert limit_of("SELECT * FROM S WHERE A\n  LIMIT 1000") == 1000
    assert limit_of("SELECT * FROM S WHERE A") is None


# --------------------------------------------------------------------------- differential


CORE_PYTHON = ROOT / ".venv-core" / "bin" / "python"
DIFFERENTIAL = ["S6", "H3", "T9", "Q6", "Q7", "C1"]


def test_kleene_and_core_agree_on_generated_data(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    assert CORE_PYTHON.exists(), "CORE's venv is missing: `make venv-core` (a prerequisite of `make test`)"
    runner = Runner(CORE_PYTHON, -1, tmp_path, timeout=120)
    by = {w.name: w for w in EVERY}
    sizes = {"stock": 12_000, "smart_homes": 5_000, "taxi": 12_000, "synthetic": 3_000}
    tables: dict[str, Path] = {}
    compared = 0
    for name in DIFFERENTIAL:
        w = by[name]
        if w.dataset not in tables:
            tables[w.dataset] = tmp_path / f"{w.dataset}.parquet"
            pq.write_table(datasets.GENERATORS[w.dataset](sizes[w.dataset], 7), tables[w.dataset])
        kq = w.query("paper")
        table = pq.read_table(tables[w.dataset])
        mine = {(m.start, m.end, *m.positions) for m in kleene.compile(kq).matches(table)}
        dump = tmp_path / f"{name}.ces"
        out = runner.run("core", w.core_text("paper"), tables[w.dataset], dump=dump)
        theirs = read_dump(dump)
        assert out["events"] == table.num_rows
        assert compare(mine, theirs, limit_of(kq)) == "", name
        compared += len(mine)
    assert compared > 1000  # the workloads did produce complex events to compare


# --------------------------------------------------------------------------- shrinking


class _TwoQueries(Judge):
    """A judge whose two sides are kleene on two different queries (fast, in-process)."""

    def outputs(self, table: pa.Table) -> tuple[set[tuple[int, ...]], set[tuple[int, ...]]]:
        table = renumber(table)
        self.tried += 1
        return kleene_set(self.kq, table), kleene_set(self.cq, table)


def test_shrink_finds_a_minimal_disagreement() -> None:
    left = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS"
    right = left.replace("price > 100", "price > 110")
    judge = _TwoQueries(left, right, Runner.__new__(Runner), budget=500)
    small = shrink(datasets.synthetic(400, 3), judge)
    assert small.num_rows == 2  # a SELL priced in (100, 110], then a BUY
    sell, buy = small.to_pylist()
    assert sell["type"] == "SELL" and 100 < sell["price"] <= 110 and buy["type"] == "BUY"
    assert small.column("id").to_pylist() == [0, 1]
    assert judge.outputs(small) == ({(0, 1, 0, 1)}, set())


def test_summary_checks_the_issue_targets() -> None:
    """benchmarks.summary reads a run's results.json and states each target's figures."""
    from benchmarks.summary import lines

    def row(name: str, family: str, k: float, c: float, mem: float = 150.0, agree: bool = True) -> dict[str, Any]:
        phases = [{"read": 0.1, "build": 0.6, "send": 0.2, "get_output": 0.1}]
        return {
            "workload": name, "family": family, "ratio": k / c, "kleene_eps": k, "core_eps": c, "agree": agree,
            "kleene": {"peak_mib": [mem, mem + 2]}, "core": {"phases": phases},
        }

    result = {"rows": [
        row("S3'", "P'", 12e6, 1e5, 150), row("S24'", "P'", 3e6, 1e5),
        row("S3'x4", "sweep", 11e6, 1e5, 190), row("C1", "core", 2e5, 1e5, agree=False),
    ]}
    text = "\n".join(lines(result))
    assert "min 2.00 (C1)" in text and "at least 3x on 3 of 4; below 3x: C1 (2.00)" in text
    assert "DISAGREE on C1" in text
    assert "P'_3/P'_24 = 4.00, target <= 3" in text
    assert "loss 8%" in text and "151 -> 191 MiB (+26%" in text
    assert "at least 10 M on 1 of 2; below: S24' (3.0 M)" in text
    assert "60%-60%" in text
