"""Run a SQL statement with MATCH_RECOGNIZE clauses: the clauses on kleene, the rest on DuckDB.

Used by ``kleene sql``.  DuckDB is an optional extra (``pip install 'kleene[sql]'``);
without it :class:`~kleene.language.errors.MissingDependencyError` says so.

The statement never reaches the file system through DuckDB: the connection is
opened with ``enable_external_access = false`` (no ``COPY``, ``ATTACH``,
``INSTALL``, ``read_csv(...)``; the setting cannot be turned back on) and without
Python replacement scans (a name in the query never reaches a Python variable).
Only the tables kleene registers exist: files named in quotes after FROM/JOIN and
``--table name=path`` files, read with kleene's readers (:mod:`kleene.io.readers`),
and the results of the clauses.  Only one SELECT statement is accepted
(:mod:`kleene.sql.statement`, then DuckDB's own parser confirms the kind).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from kleene.io.readers import read_table
from kleene.language.errors import KleeneError, MissingDependencyError, QueryError
from kleene.language.match_recognize import ast
from kleene.sql.clause import evaluate_clause
from kleene.sql.statement import Source, rewrite
from kleene.sql.tokens import Token, error_at

__all__ = ["SqlEngineError", "connect", "run_sql"]

PREFIX = "__kleene_"
_NAME = re.compile(r"[^\W\d]\w*")


class SqlEngineError(KleeneError):
    """DuckDB refused or failed the statement (its message, positions in the statement's lines)."""


def connect() -> Any:
    """A DuckDB connection that can read nothing but the tables registered on it."""
    try:
        import duckdb
    except ImportError as exc:
        raise MissingDependencyError(
            f"kleene sql runs the SQL around MATCH_RECOGNIZE on DuckDB, the optional extra: "
            f"pip install 'kleene[sql]' ({exc})", name=exc.name) from exc
    return duckdb.connect(config={"enable_external_access": False,
                                  "python_enable_replacements": False})


def run_sql(statement: str, tables: Mapping[str, str | Path] | None = None) -> pa.Table:
    """The result of ``statement``; ``tables`` maps names the statement uses to files."""
    con = connect()
    engine = _DuckEngine(con)
    for name, path in (tables or {}).items():
        if not _NAME.fullmatch(name):
            raise KleeneError(f"--table {name}=...: a table name is a plain identifier")
        engine.register(name, read_table(path))
    sql = rewrite(statement, engine)
    return engine.query(sql, statement, check=True)


class _DuckEngine:
    def __init__(self, con: Any) -> None:
        self.con = con
        self.arrow: dict[str, pa.Table] = {}
        self.count = 0

    def register(self, name: str, table: pa.Table) -> None:
        self.con.register(name, table)
        self.arrow[name.lower()] = table

    def file_table(self, path: str, token: Token, statement: str) -> str:
        if not Path(path).is_file():
            raise error_at(statement, token.start, f"no such file: {path!r} (a quoted name after "
                           "FROM or JOIN is read as a file)")
        self.count += 1
        name = f"{PREFIX}file_{self.count}"
        self.register(name, read_table(path))
        return name

    def clause(self, mr: ast.MatchRecognize, source: Source) -> str:
        known = self.arrow.get(source.name.lower()) if source.name else None
        table = known if known is not None else self.query(source.sql, mr.source)
        self.count += 1
        name = f"{PREFIX}match_recognize_{self.count}"
        self.register(name, evaluate_clause(mr, table))
        return name

    def query(self, sql: str, statement: str, check: bool = False) -> pa.Table:
        import duckdb

        try:
            if check:
                kinds = [s.type for s in self.con.extract_statements(sql)]
                if kinds != [duckdb.StatementType.SELECT]:
                    raise QueryError("only one SELECT statement runs here", 1, 1, statement)
            return self.con.sql(sql).to_arrow_table()
        except duckdb.Error as err:
            raise SqlEngineError(f"DuckDB: {err}") from None
