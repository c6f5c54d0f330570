"""What a thread (or a match being output) knows about its rows: a small, hashable summary.

DEFINE and MEASURES read the match so far only through a few windows on it:
the first and last few rows mapped to a variable set (``FIRST(A.x, 2)``,
``LAST(A.x, 1)``, a bare ``A.x``, ``CLASSIFIER(A)``), how many rows it has, and
running aggregates.  :class:`Layout` lists those windows for a set of
expressions (their depths are the constant offsets written in the query), and a
summary is a tuple holding exactly them, extended by one row at a time.  Two
threads at the same automaton state with equal summaries read the same values
in every future DEFINE, so the runtime merges them: this is what keeps the
general path linear when conditions read the match (a running ``SUM`` has one
value per thread, not one per path).

A summary is ``(counts, firsts, lasts, aggregates)``; ``firsts``/``lasts`` hold
``(row, label)`` pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kleene.language.match_recognize import ast
from kleene.language.match_recognize.checks import children, referenced_variables

__all__ = ["AggSpec", "Layout", "Summary", "var_of"]

Summary = tuple[tuple[int, ...], tuple[tuple[tuple[int, str], ...], ...],
                tuple[tuple[tuple[int, str], ...], ...], tuple[Any, ...]]


def var_of(e: ast.Expr) -> str | None:
    """The one variable ``e`` reads (None: unqualified, the universal variable)."""
    found = referenced_variables(e)
    return next(iter(found)) if found else None


@dataclass
class AggSpec:
    """One aggregate node: its function, the variable set it runs over, its argument."""

    node: ast.Aggregate
    set_index: int
    arg: Callable[[Any, int], Any] | None = None  # filled in by the expression compiler


@dataclass
class Layout:
    """The windows a group of expressions reads; ``sets`` are variable-set names (None:
    universal), ``members[i]`` their primary variables (None: all)."""

    variables: dict[str, frozenset[str]]
    sets: list[str | None] = field(default_factory=list)
    members: list[frozenset[str] | None] = field(default_factory=list)
    first_depth: list[int] = field(default_factory=list)
    last_depth: list[int] = field(default_factory=list)
    aggregates: list[AggSpec] = field(default_factory=list)
    agg_index: dict[int, int] = field(default_factory=dict)  # id(node) -> index

    def set_index(self, var: str | None) -> int:
        if var in self.sets:
            return self.sets.index(var)
        self.sets.append(var)
        self.members.append(None if var is None else self.variables[var])
        self.first_depth.append(0)
        self.last_depth.append(0)  # raised by add() where an expression reads the last row
        return len(self.sets) - 1

    def _reads_last(self, var: str | None) -> None:
        i = self.set_index(var)
        self.last_depth[i] = max(self.last_depth[i], 1)

    def add(self, expressions: Iterable[ast.Expr]) -> None:
        """Record the windows ``expressions`` read."""
        self.set_index(None)
        for e in expressions:
            self._walk(e, False)

    def _walk(self, x: ast.Expr, inside: bool) -> None:
        """``inside``: within a navigation or an aggregate, where references read the row
        the navigation or the aggregate gives, not the last row of their variable."""
        if isinstance(x, ast.Column | ast.Classifier):
            if not inside:
                self._reads_last(x.var)
        elif isinstance(x, ast.Nav) and x.physical and not isinstance(x.arg, ast.Nav):
            self._reads_last(var_of(x.arg))
        elif isinstance(x, ast.Nav) and not x.physical:
            i = self.set_index(var_of(x.arg))
            if x.kind == "FIRST":
                self.first_depth[i] = max(self.first_depth[i], x.steps + 1)
            else:
                self.last_depth[i] = max(self.last_depth[i], x.steps + 1)
        elif isinstance(x, ast.Aggregate) and id(x) not in self.agg_index:
            var = x.star_var if x.arg is None else var_of(x.arg)
            self.agg_index[id(x)] = len(self.aggregates)
            self.aggregates.append(AggSpec(x, self.set_index(var)))
        for child in children(x):
            self._walk(child, inside or isinstance(x, ast.Nav | ast.Aggregate))

    def empty(self) -> Summary:
        k = len(self.sets)
        aggs = tuple(0 if a.node.func == "COUNT" else None for a in self.aggregates)
        return ((0,) * k, ((),) * k, ((),) * k, aggs)

    def extend(self, s: Summary, row: int, label: str, ctx: Any) -> Summary:
        """``s`` with ``row`` mapped to ``label``; aggregate arguments are evaluated at
        ``row`` with ``ctx`` (whose label for ``row`` must already be ``label``)."""
        counts, firsts, lasts, aggs = s
        inside = [m is None or label in m for m in self.members]
        pair = (row, label)
        new_counts = tuple(c + 1 if hit else c for c, hit in zip(counts, inside, strict=True))
        new_firsts = tuple(
            f + (pair,) if hit and len(f) < d else f
            for f, hit, d in zip(firsts, inside, self.first_depth, strict=True))
        new_lasts = tuple(
            ((l_ + (pair,))[-d:] if d else ()) if hit else l_
            for l_, hit, d in zip(lasts, inside, self.last_depth, strict=True))
        if self.aggregates:
            aggs = tuple(self._fold(spec, acc, row, ctx) if inside[spec.set_index] else acc
                         for spec, acc in zip(self.aggregates, aggs, strict=True))
        return (new_counts, new_firsts, new_lasts, aggs)

    def summarise(self, pairs: list[tuple[int, str]], ctx: Any) -> Summary:
        """The summary of a whole match (``pairs``: its (row, label) in order) at once: the
        same value as extending :meth:`empty` row by row, with less work per row."""
        counts, firsts, lasts = [], [], []
        picked: list[list[tuple[int, str]]] = []
        for members, f, d in zip(self.members, self.first_depth, self.last_depth, strict=True):
            rows = pairs if members is None else [p for p in pairs if p[1] in members]
            picked.append(rows)
            counts.append(len(rows))
            firsts.append(tuple(rows[:f]))
            lasts.append(tuple(rows[-d:]) if d else ())
        aggs: list[Any] = []
        for spec in self.aggregates:
            acc: Any = 0 if spec.node.func == "COUNT" else None
            for row, _ in picked[spec.set_index]:
                acc = self._fold(spec, acc, row, ctx)
            aggs.append(acc)
        return (tuple(counts), tuple(firsts), tuple(lasts), tuple(aggs))

    @staticmethod
    def _fold(spec: AggSpec, acc: Any, row: int, ctx: Any) -> Any:
        node = spec.node
        if node.arg is None:  # COUNT(*), COUNT(X.*)
            return acc + 1
        assert spec.arg is not None
        v = spec.arg(ctx, row)
        func = node.func
        if func == "ARRAY_AGG":
            return (acc or ()) + (v,)
        if v is None:
            return acc
        if func == "COUNT":
            return acc + 1
        if func == "SUM":
            return 0 + v if acc is None else acc + v
        if func == "AVG":
            return (0 + v, 1) if acc is None else (acc[0] + v, acc[1] + 1)
        if func == "MIN":
            return v if acc is None or v < acc else acc
        return v if acc is None or v > acc else acc

    def value(self, s: Summary, index: int) -> Any:
        """The value of the aggregate ``index`` in ``s``."""
        acc = s[3][index]
        func = self.aggregates[index].node.func
        if func == "AVG":
            return None if acc is None else acc[0] / acc[1]
        if func == "ARRAY_AGG":
            return None if acc is None else list(acc)
        return acc

    @staticmethod
    def key(s: Summary) -> Any:
        """A hashable key telling summaries apart by value *and* type (2 and 2.0 divide
        differently); the counts are left out (no expression reads them: COUNT is an
        aggregate of its own)."""
        return (s[1], s[2], tuple(_typed(a) for a in s[3]))


def _typed(v: Any) -> Any:
    if isinstance(v, tuple):
        return tuple(_typed(x) for x in v)
    return (type(v), v)
