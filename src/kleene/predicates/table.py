"""Vectorised evaluation of a query's atomic predicates into per-event bit vectors.

CORE (spec §4, item 1) evaluates every atomic predicate of a query once per
event and runs the automaton on the resulting bit vector.  kleene does the
same over a whole columnar batch at a time: each predicate is compiled once,
in :class:`PredicateTable`'s constructor, into a small tree of nodes whose
evaluation is a handful of numpy / pyarrow.compute kernels over whole
columns.  This is the first stage of the hot path, so Python only loops over
*distinct* values (``LIKE``) or over rows that are genuinely exceptional
(int64 overflow, integers beyond 2**53 in a true division).

This module is the stage's entry point: :class:`PredicateTable` lays out the
bits (event types, predicates, streams) and evaluates batches.  What it
builds on are the neighbouring modules of :mod:`kleene.predicates`: runtime
values (:mod:`~kleene.predicates.values`), arithmetic, comparison, the
compiled nodes and the per-value evaluation.  The semantics below hold for
all of them.

Semantics — those of the reference oracle (:mod:`kleene.reference.predicates`):

* ``+ - *`` and ``%`` on two integers give an integer (exact, as in Python:
  results beyond int64 are kept as Python ints); ``/`` is true division and
  always gives a float; an integer mixed with a float gives a float.  ``%``
  is Python's (the result has the sign of the divisor).
* Numbers compare by value, exactly, even int64 against float64 (large
  integers are not rounded).  Strings compare by code point.  Booleans are
  not numbers; they compare with each other (``False < True``, as Python).
  Values of different kinds are never equal *and* never unequal: such a
  comparison is false, also for ``!=``.
* ``x LIKE 're'`` is a *full* match of an RE2 regular expression (linear
  time: no catastrophic backtracking).  ``x IN {..}`` is membership by value,
  ``x IN RANGE(lo, hi)`` is ``lo <= x <= hi``.
* A value is *undefined* on a row when the column is missing, the value is
  null or NaN (read or computed, e.g. ``inf - inf``), a division or ``%`` is
  by zero, or arithmetic meets a non-number.  An atom (comparison, ``LIKE``,
  ``IN``, ``IN RANGE``) reading an undefined value is **false**, and so is
  its negated form (``NOT IN``, ``NOT IN RANGE``).  ``NOT``/``AND``/``OR`` are
  ordinary two-valued logic over atoms, so ``NOT (x > 1)`` is *true* where
  ``x`` is null.  The engine reports such rows as bad input separately
  (:mod:`kleene.predicates.conform`).

The predicates are typed leniently: a kind conflict (``x LIKE 'a' AND x > 1``)
just makes some atoms false at run time; rejecting such queries is the job of
the query checker, which knows the stream's schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

import kleene.kernels as pc
from kleene.language import ast
from kleene.language.errors import KleeneError
from kleene.predicates.kinds import infer_kinds
from kleene.predicates.nodes import Compiler, Ctx
from kleene.predicates.per_value import PerValue
from kleene.predicates.values import dict_parts, is_string

MAX_WIDTH = 64
"""Bit vectors are uint64: one bit per event type and per predicate."""


class TooManyPredicatesError(KleeneError):
    """The query needs more than 64 bits (event types + distinct predicates)."""


def _attr_names(preds: Iterable[ast.Pred]) -> list[str]:
    seen: dict[str, None] = {}

    def expr(e: ast.Expr) -> None:
        if isinstance(e, ast.Attr):
            seen.setdefault(e.name, None)
        elif isinstance(e, ast.Neg):
            expr(e.operand)
        elif isinstance(e, ast.BinOp):
            expr(e.left)
            expr(e.right)

    def pred(p: ast.Pred) -> None:
        if isinstance(p, ast.Compare):
            expr(p.left)
            expr(p.right)
        elif isinstance(p, ast.Like | ast.InSet):
            expr(p.operand)
        elif isinstance(p, ast.InRange):
            expr(p.operand)
            expr(p.low)
            expr(p.high)
        elif isinstance(p, ast.PNot):
            pred(p.operand)
        elif isinstance(p, ast.PAnd | ast.POr):
            pred(p.left)
            pred(p.right)

    for p in preds:
        pred(p)
    return list(seen)


class _NameBits:
    """Bits set by the value of one string column: the event type, or the stream.

    ``names[i]`` sets bit ``offset + i``; a name listed twice sets both bits;
    any other value, a null or a missing column sets none.
    """

    def __init__(self, column: str, names: Sequence[str], offset: int) -> None:
        self.column = column
        masks: dict[str, int] = {}
        for i, name in enumerate(names):
            masks[name] = masks.get(name, 0) | (1 << (offset + i))
        self.mask_of = masks
        self.names = pa.array(list(masks), pa.string())
        # The extra last entry (0) is where unknown and null names land.
        self.masks = np.array([*masks.values(), 0], dtype=np.uint64)

    def evaluate(self, batch: pa.RecordBatch) -> np.ndarray:
        n = batch.num_rows
        if not self.mask_of:
            return np.zeros(n, np.uint64)
        i = batch.schema.get_field_index(self.column)
        if i < 0:  # missing, or a duplicated name: take the first
            names = batch.schema.names
            if self.column not in names:
                return np.zeros(n, np.uint64)
            i = names.index(self.column)
        col = batch.column(i)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        none = len(self.masks) - 1
        if n == 1:  # a single pushed event: skip the kernels
            name = col[0].as_py()
            if name is not None and not isinstance(name, str):
                name = pc.cast(pa.scalar(name), pa.string()).as_py()
            return np.array([self.mask_of.get(name, 0) if name is not None else 0], np.uint64)
        if pa.types.is_dictionary(col.type):  # look up the distinct names only
            dictionary = col.dictionary
            if not is_string(dictionary.type):
                dictionary = pc.cast(dictionary, pa.string())
            pos = pc.fill_null(pc.index_in(dictionary, value_set=self.names), none)  # a null entry: none
            per_value = self.masks[np.asarray(pos).astype(np.intp)]
            if not col.null_count and len(per_value) and (per_value == per_value[0]).all():
                return np.full(n, per_value[0], np.uint64)  # one name (or names of one meaning)
            _, idx, valid = dict_parts(col)
            out = per_value[idx] if len(per_value) else np.zeros(n, np.uint64)
            if valid is not None:
                out[~valid] = 0
            return out
        if not is_string(col.type):
            try:
                col = pc.cast(col, pa.string())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return np.zeros(n, np.uint64)
        pos = pc.fill_null(pc.index_in(col, value_set=self.names), none)
        return self.masks[np.asarray(pos).astype(np.intp)]


class PredicateTable:
    """The atomic predicates of one query (or of several together), one bit each.

    Bit ``i`` (``0 <= i < len(event_types)``) means "the event's type is
    ``event_types[i]``"; bit ``len(event_types) + k`` means "``preds[k]``
    holds on the event"; the bits after those mean "the event comes from
    stream ``streams[j]``" (read from ``stream_column``).  Everything that
    does not depend on the data — regex compilation, sharing of common
    subexpressions, constant folding, the type lookup — is done here once,
    so that :meth:`evaluate` on a 1-row batch (how single pushed events are
    evaluated) stays cheap.
    """

    evaluations = 0
    """How many batches this table evaluated (per instance once it has evaluated)."""

    def __init__(
        self,
        event_types: Sequence[str],
        preds: Sequence[ast.Pred],
        *,
        type_column: str = "type",
        streams: Sequence[str] = (),
        stream_column: str | None = None,
    ) -> None:
        self.event_types: tuple[str, ...] = tuple(event_types)
        self.preds: tuple[ast.Pred, ...] = tuple(preds)
        self.streams: tuple[str, ...] = tuple(streams)
        self.type_column = type_column
        self.stream_column = stream_column
        if self.streams and stream_column is None:
            raise ValueError("stream bits need a stream column")
        self.width: int = len(self.event_types) + len(self.preds) + len(self.streams)
        if self.width > MAX_WIDTH:
            raise TooManyPredicatesError(
                f"query has too many distinct predicates: {len(self.event_types)} event "
                f"types, {len(self.preds)} predicates and {len(self.streams)} streams need "
                f"{self.width} bits, but at most {MAX_WIDTH} are supported"
            )

        self.read_attributes: tuple[str, ...] = tuple(_attr_names(self.preds))
        """Every attribute some predicate reads, in order of first use."""
        self._kinds: dict[str, str] = infer_kinds(self.preds, self.read_attributes)

        compiler = Compiler()
        self._roots = [compiler.pred(p) for p in self.preds]
        self._slots = compiler.slots
        self._shifts = [np.uint64(len(self.event_types) + k) for k in range(len(self.preds))]
        # Predicates by the attributes they read: on string columns they are
        # evaluated once per distinct combination of values (see PerValue).
        by_columns: dict[tuple[str, ...], list[int]] = {}
        for k, p in enumerate(self.preds):
            names = tuple(_attr_names([p]))
            if names:
                by_columns.setdefault(names, []).append(k)
        self._per_value = PerValue(by_columns, self._roots, self._slots, self._shifts)
        self._types = _NameBits(type_column, self.event_types, 0)
        self._streams = (
            None
            if stream_column is None or not self.streams
            else _NameBits(stream_column, self.streams, len(self.event_types) + len(self.preds))
        )

    def attributes(self) -> dict[str, str]:
        """Attribute -> the kind (``'number'``, ``'string'``, ``'boolean'``) its use implies.

        Kinds flow through comparisons between attributes (``x == y AND y > 1``
        makes both numbers).  An attribute only ever compared with attributes
        of unknown kind has no inferable kind and is left out; it is still in
        :attr:`read_attributes`, and compares by its column's runtime type.
        """
        return dict(self._kinds)

    def evaluate(self, batch: pa.RecordBatch) -> np.ndarray:
        """One uint64 bit vector per row of ``batch``."""
        self.evaluations += 1
        out = self._types.evaluate(batch)
        if self._roots:
            done = self._per_value.evaluate(batch, out) if self._per_value.by_columns else ()
            ctx = Ctx(batch, self._slots)
            for k, (root, shift) in enumerate(zip(self._roots, self._shifts, strict=True)):
                if k not in done:
                    out |= root.get(ctx).astype(np.uint64) << shift
        if self._streams is not None:
            out |= self._streams.evaluate(batch)
        return out


