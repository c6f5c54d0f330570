"""The benchmark workloads: every query of the CORE paper's experiments, plus the core issue's two.

Query texts follow appendix A / §10 of ``core-engine-and-benchmarks.md`` (the paper's queries,
with the source typos fixed as that note lists), generated from the paper's tables:

* ``P_n`` and ``P'_n`` for n = 3, 6, 9, 12, 24 per dataset (stock ``S``, smart homes ``H``,
  taxi ``T``); ``P'_n`` appends one event that never occurs (``NE``), so it never outputs;
* the window sweep ``P'_3`` at 2T, 3T, 4T (named ``S3'x2`` etc. as in the paper; T is ``P'_3``);
* the stock queries Q1-Q7 (30 s windows, disjunction, iteration, PARTITION BY);
* the core issue's ``SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS`` (``C1``) and its
  selective variant ``a[price > 199] AND b[price < 1]`` (``C2``), on the synthetic stream.

**Protocol.** The paper (§5) runs every query with two rules outside the query text: "on each
complex event found, forget all events read so far" and "only the first 1000 complex events
are enumerated per pattern occurrence".  CEQL says both in clauses, ``CONSUME BY ANY`` and
``LIMIT 1000`` (Q3 and Q6 print the first one), so ``protocol="paper"`` appends them to the
paper's queries, and ``protocol="all"`` runs the texts as printed (every complex event).  The
core issue's queries are always run as written.

**Windows for CORE.** kleene's ``WITHIN n [attr]`` is inclusive (attr(end) − attr(start) ≤ n, the
paper's definition); CORE's is exclusive (≤ n − 1, ``core-pycer-notes.md``).  On the integer
time attributes of these datasets, CORE's ``WITHIN n+1 [attr]`` is exactly kleene's
``WITHIN n [attr]``, so CORE is given that (``core_text``).  ``WITHIN n EVENTS`` is inclusive
in both and is passed unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmarks.datasets import TAXI_CHAIN

PROTOCOLS = ("paper", "all")
NS = (3, 6, 9, 12, 24)
SWEEP = (1, 2, 3, 4)

STOCK_NAMES_BY_POSITION = ("INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT", "INTC", "RIMM") * 2
STOCK_TYPES_BY_POSITION = ("SELL", "BUY", "BUY") * 8
HOUSEHOLDS_BY_POSITION = (0, 2, 4, 6, 9, 10, 12, 14, 15, 4, 9, 10) * 2
TAXI_LEGS = TAXI_CHAIN
"""The legs loc1..loc24 of the paper's taxi queries (appendix A.3), as the generator plants them."""

WINDOW = {"stock": (10000, "stock_time"), "smart_homes": (10, "plug_timestamp"), "taxi": (10000, "dropoff_datetime")}
PREFIX = {"stock": "S", "smart_homes": "H", "taxi": "T"}


@dataclass(frozen=True)
class Workload:
    """One benchmark query on one dataset.

    ``family`` groups workloads for the plots: ``P`` (P_n), ``P'`` (P'_n), ``sweep`` (P'_3 at
    ``factor``·T), ``Q`` (Q1-Q7), ``core`` (the core issue's queries).
    """

    name: str
    dataset: str
    family: str
    text: str
    n: int = 0
    factor: int = 1
    verbatim: bool = False  # run as written whatever the protocol

    def query(self, protocol: str = "paper") -> str:
        """The kleene query text under ``protocol``."""
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}")
        if protocol == "all" or self.verbatim:
            return self.text
        text = self.text
        if "CONSUME BY" not in text.upper():
            text += "\n  CONSUME BY ANY"
        return text + "\n  LIMIT 1000"

    def core_text(self, protocol: str = "paper") -> str:
        """The query as given to CORE: attribute windows widened by one (see the module docstring)."""
        return _ATTR_WINDOW.sub(lambda m: f"WITHIN {int(m.group(1)) + 1} [{m.group(2)}]", self.query(protocol))


_ATTR_WINDOW = re.compile(r"WITHIN\s+(\d+)\s*\[\s*(\w+)\s*\]", re.IGNORECASE)


def _stock(n: int, no_output: bool, window: int) -> str:
    vars_ = [f"{STOCK_TYPES_BY_POSITION[k]} as T{k + 1}" for k in range(n)]
    filters = [f"T{k + 1}[name = '{STOCK_NAMES_BY_POSITION[k]}']" for k in range(n)]
    if no_output:
        vars_.append("BUY as NE")
        filters.append("NE[name = 'NotExists']")
    return (
        f"SELECT * FROM S\n  WHERE ({'; '.join(vars_)})\n  FILTER {' AND '.join(filters)}\n"
        f"  WITHIN {window} [stock_time]"
    )


def _homes(n: int, no_output: bool, window: int) -> str:
    vars_ = [f"LOAD as L{k + 1}" for k in range(n)]
    filters = ["L[value > 76]"] + [f"L{k + 1}[household_id = {HOUSEHOLDS_BY_POSITION[k]}]" for k in range(n)]
    if no_output:
        vars_.append("LOAD as NE")
        filters.append("NE[household_id = 1000]")
    return (
        f"SELECT * FROM S\n  WHERE ({'; '.join(vars_)}) as L\n  FILTER {' AND '.join(filters)}\n"
        f"  WITHIN {window} [plug_timestamp]"
    )


def _taxi(n: int, no_output: bool, window: int) -> str:
    vars_ = [f"TRIP as loc{k + 1}" for k in range(n)]
    filters = [
        f"loc{k + 1}[pickup_loc = '{TAXI_LEGS[k][0]}' AND dropoff_loc = '{TAXI_LEGS[k][1]}']" for k in range(n)
    ]
    if no_output:
        vars_.append("TRIP as NE")
        filters.append("NE[pickup_loc = 'NotExists']")
    sep = " AND\n         "
    return (
        f"SELECT * FROM S\n  WHERE ({'; '.join(vars_)})\n  FILTER {sep.join(filters)}\n"
        f"  WITHIN {window} [dropoff_datetime]"
    )


_BUILDERS = {"stock": _stock, "smart_homes": _homes, "taxi": _taxi}

_Q_SEQ = "(SELL as msft; BUY as oracle; BUY as csco; SELL as amat)"
_Q_DIS = "(SELL as msft; (BUY OR SELL) as oracle; (BUY OR SELL) as csco; SELL as amat)"
_Q_NAMES = "msft[name = 'MSFT'] AND oracle[name = 'ORCL'] AND\n         csco[name = 'CSCO'] AND amat[name = 'AMAT']"
_Q_PRICES = (
    "msft[name = 'MSFT'] AND msft[price > 26.0] AND\n         oracle[name = 'ORCL'] AND oracle[price > 11.14] AND\n"
    "         csco[name = 'CSCO'] AND amat[name = 'AMAT'] AND amat[price >= 18.92]"
)
_W30 = "WITHIN 30000 [stock_time]"
STOCK_Q = {
    "Q1": f"SELECT * FROM S\n  WHERE {_Q_SEQ}\n  FILTER {_Q_NAMES}\n  {_W30}",
    "Q2": f"SELECT * FROM S\n  WHERE {_Q_SEQ}\n  FILTER {_Q_PRICES}\n  {_W30}",
    "Q3": f"SELECT * FROM S\n  WHERE {_Q_SEQ}\n  FILTER {_Q_NAMES}\n  PARTITION BY [volume]\n  {_W30}\n  CONSUME BY ANY",
    "Q4": f"SELECT * FROM S\n  WHERE {_Q_DIS}\n  FILTER {_Q_NAMES}\n  {_W30}",
    "Q5": f"SELECT * FROM S\n  WHERE {_Q_DIS}\n  FILTER {_Q_PRICES}\n  {_W30}",
    "Q6": f"SELECT * FROM S\n  WHERE {_Q_DIS}\n  FILTER {_Q_NAMES}\n  PARTITION BY [volume]\n  {_W30}\n  CONSUME BY ANY",
    "Q7": (
        "SELECT * FROM S\n  WHERE (SELL as msft; (BUY OR SELL)+ as qqq; SELL as amat)\n"
        "  FILTER msft[name = 'MSFT'] AND qqq[name = 'QQQ'] AND\n         qqq[volume = 4000] AND amat[name = 'AMAT']\n"
        f"  {_W30}"
    ),
}
CORE_ISSUE = {
    "C1": "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS",
    "C2": "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 199] AND b[price < 1] WITHIN 10 EVENTS",
}


def all_workloads() -> list[Workload]:
    """Every workload, in the order the harness runs them."""
    out: list[Workload] = []
    for dataset, build in _BUILDERS.items():
        window, _ = WINDOW[dataset]
        p = PREFIX[dataset]
        for n in NS:
            out.append(Workload(f"{p}{n}", dataset, "P", build(n, False, window), n=n))
        for n in NS:
            out.append(Workload(f"{p}{n}'", dataset, "P'", build(n, True, window), n=n))
        for k in SWEEP[1:]:  # factor 1 is P'_3 itself
            out.append(Workload(f"{p}3'x{k}", dataset, "sweep", build(3, True, window * k), n=3, factor=k))
    for name, text in STOCK_Q.items():
        out.append(Workload(name, "stock", "Q", text))
    for name, text in CORE_ISSUE.items():
        out.append(Workload(name, "synthetic", "core", text, verbatim=True))
    return out


def select(patterns: list[str] | None) -> list[Workload]:
    """The workloads whose name, dataset or family matches one of ``patterns`` (all if None).

    A pattern is a name (``S3'``), a dataset (``taxi``), a family (``P'``, ``sweep``, ``Q``,
    ``core``), or a shell-style glob over names (``S*``).
    """
    import fnmatch

    every = all_workloads()
    if not patterns:
        return every
    chosen = [
        w
        for w in every
        if any(pat in (w.name, w.dataset, w.family) or fnmatch.fnmatchcase(w.name, pat) for pat in patterns)
        or ("sweep" in patterns and w.family == "P'" and w.n == 3)  # the sweep's T is P'_3
    ]
    if not chosen:
        raise SystemExit(f"no workload matches {patterns}; names: {', '.join(w.name for w in every)}")
    return chosen
