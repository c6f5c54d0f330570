"""Issue 6's targets, checked against a harness run: ``python -m benchmarks.summary results.json``.

Reads the ``results.json`` that ``python -m benchmarks.suite`` writes and prints, as Markdown
bullets, each target of the benchmark issue with the figures that decide it:

* kleene/CORE on every workload (at least 3x), and agreement of the complex events;
* throughput of P'_n from n = 3 to 24 (at most a 3x drop) and of P'_3 from T to 4T (at most 20%);
* selective queries (P'_n and the core issue's C2) at 10 M events/s or more;
* kleene's peak memory over the window sweep (flat within 20%);
* where CORE's time goes (the share spent building PyEvents in Python).

Nothing is measured here: the figures are those of the run, medians over its runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

PREFIXES = ("S", "H", "T")
"""The datasets' workload prefixes: stock, smart homes, taxi."""


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def lines(result: dict[str, Any]) -> list[str]:
    """The summary bullets of one run."""
    rows = {r["workload"]: r for r in result["rows"]}
    out: list[str] = []
    ratios = {name: r["ratio"] for name, r in rows.items() if r.get("ratio") is not None}
    if ratios:
        low = sorted(ratios, key=ratios.__getitem__)
        below = [f"{n} ({ratios[n]:.2f})" for n in low if ratios[n] < 3]
        out.append(
            f"kleene/CORE: min {min(ratios.values()):.2f} ({low[0]}), median "
            f"{statistics.median(ratios.values()):.2f}, max {max(ratios.values()):.2f}; at least 3x on "
            f"{sum(v >= 3 for v in ratios.values())} of {len(ratios)}"
            + (f"; below 3x: {', '.join(below)}" if below else "")
        )
    disagree = [n for n, r in rows.items() if not r.get("agree")]
    out.append(
        "complex events: both engines agree on every workload"
        if not disagree
        else f"complex events DISAGREE on {', '.join(disagree)}"
    )
    for prefix in PREFIXES:
        first, last = rows.get(f"{prefix}3'"), rows.get(f"{prefix}24'")
        if first and last and first.get("kleene_eps") and last.get("kleene_eps"):
            drop = first["kleene_eps"] / last["kleene_eps"]
            out.append(
                f"{prefix}: P'_3 -> P'_24 kleene {first['kleene_eps']:,.0f} -> {last['kleene_eps']:,.0f} ev/s "
                f"(P'_3/P'_24 = {drop:.2f}, target <= 3)"
            )
        widest = rows.get(f"{prefix}3'x4")
        if first and widest and first.get("kleene_eps") and widest.get("kleene_eps"):
            loss = 1 - widest["kleene_eps"] / first["kleene_eps"]
            mem_t = _median(first["kleene"]["peak_mib"])
            mem_4t = _median(widest["kleene"]["peak_mib"])
            out.append(
                f"{prefix}: P'_3 at T -> 4T kleene {first['kleene_eps']:,.0f} -> {widest['kleene_eps']:,.0f} ev/s "
                f"({'loss' if loss > 0 else 'gain'} {abs(loss):.0%}, target loss <= 20%); "
                f"peak memory {mem_t:.0f} -> {mem_4t:.0f} MiB ({mem_4t / mem_t - 1:+.0%}, target within 20%)"
            )
    selective = {
        n: r["kleene_eps"]
        for n, r in rows.items()
        if (r["family"] == "P'" or n == "C2") and r.get("kleene_eps")
    }
    if selective:
        slow = [f"{n} ({v / 1e6:.1f} M)" for n, v in sorted(selective.items(), key=lambda kv: kv[1]) if v < 10e6]
        out.append(
            f"selective queries (P'_n, C2): {min(selective.values()) / 1e6:.1f}-{max(selective.values()) / 1e6:.1f} M "
            f"ev/s, median {statistics.median(selective.values()) / 1e6:.1f} M; at least 10 M on "
            f"{sum(v >= 10e6 for v in selective.values())} of {len(selective)}"
            + (f"; below: {', '.join(slow)}" if slow else "")
        )
    shares = []
    for r in rows.values():
        phases = r["core"].get("phases") or []
        totals = [sum(p.values()) for p in phases]
        shares += [p["build"] / t for p, t in zip(phases, totals) if t]
    if shares:
        out.append(
            f"share of CORE's time spent building PyEvents in Python: {min(shares):.0%}-{max(shares):.0%} "
            f"(median {statistics.median(shares):.0%})"
        )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="results.json of a benchmarks.suite run")
    args = parser.parse_args(argv)
    result = json.loads(args.results.read_text())
    print(
        f"# {result['events']:,} events per dataset, {result['format']}, protocol {result['protocol']}, "
        f"median of {result['runs']} runs"
    )
    for line in lines(result):
        print(f"- {line}")


if __name__ == "__main__":
    main()
