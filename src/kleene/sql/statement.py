"""Cut a SQL statement into what kleene runs (MATCH_RECOGNIZE clauses) and what a SQL engine runs.

``SELECT ... FROM flights MATCH_RECOGNIZE ( ... ) AS m WHERE ...``: each
``<source> MATCH_RECOGNIZE ( ... )`` is replaced by the name of a relation
holding the clause's result, and the rest is left to a SQL engine (DuckDB for
``kleene sql``, Spark SQL for :func:`kleene.spark.sql`).  The source is what
precedes the clause after ``FROM``/``JOIN``/``,``: a table or view name
(``flights``, ``db.flights``, ``"My Table"``, or a CTE of the statement's leading
``WITH``, which is then put in front of the source's query), a parenthesised subquery
(``(SELECT ...)``), or, where the engine reads files (``kleene sql``), a file path in
single quotes (``'flights.parquet'``), which is also accepted as a table anywhere
in the statement.  The text is split by :mod:`kleene.sql.tokens`, so parentheses,
quotes and keywords inside strings, quoted identifiers and comments never count.

Positions: a clause is parsed from a copy of the statement where everything
outside it is blanked (newlines kept), so its errors, and the evaluator's,
carry the line and column of the *whole* statement; each replacement is padded
with spaces (and the clause's newlines) so that the SQL engine's own error
positions still point into the user's lines.

Only one ``SELECT`` (or ``WITH ... SELECT``) statement is accepted: anything
else (``COPY``, ``ATTACH``, ``INSTALL``, a second statement after ``;``) is a
:class:`~kleene.language.errors.QueryError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kleene.language.errors import QueryError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.parser import parse
from kleene.sql.tokens import Token, error_at, tokenize

__all__ = ["Engine", "Source", "rewrite", "with_source"]

_CLAUSE_KEYWORDS = frozenset({
    "SELECT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "QUALIFY", "WINDOW",
    "UNION", "EXCEPT", "INTERSECT", "ON", "USING", "OFFSET", "VALUES", "SET",
})
_TABLE_BEFORE = ("FROM", "JOIN")
_NOT_CALLS = _CLAUSE_KEYWORDS | frozenset({
    "JOIN", "IN", "EXISTS", "AS", "AND", "OR", "NOT", "ALL", "ANY", "SOME", "LATERAL", "WITH",
    "THEN", "ELSE", "WHEN", "CASE", "BY", "MATCH_RECOGNIZE", "RECURSIVE", "MATERIALIZED",
})


@dataclass(frozen=True)
class Source:
    """The input of one MATCH_RECOGNIZE clause: ``sql`` is a query that returns it
    (``SELECT * FROM name`` or the subquery's text, already rewritten); ``name`` the
    relation when the source is a plain name."""

    sql: str
    name: str | None


class Engine(Protocol):
    """What the statement needs from the SQL engine that runs the rest of it."""

    def file_table(self, path: str, token: Token, statement: str) -> str | None:
        """Register the file ``path`` (a quoted string after FROM/JOIN) as a relation and
        return its name; None: this engine leaves string literals alone."""

    def clause(self, mr: ast.MatchRecognize, source: Source) -> str:
        """Run ``mr`` over ``source``, register the result, return its relation name."""


def with_source(error: QueryError, statement: str) -> QueryError:
    """``error`` (positioned in the statement's coordinates) showing the statement's line."""
    if error.source == statement:
        return error
    return type(error)(error.message, error.line, error.column, statement)


def rewrite(statement: str, engine: Engine) -> str:
    """The statement with each MATCH_RECOGNIZE clause (and file table) replaced by the name
    the engine registered; raises :class:`QueryError` with a caret in ``statement``."""
    try:
        return _Rewriter(statement, engine).run()
    except QueryError as err:
        raise with_source(err, statement) from None


class _Rewriter:
    def __init__(self, statement: str, engine: Engine) -> None:
        self.text = statement
        self.engine = engine
        self.tokens = [t for t in tokenize(statement) if t.significant]
        self.matching = self._match_parentheses()
        self.edits: list[tuple[int, int, str]] = []  # (start, end, replacement), in order
        self.replaced: dict[int, str] = {}  # token index -> the relation name it became
        self.ctes = self._cte_tokens()

    def run(self) -> str:
        self._check_single_select()
        # per parenthesis depth: the last clause keyword seen, and whether the parenthesis
        # is a function call's (trim(BOTH 'x' FROM 'xax'): that FROM reads no table)
        depth: list[tuple[str, bool]] = [("", False)]
        toks = self.tokens
        i = 0
        while i < len(toks):
            tok = toks[i]
            if tok.text == "(":
                depth.append(("", i > 0 and self._is_call(toks[i - 1])))
            elif tok.text == ")":
                depth.pop()
            elif tok.kind == "word" and tok.text.upper() in _CLAUSE_KEYWORDS:
                depth[-1] = (tok.text.upper(), depth[-1][1])
            if tok.is_word("MATCH_RECOGNIZE") and i + 1 < len(toks) and toks[i + 1].text == "(":
                i = self._clause(i)
                continue
            clause, in_call = depth[-1]
            if tok.kind == "string" and i > 0 and not in_call and self._table_position(i, clause):
                name = self.engine.file_table(_unquote(tok.text), tok, self.text)
                if name is not None:
                    self._edit(tok.start, tok.end, name)
                    self.replaced[i] = name
            i += 1
        return self._apply(0, len(self.text), drop_semicolon=True)

    @staticmethod
    def _is_call(before: Token) -> bool:
        """Whether a '(' after ``before`` opens a function call's arguments."""
        if before.kind == "quoted":
            return True
        return before.kind == "word" and before.text.upper() not in _NOT_CALLS

    # ---- structure
    def _match_parentheses(self) -> dict[int, int]:
        matching: dict[int, int] = {}
        stack: list[int] = []
        for k, tok in enumerate(self.tokens):
            if tok.text == "(":
                stack.append(k)
            elif tok.text == ")":
                if not stack:
                    raise error_at(self.text, tok.start, "unbalanced ')': no '(' before it")
                opening = stack.pop()
                matching[opening], matching[k] = k, opening
        if stack:
            raise error_at(self.text, self.tokens[stack[-1]].start, "unclosed '('")
        return matching

    def _check_single_select(self) -> None:
        toks = self.tokens
        if not toks:
            raise QueryError("the statement is empty: write a SELECT", 1, 1, self.text)
        first = next((t for t in toks if t.text != "("), toks[0])
        if not first.is_word("SELECT", "WITH"):
            raise error_at(self.text, first.start,
                           f"only a SELECT (or WITH ... SELECT) statement runs here, not "
                           f"{first.text.upper()!r}")
        for k, tok in enumerate(toks):
            if tok.text == ";" and k + 1 < len(toks):
                raise error_at(self.text, toks[k + 1].start,
                               "one statement only: nothing may follow ';'")

    def _table_position(self, i: int, clause: str) -> bool:
        before = self.tokens[i - 1]
        return before.is_word(*_TABLE_BEFORE) or (before.text == "," and clause == "FROM")

    # ---- a clause
    def _clause(self, i: int) -> int:
        """Replace ``<source> MATCH_RECOGNIZE ( ... )`` starting at token ``i``; return the
        index of the token after the clause."""
        toks = self.tokens
        close = self.matching[i + 1]
        first, source = self._source(i)
        mr = self._parse(toks[i].start, toks[close].end)
        name = self.engine.clause(mr, source)
        start = toks[first].start
        for k in [k for k in self.replaced if k >= first]:
            del self.replaced[k]
        self.edits = [e for e in self.edits if e[0] < start]
        self._edit(start, toks[close].end, name)
        self.replaced[first] = name
        return close + 1

    def _source(self, i: int) -> tuple[int, Source]:
        """The first token of the clause's source and the source itself."""
        toks = self.tokens
        mr = toks[i]
        where = ("MATCH_RECOGNIZE must follow a table name, a subquery in parentheses or (with "
                 "kleene sql) a file path in quotes, right after FROM, JOIN or ','")
        if i == 0:
            raise error_at(self.text, mr.start, where)
        j = i - 1
        if toks[j].text == ")":
            opening = self.matching[j]
            if not (opening + 1 < j and toks[opening + 1].is_word("SELECT", "WITH")):
                raise error_at(self.text, toks[opening].start, where)
            self._after_from(opening, where)
            inner = self._apply(toks[opening + 1].start, toks[j].start)
            return opening, Source(self._with_ctes(i, inner.strip()), None)
        if j in self.replaced:  # a file table, already registered
            self._after_from(j, where)
            return j, Source(f"SELECT * FROM {self.replaced[j]}", self.replaced[j])
        first = j
        if toks[j].kind not in ("word", "quoted"):
            raise error_at(self.text, toks[j].start, where)
        while first >= 2 and toks[first - 1].text == "." and toks[first - 2].kind in ("word", "quoted"):
            first -= 2
        self._after_from(first, where)
        name = self.text[toks[first].start:toks[j].end]
        return first, Source(self._with_ctes(i, f"SELECT * FROM {name}"), name)

    def _cte_tokens(self) -> tuple[int, int] | None:
        """The tokens of a leading ``WITH ...`` (up to the main SELECT), if any."""
        toks = self.tokens
        if not toks or not toks[0].is_word("WITH"):
            return None
        level = 0
        for k, tok in enumerate(toks):
            level += (tok.text == "(") - (tok.text == ")")
            if level == 0 and k > 0 and tok.is_word("SELECT"):
                return 0, k
        return None

    def _with_ctes(self, i: int, query: str) -> str:
        """``query`` with the statement's WITH clause in front, when the clause at token ``i``
        is in the main query (so its source may name a CTE)."""
        if self.ctes is None or i < self.ctes[1]:
            return query
        start, end = self.tokens[self.ctes[0]].start, self.tokens[self.ctes[1]].start
        return f"{self._apply(start, end).strip()} {query}"

    def _after_from(self, k: int, where: str) -> None:
        if k == 0 or not (self.tokens[k - 1].is_word(*_TABLE_BEFORE) or self.tokens[k - 1].text == ","):
            raise error_at(self.text, self.tokens[k].start, where)

    def _parse(self, start: int, end: int) -> ast.MatchRecognize:
        """The clause parsed in the statement's coordinates: the text outside it (and the
        comments inside it) blanked, newlines kept."""
        kept: set[int] = set()
        for tok in tokenize(self.text[start:end]):
            if tok.kind != "comment":
                kept.update(range(start + tok.start, start + tok.end))
        blanked = "".join(c if (k in kept or c == "\n") else " " for k, c in enumerate(self.text))
        return parse(blanked)

    # ---- edits
    def _edit(self, start: int, end: int, name: str) -> None:
        """Replace text[start:end] by ``name``, padded to the same length when it fits and
        keeping the replaced text's newlines, so that later positions do not move."""
        gone = self.text[start:end]
        if "\n" in gone:
            tail = len(gone) - (gone.rfind("\n") + 1)
            replacement = name + "\n" * gone.count("\n") + " " * tail
        else:
            replacement = name.ljust(len(gone))
        self.edits.append((start, end, replacement))

    def _apply(self, start: int, end: int, drop_semicolon: bool = False) -> str:
        out, at = [], start
        for s, e, replacement in self.edits:
            if s < start or e > end:
                continue
            out.append(self.text[at:s])
            out.append(replacement)
            at = e
        out.append(self.text[at:end])
        text = "".join(out)
        if drop_semicolon:
            stripped = text.rstrip()
            if stripped.endswith(";") and self.tokens and self.tokens[-1].text == ";":
                text = stripped[:-1]
        return text


def _unquote(literal: str) -> str:
    if literal.startswith("'"):
        return literal[1:-1].replace("''", "'")
    return literal[literal.index("$", 1) + 1:literal.rindex("$", 0, len(literal) - 1)]

