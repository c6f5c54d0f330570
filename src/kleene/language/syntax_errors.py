"""Turn lark's parse exceptions into readable :class:`QueryError`\\ s.

lark reports what went wrong as terminal names (``SEMICOLON``, ``_FILTER``,
``NAME``).  Users think in terms of the language ("an event type", "';'"),
so this module names the offending token as written and describes what the
parser would have accepted there, using the set of acceptable terminals and
the token just before the error to tell apart contexts that all expect a
plain name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from kleene.language.errors import QueryError

_NAMES = {"NAME", "QUOTED_NAME"}
_WORD_BEFORE = re.compile(r"(\w+)\s*$")
_VALUE_START = {
    "NUMBER", "STRING_SQ", "STRING_DQ", "LPAR", "MINUS", "PLUS", "_TRUE", "_FALSE", "_NOT",
}

_DISPLAY = {
    "NAME": "a name",
    "QUOTED_NAME": "a name",
    "NUMBER": "a number",
    "STRING_SQ": "a string",
    "STRING_DQ": "a string",
    "TIME_UNIT": "a time unit (seconds, minutes, ...)",
    "$END": "end of query",
    "_BY": "BY",
    "SELECTOR": "a selector such as MAX(",
}

# What a bare name means, judged by the token before it.
_NAME_AFTER = {
    "_AS": "a variable name",
    "_FROM": "a stream name",
    "_STREAM": "a stream name",
    "_EVENT": "an event type name",
    "_QUERY": "a query name",
    "MORETHAN": "an event type",
    "LSQB": "an attribute name",
    "COLON": "an attribute type (int, double, string, boolean or primary_time)",
    "_FILTER": "a variable",
    "_AND": "a variable",
    "_OR": "a variable",
}


def _display(terminal: str, literals: Mapping[str, str]) -> str:
    if terminal in _DISPLAY:
        return _DISPLAY[terminal]
    if terminal in literals:
        return repr(literals[terminal])
    return terminal.lstrip("_")


def _join(parts: list[str]) -> str:
    parts = list(dict.fromkeys(parts))
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " or " + parts[-1]


def describe_expected(
    expected: set[str], previous: str | None, literals: Mapping[str, str]
) -> str:
    """A phrase such as "an event type, '(' or NOT" for a set of terminals."""
    covered: set[str] = set()
    lead: list[str] = []
    if expected & _NAMES:
        covered |= _NAMES
        if "NUMBER" in expected:
            covered |= _VALUE_START
            lead.append("a predicate" if "_NOT" in expected else "a value or an attribute")
        elif "_NOT" in expected and "LPAR" in expected:
            lead.append("an event type")
        elif "STAR" in expected:
            lead.append("a variable")
        elif "LPAR" in expected and "LSQB" not in expected:
            covered.add("LPAR")
            lead.append("a filter such as var[predicate] or '('")
        else:
            lead.append(_NAME_AFTER.get(previous or "", "a name"))
    rest = sorted(_display(t, literals) for t in expected - covered - {"$END"})
    words = lead + rest
    if "$END" in expected:
        words.append(_DISPLAY["$END"])
    return _join(words)


def _token_text(tok: Token) -> str:
    text = str(tok)
    if len(text) > 30:
        text = text[:27] + "..."
    return repr(text)


def _expected_of(exc: UnexpectedInput) -> set[str]:
    """Terminals that could really come next.

    The LALR table's row for the failing state over-approximates (states are
    merged, so it lists every token that may follow a name anywhere); asking
    the interactive parser to try each terminal gives the exact set.
    """
    interactive: Any = getattr(exc, "interactive_parser", None)
    if interactive is not None:
        try:
            return {t for t in interactive.accepts() if t.isupper()}
        except Exception:  # pragma: no cover - fall back to lark's own set
            pass
    found = getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ()
    return {t for t in found if t.isupper()}


def _previous_type(exc: UnexpectedInput) -> str | None:
    state: Any = getattr(exc, "state", None)
    stack = getattr(state, "value_stack", None)
    if stack and isinstance(stack[-1], Token):
        return str(stack[-1].type)
    return None


def _unterminated(text: str, line: int, column: int) -> str | None:
    lines = text.split("\n")  # as the parser counts lines (see QueryError)
    if not 1 <= line <= len(lines):
        return None
    rest = lines[line - 1][column - 1 :]
    if rest.startswith("/*"):
        return "unterminated comment: '/*' without '*/'"
    for quote, what in (("'", "string"), ('"', "string"), ("`", "quoted name")):
        if rest.startswith(quote):
            return f"unterminated {what}: missing closing {quote}"
    return None


def syntax_error(exc: UnexpectedInput, text: str, literals: Mapping[str, str]) -> QueryError:
    """The :class:`QueryError` to raise for a lark parse exception.

    ``literals`` maps the grammar's punctuation terminals to their text
    (``SEMICOLON`` -> ``;``) so that they can be shown as written.
    """
    expected = _expected_of(exc)
    previous = _previous_type(exc)
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        tok = exc.token
        line, column = tok.line or 1, tok.column or 1
        message = _unterminated(text, line, column) or f"unexpected {_token_text(tok)}"
    elif isinstance(exc, UnexpectedToken | UnexpectedEOF):
        tok = getattr(exc, "token", None)
        line = getattr(tok, "end_line", None) or 1
        column = getattr(tok, "end_column", None) or 1
        message = "unexpected end of query"
    elif isinstance(exc, UnexpectedCharacters):
        line, column = exc.line, exc.column
        pos = exc.pos_in_stream or 0
        char = text[pos] if 0 <= pos < len(text) else ""
        message = _unterminated(text, line, column) or f"unexpected character {char!r}"
    else:  # pragma: no cover - lark has no other kinds today
        line, column = getattr(exc, "line", 1), getattr(exc, "column", 1)
        message = "syntax error"
    separator = _semicolon_between_queries(text, line, column)
    if separator is not None:
        return QueryError(
            "';' does not separate queries (it is the sequence operator): start the next "
            "query with SELECT, or with a QUERY name: header, without ';'",
            *separator,
            text,
        )
    if expected and not message.startswith("unterminated"):
        message += ", expected " + describe_expected(expected, previous, literals)
        message += _keyword_read_as_name(exc, text, expected)
    return QueryError(message, line, column, text)


_SEPARATOR = re.compile(r";(\s|--[^\n]*\n)*(select|query)\b", re.IGNORECASE)


def _semicolon_between_queries(text: str, line: int, column: int) -> tuple[int, int] | None:
    """Where a ';' used to separate two queries is, if the error follows one."""
    lines = text.split("\n")
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + column - 1
    found = None
    for m in _SEPARATOR.finditer(text, 0, offset):
        found = m
    if found is None or text[found.end() : offset].count("\n") > 1:
        return None
    pos = found.start()
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _keyword_read_as_name(exc: UnexpectedInput, text: str, expected: set[str]) -> str:
    """A hint when the word before the error is a keyword the parser took as a name.

    Where only a name can come (``SELECT FROM S``) the contextual lexer reads
    a keyword as a name, and the error shows up one token later; saying so
    points the user at the real problem.
    """
    tok = getattr(exc, "token", None)
    if tok is not None and tok.type == "$END":
        return ""
    pos = getattr(tok, "start_pos", None)
    if pos is None:
        pos = getattr(exc, "pos_in_stream", None)
    if pos is None:
        return ""
    words = _WORD_BEFORE.findall(text[:pos])
    if not words:
        return ""
    word = words[-1]
    if {word.upper(), "_" + word.upper()} & expected:
        return f" ({word!r} was read as a name here; is something missing before it?)"
    return ""
