"""A small SQL tokenizer: enough to find MATCH_RECOGNIZE clauses and file tables in a statement.

Not a SQL parser: it only splits the text into words, quoted identifiers
(``"x"`` and Spark's backquoted ```x```), string literals (``'it''s'``, and
``$tag$...$tag$`` as DuckDB/PostgreSQL write them, except inside a row pattern,
``PATTERN ( ... )``, where ``$`` is the partition-end anchor: ``(^A$)``), numbers, comments
(``-- ...`` and nested ``/* ... */``), whitespace and punctuation, each with its
offset, line and column, so that a parenthesis inside a string or a comment is
never counted and an error can point at the text.  An unterminated string,
quoted identifier or comment is a :class:`~kleene.language.errors.QueryError`
with a caret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from kleene.language.errors import QueryError

__all__ = ["Token", "position", "tokenize"]

Kind = Literal["word", "quoted", "string", "number", "comment", "space", "punct"]


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str
    start: int
    end: int

    @property
    def significant(self) -> bool:
        return self.kind not in ("comment", "space")

    def is_word(self, *words: str) -> bool:
        """An unquoted word equal (case-insensitively) to one of ``words``."""
        return self.kind == "word" and self.text.upper() in words


def position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of ``offset`` in ``text`` (lines split at ``\\n``)."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def error_at(text: str, offset: int, message: str) -> QueryError:
    line, column = position(text, offset)
    return QueryError(message, line, column, text)


_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
_DOLLAR = re.compile(r"\$([^\W\d]\w*)?\$")
_OPERATORS = ("<>", "!=", "<=", ">=", "||", "::", "->", "=>")


def tokenize(text: str) -> list[Token]:
    """Every token of ``text`` in order, whitespace and comments included (their texts
    concatenate back to ``text``)."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    pattern_depth = 0  # > 0 inside PATTERN ( ... ): parentheses still open there
    while i < n:
        c = text[i]
        if pattern_depth and c in "()":
            pattern_depth += 1 if c == "(" else -1
            tokens.append(Token("punct", c, i, i + 1))
        elif c == "(" and _after_pattern_keyword(tokens):
            pattern_depth = 1
            tokens.append(Token("punct", c, i, i + 1))
        elif m := _SPACE.match(text, i):
            tokens.append(Token("space", m.group(), i, m.end()))
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            tokens.append(Token("comment", text[i:end], i, end))
        elif text.startswith("/*", i):
            end = _block_comment_end(text, i)
            tokens.append(Token("comment", text[i:end], i, end))
        elif c in "'\"`":
            end = _quoted_end(text, i, c)
            tokens.append(Token("string" if c == "'" else "quoted", text[i:end], i, end))
        elif c == "$" and not pattern_depth and (m := _DOLLAR.match(text, i)):
            close = text.find(m.group(), m.end())
            if close < 0:
                raise error_at(text, i, f"unterminated dollar-quoted string: no closing {m.group()}")
            end = close + len(m.group())
            tokens.append(Token("string", text[i:end], i, end))
        elif m := _NUMBER.match(text, i):
            tokens.append(Token("number", m.group(), i, m.end()))
        elif m := _WORD.match(text, i):
            tokens.append(Token("word", m.group(), i, m.end()))
        else:
            width = 2 if text.startswith(_OPERATORS, i) else 1
            tokens.append(Token("punct", text[i:i + width], i, i + width))
        i = tokens[-1].end
    return tokens


def _after_pattern_keyword(tokens: list[Token]) -> bool:
    """Whether the last significant token is the word PATTERN (a row pattern opens)."""
    for token in reversed(tokens):
        if token.significant:
            return token.is_word("PATTERN")
    return False


def _quoted_end(text: str, start: int, quote: str) -> int:
    """The end of a quoted string or identifier (a doubled quote stands for itself)."""
    i = start + 1
    while True:
        j = text.find(quote, i)
        if j < 0:
            what = "string" if quote == "'" else "quoted identifier"
            raise error_at(text, start, f"unterminated {what}: no closing {quote}")
        if text.startswith(quote * 2, j):
            i = j + 2
            continue
        return j + 1


def _block_comment_end(text: str, start: int) -> int:
    """The end of a ``/* ... */`` comment; they nest, as in DuckDB and PostgreSQL."""
    depth, i = 0, start
    while i < len(text):
        if text.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    raise error_at(text, start, "unterminated comment: no closing */")
