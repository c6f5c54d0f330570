"""The fast path's partition loop: every search and every skip of one partition, over
per-row truth bits, in one call.

Used when every DEFINE is physical (vectorised truth per row: ``truth[label][row]``
is 1 or 0), there is no WITHIN and the program has at most :data:`MAX_REGISTERS`
registers.  It is the algorithm of :class:`.threads.Search` without summaries
(threads merge on state and registers alone), plus the driver of
:mod:`.engine` (AFTER MATCH SKIP, empty matches, unmatched rows).
``kleene.runtime._mr_scan.scan`` is its compiled twin (:mod:`kleene.native`), the
same algorithm in C-level loops; this module stays the readable original and is
what runs when the twin was not built.

Result: ``(events, rows, labels, excluded, error)``.  ``events`` is a flat list of
triples ``(start, offset, length)`` in output order: a match starting at ``start``
whose rows are ``rows[offset:offset + length]`` (length 0: an empty match), or
``length`` -1 for a row no match covers (``start`` is the row).  ``error`` is None
or ``(code, match number, start)``: code 1, the SKIP TO variable is absent from the
match; code 2, the skip target is the match's first row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kleene.automata.row_pattern import BEGIN, CHECK, END, JMP, MARK, MATCH, SPLIT, VAR

__all__ = ["DEAD_CAP", "MAX_REGISTERS", "MAX_SEEN", "SKIP_CODES", "scan"]

MAX_REGISTERS = 14
"""Registers the compiled twin packs into its merge keys; more: the general path runs."""

MAX_SEEN = 1 << 22
"""The compiled twin indexes an array by (state, register mask): it runs when the program's
``len(ops) << registers`` is at most this."""

DEAD_CAP = 4_000_000
"""The most (row, state) pairs remembered as dead; past it the memory is cleared (a later
search then does again work a failed one did: time, never correctness)."""

SKIP_CODES = {"PAST LAST ROW": 0, "TO NEXT ROW": 1, "TO FIRST": 2, "TO LAST": 3}


def scan(ops: Sequence[int], a: Sequence[int], b: Sequence[int], registers: int,
         truth: Sequence[Sequence[int]], n: int, skip: int, skip_mask: int,
         steps: list[int]) -> tuple[list[int], list[int], list[int], list[int], Any]:
    """Run the partition (see the module docstring); ``skip_mask`` has bit ``label`` set
    for the labels of the SKIP TO variable; ``steps[0]`` counts thread steps and
    ``steps[1]`` keeps the most threads alive at one row."""
    events: list[int] = []
    rows: list[int] = []
    labels: list[int] = []
    excluded: list[int] = []
    dead: set[tuple[int, int, int]] = set()
    dead_top = -1
    r = number = covered = 0
    while r < n:
        if r > dead_top or len(dead) > DEAD_CAP:
            dead.clear()
        visited: list[tuple[int, int, int]] = []
        found = _find(ops, a, b, registers, truth, n, r, dead, visited, steps)
        if found is None:
            for key in visited:
                dead.add(key)
                dead_top = max(dead_top, key[0])
            if r >= covered:
                events += (r, len(rows), -1)
            r += 1
            continue
        number += 1
        events += (r, len(rows), len(found))
        for row, label, excl in found:
            rows.append(row)
            labels.append(label)
            excluded.append(excl)
        if not found:
            r += 1
            continue
        last = found[-1][0]
        covered = max(covered, last + 1)
        if skip == 0:
            r = last + 1
        elif skip == 1:
            r += 1
        else:
            hits = [row for row, label, _ in found if skip_mask >> label & 1]
            if not hits:
                return events, rows, labels, excluded, (1, number, r)
            target = hits[0] if skip == 2 else hits[-1]
            if target == r:
                return events, rows, labels, excluded, (2, number, r)
            r = target
    return events, rows, labels, excluded, None


def _find(ops: Sequence[int], a: Sequence[int], b: Sequence[int], registers: int,
          truth: Sequence[Sequence[int]], n: int, start: int, dead: set[tuple[int, int, int]],
          visited: list[tuple[int, int, int]], steps: list[int]) -> list[tuple[int, int, int]] | None:
    """The most preferred match from ``start`` as (row, label, excluded) triples, or None."""
    threads: list[tuple[int, tuple[int, ...], Any]] = []
    best: list[Any] = []
    seen: set[tuple[int, int]] = set()
    _closure(ops, a, b, 0, (-1,) * registers, None, start, n, threads, seen, dead, visited, best)
    pos = start
    while threads and pos < n:
        steps[0] += len(threads)
        steps[1] = max(steps[1], len(threads))
        following: list[tuple[int, tuple[int, ...], Any]] = []
        seen = set()
        for pc, regs, hist in threads:
            label = a[pc]
            if not truth[label][pos]:
                continue
            cell = (pos, label, b[pc], hist)
            if _closure(ops, a, b, pc + 1, regs, cell, pos + 1, n, following, seen, dead,
                        visited, best):
                break
        threads = following
        pos += 1
    if not best:
        return None
    out = []
    hist = best[0]
    while hist is not None:
        out.append((hist[0], hist[1], hist[2]))
        hist = hist[3]
    out.reverse()
    return out


def _closure(ops: Sequence[int], a: Sequence[int], b: Sequence[int], pc: int,
             regs: tuple[int, ...], hist: Any, pos: int, n: int, out: list[Any],
             seen: set[tuple[int, int]], dead: set[tuple[int, int, int]],
             visited: list[tuple[int, int, int]], best: list[Any]) -> bool:
    stack = [(pc, regs)]
    while stack:
        pc, regs = stack.pop()
        mask = 0
        for i, r in enumerate(regs):
            if r == pos:
                mask |= 1 << i
        if (pc, mask) in seen:
            continue
        seen.add((pc, mask))
        if (pos, pc, mask) in dead:
            continue
        visited.append((pos, pc, mask))
        op = ops[pc]
        if op == VAR:
            out.append((pc, regs, hist))
        elif op == SPLIT:
            stack.append((b[pc], regs))
            stack.append((a[pc], regs))
        elif op == JMP:
            stack.append((a[pc], regs))
        elif op == MARK:
            stack.append((pc + 1, regs[: a[pc]] + (pos,) + regs[a[pc] + 1:]))
        elif op == CHECK:
            i = a[pc]
            stack.append((b[pc] if regs[i] == pos else pc + 1, regs[:i] + (-1,) + regs[i + 1:]))
        elif op == BEGIN:
            if pos == 0:
                stack.append((pc + 1, regs))
        elif op == END:
            if pos == n:
                stack.append((pc + 1, regs))
        elif op == MATCH:
            best[:] = [hist]
            return True
    return False
