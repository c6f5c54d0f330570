"""Parse CEQL text into the :mod:`kleene.language.ast` tree.

The grammar lives in ``grammar.lark`` (LALR(1), so that parsing is fast and a
syntax error is found at the first token that cannot continue the query).  The
lark parser is built once per machine (cached on disk, see :func:`_lark`).
Parse trees are turned into frozen AST nodes by :class:`_Builder`, which
attaches a :class:`~kleene.language.ast.Span` to every node so that later
semantic checks can point at the offending text.

Names that the AST stores as plain strings (FROM streams, PARTITION BY and
WITHIN attributes, projected attributes, declared attributes) are returned as
:class:`Name`, a ``str`` subclass that also remembers its span; it compares and
hashes exactly like the plain string.

Size: one module because the transformer has one method per grammar rule and the
parser cache serves only it; split, the grammar's mirror would be in pieces.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, get_args

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError
from lark.tree import Meta

from kleene.language import ast, limits
from kleene.language.ast import NO_SPAN, Span
from kleene.language.errors import QueryError
from kleene.language.names import Name, name_span
from kleene.language.parser_cache import cached_lark
from kleene.language.syntax_errors import syntax_error

__all__ = ["MAX_REPEAT", "Name", "parse", "parse_query", "name_span"]

MAX_REPEAT = 100
"""The largest count of ``p{n,m}``: the automaton holds a copy of ``p`` per count
(two for the optional ones), so counts stay small; ``+`` and ``*`` say "many"."""


@functools.cache
def _lark() -> Lark:
    """The LALR parser of the grammar, built once per machine (:mod:`kleene.language.parser_cache`)."""
    return cached_lark("kleene.language", "grammar.lark", "ceql-parser")


@functools.cache
def _literals() -> dict[str, str]:
    """Punctuation terminals by name, to show them as written in errors."""
    return {t.name: t.pattern.value for t in _lark().terminals if t.pattern.type == "str"}


def parse(text: str) -> ast.Program:
    """Parse a CEQL program: optional ``CREATE STREAM`` declarations and one query.

    Raises :class:`QueryError` with the line and column of the first token
    that cannot continue the query.
    """
    if not isinstance(text, str):
        # lark would fail deep inside its lexer with an AttributeError.
        raise TypeError(f"a CEQL query is text (str), not {type(text).__name__}")
    limits.check_length(text)
    try:
        tree = limits.balance_and_check(_lark().parse(text), text)
    except UnexpectedInput as exc:
        raise syntax_error(exc, text, _literals()) from None
    try:
        program = _Builder(text).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, QueryError):
            raise exc.orig_exc from None
        raise
    assert isinstance(program, ast.Program)
    return program


def parse_query(text: str) -> ast.Query:
    """Parse CEQL text (declarations allowed) and return its query."""
    return parse(text).query


def parse_duration(text: str) -> int:
    """``'2 seconds'``, ``'1 minute 30 seconds'`` -> nanoseconds, with WITHIN's units.

    The text is parsed as the duration of a WITHIN clause, so the units and
    their spellings are exactly those of queries; errors point into ``text``.
    """
    prefix = "SELECT * WHERE E WITHIN "
    try:
        window = parse_query(prefix + text).within
    except QueryError as err:
        raise QueryError(err.message, 1, max(1, err.column - len(prefix)), text) from None
    if not isinstance(window, ast.DurationWindow):
        raise QueryError("expected a duration such as '2 seconds'", 1, 1, text)
    return window.nanos


# ---------------------------------------------------------------- helpers

UNIT_NANOS: dict[str, int] = {
    "nanosecond": 1,
    "microsecond": 10**3,
    "millisecond": 10**6,
    "second": 10**9,
    "minute": 60 * 10**9,
    "hour": 3600 * 10**9,
    "day": 86400 * 10**9,
}
"""Nanoseconds per time unit (singular, lower case): WITHIN's units, MATCH_RECOGNIZE's too."""
_ATTR_TYPES: tuple[str, ...] = get_args(ast.AttrType)
_INT_RE = re.compile(r"\d+")
_LARGEST_FLOAT = 1.7976931348623157e308


def _span(meta: Meta) -> Span:
    if getattr(meta, "empty", True):
        return NO_SPAN
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _from(start: Span, meta: Meta) -> Span:
    """From the start of ``start`` to the end of the node ``meta`` describes."""
    return Span(start.line, start.column, meta.end_line, meta.end_column)


def _tok_span(tok: Token) -> Span:
    return Span(tok.line or 0, tok.column or 0, tok.end_line or 0, tok.end_column or 0)


@dataclass(frozen=True)
class _Num:
    """A number literal as written, so that windows can insist on integers."""

    text: str
    value: int | float
    span: Span

    @property
    def is_int(self) -> bool:
        return isinstance(self.value, int)


@dataclass(frozen=True)
class _Clause:
    """An optional query clause, tagged so that ``query`` can sort them out."""

    kind: str
    value: Any


@dataclass(frozen=True)
class _Items:
    """The SELECT list: None for ``*``, () for NONE."""

    value: tuple[ast.SelectItem, ...] | None


@v_args(meta=True)
class _Builder(Transformer[Token, Any]):
    """Turns the lark parse tree into AST nodes with spans."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def _error(self, message: str, span: Span) -> QueryError:
        return QueryError(message, span.line, span.column, self.source)

    def _literal(self, tok: Token, negative: bool = False) -> int | float:
        text = str(tok)
        refused = limits.number_error(text)
        if refused is not None:
            raise self._error(refused, _tok_span(tok))
        value: int | float = int(text) if _INT_RE.fullmatch(text) else float(text)
        if (isinstance(value, float) and math.isinf(value)) or abs(value) > _LARGEST_FLOAT:
            raise self._error(f"number {text} is too large", _tok_span(tok))
        return -value if negative else value

    # ------------------------------------------------------------- program
    def start(self, meta: Meta, children: list[Any]) -> ast.Program:
        decls = tuple(c for c in children if isinstance(c, ast.StreamDecl))
        named = [c for c in children if isinstance(c, tuple)]
        queries = tuple(q for _, q in named)
        names = tuple(n for n, _ in named)
        return ast.Program(decls, queries[0], queries, names)

    def named_query(self, meta: Meta, children: list[Any]) -> tuple[Name | None, ast.Query]:
        if len(children) == 2:
            return children[0], children[1]
        return None, children[0]

    def stream_decl(self, meta: Meta, children: list[Any]) -> ast.StreamDecl:
        name, *events = children
        return ast.StreamDecl(str(name), tuple(events), _span(meta))

    def event_decl(self, meta: Meta, children: list[Any]) -> ast.EventDecl:
        name, *rest = children
        attrs = tuple(rest[0]) if rest else ()
        return ast.EventDecl(str(name), attrs, _span(meta))

    def attr_decls(self, meta: Meta, children: list[Any]) -> list[Any]:
        return children

    def attr_decl(self, meta: Meta, children: list[Any]) -> tuple[Name, str]:
        name, type_name = children
        kind = str(type_name).lower()
        if kind not in _ATTR_TYPES:
            raise self._error(
                f"unknown attribute type {str(type_name)!r}, expected one of "
                + ", ".join(_ATTR_TYPES),
                type_name.span,
            )
        return name, kind

    # --------------------------------------------------------------- query
    def query(self, meta: Meta, children: list[Any]) -> ast.Query:
        select, *rest = children
        clauses = {c.kind: c.value for c in rest if isinstance(c, _Clause)}
        (where,) = [c for c in rest if not isinstance(c, _Clause)]
        return ast.Query(
            select=select,
            streams=clauses.get("from", ()),
            where=where,
            partition_by=clauses.get("partition", ()),
            within=clauses.get("within"),
            consume=clauses.get("consume", "NONE"),
            limit=clauses.get("limit"),
            span=_span(meta),
        )

    def select(self, meta: Meta, children: list[Any]) -> ast.Select:
        strategy: ast.Strategy = children[0] if len(children) == 2 else "ALL"
        items: _Items = children[-1]
        return ast.Select(strategy, items.value, _span(meta))

    def strategy(self, meta: Meta, children: list[Any]) -> str:
        return str(children[0]).upper()

    def select_star(self, meta: Meta, children: list[Any]) -> _Items:
        return _Items(None)

    def select_none(self, meta: Meta, children: list[Any]) -> _Items:
        return _Items(())

    def select_items(self, meta: Meta, children: list[Any]) -> _Items:
        return _Items(tuple(children))

    def select_item(self, meta: Meta, children: list[Any]) -> ast.SelectItem:
        var, *attrs = children
        return ast.SelectItem(str(var), tuple(attrs) if attrs else None, _span(meta))

    def from_clause(self, meta: Meta, children: list[Any]) -> _Clause:
        return _Clause("from", tuple(children))

    def partition(self, meta: Meta, children: list[Any]) -> _Clause:
        return _Clause("partition", tuple(c for c in children if isinstance(c, tuple)))

    def attr_list(self, meta: Meta, children: list[Any]) -> tuple[Name, ...]:
        return tuple(children)

    # A window's span starts at its number (not at WITHIN), where errors point.
    def within_events(self, meta: Meta, children: list[Any]) -> _Clause:
        (num,) = children
        if not num.is_int:
            raise self._error(f"WITHIN n EVENTS needs a whole number, not {num.text}", num.span)
        self._at_most(num, "WITHIN n EVENTS")
        return _Clause("within", ast.EventsWindow(int(num.value), _from(num.span, meta)))

    def _at_most(self, num: _Num, what: str) -> None:
        """:data:`limits.MAX_COUNT` for a window or LIMIT count (caret at the number)."""
        if isinstance(num.value, int) and abs(num.value) > limits.MAX_COUNT:
            raise self._error(
                f"{what}: {num.text} is over kleene's limit of {limits.MAX_COUNT:,} "
                "(10**18, kleene.language.limits.MAX_COUNT: the engine's integers are 64-bit)",
                num.span,
            )

    def within_duration(self, meta: Meta, children: list[Any]) -> _Clause:
        total = sum((nanos for nanos, _ in children), Fraction(0))
        if abs(total) > limits.MAX_DURATION_NANOS:
            raise self._error(
                "a WITHIN duration is at most 36,500 days (about 100 years; "
                "kleene.language.limits.MAX_DURATION_NANOS: times are 64-bit nanoseconds)",
                children[0][1],
            )
        window = ast.DurationWindow(round(total), _from(children[0][1], meta))
        return _Clause("within", window)

    def duration_part(self, meta: Meta, children: list[Any]) -> tuple[Fraction, Span]:
        num, unit = children
        return Fraction(num.text) * UNIT_NANOS[str(unit).lower().rstrip("s")], num.span

    def within_attr(self, meta: Meta, children: list[Any]) -> _Clause:
        num, attr = children
        self._at_most(num, "WITHIN n [attribute]")
        return _Clause("within", ast.AttrWindow(num.value, attr, _from(num.span, meta)))

    def consume(self, meta: Meta, children: list[Any]) -> _Clause:
        return _Clause("consume", str(children[0]).upper())

    def limit(self, meta: Meta, children: list[Any]) -> _Clause:
        (num,) = children
        if not num.is_int:
            raise self._error(f"LIMIT needs a whole number, not {num.text}", num.span)
        self._at_most(num, "LIMIT")
        return _Clause("limit", int(num.value))

    def pos_num(self, meta: Meta, children: list[Any]) -> _Num:
        (tok,) = children
        return _Num(str(tok), self._literal(tok), _span(meta))

    def neg_num(self, meta: Meta, children: list[Any]) -> _Num:
        (tok,) = children
        return _Num("-" + str(tok), self._literal(tok, negative=True), _span(meta))

    # ------------------------------------------------------------ patterns
    def p_event(self, meta: Meta, children: list[Any]) -> ast.EventType:
        return ast.EventType(str(children[0]), None, _span(meta))

    def p_stream_event(self, meta: Meta, children: list[Any]) -> ast.EventType:
        stream, name = children
        return ast.EventType(str(name), str(stream), _span(meta))

    def p_not(self, meta: Meta, children: list[Any]) -> ast.NotEvent:
        return ast.NotEvent(children[0], _span(meta))

    def p_selector(self, meta: Meta, children: list[Any]) -> ast.Selector:
        name = str(children[0]).upper()
        strategy: ast.SelectorName = "NEXT" if name == "NXT" else name  # type: ignore[assignment]
        return ast.Selector(strategy, children[1], _span(meta))

    def p_as(self, meta: Meta, children: list[Any]) -> ast.As:
        pattern, var = children
        if var == "_":
            raise self._error(
                "'_' is the wildcard event, not a variable name: choose another name after AS",
                name_span(var, _span(meta)),
            )
        return ast.As(pattern, str(var), _span(meta))

    def p_plus(self, meta: Meta, children: list[Any]) -> ast.Iter:
        return ast.Iter(children[0], False, _span(meta))

    def p_cplus(self, meta: Meta, children: list[Any]) -> ast.Iter:
        return ast.Iter(children[0], True, _span(meta))

    def p_star(self, meta: Meta, children: list[Any]) -> ast.Star:
        return ast.Star(children[0], _span(meta))

    def p_optional(self, meta: Meta, children: list[Any]) -> ast.Repeat:
        return ast.Repeat(children[0], 0, 1, False, _span(meta))

    def p_repeat(self, meta: Meta, children: list[Any]) -> ast.Repeat:
        low, high = children[1]
        return ast.Repeat(children[0], low, high, False, _span(meta))

    def p_crepeat(self, meta: Meta, children: list[Any]) -> ast.Repeat:
        low, high = children[1]
        return ast.Repeat(children[0], low, high, True, _span(meta))

    def _count(self, tok: Token) -> int:
        """A repetition count: a whole number up to MAX_REPEAT (caret at the number)."""
        if not _INT_RE.fullmatch(str(tok)):
            raise self._error(
                f"a repetition count is a whole number, not {str(tok)}", _tok_span(tok)
            )
        value = int(str(tok))
        if value > MAX_REPEAT:
            raise self._error(
                f"repetition count {value} is over the limit of {MAX_REPEAT} "
                "(each copy is a part of the automaton; use + or * for 'many')",
                _tok_span(tok),
            )
        return value

    def _bounds(self, low: int, high: int | None, tok: Token) -> tuple[int, int | None]:
        if high is not None and high < low:
            raise self._error(
                f"repetition {{{low},{high}}}: the maximum {high} is below the minimum {low}",
                _tok_span(tok),
            )
        if high == 0:
            raise self._error(
                "a repetition of at most 0 copies matches nothing: the maximum must be "
                "at least 1",
                _tok_span(tok),
            )
        return low, high

    def count_exact(self, meta: Meta, children: list[Any]) -> tuple[int, int | None]:
        (tok,) = children
        n = self._count(tok)
        return self._bounds(n, n, tok)

    def count_at_least(self, meta: Meta, children: list[Any]) -> tuple[int, int | None]:
        (tok,) = children
        return self._bounds(self._count(tok), None, tok)

    def count_between(self, meta: Meta, children: list[Any]) -> tuple[int, int | None]:
        low, high = children
        return self._bounds(self._count(low), self._count(high), high)

    def count_at_most(self, meta: Meta, children: list[Any]) -> tuple[int, int | None]:
        (tok,) = children
        return self._bounds(0, self._count(tok), tok)

    def p_seq(self, meta: Meta, children: list[Any]) -> ast.Seq:
        return ast.Seq(children[0], children[1], False, _span(meta))

    def p_cseq(self, meta: Meta, children: list[Any]) -> ast.Seq:
        return ast.Seq(children[0], children[1], True, _span(meta))

    def p_and(self, meta: Meta, children: list[Any]) -> ast.And:
        return ast.And(children[0], children[1], _span(meta))

    def p_all(self, meta: Meta, children: list[Any]) -> ast.All:
        return ast.All(children[0], children[-1], _span(meta))

    def p_unless(self, meta: Meta, children: list[Any]) -> ast.Unless:
        return ast.Unless(children[0], children[1], _span(meta))

    def p_or(self, meta: Meta, children: list[Any]) -> ast.Or:
        return ast.Or(children[0], children[1], _span(meta))

    def p_filter(self, meta: Meta, children: list[Any]) -> ast.Filter:
        return ast.Filter(children[0], children[1], _span(meta))

    # ------------------------------------------------------------- filters
    def f_atom(self, meta: Meta, children: list[Any]) -> ast.FilterAtom:
        var, pred = children
        return ast.FilterAtom(str(var), pred, _span(meta))

    def f_and(self, meta: Meta, children: list[Any]) -> ast.FilterAnd:
        return ast.FilterAnd(children[0], children[1], _span(meta))

    def f_or(self, meta: Meta, children: list[Any]) -> ast.FilterOr:
        return ast.FilterOr(children[0], children[1], _span(meta))

    # ---------------------------------------------------------- predicates
    def pr_or(self, meta: Meta, children: list[Any]) -> ast.POr:
        return ast.POr(children[0], children[1], _span(meta))

    def pr_and(self, meta: Meta, children: list[Any]) -> ast.PAnd:
        return ast.PAnd(children[0], children[1], _span(meta))

    def pr_not(self, meta: Meta, children: list[Any]) -> ast.PNot:
        return ast.PNot(children[0], _span(meta))

    def compare(self, meta: Meta, children: list[Any]) -> ast.Compare:
        left, op, right = children
        return ast.Compare(op, left, right, _span(meta))

    def cmp_op(self, meta: Meta, children: list[Any]) -> str:
        op = str(children[0])
        return {"=": "==", "<>": "!="}.get(op, op)

    def like(self, meta: Meta, children: list[Any]) -> ast.Like:
        operand, pattern = children
        return ast.Like(operand, pattern.value, _span(meta))

    def _in_set(self, meta: Meta, children: list[Any], negated: bool) -> ast.InSet:
        operand, *rest = children
        values = tuple(rest[0]) if rest else ()
        return ast.InSet(operand, values, negated, _span(meta))

    def in_set(self, meta: Meta, children: list[Any]) -> ast.InSet:
        return self._in_set(meta, children, False)

    def not_in_set(self, meta: Meta, children: list[Any]) -> ast.InSet:
        return self._in_set(meta, children, True)

    def in_range(self, meta: Meta, children: list[Any]) -> ast.InRange:
        return ast.InRange(children[0], children[1], children[2], False, _span(meta))

    def not_in_range(self, meta: Meta, children: list[Any]) -> ast.InRange:
        return ast.InRange(children[0], children[1], children[2], True, _span(meta))

    def const_list(self, meta: Meta, children: list[Any]) -> list[Any]:
        return children

    # --------------------------------------------------------- expressions
    def _binop(self, op: str, meta: Meta, children: list[Any]) -> ast.BinOp:
        return ast.BinOp(op, children[0], children[1], _span(meta))  # type: ignore[arg-type]

    def add(self, meta: Meta, children: list[Any]) -> ast.BinOp:
        return self._binop("+", meta, children)

    def sub(self, meta: Meta, children: list[Any]) -> ast.BinOp:
        return self._binop("-", meta, children)

    def mul(self, meta: Meta, children: list[Any]) -> ast.BinOp:
        return self._binop("*", meta, children)

    def div(self, meta: Meta, children: list[Any]) -> ast.BinOp:
        return self._binop("/", meta, children)

    def mod(self, meta: Meta, children: list[Any]) -> ast.BinOp:
        return self._binop("%", meta, children)

    def neg(self, meta: Meta, children: list[Any]) -> ast.Neg:
        return ast.Neg(children[0], _span(meta))

    def neg_number(self, meta: Meta, children: list[Any]) -> ast.Const:
        return ast.Const(self._literal(children[0], negative=True), _span(meta))

    def number_lit(self, meta: Meta, children: list[Any]) -> ast.Const:
        return ast.Const(self._literal(children[0]), _span(meta))

    def true_lit(self, meta: Meta, children: list[Any]) -> ast.Const:
        return ast.Const(True, _span(meta))

    def false_lit(self, meta: Meta, children: list[Any]) -> ast.Const:
        return ast.Const(False, _span(meta))

    def attr(self, meta: Meta, children: list[Any]) -> ast.Attr:
        return ast.Attr(str(children[0]), _span(meta))

    def var_attr(self, meta: Meta, children: list[Any]) -> ast.VarAttr:
        return ast.VarAttr(str(children[0]), str(children[1]), False, _span(meta))

    def func_attr(self, meta: Meta, children: list[Any]) -> ast.VarAttr:
        func, var, attr = children
        if func.lower() != "prev":
            raise self._error(
                f"unknown function {str(func)!r}: only prev(variable).attribute is known",
                name_span(func, _span(meta)),
            )
        return ast.VarAttr(str(var), str(attr), True, _span(meta))

    def string(self, meta: Meta, children: list[Any]) -> ast.Const:
        text = str(children[0])
        quote = text[0]
        return ast.Const(self._text(text[1:-1].replace(quote * 2, quote), meta), _span(meta))

    def name(self, meta: Meta, children: list[Any]) -> Name:
        (tok,) = children
        text = str(tok)
        if tok.type == "QUOTED_NAME":
            text = text[1:-1].replace("``", "`")
        return Name(self._text(text, meta), _span(meta))

    def _text(self, text: str, meta: Meta) -> str:
        """A name or string literal, which must be Unicode text (Arrow holds UTF-8)."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            bad = text[err.start]
            raise self._error(
                f"a name or string holds a lone surrogate ({ascii(bad)}), which is not text",
                _span(meta),
            ) from None
        return text
