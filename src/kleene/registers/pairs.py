"""Vectorized pair join: two-event patterns with a condition between them, per window.

Many queries with conditions between events relate exactly two events, e.g.
``SELL as a; BUY as b FILTER a[price > 100] AND b[price < a.price] WITHIN 10
EVENTS``.  Their SRT has the shape ``q0 --t1--> q (a gap state) --t2--> f``
with ``f`` a dead final state: every match is one pair ``(i, j)``, ``i < j``,
``t1`` taking ``i`` and ``t2`` taking ``j`` inside the window.  Instead of one
run per ``t1`` event, tried one by one by every later event, the pair join
keeps, per ``(t1, t2)``, an *index of the window*: the positions, times and
attribute columns of the recent events ``t1`` accepts (sorted by position).
For each batch it finds, for every event ``t2``'s unary prefilter accepts,
the range of indexed events inside its window with two binary searches, and
evaluates ``t2``'s conditions on all these candidate pairs at once: the pairs
become one Arrow batch (the second event's columns, and the first event's
under a prefixed name), on which the conditions are evaluated by the same
vectorized :class:`~kleene.predicates.table.PredicateTable` as unary
predicates, with ``a.price`` rewritten to the first event's column.

Cost: ``O(n)`` vectorized work per batch of ``n`` events for the prefilter,
``O(c)`` vectorized work for the ``c`` candidate pairs (at most ``w`` per
second event for a window of ``w`` events), and Python work only per complex
event output.  Plain Python does not touch the events that cannot be part of
a match, nor the candidate pairs that fail the condition.

It applies when the window is set, there is no PARTITION BY, CONSUME BY or
LIMIT, the strategy is ALL or ANY, and the SRT has the shape above with
conditions only on ``t2`` that read the event ``t1`` took (:func:`pair_plan`);
other queries run on the general runtime (:mod:`kleene.registers.runtime`),
with the same results (the property tests check both against the oracle).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.language import ast
from kleene.language.conditions import var_attrs
from kleene.limits import Limits
from kleene.predicates.table import PredicateTable
from kleene.registers.srt import SRT, RTransition
from kleene.runtime.contract import FoundSink
from kleene.runtime.enumeration import Columns

LEFT = "\x00first."
"""Column-name prefix of the first event's attributes in a pair batch."""


@dataclass
class _Index:
    """The events ``t1`` accepted that a later event may still pair with."""

    positions: np.ndarray
    times: np.ndarray
    columns: pa.Table | None


@dataclass
class PairStep:
    first: RTransition
    second: RTransition
    table: PredicateTable | None
    """``second``'s conditions over pair batches (None: no condition)."""
    right_attrs: tuple[str, ...]
    left_attrs: tuple[str, ...]
    index: _Index
    tried: int = 0
    """Candidate pairs evaluated so far (for tests that count work)."""


def _to_pair(node: Any, first_vars: frozenset[str]) -> Any:
    """``a.x`` (a bound by the first transition) -> the pair batch's first-event column."""
    if isinstance(node, ast.VarAttr):
        return ast.Attr(LEFT + node.name)
    changes = {}
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(node, name, None)
        if child is not None:
            changes[name] = _to_pair(child, first_vars)
    return dataclasses.replace(node, **changes) if changes else node


def pair_plan(
    srt: SRT,
    *,
    window: int | float | None,
    partitioned: bool,
    consume: str,
    limit: int | None,
    strategy: str,
    type_column: str,
) -> list[PairStep] | None:
    """The pair join for this SRT and settings, or None when it does not apply."""
    if window is None or partitioned or consume != "NONE" or limit is not None or srt.monitors:
        return None
    if strategy not in ("ALL", "ANY"):
        return None
    steps: list[PairStep] = []
    for t1 in srt.labelled[srt.initial]:
        q = t1.target
        if t1.guards or t1.clears or t1.neg or q in srt.finals or srt.dead[q]:
            return None
        if not srt.stationary[q] or srt.gaps[q]:
            return None
        for t2 in srt.labelled[q]:
            if t2.clears or t2.neg or t2.target not in srt.finals or not srt.dead[t2.target]:
                return None
            refs = [r for c in t2.conditions for r in var_attrs(c.pred)]
            if any(r.prev or r.var not in t1.variables for r in refs):
                return None
            table = None
            right: set[str] = set()
            if t2.conditions:
                preds = [_to_pair(c.pred, t1.variables) for c in t2.conditions]
                pred = preds[0]
                for p in preds[1:]:
                    pred = ast.PAnd(pred, p)
                table = PredicateTable([], [pred], type_column=type_column)
                right = {a for a in table.read_attributes if not a.startswith(LEFT)}
            left = sorted({r.name for r in refs})
            index = _Index(np.zeros(0, np.int64), np.zeros(0, np.float64), None)
            steps.append(PairStep(t1, t2, table, tuple(sorted(right)), tuple(left), index))
    return steps or None


def indices(rows: np.ndarray) -> pa.Array:
    """``rows`` as an Arrow int64 array for ``take``, without copying.

    Not ``pa.array(rows)``: for a numpy array that asks ``numpy.ma`` whether it is masked,
    which imports ``numpy.ma`` (~9 ms of the start of every run, on its first call).
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(rows)])


def _columns(batch: pa.RecordBatch, names: Sequence[str], rows: np.ndarray) -> pa.Table:
    present = batch.schema.names
    arrays = [
        pc.take(batch.column(a), indices(rows)) if a in present else pa.nulls(len(rows))
        for a in names
    ]
    return pa.Table.from_arrays(arrays, names=[LEFT + a for a in names]) if names else pa.table(
        {"_": pa.nulls(len(rows))}
    )


def run_pairs(
    steps: list[PairStep],
    batch: pa.RecordBatch,
    bits: np.ndarray,
    positions: np.ndarray,
    times: np.ndarray,
    window: float,
    out: FoundSink,
    limits: Limits | None = None,
) -> None:
    """Append the batch's complex events to ``out``, in order of end position.

    ``limits.max_matches``: an event completing more complex events stops the run
    (:mod:`kleene.limits`; the pair join has no LIMIT).
    """
    found: list[tuple[np.ndarray, np.ndarray, bool, bool]] = []
    for step in steps:
        m1, m2 = np.uint64(step.first.mask), np.uint64(step.second.mask)
        new_left = np.flatnonzero((bits & m1) == m1)
        right = np.flatnonzero((bits & m2) == m2)
        idx = step.index
        # The index: earlier batches' first events plus this batch's.
        if len(new_left):
            cols = _columns(batch, step.left_attrs, new_left)
            l_pos = np.concatenate((idx.positions, positions[new_left]))
            l_time = np.concatenate((idx.times, times[new_left].astype(np.float64)))
            l_cols = cols if idx.columns is None else pa.concat_tables(
                [idx.columns, cols], promote_options="permissive"
            )
        else:
            l_pos, l_time, l_cols = idx.positions, idx.times, idx.columns
        if len(right) and len(l_pos):
            r_pos, r_time = positions[right], times[right].astype(np.float64)
            lo = np.searchsorted(l_time, r_time - window, side="left")
            hi = np.searchsorted(l_pos, r_pos, side="left")
            counts = np.maximum(hi - lo, 0)
            total = int(counts.sum())
            step.tried += total
            if total:
                r_idx = np.repeat(np.arange(len(right)), counts)
                offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
                l_idx = np.repeat(lo, counts) + offsets
                if step.table is not None:
                    assert l_cols is not None
                    pair = pc.take(l_cols, indices(l_idx))
                    present = batch.schema.names
                    for a in step.right_attrs:
                        col = pc.take(batch.column(a), indices(right[r_idx])) if a in present else pa.nulls(total)
                        pair = pair.append_column(a, col)
                    ok = (step.table.evaluate(pair.combine_chunks().to_batches()[0]) & np.uint64(1)) != 0
                    r_idx, l_idx = r_idx[ok], l_idx[ok]
                found.append((l_pos[l_idx], r_pos[r_idx], step.first.marked, step.second.marked))
        # Keep only what a later event can still pair with: time >= latest - window.
        if len(l_pos):
            keep = int(np.searchsorted(l_time, float(times[-1]) - window, side="left"))
            step.index = _Index(
                l_pos[keep:], l_time[keep:], None if l_cols is None else l_cols.slice(keep)
            )
    if not found:
        return
    if len(found) == 1:
        starts, ends, mark1, mark2 = found[0]
        order = np.lexsort((-starts, ends))
        if limits is not None:
            _check_matches(ends, limits)
        if isinstance(out, Columns):  # the bulk path: no object per complex event
            starts, ends = starts[order], ends[order]
            chosen = [c for c, m in ((starts, mark1), (ends, mark2)) if m]
            out.extend_arrays(starts, ends, np.stack(chosen, axis=1) if chosen else np.zeros((len(starts), 0)))
            return
        s_list, e_list = starts[order].tolist(), ends[order].tolist()
        # Tuples built by zip, in C: the only per-match work left is the output itself.
        if mark1 and mark2:
            marked: Any = zip(s_list, e_list)
        elif mark1 or mark2:
            marked = zip(s_list if mark1 else e_list)
        else:
            marked = repeat(())
        out.extend(zip(s_list, e_list, marked, repeat(None)))
        return
    unique: dict[tuple[int, int, tuple[int, ...]], None] = {}
    for starts, ends, mark1, mark2 in found:
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            unique[(s, e, (s,) * mark1 + (e,) * mark2)] = None
    if limits is not None:
        _check_matches(np.fromiter((k[1] for k in unique), np.int64, len(unique)), limits)
    for s, e, marked in sorted(unique, key=lambda k: (k[1], -k[0])):
        out.append((s, e, marked, None))


def _check_matches(ends: np.ndarray, limits: Limits) -> None:
    """Stop at the first event that completes more than ``max_matches`` complex events."""
    if len(ends) <= limits.max_matches:
        return
    values, counts = np.unique(ends, return_counts=True)
    over = np.flatnonzero(counts > limits.max_matches)
    if len(over):
        raise limits.matches_error(int(values[over[0]]))
