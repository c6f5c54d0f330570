"""Errors in query text: syntax errors from the parser and semantic errors from
the checker, each with a readable message at the right line and column."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kleene.language import ast
from kleene.language.checks import bound_variables, check
from kleene.language.errors import DataError, QueryError, UnsupportedError
from kleene.language.parser import parse, parse_query
from kleene.language.schema import Schema
from kleene.language.variables import variable_event_types

STOCK_DECL = """CREATE STREAM S {
  EVENT BUY  { name:string, price:double, volume:int, stock_time:primary_time },
  EVENT SELL { name:string, price:double, volume:int, stock_time:primary_time, flag:boolean }
}
CREATE STREAM T { EVENT PING { id:int } }
"""
STOCK = Schema.from_decls(parse(STOCK_DECL + "SELECT * WHERE BUY").streams)
ARROW = Schema.from_arrow(
    pa.schema(
        [
            ("type", pa.dictionary(pa.int32(), pa.string())),
            ("name", pa.large_string()),
            ("price", pa.float64()),
            ("volume", pa.int64()),
            ("ok", pa.bool_()),
            ("ts", pa.timestamp("ms")),
            ("tags", pa.list_(pa.string())),
        ]
    )
)


def position(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based (line, column) of the nth occurrence of needle in text."""
    pos = -1
    for _ in range(nth):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def assert_error(err: QueryError, text: str, message: str, line: int, column: int) -> None:
    """Message, position, and a rendering with the source line and a caret under it."""
    assert message in err.message, err.message
    assert (err.line, err.column) == (line, column), str(err)
    rendered = str(err).splitlines()
    assert rendered[0].endswith(f"(line {line}, column {column})")
    source_line = text.splitlines()[line - 1]
    assert rendered[1] == "  " + source_line
    assert rendered[2] == "  " + " " * (column - 1) + "^"


def syntax_error(text: str) -> QueryError:
    with pytest.raises(QueryError) as info:
        parse(text)
    return info.value


def semantic_error(text: str, schema: Schema | None = None) -> QueryError:
    program = parse(text)
    with pytest.raises(QueryError) as info:
        check(program.query, text, schema)
    return info.value


def accepted(text: str, schema: Schema | None = None) -> None:
    check(parse_query(text), text, schema)


# ------------------------------------------------------------ syntax errors


def test_unexpected_token_says_what_was_expected() -> None:
    text = "SELECT * FROM S WHERE A ; ;"
    err = syntax_error(text)
    expected = "unexpected ';', expected an event type, '(', NOT or a selector such as MAX("
    assert_error(err, text, expected, 1, 27)
    assert not isinstance(err, UnsupportedError)


def test_unexpected_end_points_at_the_end() -> None:
    text = "SELECT * FROM S WHERE"
    assert_error(syntax_error(text), text, "unexpected end of query, expected an event type", 1, 22)
    text = "SELECT * FROM S WHERE A FILTER a[price > 1] AND B"
    assert_error(syntax_error(text), text, "unexpected end of query, expected '['", 1, 50)
    text = "SELECT * FROM S\nWHERE A FILTER a[price >   \n  -- nothing more\n"
    err = syntax_error(text)
    assert_error(err, text, "unexpected end of query, expected a value or an attribute", 2, 25)


@pytest.mark.parametrize(
    ("text", "needle", "message"),
    [
        ("SELECT * FROM S A", "A", "unexpected 'A', expected ',' or WHERE"),
        ("SELECT * FROM S WHERE A B", "B", "unexpected 'B', expected"),
        ("SELECT * FROM S WHERE A AS ;", ";", "expected a variable name"),
        ("SELECT * FROM S WHERE A FILTER ;", ";", "expected a filter such as var[predicate]"),
        ("SELECT * FROM S WHERE A FILTER a[]", "]", "unexpected ']', expected a predicate"),
        ("SELECT * FROM S WHERE A FILTER a[x > 1 < 2]", "<", "unexpected '<'"),
        ("SELECT * FROM S WHERE S > ;", ";", "expected an event type"),
        ("SELECT * FROM S WHERE A # B", "#", "unexpected character '#'"),
        ("SELECT * FROM S WHERE A FILTER a[x = 'abc]", "'", "unterminated string"),
        ("SELECT * FROM S WHERE `A", "`", "unterminated quoted name"),
        ("SELECT * FROM S WHERE A /* never closed", "/*", "unterminated comment"),
        ("SELECT * FROM S WHERE A WITHIN 3 fortnights", "fortnights", "expected '[', EVENTS or a time unit"),
        ("SELECT * FROM S WHERE A WITHIN 1.5 EVENTS", "1.5", "WITHIN n EVENTS needs a whole number"),
        ("SELECT * FROM S WHERE A LIMIT 2.5", "2.5", "LIMIT needs a whole number"),
        ("SELECT * FROM S WHERE A PARTITION BY name", "name", "expected '['"),
        ("SELECT * FROM S WHERE A CONSUME BY ALL", "ALL", "expected ANY, NONE or PARTITION"),
        ("SELECT FROM S WHERE A", "S W", "unexpected 'S', expected ',', '[', FROM or WHERE ('FROM' was read as a name here; is something missing before it?)"),
        ("CREATE STREAM S { EVENT A { x: float } } SELECT * WHERE A", "float", "unknown attribute type 'float'"),
        ("SELECT * FROM S WHERE A FILTER a[x > 1e999]", "1e999", "too large"),
        ("SELECT * WHERE A; SELECT * WHERE B", "; SELECT", "';' does not separate queries (it is the sequence operator)"),
        # Counted repetition: bad counts point at the count.
        ("SELECT * FROM S WHERE A ; B{3,2}", "2}", "repetition {3,2}: the maximum 2 is below the minimum 3"),
        ("SELECT * FROM S WHERE B:{5,1}", "1}", "the maximum 1 is below the minimum 5"),
        ("SELECT * FROM S WHERE B{101}", "101", "repetition count 101 is over the limit of 100"),
        ("SELECT * FROM S WHERE B{2,500}", "500", "repetition count 500 is over the limit of 100"),
        ("SELECT * FROM S WHERE B{1.5}", "1.5", "a repetition count is a whole number, not 1.5"),
        ("SELECT * FROM S WHERE B{0}", "0}", "the maximum must be at least 1"),
        ("SELECT * FROM S WHERE B{,0}", "0}", "the maximum must be at least 1"),
        ("SELECT * FROM S WHERE B{}", "}", "unexpected '}', expected ',' or a number"),
        ("SELECT * FROM S WHERE B{-1}", "-", "unexpected '-', expected ',' or a number"),
        ("SELECT * FROM S WHERE B{x}", "x}", "unexpected 'x', expected ',' or a number"),
        ("SELECT * FROM S WHERE {2}", "{", "unexpected '{'"),
    ],
)
def test_syntax_errors(text: str, needle: str, message: str) -> None:
    line, column = position(text, needle)
    assert_error(syntax_error(text), text, message, line, column)


def test_empty_query() -> None:
    err = syntax_error("  -- only a comment\n")
    assert err.message == "unexpected end of query, expected CREATE, QUERY or SELECT"
    assert (err.line, err.column) == (1, 1)


@pytest.mark.parametrize("not_text", [None, b"SELECT * FROM S WHERE A", str.upper, 3])
def test_a_query_that_is_not_text_is_a_type_error(not_text: object) -> None:
    import kleene

    with pytest.raises(TypeError, match="a CEQL query is text"):
        kleene.compile(not_text)  # type: ignore[arg-type]


def test_error_on_line_three_of_a_multi_line_query() -> None:
    text = "SELECT *\nFROM S\nWHERE SELL as a ; ; BUY as b\nFILTER a[price > 100]"
    err = syntax_error(text)
    assert_error(err, text, "unexpected ';'", 3, 19)
    assert str(err) == (
        "unexpected ';', expected an event type, '(', NOT or a selector such as MAX( "
        "(line 3, column 19)\n"
        "  WHERE SELL as a ; ; BUY as b\n"
        "                    ^"
    )


# ---------------------------------------------------------- semantic errors


@pytest.mark.parametrize(
    ("text", "needle", "message"),
    [
        ("SELECT * FROM S WHERE SELL ; BUYY", "BUYY", "unknown event type 'BUYY' (known: BUY, PING, SELL)"),
        ("SELECT * FROM X WHERE SELL", "X", "unknown stream 'X' (known: S, T)"),
        ("SELECT * FROM S, X WHERE SELL", "X", "unknown stream 'X'"),
        ("SELECT * WHERE X>SELL", "X>SELL", "unknown stream 'X'"),
        ("SELECT * WHERE T>SELL", "T>SELL", "stream 'T' has no event type 'SELL'"),
        ("SELECT * FROM T WHERE SELL", "SELL", "event type 'SELL' is not in the streams of the FROM clause"),
        ("SELECT * FROM S WHERE T>PING", "T>PING", "stream 'T' is not in the FROM clause (the query reads only S)"),
        ("SELECT * FROM S WHERE SELL as a FILTER a[prize > 1]", "prize", "unknown attribute 'prize': event type 'SELL' (bound to 'a')"),
        ("SELECT * FROM S WHERE SELL FILTER SELL[prize > 1]", "prize", "unknown attribute 'prize': event type 'SELL' has"),
        ("SELECT * FROM S WHERE (SELL OR BUY) as s FILTER s[flag = true]", "flag", "event type 'BUY' (bound to 's') has no such attribute"),
        ("SELECT * FROM S WHERE SELL FILTER SELL[name > 3]", "name > 3", "cannot compare a string with a number"),
        ("SELECT * FROM S WHERE SELL FILTER SELL[flag = 1]", "flag = 1", "cannot compare a boolean with a number"),
        ("SELECT * FROM S WHERE SELL FILTER SELL[name + 1 > 2]", "name", "arithmetic '+' needs a number, not a string"),
        ("SELECT * FROM S WHERE SELL FILTER SELL[-name < 0]", "name", "unary minus needs a number"),
        ("SELECT * FROM S WHERE SELL FILTER SELL[price LIKE 'x']", "price LIKE", "LIKE needs a string, not a number"),
        ("SELECT * FROM S WHERE SELL FILTER SELL[name IN {1, 2}]", "1,", "IN set mixes a string with a number"),
        ("SELECT * FROM S WHERE SELL FILTER SELL[name IN RANGE(1, 2)]", "name", "IN RANGE needs a number, not a string"),
        ("SELECT x FROM S WHERE SELL as a", "x", "SELECT variable 'x' is not bound in the pattern (known: SELL, a)"),
        ("SELECT a[prize] FROM S WHERE SELL as a", "prize", "unknown attribute 'prize'"),
        ("SELECT * FROM S WHERE SELL PARTITION BY [name], [vol]", "vol", "unknown attribute 'vol' in PARTITION BY"),
        ("SELECT * FROM S WHERE SELL ; BUY WITHIN 10 [time]", "time", "unknown attribute 'time' in WITHIN"),
        ("SELECT * FROM S WHERE SELL WITHIN 10 [name]", "name", "WITHIN [name] needs a numeric attribute, not a string"),
    ],
)
def test_semantic_errors_with_declared_schema(text: str, needle: str, message: str) -> None:
    line, column = position(text, needle)
    assert_error(semantic_error(text, STOCK), text, message, line, column)


@pytest.mark.parametrize(
    ("text", "needle", "message"),
    [
        ("SELECT * FROM S WHERE SELL as a FILTER b[price > 1]", "b[", "variable 'b' is not bound by the pattern this FILTER applies to"),
        # b[...] inside names the b bound around it: evaluated there (issue 18); c is bound nowhere
        ("SELECT * FROM S WHERE (A as a FILTER c[x > 1]) ; B as b", "c[", "variable 'c' is not bound by the pattern this FILTER applies to (known: A, a); it cannot be evaluated around it: no pattern around it binds 'c'"),
        ("SELECT b FROM S WHERE A as a", "b", "SELECT variable 'b' is not bound"),
        # Conditions between events (issue 5): once a syntax error, now checked.
        ("SELECT * FROM S WHERE A FILTER A[price > b.price]", "b.price", "unknown variable 'b'"),
        ("SELECT * FROM S WHERE (A as a)+ ; B as b FILTER a[price > b.price]", "b.price", "variable 'b' is not bound yet"),
        ("SELECT * FROM S WHERE A FILTER A['a' = 1]", "'a' = 1", "cannot compare a string with a number"),
        ("SELECT * FROM S WHERE A FILTER A['a' * 2 > 1]", "'a' *", "arithmetic '*' needs a number, not a string"),
        ("SELECT * FROM S WHERE A FILTER A[3 LIKE 'x']", "3 LIKE", "LIKE needs a string, not a number"),
        ("SELECT * FROM S WHERE A FILTER A[x LIKE 'a(b']", "x LIKE", "invalid regular expression in LIKE: missing )"),
        ("SELECT * FROM S WHERE A FILTER A[x LIKE '(a)\\1']", "x LIKE", "invalid regular expression in LIKE"),
        ("SELECT * FROM S WHERE A FILTER A[x IN {'a', true}]", "true", "IN set mixes a string with a boolean"),
        ("SELECT * FROM S WHERE A LIMIT 0", "0", "LIMIT must be at least 1, not 0"),
        ("SELECT * FROM S WHERE A -- LIMIT 3\nLIMIT -1", "-1", "LIMIT must be at least 1, not -1"),
        ("SELECT * FROM S WHERE A WITHIN -1 EVENTS", "-1", "the window must not be negative"),
        ("SELECT * FROM S WHERE A WITHIN -1 seconds", "-1", "the duration must not be negative"),
        ("SELECT * FROM S WHERE A WITHIN -5 [ts]", "-5", "the window must not be negative"),
        ("SELECT * FROM S WHERE A ; (B{1,50}){30}", "(B{1", "writes its pattern out to 2970 event patterns"),
        ("SELECT * FROM S WHERE (A AS a ; B{2} AS b) FILTER B[x > b.x]", "b.x", "variable 'b' is bound to several events"),
        ("SELECT * FROM S WHERE ((A AS a)? ; B) FILTER B[x > a.x]", "a.x", "variable 'a' is not bound in every match"),
    ],
)
def test_semantic_errors_without_schema(text: str, needle: str, message: str) -> None:
    line, column = position(text, needle)
    assert_error(semantic_error(text), text, message, line, column)


def test_semantic_error_on_line_three() -> None:
    text = "SELECT *\nFROM S\nWHERE SELL as a; BUY as b FILTER c[price > 1]"
    assert_error(semantic_error(text, STOCK), text, "variable 'c' is not bound", 3, 34)


def test_event_type_names_are_variables() -> None:
    accepted("SELECT SELL FROM S WHERE SELL ; BUY FILTER SELL[price > 1] AND BUY[price < 2]", STOCK)
    accepted("SELECT * WHERE (A ; B) as H FILTER H[value > 76]")
    accepted("SELECT * WHERE A as x OR B as x FILTER x[v > 1]")


def test_valid_predicates_pass() -> None:
    accepted(
        "SELECT a[name, price] FROM S WHERE SELL as a ; BUY+ as b "
        "FILTER a[name LIKE 'MS.*' AND price * 2 - volume % 3 >= -1.5 AND flag = true] "
        "AND b[name IN {'A', \"B\"} OR price NOT IN RANGE(1, 2) OR NOT name != 'x'] "
        "PARTITION BY [name], [volume] WITHIN 10 [stock_time] CONSUME BY ANY LIMIT 1",
        STOCK,
    )
    accepted("SELECT * WHERE A FILTER A[x > 'a' AND y = z AND w IN {}]")


# ------------------------------------------------------------- unsupported


@pytest.mark.parametrize(
    ("text", "needle", "message"),
    [
        (
            "SELECT * FROM S WHERE A AS a ; NOT(B AS b FILTER b[x > prev(b).x]) ; C",
            "NOT(",
            "NOT is not supported yet together with conditions between events",
        ),
    ],
)
def test_unsupported_constructs(text: str, needle: str, message: str) -> None:
    err = semantic_error(text)
    assert isinstance(err, UnsupportedError)
    line, column = position(text, needle)
    assert_error(err, text, message, line, column)


def test_supported_strategies() -> None:
    for strategy in ("ALL", "ANY", "STRICT", "NEXT", "LAST", "MAX"):
        accepted(f"SELECT {strategy} * FROM S WHERE A")
    accepted("SELECT STRICT a FROM S WHERE A AS a")
    for strategy in ("NEXT", "LAST", "MAX"):
        accepted(f"SELECT {strategy} a FROM S WHERE A AS a ; B")
        accepted(f"SELECT {strategy} NONE FROM S WHERE A")
        # The register engine too (conditions between events).
        accepted(f"SELECT {strategy} a, c FROM S WHERE A AS a ; B AS b ; C AS c FILTER c[x < a.x]")
        accepted(f"SELECT {strategy} NONE FROM S WHERE A AS a ; B AS b FILTER b[x < a.x]")


def test_mistakes_are_reported_before_unsupported_constructs() -> None:
    err = semantic_error("SELECT MAX a FROM S WHERE A AS a FILTER b[x > 1]")
    assert not isinstance(err, UnsupportedError) and "not bound" in err.message


# ------------------------------------------------------------------ schemas


def test_inferred_schema_is_open_on_event_types() -> None:
    accepted("SELECT * FROM Anything WHERE WHATEVER ; Anything>Y FILTER WHATEVER[price > 1]", ARROW)
    # an inferred string column may hold numbers written as text (CSV): its
    # values are checked row by row, so its kind is not fixed by the schema
    assert ARROW.attribute_kind("ANY_TYPE", "name") is None
    assert ARROW.attribute_kind(None, "price") == "number"
    assert ARROW.attribute_kind("X", "ok") == "boolean"
    assert ARROW.attribute_kind("X", "ts") == "number"
    assert ARROW.attribute_kind("X", "type") is None  # the type column is not an attribute
    assert ARROW.attribute_kind("X", "tags") is None  # lists cannot be used in predicates
    text = "SELECT * WHERE E FILTER E[nam = 'x']"
    assert_error(semantic_error(text, ARROW), text, "unknown attribute 'nam'", 1, 27)
    accepted("SELECT * WHERE E FILTER E[name < 3]", ARROW)


def test_inferred_schema_with_listed_event_types() -> None:
    schema = Schema.from_arrow(pa.schema([("kind", pa.string()), ("v", pa.int8())]), "kind", ["A"])
    assert schema.event_types == ("A",) and schema.event_types_closed
    accepted("SELECT * WHERE A FILTER A[v > 1]", schema)
    text = "SELECT * WHERE B"
    assert_error(semantic_error(text, schema), text, "unknown event type 'B'", 1, 16)


def test_inferred_schema_needs_the_type_column() -> None:
    with pytest.raises(DataError, match="no event type column 'type'") as err:
        Schema.from_arrow(pa.schema([("kind", pa.string()), ("v", pa.int8())]))
    assert "(its columns: kind, v)" in str(err.value) and "--type-column" in str(err.value)


def test_declared_schema() -> None:
    assert STOCK.event_types == ("BUY", "SELL", "PING")
    assert STOCK.streams == {"S": ("BUY", "SELL"), "T": ("PING",)}
    assert list(STOCK.attributes("BUY") or {}) == ["name", "price", "volume", "stock_time"]
    assert STOCK.attribute_type("SELL", "stock_time") == "primary_time"
    assert STOCK.attribute_kind("SELL", "flag") == "boolean"
    assert STOCK.attribute_kind("BUY", "flag") is None
    assert STOCK.attribute_kind(None, "flag") == "boolean"
    assert STOCK.attribute_kind("NOPE", "name") is None


@pytest.mark.parametrize(
    ("decl", "needle", "message"),
    [
        ("CREATE STREAM S { EVENT A {x:int} } CREATE STREAM S { EVENT B {x:int} }", "CREATE STREAM S { EVENT B", "stream 'S' is declared twice"),
        ("CREATE STREAM S { EVENT A {x:int}, EVENT A {y:int} }", "EVENT A {y", "event type 'A' is declared twice"),
        ("CREATE STREAM S { EVENT A {x:int, x:double} }", "x:double", "attribute 'x' is declared twice"),
        ("CREATE STREAM S { EVENT A {x:int} } CREATE STREAM T { EVENT A {x:string} }", "x:string", "is int in one stream and string in another"),
    ],
)
def test_bad_declarations(decl: str, needle: str, message: str) -> None:
    text = decl + " SELECT * WHERE A"
    with pytest.raises(QueryError) as info:
        Schema.from_decls(parse(text).streams, text)
    assert_error(info.value, text, message, *position(text, needle))


def test_event_type_in_several_streams_merges_attributes() -> None:
    text = "CREATE STREAM S { EVENT A {x:int} } CREATE STREAM T { EVENT A {x:double, y:string} }"
    schema = Schema.from_decls(parse(text + " SELECT * WHERE A").streams)
    assert dict(schema.attributes("A") or {}) == {"x": "int", "y": "string"}


# ---------------------------------------------------------------- variables


def test_bound_variables() -> None:
    where = parse_query(
        "SELECT * WHERE (SELL as msft; (BUY OR SELL)+ as qqq; SELL) as all_ FILTER msft[x > 1]"
    ).where
    assert bound_variables(where) == {"SELL", "BUY", "msft", "qqq", "all_"}
    types = variable_event_types(where)
    assert types["qqq"] == {"BUY", "SELL"} and types["msft"] == {"SELL"}
    assert types["all_"] == {"BUY", "SELL"}
    assert bound_variables(ast.EventType("A")) == {"A"}


def test_not_takes_a_single_event_pattern() -> None:
    accepted("SELECT * FROM S WHERE A ; NOT(B FILTER B[x > 1]) ; C")
    accepted("SELECT * FROM S WHERE A ; NOT(B AS b OR C) ; C")
    text = "SELECT * FROM S WHERE A ; NOT(B ; C)"
    err = semantic_error(text)
    assert "single-event pattern" in err.message and err.column == 27


def test_variables_inside_not_are_not_bound_outside() -> None:
    err = semantic_error("SELECT * FROM S WHERE A ; NOT(B AS b) FILTER b[x > 1]")
    assert "not bound" in err.message


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("SELECT NONE WHERE `SE\ud800L`", 19),  # found by tests/fuzz (seed 16)
        ("SELECT * WHERE A FILTER A[s = 'a\udfff']", 31),
    ],
)
def test_a_lone_surrogate_in_a_name_or_string_is_a_query_error(text: str, column: int) -> None:
    """A str may hold a lone surrogate, which no UTF-8 (Arrow) text can: a QueryError, whose
    rendering shows U+FFFD in its place (printable), not a UnicodeEncodeError downstream."""
    with pytest.raises(QueryError) as info:
        parse(text)
    err = info.value
    assert "lone surrogate" in err.message
    assert (err.line, err.column) == (1, column)
    str(err).encode("utf-8")  # printable
