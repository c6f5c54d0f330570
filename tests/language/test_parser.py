"""The CEQL parser: every construct, CORE's operator precedence, the paper's
queries, and the printer round trip (``parse_query(to_ceql(q)) == q``)."""

from __future__ import annotations

import pickle
import re
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kleene.language import ast
from kleene.language.ast import (
    All,
    And,
    As,
    Attr,
    AttrWindow,
    BinOp,
    Compare,
    Const,
    DurationWindow,
    EventsWindow,
    EventType,
    Filter,
    FilterAnd,
    FilterAtom,
    FilterOr,
    InRange,
    InSet,
    Iter,
    Like,
    Neg,
    NotEvent,
    Or,
    PAnd,
    PNot,
    POr,
    Query,
    Repeat,
    Select,
    SelectItem,
    Seq,
    Span,
    Star,
    Unless,
)
from kleene.language.parser import Name, parse, parse_query
from kleene.language.printer import to_ceql

DATA = Path(__file__).parents[1] / "data" / "core_benchmark_queries.ceql"
SEC = 10**9


def where(pattern: str) -> ast.Pattern:
    return parse_query(f"SELECT * FROM S WHERE {pattern}").where


def pred(text: str) -> ast.Pred:
    p = where(f"A FILTER A[{text}]")
    assert isinstance(p, Filter) and isinstance(p.condition, FilterAtom)
    return p.condition.pred


def expr(text: str) -> ast.Expr:
    p = pred(f"{text} == 0")
    assert isinstance(p, Compare)
    return p.left


A, B, C, D = EventType("A"), EventType("B"), EventType("C"), EventType("D")


def gt(attr: str, value: int | float) -> Compare:
    return Compare(">", Attr(attr), Const(value))


# ----------------------------------------------------------------- patterns


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("A", A),
        ("A ; B", Seq(A, B)),
        ("A : B", Seq(A, B, contiguous=True)),
        ("A ; B ; C", Seq(Seq(A, B), C)),
        ("A ; B : C", Seq(Seq(A, B), C, True)),
        ("A : B ; C", Seq(A, Seq(B, C), True)),
        ("A : B : C", Seq(Seq(A, B, True), C, True)),
        ("A OR B ; C", Or(A, Seq(B, C))),
        ("A ; B OR C", Or(Seq(A, B), C)),
        ("A OR B OR C", Or(Or(A, B), C)),
        ("A OR B : C", Or(A, Seq(B, C, True))),
        ("(A OR B) ; C", Seq(Or(A, B), C)),
        ("A+", Iter(A)),
        ("A :+", Iter(A, True)),
        ("A:+", Iter(A, True)),
        ("A*", Star(A)),
        ("A ; B+", Seq(A, Iter(B))),
        ("A+ ; B", Seq(Iter(A), B)),
        ("A ; B :+ ; C", Seq(Seq(A, Iter(B, True)), C)),
        ("A as a", As(A, "a")),
        ("A AS a ; B as b", Seq(As(A, "a"), As(B, "b"))),
        ("A+ as a", As(Iter(A), "a")),
        ("A as a+", Iter(As(A, "a"))),
        ("A as a as b", As(As(A, "a"), "b")),
        ("(A ; B) as h", As(Seq(A, B), "h")),
        ("(BUY OR SELL) as s", As(Or(EventType("BUY"), EventType("SELL")), "s")),
        ("(BUY OR SELL)+ as mid", As(Iter(Or(EventType("BUY"), EventType("SELL"))), "mid")),
        ("((A))", A),
        ("S>A", EventType("A", "S")),
        ("S > A ; B", Seq(EventType("A", "S"), B)),
        ("NOT(A)", NotEvent(A)),
        ("A ; NOT (B) ; C", Seq(Seq(A, NotEvent(B)), C)),
        ("A AND B", And(A, B)),
        ("A ALL B", All(A, B)),
        ("A UNLESS B", Unless(A, B)),
        ("A AND B ; C", And(A, Seq(B, C))),
        ("A : B AND C", And(Seq(A, B, True), C)),
        ("A AND B OR C", Or(And(A, B), C)),
        ("A OR B AND C", Or(A, And(B, C))),
        ("A AND B ALL C UNLESS D", Unless(All(And(A, B), C), D)),
        # Counted repetition: postfix, as tight as + and AS, applied left to right.
        ("A{3}", Repeat(A, 3, 3)),
        ("A{2,}", Repeat(A, 2, None)),
        ("A{2,5}", Repeat(A, 2, 5)),
        ("A{ 2 , 5 }", Repeat(A, 2, 5)),
        ("A{,4}", Repeat(A, 0, 4)),
        ("A{0,4}", Repeat(A, 0, 4)),
        ("A?", Repeat(A, 0, 1)),
        ("A:{3}", Repeat(A, 3, 3, True)),
        ("A :{2,}", Repeat(A, 2, None, True)),
        ("A:{1,3}", Repeat(A, 1, 3, True)),
        ("A:{,2}", Repeat(A, 0, 2, True)),
        ("A ; B{2}", Seq(A, Repeat(B, 2, 2))),
        ("(A ; B){2}", Repeat(Seq(A, B), 2, 2)),
        ("A : B{2}", Seq(A, Repeat(B, 2, 2), True)),
        ("A : B:{2}", Seq(A, Repeat(B, 2, 2, True), True)),
        ("A:B:{2}:C", Seq(Seq(A, Repeat(B, 2, 2, True), True), C, True)),
        ("B{2} AS x", As(Repeat(B, 2, 2), "x")),
        ("B AS x{2}", Repeat(As(B, "x"), 2, 2)),
        ("B+{2}", Repeat(Iter(B), 2, 2)),
        ("B{2}+", Iter(Repeat(B, 2, 2))),
        ("B?*", Star(Repeat(B, 0, 1))),
        ("A ; B? ; C", Seq(Seq(A, Repeat(B, 0, 1)), C)),
        ("A OR B{2}", Or(A, Repeat(B, 2, 2))),
        ("A{2} AND B", And(Repeat(A, 2, 2), B)),
        ("S>A{2}", Repeat(EventType("A", "S"), 2, 2)),
        # The wildcard event `_` (an EventType named "_": any event).
        ("_ ; A", Seq(EventType("_"), A)),
        ("S>_", EventType("_", "S")),
        ("_ AS x{2,}", Repeat(As(EventType("_"), "x"), 2, None)),
    ],
)
def test_pattern_precedence(text: str, tree: ast.Pattern) -> None:
    assert where(text) == tree


def test_filter_binds_loosest() -> None:
    a_gt = FilterAtom("a", gt("price", 100))
    assert where("SELL as a; BUY as b FILTER a[price > 100]") == Filter(
        Seq(As(EventType("SELL"), "a"), As(EventType("BUY"), "b")), a_gt
    )
    assert where("A OR B FILTER a[price > 100]") == Filter(Or(A, B), a_gt)
    assert where("A AND B FILTER a[price > 100]") == Filter(And(A, B), a_gt)


def test_filters_chain_and_combine() -> None:
    x, y, z = (FilterAtom(v, gt("p", 1)) for v in "xyz")
    assert where("A FILTER x[p > 1] FILTER y[p > 1]") == Filter(Filter(A, x), y)
    assert where("A FILTER x[p > 1] AND y[p > 1] OR z[p > 1]") == Filter(
        A, FilterOr(FilterAnd(x, y), z)
    )
    assert where("A FILTER x[p > 1] OR y[p > 1] AND z[p > 1]") == Filter(
        A, FilterOr(x, FilterAnd(y, z))
    )
    assert where("A FILTER x[p > 1] AND (y[p > 1] OR z[p > 1])") == Filter(
        A, FilterAnd(x, FilterOr(y, z))
    )
    assert where("(A FILTER x[p > 1]) ; B") == Seq(Filter(A, x), B)
    assert where("(A FILTER x[p > 1]) as a") == As(Filter(A, x), "a")
    assert where("NOT(A FILTER A[p > 1])") == NotEvent(Filter(A, FilterAtom("A", gt("p", 1))))


# --------------------------------------------------------------- predicates


def test_predicate_boolean_precedence() -> None:
    a, b, c = gt("a", 1), gt("b", 2), gt("c", 3)
    assert pred("a > 1 OR b > 2 AND NOT c > 3") == POr(a, PAnd(b, PNot(c)))
    assert pred("(a > 1 OR b > 2) AND c > 3") == PAnd(POr(a, b), c)
    assert pred("NOT NOT a > 1") == PNot(PNot(a))
    assert pred("NOT (a > 1 AND b > 2)") == PNot(PAnd(a, b))
    assert pred("a > 1 AND b > 2 AND c > 3") == PAnd(PAnd(a, b), c)


@pytest.mark.parametrize(
    ("op", "norm"),
    [("<", "<"), ("<=", "<="), (">", ">"), (">=", ">="), ("=", "=="), ("==", "=="),
     ("!=", "!="), ("<>", "!=")],
)
def test_comparison_operators(op: str, norm: str) -> None:
    assert pred(f"price {op} 3") == Compare(norm, Attr("price"), Const(3))  # type: ignore[arg-type]


def test_arithmetic() -> None:
    a, b, c, d = Attr("a"), Attr("b"), Attr("c"), Attr("d")
    assert expr("a + b * c - d % 2") == BinOp(
        "-", BinOp("+", a, BinOp("*", b, c)), BinOp("%", d, Const(2))
    )
    assert expr("a - b - c") == BinOp("-", BinOp("-", a, b), c)
    assert expr("a / b / c") == BinOp("/", BinOp("/", a, b), c)
    assert expr("(a + b) * c") == BinOp("*", BinOp("+", a, b), c)
    assert expr("-a") == Neg(a)
    assert expr("-1") == Const(-1)
    assert expr("-1.5") == Const(-1.5)
    assert expr("-(1)") == Neg(Const(1))
    assert expr("- -1") == Neg(Const(-1))
    assert expr("+a") == a
    assert expr("2 - -1") == BinOp("-", Const(2), Const(-1))
    assert expr("-a * b") == BinOp("*", Neg(a), b)
    assert pred("(a + 1) > 3") == Compare(">", BinOp("+", a, Const(1)), Const(3))
    assert pred("((a)) > (3)") == Compare(">", a, Const(3))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1), ("1.5", 1.5), (".5", 0.5), ("1e-3", 0.001), ("2E3", 2000.0), ("1.", 1.0),
        ("'MSFT'", "MSFT"), ("'it''s'", "it's"), ("''", ""), ('"MSFT"', "MSFT"),
        ('"say ""hi"""', 'say "hi"'), ("'a\"b'", 'a"b'), ("true", True), ("FALSE", False),
        ("'\\d+'", "\\d+"),
    ],
)
def test_literals(text: str, value: object) -> None:
    got = expr(text)
    assert isinstance(got, Const)
    assert got.value == value and type(got.value) is type(value)


def test_like_in_and_range() -> None:
    name, price = Attr("name"), Attr("price")
    assert pred("name LIKE 'MS.*'") == Like(name, "MS.*")
    assert pred("name like \"it's\"") == Like(name, "it's")
    assert pred("name IN {'MSFT', 'IBM'}") == InSet(name, (Const("MSFT"), Const("IBM")))
    assert pred("price NOT IN {1, -2.5, true}") == InSet(
        price, (Const(1), Const(-2.5), Const(True)), negated=True
    )
    assert pred("price IN {}") == InSet(price, ())
    assert pred("price IN RANGE(1, 2 + 3)") == InRange(
        price, Const(1), BinOp("+", Const(2), Const(3))
    )
    assert pred("price NOT IN RANGE(-1, 10)") == InRange(price, Const(-1), Const(10), True)
    assert pred("NOT price IN {1}") == PNot(InSet(price, (Const(1),)))


def test_backquoted_names() -> None:
    q = parse_query(
        "SELECT `my var`[`the price`] FROM `my stream` "
        "WHERE `my stream`>`BUY now` as `my var` FILTER `my var`[`the price` > 1 AND `a``b` = 2] "
        "PARTITION BY [`the key`] WITHIN 5 [`my time`]"
    )
    assert q.select.items == (SelectItem("my var", ("the price",)),)
    assert q.streams == ("my stream",)
    assert q.where == Filter(
        As(EventType("BUY now", "my stream"), "my var"),
        FilterAtom(
            "my var",
            PAnd(gt("the price", 1), Compare("==", Attr("a`b"), Const(2))),
        ),
    )
    assert q.partition_by == (("the key",),)
    assert q.within == AttrWindow(5, "my time")
    assert parse_query("SELECT * WHERE `select` as `where`").where == As(
        EventType("select"), "where"
    )


def test_keywords_are_names_where_no_keyword_fits() -> None:
    """The contextual lexer reads a keyword as a name where only a name can come."""
    assert where("A as events") == As(A, "events")
    assert where("A as range ; B as limit") == Seq(As(A, "range"), As(B, "limit"))
    assert pred("count > 1 AND range = 2") == PAnd(
        gt("count", 1), Compare("==", Attr("range"), Const(2))
    )


# ------------------------------------------------------------------ clauses


@pytest.mark.parametrize("strategy", ["ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"])
def test_select_strategies(strategy: str) -> None:
    q = parse_query(f"SELECT {strategy.lower()} * FROM S WHERE A")
    assert q.select == Select(strategy, None)  # type: ignore[arg-type]


def test_select_lists() -> None:
    assert parse_query("SELECT * FROM S WHERE A").select == Select("ALL", None)
    assert parse_query("SELECT NONE FROM S WHERE A").select == Select("ALL", ())
    assert parse_query("SELECT any none FROM S WHERE A").select == Select("ANY", ())
    q = parse_query("SELECT a, b[name, price] FROM S WHERE A as a ; B as b")
    assert q.select.items == (SelectItem("a"), SelectItem("b", ("name", "price")))


def test_from_is_optional_and_may_list_streams() -> None:
    assert parse_query("SELECT * WHERE A").streams == ()
    assert parse_query("SELECT * FROM S1, S2 WHERE A").streams == ("S1", "S2")


def test_partition_by() -> None:
    q = parse_query("SELECT * FROM S WHERE A PARTITION BY [name], [volume, price]")
    assert q.partition_by == (("name",), ("volume", "price"))


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("10 EVENTS", EventsWindow(10)),
        ("0 events", EventsWindow(0)),
        ("10000 [stock_time]", AttrWindow(10000, "stock_time")),
        ("2.5 [ts]", AttrWindow(2.5, "ts")),
        ("1 nanosecond", DurationWindow(1)),
        ("3 NANOSECONDS", DurationWindow(3)),
        ("1 microsecond", DurationWindow(1000)),
        ("2 microseconds", DurationWindow(2000)),
        ("1 Millisecond", DurationWindow(10**6)),
        ("5 milliseconds", DurationWindow(5 * 10**6)),
        ("1 second", DurationWindow(SEC)),
        ("30 SECONDS", DurationWindow(30 * SEC)),
        ("1 minute", DurationWindow(60 * SEC)),
        ("2 Minutes", DurationWindow(120 * SEC)),
        ("1 hour", DurationWindow(3600 * SEC)),
        ("2 hours", DurationWindow(7200 * SEC)),
        ("1 day", DurationWindow(86400 * SEC)),
        ("2 DAYS", DurationWindow(2 * 86400 * SEC)),
        ("1.5 seconds", DurationWindow(1_500_000_000)),
        (".5 second", DurationWindow(500_000_000)),
        ("1e-3 seconds", DurationWindow(10**6)),
        ("1 hours 30 minutes", DurationWindow(90 * 60 * SEC)),
        ("1 MINUTES 5 SECONDS", DurationWindow(65 * SEC)),
        ("1 day 1 hour 1 minute 1 second 1 millisecond", DurationWindow(90061001000000)),
    ],
)
def test_within(text: str, window: ast.Window) -> None:
    assert parse_query(f"SELECT * FROM S WHERE A WITHIN {text}").within == window


def test_consume_and_limit() -> None:
    base = "SELECT * FROM S WHERE A"
    assert parse_query(base).consume == "NONE"
    for policy in ("ANY", "PARTITION", "NONE"):
        assert parse_query(f"{base} CONSUME BY {policy.lower()}").consume == policy
    assert parse_query(f"{base} LIMIT 5").limit == 5
    assert parse_query(base).limit is None


def test_all_clauses_together() -> None:
    q = parse_query(
        "SELECT ANY a FROM S WHERE A as a PARTITION BY [k] WITHIN 3 EVENTS "
        "CONSUME BY PARTITION LIMIT 2"
    )
    assert q == Query(
        Select("ANY", (SelectItem("a"),)), ("S",), As(A, "a"), (("k",),),
        EventsWindow(3), "PARTITION", 2,
    )


def test_keywords_are_case_insensitive() -> None:
    lower = parse_query(
        "select all a from s where (x as a ; y)+ filter a[p > 1 and not q in {1} or r like 'z'] "
        "partition by [p] within 1 hours consume by any limit 3"
    )
    mixed = parse_query(
        "Select All a From s Where (x As a ; y)+ Filter a[p > 1 And Not q In {1} Or r LIKE 'z'] "
        "Partition By [p] Within 1 Hours Consume By Any Limit 3"
    )
    upper = parse_query(
        "SELECT ALL a FROM s WHERE (x AS a ; y)+ FILTER a[p > 1 AND NOT q IN {1} OR r LIKE 'z'] "
        "PARTITION BY [p] WITHIN 1 HOURS CONSUME BY ANY LIMIT 3"
    )
    assert lower == mixed == upper


def test_names_are_case_sensitive() -> None:
    assert where("sell") == EventType("sell") != EventType("SELL")


def test_comments() -> None:
    q = parse_query(
        """-- a line comment before the query
        SELECT * /* inline */ FROM S -- trailing
        WHERE /* a block
        comment over lines */ A ; -- between operands
        B
        -- a comment at the very end"""
    )
    assert q.where == Seq(A, B)
    assert parse_query("SELECT * FROM S WHERE A FILTER A[p > 1 /* c */ -- x\n AND p < 3]")


def test_minus_minus_starts_a_comment() -> None:
    assert expr("a --1\n + 2") == BinOp("+", Attr("a"), Const(2))


# -------------------------------------------------------------- declarations


def test_stream_declarations() -> None:
    program = parse(
        """CREATE STREAM S {
          EVENT BUY  { name:string, price:double, volume:int },
          EVENT SELL { name:string, price:double, volume:int, ok: boolean, t: primary_time }
        };
        create stream T { event PING { } }
        SELECT * FROM S, T WHERE SELL as a; BUY as b FILTER a[price > 100]"""
    )
    s, t = program.streams
    assert s.name == "S" and [e.name for e in s.events] == ["BUY", "SELL"]
    assert s.events[0].attributes == (("name", "string"), ("price", "double"), ("volume", "int"))
    assert s.events[1].attributes[-2:] == (("ok", "boolean"), ("t", "primary_time"))
    assert t.name == "T" and t.events[0].attributes == ()
    assert program.query.streams == ("S", "T")
    assert parse_query(
        "CREATE STREAM S { EVENT A { x: INT } } SELECT * FROM S WHERE A"
    ).where == A


# -------------------------------------------------------------------- spans


def test_spans_point_into_the_text() -> None:
    text = "SELECT *\nFROM S\nWHERE SELL as a ;\n   BUY\nFILTER a[price > 1]\nPARTITION BY [name]"
    q = parse_query(text)
    assert isinstance(q.where, Filter) and isinstance(q.where.pattern, Seq)
    seq = q.where.pattern
    assert seq.span == Span(3, 7, 4, 7)
    assert seq.left.span == Span(3, 7, 3, 16)
    assert seq.right.span == Span(4, 4, 4, 7)
    atom = q.where.condition
    assert isinstance(atom, FilterAtom) and atom.span == Span(5, 8, 5, 20)
    assert isinstance(atom.pred, Compare) and atom.pred.left.span == Span(5, 10, 5, 15)
    attr = q.partition_by[0][0]
    assert isinstance(attr, Name) and attr.span == Span(6, 15, 6, 19)
    assert q.span.line == 1 and q.select.span.column == 1


def test_spans_do_not_affect_equality() -> None:
    assert parse_query("SELECT * FROM S WHERE A;B") == parse_query(
        "select *\n\n   from S where\n  A  ;   B"
    )


def test_names_pickle_and_compare_as_strings() -> None:
    q = parse_query("SELECT * FROM S WHERE A PARTITION BY [name]")
    name = q.partition_by[0][0]
    assert name == "name" and hash(name) == hash("name") and {name: 1}["name"] == 1
    assert pickle.loads(pickle.dumps(q)) == q


# ----------------------------------------------------------- paper queries


def benchmark_queries() -> dict[str, str]:
    """The queries of tests/data/core_benchmark_queries.ceql by name."""
    parts = re.split(r"^-- query: (\S+)\n", DATA.read_text(), flags=re.MULTILINE)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


QUERIES = benchmark_queries()


def test_benchmark_file_has_every_query() -> None:
    expected = {f"Q{i}" for i in range(1, 8)} | {"Fig1_Q_1", "Fig1_Q_2", "Fig1_Q_3"}
    for prefix in "SHT":
        for n in (3, 6, 9, 12, 24):
            expected |= {f"{prefix}{n}", f"{prefix}{n}'"}
        expected |= {f"{prefix}3'x{k}" for k in (2, 3, 4)}
    assert set(QUERIES) == expected


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_benchmark_query_parses_and_round_trips(name: str) -> None:
    q = parse_query(QUERIES[name])
    assert parse_query(to_ceql(q)) == q


def test_figure1_q1() -> None:
    q = parse_query(QUERIES["Fig1_Q_1"])
    msft, intel, amzn = (FilterAtom(v, Compare("==", Attr("name"), Const(s)))
                         for v, s in (("msft", "MSFT"), ("intel", "INTC"), ("amzn", "AMZN")))
    sell = EventType("SELL")
    assert q == Query(
        Select("ALL", None),
        ("Stock",),
        Filter(
            Seq(Seq(As(sell, "msft"), As(sell, "intel")), As(sell, "amzn")),
            FilterAnd(
                FilterAnd(
                    FilterAnd(FilterAnd(msft, FilterAtom("msft", gt("price", 100))), intel),
                    amzn,
                ),
                FilterAtom("amzn", Compare("<", Attr("price"), Const(2000))),
            ),
        ),
    )


def test_figure1_q2_and_q3() -> None:
    q2 = parse_query(QUERIES["Fig1_Q_2"])
    bs = Or(EventType("BUY"), EventType("SELL"))
    assert q2.select == Select("ALL", (SelectItem("b"),))
    assert q2.where == Seq(As(bs, "s"), As(bs, "b"))
    assert q2.partition_by == (("name",), ("volume",))
    assert q2.within == DurationWindow(60 * SEC)
    q3 = parse_query(QUERIES["Fig1_Q_3"])
    assert q3.select == Select("MAX", None)
    assert isinstance(q3.where, Filter)
    assert q3.where.pattern == Seq(Seq(As(bs, "low"), As(Iter(bs), "mid")), As(bs, "high"))
    assert q3.partition_by == (("name",),)


def test_other_operator_queries() -> None:
    q3 = parse_query(QUERIES["Q3"])
    assert q3.consume == "ANY" and q3.partition_by == (("volume",),)
    assert q3.within == AttrWindow(30000, "stock_time")
    q7 = parse_query(QUERIES["Q7"])
    assert isinstance(q7.where, Filter)
    assert q7.where.pattern == Seq(
        Seq(As(EventType("SELL"), "msft"), As(Iter(Or(EventType("BUY"), EventType("SELL"))), "qqq")),
        As(EventType("SELL"), "amat"),
    )


def test_sequence_benchmarks_have_the_expected_shape() -> None:
    h3 = parse_query(QUERIES["H3"])
    assert isinstance(h3.where, Filter) and isinstance(h3.where.pattern, As)
    assert h3.where.pattern.var == "L"
    assert h3.within == AttrWindow(10, "plug_timestamp")
    t24 = parse_query(QUERIES["T24'"])
    assert isinstance(t24.where, Filter)
    seq: ast.Pattern = t24.where.pattern
    length = 1
    while isinstance(seq, Seq):
        seq, length = seq.left, length + 1
    assert length == 25


# ------------------------------------------------------- printer round trip

_NAME_POOL = ["A", "BUY", "x1", "_t", "price", "é", "my attr", "select", "a`b", "Events", "1st"]
names = st.sampled_from(_NAME_POOL)
finite = st.floats(allow_nan=False, allow_infinity=False)
texts = st.text(alphabet=string.printable + "é€", max_size=8)
consts = st.one_of(
    st.integers(-(10**12), 10**12).map(Const),
    finite.map(Const),
    texts.map(Const),
    st.booleans().map(Const),
)
exprs: st.SearchStrategy[ast.Expr] = st.recursive(
    st.one_of(consts, names.map(Attr)),
    lambda sub: st.one_of(
        st.builds(BinOp, st.sampled_from(["+", "-", "*", "/", "%"]), sub, sub),
        st.builds(Neg, sub),
    ),
    max_leaves=6,
)
simple_preds = st.one_of(
    st.builds(Compare, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), exprs, exprs),
    st.builds(Like, exprs, texts),
    st.builds(InSet, exprs, st.lists(consts, max_size=3).map(tuple), st.booleans()),
    st.builds(InRange, exprs, exprs, exprs, st.booleans()),
)
preds: st.SearchStrategy[ast.Pred] = st.recursive(
    simple_preds,
    lambda sub: st.one_of(st.builds(PNot, sub), st.builds(PAnd, sub, sub), st.builds(POr, sub, sub)),
    max_leaves=4,
)
filters: st.SearchStrategy[ast.FilterExpr] = st.recursive(
    st.builds(FilterAtom, names, preds),
    lambda sub: st.one_of(st.builds(FilterAnd, sub, sub), st.builds(FilterOr, sub, sub)),
    max_leaves=3,
)
patterns: st.SearchStrategy[ast.Pattern] = st.recursive(
    st.builds(EventType, names, st.one_of(st.none(), names)),
    lambda sub: st.one_of(
        st.builds(As, sub, names),
        st.builds(Filter, sub, filters),
        st.builds(Seq, sub, sub, st.booleans()),
        st.builds(Or, sub, sub),
        st.builds(Iter, sub, st.booleans()),
        st.builds(And, sub, sub),
        st.builds(All, sub, sub),
        st.builds(Unless, sub, sub),
        st.builds(NotEvent, sub),
        st.builds(Star, sub),
        st.builds(
            lambda p, low, more, c: Repeat(p, low, None if more is None else max(low, 1) + more, c),
            sub, st.integers(0, 97), st.one_of(st.none(), st.integers(0, 3)), st.booleans(),
        ),
    ),
    max_leaves=8,
)
windows = st.one_of(
    st.none(),
    st.builds(EventsWindow, st.integers(0, 10**9)),
    st.builds(DurationWindow, st.integers(-(10**18), 10**18)),
    st.builds(AttrWindow, st.one_of(st.integers(-(10**9), 10**9), finite), names),
)
selects = st.builds(
    Select,
    st.sampled_from(["ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT"]),
    st.one_of(
        st.none(),
        st.lists(
            st.builds(SelectItem, names, st.one_of(st.none(), st.lists(names, min_size=1, max_size=3).map(tuple))),
            max_size=3,
        ).map(tuple),
    ),
)
queries = st.builds(
    Query,
    selects,
    st.lists(names, max_size=3).map(tuple),
    patterns,
    st.lists(st.lists(names, min_size=1, max_size=3).map(tuple), max_size=2).map(tuple),
    windows,
    st.sampled_from(["NONE", "ANY", "PARTITION"]),
    st.one_of(st.none(), st.integers(-5, 10**6)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries)
def test_printer_round_trip(query: Query) -> None:
    text = to_ceql(query)
    back = parse_query(text)
    assert back == query, text
    assert repr(back) == repr(query), text  # also keeps int / float / bool apart


def _nodes(node: object) -> list[object]:
    """Every AST node below (and including) node."""
    found: list[object] = []
    if hasattr(node, "__dataclass_fields__"):
        found.append(node)
        for field in node.__dataclass_fields__:
            found.extend(_nodes(getattr(node, field)))
    elif isinstance(node, tuple):
        for item in node:
            found.extend(_nodes(item))
    return found


def test_every_node_has_a_span() -> None:
    text = (
        "CREATE STREAM S { EVENT A { x:int } } "
        "SELECT ANY a[x], b FROM S WHERE (S>A as a ; NOT(B) ; (C AND D) ; E* ; F:+) as b "
        "FILTER a[x > -1 AND NOT (x + -y) * 2 IN {1, -2, 'z', true} OR x LIKE 'r' "
        "OR -x NOT IN RANGE(false, 2)] OR (b[x = TRUE] AND b[y <> 'q']) "
        "PARTITION BY [x] WITHIN 1 hour 2 minutes CONSUME BY ANY LIMIT 3"
    )
    program = parse(text)
    nodes = _nodes(program.streams) + _nodes(program.query)
    assert len(nodes) > 40
    for node in nodes:
        span = getattr(node, "span", None)
        if span is not None and not isinstance(node, Span):
            assert span != ast.NO_SPAN, node


def test_the_built_parser_is_cached_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The LALR tables are built once, saved, and loaded by later processes; a bad file is rebuilt."""
    from kleene.language import parser as parser_module

    monkeypatch.setenv("KLEENE_CACHE_DIR", str(tmp_path))
    text = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] WITHIN 10 EVENTS"
    built = parser_module._lark.__wrapped__()
    [saved] = list(tmp_path.iterdir())
    loaded = parser_module._lark.__wrapped__()
    assert loaded.parse(text) == built.parse(text)
    saved.write_bytes(b"not a parser")
    rebuilt = parser_module._lark.__wrapped__()
    assert rebuilt.parse(text) == built.parse(text)
    assert saved.read_bytes() != b"not a parser"


def test_a_cached_parser_others_could_write_is_not_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A saved parser is a pickle: one that another user could have planted is rebuilt, not loaded."""
    from kleene.language import parser as parser_module

    monkeypatch.setenv("KLEENE_CACHE_DIR", str(tmp_path))
    parser_module._lark.__wrapped__()
    [saved] = list(tmp_path.iterdir())
    loads: list[object] = []
    real_load = parser_module.Lark.load

    def counting_load(f: object) -> object:
        loads.append(f)
        return real_load(f)  # type: ignore[arg-type]

    monkeypatch.setattr(parser_module.Lark, "load", counting_load)
    parser_module._lark.__wrapped__()
    assert len(loads) == 1  # private file: loaded
    saved.chmod(0o666)
    parser_module._lark.__wrapped__()
    assert len(loads) == 1  # writable by others: rebuilt instead
    assert not saved.stat().st_mode & 0o022  # and replaced by a private file
