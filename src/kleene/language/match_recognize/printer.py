"""Write a MATCH_RECOGNIZE tree back as text that parses to an equal tree.

Used by tests (parse → print → parse round trips) and by error messages that
show a normalised clause.  Binary expressions are fully parenthesised, so the
text never depends on precedence; names that are not plain upper-case words
(or that are keywords) are double-quoted.
"""

from __future__ import annotations

import re

from kleene.language.match_recognize import ast

__all__ = ["to_text", "expr_text", "pattern_text"]

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
_KEYWORDS = {
    "MATCH_RECOGNIZE", "PARTITION", "BY", "ORDER", "ASC", "DESC", "NULLS", "FIRST", "LAST",
    "MEASURES", "AS", "ONE", "ROW", "ROWS", "PER", "MATCH", "MATCHES", "ALL", "SHOW", "OMIT",
    "EMPTY", "WITH", "UNMATCHED", "AFTER", "SKIP", "PAST", "TO", "NEXT", "PATTERN", "PERMUTE",
    "SUBSET", "DEFINE", "WITHIN", "INTERVAL", "OR", "AND", "NOT", "IS", "NULL", "BETWEEN", "IN",
    "TRUE", "FALSE", "CASE", "WHEN", "THEN", "ELSE", "END", "RUNNING", "FINAL",
}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _variable(name: str) -> str:
    plain = _PLAIN.match(name) and name == name.upper() and name not in _KEYWORDS
    return name if plain else _quote(name)


def _column(col: ast.Column) -> str:
    plain = _PLAIN.match(col.name) and not col.quoted and col.name.upper() not in _KEYWORDS
    name = col.name if plain else _quote(col.name)
    return name if col.var is None else f"{_variable(col.var)}.{name}"


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return repr(value) if value >= 0 else f"({value!r})"
    return str(value) if value >= 0 else f"({value})"  # type: ignore[operator]


def expr_text(e: ast.Expr) -> str:
    """``e`` as text."""
    if isinstance(e, ast.Literal):
        return _literal(e.value)
    if isinstance(e, ast.Column):
        return _column(e)
    if isinstance(e, ast.Classifier):
        return "CLASSIFIER()" if e.var is None else f"CLASSIFIER({_variable(e.var)})"
    if isinstance(e, ast.MatchNumber):
        return "MATCH_NUMBER()"
    if isinstance(e, ast.Nav):
        args = expr_text(e.arg) + ("" if e.offset is None else f", {e.offset}")
        prefix = "" if e.semantics is None else e.semantics + " "
        return f"{prefix}{e.kind}({args})"
    if isinstance(e, ast.Aggregate):
        prefix = "" if e.semantics is None else e.semantics + " "
        if e.arg is None:
            inner = "*" if e.star_var is None else f"{_variable(e.star_var)}.*"
        else:
            inner = expr_text(e.arg)
        return f"{prefix}{e.func}({inner})"
    if isinstance(e, ast.Func):
        return f"{e.name}({', '.join(expr_text(a) for a in e.args)})"
    if isinstance(e, ast.BinOp):
        return f"({expr_text(e.left)} {e.op} {expr_text(e.right)})"
    if isinstance(e, ast.Not):
        return f"(-{expr_text(e.operand)})" if e.negate else f"(NOT {expr_text(e.operand)})"
    if isinstance(e, ast.IsNull):
        return f"({expr_text(e.operand)} IS {'NOT ' if e.negated else ''}NULL)"
    if isinstance(e, ast.Between):
        word = "NOT BETWEEN" if e.negated else "BETWEEN"
        return f"({expr_text(e.operand)} {word} {expr_text(e.low)} AND {expr_text(e.high)})"
    if isinstance(e, ast.InList):
        word = "NOT IN" if e.negated else "IN"
        return f"({expr_text(e.operand)} {word} ({', '.join(expr_text(i) for i in e.items)}))"
    whens = " ".join(f"WHEN {expr_text(c)} THEN {expr_text(v)}" for c, v in e.whens)
    default = "" if e.default is None else f" ELSE {expr_text(e.default)}"
    return f"CASE {whens}{default} END"


def _quantifier(q: ast.Quantified) -> str:
    if (q.low, q.high) == (0, None):
        text = "*"
    elif (q.low, q.high) == (1, None):
        text = "+"
    elif (q.low, q.high) == (0, 1):
        text = "?"
    elif q.low == q.high:
        text = f"{{{q.low}}}"
    else:
        text = f"{{{q.low},{'' if q.high is None else q.high}}}"
    return text + ("" if q.greedy else "?")


def pattern_text(p: ast.Pattern) -> str:
    """``p`` as text (groups in parentheses wherever precedence needs them)."""
    if isinstance(p, ast.Var):
        return _variable(p.name)
    if isinstance(p, ast.Empty):
        return "()"
    if isinstance(p, ast.Anchor):
        return "^" if p.start else "$"
    if isinstance(p, ast.Concat):
        return " ".join(f"({pattern_text(i)})" if isinstance(i, ast.Alternation)
                        else pattern_text(i) for i in p.items)
    if isinstance(p, ast.Alternation):
        return " | ".join(pattern_text(i) for i in p.items)
    if isinstance(p, ast.Permute):
        return f"PERMUTE({', '.join(pattern_text(i) for i in p.items)})"
    if isinstance(p, ast.Exclude):
        return "{- " + ("" if isinstance(p.body, ast.Empty) else pattern_text(p.body)) + " -}"
    body = p.body
    inner = pattern_text(body)
    if not isinstance(body, ast.Var | ast.Empty | ast.Anchor | ast.Permute | ast.Exclude):
        inner = f"({inner})"
    return inner + _quantifier(p)


def to_text(mr: ast.MatchRecognize) -> str:
    """The clause body, one sub-clause per line."""
    lines = []
    if mr.partition_by:
        lines.append("PARTITION BY " + ", ".join(_column(c) for c in mr.partition_by))
    if mr.order_by:
        keys = []
        for k in mr.order_by:
            text = _column(k.column) + (" DESC" if k.descending else "")
            if k.nulls_first is not None:
                text += " NULLS FIRST" if k.nulls_first else " NULLS LAST"
            keys.append(text)
        lines.append("ORDER BY " + ", ".join(keys))
    if mr.measures:
        lines.append("MEASURES " + ", ".join(
            f"{expr_text(m.expr)} AS {_quote(m.name)}" for m in mr.measures))
    lines.append(mr.rows_per_match.value)
    skip = mr.skip
    lines.append(f"AFTER MATCH SKIP {skip.kind.value}"
                 + ("" if skip.var is None else " " + _variable(skip.var)))
    pattern = "" if isinstance(mr.pattern, ast.Empty) else pattern_text(mr.pattern)
    text = f"PATTERN ({pattern})"
    if mr.within is not None:
        w = mr.within
        text += f" WITHIN {w.amount}" if w.nanos is None else f" WITHIN {w.nanos} NANOSECONDS"
    lines.append(text)
    if mr.subsets:
        lines.append("SUBSET " + ", ".join(
            f"{_variable(s.name)} = ({', '.join(_variable(m) for m in s.members)})"
            for s in mr.subsets))
    if mr.defines:
        lines.append("DEFINE " + ",\n  ".join(
            f"{_variable(d.var)} AS {expr_text(d.condition)}" for d in mr.defines))
    return "\n".join(lines)
