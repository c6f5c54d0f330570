"""SQL statements with MATCH_RECOGNIZE clauses: the clauses run on kleene, the rest on a SQL engine.

:mod:`kleene.sql.tokens` splits the text, :mod:`kleene.sql.statement` finds the
clauses and replaces them by relations, :mod:`kleene.sql.clause` evaluates one
clause (the one place that chooses the evaluator), :mod:`kleene.sql.duckdb_engine`
runs a statement on DuckDB (``kleene sql``); :mod:`kleene.spark.recognize`
runs one on Spark SQL.  Nothing here is loaded by ``import kleene``.
"""
