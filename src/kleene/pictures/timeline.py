"""A timeline of a stretch of the stream and its complex events, drawn with matplotlib.

One lane per partition (PARTITION BY key; one lane without it), events as
marks on the time axis coloured by event type, and each complex event as a
bar over its lane from its first to its last event, its own events marked on
the bar (a complex event's events need not be adjacent: the bar spans the
events skipped between them).  Overlapping complex events of a lane are
stacked on tracks above the lane's events.  The x axis is the time column's
time when the query has one, else the input position.

matplotlib is imported only here, when a picture is asked for (the ``plot``
extra); a :class:`~kleene.language.errors.MissingDependencyError` says how to
install it.  The figure is a plain :class:`matplotlib.figure.Figure` (no
pyplot, no global state): it shows in a notebook and is saved with
``savefig`` on any machine, with or without a display.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kleene.language.errors import MissingDependencyError
from kleene.pictures.stretch import Stretch
from kleene.pictures.text import query_lines
from kleene.results import Match

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from kleene.api import Query

SPAN_GID = "complex-event"
"""The ``gid`` of each complex event's bar (a Line2D), for tools and tests."""
EVENTS_GID = "events"
"""The ``gid`` of the event marks of one event type (a PathCollection labelled by the type)."""
MAX_LANES = 12
PLOT_HINT = "drawing a timeline needs matplotlib: pip install 'kleene[plot]'"


def figure_class() -> type[Figure]:
    """matplotlib's Figure, imported now (or a MissingDependencyError naming the extra)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MissingDependencyError(PLOT_HINT) from exc
    return Figure


def draw_timeline(
    query: Query,
    stretch: Stretch,
    *,
    path: str | Path | None = None,
    max_lanes: int = MAX_LANES,
    width: float = 12.0,
) -> Figure:
    """The figure of ``stretch`` (see :func:`kleene.pictures.stretch.collect`); saved to ``path``
    when given (the format from its extension: .png, .svg, .pdf)."""
    figure = figure_class()
    x = _x_values(stretch)
    lane_of = _lanes(stretch, max_lanes)
    # Complex events: tracks per lane (greedy: the first track free at its start).
    tracks: dict[int, list[int]] = {}
    placed: list[tuple[int, int, Match]] = []  # (lane, track, match)
    index = {int(p): i for i, p in enumerate(stretch.positions)}
    for m in sorted(stretch.matches, key=lambda m: (m.start, m.end)):
        first = index.get(m.positions[0] if m.positions else m.start)
        if first is None or m.start not in index or m.end not in index:
            continue  # a row of it was not kept (times out of order around the stretch's start)
        lane = lane_of.get(stretch.lanes[first])
        if lane is None:
            continue  # a lane beyond max_lanes
        ends = tracks.setdefault(lane, [])
        track = next((k for k, e in enumerate(ends) if e < m.start), len(ends))
        if track == len(ends):
            ends.append(m.end)
        else:
            ends[track] = m.end
        placed.append((lane, track, m))
    # Lane heights: the event row plus its tracks, stacked bottom-up.
    base: dict[int, float] = {}
    y = 0.0
    for lane in range(len(set(lane_of.values()))):
        base[lane] = y
        y += 1.0 + 0.35 * len(tracks.get(lane, []))
    height = 1.6 + 0.45 * y + 0.22 * len(query_lines(query.ast, query.text))
    fig = figure(figsize=(width, max(3.0, height)), layout="constrained")
    ax = fig.add_subplot()
    for lane in range(1, len(base), 2):  # every other lane shaded, to follow a lane across
        ax.axhspan(base[lane] - 0.5, base[lane] + 0.5 + 0.35 * len(tracks.get(lane, [])), color="0.96", zorder=0)
    _draw_events(ax, stretch, x, lane_of, base)
    for lane, track, m in placed:
        xs = [x[index[p]] for p in m.positions if p in index]
        ys = base[lane] + 0.45 + 0.35 * track
        ax.plot(
            [x[index[m.start]], x[index[m.end]]], [ys, ys], color="0.25", linewidth=2.5,
            solid_capstyle="round", gid=SPAN_GID, zorder=2,
        )
        ax.plot(xs, [ys] * len(xs), linestyle="none", marker="o", markersize=4, color="0.05", zorder=3)
        ax.vlines(xs, base[lane], ys, colors="0.6", linewidth=0.6, zorder=1)
    _axes_text(ax, query, stretch, lane_of, base, len(placed))
    ax.set_ylim(-0.6, y - 0.2)
    if path is not None:
        fig.savefig(path, dpi=150)
    return fig


def _x_values(stretch: Stretch) -> np.ndarray:
    if stretch.times is not None:
        return stretch.times.astype("datetime64[ns]")
    return stretch.positions.astype(np.int64)


def _lanes(stretch: Stretch, max_lanes: int) -> dict[Hashable, int]:
    """Lane number per partition key: lanes holding complex events first, then by first event."""
    index = {int(p): i for i, p in enumerate(stretch.positions)}
    order: list[Hashable] = []
    for m in stretch.matches:
        first = index.get(m.positions[0] if m.positions else m.start)
        if first is not None and stretch.lanes[first] not in order:
            order.append(stretch.lanes[first])
    for key in stretch.lanes:
        if key not in order:
            order.append(key)
    return {key: i for i, key in enumerate(order[:max_lanes])}


def _draw_events(
    ax: Axes, stretch: Stretch, x: np.ndarray, lane_of: dict[Hashable, int], base: dict[int, float]
) -> None:
    """One scatter per event type (a legend entry each), on the lanes' event rows."""
    lanes = np.array([lane_of.get(key, -1) for key in stretch.lanes], dtype=np.int64)
    types = np.array(stretch.types, dtype=object)
    colours = _colours(sorted(set(stretch.types)))
    for name, colour in colours.items():
        rows = np.flatnonzero((types == name) & (lanes >= 0))
        if not len(rows):
            continue
        ys = [base[int(lanes[r])] for r in rows]
        ax.scatter(x[rows], ys, s=22, color=colour, label=name, gid=EVENTS_GID, zorder=4)


def _colours(names: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: cmap(i % cmap.N) for i, name in enumerate(names)}


def _axes_text(
    ax: Axes,
    query: Query,
    stretch: Stretch,
    lane_of: dict[Hashable, int],
    base: dict[int, float],
    shown: int,
) -> None:
    partition = query.partition_by
    ax.set_yticks([base[i] for i in sorted(base)])
    labels = sorted(lane_of, key=lambda k: lane_of[k])
    ax.set_yticklabels([_lane_name(partition, key) for key in labels])
    ax.grid(axis="x", color="0.9")
    ax.set_xlabel(
        f"time ({query.options.time_column})" if stretch.times is not None else "input position"
    )
    ax.set_ylabel("partition: " + ", ".join(partition) if partition else "")
    n = len(stretch.positions)
    span = (
        f"events {int(stretch.positions[0])}-{int(stretch.positions[-1])} ({n} events)"
        if n else "an empty stretch"
    )
    hidden = len(set(stretch.lanes)) - len(lane_of)
    caption = (
        f"{shown} complex event{'s' if shown != 1 else ''} in {span}; stretch ended by "
        f"{stretch.cut_by}" + (f"; {hidden} more lanes not shown" if hidden > 0 else "")
    )
    ax.set_title("\n".join([*query_lines(query.ast, query.text), caption]), loc="left", fontsize=9)
    if stretch.types:
        ax.legend(title="event type", loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    if stretch.times is not None:
        import matplotlib.dates as mdates

        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def _lane_name(partition: tuple[str, ...], key: Hashable) -> str:
    if not partition:
        return "all events"
    if key is None:
        return "(no partition)"
    assert isinstance(key, tuple)
    return ", ".join(str(v) for v in key)
