"""Parse MATCH_RECOGNIZE text into :mod:`kleene.language.match_recognize.ast`.

The grammar is ``grammar.lark`` beside this module (LALR(1), contextual lexer,
as CEQL's); the built parser is cached on disk the same way as CEQL's (see
:func:`kleene.language.parser_cache.cache_dir`), under its own file name.  This module
is imported only when a MATCH_RECOGNIZE text is parsed: ``import kleene`` and
``kleene run`` never load it.  Syntax errors go through CEQL's
:func:`~kleene.language.syntax_errors.syntax_error`; the standard's static rules
are in :mod:`kleene.language.match_recognize.checks`, run by :func:`parse`.

Size: just over 500 lines because the transformer has one short method per
grammar rule; split, the mirror of the grammar would be in pieces.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError
from lark.tree import Meta

from kleene.language.errors import QueryError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.ast import NO_SPAN, Span
from kleene.language.match_recognize.checks import check
from kleene.language.parser import UNIT_NANOS
from kleene.language.parser_cache import cached_lark
from kleene.language.syntax_errors import syntax_error

__all__ = ["parse", "parse_unchecked"]

@functools.cache
def _lark() -> Lark:
    """The LALR parser, loaded from the on-disk cache or built and saved there
    (:mod:`kleene.language.parser_cache`, as for CEQL)."""
    return cached_lark("kleene.language.match_recognize", "grammar.lark", "match-recognize-parser")


@functools.cache
def _literals() -> dict[str, str]:
    return {t.name: t.pattern.value for t in _lark().terminals if t.pattern.type == "str"}


def parse_unchecked(text: str) -> ast.MatchRecognize:
    """The tree of ``text`` without the static checks (for tests of the checks)."""
    if not isinstance(text, str):
        raise TypeError(f"a MATCH_RECOGNIZE clause is text (str), not {type(text).__name__}")
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text) from None
    try:
        result = _Builder(text).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, QueryError):
            raise exc.orig_exc from None
        raise
    assert isinstance(result, ast.MatchRecognize)
    return result


_WORDING = (
    # CEQL's phrases for what may come next, as this language names them
    ("a filter such as var[predicate] or '('", "a pattern variable, '('"),
    ("a value or an attribute", "an expression"),
    ("a predicate", "an expression"),
    ("COMP_OP", "a comparison"),
    ("STRING", "a string"),
    ("RELUCTANT", "'?'"),
)


def _syntax_error(exc: UnexpectedInput, text: str) -> QueryError:
    """CEQL's syntax error (position, offending token, what was expected), reworded."""
    err = syntax_error(exc, text, _literals())
    message = err.message
    for ceql, here in _WORDING:
        message = message.replace(ceql, here)
    return QueryError(message, err.line, err.column, text)


def parse(text: str) -> ast.MatchRecognize:
    """Parse and check a MATCH_RECOGNIZE clause (its body, or ``MATCH_RECOGNIZE ( ... )``).

    Raises :class:`QueryError` with line, column and caret for a syntax error
    or a broken static rule of the standard.
    """
    result = parse_unchecked(text)
    check(result)
    return result


# ---------------------------------------------------------------- building

_INTERVAL_TEXT = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_NAVIGATIONS = ("PREV", "NEXT", "FIRST", "LAST")


def _span(meta: Meta) -> Span:
    if getattr(meta, "empty", True):
        return NO_SPAN
    return Span(meta.line, meta.column, meta.end_line, meta.end_column)


def _tok_span(tok: Token) -> Span:
    return Span(tok.line or 0, tok.column or 0, tok.end_line or 0, tok.end_column or 0)


class _Name:
    """A name as written: its text (quotes removed), whether it was quoted, where."""

    def __init__(self, text: str, quoted: bool, span: Span) -> None:
        self.text = text
        self.quoted = quoted
        self.span = span

    @property
    def variable(self) -> str:
        """As a pattern variable: folded to upper case unless quoted."""
        return self.text if self.quoted else self.text.upper()


def _number(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") else int(text)


def _unit_nanos(unit: str, where: Span, source: str) -> int:
    word = unit.lower().rstrip("s") if unit.lower() != "s" else "second"
    if word not in UNIT_NANOS:
        raise QueryError(f"unknown time unit {unit!r}", where.line, where.column, source)
    return UNIT_NANOS[word]


@v_args(meta=True)
class _Builder(Transformer[Token, Any]):
    """Parse tree -> AST, one method per grammar rule."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def _error(self, message: str, span: Span) -> QueryError:
        return QueryError(message, span.line or 1, span.column or 1, self.source)

    # ---- names and top level
    def name(self, meta: Meta, children: list[Token]) -> _Name:
        tok = children[0]
        if tok.type == "QUOTED_NAME":
            return _Name(str(tok)[1:-1].replace('""', '"'), True, _tok_span(tok))
        return _Name(str(tok), False, _tok_span(tok))

    def start(self, meta: Meta, children: list[Any]) -> ast.MatchRecognize:
        result = children[-1]
        assert isinstance(result, ast.MatchRecognize)
        return result

    def body(self, meta: Meta, children: list[Any]) -> ast.MatchRecognize:
        parts: dict[str, Any] = dict(children)
        pattern, within = parts.pop("pattern")
        return ast.MatchRecognize(pattern=pattern, within=within, source=self.source,
                                  span=_span(meta), **parts)

    def column_name(self, meta: Meta, children: list[_Name]) -> ast.Column:
        n = children[0]
        return ast.Column(None, n.text, n.quoted, n.span)

    def partition_clause(self, meta: Meta, children: list[ast.Column]) -> tuple[str, Any]:
        return "partition_by", tuple(children)

    def order_clause(self, meta: Meta, children: list[ast.SortKey]) -> tuple[str, Any]:
        return "order_by", tuple(children)

    def sort_key(self, meta: Meta, children: list[Any]) -> ast.SortKey:
        column, rest = children[0], children[1:]
        descending = any(isinstance(c, str) and c == "DESC" for c in rest)
        nulls = next((c for c in rest if isinstance(c, bool)), None)
        return ast.SortKey(column, descending, nulls, _span(meta))

    def direction(self, meta: Meta, children: list[Token]) -> str:
        return str(children[0]).upper()

    def null_order(self, meta: Meta, children: list[Token]) -> bool:
        return str(children[0]).upper() == "FIRST"

    def measures_clause(self, meta: Meta, children: list[ast.Measure]) -> tuple[str, Any]:
        return "measures", tuple(children)

    def measure(self, meta: Meta, children: list[Any]) -> ast.Measure:
        expr, name = children
        return ast.Measure(expr, name.text, name.span)

    def one_row(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "rows_per_match", ast.RowsPerMatch.ONE

    def all_rows_show(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "rows_per_match", ast.RowsPerMatch.ALL_SHOW_EMPTY

    def all_rows_omit(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "rows_per_match", ast.RowsPerMatch.ALL_OMIT_EMPTY

    def all_rows_unmatched(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "rows_per_match", ast.RowsPerMatch.ALL_WITH_UNMATCHED

    def skip_past_last_row(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "skip", ast.Skip(ast.SkipKind.PAST_LAST_ROW, None, _span(meta))

    def skip_to_next_row(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        return "skip", ast.Skip(ast.SkipKind.TO_NEXT_ROW, None, _span(meta))

    def skip_to_first(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        n = children[-1]
        return "skip", ast.Skip(ast.SkipKind.TO_FIRST, n.variable, n.span)

    def skip_to_last(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        n = children[-1]
        return "skip", ast.Skip(ast.SkipKind.TO_LAST, n.variable, n.span)

    def pattern_clause(self, meta: Meta, children: list[Any]) -> tuple[str, Any]:
        pattern: ast.Pattern = ast.Empty(_span(meta))
        within = None
        for c in children:
            if isinstance(c, ast.Within):
                within = c
            else:
                pattern = c
        return "pattern", (pattern, within)

    def within_interval(self, meta: Meta, children: list[Token]) -> ast.Within:
        text = str(children[0])[1:-1].replace("''", "'")
        m = _INTERVAL_TEXT.match(text)
        span = _tok_span(children[0])
        if m is None:
            raise self._error(f"expected an interval such as '10' SECOND, not {text!r}", span)
        amount = _number(m.group(1))
        unit = str(children[1]) if len(children) > 1 else m.group(2)
        if not unit or (len(children) > 1 and m.group(2)):
            raise self._error("an INTERVAL needs one time unit, as in INTERVAL '10' SECOND", span)
        nanos = round(amount * _unit_nanos(unit, span, self.source))
        return ast.Within(nanos, nanos, _span(meta))

    def within_duration(self, meta: Meta, children: list[Token]) -> ast.Within:
        amount = _number(str(children[0]))
        nanos = round(amount * _unit_nanos(str(children[1]), _tok_span(children[1]), self.source))
        return ast.Within(nanos, nanos, _span(meta))

    def within_number(self, meta: Meta, children: list[Token]) -> ast.Within:
        return ast.Within(_number(str(children[0])), None, _span(meta))

    def subset_clause(self, meta: Meta, children: list[ast.Subset]) -> tuple[str, Any]:
        return "subsets", tuple(children)

    def subset_item(self, meta: Meta, children: list[Any]) -> ast.Subset:
        name, members = children[0], [c for c in children[2:]]
        return ast.Subset(name.variable, tuple(m.variable for m in members), name.span,
                          tuple(m.span for m in members))

    def define_clause(self, meta: Meta, children: list[ast.Define]) -> tuple[str, Any]:
        return "defines", tuple(children)

    def define_item(self, meta: Meta, children: list[Any]) -> ast.Define:
        name, condition = children
        return ast.Define(name.variable, condition, name.span)

    # ---- patterns
    def p_var(self, meta: Meta, children: list[_Name]) -> ast.Var:
        return ast.Var(children[0].variable, children[0].span)

    def p_group(self, meta: Meta, children: list[Any]) -> ast.Pattern:
        return children[0] if children else ast.Empty(_span(meta))

    def p_exclude(self, meta: Meta, children: list[Any]) -> ast.Exclude:
        return ast.Exclude(children[0] if children else ast.Empty(_span(meta)), _span(meta))

    def p_permute(self, meta: Meta, children: list[Any]) -> ast.Permute:
        return ast.Permute(tuple(children), _span(meta))

    def p_start(self, meta: Meta, children: list[Any]) -> ast.Anchor:
        return ast.Anchor(True, _span(meta))

    def p_end(self, meta: Meta, children: list[Any]) -> ast.Anchor:
        return ast.Anchor(False, _span(meta))

    def p_concat(self, meta: Meta, children: list[Any]) -> ast.Concat:
        return ast.Concat(tuple(children), _span(meta))

    def p_alt(self, meta: Meta, children: list[Any]) -> ast.Alternation:
        return ast.Alternation(tuple(children), _span(meta))

    def p_factor(self, meta: Meta, children: list[Any]) -> ast.Quantified:
        body, (low, high, greedy, span) = children
        return ast.Quantified(body, low, high, greedy, span)

    def quantifier(self, meta: Meta, children: list[Any]) -> tuple[int, int | None, bool, Span]:
        low, high = children[0]
        span = _span(meta)
        if high is not None and low > high:
            raise self._error(f"quantifier {{{low},{high}}}: the minimum is above the maximum", span)
        return low, high, len(children) == 1, span

    def q_star(self, meta: Meta, children: list[Any]) -> tuple[int, int | None]:
        return 0, None

    def q_plus(self, meta: Meta, children: list[Any]) -> tuple[int, int | None]:
        return 1, None

    def q_optional(self, meta: Meta, children: list[Any]) -> tuple[int, int | None]:
        return 0, 1

    def _bound(self, tok: Token) -> int:
        if not str(tok).isdigit():
            raise self._error(f"a quantifier bound is a whole number, not {str(tok)!r}", _tok_span(tok))
        return int(str(tok))

    def q_exact(self, meta: Meta, children: list[Token]) -> tuple[int, int | None]:
        n = self._bound(children[0])
        return n, n

    def q_from(self, meta: Meta, children: list[Token]) -> tuple[int, int | None]:
        low = self._bound(children[0])
        return low, (self._bound(children[1]) if len(children) > 1 else None)

    def q_upto(self, meta: Meta, children: list[Token]) -> tuple[int, int | None]:
        return 0, (self._bound(children[0]) if children else None)

    # ---- expressions
    def number(self, meta: Meta, children: list[Token]) -> ast.Literal:
        return ast.Literal(_number(str(children[0])), _span(meta))

    def string(self, meta: Meta, children: list[Token]) -> ast.Literal:
        return ast.Literal(str(children[0])[1:-1].replace("''", "'"), _span(meta))

    def true(self, meta: Meta, children: list[Any]) -> ast.Literal:
        return ast.Literal(True, _span(meta))

    def false(self, meta: Meta, children: list[Any]) -> ast.Literal:
        return ast.Literal(False, _span(meta))

    def null(self, meta: Meta, children: list[Any]) -> ast.Literal:
        return ast.Literal(None, _span(meta))

    def column(self, meta: Meta, children: list[_Name]) -> ast.Column:
        n = children[0]
        return ast.Column(None, n.text, n.quoted, _span(meta))

    def qualified_column(self, meta: Meta, children: list[_Name]) -> ast.Column:
        var, col = children
        return ast.Column(var.variable, col.text, col.quoted, _span(meta))

    def or_(self, meta: Meta, children: list[Any]) -> ast.BinOp:
        return ast.BinOp("OR", children[0], children[1], _span(meta))

    def and_(self, meta: Meta, children: list[Any]) -> ast.BinOp:
        return ast.BinOp("AND", children[0], children[1], _span(meta))

    def not_(self, meta: Meta, children: list[Any]) -> ast.Not:
        return ast.Not(children[0], False, _span(meta))

    def neg(self, meta: Meta, children: list[Any]) -> ast.Expr:
        operand = children[-1]
        if isinstance(operand, ast.Literal) and isinstance(operand.value, int | float) \
                and not isinstance(operand.value, bool):
            return ast.Literal(-operand.value, _span(meta))
        return ast.Not(operand, True, _span(meta))

    def pos(self, meta: Meta, children: list[Any]) -> ast.Expr:
        return children[-1]

    def compare(self, meta: Meta, children: list[Any]) -> ast.BinOp:
        left, op, right = children
        text = "<>" if str(op) == "!=" else str(op)
        return ast.BinOp(text, left, right, _span(meta))  # type: ignore[arg-type]

    def binop(self, meta: Meta, children: list[Any]) -> ast.BinOp:
        left, op, right = children
        return ast.BinOp(str(op), left, right, _span(meta))  # type: ignore[arg-type]

    def is_null(self, meta: Meta, children: list[Any]) -> ast.IsNull:
        return ast.IsNull(children[0], False, _span(meta))

    def is_not_null(self, meta: Meta, children: list[Any]) -> ast.IsNull:
        return ast.IsNull(children[0], True, _span(meta))

    def between(self, meta: Meta, children: list[Any]) -> ast.Between:
        return ast.Between(children[0], children[1], children[2], False, _span(meta))

    def not_between(self, meta: Meta, children: list[Any]) -> ast.Between:
        return ast.Between(children[0], children[1], children[2], True, _span(meta))

    def in_list(self, meta: Meta, children: list[Any]) -> ast.InList:
        return ast.InList(children[0], tuple(children[1:]), False, _span(meta))

    def not_in_list(self, meta: Meta, children: list[Any]) -> ast.InList:
        return ast.InList(children[0], tuple(children[1:]), True, _span(meta))

    def case(self, meta: Meta, children: list[Any]) -> ast.Case:
        whens = tuple(c for c in children if isinstance(c, tuple))
        rest = [c for c in children if not isinstance(c, tuple)]
        return ast.Case(whens, rest[0] if rest else None, _span(meta))

    def when_clause(self, meta: Meta, children: list[Any]) -> tuple[Any, Any]:
        return children[0], children[1]

    def with_semantics(self, meta: Meta, children: list[Any]) -> ast.Expr:
        word, call = str(children[0]).upper(), children[1]
        if isinstance(call, ast.Nav) and not call.physical:
            return ast.Nav(call.kind, call.arg, call.offset, word, _span(meta))  # type: ignore[arg-type]
        if isinstance(call, ast.Aggregate):
            return ast.Aggregate(call.func, call.arg, call.star_var, word, _span(meta))  # type: ignore[arg-type]
        raise self._error(f"{word} applies only to FIRST, LAST and aggregates", _span(meta))

    def call_empty(self, meta: Meta, children: list[Any]) -> ast.Expr:
        fn, span = children[0].text.upper(), _span(meta)
        if fn == "CLASSIFIER":
            return ast.Classifier(None, span)
        if fn == "MATCH_NUMBER":
            return ast.MatchNumber(span)
        if fn == "COUNT":
            return ast.Aggregate("COUNT", None, None, None, span)
        self._known(children[0])
        raise self._error(f"{fn}() needs an argument", span)

    def call_star(self, meta: Meta, children: list[Any]) -> ast.Aggregate:
        if children[0].text.upper() != "COUNT":
            raise self._error("only COUNT takes *", _span(meta))
        return ast.Aggregate("COUNT", None, None, None, _span(meta))

    def call_var_star(self, meta: Meta, children: list[Any]) -> ast.Aggregate:
        if children[0].text.upper() != "COUNT":
            raise self._error("only COUNT takes X.*", _span(meta))
        return ast.Aggregate("COUNT", None, children[1].variable, None, _span(meta))

    def _known(self, name: _Name) -> None:
        fn = name.text.upper()
        known = {*_NAVIGATIONS, *ast.AGGREGATES, *ast.SCALAR_FUNCTIONS, "CLASSIFIER", "MATCH_NUMBER"}
        if fn not in known:
            raise self._error(
                f"unknown function {name.text!r}; known: {', '.join(sorted(known))}", name.span
            )

    def call_args(self, meta: Meta, children: list[Any]) -> ast.Expr:
        name, args, span = children[0], children[1:], _span(meta)
        self._known(name)
        fn = name.text.upper()
        if fn in _NAVIGATIONS:
            if len(args) > 2:
                raise self._error(f"{fn} takes an expression and an optional offset", span)
            offset = self._offset(fn, args[1]) if len(args) == 2 else None
            return ast.Nav(fn, args[0], offset, None, span)
        if fn == "CLASSIFIER":
            arg = args[0]
            if len(args) != 1 or not isinstance(arg, ast.Column) or arg.var is not None:
                raise self._error("CLASSIFIER takes no argument or one pattern variable", span)
            return ast.Classifier(arg.name if arg.quoted else arg.name.upper(), span)
        if fn == "MATCH_NUMBER":
            raise self._error("MATCH_NUMBER takes no argument", span)
        if fn in ast.AGGREGATES:
            if len(args) != 1:
                raise self._error(f"{fn} takes one argument", span)
            return ast.Aggregate(fn, args[0], None, None, span)
        arity = ast.SCALAR_FUNCTIONS[fn]
        if (arity >= 0 and len(args) != arity) or (fn == "ROUND" and len(args) > 2):
            raise self._error(f"{fn} takes {arity if arity >= 0 else 'one or two'} argument(s)", span)
        return ast.Func(fn, tuple(args), span)

    def _offset(self, fn: str, arg: Any) -> int:
        if not (isinstance(arg, ast.Literal) and isinstance(arg.value, int)
                and not isinstance(arg.value, bool)):
            raise self._error(f"the offset of {fn} must be a whole number constant", arg.span)
        if arg.value < 0:
            raise self._error(f"the offset of {fn} must not be negative", arg.span)
        return arg.value
