"""Tests of the vectorised predicate stage (:mod:`kleene.predicates`).

The unit tests pin down each predicate kind and the corner cases the engine
must agree on with the reference oracle (nulls, NaN, division by zero, exact
int/float comparison, full-match LIKE).  The property tests compare
:meth:`PredicateTable.evaluate` with a straightforward per-row Python
evaluation written here, and with the reference oracle itself.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kleene.language import ast
from kleene.language.errors import KleeneError, QueryError
from kleene.predicates.nodes import structural_key
from kleene.predicates.table import PredicateTable, TooManyPredicatesError
from kleene.reference.predicates import holds

A = ast.Attr
C = ast.Const


def cmp(op: str, left: ast.Expr, right: ast.Expr) -> ast.Compare:
    return ast.Compare(op, left, right)  # type: ignore[arg-type]


def binop(op: str, left: ast.Expr, right: ast.Expr) -> ast.BinOp:
    return ast.BinOp(op, left, right)  # type: ignore[arg-type]


def truth(pred: ast.Pred, columns: dict[str, Any] | pa.RecordBatch) -> list[bool]:
    """Per-row truth of one predicate, read off its bit."""
    batch = columns if isinstance(columns, pa.RecordBatch) else pa.record_batch(columns)
    bits = PredicateTable([], [pred]).evaluate(batch)
    assert bits.dtype == np.uint64
    return [bool(b & 1) for b in bits.tolist()]


# ------------------------------------------------------------- type bits


@pytest.mark.parametrize(
    "column",
    [
        pa.array(["A", "B", "C", None, "A"]),
        pa.array(["A", "B", "C", None, "A"], pa.large_string()),
        pa.array(["A", "B", "C", None, "A"]).dictionary_encode(),
    ],
    ids=["string", "large_string", "dictionary"],
)
def test_type_bits(column: pa.Array) -> None:
    table = PredicateTable(["A", "B"], [])
    batch = pa.record_batch({"type": column})
    assert table.evaluate(batch).tolist() == [0b01, 0b10, 0, 0, 0b01]
    for i in range(len(column)):  # 1-row batches agree
        assert table.evaluate(batch.slice(i, 1)).tolist() == [[0b01, 0b10, 0, 0, 0b01][i]]


def test_type_bits_layout_and_custom_column() -> None:
    table = PredicateTable(["A", "B"], [cmp(">", A("x"), C(0))], type_column="kind")
    batch = pa.record_batch({"kind": ["B", "A", "Z"], "x": [1, 0, 5]})
    assert table.width == 3
    assert table.evaluate(batch).tolist() == [0b110, 0b001, 0b100]


def test_type_listed_twice_sets_both_bits() -> None:
    table = PredicateTable(["A", "B", "A"], [])
    assert table.evaluate(pa.record_batch({"type": ["A", "B"]})).tolist() == [0b101, 0b010]


def test_missing_type_column_sets_no_type_bit() -> None:
    table = PredicateTable(["A"], [cmp("==", A("x"), C(1))])
    assert table.evaluate(pa.record_batch({"x": [1, 2]})).tolist() == [0b10, 0]


def test_empty_batch() -> None:
    table = PredicateTable(["A"], [cmp("==", A("x"), C(1))])
    batch = pa.record_batch({"type": pa.array([], pa.string()), "x": pa.array([], pa.int64())})
    out = table.evaluate(batch)
    assert out.dtype == np.uint64 and out.shape == (0,)


def test_too_many_predicates() -> None:
    preds = [cmp("==", A("x"), C(i)) for i in range(60)]
    assert PredicateTable(["A", "B", "C", "D"], preds).width == 64
    with pytest.raises(TooManyPredicatesError, match="too many distinct predicates") as info:
        PredicateTable(["A", "B", "C", "D", "E"], preds)
    assert isinstance(info.value, KleeneError)


def test_bit_63_is_usable() -> None:
    preds = [cmp("==", A("x"), C(i)) for i in range(64)]
    bits = PredicateTable([], preds).evaluate(pa.record_batch({"x": [63, 0]}))
    assert bits.tolist() == [1 << 63, 1]


# ------------------------------------------------------------- numbers


def test_number_comparisons_int_and_float_columns() -> None:
    cols = {"i": [1, 5, 10], "f": [1.0, 5.5, 10.0]}
    assert truth(cmp(">", A("i"), C(4)), cols) == [False, True, True]
    assert truth(cmp("<=", A("i"), C(5.0)), cols) == [True, True, False]
    assert truth(cmp("==", A("f"), C(10)), cols) == [False, False, True]
    assert truth(cmp("!=", A("i"), A("f")), cols) == [False, True, False]
    assert truth(cmp(">=", C(5), A("i")), cols) == [True, True, False]
    assert truth(cmp("<", A("i"), C(5.5)), cols) == [True, True, False]


def test_int_float_comparison_is_exact_beyond_2_53() -> None:
    big = 2**53 + 1  # float(big) rounds to 2**53
    cols = {"i": pa.array([big, 2**53], pa.int64()), "f": pa.array([float(2**53)] * 2)}
    assert truth(cmp("==", A("i"), A("f")), cols) == [False, True]
    assert truth(cmp(">", A("i"), A("f")), cols) == [True, False]
    assert truth(cmp("==", A("i"), C(float(2**53))), cols) == [False, True]
    assert truth(cmp("==", A("f"), C(big)), cols) == [False, False]
    assert truth(cmp("<", A("f"), C(big)), cols) == [True, True]
    assert truth(cmp("<", A("i"), C(2.0**63)), cols) == [True, True]
    assert truth(cmp("<", A("i"), C(math.inf)), cols) == [True, True]


def test_arithmetic() -> None:
    cols = {"a": [7, -7, 6], "b": [2, 2, 4], "x": [0.5, 1.5, -2.0]}
    assert truth(cmp("==", binop("+", A("a"), A("b")), C(9)), cols) == [True, False, False]
    assert truth(cmp("==", binop("-", A("a"), A("b")), C(-9)), cols) == [False, True, False]
    assert truth(cmp("==", binop("*", A("a"), A("x")), C(3.5)), cols) == [True, False, False]
    # true division, even of two ints
    assert truth(cmp("==", binop("/", A("a"), A("b")), C(3.5)), cols) == [True, False, False]
    assert truth(cmp("==", binop("/", A("b"), A("a")), C(2 / 7)), cols) == [True, False, False]
    assert truth(cmp("==", ast.Neg(A("a")), C(7)), cols) == [False, True, False]


def test_modulo_follows_python_sign_convention() -> None:
    cols = {"a": [-7, 7, -7.5, 7], "b": [2, -2, 2, 2.5]}
    expected = [(-7) % 2, 7 % -2, -7.5 % 2, 7 % 2.5]
    assert expected == [1, -1, 0.5, 2.0]
    for row, want in enumerate(expected):
        got = truth(cmp("==", binop("%", A("a"), A("b")), C(want)), cols)
        assert got[row], (row, want)


def test_division_and_modulo_by_zero_are_false_not_errors() -> None:
    cols = {"a": [1, 2, 3], "b": [0, 1, 0], "f": [0.0, -0.0, 2.0]}
    for op in ("/", "%"):
        quotient = binop(op, A("a"), A("b"))
        assert truth(cmp(">=", quotient, C(0)), cols) == [False, True, False]
        assert truth(cmp("!=", quotient, C(99)), cols) == [False, True, False]
        # atoms are false; NOT is two-valued (as in the reference oracle)
        assert truth(ast.PNot(cmp(">=", quotient, C(0))), cols) == [True, False, True]
        assert truth(cmp("<", binop(op, A("a"), A("f")), C(99)), cols) == [False, False, True]
        assert truth(cmp("<", binop(op, A("a"), C(0)), C(99)), cols) == [False, False, False]


def test_int64_overflow_is_exact() -> None:
    cols = {"a": pa.array([2**62, -(2**63), 3], pa.int64())}
    assert truth(cmp(">", binop("*", A("a"), C(4)), C(0)), cols) == [True, False, True]
    assert truth(cmp("==", binop("+", A("a"), A("a")), C(2**63)), cols) == [True, False, False]
    assert truth(cmp("==", ast.Neg(A("a")), C(2**63)), cols) == [False, True, False]
    over = binop("-", binop("*", A("a"), C(4)), C(2**64))
    assert truth(cmp("==", over, C(-(2**63))), cols) == [False, False, False]
    assert truth(cmp("==", over, C(0)), cols) == [True, False, False]


def test_true_division_of_large_ints_is_correctly_rounded() -> None:
    a, b = 2**53 + 1, 3
    assert float(a) / float(b) != a / b  # the naive float division is off by one ulp
    cols = {"a": pa.array([a], pa.int64()), "b": pa.array([b], pa.int64())}
    assert truth(cmp("==", binop("/", A("a"), A("b")), C(a / b)), cols) == [True]
    assert truth(cmp("==", binop("/", A("a"), C(b)), C(a / b)), cols) == [True]


def test_constant_folding() -> None:
    cols = {"x": [1, 2]}
    assert truth(cmp("==", A("x"), binop("+", C(1), C(1))), cols) == [False, True]
    assert truth(cmp("<", C(1), C(2)), cols) == [True, True]
    assert truth(cmp("<", binop("/", C(1), C(0)), C(2)), cols) == [False, False]
    assert truth(cmp("==", C(1), C("1")), cols) == [False, False]
    # arithmetic on a non-number constant is undefined, not an error
    assert truth(cmp("!=", ast.Neg(C(False)), ast.Neg(A("x"))), cols) == [False, False]
    assert truth(cmp("!=", binop("+", C("a"), C(1)), A("x")), cols) == [False, False]


# ------------------------------------------------------------- nulls, NaN, kinds


def test_null_and_nan_make_atoms_false() -> None:
    cols = {"f": pa.array([1.0, None, math.nan]), "i": pa.array([1, None, 3])}
    for op in ("==", "!=", "<", ">="):
        assert truth(cmp(op, A("f"), C(1.0)), cols)[1:] == [False, False], op
        assert truth(cmp(op, A("i"), C(1)), cols)[1] is False
    assert truth(ast.InSet(A("f"), (C(1.0),), negated=True), cols) == [False, False, False]
    assert truth(ast.InRange(A("f"), C(5), C(9), negated=True), cols) == [True, False, False]
    # NaN computed from finite inputs is undefined too
    inf = {"f": [math.inf, 1.0]}
    assert truth(cmp("!=", binop("-", A("f"), A("f")), C(0)), inf) == [False, False]


def test_missing_column_is_false() -> None:
    cols = {"x": [1, 2]}
    assert truth(cmp("!=", A("nope"), C(1)), cols) == [False, False]
    assert truth(ast.Like(A("nope"), ".*"), cols) == [False, False]
    assert truth(ast.InSet(A("nope"), (C(1),), negated=True), cols) == [False, False]
    assert truth(ast.PNot(cmp("==", A("nope"), C(1))), cols) == [True, True]


def test_different_kinds_are_neither_equal_nor_unequal() -> None:
    cols = {"s": ["1", "a"], "i": [1, 2], "b": [True, False]}
    assert truth(cmp("==", A("s"), C(1)), cols) == [False, False]
    assert truth(cmp("!=", A("s"), C(1)), cols) == [False, False]
    assert truth(cmp("!=", A("i"), A("s")), cols) == [False, False]
    assert truth(cmp("==", A("b"), C(1)), cols) == [False, False]  # True is not 1
    assert truth(ast.InSet(A("b"), (C(1),)), cols) == [False, False]
    assert truth(ast.Like(A("i"), ".*"), cols) == [False, False]
    assert truth(cmp(">", binop("+", A("s"), C(1)), C(0)), cols) == [False, False]


def test_booleans() -> None:
    cols = {"b": pa.array([True, False, None])}
    assert truth(cmp("==", A("b"), C(True)), cols) == [True, False, False]
    assert truth(cmp("!=", A("b"), C(True)), cols) == [False, True, False]
    assert truth(cmp("<", A("b"), C(True)), cols) == [False, True, False]  # as Python
    assert truth(ast.InSet(A("b"), (C(False),)), cols) == [False, True, False]


# ------------------------------------------------------------- strings


@pytest.mark.parametrize("encode", ["string", "large_string", "dictionary"])
def test_string_comparisons(encode: str) -> None:
    values = pa.array(["MSFT", "AAPL", None, "msft", "ZZ"])
    if encode == "large_string":
        values = values.cast(pa.large_string())
    elif encode == "dictionary":
        values = values.dictionary_encode()
    cols = {"s": values, "t": ["MSFT", "B", "C", "MSFT", "ZZ"]}
    assert truth(cmp("==", A("s"), C("MSFT")), cols) == [True, False, False, False, False]
    assert truth(cmp("!=", A("s"), C("MSFT")), cols) == [False, True, False, True, True]
    assert truth(cmp("<", A("s"), C("B")), cols) == [False, True, False, False, False]
    assert truth(cmp(">", C("B"), A("s")), cols) == [False, True, False, False, False]
    assert truth(cmp("==", A("s"), A("t")), cols) == [True, False, False, False, True]
    assert truth(ast.InSet(A("s"), (C("AAPL"), C("ZZ"))), cols) == [
        False,
        True,
        False,
        False,
        True,
    ]
    assert truth(ast.Like(A("s"), "[A-Z]+"), cols) == [True, True, False, False, True]


@pytest.mark.parametrize("encode", ["string", "large_string", "dictionary"])
def test_a_string_column_read_by_several_predicates(encode: str) -> None:
    """Several predicates on one column compare its distinct values (one encoding per batch)."""
    values = pa.array(["MSFT", "AAPL", None, "msft", "ZZ", "MSFT", None])
    if encode == "large_string":
        values = values.cast(pa.large_string())
    elif encode == "dictionary":
        values = values.dictionary_encode()
    preds = [
        cmp("==", A("s"), C("MSFT")),
        cmp("!=", A("s"), C("MSFT")),
        cmp("<", A("s"), C("B")),
        cmp(">=", C("M"), A("s")),
        cmp("==", A("s"), C("nowhere")),
    ]
    batch = pa.record_batch({"s": values})
    bits = PredicateTable([], preds).evaluate(batch).tolist()
    for k, pred in enumerate(preds):
        alone = truth(pred, batch)  # the single-use path
        together = [bool(b >> k & 1) for b in bits]
        expected = [bool(holds(pred, {"s": v})) for v in values.to_pylist()]
        assert together == alone == expected, pred


def test_string_order_is_code_point_order() -> None:
    words = ["a", "B", "é", "z", "", "ab", "\U0001f600", "\uffff"]
    cols = {"s": words}
    got = truth(cmp("<", A("s"), C("b")), cols)
    assert got == [w < "b" for w in words]


def test_like_is_a_full_match() -> None:
    cols = {"s": ["MSFT", "XMSFTX", "MSFTX", "XMSFT", None]}
    assert truth(ast.Like(A("s"), "MSFT"), cols) == [True, False, False, False, False]
    assert truth(ast.Like(A("s"), ".*MSFT.*"), cols) == [True, True, True, True, False]
    assert truth(ast.Like(A("s"), "MS|XMSFTX"), cols) == [False, True, False, False, False]


def test_like_on_dictionary_with_null_entries() -> None:
    dictionary = pa.array(["ab", None, "b"])
    column = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None, 0]), dictionary)
    assert truth(ast.Like(A("s"), "a?b"), {"s": column}) == [True, False, True, False, True]
    assert truth(cmp("!=", A("s"), C("x")), {"s": column}) == [True, False, True, False, True]


def test_like_catastrophic_backtracking_pattern_completes() -> None:
    # '(a+)+b' takes exponential time in a backtracking engine on 'aaa...a'.
    cols = {"s": ["a" * 40, "a" * 5000, "a" * 40 + "b"]}
    assert truth(ast.Like(A("s"), "(a+)+b"), cols) == [False, False, True]


def test_invalid_regex_is_a_query_error() -> None:
    with pytest.raises(QueryError, match="invalid regular expression"):
        PredicateTable([], [ast.Like(A("s"), "(unclosed")])


# ------------------------------------------------------------- sets and ranges


def test_in_set_numbers_by_value() -> None:
    cols = {"i": [1, 2, 3, None], "f": [1.0, 2.5, 3.0, None]}
    members = (C(1.0), C(2.5), C(3))
    assert truth(ast.InSet(A("i"), members), cols) == [True, False, True, False]
    assert truth(ast.InSet(A("f"), members), cols) == [True, True, True, False]
    assert truth(ast.InSet(A("i"), members, negated=True), cols) == [False, True, False, False]
    assert truth(ast.InSet(A("i"), ()), cols) == [False, False, False, False]
    assert truth(ast.InSet(A("i"), (), negated=True), cols) == [True, True, True, False]
    assert truth(ast.InSet(A("i"), (C("1"), C(True))), cols) == [False, False, False, False]


def test_in_range_is_inclusive() -> None:
    cols = {"x": [0, 1, 5, 10, 11, None], "s": ["a", "b", "c", "d", "e", "f"]}
    assert truth(ast.InRange(A("x"), C(1), C(10)), cols) == [
        False,
        True,
        True,
        True,
        False,
        False,
    ]
    assert truth(ast.InRange(A("x"), C(1), C(10), negated=True), cols) == [
        True,
        False,
        False,
        False,
        True,
        False,
    ]
    assert truth(ast.InRange(A("s"), C("b"), C("d")), cols) == [
        False,
        True,
        True,
        True,
        False,
        False,
    ]
    # kinds must agree
    assert truth(ast.InRange(A("x"), C("a"), C(10), negated=True), cols) == [False] * 6


# ------------------------------------------------------------- boolean structure


def test_not_and_or() -> None:
    cols = {"x": [1, 5, None], "y": [1, 1, 1]}
    big = cmp(">", A("x"), C(3))
    one = cmp("==", A("y"), C(1))
    assert truth(ast.PNot(big), cols) == [True, False, True]
    assert truth(ast.PAnd(big, one), cols) == [False, True, False]
    assert truth(ast.POr(big, one), cols) == [True, True, True]
    assert truth(ast.POr(big, ast.PNot(one)), cols) == [False, True, False]


def test_shared_subexpressions_and_repeated_predicates() -> None:
    p = cmp(">", binop("*", A("x"), C(2)), C(4))
    q = ast.PAnd(p, cmp("<", binop("*", A("x"), C(2)), C(10)))
    table = PredicateTable([], [p, q, p])
    bits = table.evaluate(pa.record_batch({"x": [1, 3, 5]}))
    assert bits.tolist() == [0b000, 0b111, 0b101]


def test_constants_equal_in_python_are_not_shared() -> None:
    # Const(True) == Const(1) as dataclasses, but b == true and b == 1 differ.
    preds = [cmp("==", A("b"), C(1)), cmp("==", A("b"), C(True)), cmp("==", A("b"), C(1.0))]
    bits = PredicateTable([], preds).evaluate(pa.record_batch({"b": [True], "x": [1]}))
    assert bits.tolist() == [0b010]
    assert structural_key(preds[0]) != structural_key(preds[1])
    assert structural_key(preds[0]) == structural_key(cmp("==", A("b"), C(1)))


def test_one_row_batches_match_the_big_batch() -> None:
    rng = np.random.default_rng(7)
    n = 50
    batch = pa.record_batch(
        {
            "type": pa.array(rng.choice(["A", "B", "C"], n)).dictionary_encode(),
            "x": pa.array(rng.integers(-5, 5, n), mask=rng.random(n) < 0.2),
            "f": pa.array(rng.normal(size=n)),
            "s": pa.array(rng.choice(["MSFT", "XMSFTX", "AAPL"], n)),
        }
    )
    preds: list[ast.Pred] = [
        cmp(">", binop("/", A("f"), A("x")), C(0)),
        ast.Like(A("s"), "MSFT"),
        ast.POr(ast.InSet(A("x"), (C(1), C(2))), ast.InRange(A("f"), C(-1), C(1))),
    ]
    table = PredicateTable(["A", "C"], preds)
    whole = table.evaluate(batch).tolist()
    assert [table.evaluate(batch.slice(i, 1)).tolist()[0] for i in range(n)] == whole


def test_columns_of_other_types() -> None:
    cols = {
        "u8": pa.array([1, 200], pa.uint8()),
        "f32": pa.array([0.5, 2.5], pa.float32()),
        "u64": pa.array([1, 2**64 - 1], pa.uint64()),
        "ts": pa.array([1, 2], pa.timestamp("s")),
        "lst": pa.array([[1], [2]]),
    }
    assert truth(cmp(">", A("u8"), C(100)), cols) == [False, True]
    assert truth(cmp("==", A("f32"), C(2.5)), cols) == [False, True]
    assert truth(cmp("==", A("u64"), C(2**64 - 1)), cols) == [False, True]
    assert truth(cmp(">", A("u64"), C(2.0**63)), cols) == [False, True]
    assert truth(cmp("==", A("ts"), C(2)), cols) == [False, True]
    assert truth(cmp("!=", A("lst"), C(2)), cols) == [False, False]


# ------------------------------------------------------------- attributes()


def test_attribute_kinds_are_inferred() -> None:
    preds: list[ast.Pred] = [
        cmp(">", binop("*", A("price"), C(2)), C(1)),
        ast.Like(A("name"), "M.*"),
        cmp("==", A("active"), C(True)),
        cmp("==", A("x"), A("y")),
        cmp("<", A("y"), A("price")),
        cmp("==", A("p"), A("q")),
        ast.InSet(A("code"), (C("a"), C("b"))),
        ast.InRange(A("lo"), A("r"), C(3.5)),
    ]
    table = PredicateTable([], preds)
    assert table.attributes() == {
        "price": "number",
        "name": "string",
        "active": "boolean",
        "x": "number",
        "y": "number",
        "code": "string",
        "lo": "number",
        "r": "number",
    }
    assert set(table.read_attributes) == set(table.attributes()) | {"p", "q"}


# ------------------------------------------------------------- property tests

INT_COLS = ("i", "j")
FLOAT_COLS = ("f", "g")
STR_COLS = ("s",)
ATTRS = INT_COLS + FLOAT_COLS + STR_COLS + ("b", "missing")
PATTERNS = ("a.*", "ab", "(a+)+b", "[ab]*", ".*b", "a|b", "", "b?a")

# Small values, so that random expressions often coincide, plus values at the
# edges of exact int/float conversion (2**53) and of int64.
ints = st.one_of(
    st.integers(-6, 6),
    st.sampled_from([2**53, 2**53 + 1, 2**62, -(2**63), 2**63 - 1]),
)
floats = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, -2.5, 3.0, 1e-3, 2.0**53, 2.0**63, 1e300]),
    st.floats(-10, 10, allow_nan=False, width=32),
)
strings = st.text(alphabet="abAB", max_size=4)
consts = st.one_of(ints, floats, strings, st.booleans()).map(C)


def exprs() -> st.SearchStrategy[ast.Expr]:
    leaves = st.one_of(consts, st.sampled_from(ATTRS).map(A))

    def extend(children: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
        return st.one_of(
            st.builds(binop, st.sampled_from("+-*/%"), children, children),
            st.builds(ast.Neg, children),
        )

    return st.recursive(leaves, extend, max_leaves=4)


def atoms() -> st.SearchStrategy[ast.Pred]:
    e = exprs()
    return st.one_of(
        st.builds(cmp, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), e, e),
        st.builds(ast.Like, e, st.sampled_from(PATTERNS)),
        st.builds(ast.InSet, e, st.lists(consts, max_size=3).map(tuple), negated=st.booleans()),
        st.builds(ast.InRange, e, e, e, negated=st.booleans()),
    )


preds = st.recursive(
    atoms(),
    lambda children: st.one_of(
        st.builds(ast.PNot, children),
        st.builds(ast.PAnd, children, children),
        st.builds(ast.POr, children, children),
    ),
    max_leaves=3,
)


@st.composite
def batches(draw: st.DrawFn) -> tuple[pa.RecordBatch, list[dict[str, Any]]]:
    n = draw(st.integers(1, 8))

    def column(values: st.SearchStrategy[Any]) -> list[Any]:
        return draw(st.lists(st.one_of(st.none(), values), min_size=n, max_size=n))

    data: dict[str, list[Any]] = {}
    for name in INT_COLS:
        data[name] = column(ints)
    for name in FLOAT_COLS:
        data[name] = column(st.one_of(floats, st.just(math.nan)))
    for name in STR_COLS:
        data[name] = column(strings)
    data["b"] = column(st.booleans())
    arrays: dict[str, pa.Array] = {
        **{k: pa.array(data[k], pa.int64()) for k in INT_COLS},
        **{k: pa.array(data[k], pa.float64()) for k in FLOAT_COLS},
        "b": pa.array(data["b"], pa.bool_()),
    }
    encoding = draw(st.sampled_from(["string", "large_string", "dictionary"]))
    for name in STR_COLS:
        arr = pa.array(data[name], pa.string())
        if encoding == "large_string":
            arr = arr.cast(pa.large_string())
        elif encoding == "dictionary":
            arr = arr.dictionary_encode()
        arrays[name] = arr
    rows = [{k: v[r] for k, v in data.items()} for r in range(n)]
    return pa.record_batch(arrays), rows


class Undefined(Exception):
    pass


class Evaluator:
    """The semantics, one row at a time, in the most obvious Python.

    Same conventions as the reference oracle, plus NaN (read or computed)
    counting as undefined.  ``saw_nan`` records whether NaN decided anything,
    so the oracle comparison can skip exactly those rows.
    """

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row
        self.saw_nan = False

    def kind(self, v: Any) -> str:
        if isinstance(v, bool):
            return "bool"
        return "number" if isinstance(v, int | float) else "string"

    def number(self, v: Any) -> Any:
        if self.kind(v) != "number":
            raise Undefined
        return v

    def value(self, e: ast.Expr) -> Any:
        if isinstance(e, ast.Const):
            return e.value
        if isinstance(e, ast.Attr):
            v = self.row.get(e.name)
            if v is None:
                raise Undefined
            return self.check_nan(v)
        if isinstance(e, ast.Neg):
            return -self.number(self.value(e.operand))
        assert isinstance(e, ast.BinOp)
        a = self.number(self.value(e.left))
        b = self.number(self.value(e.right))
        try:
            r = {
                "+": lambda: a + b,
                "-": lambda: a - b,
                "*": lambda: a * b,
                "/": lambda: a / b,
                "%": lambda: a % b,
            }[e.op]()
        except (ZeroDivisionError, OverflowError):
            raise Undefined from None
        return self.check_nan(r)

    def check_nan(self, v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            self.saw_nan = True
            raise Undefined
        return v

    def atom(self, p: ast.Pred) -> bool:
        ops = {
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
            "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
        }
        if isinstance(p, ast.Compare):
            a, b = self.value(p.left), self.value(p.right)
            return self.kind(a) == self.kind(b) and ops[p.op](a, b)
        if isinstance(p, ast.Like):
            v = self.value(p.operand)
            return isinstance(v, str) and re2.fullmatch(p.pattern, v) is not None
        if isinstance(p, ast.InSet):
            v = self.value(p.operand)
            member = any(self.kind(v) == self.kind(c.value) and v == c.value for c in p.values)
            return member != p.negated
        assert isinstance(p, ast.InRange)
        v, lo, hi = self.value(p.operand), self.value(p.low), self.value(p.high)
        if not self.kind(v) == self.kind(lo) == self.kind(hi):
            return False
        return bool(lo <= v <= hi) != p.negated

    def holds(self, p: ast.Pred) -> bool:
        if isinstance(p, ast.PNot):
            return not self.holds(p.operand)
        if isinstance(p, ast.PAnd):
            return self.holds(p.left) and self.holds(p.right)
        if isinstance(p, ast.POr):
            return self.holds(p.left) or self.holds(p.right)
        try:
            return self.atom(p)
        except Undefined:
            return False


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(preds, min_size=1, max_size=3), batches())
def test_evaluate_matches_per_row_python(
    pred_list: list[ast.Pred], data: tuple[pa.RecordBatch, list[dict[str, Any]]]
) -> None:
    batch, rows = data
    table = PredicateTable(["A"], pred_list)
    bits = table.evaluate(batch).tolist()
    for r, row in enumerate(rows):
        for k, pred in enumerate(pred_list):
            evaluator = Evaluator(row)
            want = evaluator.holds(pred)
            got = bool(bits[r] >> (1 + k) & 1)
            assert got == want, (r, row, pred)
            if not evaluator.saw_nan:  # the oracle does not treat NaN as undefined
                try:
                    oracle = holds(pred, row)
                except OverflowError:  # a Python int too large for a float
                    continue
                assert got == oracle, ("oracle", r, row, pred)


@settings(max_examples=50, deadline=None)
@given(st.lists(preds, min_size=1, max_size=3), batches())
def test_one_row_batches_agree(
    pred_list: list[ast.Pred], data: tuple[pa.RecordBatch, list[dict[str, Any]]]
) -> None:
    batch, _ = data
    table = PredicateTable([], pred_list)
    whole = table.evaluate(batch).tolist()
    assert [table.evaluate(batch.slice(i, 1))[0] for i in range(batch.num_rows)] == whole


def test_like_uses_re2_full_match_semantics() -> None:
    # Sanity check of the test's own helper against Python's re on simple patterns.
    for pattern in PATTERNS:
        for text in ["", "a", "ab", "ba", "aab", "abab"]:
            assert (re2.fullmatch(pattern, text) is None) == (re.fullmatch(pattern, text) is None)


# ------------------------------------------------- per distinct value of a string column

WORDS = ["MSFT", "AAPL", "msft", "", "Zed", "é"]


@st.composite
def string_preds(draw: st.DrawFn, depth: int = 2, names: tuple[str, ...] = ("s",)) -> ast.Pred:
    """Predicates that read the string attributes ``names`` only (a number mixed in)."""
    const = st.sampled_from([*WORDS, "B", "M", 3])
    A = lambda _: ast.Attr(draw(st.sampled_from(names)))  # noqa: E731, N806
    kind = draw(st.sampled_from(["cmp", "like", "in", "range"] + (["not", "and", "or"] if depth else [])))
    if kind == "cmp":
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
        left, right = A("s"), C(draw(const))
        return cmp(op, *((left, right) if draw(st.booleans()) else (right, left)))
    if kind == "like":
        return ast.Like(A("s"), draw(st.sampled_from(["MS.*", ".*", "", "[a-z]+", "é|Zed"])))
    if kind == "in":
        return ast.InSet(A("s"), tuple(C(v) for v in draw(st.lists(const, max_size=3))), negated=draw(st.booleans()))
    if kind == "range":
        return ast.InRange(A("s"), C(draw(const)), C(draw(const)), negated=draw(st.booleans()))
    if kind == "not":
        return ast.PNot(draw(string_preds(depth - 1, names)))
    pair = (draw(string_preds(depth - 1, names)), draw(string_preds(depth - 1, names)))
    return ast.PAnd(*pair) if kind == "and" else ast.POr(*pair)


def two_column_preds(max_size: int) -> st.SearchStrategy[list[ast.Pred]]:
    """At least four predicates that each read ``s`` then ``t`` (so all form one group)."""
    return st.lists(
        st.builds(
            lambda a, b, both: ast.PAnd(a, b) if both else ast.POr(a, b),
            string_preds(1, ("s",)),
            string_preds(1, ("t",)),
            st.booleans(),
        ),
        min_size=4,
        max_size=max_size,
    )


def assert_bits(bits: list[int], preds: list[ast.Pred], rows: list[dict[str, Any]], *context: Any) -> None:
    """Bit ``k`` of each row is what the reference semantics give for ``preds[k]`` on it."""
    for k, pred in enumerate(preds):
        expected = [bool(holds(pred, row)) for row in rows]
        assert [bool(b >> k & 1) for b in bits] == expected, (pred, *context)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(string_preds(), min_size=1, max_size=4),
    st.lists(st.sampled_from([*WORDS, None]), min_size=1, max_size=12),
    st.sampled_from(["string", "large_string", "dictionary", "dictionary with null entries"]),
)
def test_predicates_on_one_string_column_per_distinct_value(preds: list[ast.Pred], values: list[Any], encode: str) -> None:
    """Predicates reading one string column are evaluated on its distinct values, then spread.

    Every bit must be what the reference semantics give row by row (nulls included, and
    dictionaries whose entries are null).
    """
    column: pa.Array = pa.array(values, pa.string())
    if encode == "large_string":
        column = column.cast(pa.large_string())
    elif encode == "dictionary":
        column = column.dictionary_encode()
    elif encode == "dictionary with null entries":
        dictionary = pa.array([None, *dict.fromkeys(v for v in values if v is not None)], pa.string())
        lookup = {v: i for i, v in enumerate(dictionary.to_pylist()) if v is not None}
        column = pa.DictionaryArray.from_arrays(pa.array([lookup.get(v, 0) for v in values], pa.int32()), dictionary)
    bits = PredicateTable([], preds).evaluate(pa.record_batch({"s": column})).tolist()
    assert_bits(bits, preds, [{"s": v} for v in values])


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    two_column_preds(max_size=8),
    st.lists(st.tuples(st.sampled_from([*WORDS, None]), st.sampled_from([*WORDS, None])), min_size=1, max_size=12),
    st.booleans(),
)
def test_predicates_on_two_string_columns_per_combination(
    preds: list[ast.Pred], rows: list[tuple[Any, Any]], dictionary: bool
) -> None:
    """Many predicates over two string columns go per combination of values present.

    Each predicate reads ``s`` then ``t``, so all of them form one group.
    """
    s, t = (pa.array([r[i] for r in rows], pa.string()) for i in (0, 1))
    if dictionary:
        s, t = s.dictionary_encode(), t.dictionary_encode()
    bits = PredicateTable([], preds).evaluate(pa.record_batch({"s": s, "t": t})).tolist()
    assert_bits(bits, preds, [{"s": a, "t": b} for a, b in rows])


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(string_preds(1, ("s",)), min_size=1, max_size=3),
    two_column_preds(max_size=6),
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=10),
            st.sampled_from(["same", "equal", "other"]),
        ),
        min_size=1,
        max_size=5,
    ),
)
def test_per_value_bits_survive_dictionaries_that_change_between_batches(
    one: list[ast.Pred], two: list[ast.Pred], batches: list[tuple[list[tuple[int, int]], str]]
) -> None:
    """One table over several batches whose dictionaries are the same array, equal values,
    or other values in another order: the values are numbered across batches, and every
    bit is still what the semantics give row by row."""
    preds = one + two
    table = PredicateTable([], preds)
    base = pa.array(["MSFT", None, "Zed", "é"], pa.string())
    shuffled = pa.array(["é", "MSFT", "AAPL", None], pa.string())
    for rows, kind in batches:
        dictionary = {"same": base, "equal": pa.array(base.to_pylist(), pa.string()), "other": shuffled}[kind]
        s, t = (
            pa.DictionaryArray.from_arrays(pa.array([r[i] for r in rows], pa.int32()), dictionary)
            for i in (0, 1)
        )
        bits = table.evaluate(pa.record_batch({"s": s, "t": t})).tolist()
        values = list(zip(s.to_pylist(), t.to_pylist()))
        assert_bits(bits, preds, [{"s": a, "t": b} for a, b in values], kind)


def test_per_value_bits_are_computed_once_for_reordered_dictionaries() -> None:
    """Each Parquet row group has its own dictionary, the same values in another order: the
    bits of the combinations are computed at the first batch only, and again at a new value."""
    preds = [
        ast.PAnd(cmp("==", A("s"), C(a)), cmp("==", A("t"), C(b)))
        for a, b in [("x", "y"), ("y", "x"), ("x", "x"), ("z", "y")]
    ]
    table = PredicateTable([], preds)

    def batch(order: list[str | None], rows: list[tuple[int, int]]) -> pa.RecordBatch:
        dictionary = pa.array(order, pa.string())
        s, t = (pa.DictionaryArray.from_arrays(pa.array([r[i] for r in rows], pa.int32()), dictionary) for i in (0, 1))
        return pa.record_batch({"s": s, "t": t})

    rows = [(0, 1), (1, 0), (0, 0), (2, 1), (1, 2)]
    first = table.evaluate(batch(["x", "y", "z"], rows)).tolist()
    bits = table._per_value.tables[("s", "t")][1]
    # the same rows under a reordered dictionary: (y,x) (x,y) (y,y) (z,x) (x,z)
    second = table.evaluate(batch(["y", "x", "z"], rows)).tolist()
    assert table._per_value.tables[("s", "t")][1] is bits
    assert first == [1, 2, 4, 8, 0] and second == [2, 1, 0, 0, 0]
    # a new value: (x,y) (w,w), five times (the table covers 5 x 5 combinations: at most 4 per row)
    third = table.evaluate(batch(["w", "x", "y"], [(1, 2), (0, 0)] * 5)).tolist()
    assert table._per_value.tables[("s", "t")][1] is not bits and third == [1, 0] * 5
