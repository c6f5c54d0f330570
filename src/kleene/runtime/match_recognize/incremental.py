"""The MATCH_RECOGNIZE engine fed one partition's rows batch by batch (for streaming).

:class:`Incremental` runs the same search as :func:`kleene.runtime.match_recognize.
evaluate` (the threads of :mod:`.threads`, the measures of :mod:`.output`) but
resumable: :meth:`Incremental.feed` takes the partition's state and the next rows
(all later in ORDER BY than those fed before) and returns the output rows that
became final plus the new state.  The live search is kept between feeds (its
threads: state, registers, the rows mapped so far, the DEFINE summary), so a
feed steps only the new rows; nothing is re-run from the partition's start.

A match is emitted once it is *final*: the search from its start row has no
thread left, so no more preferred candidate can still replace it, and the next
search start is then known (AFTER MATCH SKIP).  Until then the rows from the
search's start on stay in the state.  Without WITHIN a search may stay undecided
for ever (``A+`` whose rows keep matching): the batch engine would fall back to
the best match at the partition's end, which a stream never reaches.  With WITHIN
``horizon`` (every future row's key is beyond it: the watermark) ends a search
whose window has closed, so all matches become final.

What cannot be streamed exactly is refused (:func:`check_streamable`): the ``$``
anchor (the partition's end never comes) and ``NEXT`` (it reads rows after the
current one or after the match's end, not yet known when the row or match is
decided).  The ORDER BY's first key must be ascending (it is the event time).

The state (:class:`PartitionState`) is serialisable (:meth:`PartitionState.to_bytes`):
the buffered rows as Arrow IPC (the input columns, the WITHIN keys and the
physical DEFINEs' truth, computed once per row), counters and the live threads
with their shared row history as a flat table.
"""

from __future__ import annotations

import io
import pickle
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kleene.automata.row_pattern import compile_pattern
from kleene.language.errors import DataError, UnsupportedError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.checks import sub_expressions
from kleene.language.match_recognize.types import output_schema
from kleene.runtime.match_recognize.conditions import is_physical, vectorised
from kleene.runtime.match_recognize.engine import Lazy, Run, history_depth, where
from kleene.runtime.match_recognize.expressions import Compiled, compile_expr
from kleene.runtime.match_recognize.output import Output, next_start
from kleene.runtime.match_recognize.summary import Layout
from kleene.runtime.match_recognize.threads import Live, Search, Stats

__all__ = ["Incremental", "PartitionState", "check_streamable", "lookback"]

KEY = "__kleene_key"
"""Buffer column: the WITHIN key of each row (nanoseconds, or the numeric ORDER BY value)."""
TRUTH = "__kleene_truth_"
"""Buffer columns: a physical DEFINE's truth per row (1, 0, or -1: evaluate it in Python)."""


def check_streamable(mr: ast.MatchRecognize) -> None:
    """Raise :class:`UnsupportedError` (line, column, caret) for what a stream cannot
    evaluate exactly: ``$``, ``NEXT``, a descending first ORDER BY key, no ORDER BY."""
    def fail(message: str, span: ast.Span) -> UnsupportedError:
        return UnsupportedError(message, span.line or 1, span.column or 1, mr.source)

    if not mr.order_by:
        raise fail("a streamed MATCH_RECOGNIZE needs ORDER BY <event time>", mr.span)
    first = mr.order_by[0]
    if first.descending:
        raise fail("a streamed MATCH_RECOGNIZE orders by its event time ascending: the first "
                   "ORDER BY key cannot be DESC", first.column.span)
    stack: list[ast.Pattern] = [mr.pattern]
    while stack:
        p = stack.pop()
        if isinstance(p, ast.Anchor) and not p.start:
            raise fail("the $ anchor (partition end) cannot be streamed: a stream's partition "
                       "never ends", p.span)
        if isinstance(p, ast.Concat | ast.Alternation | ast.Permute):
            stack.extend(p.items)
        elif isinstance(p, ast.Exclude | ast.Quantified):
            stack.append(p.body)
    exprs = [m.expr for m in mr.measures] + [d.condition for d in mr.defines]
    for e in exprs:
        for x in sub_expressions(e):
            if isinstance(x, ast.Nav) and x.kind == "NEXT":
                raise fail("NEXT cannot be streamed: it reads a row that has not arrived when "
                           "the row or match is decided (use PREV on the later row)", x.span)


def lookback(mr: ast.MatchRecognize) -> int:
    """How many rows before a match (or a search's start) DEFINE and MEASURES read: the
    largest PREV offset."""
    exprs = [m.expr for m in mr.measures] + [d.condition for d in mr.defines]
    depth = 0
    for e in exprs:
        for x in sub_expressions(e):
            if isinstance(x, ast.Nav) and x.kind == "PREV":
                depth = max(depth, x.steps)
    return depth


@dataclass
class PartitionState:
    """One partition's state between feeds (see the module docstring).

    ``buffer``: rows from absolute row ``base`` on; ``start``: where the next search
    begins; ``number``: matches emitted so far (MATCH_NUMBER continues from it);
    ``covered``: rows below lie in an emitted non-empty match (WITH UNMATCHED ROWS);
    ``live``: the undecided search, if any; ``last``: the last ORDER BY (event time)
    value fed, which the next rows must not precede.
    """

    buffer: pa.Table
    base: int = 0
    start: int = 0
    number: int = 0
    covered: int = 0
    live: Live | None = None
    last: Any = None

    @property
    def end(self) -> int:
        """The absolute row after the last one fed."""
        return self.base + self.buffer.num_rows

    def to_bytes(self) -> bytes:
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, self.buffer.schema) as writer:
            writer.write_table(self.buffer)
        live = None
        if self.live is not None:
            cells: list[tuple[int, int, int, int]] = []
            index: dict[int, int] = {}

            def ref(hist: Any) -> int:
                chain = []
                while hist is not None and id(hist) not in index:
                    chain.append(hist)
                    hist = hist[3]
                at = -1 if hist is None else index[id(hist)]
                for cell in reversed(chain):
                    cells.append((cell[0], cell[1], cell[2], at))
                    at = index[id(cell)] = len(cells) - 1
                return at
            threads = [(pc_, regs, ref(h), s) for pc_, regs, h, s in self.live.threads]
            best = [ref(h) for h in self.live.best]
            live = (self.live.start, self.live.number, self.live.pos, threads, best, cells)
        meta = (self.base, self.start, self.number, self.covered, live, self.last)
        return pickle.dumps((sink.getvalue(), meta), protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def from_bytes(cls, data: bytes) -> PartitionState:
        raw, (base, start, number, covered, live, last) = pickle.loads(data)  # noqa: S301 - our own checkpoint
        buffer = pa.ipc.open_stream(raw).read_all()
        state = cls(buffer, base, start, number, covered, None, last)
        if live is not None:
            l_start, l_number, pos, threads, best, cells = live
            built: list[Any] = []
            for row, label, excl, parent in cells:
                built.append((row, label, excl, None if parent < 0 else built[parent]))

            def hist(at: int) -> Any:
                return None if at < 0 else built[at]
            state.live = Live(l_start, l_number, pos,
                              [(pc_, regs, hist(h), s) for pc_, regs, h, s in threads],
                              [hist(h) for h in best], {})
        return state


class _Column(Sequence[Any]):
    """A buffer column read by absolute row, each Arrow chunk converted on first use
    (so old rows that nothing reads are never converted); counts the rows converted."""

    def __init__(self, column: pa.ChunkedArray, base: int, counter: list[int]) -> None:
        self.chunks = column.chunks
        self.starts = [base]
        for chunk in self.chunks:
            self.starts.append(self.starts[-1] + len(chunk))
        self.base = base
        self.values: list[list[Any] | None] = [None] * len(self.chunks)
        self.counter = counter

    def __len__(self) -> int:
        return self.starts[-1]

    def __getitem__(self, row: Any) -> Any:
        i = bisect_right(self.starts, row) - 1
        if row < self.base or i >= len(self.chunks):
            raise IndexError(row)
        values = self.values[i]
        if values is None:
            values = self.values[i] = self.chunks[i].to_pylist()
            self.counter[0] += len(values)
        return values[row - self.starts[i]]


class _Columns(dict[str, Sequence[Any]]):
    def __init__(self, table: pa.Table, base: int, counter: list[int]) -> None:
        super().__init__()
        self.table, self.base, self.counter = table, base, counter

    def __missing__(self, name: str) -> Sequence[Any]:
        column = self[name] = _Column(self.table.column(name), self.base, self.counter)
        return column


class _Ids:
    """Absolute partition row -> buffer row (the output's and errors' row numbers)."""

    def __init__(self, base: int) -> None:
        self.base = base

    def __getitem__(self, row: int) -> int:
        return row - self.base

    def __call__(self, row: int) -> int:
        return row - self.base


class Incremental:
    """One MATCH_RECOGNIZE clause over a stream of partitions (see the module docstring).

    ``schema`` is the input's; :meth:`feed` returns tables with the columns of
    :func:`~kleene.runtime.match_recognize.evaluate`.  ``stats`` counts the work:
    thread steps and (``converted``) the buffered rows converted to Python.
    """

    def __init__(self, mr: ast.MatchRecognize, schema: pa.Schema,
                 stats: Stats | None = None) -> None:
        check_streamable(mr)
        self.mr = mr
        self.schema = schema
        self.stats = stats or Stats()
        self.converted = [0]
        self.run = Run(mr, schema.empty_table(), self.stats)
        run = self.run
        self.labels = run.labels
        self.defines = {d.var: d for d in mr.defines}
        self.physical = [v for v in self.labels if v in self.defines and is_physical(
            self.defines[v].condition, v, run.variables)]
        general = {v: self.defines[v].condition for v in self.labels
                   if v in self.defines and v not in self.physical}
        self.layout: Layout | None = None
        self.general: dict[str, Compiled] = {}
        if general:
            self.layout = Layout(run.variables)
            self.layout.add(general.values())
            self.general = {v: compile_expr(e, self.layout, run.column_of)
                            for v, e in general.items()}
        self.lazy_layout = Layout(run.variables)
        self.lazy = {v: compile_expr(self.defines[v].condition, self.lazy_layout, run.column_of)
                     for v in self.physical}
        self.history = history_depth(general.values())
        self.program = compile_pattern(mr.pattern, self.labels)
        self.lookback = lookback(mr)
        self.key_column = run.order_cols[0]
        self.out_schema = output_schema(mr, schema)

    def empty(self) -> PartitionState:
        """The state of a partition that has seen no row."""
        fields = list(self.schema)
        if self.mr.within is not None:
            fields.append(pa.field(KEY, pa.float64() if self._float_keys() else pa.int64()))
        fields += [pa.field(f"{TRUTH}{v}", pa.int8()) for v in self.physical]
        return PartitionState(pa.schema(fields).empty_table())

    def _float_keys(self) -> bool:
        w = self.mr.within
        return w is not None and w.nanos is None and pa.types.is_floating(
            self.schema.field(self.key_column).type)

    def feed(self, state: PartitionState | None, rows: pa.Table | None = None,
             horizon: float | None = None, final: bool = False) -> tuple[pa.Table, PartitionState]:
        """Append ``rows`` (sorted here by ORDER BY, stably; all after the rows fed before)
        to the partition, run the searches as far as they are decided, and return the
        final output rows with the new state.  ``horizon``: every future row's WITHIN key
        (nanoseconds for a temporal ORDER BY, else its value) is greater than this.
        ``final``: the partition ends here (a bounded input): undecided searches take
        their best match as the batch engine does at the partition's end."""
        state = state or self.empty()
        if rows is not None and rows.num_rows:
            state = self._append(state, rows)
        buffer, base = state.buffer, state.base
        end = state.end
        cols = _Columns(buffer, base, self.converted)
        ids = _Ids(base)
        output = Output(self.mr, self.run.variables, self.run.column_of, self.labels)
        search = self._search(buffer, base, end, cols, ids)
        live, r, number, covered = state.live, state.start, state.number, state.covered
        mode = self.mr.rows_per_match
        while True:
            if live is None:
                if r >= end:
                    break
                live = search.begin(r, number + 1)
            if not search.advance(live, end):
                if not final and not self._expired(live, cols, horizon):
                    break
                live.threads = []
            path = live.match()
            at = live.start
            live = None
            if path is None:
                if mode is ast.RowsPerMatch.ALL_WITH_UNMATCHED and at >= covered:
                    output.unmatched(ids(at))
                r = at + 1
                continue
            number += 1
            output.match(path, at, number, cols, end, ids)
            if not path:
                r = at + 1
                continue
            covered = max(covered, path[-1][0] + 1)
            r = next_start(self.mr, self.run.variables, self.labels, path, at, number, ids)
        result = self.run.table_of(output, None, buffer)
        try:
            result = result.cast(self.out_schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            raise DataError(f"the MATCH_RECOGNIZE result does not fit its declared types "
                            f"{self.out_schema}: {err}") from None
        keep = max(base, min(r if live is None else live.start, end) - self.lookback)
        kept = buffer.slice(keep - base)
        if kept.num_columns and len(kept.column(0).chunks) > 32:
            kept = kept.combine_chunks()
        return result, PartitionState(kept, keep, r, number, covered, live, state.last)

    def _append(self, state: PartitionState, rows: pa.Table) -> PartitionState:
        rows = rows.select(self.schema.names).cast(self.schema)
        keys = [(self.run.column_of(k.column), "descending" if k.descending else "ascending")
                for k in self.mr.order_by]
        nulls = pc.is_null(rows.column(self.key_column))
        if pc.any(nulls).as_py():
            row = int(pc.index(nulls, True).as_py())
            raise DataError("a streamed row needs its ORDER BY (event time) value",
                            row=state.end + row, column=self.key_column)
        rows = rows.sort_by(keys) if rows.num_rows > 1 else rows
        old = state.buffer
        first = rows.column(self.key_column)[0].as_py()
        if state.last is not None and first < state.last:
            raise DataError(f"rows fed out of order: ORDER BY value {first!r} after "
                            f"{state.last!r}", row=state.end, column=self.key_column)
        lead = old.slice(max(0, old.num_rows - self.lookback)).select(self.schema.names)
        context = pa.concat_tables([lead, rows])
        skip = lead.num_rows
        extra: dict[str, pa.Array] = {}
        if self.mr.within is not None:
            keys_ = self.run.within_keys(rows.column(self.key_column))
            extra[KEY] = pa.array(keys_, old.schema.field(KEY).type)
        zeros = pa.array(np.zeros(context.num_rows, dtype=np.int8))
        for v in self.physical:
            truth = vectorised(self.defines[v].condition, context, zeros, self.run.column_of)
            values = (np.full(rows.num_rows, -1, dtype=np.int8) if truth is None
                      else truth[skip:].astype(np.int8))
            extra[f"{TRUTH}{v}"] = pa.array(values)
        for name, values in extra.items():
            rows = rows.append_column(name, values)
        buffer = pa.concat_tables([old, rows.cast(old.schema)])
        return PartitionState(buffer, state.base, state.start, state.number, state.covered,
                              state.live, rows.column(self.key_column)[-1].as_py())

    def _search(self, buffer: pa.Table, base: int, end: int, cols: _Columns,
                ids: _Ids) -> Search:
        truth: list[Any] = []
        for v in self.labels:
            if v not in self.physical:
                truth.append(None)
                continue
            lazy = Lazy(v, self.lazy[v], self.lazy_layout, cols, end, ids,  # type: ignore[arg-type]
                        where(self.defines[v]))
            column = cols[f"{TRUTH}{v}"]
            truth.append(_truth(column, lazy))
        window = None
        if self.mr.within is not None:
            w = self.mr.within
            bound = w.amount if w.nanos is None else w.nanos
            keys = cols[KEY]

            def window(start: int, pos: int) -> bool:
                return bool(keys[pos] - keys[start] < bound)
        return Search(self.program, end, truth, [self.general.get(v) for v in self.labels],
                      self.layout, cols, window, False, ids, self.stats, self.history,
                      [where(self.defines.get(v)) for v in self.labels])

    def _expired(self, live: Live, cols: _Columns, horizon: float | None) -> bool:
        """Whether no future row can extend ``live``: its WITHIN window closed before
        ``horizon``."""
        w = self.mr.within
        if w is None or horizon is None:
            return False
        bound = w.amount if w.nanos is None else w.nanos
        return bool(horizon - cols[KEY][live.start] >= bound)

    def deadline(self, state: PartitionState) -> float | None:
        """The horizon at which the live search (if any) expires (WITHIN), else None."""
        w = self.mr.within
        if w is None or state.live is None:
            return None
        bound = w.amount if w.nanos is None else w.nanos
        key = state.buffer.column(KEY)[state.live.start - state.base].as_py()
        return float(key + bound)


def _truth(column: Sequence[Any], lazy: Lazy) -> Any:
    def truth(row: int) -> bool:
        value = column[row]
        return lazy(row) if value < 0 else value == 1
    return truth
