"""Static output types of a MATCH_RECOGNIZE clause: :func:`output_schema`.

Spark needs the schema of an Arrow UDF's result before any row is seen, and
``kleene sql`` registers the clause's result as a DuckDB relation with fixed
column types; both take it from here.  The types follow what the evaluator
returns (the reference's Python values as Arrow infers them), so that its result
casts to this schema without loss:

* a column reference, ``PREV``/``NEXT``/``FIRST``/``LAST``, ``MIN``/``MAX`` and
  ``ABS``: the input column's type; ``CLASSIFIER()``: string;
  ``MATCH_NUMBER()`` and ``COUNT``: int64; ``ARRAY_AGG(x)``: a list of ``x``'s type;
* arithmetic, ``SUM`` and ``MOD``: int64 over integers, float64 when a float
  (or decimal) takes part; ``/`` of two integers is int64 (it truncates);
  ``AVG``: float64; ``ROUND(x)`` int64, ``ROUND(x, d)`` float64; timestamp minus
  timestamp is a duration, timestamp plus/minus duration a timestamp;
* comparisons, ``AND``/``OR``/``NOT``, ``IS NULL``, ``BETWEEN``, ``IN``: bool;
  ``CASE`` and ``COALESCE``: the common type of their values (int and float: float64);
  ``NULL``: Arrow's null type (a measure that is always NULL).

Type errors are :class:`~kleene.language.errors.QueryError` with a caret under the
offending expression: an unknown or ambiguous column, a string compared with a number,
``SUM``/``AVG`` of a string, arithmetic on strings, a condition that is not boolean,
``CASE`` branches of different kinds, and the clause's other checks against the input
(a measure named like an input column it would clash with, WITHIN's unit against the
ORDER BY key's type).
"""

from __future__ import annotations

import pyarrow as pa

from kleene.language.errors import QueryError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.checks import sub_expressions

__all__ = ["check_within", "expression_type", "output_schema", "resolve_column"]


def output_schema(mr: ast.MatchRecognize, input_schema: pa.Schema) -> pa.Schema:
    """The columns and Arrow types of ``mr``'s result over an input of ``input_schema``.

    ONE ROW PER MATCH: the PARTITION BY columns, then the measures.  ALL ROWS PER
    MATCH: the PARTITION BY and ORDER BY columns (each once), the measures, then the
    other input columns in input order.  Raises :class:`QueryError` (with a caret) for
    a type error anywhere in MEASURES or DEFINE.
    """
    typer = _Typer(mr, input_schema)
    for c in columns_read(mr):  # unknown columns first, in the order the reference finds them
        typer.column(c)
    for d in mr.defines:
        kind = typer.type_of(d.condition)
        if not (pa.types.is_boolean(kind) or pa.types.is_null(kind)):
            raise typer.error(f"DEFINE {d.var}: the condition is {_kind(kind)}, not a boolean",
                              d.condition.span)
    names = input_schema.names
    partition = [typer.column(c) for c in mr.partition_by]
    order = [typer.column(k.column) for k in mr.order_by]
    _check_within(typer, order)
    lead = list(dict.fromkeys(partition + (order if mr.all_rows else [])))
    fields = [input_schema.field(c) for c in lead]
    taken = set(names) if mr.all_rows else set(lead)
    for m in mr.measures:
        if m.name in taken:
            raise typer.error(f"measure {m.name!r} has the name of an output column of the input",
                              m.span)
        fields.append(pa.field(m.name, typer.type_of(m.expr)))
    if mr.all_rows:
        fields += [input_schema.field(c) for c in names if c not in lead]
    return pa.schema(fields)


def expression_type(mr: ast.MatchRecognize, e: ast.Expr, input_schema: pa.Schema) -> pa.DataType:
    """The Arrow type of one expression of ``mr`` (a measure's or a condition's)."""
    return _Typer(mr, input_schema).type_of(e)


def resolve_column(col: ast.Column, names: list[str], source: str = "") -> str:
    """The input column ``col`` names: a quoted name exactly, an unquoted one exactly, else
    case-insensitively when that is unique (the reference's rule)."""
    if col.name in names:
        return col.name
    if not col.quoted:
        folded = [n for n in names if n.lower() == col.name.lower()]
        if len(folded) == 1:
            return folded[0]
        if len(folded) > 1:
            raise _error(f"column {col.name!r} is ambiguous: the input has {', '.join(folded)}; "
                         "quote the name", col.span, source)
    raise _error(f"unknown column {col.name!r}; the input has {', '.join(names)}", col.span,
                 source)


def _error(message: str, span: ast.Span, source: str) -> QueryError:
    return QueryError(message, span.line or 1, span.column or 1, source)


def _check_within(typer: _Typer, order: list[str]) -> None:
    if order:
        check_within(typer.mr, order[0], typer.schema.field(order[0]).type)


def check_within(mr: ast.MatchRecognize, name: str, kind: pa.DataType) -> None:
    """WITHIN's bound fits the first ORDER BY key ``name`` of type ``kind``: a duration needs
    a time key, a plain number a numeric one."""
    w = mr.within
    if w is None:
        return
    if w.nanos is not None:
        if not (pa.types.is_timestamp(kind) or pa.types.is_duration(kind)
                or pa.types.is_date(kind)):
            raise _error(
                f"WITHIN with a time unit needs a timestamp or date ORDER BY key; {name!r} "
                f"is {kind}: write a plain number (WITHIN 10) for a numeric key", w.span, mr.source)
    elif not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        raise _error(
            f"WITHIN {w.amount} (no unit) needs a numeric ORDER BY key; {name!r} is {kind}: "
            "write a duration such as INTERVAL '10' SECOND", w.span, mr.source)


# ---------------------------------------------------------------- kinds of types

def _is_int(t: pa.DataType) -> bool:
    return pa.types.is_integer(t)


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_time(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t)


def _kind(t: pa.DataType) -> str:
    """How an error names a type: by kind, then Arrow's name."""
    if pa.types.is_null(t):
        return "NULL"
    if pa.types.is_boolean(t):
        return f"a boolean ({t})"
    if _is_number(t):
        return f"a number ({t})"
    if _is_text(t):
        return f"a string ({t})"
    if _is_time(t) or pa.types.is_duration(t):
        return f"a time ({t})"
    return f"a {t}"


def _comparable(a: pa.DataType, b: pa.DataType) -> bool:
    if pa.types.is_null(a) or pa.types.is_null(b):
        return True
    if _is_number(a) and _is_number(b):
        return True
    if _is_text(a) and _is_text(b):
        return True
    if pa.types.is_boolean(a) and pa.types.is_boolean(b):
        return True
    if pa.types.is_duration(a) and pa.types.is_duration(b):
        return True
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return (a.tz is None) == (b.tz is None)
    if pa.types.is_date(a) and pa.types.is_date(b):
        return True
    return a.equals(b)


def _number_result(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """int64 over integers (a NULL operand included), float64 otherwise."""
    if (_is_int(a) or pa.types.is_null(a)) and (_is_int(b) or pa.types.is_null(b)):
        return pa.int64()
    return pa.float64()


def _common(types: list[pa.DataType]) -> pa.DataType | None:
    """The type values of ``types`` share (CASE, COALESCE), or None when they cannot."""
    present = [t for t in types if not pa.types.is_null(t)]
    if not present:
        return pa.null()
    if all(_is_number(t) for t in present):
        if all(t.equals(present[0]) for t in present):
            return present[0]
        return pa.int64() if all(_is_int(t) for t in present) else pa.float64()
    if all(_is_text(t) for t in present):
        return pa.string() if len({str(t) for t in present}) > 1 else present[0]
    if all(t.equals(present[0]) for t in present):
        return present[0]
    return None


class _Typer:
    """Types the expressions of one clause against one input schema."""

    def __init__(self, mr: ast.MatchRecognize, schema: pa.Schema) -> None:
        self.mr = mr
        self.schema = schema
        self.names = list(schema.names)

    def error(self, message: str, span: ast.Span) -> QueryError:
        return _error(message, span, self.mr.source)

    def column(self, col: ast.Column) -> str:
        return resolve_column(col, self.names, self.mr.source)

    def type_of(self, e: ast.Expr) -> pa.DataType:
        if isinstance(e, ast.Literal):
            return self._literal(e.value)
        if isinstance(e, ast.Column):
            return self.schema.field(self.column(e)).type
        if isinstance(e, ast.Classifier):
            return pa.string()
        if isinstance(e, ast.MatchNumber):
            return pa.int64()
        if isinstance(e, ast.Nav):
            return self.type_of(e.arg)
        if isinstance(e, ast.Aggregate):
            return self._aggregate(e)
        if isinstance(e, ast.Func):
            return self._function(e)
        if isinstance(e, ast.BinOp):
            return self._binop(e)
        if isinstance(e, ast.Not):
            inner = self.type_of(e.operand)
            if e.negate:
                if not (_is_number(inner) or pa.types.is_duration(inner) or pa.types.is_null(inner)):
                    raise self.error(f"unary minus needs a number, not {_kind(inner)}", e.span)
                return pa.int64() if _is_int(inner) else inner
            self._boolean(inner, "NOT", e.operand.span)
            return pa.bool_()
        if isinstance(e, ast.IsNull):
            self.type_of(e.operand)
            return pa.bool_()
        if isinstance(e, ast.Between):
            operand = self.type_of(e.operand)
            for bound in (e.low, e.high):
                self._compare(operand, self.type_of(bound), "BETWEEN", bound.span)
            return pa.bool_()
        if isinstance(e, ast.InList):
            operand = self.type_of(e.operand)
            for item in e.items:
                self._compare(operand, self.type_of(item), "IN", item.span)
            return pa.bool_()
        return self._case(e)

    def _literal(self, value: object) -> pa.DataType:
        if value is None:
            return pa.null()
        if isinstance(value, bool):
            return pa.bool_()
        if isinstance(value, int):
            return pa.int64()
        if isinstance(value, float):
            return pa.float64()
        return pa.string()

    def _boolean(self, t: pa.DataType, what: str, span: ast.Span) -> None:
        if not (pa.types.is_boolean(t) or pa.types.is_null(t)):
            raise self.error(f"{what} needs a boolean, not {_kind(t)}", span)

    def _compare(self, left: pa.DataType, right: pa.DataType, what: str, span: ast.Span) -> None:
        if not _comparable(left, right):
            raise self.error(f"{what}: cannot compare {_kind(left)} with {_kind(right)}", span)

    def _aggregate(self, e: ast.Aggregate) -> pa.DataType:
        if e.arg is None:
            return pa.int64()  # COUNT(*), COUNT(A.*)
        arg = self.type_of(e.arg)
        if e.func == "COUNT":
            return pa.int64()
        if e.func == "ARRAY_AGG":
            return pa.list_(arg)
        if e.func in ("SUM", "AVG"):
            if not (_is_number(arg) or pa.types.is_null(arg)):
                raise self.error(f"{e.func} needs numbers, not {_kind(arg)}", e.arg.span)
            if e.func == "AVG" or pa.types.is_null(arg):
                return pa.float64() if e.func == "AVG" else pa.null()
            return pa.int64() if _is_int(arg) else pa.float64()
        if pa.types.is_list(arg) or pa.types.is_struct(arg) or pa.types.is_map(arg):
            raise self.error(f"{e.func} needs values that can be ordered, not {arg}", e.arg.span)
        return arg  # MIN, MAX

    def _function(self, e: ast.Func) -> pa.DataType:
        args = [self.type_of(a) for a in e.args]
        if e.name == "COALESCE":
            common = _common(args)
            if common is None:
                raise self.error("COALESCE mixes " + ", ".join(_kind(t) for t in args), e.span)
            return common
        if e.name in ("LOWER", "UPPER"):
            if not (_is_text(args[0]) or pa.types.is_null(args[0])):
                raise self.error(f"{e.name} needs a string, not {_kind(args[0])}", e.args[0].span)
            return pa.string()
        for a, t in zip(e.args, args, strict=True):
            if not (_is_number(t) or pa.types.is_null(t)):
                raise self.error(f"{e.name} needs numbers, not {_kind(t)}", a.span)
        if e.name == "ABS":
            return pa.int64() if _is_int(args[0]) else args[0]
        if e.name == "MOD":
            return _number_result(args[0], args[1])
        # ROUND(x) is an integer, ROUND(x, d) a float (the reference's values)
        return pa.int64() if len(args) == 1 else pa.float64()

    def _binop(self, e: ast.BinOp) -> pa.DataType:
        left, right = self.type_of(e.left), self.type_of(e.right)
        if e.op in ("AND", "OR"):
            self._boolean(left, e.op, e.left.span)
            self._boolean(right, e.op, e.right.span)
            return pa.bool_()
        if e.op in ("=", "<>", "<", "<=", ">", ">="):
            self._compare(left, right, f"'{e.op}'", e.right.span)
            return pa.bool_()
        temporal = self._temporal(e.op, left, right)
        if temporal is not None:
            return temporal
        for side, t in ((e.left, left), (e.right, right)):
            if not (_is_number(t) or pa.types.is_null(t)):
                raise self.error(f"'{e.op}' needs numbers, not {_kind(t)}", side.span)
        return _number_result(left, right)

    def _temporal(self, op: str, left: pa.DataType, right: pa.DataType) -> pa.DataType | None:
        """timestamp - timestamp: a duration; timestamp +/- duration: a timestamp."""
        if op == "-" and pa.types.is_timestamp(left) and pa.types.is_timestamp(right):
            return pa.duration(left.unit)
        if op in ("+", "-") and pa.types.is_timestamp(left) and pa.types.is_duration(right):
            return left
        if op == "+" and pa.types.is_duration(left) and pa.types.is_timestamp(right):
            return right
        if op in ("+", "-") and pa.types.is_duration(left) and pa.types.is_duration(right):
            return left
        return None

    def _case(self, e: ast.Case) -> pa.DataType:
        values = []
        for cond, value in e.whens:
            self._boolean(self.type_of(cond), "CASE WHEN", cond.span)
            values.append((value, self.type_of(value)))
        if e.default is not None:
            values.append((e.default, self.type_of(e.default)))
        common = _common([t for _, t in values])
        if common is None:
            first = values[0][1]
            odd = next(v for v, t in values if _common([first, t]) is None)
            raise self.error(f"CASE mixes {_kind(first)} with {_kind(self.type_of(odd))}",
                             odd.span)
        return common


def columns_read(mr: ast.MatchRecognize) -> list[ast.Column]:
    """Every column reference of the clause (PARTITION BY, ORDER BY, MEASURES, DEFINE)."""
    found = list(mr.partition_by) + [k.column for k in mr.order_by]
    for e in [m.expr for m in mr.measures] + [d.condition for d in mr.defines]:
        found += [x for x in sub_expressions(e) if isinstance(x, ast.Column)]
    return found
