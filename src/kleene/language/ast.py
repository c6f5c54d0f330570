"""Abstract syntax of CEQL queries (CORE paper §2) as frozen dataclasses.

The tree mirrors the paper's grammar: a query is SELECT / FROM / WHERE (a CEL
formula, here called a *pattern*) / PARTITION BY / WITHIN / CONSUME BY / LIMIT.
Every node carries the :class:`Span` of the query text it came from, so that
semantic checks can raise a :class:`~kleene.language.errors.QueryError`
pointing at the offending text.  Spans are excluded from equality so that two
trees parsed from differently formatted text compare equal.
"""

from __future__ import annotations

from dataclasses import field
from typing import Literal as Lit

from kleene.language.records import frozen


@frozen
class Span:
    """Position of a node in the query text (1-based line and column)."""

    line: int
    column: int
    end_line: int
    end_column: int


NO_SPAN = Span(0, 0, 0, 0)


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# ---------------------------------------------------------------- expressions
# Arithmetic expressions inside a predicate.  They read attributes of the event
# the predicate is applied to, or (VarAttr) of events bound to other variables.


@frozen
class Const:
    """A literal: int, float, str or bool."""

    value: int | float | str | bool
    span: Span = _span()


@frozen
class Attr:
    """An attribute of the event the predicate is applied to."""

    name: str
    span: Span = _span()


ArithOp = Lit["+", "-", "*", "/", "%"]


@frozen
class VarAttr:
    """``var.name`` or ``prev(var).name``: an attribute of *another* event.

    ``x[price > a.price]`` compares each event bound to ``x`` with the event
    bound to ``a``; ``x[price > prev(x).price]`` compares each event bound to
    ``x`` with the one bound to ``x`` just before it (the SRT papers' register
    read before the write).  Predicates with these are *n-ary*: they run on
    the register engine (docs/semantics.md, "Conditions between events").
    """

    var: str
    name: str
    prev: bool = False
    span: Span = _span()


@frozen
class BinOp:
    """``left op right``: arithmetic."""

    op: ArithOp
    left: Expr
    right: Expr
    span: Span = _span()


@frozen
class Neg:
    """``-operand``."""

    operand: Expr
    span: Span = _span()


Expr = Const | Attr | VarAttr | BinOp | Neg

# ----------------------------------------------------------------- predicates
# Unary predicates (CORE §2): a predicate reads only the event it is applied to.

CompareOp = Lit["<", "<=", ">", ">=", "==", "!="]


@frozen
class Compare:
    """``left op right``; ``=`` is normalised to ``==`` and ``<>`` to ``!=``."""

    op: CompareOp
    left: Expr
    right: Expr
    span: Span = _span()


@frozen
class Like:
    """``expr LIKE 'regex'``: the whole string must match the regex."""

    operand: Expr
    pattern: str
    span: Span = _span()


@frozen
class InSet:
    """``expr [NOT] IN {v1, v2, ...}``."""

    operand: Expr
    values: tuple[Const, ...]
    negated: bool = False
    span: Span = _span()


@frozen
class InRange:
    """``expr [NOT] IN RANGE(low, high)``, bounds inclusive."""

    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False
    span: Span = _span()


@frozen
class PNot:
    """``NOT pred``."""

    operand: Pred
    span: Span = _span()


@frozen
class PAnd:
    """``left AND right`` inside a predicate."""

    left: Pred
    right: Pred
    span: Span = _span()


@frozen
class POr:
    """``left OR right`` inside a predicate."""

    left: Pred
    right: Pred
    span: Span = _span()


Pred = Compare | Like | InSet | InRange | PNot | PAnd | POr

# -------------------------------------------------------------------- filters
# ``FILTER x[P] AND y[Q] OR ...``: the CORE paper's footnote 1 reads
# ``φ FILTER θ1 AND θ2`` as ``(φ FILTER θ1) FILTER θ2`` and
# ``φ FILTER θ1 OR θ2`` as ``(φ FILTER θ1) OR (φ FILTER θ2)``.


@frozen
class FilterAtom:
    """``var[pred]``: every event bound to ``var`` satisfies ``pred``."""

    var: str
    pred: Pred
    span: Span = _span()


@frozen
class FilterAnd:
    """``left AND right`` between filter atoms: both hold."""

    left: FilterExpr
    right: FilterExpr
    span: Span = _span()


@frozen
class FilterOr:
    """``left OR right`` between filter atoms: either holds."""

    left: FilterExpr
    right: FilterExpr
    span: Span = _span()


FilterExpr = FilterAtom | FilterAnd | FilterOr

# ------------------------------------------------------------------- patterns
# CEL formulas (the WHERE clause).


@frozen
class EventType:
    """An event type ``R`` (optionally ``S>R``); binds the variable ``R``."""

    name: str
    stream: str | None = None
    span: Span = _span()


@frozen
class As:
    """``pattern AS var``: ``var`` collects every position of the pattern."""

    pattern: Pattern
    var: str
    span: Span = _span()


@frozen
class Filter:
    """``pattern FILTER condition``."""

    pattern: Pattern
    condition: FilterExpr
    span: Span = _span()


@frozen
class Seq:
    """``left ; right`` (skip-till-any-match) or ``left : right`` (contiguous)."""

    left: Pattern
    right: Pattern
    contiguous: bool = False
    span: Span = _span()


@frozen
class Or:
    """``left OR right``: a match of either pattern."""

    left: Pattern
    right: Pattern
    span: Span = _span()


@frozen
class Iter:
    """``pattern+`` (iterations separated by any events) or ``pattern:+``."""

    pattern: Pattern
    contiguous: bool = False
    span: Span = _span()


# Operators of the full CEL language (CEL thesis §3.3).  They are parsed so
# that users get a precise "not supported yet" error instead of a syntax error.


@frozen
class And:
    """``left AND right`` (CEL thesis): both patterns match, on the same positions and interval."""

    left: Pattern
    right: Pattern
    span: Span = _span()


@frozen
class All:
    """``left ALL right`` (CEL thesis): both patterns match; the complex event has both's positions."""

    left: Pattern
    right: Pattern
    span: Span = _span()


@frozen
class Unless:
    """``left UNLESS right`` (CEL thesis): matches of ``left`` with no match of ``right`` in their span."""

    left: Pattern
    right: Pattern
    span: Span = _span()


@frozen
class NotEvent:
    """CORE's ``NOT(E [FILTER ...])``."""

    pattern: Pattern
    span: Span = _span()


@frozen
class Star:
    """Kleene star ``pattern*``."""

    pattern: Pattern
    span: Span = _span()


@frozen
class Repeat:
    """Counted repetition ``pattern{low,high}`` (``high`` None: unbounded), ``pattern?``.

    The same as writing ``low`` to ``high`` copies of the pattern out with
    ``;`` (``:`` when ``contiguous``, written ``pattern:{low,high}``); an
    unbounded tail is ``pattern*`` (``:+`` when contiguous).  ``pattern?`` is
    ``Repeat(pattern, 0, 1)``.  ``low == 0`` makes it nullable, like ``*``.
    """

    pattern: Pattern
    low: int
    high: int | None
    contiguous: bool = False
    span: Span = _span()


SelectorName = Lit["NEXT", "LAST", "MAX", "STRICT"]


@frozen
class Selector:
    """A selection strategy on a sub-pattern: ``STRICT(p)``, ``NEXT(p)``, ``LAST(p)``, ``MAX(p)``.

    CEL thesis §4 (``NXT`` is accepted for ``NEXT``): the sub-pattern's matches
    are filtered by the strategy among the sub-pattern's matches with the same
    last event that start where the enclosing pattern lets it start
    (docs/semantics.md, "Nested selectors").  ``SELECT MAX * WHERE p`` is
    ``SELECT * WHERE MAX(p)``.
    """

    strategy: SelectorName
    pattern: Pattern
    span: Span = _span()


Pattern = (
    EventType | As | Filter | Seq | Or | Iter | And | All | Unless | NotEvent | Star | Repeat
    | Selector
)

# -------------------------------------------------------------------- clauses

Strategy = Lit["ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"]


@frozen
class SelectItem:
    """``var`` or ``var[attr, ...]`` in the SELECT list."""

    var: str
    attrs: tuple[str, ...] | None = None
    span: Span = _span()


@frozen
class Select:
    """The SELECT clause.  ``items`` is None for ``*``; empty for ``NONE``."""

    strategy: Strategy = "ALL"
    items: tuple[SelectItem, ...] | None = None
    span: Span = _span()


@frozen
class EventsWindow:
    """``WITHIN n EVENTS``: end - start <= n in input positions."""

    count: int
    span: Span = _span()


@frozen
class DurationWindow:
    """``WITHIN 1 hours 30 minutes``: time(end) - time(start) <= nanos."""

    nanos: int
    span: Span = _span()


@frozen
class AttrWindow:
    """``WITHIN n [attr]``: attr(end) - attr(start) <= n."""

    amount: int | float
    attr: str
    span: Span = _span()


Window = EventsWindow | DurationWindow | AttrWindow

Consume = Lit["NONE", "ANY", "PARTITION"]

AttrType = Lit["int", "double", "string", "boolean", "primary_time"]


@frozen
class EventDecl:
    """``EVENT BUY { name:string, price:double }`` in a CREATE STREAM."""

    name: str
    attributes: tuple[tuple[str, AttrType], ...]
    span: Span = _span()


@frozen
class StreamDecl:
    """``CREATE STREAM S { EVENT ..., EVENT ... }``."""

    name: str
    events: tuple[EventDecl, ...]
    span: Span = _span()


@frozen
class Query:
    """One query: its clauses (``where`` is the pattern of the WHERE clause)."""

    select: Select
    streams: tuple[str, ...]
    where: Pattern
    partition_by: tuple[tuple[str, ...], ...] = ()
    within: Window | None = None
    consume: Consume = "NONE"
    limit: int | None = None
    span: Span = _span()


@frozen
class Program:
    """A query text: optional stream declarations followed by one or more queries.

    ``query`` is the first query; ``queries`` all of them, and ``names`` the
    name each was given by a ``QUERY name:`` header (None where it has none).
    """

    streams: tuple[StreamDecl, ...]
    query: Query
    queries: tuple[Query, ...] = ()
    names: tuple[str | None, ...] = ()
