"""Generate N synthetic stock events as Parquet (seeded, vectorized).

The CORE paper's stock experiments use a stream of BUY and SELL events over a
handful of stock names, with prices uniform in [0, 200].  This generator
reproduces that shape so that kleene's figures can be set beside CORE's:

* ``type``: BUY or SELL, 50/50
* ``name``: one of 5 ticker names, uniformly
* ``price``: float, uniform in [0, 200)
* ``volume``: int64, uniform in [1, 10000]
* ``time``: int64 milliseconds since the epoch, strictly increasing
  (gaps of 1 to 20 ms), for time-window queries (``--time-unit ms``)

Files go to ``benchmarks/data/stock_<N>.parquet`` and are reused when they
exist, so repeated benchmark runs measure the engine and not the generator.

Usage: ``python benchmarks/generate.py [--events N] [--seed S] [--force]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DATA_DIR = Path(__file__).resolve().parent / "data"
NAMES = np.array(["MSFT", "INTC", "AAPL", "GOOG", "AMZN"])
TYPES = np.array(["BUY", "SELL"])
START_MS = 1_700_000_000_000
ROW_GROUP = 131_072  # small row groups keep the streaming reader's memory small


def data_path(n: int) -> Path:
    return DATA_DIR / f"stock_{n}.parquet"


def make_table(n: int, seed: int = 0) -> pa.Table:
    """The N events as an Arrow table (deterministic for a given seed)."""
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "type": pa.array(TYPES[rng.integers(0, 2, n)]),
            "name": pa.array(NAMES[rng.integers(0, len(NAMES), n)]),
            "price": pa.array(rng.uniform(0.0, 200.0, n)),
            "volume": pa.array(rng.integers(1, 10_001, n, dtype=np.int64)),
            "time": pa.array(START_MS + np.cumsum(rng.integers(1, 21, n, dtype=np.int64))),
        }
    )


def generate(n: int = 1_000_000, *, seed: int = 0, force: bool = False, path: Path | None = None) -> Path:
    """Write ``stock_<n>.parquet`` unless it exists; return its path."""
    target = path or data_path(n)
    if target.exists() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".parquet.tmp")
    pq.write_table(make_table(n, seed), tmp, row_group_size=ROW_GROUP)
    tmp.replace(target)  # never leave a half-written file under the final name
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="number of events (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true", help="regenerate even if the file exists")
    args = parser.parse_args()
    path = generate(args.events, seed=args.seed, force=args.force)
    print(f"{path} ({pq.ParquetFile(path).metadata.num_rows:,} events)")


if __name__ == "__main__":
    main()
