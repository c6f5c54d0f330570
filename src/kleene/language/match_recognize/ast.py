"""The MATCH_RECOGNIZE clause as frozen dataclasses.

Every node carries the :class:`~kleene.language.ast.Span` of the text it came
from (excluded from equality, so that differently formatted texts give equal
trees) so that checks and the evaluator can raise a
:class:`~kleene.language.errors.QueryError` with a caret.

Pattern variables are stored folded to upper case unless they were quoted
(``"b"`` keeps its case), as SQL identifiers are; column names are stored as
written, with ``quoted`` telling whether they must match the input's column
name exactly (see :mod:`kleene.reference.match_recognize`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Literal as Lit

from kleene.language.ast import NO_SPAN, Span

__all__ = [
    "AGGREGATES", "Aggregate", "Anchor", "BinOp", "Between", "Case", "Classifier", "Column",
    "Concat", "Define", "Empty", "Exclude", "Expr", "Func", "InList", "IsNull", "Literal",
    "MatchNumber", "MatchRecognize", "Measure", "Nav", "Not", "Pattern", "Permute", "Quantified",
    "RowsPerMatch", "Skip", "SkipKind", "SortKey", "Subset", "Alternation", "Var", "Within",
    "NO_SPAN", "Span", "SCALAR_FUNCTIONS",
]


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Literal:
    """A constant: int, float, str, bool or None (NULL)."""

    value: int | float | str | bool | None
    span: Span = _span()


@dataclass(frozen=True)
class Column:
    """``col`` (``var`` None: the universal variable) or ``X.col``."""

    var: str | None
    name: str
    quoted: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class Classifier:
    """``CLASSIFIER()`` (``var`` None) or ``CLASSIFIER(X)``: the label of a row."""

    var: str | None
    span: Span = _span()


@dataclass(frozen=True)
class MatchNumber:
    """``MATCH_NUMBER()``: the match's number in its partition, from 1."""

    span: Span = _span()


NavKind = Lit["PREV", "NEXT", "FIRST", "LAST"]
Semantics = Lit["RUNNING", "FINAL"]


@dataclass(frozen=True)
class Nav:
    """``PREV/NEXT(e, k)`` (physical) or ``[RUNNING|FINAL] FIRST/LAST(e, k)`` (logical).

    ``offset`` None is the default (1 for PREV/NEXT, 0 for FIRST/LAST); ``semantics``
    None is RUNNING, written implicitly.
    """

    kind: NavKind
    arg: Expr
    offset: int | None = None
    semantics: Semantics | None = None
    span: Span = _span()

    @property
    def physical(self) -> bool:
        return self.kind in ("PREV", "NEXT")

    @property
    def steps(self) -> int:
        if self.offset is not None:
            return self.offset
        return 1 if self.physical else 0


AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX", "ARRAY_AGG")
AggName = Lit["COUNT", "SUM", "AVG", "MIN", "MAX", "ARRAY_AGG"]


@dataclass(frozen=True)
class Aggregate:
    """``[RUNNING|FINAL] agg(arg)``; ``COUNT(*)`` has ``arg`` None and ``star_var`` None,
    ``COUNT(X.*)`` has ``arg`` None and ``star_var`` X."""

    func: AggName
    arg: Expr | None
    star_var: str | None = None
    semantics: Semantics | None = None
    span: Span = _span()


SCALAR_FUNCTIONS = {"ABS": 1, "MOD": 2, "COALESCE": -1, "LOWER": 1, "UPPER": 1, "ROUND": -1}
"""Plain functions of the current values; the count of arguments (-1: any, at least one)."""


@dataclass(frozen=True)
class Func:
    """A scalar function (:data:`SCALAR_FUNCTIONS`) applied to its arguments."""

    name: str
    args: tuple[Expr, ...]
    span: Span = _span()


BinOpName = Lit["+", "-", "*", "/", "%", "=", "<>", "<", "<=", ">", ">=", "AND", "OR"]


@dataclass(frozen=True)
class BinOp:
    """Arithmetic, comparison or logic (``!=`` is stored as ``<>``)."""

    op: BinOpName
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Not:
    """``NOT e`` (``negate`` False) or unary minus ``-e`` (``negate`` True)."""

    operand: Expr
    negate: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class IsNull:
    operand: Expr
    negated: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class Between:
    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class InList:
    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class Case:
    """``CASE WHEN c THEN v ... [ELSE e] END``."""

    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None = None
    span: Span = _span()


Expr = (
    Literal | Column | Classifier | MatchNumber | Nav | Aggregate | Func | BinOp | Not | IsNull
    | Between | InList | Case
)


# ---------------------------------------------------------------- row patterns


@dataclass(frozen=True)
class Var:
    """A primary pattern variable: one row labelled ``name``."""

    name: str
    span: Span = _span()


@dataclass(frozen=True)
class Empty:
    """``()``: the empty pattern, matching no row."""

    span: Span = _span()


@dataclass(frozen=True)
class Anchor:
    """``^`` (partition start, ``start`` True) or ``$`` (partition end)."""

    start: bool
    span: Span = _span()


@dataclass(frozen=True)
class Concat:
    items: tuple[Pattern, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Alternation:
    """``p1 | p2 | ...``: the lower-indexed branch is preferred."""

    items: tuple[Pattern, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Permute:
    """``PERMUTE(p1, ..., pk)``: every order, preferred lexicographically by position."""

    items: tuple[Pattern, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Exclude:
    """``{- p -}``: matched as ``p``; its rows are left out of ALL ROWS PER MATCH output."""

    body: Pattern
    span: Span = _span()


@dataclass(frozen=True)
class Quantified:
    """``p{low,high}`` (``high`` None: unbounded); ``greedy`` False for the reluctant forms."""

    body: Pattern
    low: int
    high: int | None
    greedy: bool = True
    span: Span = _span()


Pattern = Var | Empty | Anchor | Concat | Alternation | Permute | Exclude | Quantified


# ---------------------------------------------------------------- clauses


@dataclass(frozen=True)
class SortKey:
    column: Column
    descending: bool = False
    nulls_first: bool | None = None
    """None: the default, NULLS LAST (ascending or descending, as Trino)."""
    span: Span = _span()


@dataclass(frozen=True)
class Measure:
    expr: Expr
    name: str
    span: Span = _span()


class RowsPerMatch(Enum):
    ONE = "ONE ROW PER MATCH"
    ALL_SHOW_EMPTY = "ALL ROWS PER MATCH SHOW EMPTY MATCHES"
    ALL_OMIT_EMPTY = "ALL ROWS PER MATCH OMIT EMPTY MATCHES"
    ALL_WITH_UNMATCHED = "ALL ROWS PER MATCH WITH UNMATCHED ROWS"


class SkipKind(Enum):
    PAST_LAST_ROW = "PAST LAST ROW"
    TO_NEXT_ROW = "TO NEXT ROW"
    TO_FIRST = "TO FIRST"
    TO_LAST = "TO LAST"


@dataclass(frozen=True)
class Skip:
    kind: SkipKind = SkipKind.PAST_LAST_ROW
    var: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Subset:
    """``SUBSET name = (members)``: a union variable."""

    name: str
    members: tuple[str, ...]
    span: Span = _span()
    member_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Define:
    var: str
    condition: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Within:
    """``WITHIN``: the largest span from a match's first to its last row's ORDER BY key.

    ``nanos`` for a duration (``INTERVAL '10' SECOND``, ``10 seconds``) over a temporal
    key, and then ``amount`` equals it; ``nanos`` None (``WITHIN 10``) for a numeric key,
    ``amount`` in the key's own units.
    """

    amount: int | float
    nanos: int | None = None
    span: Span = _span()


@dataclass(frozen=True)
class MatchRecognize:
    """One MATCH_RECOGNIZE clause; ``source`` is the text, for error carets."""

    pattern: Pattern
    partition_by: tuple[Column, ...] = ()
    order_by: tuple[SortKey, ...] = ()
    measures: tuple[Measure, ...] = ()
    rows_per_match: RowsPerMatch = RowsPerMatch.ONE
    skip: Skip = Skip()
    subsets: tuple[Subset, ...] = ()
    defines: tuple[Define, ...] = ()
    within: Within | None = None
    source: str = field(default="", compare=False, repr=False)
    span: Span = _span()

    @property
    def all_rows(self) -> bool:
        return self.rows_per_match is not RowsPerMatch.ONE
