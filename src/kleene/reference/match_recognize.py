"""The reference evaluator of MATCH_RECOGNIZE: the standard's semantics written plainly.

Independent of the engine code, and slow on purpose: per partition (rows in
ORDER BY order), at each start row it enumerates candidate matches in
preferment order by depth-first backtracking over the pattern (greedy: one
more iteration first; reluctant: stop first; alternation left first; PERMUTE
in lexicographic order of its arguments; an iteration that consumed no row
after the minimum ends the loop) and takes the first candidate whose every
row satisfies its DEFINE condition, evaluated when the row is tried, with
RUNNING semantics over the candidate so far (spec note §2.1-§2.3).  Then
AFTER MATCH SKIP picks the next start; ONE ROW PER MATCH evaluates the
measures at the last row, ALL ROWS PER MATCH at each row (RUNNING by
default), with SHOW/OMIT EMPTY MATCHES and WITH UNMATCHED ROWS; ``{- -}``
rows are left out of ALL ROWS output; WITHIN drops candidates whose last and
first rows' first ORDER BY keys differ by the bound or more (Flink's rule:
the span must be shorter than the bound).

A step budget (DEFINE evaluations per start row) stops runaway backtracking
with :class:`SearchBudgetError`.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kleene.language.errors import DataError, KleeneError, QueryError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.parser import parse
from kleene.reference.mr_expressions import Frame, evaluate
from kleene.reference.mr_walks import pattern_variables, sub_expressions

__all__ = ["DEFAULT_MAX_STEPS", "MAX_DEPTH", "STACK_BYTES", "SearchBudgetError",
           "SearchDepthError", "match_recognize"]

DEFAULT_MAX_STEPS = 1_000_000
"""DEFINE evaluations allowed per start row before the search gives up."""

_FRAMES_PER_ROW = 2
"""Python frames the backtracking search nests per matched row, roughly."""

Path = list[tuple[int, str, bool]]
"""A candidate match: (partition row, variable, excluded) per mapped row."""


class SearchBudgetError(KleeneError):
    """The backtracking search from one start row exceeded its step budget."""


class SearchDepthError(SearchBudgetError):
    """The backtracking search nested deeper than the recursion limit allows (a very long
    match, or a deeply nested pattern)."""


def match_recognize(
    source: pa.Table | Sequence[Mapping[str, Any]],
    query: str | ast.MatchRecognize,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
) -> pa.Table:
    """Run one MATCH_RECOGNIZE clause over ``source`` and return the standard's output.

    Columns: ONE ROW PER MATCH gives the PARTITION BY columns then the measures;
    ALL ROWS PER MATCH gives the PARTITION BY columns, the ORDER BY columns, the
    measures, then the other input columns in input order.  Rows come by
    partition (in order of first appearance in the input), then match number,
    then row order.
    """
    mr = parse(query) if isinstance(query, str) else query
    table = source if isinstance(source, pa.Table) else pa.Table.from_pylist(list(source))
    work = lambda: _Run(mr, table, max_steps).result()  # noqa: E731
    if table.num_rows <= SHALLOW_ROWS:
        try:
            return _with_recursion_limit(work, SHALLOW_DEPTH)
        except SearchDepthError:
            pass  # a deeply nested pattern: run again on the deep stack
    return _with_deep_stack(work)


SHALLOW_ROWS = 1_000
"""Inputs up to this many rows run in the calling thread (starting a thread with a large
stack costs ~2 ms, as much as evaluating a small case)."""

SHALLOW_DEPTH = 10_000
"""The recursion limit in the calling thread: measured safe on an 8 MiB stack (a search
nesting ~16,000 frames ran, ~24,000 overflowed)."""


def _with_recursion_limit(work: Callable[[], pa.Table], depth: int) -> pa.Table:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth)
    try:
        return work()
    finally:
        sys.setrecursionlimit(limit)


STACK_BYTES = 256 * 2**20
"""The stack of the thread the search runs in: the backtracking search nests a few
generator frames per matched row, each resumed through C recursion, so a long match needs
far more than a main thread's usual 8 MiB."""

MAX_DEPTH = 120_000
"""Python's recursion limit during the search: low enough that :data:`STACK_BYTES` never
overflows (a segmentation fault), so a longer match is a :class:`SearchBudgetError`."""


def _with_deep_stack(work: Callable[[], pa.Table]) -> pa.Table:
    """Run ``work`` in a thread with a :data:`STACK_BYTES` stack and :data:`MAX_DEPTH`."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["table"] = _with_recursion_limit(work, MAX_DEPTH)
        except BaseException as err:  # noqa: BLE001 - handed to the caller below
            outcome["error"] = err

    previous = threading.stack_size(STACK_BYTES)
    try:
        thread = threading.Thread(target=target, name="kleene-match-recognize-reference")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["table"]


class _Run:
    """One evaluation: the resolved columns, the partitions, the output being built."""

    def __init__(self, mr: ast.MatchRecognize, table: pa.Table, max_steps: int) -> None:
        self.mr = mr
        self.table = table
        self.max_steps = max_steps
        self.names = list(table.column_names)
        self.resolved: dict[tuple[str, bool], str] = {}
        for col in self._all_columns():
            self.resolved[(col.name, col.quoted)] = self._resolve(col)
        primaries = pattern_variables(mr.pattern)
        self.variables: dict[str, frozenset[str]] = {v: frozenset([v]) for v in primaries}
        for s in mr.subsets:
            self.variables[s.name] = frozenset(s.members)
        self.defines = {d.var: d.condition for d in mr.defines}
        self.partition_cols = [self.resolved[(c.name, c.quoted)] for c in mr.partition_by]
        self.order_cols = [self.resolved[(k.column.name, k.column.quoted)] for k in mr.order_by]
        self.within_keys = self._within_keys()
        self.out_columns = self._output_columns()
        self.out: dict[str, list[Any]] = {name: [] for name, _ in self.out_columns}

    # ---- columns
    def _all_columns(self) -> Iterator[ast.Column]:
        yield from self.mr.partition_by
        yield from (k.column for k in self.mr.order_by)
        exprs = [m.expr for m in self.mr.measures] + [d.condition for d in self.mr.defines]
        for e in exprs:
            for x in sub_expressions(e):
                if isinstance(x, ast.Column):
                    yield x

    def _error(self, message: str, span: ast.Span) -> QueryError:
        return QueryError(message, span.line or 1, span.column or 1, self.mr.source)

    def _resolve(self, col: ast.Column) -> str:
        """Quoted names match exactly; unquoted ones exactly, else case-insensitively."""
        if col.name in self.names:
            return col.name
        if not col.quoted:
            folded = [n for n in self.names if n.lower() == col.name.lower()]
            if len(folded) == 1:
                return folded[0]
            if len(folded) > 1:
                raise self._error(
                    f"column {col.name!r} is ambiguous: the input has {', '.join(folded)}; "
                    "quote the name", col.span)
        raise self._error(
            f"unknown column {col.name!r}; the input has {', '.join(self.names)}", col.span)

    def column_of(self, col: ast.Column) -> str:
        return self.resolved[(col.name, col.quoted)]

    def _output_columns(self) -> list[tuple[str, pa.DataType | None]]:
        schema = self.table.schema
        cols: list[tuple[str, pa.DataType | None]] = []
        lead = list(dict.fromkeys(self.partition_cols + (self.order_cols if self.mr.all_rows else [])))
        cols += [(c, schema.field(c).type) for c in lead]
        taken = set(lead) if not self.mr.all_rows else set(self.names)
        for m in self.mr.measures:
            if m.name in taken:
                raise self._error(
                    f"measure {m.name!r} has the name of an output column of the input", m.span)
            cols.append((m.name, None))
        if self.mr.all_rows:
            cols += [(c, schema.field(c).type) for c in self.names if c not in lead]
        return cols

    def _within_keys(self) -> list[Any] | None:
        w = self.mr.within
        if w is None:
            return None
        key = self.mr.order_by[0].column
        name = self.column_of(key)
        column = self.table.column(name)
        kind = column.type
        if w.nanos is not None:
            if pa.types.is_timestamp(kind) or pa.types.is_duration(kind):
                unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[kind.unit]
                ints = pc.cast(column, pa.int64()).to_pylist()
                return [None if v is None else v * unit for v in ints]
            if pa.types.is_date32(kind):
                ints = pc.cast(column, pa.int32()).to_pylist()
                return [None if v is None else v * 86400 * 10**9 for v in ints]
            if pa.types.is_date64(kind):
                ints = pc.cast(column, pa.int64()).to_pylist()
                return [None if v is None else v * 10**6 for v in ints]
            raise self._error(
                f"WITHIN with a time unit needs a timestamp or date ORDER BY key; {name!r} "
                f"is {kind}: write a plain number (WITHIN 10) for a numeric key", w.span)
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            raise self._error(
                f"WITHIN {w.amount} (no unit) needs a numeric ORDER BY key; {name!r} is {kind}: "
                "write a duration such as INTERVAL '10' SECOND", w.span)
        return column.to_pylist()

    # ---- partitions
    def partitions(self, rows: list[dict[str, Any]]) -> list[list[int]]:
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, row in enumerate(rows):
            groups.setdefault(tuple(row[c] for c in self.partition_cols), []).append(i)
        ordered = []
        for members in groups.values():
            for k in reversed(self.mr.order_by):
                col = self.column_of(k.column)
                present = [i for i in members if rows[i][col] is not None]
                missing = [i for i in members if rows[i][col] is None]
                def value(i: int, c: str = col) -> Any:
                    return rows[i][c]

                try:
                    present.sort(key=value, reverse=k.descending)
                except TypeError as err:
                    raise DataError(f"ORDER BY {col}: values cannot be compared ({err})",
                                    column=col) from None
                members = missing + present if k.nulls_first else present + missing
            ordered.append(members)
        return ordered

    def result(self) -> pa.Table:
        rows = self.table.to_pylist()
        for members in self.partitions(rows):
            self._partition([rows[i] for i in members], members)
        arrays = []
        for name, kind in self.out_columns:
            values = self.out[name]
            try:
                arrays.append(pa.array(values, type=kind))
            except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
                raise DataError(f"measure {name!r} mixes value types: {err}", column=name) from None
        return pa.Table.from_arrays(arrays, names=[n for n, _ in self.out_columns])

    def _partition(self, rows: list[dict[str, Any]], ids: list[int]) -> None:
        search = _Search(self, rows, ids)
        n, r, number = len(rows), 0, 0
        covered_rows: set[int] = set()
        mode = self.mr.rows_per_match
        while r < n:
            path = search.find(r, number + 1)
            if path is None:
                if mode is ast.RowsPerMatch.ALL_WITH_UNMATCHED and r not in covered_rows:
                    self._emit_row(rows[r], None)
                r += 1
                continue
            number += 1
            frame = search.frame([(p, v) for p, v, _ in path], len(path), number)
            if mode is ast.RowsPerMatch.ONE:
                self._emit_one(rows[r], frame)
            elif not path:
                if mode is not ast.RowsPerMatch.ALL_OMIT_EMPTY:
                    self._emit_row(rows[r], frame)
            else:
                for i, (p, _, excluded) in enumerate(path):
                    if not excluded:
                        self._emit_row(rows[p], search.frame(frame.labels, i + 1, number))
            if not path:
                r += 1
                continue
            covered_rows.update(p for p, _, _ in path)
            r = self._skip(path, r, number, ids)

    def _skip(self, path: Path, start: int, number: int, ids: list[int]) -> int:
        skip = self.mr.skip
        if skip.kind is ast.SkipKind.PAST_LAST_ROW:
            return path[-1][0] + 1
        if skip.kind is ast.SkipKind.TO_NEXT_ROW:
            return start + 1
        assert skip.var is not None
        members = self.variables[skip.var]
        rows = [p for p, v, _ in path if v in members]
        what = f"AFTER MATCH SKIP {skip.kind.value} {skip.var}"
        if not rows:
            raise DataError(f"{what}: pattern variable {skip.var} is not present in match "
                            f"{number}", row=ids[start])
        target = rows[0] if skip.kind is ast.SkipKind.TO_FIRST else rows[-1]
        if target == start:
            raise DataError(f"{what}: cannot skip to the first row of match {number} (the "
                            "search would start there again forever)", row=ids[start])
        return target

    def _emit_one(self, start_row: dict[str, Any], frame: Frame) -> None:
        for c in self.partition_cols:
            self.out[c].append(start_row[c])
        for m in self.mr.measures:
            self.out[m.name].append(evaluate(m.expr, frame))

    def _emit_row(self, row: dict[str, Any], frame: Frame | None) -> None:
        measures = {m.name: None if frame is None else evaluate(m.expr, frame)
                    for m in self.mr.measures}
        for name, _ in self.out_columns:
            self.out[name].append(measures[name] if name in measures else row[name])


class _Search:
    """The backtracking search for the most preferred match from one start row."""

    def __init__(self, run: _Run, rows: list[dict[str, Any]], ids: list[int]) -> None:
        self.run = run
        self.rows = rows
        self.ids = ids
        self.n = len(rows)
        self.path: Path = []
        self.steps = 0
        self.start = 0
        self.number = 0
        keys = run.within_keys
        self.keys = None if keys is None else [keys[i] for i in ids]

    def frame(self, labels: Sequence[tuple[int, str]], limit: int, number: int | None) -> Frame:
        return Frame(self.rows, labels, limit, number, self.run.variables, self.run.column_of,
                     self.ids.__getitem__)

    def find(self, start: int, number: int) -> Path | None:
        """The most preferred match from ``start`` (``number`` is its MATCH_NUMBER), or None."""
        self.path, self.steps, self.start, self.number = [], 0, start, number
        gen = self._match(self.run.mr.pattern, start, False, _done)
        try:
            found = next(gen, None)
        except RecursionError:
            raise SearchDepthError(
                f"the reference search from input row {self.ids[start]} nests too deep: a "
                f"match of more than about {sys.getrecursionlimit() // _FRAMES_PER_ROW} rows"
            ) from None
        result = list(self.path) if found is not None else None
        gen.close()
        return result

    def _holds(self, var: str, pos: int) -> bool:
        self.steps += 1
        if self.steps > self.run.max_steps:
            raise SearchBudgetError(
                f"the search for a match from input row {self.ids[self.start]} tried more than "
                f"{self.run.max_steps} rows (max_steps); the pattern backtracks too much here")
        if self.keys is not None:
            first, here = self.keys[self.start], self.keys[pos]
            if first is None or here is None:
                raise DataError("WITHIN: the ORDER BY key is NULL",
                                row=self.ids[pos], column=self.run.order_cols[0])
            assert self.run.mr.within is not None
            bound = self.run.mr.within.nanos
            if here - first >= (self.run.mr.within.amount if bound is None else bound):
                return False  # Flink's rule: a span equal to the bound is too long
        condition = self.run.defines.get(var)
        if condition is None:
            return True
        labels = [(p, v) for p, v, _ in self.path]
        value = evaluate(condition, self.frame(labels, len(labels), self.number))
        if value is not None and not isinstance(value, bool):
            raise DataError(f"DEFINE {var}: the condition gave {value!r}, not true or false",
                            row=self.ids[pos])
        return value is True

    def _match(self, p: ast.Pattern, pos: int, excl: bool, k: _Cont) -> Generator[int]:
        if isinstance(p, ast.Var):
            if pos >= self.n:
                return
            self.path.append((pos, p.name, excl))
            if self._holds(p.name, pos):
                yield from k(pos + 1)
            self.path.pop()
        elif isinstance(p, ast.Empty):
            yield from k(pos)
        elif isinstance(p, ast.Anchor):
            if pos == (0 if p.start else self.n):
                yield from k(pos)
        elif isinstance(p, ast.Concat):
            yield from self._sequence(p.items, 0, pos, excl, k)
        elif isinstance(p, ast.Alternation):
            for item in p.items:
                yield from self._match(item, pos, excl, k)
        elif isinstance(p, ast.Permute):
            for order in itertools.permutations(p.items):
                yield from self._sequence(order, 0, pos, excl, k)
        elif isinstance(p, ast.Exclude):
            yield from self._match(p.body, pos, True, k)
        else:
            yield from self._loop(p, 0, pos, excl, k)

    def _sequence(self, items: Sequence[ast.Pattern], i: int, pos: int, excl: bool,
                  k: _Cont) -> Iterator[int]:
        if i == len(items):
            yield from k(pos)
            return
        yield from self._match(
            items[i], pos, excl, lambda q: self._sequence(items, i + 1, q, excl, k))

    def _loop(self, q: ast.Quantified, count: int, pos: int, excl: bool,
              k: _Cont) -> Iterator[int]:
        """``count`` iterations done; an empty iteration at or past the minimum ends the loop."""
        more = q.high is None or count < q.high
        stop = count >= q.low

        def after(end: int) -> Iterator[int]:
            if end == pos and count + 1 >= q.low:
                return k(end)
            return self._loop(q, count + 1, end, excl, k)

        if q.greedy:
            if more:
                yield from self._match(q.body, pos, excl, after)
            if stop:
                yield from k(pos)
        else:
            if stop:
                yield from k(pos)
            if more:
                yield from self._match(q.body, pos, excl, after)


_Cont = Callable[[int], Iterator[int]]


def _done(pos: int) -> Iterator[int]:
    yield pos
