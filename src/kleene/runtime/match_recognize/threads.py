"""The search for the most preferred match from a start row: all threads together, no
backtracking (a Pike VM over :mod:`kleene.automata.row_pattern`).

Threads live in a list ordered by preferment.  At each row every thread waiting on
a ``VAR`` asks whether the row satisfies the variable's DEFINE; the survivors
advance and follow their epsilon moves depth first, preferred branch first, so the
next list is again in preferment order.  A thread reaching ``MATCH`` records its
match and cuts every less preferred thread; the search ends when no thread is
alive, and the last recorded match is the answer (the standard's "first candidate
in preferment order", spec note §2.2; batch semantics at the partition's end).

Merging: two threads at the same row with the same state, the same registers
(relative to the row) and the same *summary* (what the DEFINEs read of the match:
:mod:`.summary`) have the same future, so only the more preferred one is kept.
With physical DEFINEs only, the summary is empty, so at most one thread per
automaton state is alive: time per row is bounded by the program's size.

A search that finds nothing proves every (row, state) it visited dead; later
searches (next start rows) stop at those (when the futures do not depend on the
start: no WITHIN, no MATCH_NUMBER in DEFINE), so failing searches together cost
O(rows x states).  A successful search may read ahead of its match (a greedy
thread that fails later); with overlapping skip modes that look-ahead is repeated
per match: this is where time can grow (docs/match_recognize.md, "The engine").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kleene.automata.row_pattern import BEGIN, CHECK, END, JMP, MARK, MATCH, SPLIT, VAR, Program
from kleene.language.errors import DataError
from kleene.runtime.match_recognize.expressions import Compiled, Context
from kleene.runtime.match_recognize.summary import Layout, Summary

__all__ = ["Live", "Path", "Search", "Stats", "Thread"]

Path = list[tuple[int, int, bool]]
"""A match: (partition row, label index, excluded) per row."""

History = tuple[int, int, int, Any] | None
"""A thread's rows, newest first, as a linked list: (row, label index, excluded, rest)."""


Thread = tuple[int, tuple[int, ...], History, Any]
"""A live thread: (program counter, registers, history, summary or None)."""


class Live:
    """One search in progress (resumable: :meth:`Search.advance` steps it row by row):
    its start, match number, next row, threads in preferment order, the match recorded
    so far (``best``: [history] or empty) and, for the memo, the keys visited per row."""

    __slots__ = ("best", "number", "pos", "start", "threads", "visited")

    def __init__(self, start: int, number: int, pos: int, threads: list[Thread],
                 best: list[Any], visited: dict[int, set[Any]]) -> None:
        self.start, self.number, self.pos = start, number, pos
        self.threads, self.best, self.visited = threads, best, visited

    def match(self) -> Path | None:
        """The answer so far: the match recorded, or None."""
        return _path(self.best[0]) if self.best else None


class Stats:
    """Counts of the work done (for the linearity tests): thread steps and the most threads
    alive at one row."""

    __slots__ = ("max_threads", "steps")

    def __init__(self) -> None:
        self.steps = 0
        self.max_threads = 0


class Search:
    """The matcher of one partition.

    ``truth[label]``: per-row truth of a physical DEFINE (a list of bools), or a function
    ``row -> bool`` evaluating it lazily, or None for a general DEFINE (then
    ``general[label]`` is its compiled condition) or an undefined variable (always true).
    ``history``: how many labels back the DEFINEs read through ``PREV(CLASSIFIER())`` (-1:
    all), which then become part of the merge key; ``where[label]``: "line L, column C" of
    the DEFINE, for errors.
    """

    def __init__(self, program: Program, n: int, truth: Sequence[Any],
                 general: Sequence[Compiled | None], layout: Layout | None,
                 cols: dict[str, Sequence[Any]], window: Callable[[int, int], bool] | None,
                 memo: bool, ids: Callable[[int], int], stats: Stats,
                 history: int | None = None, where: Sequence[str] = ()) -> None:
        self.p = program
        self.n = n
        self.truth = truth
        self.general = general
        self.layout = layout
        self.cols = cols
        self.window = window
        self.memo = memo
        self.ids = ids
        self.stats = stats
        self.history = history
        self.where = where
        self.dead: dict[int, set[Any]] = {}

    def find(self, start: int, number: int) -> Path | None:
        """The most preferred match from ``start`` (numbered ``number``), or None."""
        if self.memo:
            for row in [r for r in self.dead if r < start]:
                del self.dead[row]
        live = self.begin(start, number)
        self.advance(live, self.n)
        if not live.best and self.memo:
            for row, keys in live.visited.items():
                self.dead.setdefault(row, set()).update(keys)
        return live.match()

    def begin(self, start: int, number: int) -> Live:
        """A search from ``start``, its threads waiting on the row ``start``."""
        live = Live(start, number, start, [], [], {})
        s0: Summary | None = None if self.layout is None else self.layout.empty()
        seen = live.visited.setdefault(start, set())
        self._closure(0, (-1,) * self.p.registers, None, s0, start, live.threads, seen, live.best)
        return live

    def advance(self, live: Live, end: int) -> bool:
        """Step ``live`` over the rows up to ``end`` (excluded); True once it is decided (no
        thread alive: ``live.best`` is the final answer whatever rows follow)."""
        threads, start, number, pos = live.threads, live.start, live.number, live.pos
        visited = live.visited
        layout = self.layout
        a_, b_ = self.p.a, self.p.b
        stats = self.stats
        while threads and pos < end:
            stats.steps += len(threads)
            if len(threads) > stats.max_threads:
                stats.max_threads = len(threads)
            following: list[Thread] = []
            seen = visited.setdefault(pos + 1, set())
            for pc, regs, hist, s in threads:
                li = a_[pc]
                if self.window is not None and not self.window(start, pos):
                    continue
                truth = self.truth[li]
                if truth is not None:
                    ok = truth[pos] if isinstance(truth, list) else truth(pos)
                    new_s = s
                    if ok and layout is not None:
                        new_s = self._extend(s, pos, li, hist, start, number)
                elif self.general[li] is not None:
                    ok, new_s = self._general(li, s, pos, hist, start, number)
                else:
                    ok = True
                    new_s = s if layout is None else self._extend(s, pos, li, hist, start, number)
                if not ok:
                    continue
                cell = (pos, li, b_[pc], hist)
                if self._closure(pc + 1, regs, cell, new_s, pos + 1, following, seen, live.best):
                    break  # a match: the less preferred threads are cut
            threads = following
            if not self.memo:
                visited.clear()  # only the failing searches' memo reads them
            pos += 1
        live.threads, live.pos = threads, pos
        return not threads

    def _closure(self, pc: int, regs: tuple[int, ...], hist: History, s: Summary | None,
                 pos: int, out: list[Any], seen: set[Any], best: list[Any]) -> bool:
        """Follow epsilon moves from ``pc`` depth first, preferred branch first, appending
        the threads that wait on a VAR to ``out``; True when MATCH was reached (then
        ``best`` holds the match and the rest of the closure is cut)."""
        ops, a_, b_ = self.p.ops, self.p.a, self.p.b
        dead = self.dead.get(pos) if self.memo else None
        skey = None if s is None or self.layout is None else self.layout.key(s)
        if self.history is not None:
            skey = (skey, _labels(hist, self.history))
        stack = [(pc, regs)]
        while stack:
            pc, regs = stack.pop()
            key = (pc, tuple(r == pos for r in regs), skey)
            if key in seen:
                continue
            seen.add(key)
            if dead is not None and key in dead:
                continue
            op = ops[pc]
            if op == VAR:
                out.append((pc, regs, hist, s))
            elif op == SPLIT:
                stack.append((b_[pc], regs))
                stack.append((a_[pc], regs))
            elif op == JMP:
                stack.append((a_[pc], regs))
            elif op == MARK:
                stack.append((pc + 1, regs[: a_[pc]] + (pos,) + regs[a_[pc] + 1:]))
            elif op == CHECK:
                r = a_[pc]
                cleared = regs[:r] + (-1,) + regs[r + 1:]
                stack.append((b_[pc] if regs[r] == pos else pc + 1, cleared))
            elif op == BEGIN:
                if pos == 0:
                    stack.append((pc + 1, regs))
            elif op == END:
                if pos == self.n:
                    stack.append((pc + 1, regs))
            elif op == MATCH:
                best[:] = [hist]
                return True
        return False

    # ---- the general path: conditions that read the match
    def _context(self, s: Summary, pos: int, li: int, hist: History, start: int,
                 number: int) -> Context:
        label = self.p.labels[li]

        def labels(row: int) -> str | None:
            if row == pos:
                return label
            if row < start or row > pos:
                return None
            cell = hist
            while cell is not None and cell[0] > row:
                cell = cell[3]
            return None if cell is None or cell[0] != row else self.p.labels[cell[1]]
        assert self.layout is not None
        return Context(self.cols, self.n, self.layout, s, number, labels)

    def _extend(self, s: Summary | None, pos: int, li: int, hist: History, start: int,
                number: int) -> Summary:
        assert s is not None and self.layout is not None
        ctx = self._context(s, pos, li, hist, start, number)
        return self.layout.extend(s, pos, self.p.labels[li], ctx)

    def _general(self, li: int, s: Summary | None, pos: int, hist: History, start: int,
                 number: int) -> tuple[bool, Summary | None]:
        assert s is not None and self.layout is not None
        condition = self.general[li]
        assert condition is not None
        label = self.p.labels[li]
        try:
            ctx = self._context(s, pos, li, hist, start, number)
            new_s = self.layout.extend(s, pos, label, ctx)
            ctx.s = new_s
            value = condition(ctx, None)
        except (TypeError, ValueError, ArithmeticError) as err:
            at = self.where[li] if self.where else f"DEFINE {label}"
            raise DataError(f"cannot evaluate the expression at {at}: {err}",
                            row=self.ids(pos)) from None
        if value is not None and not isinstance(value, bool):
            raise DataError(f"DEFINE {label}: the condition gave {value!r}, not true or false",
                            row=self.ids(pos))
        return value is True, new_s


def _labels(hist: History, depth: int) -> tuple[int, ...]:
    out = []
    while hist is not None and depth != 0:
        out.append(hist[1])
        hist = hist[3]
        depth -= 1
    return tuple(out)


def _path(hist: History) -> Path:
    out: Path = []
    while hist is not None:
        out.append((hist[0], hist[1], bool(hist[2])))
        hist = hist[3]
    out.reverse()
    return out
