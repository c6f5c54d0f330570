"""Write seeded benchmark events: the core issue's synthetic stock stream, or any dataset of the suite.

Without ``--dataset``, this writes N events of the synthetic stock stream of the core issue
(``benchmarks.datasets.synthetic``: BUY/SELL 50/50, 5 names, price uniform in [0, 200), volume,
``time`` in ms) to ``benchmarks/data/stock_<N>.parquet``, the file ``core_queries.py``,
``memory.py`` and ``strategies.py`` read.  With ``--dataset stock|smart_homes|taxi|synthetic``
it writes that generator's events as Parquet and CSV (``benchmarks/data/<dataset>_<N>_s<seed>.*``),
the files the side-by-side suite (``python -m benchmarks.suite``) uses.  Files are reused when
they exist, so repeated benchmark runs measure the engine and not the generator.

Usage: ``python benchmarks/generate.py [--events N] [--seed S] [--force] [--dataset D]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import datasets  # noqa: E402

DATA_DIR = datasets.DATA_DIR
ROW_GROUP = datasets.ROW_GROUP  # small row groups keep the streaming reader's memory small


def data_path(n: int) -> Path:
    return DATA_DIR / f"stock_{n}.parquet"


def make_table(n: int, seed: int = 0) -> pa.Table:
    """The N synthetic stock events as an Arrow table (deterministic for a given seed)."""
    return datasets.synthetic(n, seed)


def generate(n: int = 1_000_000, *, seed: int = 0, force: bool = False, path: Path | None = None) -> Path:
    """Write ``stock_<n>.parquet`` (the synthetic stream) unless it exists; return its path."""
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
    parser.add_argument("--dataset", choices=sorted(datasets.GENERATORS), help="write this dataset as Parquet and CSV")
    args = parser.parse_args()
    if args.dataset:
        for path in datasets.write(args.dataset, args.events, args.seed, force=args.force).values():
            print(path)
        return
    path = generate(args.events, seed=args.seed, force=args.force)
    print(f"{path} ({pq.ParquetFile(path).metadata.num_rows:,} events)")


if __name__ == "__main__":
    main()
