"""The MATCH_RECOGNIZE engine's entry point: ``evaluate(mr, table) -> pa.Table``.

Same contract as the reference evaluator (:mod:`kleene.reference.match_recognize`):
same columns, order, values and types.  Steps: resolve the columns; group the rows
into partitions (in order of first appearance) and sort each by ORDER BY (stable,
NULLS LAST unless asked), all with Arrow; evaluate the physical DEFINEs for every
row at once (:mod:`.conditions`); then per partition run the searches
(:mod:`.threads`) from row 0, emitting each match (:mod:`.output`) and resuming
where AFTER MATCH SKIP says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kleene.automata.row_pattern import Program, compile_pattern
from kleene.language.errors import DataError, QueryError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.checks import pattern_variables, sub_expressions
from kleene.language.match_recognize.types import check_within, resolve_column
from kleene.native import load
from kleene.runtime.match_recognize.columnar import Columnar, plan
from kleene.runtime.match_recognize.conditions import is_physical, vectorised
from kleene.runtime.match_recognize.expressions import Compiled, Context, compile_expr
from kleene.runtime.match_recognize.output import Output, next_start
from kleene.runtime.match_recognize.scan import MAX_REGISTERS, MAX_SEEN, SKIP_CODES, scan
from kleene.runtime.match_recognize.summary import Layout, Summary
from kleene.runtime.match_recognize.threads import Search, Stats

__all__ = ["Columns", "Lazy", "Run", "evaluate", "history_depth", "where"]


def evaluate(mr: ast.MatchRecognize, table: pa.Table, stats: Stats | None = None) -> pa.Table:
    """Run one checked MATCH_RECOGNIZE clause over ``table`` (see the module docstring);
    ``stats`` collects counts of the work done."""
    return Run(mr, table, stats or Stats()).result()


class Run:
    def __init__(self, mr: ast.MatchRecognize, table: pa.Table, stats: Stats) -> None:
        self.mr = mr
        self.table = table
        self.stats = stats
        self.names = list(table.column_names)
        self.resolved: dict[tuple[str, bool], str] = {}
        for col in self._all_columns():
            self.resolved[(col.name, col.quoted)] = resolve_column(col, self.names, self.mr.source)
        self.labels = pattern_variables(mr.pattern)
        self.variables: dict[str, frozenset[str]] = {v: frozenset([v]) for v in self.labels}
        for s in mr.subsets:
            self.variables[s.name] = frozenset(s.members)
        self.partition_cols = [self.column_of(c) for c in mr.partition_by]
        self.order_cols = [self.column_of(k.column) for k in mr.order_by]
        self.out_columns = self._output_columns()
        self._check_within()

    # ---- columns (as the reference resolves them: same errors)
    def _all_columns(self) -> list[ast.Column]:
        cols = list(self.mr.partition_by) + [k.column for k in self.mr.order_by]
        exprs = [m.expr for m in self.mr.measures] + [d.condition for d in self.mr.defines]
        for e in exprs:
            cols += [x for x in sub_expressions(e) if isinstance(x, ast.Column)]
        return cols

    def _error(self, message: str, span: ast.Span) -> QueryError:
        return QueryError(message, span.line or 1, span.column or 1, self.mr.source)

    def column_of(self, col: ast.Column) -> str:
        return self.resolved[(col.name, col.quoted)]

    def _output_columns(self) -> list[tuple[str, bool]]:
        """(name, is a measure) in output order."""
        mr = self.mr
        lead = list(dict.fromkeys(self.partition_cols + (self.order_cols if mr.all_rows else [])))
        cols = [(c, False) for c in lead]
        taken = set(lead) if not mr.all_rows else set(self.names)
        for m in mr.measures:
            if m.name in taken:
                raise self._error(
                    f"measure {m.name!r} has the name of an output column of the input", m.span)
            cols.append((m.name, True))
        if mr.all_rows:
            cols += [(c, False) for c in self.names if c not in lead]
        return cols

    def _check_within(self) -> None:
        if self.mr.within is not None:
            name = self.column_of(self.mr.order_by[0].column)
            check_within(self.mr, name, self.table.schema.field(name).type)

    def within_keys(self, column: pa.ChunkedArray) -> list[Any]:
        w = self.mr.within
        assert w is not None
        kind = column.type
        if w.nanos is None:
            return column.to_pylist()
        if pa.types.is_date32(kind):
            ints, scale = pc.cast(column, pa.int32()).to_pylist(), 86400 * 10**9
        elif pa.types.is_date64(kind):
            ints, scale = pc.cast(column, pa.int64()).to_pylist(), 10**6
        else:
            ints = pc.cast(column, pa.int64()).to_pylist()
            scale = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[kind.unit]
        return [None if v is None else v * scale for v in ints]

    # ---- partitions
    def _order(self) -> tuple[np.ndarray, np.ndarray]:
        """The input rows in partition-then-ORDER-BY order, and each one's partition."""
        n = self.table.num_rows
        rank = np.zeros(n, dtype=np.int64)
        if self.partition_cols and n:
            keys = self.table.select(self.partition_cols).append_column(
                "__kleene_row", pa.array(np.arange(n)))
            groups = keys.group_by(self.partition_cols, use_threads=False).aggregate(
                [("__kleene_row", "list")]).column("__kleene_row_list").combine_chunks()
            members = pc.list_flatten(groups).to_numpy()
            sizes = pc.list_value_length(groups).to_numpy()
            rank[members] = np.repeat(np.arange(len(sizes)), sizes)
        columns: dict[str, Any] = {"__kleene_rank": rank}
        sort_keys: list[tuple[str, str]] = [("__kleene_rank", "ascending")]
        for i, k in enumerate(self.mr.order_by):
            values = self.table.column(self.column_of(k.column))
            columns[f"__kleene_null{i}"] = pc.is_null(values)
            columns[f"__kleene_key{i}"] = values
            sort_keys.append((f"__kleene_null{i}", "descending" if k.nulls_first else "ascending"))
            sort_keys.append((f"__kleene_key{i}", "descending" if k.descending else "ascending"))
        order = pc.sort_indices(pa.table(columns), sort_keys=sort_keys).to_numpy()
        return order, rank[order]

    def result(self) -> pa.Table:
        n = self.table.num_rows
        order, part = self._order()
        ordered = self.table.take(pa.array(order)) if n else self.table
        bounds = [0, *(np.flatnonzero(np.diff(part)) + 1).tolist(), n] if n else [0]
        defines = {d.var: d for d in self.mr.defines}
        part_array = pa.array(part)
        physical: dict[str, np.ndarray | None] = {}
        general: dict[str, ast.Expr] = {}
        for var in self.labels:
            d = defines.get(var)
            if d is None:
                continue
            if is_physical(d.condition, var, self.variables):
                physical[var] = vectorised(d.condition, ordered, part_array, self.column_of)
            else:
                general[var] = d.condition
        layout = None
        compiled: dict[str, Compiled] = {}
        if general:
            layout = Layout(self.variables)
            layout.add(general.values())
            compiled = {v: compile_expr(e, layout, self.column_of) for v, e in general.items()}
        lazy_layout = Layout(self.variables)
        lazy = {v: compile_expr(defines[v].condition, lazy_layout, self.column_of)
                for v, bits in physical.items() if bits is None}
        history = history_depth(general.values())
        memo = (self.mr.within is None and history is None and not any(
            isinstance(x, ast.MatchNumber) for e in general.values() for x in sub_expressions(e)))
        program = compile_pattern(self.mr.pattern, self.labels)
        output = Output(self.mr, self.variables, self.column_of, self.labels)
        keys = None
        if self.mr.within is not None:
            keys = self.within_keys(ordered.column(self.column_of(self.mr.order_by[0].column)))
        fast = (not general and not lazy and self.mr.within is None
                and program.registers <= MAX_REGISTERS)
        specs = plan(self.mr, self.variables, self.column_of, ordered.schema) if fast else None
        columnar = None if specs is None else Columnar(specs, self.labels, ordered)
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            cols = Columns(ordered, lo, hi)
            ids = order[lo:hi].tolist()
            if fast:
                ones = np.ones(hi - lo, dtype=bool)
                flags = [ones if (p := physical.get(v)) is None else p[lo:hi] for v in self.labels]
                self._scan(program, flags, output, cols, hi - lo, ids,
                           None if columnar is None else (columnar, lo, order[lo:hi]))
                continue
            truth: list[Any] = []
            for var in self.labels:
                if var in physical:
                    vector = physical[var]
                    truth.append(vector[lo:hi].tolist() if vector is not None else Lazy(
                        var, lazy[var], lazy_layout, cols, hi - lo, ids, where(defines[var])))
                else:
                    truth.append(None)
            window = None if keys is None else self._window(keys[lo:hi], ids)
            search = Search(program, hi - lo, truth, [compiled.get(v) for v in self.labels],
                            layout, cols, window, memo, ids.__getitem__, self.stats, history,
                            [where(defines.get(v)) for v in self.labels])
            self._partition(search, output, cols, hi - lo, ids)
        return self.table_of(output, columnar)

    def _window(self, keys: list[Any], ids: list[int]) -> Callable[[int, int], bool]:
        w = self.mr.within
        assert w is not None
        bound = w.amount if w.nanos is None else w.nanos
        column = self.order_cols[0]

        def inside(start: int, pos: int) -> bool:
            first, here = keys[start], keys[pos]
            if first is None or here is None:
                raise DataError("WITHIN: the ORDER BY key is NULL", row=ids[pos], column=column)
            return bool(here - first < bound)
        return inside

    def _partition(self, search: Search, output: Output, cols: Columns, n: int,
                   ids: list[int]) -> None:
        r, number = 0, 0
        covered = 0  # rows below this one lie in an earlier non-empty match
        mode = self.mr.rows_per_match
        at = ids.__getitem__
        while r < n:
            path = search.find(r, number + 1)
            if path is None:
                if mode is ast.RowsPerMatch.ALL_WITH_UNMATCHED and r >= covered:
                    output.unmatched(ids[r])
                r += 1
                continue
            number += 1
            output.match(path, r, number, cols, n, at)
            if not path:
                r += 1
                continue
            covered = max(covered, path[-1][0] + 1)
            r = next_start(self.mr, self.variables, self.labels, path, r, number, at)

    def _scan(self, program: Program, bits: list[np.ndarray], output: Output, cols: Columns, n: int,
              ids: list[int], columnar: tuple[Columnar, int, np.ndarray] | None) -> None:
        """The fast path: the partition's searches in one call (compiled when built)."""
        skip = self.mr.skip
        mask = 0
        if skip.var is not None:
            members = self.variables[skip.var]
            mask = sum(1 << i for i, v in enumerate(self.labels) if v in members)
        code = SKIP_CODES[skip.kind.value]
        counts = [0, 0]
        compiled = load("kleene.runtime._mr_scan")
        if len(program) << program.registers > MAX_SEEN:
            compiled = None
        truth: Any = [b.tolist() for b in bits]
        run: Any = scan
        if compiled is not None:
            run = compiled.scan
            truth = (np.stack(bits) if bits else np.zeros((0, n), dtype=bool)).astype(np.uint8)
        events, rows, labels, excluded, error = run(
            program.ops, program.a, program.b, program.registers, truth, n, code, mask, counts)
        self.stats.steps += counts[0]
        self.stats.max_threads = max(self.stats.max_threads, counts[1])
        at = ids.__getitem__
        with_unmatched = self.mr.rows_per_match is ast.RowsPerMatch.ALL_WITH_UNMATCHED
        number = 0
        if columnar is not None:
            collector, lo, input_rows = columnar
            collector.add(events, rows, labels, lo, input_rows)
            events = []
        for i in range(0, len(events), 3):
            start, offset, length = events[i], events[i + 1], events[i + 2]
            if length < 0:
                if with_unmatched:
                    output.unmatched(ids[start])
                continue
            number += 1
            path = list(zip(rows[offset:offset + length], labels[offset:offset + length],
                            [bool(x) for x in excluded[offset:offset + length]], strict=True))
            output.match(path, start, number, cols, n, at)
        if error is not None:
            what = f"AFTER MATCH SKIP {skip.kind.value} {skip.var}"
            kind, number, start = error
            if kind == 1:
                raise DataError(f"{what}: pattern variable {skip.var} is not present in match "
                                f"{number}", row=ids[start])
            raise DataError(f"{what}: cannot skip to the first row of match {number} (the "
                            "search would start there again forever)", row=ids[start])

    def table_of(self, output: Output, columnar: Columnar | None,
                 source: pa.Table | None = None) -> pa.Table:
        """The result table: measures from ``output`` (or ``columnar``), the other columns
        taken from ``source`` (default: the input) at ``output.rows``."""
        source = self.table if source is None else source
        arrays = []
        index = pa.array(output.rows, type=pa.int64())
        values: dict[str, Any] = {
            m.name: v for m, v in zip(self.mr.measures, output.values, strict=True)}
        if columnar is not None:
            rows, columns = columnar.finish()
            index = pa.array(rows, type=pa.int64())
            values = {m.name: c for m, c in zip(self.mr.measures, columns, strict=True)}
        for name, is_measure in self.out_columns:
            if is_measure and isinstance(values[name], pa.Array):
                arrays.append(values[name])
            elif is_measure:
                try:
                    arrays.append(pa.array(values[name]))
                except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
                    raise DataError(f"measure {name!r} mixes value types: {err}",
                                    column=name) from None
            else:
                arrays.append(source.column(name).take(index))
        return pa.Table.from_arrays(arrays, names=[n for n, _ in self.out_columns])


class Columns(dict[str, Sequence[Any]]):
    """The partition's columns as Python lists, converted on first use."""

    def __init__(self, table: pa.Table, lo: int, hi: int) -> None:
        super().__init__()
        self.table, self.lo, self.hi = table, lo, hi

    def __missing__(self, name: str) -> Sequence[Any]:
        values = self.table.column(name).slice(self.lo, self.hi - self.lo).to_pylist()
        self[name] = values
        return values


class Lazy:
    """A physical DEFINE evaluated per row in Python, on first use (errors only for rows
    the search tries, as in the reference)."""

    def __init__(self, var: str, condition: Compiled, layout: Layout,
                 cols: dict[str, Sequence[Any]], n: int, ids: list[int], where: str) -> None:
        self.var, self.condition, self.layout, self.cols, self.n = var, condition, layout, cols, n
        self.ids = ids
        self.where = where
        self.cache: dict[int, bool] = {}

    def __call__(self, row: int) -> bool:
        hit = self.cache.get(row)
        if hit is not None:
            return hit
        k = len(self.layout.sets)
        window = ((row, self.var),)
        s: Summary = ((1,) * k, ((),) * k, (window,) * k, ())
        ctx = Context(self.cols, self.n, self.layout, s, None, lambda r: None)
        try:
            value = self.condition(ctx, None)
        except (TypeError, ValueError, ArithmeticError) as err:
            raise DataError(f"cannot evaluate the expression at {self.where}: {err}",
                            row=self.ids[row]) from None
        if value is not None and not isinstance(value, bool):
            raise DataError(f"DEFINE {self.var}: the condition gave {value!r}, not true or "
                            "false", row=self.ids[row])
        self.cache[row] = value is True
        return value is True


def where(define: ast.Define | None) -> str:
    """Where a DEFINE's condition is, as the reference names it in errors."""
    if define is None:
        return ""
    span = define.condition.span
    return f"line {span.line}, column {span.column}"


def history_depth(conditions: Any) -> int | None:
    """How far back DEFINEs read labels through PREV/NEXT(CLASSIFIER(..)): None (never),
    k + 1 for ``PREV(CLASSIFIER(), k)``, -1 (all) for a qualified CLASSIFIER."""
    depth: int | None = None
    for e in conditions:
        for x in sub_expressions(e):
            if isinstance(x, ast.Nav) and x.physical and any(
                    isinstance(y, ast.Classifier) for y in sub_expressions(x.arg)):
                inner = x.arg
                qualified = isinstance(inner, ast.Nav) or any(
                    isinstance(y, ast.Classifier) and y.var is not None
                    for y in sub_expressions(inner))
                want = -1 if qualified else x.steps + 1
                if depth == -1 or want == -1:
                    depth = -1
                else:
                    depth = max(depth or 0, want)
    return depth
