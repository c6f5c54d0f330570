"""ONE ROW PER MATCH measures computed for all matches of a partition at once (numpy/Arrow).

On the fast path the matches come back as flat arrays (:mod:`.scan`); the measures
most queries use are positions in them: ``X.col`` and ``LAST(X.col, k)`` (the k-th
row of X from the end of the match), ``FIRST(X.col, k)``, ``COUNT(*)``, ``COUNT(X.*)``,
``CLASSIFIER(X)``, ``MATCH_NUMBER()``.  With a running count of the rows of X along
the concatenated paths, the row each one reads is found by a binary search, per
match, without a Python step per row.  Values are taken from the Arrow column, for
the column types whose Python round trip (what the reference does) gives the same
Arrow type; any other measure, type or mode goes through :mod:`.output`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kleene.language.match_recognize import ast

__all__ = ["Columnar", "plan"]

Spec = tuple[str, Any, int, frozenset[str] | None, str | None]
"""(kind, column name, offset, variable set, FIRST/LAST) per measure."""


def _plain(t: pa.DataType) -> bool:
    return (pa.types.is_int64(t) or pa.types.is_float64(t) or pa.types.is_string(t)
            or pa.types.is_boolean(t) or pa.types.is_date32(t))


def plan(mr: ast.MatchRecognize, variables: dict[str, frozenset[str]],
         column: Callable[[ast.Column], str], schema: pa.Schema) -> list[Spec] | None:
    """A spec per measure when every measure can be computed columnar, else None."""
    if mr.rows_per_match is not ast.RowsPerMatch.ONE:
        return None
    specs: list[Spec] = []
    for m in mr.measures:
        e = m.expr
        members = None
        if isinstance(e, ast.MatchNumber):
            specs.append(("number", None, 0, None, None))
            continue
        if isinstance(e, ast.Aggregate) and e.func == "COUNT" and e.arg is None:
            var = e.star_var
            specs.append(("count", None, 0, None if var is None else variables[var], None))
            continue
        kind, k = "LAST", 0
        if isinstance(e, ast.Nav) and not e.physical:
            kind, k, e = e.kind, e.steps, e.arg
        if isinstance(e, ast.Classifier):
            members = None if e.var is None else variables[e.var]
            specs.append(("classifier", None, k, members, kind))
            continue
        if not isinstance(e, ast.Column):
            return None
        name = column(e)
        if not _plain(schema.field(name).type):
            return None
        members = None if e.var is None else variables[e.var]
        specs.append(("column", name, k, members, kind))
    return specs


class Columnar:
    """Collects the measures of every partition; :meth:`finish` gives the columns."""

    def __init__(self, specs: list[Spec], labels: Sequence[str], table: pa.Table) -> None:
        self.specs = specs
        self.labels = labels
        self.table = table  # sorted: partitions contiguous
        self.rows: list[np.ndarray] = []
        self.parts: list[list[Any]] = [[] for _ in specs]

    def add(self, events: Sequence[int], path_rows: Sequence[int], path_labels: Sequence[int],
            lo: int, ids: np.ndarray) -> None:
        """The matches of the partition starting at sorted row ``lo`` (``ids``: input rows)."""
        ev = np.asarray(events, dtype=np.int64).reshape(-1, 3)
        ev = ev[ev[:, 2] >= 0]
        starts, offsets, lengths = ev[:, 0], ev[:, 1], ev[:, 2]
        rows = np.asarray(path_rows, dtype=np.int64)
        labs = np.asarray(path_labels, dtype=np.int64)
        self.rows.append(ids[starts])
        for i, (kind, name, k, members, nav) in enumerate(self.specs):
            if kind == "number":
                self.parts[i].append(pa.array(np.arange(1, len(ev) + 1, dtype=np.int64)))
                continue
            if members is None:
                mask = np.ones(len(labs), dtype=bool)
            else:
                wanted = [j for j, v in enumerate(self.labels) if v in members]
                mask = np.isin(labs, wanted)
            cs = np.concatenate([[0], np.cumsum(mask)])
            before = cs[offsets]
            total = cs[offsets + lengths] - before
            if kind == "count":
                self.parts[i].append(pa.array(total))
                continue
            rank = total - k if nav == "LAST" else np.full(len(ev), k + 1)
            valid = (rank >= 1) & (rank <= total)
            index = np.searchsorted(cs, before + np.where(valid, rank, 1), side="left") - 1
            index = np.clip(index, 0, max(len(rows) - 1, 0))
            if kind == "classifier":
                names = np.array(list(self.labels) + [None], dtype=object)
                picked = np.where(valid, labs[index] if len(labs) else 0, len(self.labels))
                self.parts[i].append(pa.array(names[picked], type=pa.string()))
                continue
            target = (rows[index] if len(rows) else np.zeros(len(ev), dtype=np.int64)) + lo
            values = self.table.column(name).take(pa.array(target))
            self.parts[i].append(pc.if_else(pa.array(valid), values, pa.nulls(len(ev), values.type)))

    def finish(self) -> tuple[np.ndarray, list[pa.Array]]:
        """The input row of each output row, and the measure columns (typed as the reference
        types them: all NULL gives the null type)."""
        rows = np.concatenate(self.rows) if self.rows else np.zeros(0, dtype=np.int64)
        columns = []
        for parts in self.parts:
            chunks = [p.combine_chunks() if isinstance(p, pa.ChunkedArray) else p for p in parts]
            array = pa.concat_arrays(chunks) if chunks else pa.array([])
            if array.null_count == len(array):
                array = pa.nulls(len(array))
            columns.append(array)
        return rows, columns
