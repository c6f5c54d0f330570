"""PNG plots of a harness run, in the shape of the CORE paper's Figures 7, 8 and 9.

* ``throughput_n.png`` (Figure 7): events/s against n for P_n (top row) and P'_n (bottom
  row), one column per dataset, log scale, kleene and CORE;
* ``throughput_window.png`` (Figure 8): events/s of P'_3 against the window T..4T per dataset;
* ``queries.png`` (Figure 9): events/s of Q1-Q7 (and the core issue's C1, C2) as bars.

Needs matplotlib (the ``bench`` extra); imported only when plotting.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    from benchmarks.suite import Row

DATASETS = ("stock", "smart_homes", "taxi")
STYLE = {"kleene": dict(color="tab:blue", marker="o"), "CORE": dict(color="tab:red", marker="s")}


def _series(rows: Sequence[Row], keep, x) -> dict[str, tuple[list[float], list[float]]]:  # type: ignore[no-untyped-def]
    out: dict[str, tuple[list[float], list[float]]] = {"kleene": ([], []), "CORE": ([], [])}
    for r in sorted((r for r in rows if keep(r)), key=x):
        for label, eps in (("kleene", r.kleene.throughput), ("CORE", r.core.throughput)):
            if eps:
                out[label][0].append(x(r))
                out[label][1].append(eps)
    return out


def _draw(ax, series, xlabel: str, title: str) -> None:  # type: ignore[no-untyped-def]
    for label, (xs, ys) in series.items():
        if xs:
            ax.plot(xs, ys, label=label, **STYLE[label])
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)


def plot_all(rows: Sequence[Row], out: Path, title: str = "") -> list[Path]:
    written: list[Path] = []
    present = [d for d in DATASETS if any(r.dataset == d for r in rows)]
    if any(r.family in ("P", "P'") for r in rows) and present:
        fig, axes = plt.subplots(2, len(present), figsize=(4.2 * len(present), 7), squeeze=False)
        for j, d in enumerate(present):
            for i, fam in enumerate(("P", "P'")):
                s = _series(rows, lambda r, d=d, fam=fam: r.dataset == d and r.family == fam, lambda r: r.n)
                _draw(axes[i][j], s, "n (pattern length)", f"{d}: {fam}_n")
                axes[i][j].set_xticks([3, 6, 9, 12, 24])
            axes[0][j].set_ylabel("events/s") if j == 0 else None
        axes[1][0].set_ylabel("events/s")
        axes[0][0].legend()
        fig.suptitle(f"Throughput vs n (cf. CORE paper Fig. 7); {title}")
        fig.tight_layout()
        written.append(out / "throughput_n.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    sweep = [r for r in rows if (r.family == "sweep" or (r.family == "P'" and r.n == 3))]
    if any(r.family == "sweep" for r in sweep):
        ds = [d for d in DATASETS if any(r.dataset == d for r in sweep)]
        fig, axes = plt.subplots(1, len(ds), figsize=(4.2 * len(ds), 3.8), squeeze=False)
        for j, d in enumerate(ds):
            s = _series(sweep, lambda r, d=d: r.dataset == d, lambda r: r.factor)
            _draw(axes[0][j], s, "window (multiples of T)", f"{d}: P'_3")
            axes[0][j].set_xticks([1, 2, 3, 4])
        axes[0][0].set_ylabel("events/s")
        axes[0][0].legend()
        fig.suptitle(f"Throughput vs window (cf. CORE paper Fig. 8); {title}")
        fig.tight_layout()
        written.append(out / "throughput_window.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    qs = [r for r in rows if r.family in ("Q", "core")]
    if qs:
        fig, ax = plt.subplots(figsize=(1.0 * len(qs) + 3, 3.8))
        width = 0.4
        for k, (label, get) in enumerate((("kleene", lambda r: r.kleene.throughput), ("CORE", lambda r: r.core.throughput))):
            ax.bar([i + (k - 0.5) * width for i in range(len(qs))], [get(r) or 0 for r in qs], width,
                   label=label, color=STYLE[label]["color"])
        ax.set_xticks(range(len(qs)), [r.workload for r in qs])
        ax.set_yscale("log")
        ax.set_ylabel("events/s")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend()
        ax.set_title(f"Q1-Q7 (stock) and the core issue's C1, C2 (cf. CORE paper Fig. 9); {title}", fontsize=9)
        fig.tight_layout()
        written.append(out / "queries.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written
