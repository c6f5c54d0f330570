"""Tests of :func:`kleene.predicates.conform.conform`: casting to kinds, bad rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kleene.predicates.conform import NULL_LIKE, Requirement, conform

EVERY = None


def req(kind: str, *types: str) -> Requirement:
    return Requirement(kind, frozenset(types) if types else None)


def run(
    columns: dict[str, Any], requirements: dict[str, Requirement], **kw: Any
) -> tuple[pa.RecordBatch, list[tuple[int, str, str]]]:
    return conform(pa.record_batch(columns), requirements, **kw)


# ------------------------------------------------------------------ numbers


def test_numeric_columns_pass_through() -> None:
    cols = {"type": ["A", "A"], "i": pa.array([1, 2], pa.int32()), "f": [1.5, 2.0]}
    batch, bad = run(cols, {"i": req("number"), "f": req("number")})
    assert bad == []
    assert batch.schema.field("i").type == pa.int64()
    assert batch.schema.field("f").type == pa.float64()
    assert batch.column("f").to_pylist() == [1.5, 2.0]  # integral floats stay floats


def test_strings_parse_to_int_when_every_value_is_an_int() -> None:
    cols = {"type": ["A"] * 4, "x": ["12", " -3 ", "+7", "007"]}
    batch, bad = run(cols, {"x": req("number")})
    assert bad == []
    assert batch.schema.field("x").type == pa.int64()
    assert batch.column("x").to_pylist() == [12, -3, 7, 7]


def test_strings_parse_to_float_otherwise() -> None:
    cols = {"type": ["A"] * 6, "x": ["12", "12.5", "1e3", ".5", "-inf", "Infinity"]}
    batch, bad = run(cols, {"x": req("number")})
    assert bad == []
    assert batch.schema.field("x").type == pa.float64()
    assert batch.column("x").to_pylist() == [12.0, 12.5, 1000.0, 0.5, -math.inf, math.inf]


def test_ints_beyond_int64_parse_as_floats() -> None:
    batch, bad = run({"type": ["A"], "x": [str(2**70)]}, {"x": req("number")})
    assert bad == []
    assert batch.column("x").to_pylist() == [float(2**70)]


def test_unparsable_numbers_are_bad_and_become_null() -> None:
    cols = {"type": ["A"] * 6, "x": ["1", "abc", "", None, "nan", "0x10"]}
    batch, bad = run(cols, {"x": req("number")})
    assert bad == [
        (1, "x", "'abc' is not a number"),
        (2, "x", "null value"),
        (3, "x", "null value"),
        (4, "x", "NaN value"),
        (5, "x", "'0x10' is not a number"),
    ]
    values = batch.column("x").to_pylist()
    assert values[0] == 1.0 and values[1:4] == [None, None, None] and math.isnan(values[4])
    assert values[5] is None


def test_dictionary_strings_parse_per_distinct_value() -> None:
    column = pa.array(["1.5", "x", None, "1.5", "x"]).dictionary_encode()
    batch, bad = run({"type": ["A"] * 5, "p": column}, {"p": req("number")})
    assert batch.column("p").to_pylist() == [1.5, None, None, 1.5, None]
    assert bad == [
        (1, "p", "'x' is not a number"),
        (2, "p", "null value"),
        (4, "p", "'x' is not a number"),
    ]


def test_null_and_nan_numbers() -> None:
    cols = {"type": ["A"] * 3, "f": [1.0, None, math.nan], "i": pa.array([None, 1, 2])}
    _, bad = run(cols, {"f": req("number"), "i": req("number")})
    assert bad == [(0, "i", "null value"), (1, "f", "null value"), (2, "f", "NaN value")]


def test_booleans_are_not_numbers() -> None:
    batch, bad = run({"type": ["A", "A"], "x": [True, None]}, {"x": req("number")})
    assert bad == [(0, "x", "a boolean where a number is expected"), (1, "x", "null value")]
    assert batch.column("x").null_count == 2


# ------------------------------------------------------------------ strings, booleans


def test_strings_pass_through_in_every_encoding() -> None:
    for column in (
        pa.array(["a", None]),
        pa.array(["a", None], pa.large_string()),
        pa.array(["a", None]).dictionary_encode(),
    ):
        batch, bad = run({"type": ["A", "A"], "s": column}, {"s": req("string")})
        assert batch.column("s") is column or batch.column("s").equals(column)
        assert bad == [(1, "s", "null value")]


def test_empty_string_is_a_valid_string() -> None:
    _, bad = run({"type": ["A"], "s": [""]}, {"s": req("string")})
    assert bad == []


def test_integers_become_their_text_but_floats_are_bad() -> None:
    batch, bad = run({"type": ["A", "A"], "s": [123, -4]}, {"s": req("string")})
    assert bad == []
    assert batch.column("s").to_pylist() == ["123", "-4"]
    batch, bad = run({"type": ["A", "A"], "s": [1.0, None]}, {"s": req("string")})
    assert bad == [(0, "s", "a number where a string is expected"), (1, "s", "null value")]
    assert batch.schema.field("s").type == pa.string()


def test_booleans() -> None:
    cols = {"type": ["A"] * 5, "b": [" TRUE", "false", "yes", None, "1"]}
    batch, bad = run(cols, {"b": req("boolean")})
    assert batch.column("b").to_pylist() == [True, False, None, None, None]
    assert bad == [
        (2, "b", "'yes' is not a boolean"),
        (3, "b", "null value"),
        (4, "b", "'1' is not a boolean"),
    ]
    _, bad = run({"type": ["A"], "b": [1]}, {"b": req("boolean")})
    assert bad == [(0, "b", "a number where a boolean is expected")]
    batch, bad = run({"type": ["A"], "b": [False]}, {"b": req("boolean")})
    assert bad == [] and batch.column("b").to_pylist() == [False]


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown kind"):
        Requirement("int", None)


# ------------------------------------------------------------------ which rows


def test_only_rows_of_the_required_types_are_checked() -> None:
    cols = {"type": ["A", "B", "C", None], "x": [None, None, "z", None]}
    batch, bad = run(cols, {"x": req("number", "A", "C")})
    assert bad == [
        (0, "x", "null value"),
        (2, "x", "'z' is not a number"),
        (3, "type", "null value"),
    ]
    assert batch.column("x").to_pylist() == [None] * 4


def test_type_column_as_dictionary_or_large_string() -> None:
    for types in (
        pa.array(["A", "B", None]).dictionary_encode(),
        pa.array(["A", "B", None], pa.large_string()),
    ):
        _, bad = run(
            {"t": types, "x": [None, None, None]}, {"x": req("number", "B")}, type_column="t"
        )
        assert bad == [(1, "x", "null value"), (2, "t", "null value")]


def test_missing_columns() -> None:
    cols = {"type": ["A", "B"], "x": [1, 2]}
    batch, bad = run(cols, {"y": req("number", "B"), "z": req("string")})
    assert bad == [
        (0, "z", "missing attribute"),
        (1, "y", "missing attribute"),
        (1, "z", "missing attribute"),
    ]
    assert batch.schema.names == ["type", "x"]


def test_missing_type_column_makes_every_row_bad() -> None:
    _, bad = run({"x": [1, None]}, {"x": req("number", "A"), "w": req("number")})
    assert bad == [
        (0, "type", "missing attribute"),
        (0, "w", "missing attribute"),
        (1, "type", "missing attribute"),
        (1, "w", "missing attribute"),
    ]


def test_order_is_by_row_then_type_then_requirement_order() -> None:
    cols = {"type": ["A", None], "a": [None, None], "b": [None, None]}
    _, bad = run(cols, {"b": req("number"), "a": req("number")})
    assert bad == [
        (0, "b", "null value"),
        (0, "a", "null value"),
        (1, "type", "null value"),
        (1, "b", "null value"),
        (1, "a", "null value"),
    ]


def test_unrequired_columns_are_untouched_and_empty_batches_work() -> None:
    cols = {"type": pa.array([], pa.string()), "x": pa.array([], pa.string())}
    batch, bad = run(cols, {"x": req("number")})
    assert bad == [] and batch.num_rows == 0
    cols = {"type": ["A"], "x": ["1"], "other": ["keep"]}
    batch, _ = run(cols, {"x": req("number")})
    assert batch.column("other").to_pylist() == ["keep"]


def test_conformed_batch_feeds_the_predicates() -> None:
    from kleene.language import ast
    from kleene.predicates.table import PredicateTable

    pred = ast.Compare(">", ast.Attr("price"), ast.Const(100))
    table = PredicateTable(["A"], [pred])
    cols = {"type": ["A", "A", "A"], "price": ["150", "abc", "99.5"]}
    batch, bad = run(cols, {k: Requirement(v, None) for k, v in table.attributes().items()})
    assert bad == [(1, "price", "'abc' is not a number")]
    assert table.evaluate(batch).tolist() == [0b11, 0b01, 0b01]


# ------------------------------------------------------------------ property


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["A", "B", None]),
            st.one_of(
                st.none(),
                st.integers(-(10**6), 10**6).map(str),
                st.floats(allow_nan=True, allow_infinity=True).map(repr),
                st.text(alphabet="0123456789.e+-x ", max_size=5),
            ),
        ),
        max_size=12,
    ),
    st.booleans(),
)
def test_number_parsing_matches_python_float(rows: list[tuple[Any, Any]], dictionary: bool) -> None:
    types = pa.array([t for t, _ in rows], pa.string())
    values = pa.array([v for _, v in rows], pa.string())
    if dictionary:
        values = values.dictionary_encode()
    batch, bad = conform(pa.record_batch({"type": types, "x": values}), {"x": req("number", "A")})
    expected: list[tuple[int, str, str]] = []
    parsed: list[float | None] = []
    for i, (t, v) in enumerate(rows):
        if t is None:
            expected.append((i, "type", "null value"))
        reason = None
        number: float | None = None
        if v is None or not v.strip():
            reason = "null value"
        else:
            try:
                number = float(v.strip())
            except ValueError:
                reason = f"{v!r} is not a number"
                if v.strip().lower() in NULL_LIKE:  # '-': the hint to read it as null
                    token = v.strip()
                    reason += (
                        f" (if it means no value, read it as null: --null-values {token}, "
                        f"null_values=[{token!r}] in Python)"
                    )
            else:
                if "_" in v:  # Python accepts 1_000; the CSV syntax does not
                    number, reason = None, f"{v!r} is not a number"
                elif math.isnan(number):
                    reason = "NaN value"
        parsed.append(number)
        if reason is not None and t == "A":
            expected.append((i, "x", reason))
    assert bad == expected
    got = batch.column("x").to_pylist()
    for g, want in zip(got, parsed, strict=True):
        if want is None:
            assert g is None
        elif math.isnan(want):
            assert g is not None and math.isnan(g)
        else:
            assert g == want


def test_vectorised_on_large_batches() -> None:
    n = 200_000
    rng = np.random.default_rng(1)
    values = rng.normal(size=n).astype(str).astype(object)
    values[17] = "oops"
    cols = {"type": pa.array(["A"] * n), "x": pa.array(values, pa.string())}
    batch, bad = run(cols, {"x": req("number", "A")})
    assert bad == [(17, "x", "'oops' is not a number")]
    assert batch.schema.field("x").type == pa.float64()
