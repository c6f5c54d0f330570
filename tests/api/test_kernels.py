"""kleene.kernels: pyarrow.compute's functions without importing pyarrow.compute.

Every kernel it wraps gives what pyarrow.compute's own wrapper gives, options included; the
options class it names for each is the one Arrow's registry names; other names come from
pyarrow.compute; and importing it (or calling a wrapped kernel) leaves pyarrow.compute unloaded.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pyarrow as pa
import pyarrow.compute as arrow
import pytest

import kleene.kernels as pc

FLOATS = pa.array([1.5, None, -0.0, float("nan"), 1e20, 3.0, float("inf")])
INTS = pa.array([3, None, -7, 0, 12], pa.int64())
BOOLS = pa.array([True, None, False, True])
TEXT = pa.array(["a.b", None, "  x ", "e1", "", "+4"])
LISTS = pa.array([["a", "b"], [], None, ["c"]])

CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("abs", (FLOATS,), {}),
    ("add", (INTS, 2), {}),
    ("and_", (BOOLS, pa.array([True, True, None, False])), {}),
    ("and_kleene", (BOOLS, pa.array([True, True, None, False])), {}),
    ("or_", (BOOLS, pa.array([False, True, None, False])), {}),
    ("or_kleene", (BOOLS, pa.array([False, True, None, False])), {}),
    ("invert", (BOOLS,), {}),
    ("ascii_is_decimal", (TEXT,), {}),
    ("binary_join", (LISTS, "-"), {}),
    ("binary_join_element_wise", (TEXT, ".0", ""), {}),
    ("binary_join_element_wise", (TEXT, TEXT, "|"), {"null_handling": "replace", "null_replacement": "?"}),
    ("equal", (INTS, 0), {}),
    ("not_equal", (INTS, 0), {}),
    ("greater", (FLOATS, 1.0), {}),
    ("greater_equal", (FLOATS, 1.5), {}),
    ("less", (INTS, 3), {}),
    ("less_equal", (INTS, 3), {}),
    ("if_else", (BOOLS, "true", "false"), {}),
    ("is_finite", (FLOATS,), {}),
    ("is_nan", (FLOATS,), {}),
    ("is_valid", (FLOATS,), {}),
    ("is_null", (FLOATS,), {}),
    ("is_null", (FLOATS,), {"nan_is_null": True}),
    ("list_flatten", (LISTS,), {}),
    ("list_parent_indices", (LISTS,), {}),
    ("list_value_length", (LISTS,), {}),
    ("utf8_lower", (pa.array(["AbC", None]),), {}),
    ("utf8_trim_whitespace", (TEXT,), {}),
    ("starts_with", (TEXT, "+"), {}),
    ("starts_with", (TEXT,), {"pattern": "A", "ignore_case": True}),
    ("all", (BOOLS,), {}),
    ("any", (pa.array([False, None]),), {}),
    ("any", (pa.array([False, None]),), {"skip_nulls": False}),
    ("dictionary_encode", (TEXT,), {}),
    ("filter", (INTS, pa.array([True, False, None, True, True])), {}),
    ("filter", (INTS, pa.array([True, False, None, True, True])), {"null_selection_behavior": "emit_null"}),
    ("index_in", (TEXT,), {"value_set": pa.array(["e1", "a.b"])}),
    ("is_in", (TEXT,), {"value_set": pa.array(["e1", "a.b"])}),
    ("match_substring", (TEXT, "."), {}),
    ("match_substring_regex", (TEXT, "^E", ), {"ignore_case": True}),
    ("unique", (TEXT,), {}),
]


def same(ours: Any, theirs: Any) -> bool:
    """Equal type and values, NaN equal to NaN and -0.0 told from 0.0 (``repr`` of the values)."""
    if ours.type != theirs.type:
        return False
    values = (lambda x: x.as_py()) if isinstance(ours, pa.Scalar) else (lambda x: x.to_pylist())
    return repr(values(ours)) == repr(values(theirs))


@pytest.mark.parametrize(("name", "args", "kwargs"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_wrapped_kernel_gives_what_pyarrow_compute_gives(name: str, args: tuple, kwargs: dict) -> None:
    ours = getattr(pc, name)
    assert ours is not getattr(arrow, name)  # wrapped here, not taken from pyarrow.compute
    assert same(ours(*args, **kwargs), getattr(arrow, name)(*args, **kwargs))


def test_every_kernel_of_the_table_is_tested_and_names_arrows_options_class() -> None:
    tested = {pc._PYTHON_NAMES.get(name, name) for name, _, _ in CASES}
    assert tested == set(pc.OPTIONS)
    for name, options_class in pc.OPTIONS.items():
        assert (arrow.get_function(name)._doc.options_class or None) == options_class, name


def test_a_record_batch_is_filtered_and_taken_as_by_its_methods() -> None:
    batch = pa.record_batch({"x": INTS, "y": pa.array(["a", "b", None, "d", "e"])})
    mask = pa.array([True, False, None, True, True])
    assert pc.filter(batch, mask).equals(batch.filter(mask))
    assert pc.take(batch, pa.array([4, 0, 0])).equals(batch.take(pa.array([4, 0, 0])))
    table = pa.Table.from_batches([batch, batch])
    assert pc.take(table, pa.array([9, 1])).equals(table.take(pa.array([9, 1])))


def test_cast_take_and_fill_null_are_pyarrow_computes() -> None:
    assert pc.cast(INTS, pa.string()).equals(INTS.cast(pa.string()))
    assert pc.cast(pa.scalar(7), pa.string()).equals(pa.scalar(7).cast(pa.string()))
    assert same(pc.cast(FLOATS, "int64", safe=False), arrow.cast(FLOATS, "int64", safe=False))
    with pytest.raises(pa.ArrowInvalid):
        pc.cast(pa.array([1.5]), pa.int64())  # safe by default, as pyarrow's
    with pytest.raises(ValueError, match="Must either pass"):
        pc.cast(INTS, pa.string(), options=arrow.CastOptions.safe(pa.string()))
    assert pc.cast(INTS, options=arrow.CastOptions.safe(pa.float64())).equals(INTS.cast(pa.float64()))
    chunked = pa.chunked_array([INTS, INTS])
    assert pc.take(chunked, pa.array([0, 6])).equals(chunked.take(pa.array([0, 6])))
    with pytest.raises(IndexError):
        pc.take(INTS, pa.array([5]))
    assert pc.fill_null(INTS, 0).equals(INTS.fill_null(0))
    assert pc.fill_null(INTS, pa.scalar(1, pa.int8())).equals(INTS.fill_null(pa.scalar(1, pa.int8())))
    assert same(pc.fill_null(FLOATS, pa.array([9.0] * 7)), FLOATS.fill_null(pa.array([9.0] * 7)))
    assert pc.fill_null(TEXT, "null").equals(TEXT.fill_null("null"))


def test_options_given_twice_are_refused_as_by_pyarrow() -> None:
    with pytest.raises(TypeError, match="both an 'options' argument"):
        pc.match_substring(TEXT, "a", options=arrow.MatchSubstringOptions("b"))


def test_other_names_come_from_pyarrow_compute() -> None:
    assert pc.utf8_upper is arrow.utf8_upper
    assert pc.SetLookupOptions is arrow.SetLookupOptions
    with pytest.raises(AttributeError):
        pc.no_such_kernel  # noqa: B018 - the lookup is the test


def test_the_wrapped_kernels_leave_pyarrow_compute_unloaded() -> None:
    code = (
        "import sys, pyarrow as pa, kleene.kernels as pc\n"
        "from kleene.cli.common import skip_pandas_probe\n"
        "skip_pandas_probe()\n"  # pa.array of a list imports pandas, which imports pyarrow.compute
        "a = pa.array([1.5, None, 2.0])\n"
        "pc.fill_null(pc.cast(pc.take(a, pa.array([2, 1])), pa.string()), 'null')\n"
        "pc.any(pc.match_substring(pc.cast(a, pa.string()), '.'))\n"
        "print('pyarrow.compute' in sys.modules)\n"
        "pc.utf8_upper\n"  # a name from pyarrow.compute: loads it
        "print('pyarrow.compute' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
