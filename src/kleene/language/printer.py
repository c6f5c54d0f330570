"""Render an AST back to CEQL text.

The output is meant for error messages, logs and tests, and above all it must
read back to the same tree: ``parse_query(to_ceql(q)) == q``.  So every
composite pattern, filter, predicate and expression is parenthesised, names
that are keywords or not plain identifiers are backquoted, floats use
``repr`` and durations use the largest unit that divides them exactly.
"""

from __future__ import annotations

import re

from kleene.language import ast

__all__ = [
    "to_ceql", "pattern_to_ceql", "pred_to_ceql", "expr_to_ceql", "quote_name", "window_to_ceql"
]

_PLAIN_NAME = re.compile(r"[^\W\d]\w*")
_RESERVED = frozenset(
    """
    create stream event select from where partition by within events consume limit filter
    as or and unless not like in range true false all any next last max strict none
    """.split()
) | frozenset(
    u + s
    for u in ("nanosecond", "microsecond", "millisecond", "second", "minute", "hour", "day")
    for s in ("", "s")
)
_UNITS = (
    ("days", 86400 * 10**9),
    ("hours", 3600 * 10**9),
    ("minutes", 60 * 10**9),
    ("seconds", 10**9),
    ("milliseconds", 10**6),
    ("microseconds", 10**3),
    ("nanoseconds", 1),
)


def quote_name(name: str) -> str:
    """``name`` as CEQL source: bare if it is a plain, non-keyword identifier."""
    if _PLAIN_NAME.fullmatch(name) and name.lower() not in _RESERVED:
        return name
    return "`" + name.replace("`", "``") + "`"


def _string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _const(value: int | float | str | bool) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def expr_to_ceql(expr: ast.Expr) -> str:
    """An arithmetic expression, fully parenthesised."""
    if isinstance(expr, ast.Const):
        return _const(expr.value)
    if isinstance(expr, ast.Attr):
        return quote_name(expr.name)
    if isinstance(expr, ast.VarAttr):
        var = quote_name(expr.var)
        return f"{'prev(' + var + ')' if expr.prev else var}.{quote_name(expr.name)}"
    if isinstance(expr, ast.BinOp):
        return f"({expr_to_ceql(expr.left)} {expr.op} {expr_to_ceql(expr.right)})"
    # Neg: the parentheses keep "-(1)" a Neg rather than the constant -1.
    return f"-({expr_to_ceql(expr.operand)})"


def pred_to_ceql(pred: ast.Pred) -> str:
    """A predicate (the inside of ``var[...]``), fully parenthesised."""
    if isinstance(pred, ast.Compare):
        return f"({expr_to_ceql(pred.left)} {pred.op} {expr_to_ceql(pred.right)})"
    if isinstance(pred, ast.Like):
        return f"({expr_to_ceql(pred.operand)} LIKE {_string(pred.pattern)})"
    if isinstance(pred, ast.InSet):
        values = ", ".join(_const(v.value) for v in pred.values)
        neg = " NOT" if pred.negated else ""
        return f"({expr_to_ceql(pred.operand)}{neg} IN {{{values}}})"
    if isinstance(pred, ast.InRange):
        neg = " NOT" if pred.negated else ""
        low, high = expr_to_ceql(pred.low), expr_to_ceql(pred.high)
        return f"({expr_to_ceql(pred.operand)}{neg} IN RANGE({low}, {high}))"
    if isinstance(pred, ast.PNot):
        return f"(NOT {pred_to_ceql(pred.operand)})"
    op = "AND" if isinstance(pred, ast.PAnd) else "OR"
    return f"({pred_to_ceql(pred.left)} {op} {pred_to_ceql(pred.right)})"


def _filter(cond: ast.FilterExpr) -> str:
    if isinstance(cond, ast.FilterAtom):
        return f"{quote_name(cond.var)}[{pred_to_ceql(cond.pred)}]"
    op = "AND" if isinstance(cond, ast.FilterAnd) else "OR"
    return f"({_filter(cond.left)} {op} {_filter(cond.right)})"


def filter_to_ceql(cond: ast.FilterExpr) -> str:
    """A FILTER condition (``x[...] AND y[...]``), fully parenthesised."""
    return _filter(cond)


def repeat_suffix(p: ast.Repeat) -> str:
    """``?``, ``{n}``, ``{n,}``, ``{n,m}`` or their ``:{...}`` forms, as the user writes them."""
    if (p.low, p.high, p.contiguous) == (0, 1, False):
        return "?"
    if p.high is None:
        count = f"{p.low},"
    elif p.high == p.low:
        count = str(p.low)
    else:
        count = f"{p.low},{p.high}"
    return (":{" if p.contiguous else "{") + count + "}"


_BINARY = {ast.Or: "OR", ast.And: "AND", ast.All: "ALL", ast.Unless: "UNLESS"}


def pattern_to_ceql(p: ast.Pattern) -> str:
    """A pattern (the WHERE clause), every operator application parenthesised."""
    if isinstance(p, ast.EventType):
        name = quote_name(p.name)
        return name if p.stream is None else f"{quote_name(p.stream)}>{name}"
    if isinstance(p, ast.As):
        return f"({pattern_to_ceql(p.pattern)} AS {quote_name(p.var)})"
    if isinstance(p, ast.Filter):
        return f"({pattern_to_ceql(p.pattern)} FILTER {_filter(p.condition)})"
    if isinstance(p, ast.Seq):
        op = ":" if p.contiguous else ";"
        return f"({pattern_to_ceql(p.left)} {op} {pattern_to_ceql(p.right)})"
    if isinstance(p, ast.Iter):
        return f"({pattern_to_ceql(p.pattern)} {':+' if p.contiguous else '+'})"
    if isinstance(p, ast.Star):
        return f"({pattern_to_ceql(p.pattern)} *)"
    if isinstance(p, ast.Repeat):
        return f"({pattern_to_ceql(p.pattern)}{repeat_suffix(p)})"
    if isinstance(p, ast.NotEvent):
        return f"NOT({pattern_to_ceql(p.pattern)})"
    if isinstance(p, ast.Selector):
        return f"{p.strategy}({pattern_to_ceql(p.pattern)})"
    return f"({pattern_to_ceql(p.left)} {_BINARY[type(p)]} {pattern_to_ceql(p.right)})"


def _window(w: ast.Window) -> str:
    if isinstance(w, ast.EventsWindow):
        return f"{w.count} EVENTS"
    if isinstance(w, ast.AttrWindow):
        return f"{_const(w.amount)} [{quote_name(w.attr)}]"
    for unit, nanos in _UNITS:
        if w.nanos % nanos == 0:
            return f"{w.nanos // nanos} {unit}"
    raise AssertionError("unreachable: every integer is a whole number of nanoseconds")


def _select(s: ast.Select) -> str:
    if s.items is None:
        items = "*"
    elif not s.items:
        items = "NONE"
    else:
        parts = []
        for item in s.items:
            text = quote_name(item.var)
            if item.attrs is not None:
                text += "[" + ", ".join(quote_name(a) for a in item.attrs) + "]"
            parts.append(text)
        items = ", ".join(parts)
    strategy = "" if s.strategy == "ALL" else f"{s.strategy} "
    return f"SELECT {strategy}{items}"


def to_ceql(query: ast.Query) -> str:
    """CEQL text that :func:`~kleene.language.parser.parse_query` reads back as ``query``."""
    lines = [_select(query.select)]
    if query.streams:
        lines.append("FROM " + ", ".join(quote_name(s) for s in query.streams))
    lines.append("WHERE " + pattern_to_ceql(query.where))
    if query.partition_by:
        groups = ("[" + ", ".join(quote_name(a) for a in g) + "]" for g in query.partition_by)
        lines.append("PARTITION BY " + ", ".join(groups))
    if query.within is not None:
        lines.append("WITHIN " + _window(query.within))
    if query.consume != "NONE":
        lines.append(f"CONSUME BY {query.consume}")
    if query.limit is not None:
        lines.append(f"LIMIT {query.limit}")
    return "\n".join(lines)


def window_to_ceql(w: ast.Window) -> str:
    """A window as written after ``WITHIN`` (durations in the largest unit that divides them)."""
    return _window(w)
