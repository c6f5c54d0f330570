"""Compare kleene's MATCH_RECOGNIZE reference with pandas-match-recognize on random cases.

pandas-match-recognize (PyPI, 0.2.5) is the one MATCH_RECOGNIZE implementation for Python
found in the package index.  This script draws random clauses and partitioned inputs with
``tests/match_recognize_generators.py``, runs both, and counts agreements; it prints the
first differing cases so that they can be checked by hand against the standard.

Not part of the test suite: the package is not a kleene dependency, and installing it
downgrades numpy (to 2.1 at the time of writing), so run it in a separate virtualenv::

    python -m venv /tmp/pmr && /tmp/pmr/bin/pip install -e . pandas-match-recognize hypothesis
    /tmp/pmr/bin/python benchmarks/match_recognize_vs_pandas_mr.py --examples 150

Last run (docs/match_recognize.md, "Other implementations"): see that section.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=150)
    ap.add_argument("--rows", default="ONE ROW PER MATCH")
    ap.add_argument("--show", type=int, default=6, help="differing cases to print")
    args = ap.parse_args()

    import pandas as pd
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from pandas_match_recognize import match_recognize as theirs

    from kleene.language.errors import DataError, QueryError
    from kleene.reference.match_recognize import SearchBudgetError, match_recognize
    from match_recognize_generators import Case, cases

    stats: Counter[str] = Counter()
    shown: list[tuple[str, Any, Any, Any]] = []

    def alarm(*_: object) -> None:
        raise TimeoutError

    signal.signal(signal.SIGALRM, alarm)
    one_row = args.rows.upper().startswith("ONE")
    columns = ["k", "m", "n", "f"] if one_row else ["k", "id", "m"]

    @settings(max_examples=args.examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases(undefined=0.4), st.sampled_from(["PAST LAST ROW", "TO NEXT ROW"]))
    def compare(case: Case, skip: str) -> None:
        query = case.query("MATCH_NUMBER() AS m, COUNT(*) AS n, FIRST(t) AS f", args.rows, skip)
        try:
            want = match_recognize(case.records(), query, max_steps=20_000).to_pylist()
        except (SearchBudgetError, DataError, QueryError):
            stats["kleene: budget or error"] += 1
            return
        signal.alarm(5)
        try:
            got_df = theirs(f"SELECT * FROM t MATCH_RECOGNIZE ({query})",
                            pd.DataFrame(case.records()))
        except TimeoutError:
            stats["theirs: over 5 s"] += 1
            return
        except Exception as err:  # noqa: BLE001 - counted by kind
            stats[f"theirs: {type(err).__name__}"] += 1
            return
        finally:
            signal.alarm(0)
        got = sorted((tuple(None if pd.isna(r[c]) else int(r[c]) for c in columns)
                      for _, r in got_df.iterrows()), key=str)
        mine = sorted((tuple(None if r[c] is None else int(r[c]) for c in columns)
                       for r in want), key=str)
        stats["compared"] += 1
        if got == mine:
            stats["agree"] += 1
        else:
            stats["differ"] += 1
            if len(shown) < args.show:
                shown.append((query, case.rows, mine, got))

    compare()
    print(dict(stats))
    for query, rows, mine, got in shown:
        print(f"---\n{query}\n rows (k, t, v): {rows}\n kleene: {mine}\n theirs: {got}")


if __name__ == "__main__":
    main()
