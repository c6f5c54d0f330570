"""A query's own text for a picture's title: its span of the source, without comments, wrapped."""

from __future__ import annotations

import re

from kleene.language import ast
from kleene.language.printer import to_ceql

_TOKENS = re.compile(r"('(?:[^']|'')*'|`(?:[^`]|``)*`)|--[^\n]*|/\*.*?\*/", re.DOTALL)
"""Quoted strings and names (kept whole) and comments (dropped)."""
_CLAUSES = re.compile(r"\s+(?=\b(?:WHERE|FILTER|PARTITION|WITHIN|CONSUME|LIMIT)\b)", re.IGNORECASE)


def query_lines(query: ast.Query, text: str, width: int = 80) -> list[str]:
    """The query as the user wrote it, one clause per line (long clauses cut at ``width``).

    Comments are dropped and spaces collapsed; a query without a source span
    (built in Python) is printed back with :func:`~kleene.language.printer.to_ceql`.
    """
    span = query.span
    if span.line:
        rows = text.splitlines()[span.line - 1 : span.end_line]
        if rows:
            rows[-1] = rows[-1][: span.end_column - 1]
            rows[0] = rows[0][span.column - 1 :]
        source = "\n".join(rows)
    else:
        source = to_ceql(query)
    plain = _TOKENS.sub(lambda m: m.group(1) or " ", source)
    one_line = " ".join(plain.split())
    out: list[str] = []
    for clause in _CLAUSES.split(one_line):
        while len(clause) > width:
            cut = clause.rfind(" ", 0, width)
            cut = cut if cut > 0 else width
            out.append(clause[:cut])
            clause = "    " + clause[cut:].lstrip()
        out.append(clause)
    return [line for line in out if line.strip()]

