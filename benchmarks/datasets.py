"""Seeded generators for the CORE paper's three datasets, plus the core issue's synthetic stream.

The originals (WPI stock trace, DEBS 2014 smart homes, DEBS 2015 NYC taxi) cannot be
downloaded here, so each generator reproduces the schema the paper's queries read and value
distributions chosen so that those queries find matches at rates of the paper's order
(``docs/benchmarks.md`` lists the rates measured).  Every generator is a pure function of
``(n, seed)``: the same arguments give the same table, byte for byte.

* ``stock`` (appendix D): ~225,000 trades per trading day (09:30-16:00, busier at the open
  and the close) of the 10 names of the queries, with skewed popularity (QQQ, MSFT, INTC most
  traded; RIMM, IPIX least); ``type`` SELL/BUY 50/50; ``price`` a per-name random walk around
  the levels of Q2's thresholds (MSFT 26.00, ORCL 11.14, AMAT 18.92) with a bid/ask bounce;
  ``volume`` in round lots (100 ... 10,000; 4,000 is Q7's); ``stock_time`` in milliseconds.
  Longer streams repeat the day shape on the following days.
* ``smart_homes`` (appendix E): house 28 of DEBS 2014, 85 plugs in 17 households (ids 0..16)
  each reporting ``LOAD`` once per second (``plug_timestamp`` in seconds); each plug is an
  appliance that switches on and off (exponential on/off periods) with standby draw when off;
  appliance ratings are scaled so that the expected ``value`` is 76 W: about 60% of the readings
  are small standby values, about 40% are an appliance running (mostly above 76 W).
* ``taxi`` (appendix F): ``TRIP`` events in drop-off order at ~5.4 trips/s (NYC 2013 volume,
  with a day/night cycle), ``pickup_loc``/``dropoff_loc`` NYC TLC zone names drawn from a
  gravity model (Manhattan-heavy, often within the same borough), ``dropoff_datetime`` and
  ``pickup_datetime`` in seconds.  A small share of trips (``TAXI_ROUTE_SHARE``) follows the
  zone-to-zone legs of the paper's chain queries: the original data holds such legs (the
  queries were written from it), a gravity model alone would make them vanishingly rare.
* ``synthetic``: the stream of the core issue and of ``core-pycer-notes.md`` (BUY/SELL 50/50,
  5 names, ``price`` uniform in [0, 200), ``volume``, ``time`` in ms), for the two queries
  ``SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS`` and its selective variant.

Every table starts with ``type`` (the event type) and ``id`` (0..n-1, the transaction/event
id), the first attribute CORE prints, which lets the harness recover positions from CORE's
output.  Files are written as Parquet and CSV under ``benchmarks/data/``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

DATA_DIR = Path(__file__).resolve().parent / "data"
ROW_GROUP = 131_072

# --------------------------------------------------------------------------- stock

STOCK_NAMES = ("INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT")
STOCK_SHARE = (0.14, 0.04, 0.22, 0.03, 0.07, 0.12, 0.07, 0.08, 0.09, 0.14)
"""Share of trades per name (sums to 1): QQQ, MSFT and INTC were the busiest, RIMM and IPIX thin."""
STOCK_PRICE = (30.50, 28.00, 42.00, 4.20, 18.92, 19.50, 18.00, 25.50, 11.14, 26.00)
"""Price level per name; MSFT, ORCL and AMAT sit at Q2's thresholds so those filters split."""
STOCK_DAY_EVENTS = 225_000
STOCK_OPEN_MS = 34_200_000  # 09:30
STOCK_DAY_MS = 23_400_000  # 6.5 hours of trading
MS_PER_DAY = 86_400_000
STOCK_LOTS = (100, 200, 300, 400, 500, 600, 800, 1000, 1500, 2000, 2500, 3000, 4000, 5000, 10000)
STOCK_LOT_WEIGHT = (30, 12, 8, 5, 10, 3, 2, 10, 3, 5, 2, 2, 2, 3, 3)


def _intraday_offsets(rng: np.random.Generator, k: int) -> np.ndarray:
    """k sorted trade times (ms after the open) with a U-shaped intensity (busy open and close).

    Density ∝ 1 + 3·(2u − 1)², sampled by rejection (acceptance ~1/2).
    """
    out = np.empty(0)
    while out.size < k:
        u = rng.random(2 * k + 16)
        keep = rng.random(u.size) * 4.0 < 1.0 + 3.0 * (2.0 * u - 1.0) ** 2
        out = np.concatenate([out, u[keep]])
    return np.sort(np.floor(out[:k] * STOCK_DAY_MS)).astype(np.int64)


def stock(n: int, seed: int = 0) -> pa.Table:
    """n trades, ~225k per trading day, columns type, id, name, price, volume, stock_time (ms)."""
    rng = np.random.default_rng([seed, 1])
    days = max(1, math.ceil(n / STOCK_DAY_EVENTS))
    times = np.concatenate(
        [d * MS_PER_DAY + STOCK_OPEN_MS + _intraday_offsets(rng, STOCK_DAY_EVENTS) for d in range(days)]
    )[:n]
    name_idx = rng.choice(len(STOCK_NAMES), size=n, p=np.array(STOCK_SHARE))
    types = np.where(rng.random(n) < 0.5, "SELL", "BUY")
    # Per-name geometric random walk (2% daily volatility, pinned to the level at both ends) plus a ±0.1% bid/ask bounce.
    price = np.empty(n)
    for k, level in enumerate(STOCK_PRICE):
        at = np.flatnonzero(name_idx == k)
        if at.size == 0:
            continue
        per_trade = 0.02 / math.sqrt(STOCK_DAY_EVENTS * STOCK_SHARE[k])
        walk = np.cumsum(rng.normal(0.0, per_trade, at.size))
        walk -= np.linspace(0.0, walk[-1], at.size)  # a Brownian bridge: back to the level at the end
        bounce = rng.normal(0.0, 0.001, at.size)
        price[at] = np.round(level * np.exp(walk + bounce), 2)
    lots = np.array(STOCK_LOTS, dtype=np.int64)
    weights = np.array(STOCK_LOT_WEIGHT, dtype=float)
    volume = lots[rng.choice(lots.size, size=n, p=weights / weights.sum())]
    return pa.table(
        {
            "type": pa.array(types),
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "name": pa.array(np.array(STOCK_NAMES)[name_idx]),
            "price": pa.array(price),
            "volume": pa.array(volume),
            "stock_time": pa.array(times),
        }
    )


# --------------------------------------------------------------------------- smart homes

HOME_PLUGS = 85
HOME_HOUSEHOLDS = 17
HOME_MEAN_W = 76.0
HOME_START_S = 1_377_986_401  # 2013-09-01 00:00:01 UTC, where the DEBS 2014 data starts


def _plug_layout(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(household_id, plug_id within its household) for the 85 plugs; every household has ≥ 2."""
    extra = rng.multinomial(HOME_PLUGS - 2 * HOME_HOUSEHOLDS, np.full(HOME_HOUSEHOLDS, 1 / HOME_HOUSEHOLDS))
    counts = extra + 2
    household = np.repeat(np.arange(HOME_HOUSEHOLDS, dtype=np.int64), counts)
    plug = np.concatenate([np.arange(c, dtype=np.int64) for c in counts])
    return household, plug


def smart_homes(n: int, seed: int = 0) -> pa.Table:
    """n LOAD readings, 85 plugs at 1 Hz: type, id, plug_timestamp (s), value (W), plug_id, household_id."""
    rng = np.random.default_rng([seed, 2])
    household, plug = _plug_layout(rng)
    seconds = max(1, math.ceil(n / HOME_PLUGS))
    # Appliances: rated power (log-normal), standby draw, duty cycle and mean on-period.
    rating = np.clip(rng.lognormal(math.log(150.0), 0.7, HOME_PLUGS), 20.0, 3000.0)
    standby = rng.uniform(0.0, 8.0, HOME_PLUGS)
    duty = rng.beta(1.2, 2.0, HOME_PLUGS)  # fridges, computers, TVs: on a good part of the time
    on_mean = rng.uniform(60.0, 900.0, HOME_PLUGS)  # seconds
    off_mean = on_mean * (1.0 - duty) / np.maximum(duty, 1e-3)
    # Scale the ratings so that the expected reading is exactly HOME_MEAN_W.
    scale = (HOME_MEAN_W - float(np.mean((1.0 - duty) * standby))) / float(np.mean(duty * rating))
    rating = rating * scale
    on = np.zeros((seconds, HOME_PLUGS), dtype=bool)
    for p in range(HOME_PLUGS):
        t = 0.0
        state = rng.random() < duty[p]
        while t < seconds:
            length = rng.exponential(on_mean[p] if state else off_mean[p]) + 1.0
            if state:
                on[int(t) : int(t + length), p] = True
            t += length
            state = not state
    noise = rng.normal(0.0, 1.0, (seconds, HOME_PLUGS))
    value = np.where(on, rating * (1.0 + 0.05 * noise), np.abs(standby * (1.0 + 0.2 * noise)))
    order = np.argsort(rng.random((seconds, HOME_PLUGS)), axis=1)  # arrival order within a second
    rows = np.arange(seconds)[:, None]
    plug_idx = order.ravel()[:n]
    return pa.table(
        {
            "type": pa.array(np.full(n, "LOAD")),
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "plug_timestamp": pa.array(HOME_START_S + np.repeat(np.arange(seconds, dtype=np.int64), HOME_PLUGS)[:n]),
            "value": pa.array(np.round(value[rows, order].ravel()[:n], 3)),
            "plug_id": pa.array(plug[plug_idx]),
            "household_id": pa.array(household[plug_idx]),
        }
    )


# --------------------------------------------------------------------------- taxi

TAXI_ZONES: tuple[tuple[str, str, float], ...] = (
    # (zone, borough, weight): NYC TLC zone names; weights follow 2013 yellow-cab activity.
    ("Upper East Side South", "Manhattan", 8.0),
    ("Midtown Center", "Manhattan", 8.0),
    ("Upper East Side North", "Manhattan", 7.0),
    ("Midtown East", "Manhattan", 6.5),
    ("Murray Hill", "Manhattan", 5.5),
    ("Times Sq/Theatre District", "Manhattan", 5.5),
    ("Penn Station/Madison Sq West", "Manhattan", 5.0),
    ("Union Sq", "Manhattan", 5.0),
    ("Lincoln Square East", "Manhattan", 5.0),
    ("Clinton East", "Manhattan", 4.5),
    ("East Village", "Manhattan", 4.5),
    ("Upper West Side South", "Manhattan", 4.5),
    ("Gramercy", "Manhattan", 4.0),
    ("Lenox Hill West", "Manhattan", 4.0),
    ("Midtown North", "Manhattan", 4.0),
    ("Midtown South", "Manhattan", 4.0),
    ("East Chelsea", "Manhattan", 4.0),
    ("West Village", "Manhattan", 4.0),
    ("Sutton Place/Turtle Bay North", "Manhattan", 3.5),
    ("Lincoln Square West", "Manhattan", 3.0),
    ("Upper West Side North", "Manhattan", 3.0),
    ("Yorkville West", "Manhattan", 3.0),
    ("Garment District", "Manhattan", 3.0),
    ("Financial District North", "Manhattan", 2.5),
    ("TriBeCa/Civic Center", "Manhattan", 2.5),
    ("Greenwich Village North", "Manhattan", 2.5),
    ("Battery Park City", "Manhattan", 1.5),
    ("East Harlem South", "Manhattan", 1.0),
    ("Central Harlem", "Manhattan", 0.8),
    ("East Harlem North", "Manhattan", 0.6),
    ("LaGuardia Airport", "Queens", 3.0),
    ("JFK Airport", "Queens", 2.5),
    ("Astoria", "Queens", 0.8),
    ("Long Island City/Hunters Point", "Queens", 0.6),
    ("Williamsburg (North Side)", "Brooklyn", 0.8),
    ("Park Slope", "Brooklyn", 0.5),
    ("Downtown Brooklyn/MetroTech", "Brooklyn", 0.5),
    ("Midwood", "Brooklyn", 0.1),
    ("Gravesend", "Brooklyn", 0.08),
    ("Bensonhurst West", "Brooklyn", 0.08),
    ("East Concourse/Concourse Village", "Bronx", 0.1),
    ("Mott Haven/Port Morris", "Bronx", 0.1),
    ("West Brighton", "Staten Island", 0.02),
    ("St. George/New Brighton", "Staten Island", 0.02),
)
TAXI_CHAIN = (
    # the legs loc1..loc24 of the paper's taxi queries (appendix A.3)
    ("East Harlem North", "Midwood"),
    ("Midwood", "Gravesend"),
    ("Gravesend", "West Brighton"),
    ("West Brighton", "Lincoln Square West"),
    ("Lincoln Square West", "Sutton Place/Turtle Bay North"),
    ("Sutton Place/Turtle Bay North", "East Concourse/Concourse Village"),
    ("East Concourse/Concourse Village", "East Harlem North"),
    ("East Harlem North", "East Harlem North"),
    ("East Harlem North", "Gravesend"),
    ("Gravesend", "Midwood"),
    ("Midwood", "Midwood"),
    ("Midwood", "Gravesend"),
    ("Gravesend", "Midwood"),
    ("Midwood", "Gravesend"),
    ("Gravesend", "West Brighton"),
    ("West Brighton", "Lincoln Square West"),
    ("Lincoln Square West", "Sutton Place/Turtle Bay North"),
    ("Sutton Place/Turtle Bay North", "East Concourse/Concourse Village"),
    ("East Concourse/Concourse Village", "East Harlem North"),
    ("East Harlem North", "East Harlem North"),
    ("East Harlem North", "Gravesend"),
    ("Gravesend", "Midwood"),
    ("Midwood", "Midwood"),
    ("Midwood", "Gravesend"),
)
TAXI_ROUTE_SHARE = 1.2e-3
"""Share of trips that follow one of the chain's distinct legs (each leg ~1e-4 of all trips)."""
TAXI_RATE = 5.4  # trips per second, NYC yellow cabs in 2013 (~470k a day)
TAXI_START_S = 1_356_998_400  # 2013-01-01 00:00:00 UTC, where the DEBS 2015 data starts


def taxi(n: int, seed: int = 0) -> pa.Table:
    """n trips in drop-off order: type, id, pickup_loc, dropoff_loc, pickup_datetime, dropoff_datetime (s)."""
    rng = np.random.default_rng([seed, 3])
    names = np.array([z for z, _, _ in TAXI_ZONES])
    borough = np.array([b for _, b, _ in TAXI_ZONES])
    w = np.array([x for _, _, x in TAXI_ZONES])
    p = w / w.sum()
    pickup = rng.choice(len(names), size=n, p=p)
    # Drop-off: 10% the same zone, 45% a zone of the same borough, 45% anywhere (by weight).
    u = rng.random(n)
    anywhere = rng.choice(len(names), size=n, p=p)
    same_borough = anywhere.copy()
    for b in np.unique(borough):
        members = np.flatnonzero(borough == b)
        at = np.flatnonzero(borough[pickup] == b)
        same_borough[at] = rng.choice(members, size=at.size, p=w[members] / w[members].sum())
    dropoff = np.where(u < 0.10, pickup, np.where(u < 0.55, same_borough, anywhere))
    # The chain's legs, each distinct leg equally likely.
    legs = sorted(set(TAXI_CHAIN))
    index = {z: i for i, z in enumerate(names)}
    route = rng.random(n) < TAXI_ROUTE_SHARE
    which = rng.integers(0, len(legs), n)
    leg_pick = np.array([index[a] for a, _ in legs])[which]
    leg_drop = np.array([index[b] for _, b in legs])[which]
    pickup = np.where(route, leg_pick, pickup)
    dropoff = np.where(route, leg_drop, dropoff)
    # Drop-off times: Poisson arrivals whose rate follows the day (low at 5 am, high at 7 pm).
    gaps = rng.exponential(1.0, n)
    t = np.empty(n)
    now = 0.0
    chunk = 4096
    for s in range(0, n, chunk):
        hour = (now / 3600.0) % 24.0
        rate = TAXI_RATE * (1.0 + 0.6 * math.sin((hour - 13.0) / 24.0 * 2.0 * math.pi))
        t[s : s + chunk] = now + np.cumsum(gaps[s : s + chunk]) / rate
        now = float(t[min(s + chunk, n) - 1])
    dropoff_s = TAXI_START_S + np.floor(t).astype(np.int64)
    duration = np.clip(rng.lognormal(math.log(660.0), 0.6, n), 60, 7200).astype(np.int64)
    return pa.table(
        {
            "type": pa.array(np.full(n, "TRIP")),
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "pickup_loc": pa.array(names[pickup]),
            "dropoff_loc": pa.array(names[dropoff]),
            "pickup_datetime": pa.array(dropoff_s - duration),
            "dropoff_datetime": pa.array(dropoff_s),
        }
    )


# --------------------------------------------------------------------------- synthetic (core issue)

SYNTHETIC_NAMES = ("MSFT", "INTC", "AAPL", "GOOG", "AMZN")
SYNTHETIC_START_MS = 1_700_000_000_000


def synthetic(n: int, seed: int = 0) -> pa.Table:
    """The core issue's stream: type BUY/SELL 50/50, 5 names, price uniform [0, 200), volume, time (ms)."""
    rng = np.random.default_rng([seed, 4])
    return pa.table(
        {
            "type": pa.array(np.array(["BUY", "SELL"])[rng.integers(0, 2, n)]),
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "name": pa.array(np.array(SYNTHETIC_NAMES)[rng.integers(0, len(SYNTHETIC_NAMES), n)]),
            "price": pa.array(rng.uniform(0.0, 200.0, n)),
            "volume": pa.array(rng.integers(1, 10_001, n, dtype=np.int64)),
            "time": pa.array(SYNTHETIC_START_MS + np.cumsum(rng.integers(1, 21, n, dtype=np.int64))),
        }
    )


# --------------------------------------------------------------------------- files

GENERATORS: dict[str, Callable[[int, int], pa.Table]] = {
    "stock": stock,
    "smart_homes": smart_homes,
    "taxi": taxi,
    "synthetic": synthetic,
}

CORE_TYPES = {pa.int64(): "int", pa.float64(): "double", pa.string(): "string"}


def event_types(table: pa.Table) -> list[str]:
    """The event types of a generated table, sorted."""
    return sorted(str(t) for t in table.column("type").unique().to_pylist())


def file_path(dataset: str, n: int, seed: int = 0, fmt: str = "parquet") -> Path:
    return DATA_DIR / f"{dataset}_{n}_s{seed}.{fmt}"


def write(dataset: str, n: int, seed: int = 0, *, formats: tuple[str, ...] = ("parquet", "csv"), force: bool = False) -> dict[str, Path]:
    """Write the dataset in each format unless present; return {format: path}."""
    wanted = {fmt: file_path(dataset, n, seed, fmt) for fmt in formats}
    missing = {fmt: p for fmt, p in wanted.items() if force or not p.exists()}
    if missing:
        table = GENERATORS[dataset](n, seed)
        for fmt, target in missing.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            if fmt == "parquet":
                pq.write_table(table, tmp, row_group_size=ROW_GROUP)
            elif fmt == "csv":
                pacsv.write_csv(table, tmp)
            else:
                raise ValueError(f"unknown format {fmt!r} (parquet or csv)")
            tmp.replace(target)  # never leave a half-written file under the final name
    return wanted
