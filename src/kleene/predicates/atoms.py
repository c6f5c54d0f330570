"""The atom numbering: event types, unary predicates and streams, numbered into bit positions.

A query's automaton tests atoms (``BUY``, ``price > 100``, ``S>E``), and the
predicate table evaluates them into one bit each; :class:`Atoms` is the one
numbering both sides use.  It lives with the predicate stage because that is
where the bits are made; the automaton compiler
(:mod:`kleene.automata.compile`) and the several-query evaluation
(:mod:`kleene.predicates.shared`) read it.
"""

from __future__ import annotations

from kleene.language import ast
from kleene.language.variables import WILDCARD
from kleene.predicates.nodes import structural_key


class Atoms:
    """Numbering of the atomic predicates: event types, then unary predicates, then streams.

    The numbering is the bit layout of the predicate bit vectors, shared with
    :class:`kleene.predicates.table.PredicateTable`.  A stream bit ("the
    event comes from stream S") exists only for ``S>E`` atoms and only when
    the input says which stream each event comes from (``with_streams``);
    ``S>E`` is then the conjunction of the type bit of E and the stream bit
    of S.  Without stream information ``S>E`` is just ``E`` (the input is the
    one stream every name refers to).
    """

    def __init__(self) -> None:
        self.event_types: list[str] = []
        self.preds: list[ast.Pred] = []
        self.streams: list[str] = []
        self._pred_index: tuple[list[ast.Pred], dict[object, int]] | None = None
        """Bit number per predicate's structural key (for the list it was built from)."""

    def collect(self, pattern: ast.Pattern, *, with_streams: bool = False) -> None:
        """Number every event type first, then every distinct predicate, then every stream."""
        types: list[str] = []
        preds: list[ast.Pred] = []
        seen: set[object] = set()
        streams: list[str] = []

        def walk(p: ast.Pattern) -> None:
            if isinstance(p, ast.EventType):
                if p.name not in types and p.name != WILDCARD:  # `_` tests no type
                    types.append(p.name)
                if with_streams and p.stream is not None and p.stream not in streams:
                    streams.append(p.stream)
            elif isinstance(p, ast.Filter):
                walk(p.pattern)
                _filter_preds(p.condition, preds, seen)
            elif isinstance(p, (ast.As, ast.Iter, ast.Star, ast.Repeat, ast.NotEvent, ast.Selector)):
                walk(p.pattern)
            else:
                walk(p.left)
                walk(p.right)

        walk(pattern)
        self.event_types = types
        self.preds = preds
        self.streams = streams

    def type_mask(self, name: str) -> int:
        return 1 << self.event_types.index(name)

    def event_mask(self, event: ast.EventType) -> int:
        """The bits an event type atom tests: its type, and its stream if numbered.

        The wildcard ``_`` tests no type bit (mask 0 holds on every event).
        """
        mask = 0 if event.name == WILDCARD else self.type_mask(event.name)
        if event.stream is not None and event.stream in self.streams:
            mask |= self.stream_mask(event.stream)
        return mask

    def pred_mask(self, pred: ast.Pred) -> int:
        index = self._pred_index
        if index is None or index[0] is not self.preds or len(index[1]) != len(self.preds):
            keys: dict[object, int] = {}
            for i, p in enumerate(self.preds):
                keys.setdefault(structural_key(p), i)
            index = self._pred_index = (self.preds, keys)
        return 1 << (len(self.event_types) + index[1][structural_key(pred)])

    def stream_mask(self, name: str) -> int:
        return 1 << (len(self.event_types) + len(self.preds) + self.streams.index(name))

    @property
    def width(self) -> int:
        return len(self.event_types) + len(self.preds) + len(self.streams)

    def keys(self) -> list[tuple[str, object]]:
        """A structural key per bit, in bit order: what makes two atoms the same atom.

        Several queries evaluated together share one bit per distinct key
        (:mod:`kleene.predicates.shared`).
        """
        return (
            [("type", name) for name in self.event_types]
            + [("pred", structural_key(p)) for p in self.preds]
            + [("stream", name) for name in self.streams]
        )


def _filter_preds(cond: ast.FilterExpr, out: list[ast.Pred], seen: set[object]) -> None:
    # Deduplicated by structure, not ==: Const(True) == Const(1) in Python,
    # yet `b = true` and `b = 1` are different predicates.
    if isinstance(cond, ast.FilterAtom):
        key = structural_key(cond.pred)
        if key not in seen:
            seen.add(key)
            out.append(cond.pred)
    else:
        _filter_preds(cond.left, out, seen)
        _filter_preds(cond.right, out, seen)
