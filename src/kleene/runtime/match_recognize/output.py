"""MEASURES and the output rows of matches: ONE ROW / ALL ROWS PER MATCH, empty and
unmatched rows, exclusion, and AFTER MATCH SKIP.

A match is walked once, row by row, extending a summary (:mod:`.summary`) laid
out for the measures, so that ALL ROWS PER MATCH costs O(1) per output row for
RUNNING measures (FINAL ones read the summary of the whole match, built first).
``ARRAY_AGG`` is the exception: its running list is copied per row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kleene.language.errors import DataError
from kleene.language.match_recognize import ast
from kleene.runtime.match_recognize.expressions import Compiled, Context, compile_expr
from kleene.runtime.match_recognize.summary import Layout, Summary
from kleene.runtime.match_recognize.threads import Path

__all__ = ["Output", "next_start"]


class Output:
    """The output being built: input row ids (for the input columns) and measure values."""

    def __init__(self, mr: ast.MatchRecognize, variables: dict[str, frozenset[str]],
                 column: Callable[[ast.Column], str], labels: Sequence[str]) -> None:
        self.mr = mr
        self.labels = labels
        self.layout = Layout(variables)
        self.layout.add(m.expr for m in mr.measures)
        self.layout.last_depth[0] = max(self.layout.last_depth[0], 1)  # the row errors name
        self.measures: list[tuple[ast.Measure, Compiled]] = [
            (m, compile_expr(m.expr, self.layout, column)) for m in mr.measures]
        self.rows: list[int] = []  # input row of each output row
        self.values: list[list[Any]] = [[] for _ in mr.measures]

    def unmatched(self, input_row: int) -> None:
        self.rows.append(input_row)
        for values in self.values:
            values.append(None)

    def match(self, path: Path, start: int, number: int, cols: dict[str, Sequence[Any]],
              n: int, ids: Callable[[int], int]) -> None:
        """Emit the rows of one match (``path`` empty: an empty match at ``start``)."""
        mode = self.mr.rows_per_match
        if not path:
            if mode is ast.RowsPerMatch.ALL_OMIT_EMPTY:
                return
            ctx = self._context(cols, n, path, start, number, 0)
            self._emit(ids(start), ctx, ids)
            return
        pairs = [(row, self.labels[li]) for row, li, _ in path]
        if mode is ast.RowsPerMatch.ONE:
            ctx = self._context(cols, n, path, start, number, len(path))
            ctx.s = self.layout.summarise(pairs, ctx)
            self._emit(ids(start), ctx, ids)
            return
        final = self._context(cols, n, path, start, number, len(path))
        final.s = self.layout.summarise(pairs, final)
        running = self._context(cols, n, path, start, number, 0)
        running.final = final
        self._summaries(running, path, lambda i: None if path[i][2] else self._emit(
            ids(path[i][0]), running, ids))

    def _context(self, cols: dict[str, Sequence[Any]], n: int, path: Path, start: int,
                 number: int, limit: int) -> Context:
        labels = self.labels
        holder = [limit]

        def label_of(row: int) -> str | None:
            i = row - start
            return labels[path[i][1]] if 0 <= i < holder[0] else None
        ctx = Context(cols, n, self.layout, self.layout.empty(), number, label_of)
        ctx.limit = holder
        return ctx

    def _summaries(self, ctx: Context, path: Path, each: Callable[[int], None] | None) -> Summary:
        """Extend ``ctx.s`` over ``path``, calling ``each(i)`` after row i; the last summary."""
        holder = ctx.limit
        layout = self.layout
        needs = bool(self.measures)
        for i, (row, li, _) in enumerate(path):
            holder[0] = i + 1
            if needs:
                ctx.s = layout.extend(ctx.s, row, self.labels[li], ctx)
            if each is not None:
                each(i)
        return ctx.s

    def _emit(self, input_row: int, ctx: Context, ids: Callable[[int], int]) -> None:
        self.rows.append(input_row)
        for (m, fn), values in zip(self.measures, self.values, strict=True):
            try:
                values.append(fn(ctx, None))
            except (TypeError, ValueError, ArithmeticError) as err:
                window = ctx.s[2][0]
                row = ids(window[-1][0]) if window else None
                raise DataError(
                    f"cannot evaluate the expression at line {m.expr.span.line}, column "
                    f"{m.expr.span.column}: {err}", row=row) from None


def next_start(mr: ast.MatchRecognize, variables: dict[str, frozenset[str]],
               labels: Sequence[str], path: Path, start: int, number: int,
               ids: Callable[[int], int]) -> int:
    """Where the search resumes after the non-empty match ``path`` (AFTER MATCH SKIP)."""
    skip = mr.skip
    if skip.kind is ast.SkipKind.PAST_LAST_ROW:
        return path[-1][0] + 1
    if skip.kind is ast.SkipKind.TO_NEXT_ROW:
        return start + 1
    assert skip.var is not None
    members = variables[skip.var]
    rows = [p for p, li, _ in path if labels[li] in members]
    what = f"AFTER MATCH SKIP {skip.kind.value} {skip.var}"
    if not rows:
        raise DataError(f"{what}: pattern variable {skip.var} is not present in match "
                        f"{number}", row=ids(start))
    target = rows[0] if skip.kind is ast.SkipKind.TO_FIRST else rows[-1]
    if target == start:
        raise DataError(f"{what}: cannot skip to the first row of match {number} (the "
                        "search would start there again forever)", row=ids(start))
    return target
